/*
 * args.c — wtctl command-line parsing: global options, a small option
 * iterator, and one parser per command. Pure functions (no I/O, no
 * allocation), so tests/unit/cli/test_args.c can drive them directly.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int usage_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int usage_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return CLI_EXIT_USAGE;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* ---- global options --------------------------------------------------------- */

static const cli_optspec global_specs[] = {
	{"--hub", NULL, 1}, {"--edge", NULL, 1}, {"--token", NULL, 1},
	{"--json", NULL, 0}, {"--help", "-h", 0}, {NULL, NULL, 0},
};

/* Does arg name global option spec (either "--x" or "--x=value")? */
static int match_global(const char *arg, const cli_optspec **spec, const char **inline_val)
{
	for (const cli_optspec *s = global_specs; s->name; s++) {
		size_t n = strlen(s->name);
		if (!strcmp(arg, s->name) || (s->short_name && !strcmp(arg, s->short_name))) {
			*spec = s;
			*inline_val = NULL;
			return 1;
		}
		if (s->takes_value && !strncmp(arg, s->name, n) && arg[n] == '=') {
			*spec = s;
			*inline_val = arg + n + 1;
			return 1;
		}
	}
	return 0;
}

int cli_parse_global(int *argc, char **argv, cli_global *g, cli_getenv_fn getenv_fn,
		     char *err, size_t errlen)
{
	int out = 1, i = 1, dashdash = 0;

	memset(g, 0, sizeof(*g));
	while (i < *argc) {
		const cli_optspec *s;
		const char *val;
		char *arg = argv[i];

		if (dashdash || !match_global(arg, &s, &val)) {
			if (!strcmp(arg, "--"))
				dashdash = 1;
			argv[out++] = argv[i++];
			continue;
		}
		i++;
		if (s->takes_value && !val) {
			if (i >= *argc)
				return usage_err(err, errlen, "option %s needs a value", s->name);
			val = argv[i++];
		}
		if (!strcmp(s->name, "--hub"))
			g->hub = val;
		else if (!strcmp(s->name, "--edge"))
			g->edge = g->edge_arg = val;
		else if (!strcmp(s->name, "--token"))
			g->token = val;
		else if (!strcmp(s->name, "--json"))
			g->json = 1;
		else
			g->help = 1;
	}
	argv[out] = NULL;
	*argc = out;
	if (getenv_fn) {
		const char *v;
		if (!g->hub && (v = getenv_fn("WT_HUB_URL")) && *v)
			g->hub = v;
		if (!g->edge && (v = getenv_fn("WT_EDGE_URL")) && *v)
			g->edge = v;
		if (!g->token && (v = getenv_fn("WT_TOKEN")) && *v)
			g->token = v;
		if ((v = getenv_fn("WT_ADMIN_TOKEN")) && *v)
			g->admin_token = v;
	}
	return 0;
}

/* ---- iterator ----------------------------------------------------------------- */

void cli_argiter_init(cli_argiter *it, int argc, char **argv)
{
	it->argc = argc;
	it->argv = argv;
	it->i = 0;
	it->only_positional = 0;
}

int cli_arg_next(cli_argiter *it, const cli_optspec *specs, const char **val,
		 char *err, size_t errlen)
{
	const char *arg;

	*val = NULL;
	if (it->i >= it->argc)
		return CLI_ARG_END;
	arg = it->argv[it->i++];
	if (!it->only_positional && !strcmp(arg, "--")) {
		it->only_positional = 1;
		return cli_arg_next(it, specs, val, err, errlen);
	}
	/* "-" alone is a positional (stdin/stdout by convention). */
	if (it->only_positional || arg[0] != '-' || arg[1] == '\0') {
		*val = arg;
		return CLI_ARG_POS;
	}
	for (int k = 0; specs[k].name; k++) {
		const cli_optspec *s = &specs[k];
		size_t n = strlen(s->name);

		if (!strcmp(arg, s->name) || (s->short_name && !strcmp(arg, s->short_name))) {
			if (s->takes_value) {
				if (it->i >= it->argc) {
					usage_err(err, errlen, "option %s needs a value", s->name);
					return CLI_ARG_ERR;
				}
				*val = it->argv[it->i++];
			}
			return k;
		}
		if (!strncmp(arg, s->name, n) && arg[n] == '=') {
			if (!s->takes_value) {
				usage_err(err, errlen, "option %s takes no value", s->name);
				return CLI_ARG_ERR;
			}
			*val = arg + n + 1;
			return k;
		}
	}
	usage_err(err, errlen, "unknown option %s", arg);
	return CLI_ARG_ERR;
}

/* ---- shared checks ---------------------------------------------------------- */

/* "K=V" with a non-empty K made of [A-Za-z0-9_.-]. */
static int check_label(const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv)
		return usage_err(err, errlen, "--label %s: expected K=V", kv);
	for (const char *p = kv; p < eq; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return usage_err(err, errlen, "--label %s: key may hold only letters, digits, '_', '.', '-'", kv);
	}
	return 0;
}

static int set_positional(const char **slot, const char *val, const char *what,
			  char *err, size_t errlen)
{
	if (*slot)
		return usage_err(err, errlen, "unexpected argument %s (%s already given)", val, what);
	*slot = val;
	return 0;
}

/* ---- profile upload ------------------------------------------------------------ */

int cli_parse_upload(int argc, char **argv, cli_upload_args *a, char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--service", "-s", 1}, {"--format", "-f", 1}, {"--type", "-t", 1},
		{"--label", "-l", 1},   {"--from", NULL, 1},   {"--until", NULL, 1},
		{"--idempotency-key", NULL, 1}, {NULL, NULL, 0},
	};
	cli_argiter it;
	const char *v;
	int k, rc;

	memset(a, 0, sizeof(*a));
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		switch (k) {
		case CLI_ARG_ERR: return CLI_EXIT_USAGE;
		case CLI_ARG_POS:
			if ((rc = set_positional(&a->file, v, "FILE", err, errlen)))
				return rc;
			break;
		case 0: a->service = v; break;
		case 1: a->format = v; break;
		case 2: a->type = v; break;
		case 3:
			if ((rc = check_label(v, err, errlen)))
				return rc;
			if (a->nlabels == CLI_MAX_LABELS)
				return usage_err(err, errlen, "at most %d --label options", CLI_MAX_LABELS);
			a->labels[a->nlabels++] = v;
			break;
		case 4: a->from = v; break;
		case 5: a->until = v; break;
		case 6:
			/* the hub's rule (docs/api.md, direct upload) */
			if (!*v || strlen(v) > CLI_IDEMPOTENCY_KEY_MAX ||
			    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") != strlen(v))
				return usage_err(err, errlen, "--idempotency-key: 1..%d characters of [A-Za-z0-9._:-]",
						 CLI_IDEMPOTENCY_KEY_MAX);
			a->idempotency_key = v;
			break;
		}
	}
	if (!a->file)
		return usage_err(err, errlen, "profile upload: FILE is required");
	if (!a->service || !*a->service)
		return usage_err(err, errlen, "profile upload: --service is required");
	return 0;
}

/* ---- admin ---------------------------------------------------------------------- */

int cli_parse_project_create(int argc, char **argv, cli_project_args *a, char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--retention-days", NULL, 1}, {"--exist-ok", NULL, 0}, {NULL, NULL, 0},
	};
	cli_argiter it;
	const char *v;
	uint64_t days;
	int k, rc;

	memset(a, 0, sizeof(*a));
	a->retention_days = -1;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR)
			return CLI_EXIT_USAGE;
		if (k == CLI_ARG_POS) {
			if ((rc = set_positional(&a->name, v, "NAME", err, errlen)))
				return rc;
			continue;
		}
		if (k == 1) {
			a->exist_ok = 1;
			continue;
		}
		if (cli_parse_u64(v, &days) || days == 0 || days > 36500)
			return usage_err(err, errlen, "--retention-days %s: expected a whole number of days, 1..36500", v);
		a->retention_days = (int64_t)days;
	}
	if (!a->name || !*a->name)
		return usage_err(err, errlen, "admin project create: NAME is required");
	return 0;
}

int cli_parse_token_create(int argc, char **argv, cli_token_args *a, char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--project", "-p", 1}, {"--role", "-r", 1}, {NULL, NULL, 0},
	};
	static const char *const roles[] = {"upload", "read", "admin", "DeleteTelemetry", NULL};
	cli_argiter it;
	const char *v;
	int k, ok = 0;

	memset(a, 0, sizeof(*a));
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR)
			return CLI_EXIT_USAGE;
		if (k == CLI_ARG_POS)
			return usage_err(err, errlen, "admin token create: unexpected argument %s", v);
		if (k == 0)
			a->project = v;
		else
			a->role = v;
	}
	if (!a->project || !*a->project)
		return usage_err(err, errlen, "admin token create: --project is required");
	if (!a->role)
		return usage_err(err, errlen, "admin token create: --role is required (upload|read|admin|DeleteTelemetry)");
	for (int i = 0; roles[i]; i++)
		ok |= !strcmp(a->role, roles[i]);
	if (!ok)
		return usage_err(err, errlen, "--role %s: expected upload, read, admin or DeleteTelemetry", a->role);
	return 0;
}

int cli_parse_admin(const char *verb, const char *edge_default, int argc, char **argv, cli_admin_args *a,
		    char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--project", "-p", 1}, {"--edge", "-e", 1}, {NULL, NULL, 0},
	};
	int revoke = !strcmp(verb, "token revoke"), edge_cmd = !strncmp(verb, "edge ", 5);
	int list = !strcmp(verb, "edge list");
	cli_argiter it;
	const char *v;
	int k;

	memset(a, 0, sizeof(*a));
	if (edge_cmd)
		a->edge = edge_default;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR)
			return CLI_EXIT_USAGE;
		if (k == CLI_ARG_POS) {
			if (!revoke || a->id)
				return usage_err(err, errlen, "admin %s: unexpected argument %s", verb, v);
			a->id = v;
		} else if (k == 0) {
			a->project = v;
		} else {
			if (!edge_cmd)
				return usage_err(err, errlen, "admin %s: --edge is not an option here", verb);
			a->edge = v;
		}
	}
	if (!list && (!a->project || !*a->project))
		return usage_err(err, errlen, "admin %s: --project is required", verb);
	if (edge_cmd && !list && (!a->edge || !*a->edge))
		return usage_err(err, errlen, "admin %s: --edge is required", verb);
	if (revoke && (!a->id || !*a->id))
		return usage_err(err, errlen, "admin token revoke: give the token id (admin token list shows it)");
	return 0;
}

/* ---- offline profile commands --------------------------------------------------- */

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end)
		return -1;
	if (shift && (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B")))
		return -1;
	if (v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_parse_summary(int argc, char **argv, cli_summary_args *a, char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--format", "-f", 1}, {"--type", "-t", 1}, {"--top", "-n", 1},
		{"--max-decompressed", NULL, 1}, {NULL, NULL, 0},
	};
	cli_argiter it;
	const char *v;
	int k, rc;

	memset(a, 0, sizeof(*a));
	a->top = CLI_SUMMARY_TOP;
	a->max_decompressed = CLI_OFFLINE_MAX_DECOMPRESSED;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		switch (k) {
		case CLI_ARG_ERR: return CLI_EXIT_USAGE;
		case CLI_ARG_POS:
			if ((rc = set_positional(&a->file, v, "FILE", err, errlen)))
				return rc;
			break;
		case 0: a->format = v; break;
		case 1: a->type = v; break;
		case 2:
			if (cli_parse_u64(v, &a->top))
				return usage_err(err, errlen, "--top %s: expected a number (0 = all)", v);
			break;
		case 3:
			if (cli_parse_size(v, &a->max_decompressed) || !a->max_decompressed)
				return usage_err(err, errlen, "--max-decompressed %s: expected a size "
						 "(bytes, or with K, M, G)", v);
			break;
		}
	}
	if (!a->file)
		return usage_err(err, errlen, "profile summary: FILE is required");
	return 0;
}

int cli_parse_convert(int argc, char **argv, cli_convert_args *a, char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--to", NULL, 1}, {"--format", "-f", 1}, {"--type", "-t", 1},
		{"--output", "-o", 1}, {"--max-decompressed", NULL, 1}, {NULL, NULL, 0},
	};
	cli_argiter it;
	const char *v, *to = NULL;
	int k, rc;

	memset(a, 0, sizeof(*a));
	a->max_decompressed = CLI_OFFLINE_MAX_DECOMPRESSED;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		switch (k) {
		case CLI_ARG_ERR: return CLI_EXIT_USAGE;
		case CLI_ARG_POS:
			if ((rc = set_positional(&a->file, v, "FILE", err, errlen)))
				return rc;
			break;
		case 0: to = v; break;
		case 1: a->format = v; break;
		case 2: a->type = v; break;
		case 3: a->out = v; break;
		case 4:
			if (cli_parse_size(v, &a->max_decompressed) || !a->max_decompressed)
				return usage_err(err, errlen, "--max-decompressed %s: expected a size "
						 "(bytes, or with K, M, G)", v);
			break;
		}
	}
	if (!a->file)
		return usage_err(err, errlen, "profile convert: FILE is required");
	if (!to)
		return usage_err(err, errlen, "profile convert: --to folded|pprof|speedscope is required");
	if (!strcmp(to, "folded") || !strcmp(to, "collapsed"))
		a->to = CLI_TO_FOLDED;
	else if (!strcmp(to, "pprof"))
		a->to = CLI_TO_PPROF;
	else if (!strcmp(to, "speedscope"))
		a->to = CLI_TO_SPEEDSCOPE;
	else
		return usage_err(err, errlen, "--to %s: expected folded, pprof or speedscope", to);
	return 0;
}

/* ---- query ------------------------------------------------------------------------ */

int cli_parse_query(const char *view, int argc, char **argv, cli_query_args *a,
		    char *err, size_t errlen)
{
	static const cli_optspec specs[] = {
		{"--project", "-p", 1}, {"--service", "-s", 1}, {"--type", "-t", 1},
		{"--from", NULL, 1},    {"--until", NULL, 1},   {"--label", "-l", 1},
		{"--limit", "-n", 1},   {NULL, NULL, 0},
	};
	cli_argiter it;
	const char *v;
	int k, rc;

	memset(a, 0, sizeof(*a));
	a->view = view;
	a->limit = 0;
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		switch (k) {
		case CLI_ARG_ERR: return CLI_EXIT_USAGE;
		case CLI_ARG_POS: return usage_err(err, errlen, "query: unexpected argument %s", v);
		case 0: a->project = v; break;
		case 1: a->service = v; break;
		case 2: a->type = v; break;
		case 3: a->from = v; break;
		case 4: a->until = v; break;
		case 5:
			if ((rc = check_label(v, err, errlen)))
				return rc;
			if (a->nlabels == CLI_MAX_LABELS)
				return usage_err(err, errlen, "at most %d --label options", CLI_MAX_LABELS);
			a->labels[a->nlabels++] = v;
			break;
		case 6:
			if (cli_parse_u64(v, &a->limit))
				return usage_err(err, errlen, "--limit %s: expected a number (0 = all)", v);
			break;
		}
	}
	if (!a->view || (strcmp(a->view, "table") && strcmp(a->view, "flamegraph")))
		return usage_err(err, errlen, "query: view must be table or flamegraph");
	if (!a->project || !*a->project)
		return usage_err(err, errlen, "query %s: --project is required", a->view);
	if (!a->service || !*a->service)
		return usage_err(err, errlen, "query %s: --service is required", a->view);
	return 0;
}

/* ---- config set ---------------------------------------------------------------------- */

int cli_parse_config_set(int argc, char **argv, cli_config_args *a, char *err, size_t errlen)
{
	static const cli_optspec specs[] = {{"--output", "-o", 1}, {NULL, NULL, 0}};
	cli_argiter it;
	const char *v;
	int k;

	memset(a, 0, sizeof(*a));
	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &v, err, errlen)) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR)
			return CLI_EXIT_USAGE;
		if (k == 0) {
			a->out = v;
			continue;
		}
		if (!a->in) {
			a->in = v;
			continue;
		}
		if (!strchr(v, '=') || v[0] == '=')
			return usage_err(err, errlen, "config set: %s: expected path=value", v);
		if (a->npairs == CLI_MAX_PAIRS)
			return usage_err(err, errlen, "config set: at most %d settings", CLI_MAX_PAIRS);
		a->pairs[a->npairs++] = v;
	}
	if (!a->in)
		return usage_err(err, errlen, "config set: FILE is required");
	return 0;
}
