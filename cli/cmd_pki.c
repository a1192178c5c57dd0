/*
 * cmd_pki.c — `wtctl pki init | issue-edge | issue-hub | show`: create the
 * site CA and the hub certificate, issue edge certificates, inspect a
 * certificate. Offline; all X.509 work is in common/pki.c.
 *
 * Files (PEM; keys mode 0600, certificates 0644; never silently
 * overwritten — --force replaces them, for rotation):
 *   init        D/ca.crt D/ca.key D/hub.crt D/hub.key
 *   issue-edge  OUT/ID.crt OUT/ID.key      (OUT defaults to D)
 *   issue-hub   OUT/hub.crt OUT/hub.key    (OUT defaults to D)
 */
#include "cmd_pki.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <mbedtls/x509_crt.h>

#include "cli.h"
#include "fsdir.h"
#include "pki.h"

const char cli_pki_usage[] =
	"  pki init --dir D [--hub-host NAME]... [--days N] [--ca-days N]\n"
	"           [--ca-name CN] [--force]\n"
	"      Create the site CA (D/ca.crt, D/ca.key) and the hub's server\n"
	"      certificate (D/hub.crt, D/hub.key) for the given DNS names / IP\n"
	"      addresses (default: localhost 127.0.0.1 ::1). Days: hub 825, CA 3650.\n"
	"  pki issue-edge --ca D --edge-id ID [--out DIR] [--days N] [--force]\n"
	"      Issue an edge client certificate (CN and DNS SAN = ID) signed by\n"
	"      D/ca.crt + D/ca.key: DIR/ID.crt, DIR/ID.key (DIR defaults to D).\n"
	"      Days: 397.\n"
	"  pki issue-hub --ca D [--hub-host NAME]... [--out DIR] [--days N] [--force]\n"
	"      Issue a new hub certificate (rotation): DIR/hub.crt, DIR/hub.key.\n"
	"  pki show FILE [--ca D]\n"
	"      Print a certificate; with --ca, check that D/ca.crt trusts it\n"
	"      (exit 1 if not).\n"
	"  Testing: --not-before T --not-after T (unix seconds) replace --days.\n";

#define DEFAULT_HUB_HOSTS {"localhost", "127.0.0.1", "::1"}

typedef struct pki_args {
	const char *dir, *ca_dir, *out, *edge_id, *ca_name, *file;
	const char *hosts[WT_PKI_MAX_NAMES];
	size_t nhosts;
	uint64_t days, ca_days, not_before, not_after;
	int force, have_nb, have_na;
} pki_args;

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "wtctl pki: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage:\n%s", cli_pki_usage);
	return CLI_EXIT_USAGE;
}

static int fail(const wt_err *e)
{
	fprintf(stderr, "wtctl pki: %s\n", e->msg);
	return CLI_EXIT_FAIL;
}

enum { O_DIR, O_CA, O_OUT, O_EDGE, O_HOST, O_DAYS, O_CADAYS, O_CANAME, O_FORCE, O_NB, O_NA, O_HELP };

static const cli_optspec specs[] = {
	{"--dir", NULL, 1},       {"--ca", NULL, 1},       {"--out", "-o", 1},
	{"--edge-id", NULL, 1},   {"--hub-host", NULL, 1}, {"--days", NULL, 1},
	{"--ca-days", NULL, 1},   {"--ca-name", NULL, 1},  {"--force", NULL, 0},
	{"--not-before", NULL, 1}, {"--not-after", NULL, 1}, {"--help", "-h", 0},
	{NULL, NULL, 0},
};

static int parse(int argc, char **argv, pki_args *a)
{
	cli_argiter it;
	char err[CLI_ERR_MAX];
	const char *v;
	int k;

	memset(a, 0, sizeof(*a));
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, sizeof(err))) != CLI_ARG_END) {
		switch (k) {
		case CLI_ARG_ERR: return usage("%s", err);
		case CLI_ARG_POS:
			if (a->file)
				return usage("unexpected argument %s", v);
			a->file = v;
			break;
		case O_DIR: a->dir = v; break;
		case O_CA: a->ca_dir = v; break;
		case O_OUT: a->out = v; break;
		case O_EDGE: a->edge_id = v; break;
		case O_CANAME: a->ca_name = v; break;
		case O_HOST:
			if (a->nhosts == WT_PKI_MAX_NAMES)
				return usage("at most 32 --hub-host names");
			a->hosts[a->nhosts++] = v;
			break;
		case O_DAYS:
		case O_CADAYS:
			if (cli_parse_u64(v, k == O_DAYS ? &a->days : &a->ca_days) ||
			    (k == O_DAYS ? a->days : a->ca_days) == 0 ||
			    (k == O_DAYS ? a->days : a->ca_days) > 36500)
				return usage("--days/--ca-days %s: expected 1..36500", v);
			break;
		case O_NB:
		case O_NA:
			if (cli_parse_u64(v, k == O_NB ? &a->not_before : &a->not_after))
				return usage("--not-before/--not-after %s: expected unix seconds", v);
			*(k == O_NB ? &a->have_nb : &a->have_na) = 1;
			break;
		case O_FORCE: a->force = 1; break;
		case O_HELP: fputs(cli_pki_usage, stdout); exit(CLI_EXIT_OK);
		}
	}
	if (a->have_nb != a->have_na)
		return usage("--not-before and --not-after go together");
	return 0;
}

static wt_pki_validity validity(const pki_args *a, uint64_t def_days)
{
	if (a->have_nb) {
		wt_pki_validity v = {(int64_t)a->not_before, (int64_t)a->not_after};
		return v;
	}
	return wt_pki_days((int64_t)(a->days ? a->days : def_days));
}

/* mkdir -p with mode 0700 for the directories we create. */
static int make_dir(const char *path, wt_err *e)
{
	return wt_mkdir_p(path, 0700, e);
}

static int join(char *out, size_t len, const char *dir, const char *name, const char *ext)
{
	return (size_t)snprintf(out, len, "%s/%s%s", dir, name, ext) < len ? 0 : -1;
}

/* Issue a hub certificate under the CA pair and write it into dir. */
static int write_hub(const wt_pki_pair *ca, const pki_args *a, const char *dir, wt_err *e)
{
	const char *defaults[] = DEFAULT_HUB_HOSTS;
	const char *const *hosts = a->nhosts ? a->hosts : defaults;
	size_t n = a->nhosts ? a->nhosts : sizeof(defaults) / sizeof(defaults[0]);
	wt_pki_pair hub = WT_PKI_PAIR_INIT;
	char crt[PATH_MAX], key[PATH_MAX];
	int rc;

	if (join(crt, sizeof(crt), dir, "hub", ".crt") || join(key, sizeof(key), dir, "hub", ".key"))
		return wt_err_set(e, WT_EINVAL, "%s: path too long", dir);
	rc = wt_pki_issue_server(ca, hosts, n, validity(a, WT_PKI_HUB_DAYS), &hub, e);
	if (!rc)
		rc = wt_pki_write_pair(&hub, crt, key, a->force, e);
	if (!rc)
		printf("%s\n%s\n", crt, key);
	wt_pki_pair_free(&hub);
	return rc;
}

static int cmd_init(const pki_args *a)
{
	wt_pki_pair ca = WT_PKI_PAIR_INIT;
	char crt[PATH_MAX], key[PATH_MAX];
	wt_err e = {0};
	int rc;

	if (!a->dir)
		return usage("init: --dir is required");
	if (a->ca_dir || a->edge_id || a->out || a->file)
		return usage("init: only --dir, --hub-host, --days, --ca-days, --ca-name, --force");
	if (join(crt, sizeof(crt), a->dir, "ca", ".crt") || join(key, sizeof(key), a->dir, "ca", ".key"))
		return usage("init: --dir %s: path too long", a->dir);
	if ((rc = make_dir(a->dir, &e)))
		goto out;
	rc = wt_pki_make_ca(a->ca_name, wt_pki_days((int64_t)(a->ca_days ? a->ca_days : WT_PKI_CA_DAYS)),
			    &ca, &e);
	if (!rc)
		rc = wt_pki_write_pair(&ca, crt, key, a->force, &e);
	if (!rc) {
		printf("%s\n%s\n", crt, key);
		rc = write_hub(&ca, a, a->dir, &e);
	}
out:
	wt_pki_pair_free(&ca);
	return rc ? fail(&e) : CLI_EXIT_OK;
}

static int read_ca(const char *dir, wt_pki_pair *ca, wt_err *e)
{
	char crt[PATH_MAX], key[PATH_MAX];

	if (join(crt, sizeof(crt), dir, "ca", ".crt") || join(key, sizeof(key), dir, "ca", ".key"))
		return wt_err_set(e, WT_EINVAL, "%s: path too long", dir);
	return wt_pki_read_pair(crt, key, ca, e);
}

static int cmd_issue_edge(const pki_args *a)
{
	wt_pki_pair ca = WT_PKI_PAIR_INIT, edge = WT_PKI_PAIR_INIT;
	const char *out = a->out ? a->out : a->ca_dir;
	char crt[PATH_MAX], key[PATH_MAX];
	wt_err e = {0};
	int rc;

	if (!a->ca_dir || !a->edge_id)
		return usage("issue-edge: --ca and --edge-id are required");
	if (a->dir || a->nhosts || a->file)
		return usage("issue-edge: only --ca, --edge-id, --out, --days, --force");
	if (!wt_pki_valid_id(a->edge_id))
		return usage("issue-edge: --edge-id %s: 1..64 chars of [A-Za-z0-9._-], starting alphanumeric",
			     a->edge_id);
	if (join(crt, sizeof(crt), out, a->edge_id, ".crt") || join(key, sizeof(key), out, a->edge_id, ".key"))
		return usage("issue-edge: --out %s: path too long", out);
	if ((rc = read_ca(a->ca_dir, &ca, &e)) || (rc = make_dir(out, &e)))
		goto out;
	rc = wt_pki_issue_client(&ca, a->edge_id, validity(a, WT_PKI_EDGE_DAYS), &edge, &e);
	if (!rc)
		rc = wt_pki_write_pair(&edge, crt, key, a->force, &e);
	if (!rc)
		printf("%s\n%s\n", crt, key);
out:
	wt_pki_pair_free(&ca);
	wt_pki_pair_free(&edge);
	return rc ? fail(&e) : CLI_EXIT_OK;
}

static int cmd_issue_hub(const pki_args *a)
{
	wt_pki_pair ca = WT_PKI_PAIR_INIT;
	const char *out = a->out ? a->out : a->ca_dir;
	wt_err e = {0};
	int rc;

	if (!a->ca_dir)
		return usage("issue-hub: --ca is required");
	if (a->dir || a->edge_id || a->file)
		return usage("issue-hub: only --ca, --hub-host, --out, --days, --force");
	if ((rc = read_ca(a->ca_dir, &ca, &e)) || (rc = make_dir(out, &e)))
		goto out;
	rc = write_hub(&ca, a, out, &e);
out:
	wt_pki_pair_free(&ca);
	return rc ? fail(&e) : CLI_EXIT_OK;
}

static int cmd_show(const pki_args *a)
{
	wt_pki_pair c = WT_PKI_PAIR_INIT, ca = WT_PKI_PAIR_INIT;
	mbedtls_x509_crt crt;
	char info[4096], id[WT_PKI_ID_MAX + 1], path[PATH_MAX];
	wt_err e = {0};
	int rc;

	if (!a->file)
		return usage("show: FILE is required");
	mbedtls_x509_crt_init(&crt);
	if ((rc = wt_pki_read_pair(a->file, NULL, &c, &e)))
		goto out;
	mbedtls_x509_crt_parse(&crt, (const unsigned char *)c.cert_pem, strlen(c.cert_pem) + 1);
	if (mbedtls_x509_crt_info(info, sizeof(info), "", &crt) > 0)
		fputs(info, stdout);
	if (wt_pki_crt_id(&crt, id, sizeof(id)) == 0)
		printf("identity          : %s\n", id);
	if (a->ca_dir) {
		if (join(path, sizeof(path), a->ca_dir, "ca", ".crt")) {
			rc = wt_err_set(&e, WT_EINVAL, "%s: path too long", a->ca_dir);
			goto out;
		}
		if ((rc = wt_pki_read_pair(path, NULL, &ca, &e)))
			goto out;
		if ((rc = wt_pki_verify(ca.cert_pem, c.cert_pem, NULL, &e)))
			goto out;
		printf("trusted by        : %s\n", path);
	}
out:
	mbedtls_x509_crt_free(&crt);
	wt_pki_pair_free(&c);
	wt_pki_pair_free(&ca);
	return rc ? fail(&e) : CLI_EXIT_OK;
}

int cli_cmd_pki(int argc, char **argv)
{
	const char *verb = argc > 0 ? argv[0] : NULL;
	pki_args a;
	int rc;

	if (!verb || !strcmp(verb, "help") || !strcmp(verb, "--help") || !strcmp(verb, "-h")) {
		fputs(cli_pki_usage, verb ? stdout : stderr);
		return verb ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	if ((rc = parse(argc - 1, argv + 1, &a)))
		return rc;
	if (!strcmp(verb, "init"))
		return cmd_init(&a);
	if (!strcmp(verb, "issue-edge"))
		return cmd_issue_edge(&a);
	if (!strcmp(verb, "issue-hub"))
		return cmd_issue_hub(&a);
	if (!strcmp(verb, "show"))
		return cmd_show(&a);
	return usage("unknown command pki %s", verb);
}
