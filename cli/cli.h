/*
 * cli.h — wtctl's internal interface: global options, the argument
 * iterator every command uses, per-command argument structs with their
 * parsers (pure functions, unit-tested in tests/unit/cli/), and the command
 * entry points (cmd_*.c).
 *
 * Exit codes of commands: 0 success, 1 the server or the input said no
 * (4xx/5xx, malformed file), 2 usage error.
 */
#ifndef WT_CLI_H
#define WT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* Limits of the command line itself. */
#define CLI_MAX_LABELS 64
#define CLI_IDEMPOTENCY_KEY_MAX 128 /* the hub's bound on Idempotency-Key */
#define CLI_MAX_PAIRS 64
#define CLI_ERR_MAX 256
#define WT_CLI_VERSION "0.1-dev"

/* HTTP client defaults (seconds); WT_HTTP_TIMEOUT overrides the total. */
#define CLI_HTTP_CONNECT_TIMEOUT 10
#define CLI_HTTP_TIMEOUT 120
/* Largest response body we keep in memory. */
#define CLI_HTTP_MAX_RESPONSE (256u << 20)

/* Options valid before or after any command. Values point into argv or the
 * environment; nothing is owned. */
typedef struct cli_global {
	const char *hub;   /* --hub URL, or WT_HUB_URL */
	const char *edge;  /* --edge URL, or WT_EDGE_URL */
	const char *edge_arg; /* --edge as given on the command line (admin edge: the edge id) */
	const char *token; /* --token T, or WT_TOKEN */
	const char *admin_token; /* WT_ADMIN_TOKEN: admin commands' fallback */
	int json;          /* --json */
	int help;          /* --help / -h anywhere */
} cli_global;

typedef const char *(*cli_getenv_fn)(const char *name);

/* Take the global options out of argv (wherever they are, up to a "--"),
 * compacting argv in place and updating *argc; then fill unset values from
 * the environment through getenv_fn (NULL = no environment).
 * Returns 0, or CLI_EXIT_USAGE with a message in err. */
int cli_parse_global(int *argc, char **argv, cli_global *g, cli_getenv_fn getenv_fn,
		     char *err, size_t errlen);

/* ---- argument iterator ---------------------------------------------------- */

/* One option: long name ("--service"), optional short name ("-o"), and
 * whether it takes a value. */
typedef struct cli_optspec {
	const char *name;
	const char *short_name;
	int takes_value;
} cli_optspec;

typedef struct cli_argiter {
	int argc;
	char **argv;
	int i;
	int only_positional; /* after "--" */
} cli_argiter;

enum { CLI_ARG_POS = -1, CLI_ARG_END = -2, CLI_ARG_ERR = -3 };

void cli_argiter_init(cli_argiter *it, int argc, char **argv);
/* Next argument: the index of the matching spec (value in *val, or NULL for
 * flags), CLI_ARG_POS (positional in *val), CLI_ARG_END, or CLI_ARG_ERR
 * (message in err: unknown option, missing value). Accepts "--name value",
 * "--name=value", "-o value". specs ends with a {NULL} entry. */
int cli_arg_next(cli_argiter *it, const cli_optspec *specs, const char **val,
		 char *err, size_t errlen);

/* Parse a non-negative decimal integer (whole string). 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out);

/* ---- per-command arguments ------------------------------------------------- */

typedef struct cli_upload_args {
	const char *file;
	const char *service;
	const char *format; /* NULL = server default (auto) */
	const char *type;
	const char *from, *until;
	const char *labels[CLI_MAX_LABELS]; /* "K=V" */
	size_t nlabels;
	const char *idempotency_key; /* NULL = one made per invocation */
} cli_upload_args;

int cli_parse_upload(int argc, char **argv, cli_upload_args *a, char *err, size_t errlen);

typedef struct cli_project_args {
	const char *name;
	int64_t retention_days; /* -1 = not given (server default) */
	int exist_ok;           /* --exist-ok: an existing project (409) is success */
} cli_project_args;

int cli_parse_project_create(int argc, char **argv, cli_project_args *a, char *err, size_t errlen);

typedef struct cli_token_args {
	const char *project;
	const char *role; /* upload | read | admin | DeleteTelemetry */
} cli_token_args;

int cli_parse_token_create(int argc, char **argv, cli_token_args *a, char *err, size_t errlen);

/* `admin token list --project P`, `admin token revoke --project P ID`,
 * `admin edge allow|disallow --edge ID --project P`, `admin edge list
 * [--project P] [--edge ID]`: which options a command takes and needs is
 * given by its verb ("token list", "token revoke", "edge allow", ...). */
typedef struct cli_admin_args {
	const char *project;
	const char *edge;
	const char *id; /* token revoke: the positional token id */
} cli_admin_args;

/* edge_default: the global --edge value taken from the command line (the
 * global options parser consumes --edge wherever it is), NULL if none. */
int cli_parse_admin(const char *verb, const char *edge_default, int argc, char **argv, cli_admin_args *a,
		    char *err, size_t errlen);

typedef struct cli_summary_args {
	const char *file;
	const char *format; /* NULL = auto */
	const char *type;   /* NULL = the profile's default type */
	uint64_t top;       /* rows; default CLI_SUMMARY_TOP */
	uint64_t max_decompressed; /* --max-decompressed; default CLI_OFFLINE_MAX_DECOMPRESSED */
} cli_summary_args;

/* Offline commands inflate a compressed input at most this far unless
 * --max-decompressed says otherwise: a size a laptop survives. */
#define CLI_OFFLINE_MAX_DECOMPRESSED ((uint64_t)1 << 30)
/* "1073741824", "512K", "64M", "2G" (binary units) → bytes; 0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);

#define CLI_SUMMARY_TOP 20

int cli_parse_summary(int argc, char **argv, cli_summary_args *a, char *err, size_t errlen);

typedef enum cli_out_format { CLI_TO_FOLDED, CLI_TO_PPROF, CLI_TO_SPEEDSCOPE } cli_out_format;

typedef struct cli_convert_args {
	const char *file;
	const char *format; /* input format, NULL = auto */
	cli_out_format to;
	const char *type; /* folded: which sample type; NULL = default */
	const char *out;  /* -o FILE; NULL = stdout */
	uint64_t max_decompressed; /* as in cli_summary_args */
} cli_convert_args;

int cli_parse_convert(int argc, char **argv, cli_convert_args *a, char *err, size_t errlen);

typedef struct cli_query_args {
	const char *view; /* "table" | "flamegraph" */
	const char *project;
	const char *service;
	const char *type;
	const char *from, *until;
	const char *labels[CLI_MAX_LABELS]; /* "K=V" */
	size_t nlabels;
	uint64_t limit; /* table rows printed in text mode; 0 = all */
} cli_query_args;

/* view: "table" or "flamegraph" (the word after `query`). */
int cli_parse_query(const char *view, int argc, char **argv, cli_query_args *a,
		    char *err, size_t errlen);

typedef struct cli_config_args {
	const char *in;
	const char *out; /* NULL = stdout */
	const char *pairs[CLI_MAX_PAIRS]; /* "path=libconfig value" */
	size_t npairs;
} cli_config_args;

int cli_parse_config_set(int argc, char **argv, cli_config_args *a, char *err, size_t errlen);

/* ---- URL building (pure; unit-tested) -------------------------------------- */

/* Append s percent-encoded (RFC 3986 unreserved kept) to a malloc'd string
 * builder. All cli_*_url functions return a malloc'd URL (caller frees) or
 * NULL on out-of-memory or a bad base. */
char *cli_upload_url(const char *base, const cli_upload_args *a);
char *cli_query_url(const char *base, const cli_query_args *a);
/* {base}/v1/projects/P/debuginfo[/BUILD_ID][?name=NAME] (NULLs left out). */
char *cli_debuginfo_url(const char *base, const char *project, const char *build_id, const char *name);

/* ---- commands (argv starts after the command words) ------------------------ */

int cli_cmd_upload(const cli_global *g, int argc, char **argv);
int cli_cmd_summary(const cli_global *g, int argc, char **argv);
int cli_cmd_convert(const cli_global *g, int argc, char **argv);
int cli_cmd_project_create(const cli_global *g, int argc, char **argv);
int cli_cmd_token_create(const cli_global *g, int argc, char **argv);
int cli_cmd_token_list(const cli_global *g, int argc, char **argv);
int cli_cmd_token_revoke(const cli_global *g, int argc, char **argv);
/* act: allow | disallow | list */
int cli_cmd_edge(const cli_global *g, const char *act, int argc, char **argv);
int cli_cmd_query(const cli_global *g, const char *view, int argc, char **argv);
int cli_cmd_config_set(const cli_global *g, int argc, char **argv);
int cli_cmd_config_get(const cli_global *g, int argc, char **argv);
/* policy get|set (cmd_policy.c) */
/* sourcemaps upload|list|delete (cmd_sourcemaps.c). */
int cli_cmd_sourcemaps(const cli_global *g, const char *verb, int argc, char **argv);
int cli_cmd_policy(const cli_global *g, const char *verb, int argc, char **argv);

/* Dispatch: the whole wtctl command line. */
int cli_main(int argc, char **argv, cli_getenv_fn getenv_fn);
void cli_usage(FILE *f);

#endif
