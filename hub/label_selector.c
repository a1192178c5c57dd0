/*
 * label_selector.c — parser and SQL rendering of Prometheus-style label
 * selectors (label_selector.h).
 */
#include "label_selector.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "upload.h"

static const char *const column_labels[] = {"host", "thread", "container", "span_id", "trace_id"};

int hub_lsel_add(hub_lsel *s, const char *name, int op, const char *value)
{
	if (s->n >= HUB_LSEL_MAX)
		return WT_ELIMIT;
	s->m[s->n].name = strdup(name);
	s->m[s->n].value = strdup(value);
	s->m[s->n].op = op;
	s->n++;
	if (!s->m[s->n - 1].name || !s->m[s->n - 1].value)
		return WT_ENOMEM;
	return 0;
}

void hub_lsel_free(hub_lsel *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->m[i].name);
		free(s->m[i].value);
	}
	s->n = 0;
}

const char *hub_lsel_get(const hub_lsel *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->m[i].op == HUB_LM_EQ && !strcmp(s->m[i].name, name))
			return s->m[i].value;
	return NULL;
}

static void skip_ws(const char *s, size_t *i)
{
	while (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\n' || s[*i] == '\r')
		(*i)++;
}

/* A quoted string at s[*i] into out (NUL-terminated). */
static int parse_value(const char *s, size_t *i, wt_buf *out, wt_err *err)
{
	char q = s[*i];
	size_t start = *i;

	if (q != '"' && q != '\'' && q != '`')
		return wt_err_set(err, WT_EINVAL, "position %zu: expected a quoted value", *i + 1);
	(*i)++;
	for (;;) {
		char c = s[*i];
		if (!c)
			return wt_err_set(err, WT_EINVAL, "position %zu: value opened here is not closed", start + 1);
		(*i)++;
		if (c == q)
			break;
		if (c == '\\' && q != '`') {
			char e = s[*i];
			(*i)++;
			switch (e) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '\\': case '"': case '\'': c = e; break;
			default:
				/* keep unknown escapes for the regex engine (\d, \.) */
				if (!e)
					return wt_err_set(err, WT_EINVAL, "position %zu: value opened here is not closed",
							  start + 1);
				wt_buf_putc(out, '\\');
				c = e;
			}
		}
		wt_buf_putc(out, c);
	}
	wt_buf_putc(out, '\0');
	return out->oom ? wt_err_set(err, WT_ENOMEM, "out of memory") : 0;
}

int hub_lsel_parse(const char *s, hub_lsel *out, wt_err *err)
{
	size_t i = 0;
	int rc = 0;
	wt_buf name = WT_BUF_INIT, val = WT_BUF_INIT;

	out->n = 0;
	skip_ws(s, &i);
	if (!s[i])
		return 0;
	if (s[i] != '{')
		return wt_err_set(err, WT_EINVAL, "position %zu: expected '{'", i + 1);
	i++;
	for (;;) {
		int op;
		size_t at;

		skip_ws(s, &i);
		if (s[i] == '}')
			break;
		at = i;
		if (!(isalpha((unsigned char)s[i]) || s[i] == '_')) {
			rc = wt_err_set(err, WT_EINVAL, "position %zu: expected a label name or '}'", i + 1);
			goto out;
		}
		wt_buf_reset(&name);
		/* the upload contract's label keys (common/upload.h): "k8s/pod" too */
		while (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '/' || s[i] == '-')
			wt_buf_putc(&name, s[i++]);
		wt_buf_putc(&name, '\0');
		if (!name.oom && !wt_upload_label_key_valid((char *)name.data)) {
			rc = wt_err_set(err, WT_EINVAL, "position %zu: label name longer than %d bytes", at + 1,
					WT_UPLOAD_LABEL_KEY_MAX);
			goto out;
		}
		skip_ws(s, &i);
		if (s[i] == '=' && s[i + 1] == '~')
			op = HUB_LM_RE, i += 2;
		else if (s[i] == '!' && s[i + 1] == '~')
			op = HUB_LM_NRE, i += 2;
		else if (s[i] == '!' && s[i + 1] == '=')
			op = HUB_LM_NE, i += 2;
		else if (s[i] == '=')
			op = HUB_LM_EQ, i += 1;
		else {
			rc = wt_err_set(err, WT_EINVAL, "position %zu: expected =, !=, =~ or !~ after \"%.64s\"",
					i + 1, (char *)name.data);
			goto out;
		}
		skip_ws(s, &i);
		wt_buf_reset(&val);
		if ((rc = parse_value(s, &i, &val, err)))
			goto out;
		if (name.oom || (rc = hub_lsel_add(out, (char *)name.data, op, (char *)val.data))) {
			rc = wt_err_set(err, rc == WT_ELIMIT ? WT_EINVAL : WT_ENOMEM,
					"position %zu: %s", at + 1,
					rc == WT_ELIMIT ? "more than 64 matchers" : "out of memory");
			goto out;
		}
		skip_ws(s, &i);
		if (s[i] == ',') {
			i++;
			continue;
		}
		if (s[i] != '}') {
			rc = wt_err_set(err, WT_EINVAL, "position %zu: expected ',' or '}'", i + 1);
			goto out;
		}
		break;
	}
	i++;
	skip_ws(s, &i);
	if (s[i])
		rc = wt_err_set(err, WT_EINVAL, "position %zu: unexpected text after '}'", i + 1);
out:
	wt_buf_free(&name);
	wt_buf_free(&val);
	return rc;
}

void hub_lsel_column(wt_buf *w, const char *name)
{
	size_t j;

	if (!strcmp(name, "service_name")) {
		wt_buf_puts(w, "service");
		return;
	}
	for (j = 0; j < sizeof(column_labels) / sizeof(column_labels[0]); j++)
		if (!strcmp(name, column_labels[j])) {
			wt_buf_puts(w, column_labels[j]);
			return;
		}
	wt_buf_puts(w, "labels.value[indexOf(labels.key, ");
	hub_sql_quote(w, name);
	wt_buf_puts(w, ")]");
}

void hub_lsel_where(wt_buf *w, const hub_lsel *s)
{
	size_t i;

	for (i = 0; s && i < s->n; i++) {
		const hub_lmatch *m = &s->m[i];
		if (!strncmp(m->name, "__", 2))
			continue;
		wt_buf_puts(w, m->op == HUB_LM_NRE ? " AND NOT match(" : m->op == HUB_LM_RE ? " AND match(" : " AND ");
		hub_lsel_column(w, m->name);
		if (m->op == HUB_LM_RE || m->op == HUB_LM_NRE) {
			wt_buf re = WT_BUF_INIT;
			wt_buf_printf(&re, "^(?:%s)$", m->value);
			wt_buf_putc(&re, '\0');
			wt_buf_puts(w, ", ");
			hub_sql_quote(w, re.oom ? "^$" : (const char *)re.data);
			wt_buf_puts(w, ")");
			wt_buf_free(&re);
		} else {
			wt_buf_puts(w, m->op == HUB_LM_EQ ? " = " : " != ");
			hub_sql_quote(w, m->value);
		}
	}
}
