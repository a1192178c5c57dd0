/*
 * cmd_sourcemaps.c — `wtctl sourcemaps upload|list|delete`: native debug
 * files (unstripped ELF binaries/libraries, separate .debug files) for the
 * hub's symbolizer (docs/api.md "Debug files").
 *
 *   upload --project P FILE|DIR...   every ELF file given or found under a
 *       directory, by GNU build id: files without symbols (.symtab or
 *       .debug_info) are skipped, one file per build id (the largest with
 *       symbols), then for each: GET …/debuginfo/<id> (already there →
 *       skipped), else PUT it. Progress "[i/N]" on stderr, one result line
 *       per file on stdout (--json: one JSON array).
 *   list --project P                  the project's debug files
 *   delete --project P BUILD_ID...
 * A file named on the command line that is not ELF, or has no build id, is
 * an error (exit 1); inside a directory such files are passed over.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfid.h"
#include "http_client.h"

#define SM_MAX_FILES 100000
#define SM_MAX_DEPTH 32
#define SM_FILE_MAX ((size_t)16 << 30)

typedef struct cand {
	char *path;
	int explicit_arg;
	size_t size;
	char bid[100];
	int has_syms;
	int chosen;
} cand;

typedef struct cands {
	cand *v;
	size_t n, cap;
} cands;

static const cli_optspec specs[] = {{"--project", "-p", 1}, {NULL, NULL, 0}};

static int add(cands *c, const char *path, int explicit_arg)
{
	if (c->n >= SM_MAX_FILES) {
		fprintf(stderr, "wtctl: sourcemaps: more than %d files; upload the tree in parts\n", SM_MAX_FILES);
		return -1;
	}
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		void *a = realloc(c->v, nc * sizeof(*c->v));
		if (!a)
			return -1;
		c->v = a;
		c->cap = nc;
	}
	memset(&c->v[c->n], 0, sizeof(c->v[0]));
	if (!(c->v[c->n].path = strdup(path)))
		return -1;
	c->v[c->n++].explicit_arg = explicit_arg;
	return 0;
}

static int walk(cands *c, const char *dir, int depth)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > SM_MAX_DEPTH)
		return 0;
	if (!(d = opendir(dir))) {
		fprintf(stderr, "wtctl: sourcemaps: cannot read directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while (!rc && (e = readdir(d))) {
		char p[4096];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st)) /* symlinks are not followed: no loops, no duplicates */
			continue;
		if (S_ISDIR(st.st_mode))
			rc = walk(c, p, depth + 1);
		else if (S_ISREG(st.st_mode) && st.st_size >= 64)
			rc = add(c, p, 0);
	}
	closedir(d);
	return rc;
}

/* Map path read-only; *len its size. NULL on error (message printed). */
static void *map_file(const char *path, size_t *len)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "wtctl: sourcemaps: cannot open %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if ((size_t)st.st_size > SM_FILE_MAX || st.st_size == 0) {
		fprintf(stderr, "wtctl: sourcemaps: %s: size %lld is outside 1..%zu bytes\n", path,
			(long long)st.st_size, SM_FILE_MAX);
		close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		fprintf(stderr, "wtctl: sourcemaps: cannot map %s: %s\n", path, strerror(errno));
		return NULL;
	}
	*len = (size_t)st.st_size;
	return m;
}

static char *url_of(const cli_global *g, const char *project, const char *bid, const char *name)
{
	char *url;

	if (!g->hub) {
		fprintf(stderr, "wtctl: sourcemaps: give --hub URL (or WT_HUB_URL)\n");
		return NULL;
	}
	if (!(url = cli_debuginfo_url(g->hub, project, bid, name)))
		fprintf(stderr, "wtctl: sourcemaps: bad hub URL or out of memory\n");
	return url;
}

/* Read the candidates' build ids; mark one file per build id. -1 when a
 * file named on the command line is unusable. */
static int classify(cands *c)
{
	int bad = 0;

	for (size_t i = 0; i < c->n; i++) {
		cand *k = &c->v[i];
		char head[4];
		int fd = open(k->path, O_RDONLY | O_CLOEXEC);
		ssize_t got = fd >= 0 ? read(fd, head, 4) : -1;
		void *m;
		wt_err err;

		if (fd >= 0)
			close(fd);
		if (got != 4 || !wt_elf_magic(head, 4)) {
			if (k->explicit_arg) {
				fprintf(stderr, "wtctl: sourcemaps: %s: not an ELF file\n", k->path);
				bad = 1;
			}
			continue;
		}
		if (!(m = map_file(k->path, &k->size))) {
			bad |= k->explicit_arg;
			continue;
		}
		if (wt_elf_build_id(m, k->size, k->path, k->bid, sizeof(k->bid), &err)) {
			k->bid[0] = 0;
			if (k->explicit_arg) {
				fprintf(stderr, "wtctl: sourcemaps: %s\n", err.msg);
				bad = 1;
			}
		} else if (!(k->has_syms = wt_elf_has_symbols(m, k->size)) && k->explicit_arg) {
			fprintf(stderr, "wtctl: sourcemaps: %s: no symbols (.symtab/.debug_info): stripped? skipped\n",
				k->path);
		}
		munmap(m, k->size);
	}
	for (size_t i = 0; i < c->n; i++) {
		cand *best = NULL;

		if (!c->v[i].bid[0] || !c->v[i].has_syms)
			continue;
		for (size_t j = 0; j < c->n; j++)
			if (c->v[j].has_syms && !strcmp(c->v[j].bid, c->v[i].bid) && (!best || c->v[j].size > best->size))
				best = &c->v[j];
		best->chosen = 1;
	}
	return bad ? -1 : 0;
}

static int upload(const cli_global *g, const char *project, const char *token, const char **files,
		  size_t nfiles)
{
	cands c = {0};
	size_t total = 0, done = 0, nup = 0, nskip = 0, nfail = 0;
	json_t *out = json_array();
	int rc = CLI_EXIT_FAIL;

	for (size_t i = 0; i < nfiles; i++) {
		struct stat st;

		if (stat(files[i], &st)) {
			fprintf(stderr, "wtctl: sourcemaps: %s: %s\n", files[i], strerror(errno));
			goto out;
		}
		if (S_ISDIR(st.st_mode) ? walk(&c, files[i], 0) : add(&c, files[i], 1))
			goto out;
	}
	if (classify(&c))
		goto out;
	for (size_t i = 0; i < c.n; i++)
		total += c.v[i].chosen;
	fprintf(stderr, "wtctl: %zu files looked at, %zu debug files (distinct build ids with symbols) to check\n",
		c.n, total);
	for (size_t i = 0; i < c.n; i++) {
		cand *k = &c.v[i];
		const char *base = strrchr(k->path, '/');
		cli_http_resp r = {0};
		char err[CLI_ERR_MAX], *url;
		const char *status;

		if (!k->chosen)
			continue;
		base = base ? base + 1 : k->path;
		done++;
		if (!(url = url_of(g, project, k->bid, NULL)))
			goto out;
		if (cli_http_request("GET", url, token, NULL, NULL, 0, &r, err, sizeof(err))) {
			fprintf(stderr, "wtctl: sourcemaps: %s\n", err);
			free(url);
			goto out;
		}
		free(url);
		if (r.status == 200) {
			status = "exists";
			nskip++;
		} else if (r.status == 404) {
			size_t len;
			void *m = map_file(k->path, &len);

			cli_http_resp_free(&r);
			if (!m || !(url = url_of(g, project, k->bid, base))) {
				if (m)
					munmap(m, len);
				goto out;
			}
			fprintf(stderr, "[%zu/%zu] uploading %s (%zu bytes)\n", done, total, k->path, len);
			if (cli_http_request("PUT", url, token, "application/octet-stream", m, len, &r, err, sizeof(err))) {
				fprintf(stderr, "wtctl: sourcemaps: %s\n", err);
				munmap(m, len);
				free(url);
				goto out;
			}
			munmap(m, len);
			free(url);
			if (r.status == 200 || r.status == 201) {
				status = r.status == 201 ? "uploaded" : "exists";
				*(r.status == 201 ? &nup : &nskip) += 1;
			} else {
				cli_http_report_error("sourcemaps upload", &r);
				status = "failed";
				nfail++;
			}
		} else {
			cli_http_report_error("sourcemaps upload", &r);
			status = "failed";
			nfail++;
		}
		cli_http_resp_free(&r);
		if (g->json)
			json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:I}", "file", k->path, "build_id",
							     k->bid, "status", status, "size", (json_int_t)k->size));
		else if (!strcmp(status, "exists"))
			printf("skipped  %s  %s (already on the hub)\n", k->bid, k->path);
		else if (!strcmp(status, "uploaded"))
			printf("uploaded %s  %s (%zu bytes)\n", k->bid, k->path, k->size);
	}
	if (g->json) {
		char *s = json_dumps(out, JSON_INDENT(1));
		printf("%s\n", s ? s : "[]");
		free(s);
	}
	fprintf(stderr, "wtctl: %zu uploaded, %zu already on the hub, %zu failed\n", nup, nskip, nfail);
	rc = nfail ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
	for (size_t i = 0; i < c.n; i++)
		free(c.v[i].path);
	free(c.v);
	json_decref(out);
	return rc;
}

static int list_or_delete(const cli_global *g, const char *verb, const char *project, const char *token,
			  const char **ids, size_t nids)
{
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX], *url;
	int rc = CLI_EXIT_OK;

	if (!strcmp(verb, "list")) {
		json_t *ans, *files;
		size_t i;

		if (!(url = url_of(g, project, NULL, NULL)))
			return CLI_EXIT_USAGE;
		if (cli_http_request("GET", url, token, NULL, NULL, 0, &r, err, sizeof(err))) {
			fprintf(stderr, "wtctl: sourcemaps list: %s\n", err);
			free(url);
			return CLI_EXIT_FAIL;
		}
		free(url);
		if (r.status != 200) {
			cli_http_report_error("sourcemaps list", &r);
			cli_http_resp_free(&r);
			return CLI_EXIT_FAIL;
		}
		ans = json_loadb(r.body, r.len, 0, NULL);
		files = json_object_get(ans, "files");
		if (g->json || !files) {
			printf("%s\n", r.body);
		} else {
			printf("%-40s  %12s  %-10s  %s\n", "BUILD_ID", "SIZE", "SOURCE", "FILE");
			for (i = 0; i < json_array_size(files); i++) {
				json_t *f = json_array_get(files, i);
				printf("%-40s  %12" JSON_INTEGER_FORMAT "  %-10s  %s\n",
				       json_string_value(json_object_get(f, "build_id")),
				       json_integer_value(json_object_get(f, "size")),
				       json_string_value(json_object_get(f, "source")),
				       json_string_value(json_object_get(f, "file_name")));
			}
		}
		json_decref(ans);
		cli_http_resp_free(&r);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < nids; i++) {
		if (!(url = url_of(g, project, ids[i], NULL)))
			return CLI_EXIT_USAGE;
		if (cli_http_request("DELETE", url, token, NULL, NULL, 0, &r, err, sizeof(err))) {
			fprintf(stderr, "wtctl: sourcemaps delete: %s\n", err);
			free(url);
			return CLI_EXIT_FAIL;
		}
		free(url);
		if (r.status == 200) {
			printf("deleted %s\n", ids[i]);
		} else {
			cli_http_report_error("sourcemaps delete", &r);
			rc = CLI_EXIT_FAIL;
		}
		cli_http_resp_free(&r);
	}
	return rc;
}

int cli_cmd_sourcemaps(const cli_global *g, const char *verb, int argc, char **argv)
{
	const char *project = getenv("WT_PROJECT"), *token = g->token ? g->token : g->admin_token, *v;
	const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	char err[CLI_ERR_MAX];
	size_t npos = 0;
	cli_argiter it;
	int k, rc = CLI_EXIT_USAGE;

	if (!pos)
		return CLI_EXIT_FAIL;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, sizeof(err))) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR) {
			fprintf(stderr, "wtctl: sourcemaps: %s\n", err);
			goto out;
		}
		if (k == 0)
			project = v;
		else
			pos[npos++] = v;
	}
	if (!project || !*project ||
	    strspn(project, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(project)) {
		fprintf(stderr, "wtctl: sourcemaps: give --project P (or WT_PROJECT) with a valid project name\n");
		goto out;
	}
	if (!token) {
		fprintf(stderr, "wtctl: sourcemaps: give a token with --token (or WT_TOKEN)\n");
		goto out;
	}
	if (!strcmp(verb, "upload") && npos)
		rc = upload(g, project, token, pos, npos);
	else if (!strcmp(verb, "list") && !npos)
		rc = list_or_delete(g, verb, project, token, NULL, 0);
	else if (!strcmp(verb, "delete") && npos)
		rc = list_or_delete(g, verb, project, token, pos, npos);
	else
		fprintf(stderr, "usage: wtctl sourcemaps upload [--project P] FILE|DIR... |"
				" list [--project P] | delete [--project P] BUILD_ID...\n");
out:
	free(pos);
	return rc;
}
