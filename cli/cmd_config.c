/*
 * cmd_config.c — `wtctl config set FILE [-o OUT] path=value...` and
 * `wtctl config get FILE path`: read a libconfig file (such as the examples
 * appliance/hub.cfg and appliance/edge.cfg), replace or add settings, and
 * write the result. `appliance/up` generates each daemon's config this way,
 * so a key renamed in an example fails loudly instead of being ignored.
 *
 * Values are libconfig syntax: "\"text\"", 42, true, [ "a", "b" ],
 * ( { name = "demo"; } ). Missing groups on the path are created.
 * Comments of the input are not preserved in the output.
 */
#include "cli.h"

#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* d and src have the same scalar type. */
static int set_scalar(config_setting_t *d, const config_setting_t *src)
{
	switch (config_setting_type(src)) {
	case CONFIG_TYPE_INT:
		return config_setting_set_int(d, config_setting_get_int(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_INT64:
		return config_setting_set_int64(d, config_setting_get_int64(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_FLOAT:
		return config_setting_set_float(d, config_setting_get_float(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_BOOL:
		return config_setting_set_bool(d, config_setting_get_bool(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_STRING:
		return config_setting_set_string(d, config_setting_get_string(src)) == CONFIG_TRUE ? 0 : -1;
	}
	return -1;
}

static int copy_setting(config_setting_t *parent, const char *name, const config_setting_t *src)
{
	int type = config_setting_type(src);
	config_setting_t *d = config_setting_add(parent, name, type);

	if (!d)
		return -1;
	switch (type) {
	case CONFIG_TYPE_INT:
		return config_setting_set_int(d, config_setting_get_int(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_INT64:
		return config_setting_set_int64(d, config_setting_get_int64(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_FLOAT:
		return config_setting_set_float(d, config_setting_get_float(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_BOOL:
		return config_setting_set_bool(d, config_setting_get_bool(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_STRING:
		return config_setting_set_string(d, config_setting_get_string(src)) == CONFIG_TRUE ? 0 : -1;
	case CONFIG_TYPE_GROUP:
	case CONFIG_TYPE_LIST:
	case CONFIG_TYPE_ARRAY:
		for (int i = 0; i < config_setting_length(src); i++) {
			const config_setting_t *c = config_setting_get_elem(src, (unsigned)i);
			if (copy_setting(d, type == CONFIG_TYPE_GROUP ? config_setting_name(c) : NULL, c))
				return -1;
		}
		return 0;
	}
	return -1;
}

/* Set "a.b.c" to the libconfig value text. 0 or -1 (message printed). */
static int set_path(config_t *cfg, const char *pair)
{
	const char *eq = strchr(pair, '=');
	char path[512], *name, *dot, *tmp = NULL;
	config_t val;
	config_setting_t *parent = config_root_setting(cfg), *old, *src;
	int rc = -1;

	config_init(&val);
	if ((size_t)(eq - pair) >= sizeof(path)) {
		fprintf(stderr, "wtctl: config set: path too long\n");
		goto out;
	}
	memcpy(path, pair, (size_t)(eq - pair));
	path[eq - pair] = '\0';
	if (asprintf(&tmp, "v = %s;\n", eq + 1) < 0) {
		tmp = NULL;
		goto out;
	}
	if (config_read_string(&val, tmp) != CONFIG_TRUE) {
		fprintf(stderr, "wtctl: config set: %s: value %s: %s\n", path, eq + 1, config_error_text(&val));
		goto out;
	}
	/* Walk (and create) the groups on the path. */
	name = path;
	while ((dot = strchr(name, '.'))) {
		config_setting_t *g;
		*dot = '\0';
		g = config_setting_get_member(parent, name);
		if (!g)
			g = config_setting_add(parent, name, CONFIG_TYPE_GROUP);
		if (!g || config_setting_type(g) != CONFIG_TYPE_GROUP) {
			fprintf(stderr, "wtctl: config set: %s: %s is not a group\n", pair, name);
			goto out;
		}
		parent = g;
		name = dot + 1;
	}
	src = config_lookup(&val, "v");
	old = config_setting_get_member(parent, name);
	/* Same scalar type: set in place, keeping the example's order. */
	if (old && config_setting_type(old) == config_setting_type(src) &&
	    config_setting_is_scalar(src) == CONFIG_TRUE) {
		rc = set_scalar(old, src);
		if (rc)
			fprintf(stderr, "wtctl: config set: cannot set %s\n", path);
		goto out;
	}
	if (old && config_setting_remove(parent, name) != CONFIG_TRUE) {
		fprintf(stderr, "wtctl: config set: cannot replace %s\n", path);
		goto out;
	}
	if (copy_setting(parent, name, src)) {
		fprintf(stderr, "wtctl: config set: cannot set %s (bad name?)\n", path);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	config_destroy(&val);
	return rc;
}

int cli_cmd_config_set(const cli_global *g, int argc, char **argv)
{
	cli_config_args a;
	char err[CLI_ERR_MAX];
	config_t cfg;
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_config_set(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	config_init(&cfg);
	if (config_read_file(&cfg, a.in) != CONFIG_TRUE) {
		fprintf(stderr, "wtctl: %s:%d: %s\n", a.in, config_error_line(&cfg), config_error_text(&cfg));
		goto out;
	}
	for (size_t i = 0; i < a.npairs; i++)
		if (set_path(&cfg, a.pairs[i]))
			goto out;
	if (a.out && strcmp(a.out, "-")) {
		if (config_write_file(&cfg, a.out) != CONFIG_TRUE) {
			fprintf(stderr, "wtctl: %s: cannot write\n", a.out);
			goto out;
		}
	} else {
		config_write(&cfg, stdout);
	}
	rc = CLI_EXIT_OK;
out:
	config_destroy(&cfg);
	return rc;
}

int cli_cmd_config_get(const cli_global *g, int argc, char **argv)
{
	config_t cfg;
	config_setting_t *s;
	int rc = CLI_EXIT_FAIL;

	if (argc != 2) {
		fprintf(stderr, "wtctl: usage: config get FILE PATH\n");
		return CLI_EXIT_USAGE;
	}
	config_init(&cfg);
	if (config_read_file(&cfg, argv[0]) != CONFIG_TRUE) {
		fprintf(stderr, "wtctl: %s:%d: %s\n", argv[0], config_error_line(&cfg), config_error_text(&cfg));
		goto out;
	}
	if (!(s = config_lookup(&cfg, argv[1])))
		goto out; /* silent: scripts test for presence */
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT: printf("%d\n", config_setting_get_int(s)); break;
	case CONFIG_TYPE_INT64: printf("%lld\n", config_setting_get_int64(s)); break;
	case CONFIG_TYPE_FLOAT: printf("%g\n", config_setting_get_float(s)); break;
	case CONFIG_TYPE_BOOL: printf("%s\n", config_setting_get_bool(s) ? "true" : "false"); break;
	case CONFIG_TYPE_STRING: printf("%s\n", config_setting_get_string(s)); break;
	default: printf("(%d elements)\n", config_setting_length(s)); break;
	}
	rc = CLI_EXIT_OK;
out:
	config_destroy(&cfg);
	return rc;
}
