/*
 * test_flame.c — flame tree, function table and call graph: hand-built
 * stacks with recursion, tree totals against table sums, wide nodes,
 * max_nodes truncation, and a real corpus file against an awk count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "flame.h"
#include "folded.h"

static void add(wt_flame *f, const char *stack, int64_t v)
{
	const char *fr[64];
	char tmp[512], *save = NULL, *tok;
	size_t n = 0;

	snprintf(tmp, sizeof(tmp), "%s", stack);
	for (tok = strtok_r(tmp, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		fr[n++] = tok;
	assert_int_equal(wt_flame_add(f, fr, n, v), 0);
}

/* Every node: total == self + sum(children totals); returns node count. */
static size_t check_tree(json_t *node)
{
	json_t *kids = json_object_get(node, "children");
	int64_t sum = json_integer_value(json_object_get(node, "self"));
	size_t n = 1, i;
	const char *prev = NULL;

	assert_true(json_is_array(kids));
	for (i = 0; i < json_array_size(kids); i++) {
		json_t *c = json_array_get(kids, i);
		const char *name = json_string_value(json_object_get(c, "name"));

		if (prev)
			assert_true(strcmp(prev, name) < 0); /* sorted, unique */
		prev = name;
		sum += json_integer_value(json_object_get(c, "total"));
		n += check_tree(c);
	}
	assert_int_equal(sum, json_integer_value(json_object_get(node, "total")));
	return n;
}

static json_t *child(json_t *node, const char *name)
{
	json_t *kids = json_object_get(node, "children");

	for (size_t i = 0; i < json_array_size(kids); i++) {
		json_t *c = json_array_get(kids, i);

		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	}
	return NULL;
}

static json_t *row_of(json_t *table, const char *fn)
{
	json_t *rows = json_object_get(table, "rows");

	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *r = json_array_get(rows, i);

		if (!strcmp(json_string_value(json_object_get(r, "function")), fn))
			return r;
	}
	return NULL;
}

#define JI(o, k) json_integer_value(json_object_get((o), (k)))

static void test_recursion(void **state)
{
	wt_flame *f = wt_flame_new();
	json_t *tree, *tab, *cg, *a, *ab, *r;
	int64_t self_sum = 0;
	size_t i;
	(void)state;

	add(f, "a;b;a;b", 10);
	add(f, "a;c", 5);
	add(f, "a;b", 7);
	assert_int_equal(wt_flame_add(f, NULL, 0, 3), 0); /* empty stack: root self */
	assert_int_equal(wt_flame_total(f), 25);

	tree = wt_flame_tree_json(f, "samples", 0);
	assert_non_null(tree);
	assert_string_equal(json_string_value(json_object_get(tree, "unit")), "samples");
	assert_int_equal(JI(tree, "total"), 25);
	assert_false(json_is_true(json_object_get(tree, "truncated")));
	r = json_object_get(tree, "root");
	assert_string_equal(json_string_value(json_object_get(r, "name")), "total");
	assert_int_equal(JI(r, "self"), 3);
	assert_int_equal(check_tree(r), 1 + 5); /* a, a;b, a;b;a, a;b;a;b, a;c */
	a = child(r, "a");
	ab = child(a, "b");
	assert_int_equal(JI(a, "total"), 22);
	assert_int_equal(JI(ab, "total"), 17);
	assert_int_equal(JI(ab, "self"), 7);
	assert_int_equal(JI(child(child(ab, "a"), "b"), "self"), 10);

	tab = wt_flame_table_json(f, "samples", 0);
	assert_int_equal(JI(tab, "total"), 25);
	assert_int_equal(JI(row_of(tab, "a"), "total"), 22); /* once per stack */
	assert_int_equal(JI(row_of(tab, "b"), "total"), 17);
	assert_int_equal(JI(row_of(tab, "b"), "self"), 17);
	assert_int_equal(JI(row_of(tab, "c"), "self"), 5);
	assert_int_equal(JI(row_of(tab, "a"), "self"), 0);
	for (i = 0; i < json_array_size(json_object_get(tab, "rows")); i++)
		self_sum += JI(json_array_get(json_object_get(tab, "rows"), i), "self");
	assert_int_equal(self_sum + 3, JI(r, "total")); /* + empty-stack self */
	/* order: self desc */
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(tab, "rows"), 0), "function")), "b");

	cg = wt_flame_callgraph_json(f, "samples", 0);
	{
		json_t *nodes = json_object_get(cg, "nodes"), *edges = json_object_get(cg, "edges");
		int64_t id_a = -1, id_b = -1, ab_v = -1, ba_v = -1;

		assert_int_equal(json_array_size(nodes), 3);
		for (i = 0; i < 3; i++) {
			json_t *n = json_array_get(nodes, i);
			const char *fn = json_string_value(json_object_get(n, "function"));

			if (!strcmp(fn, "a"))
				id_a = JI(n, "id");
			if (!strcmp(fn, "b"))
				id_b = JI(n, "id");
		}
		for (i = 0; i < json_array_size(edges); i++) {
			json_t *e = json_array_get(edges, i);

			if (JI(e, "from") == id_a && JI(e, "to") == id_b)
				ab_v = JI(e, "value");
			if (JI(e, "from") == id_b && JI(e, "to") == id_a)
				ba_v = JI(e, "value");
		}
		assert_int_equal(ab_v, 17); /* a→b twice in a;b;a;b, counted once */
		assert_int_equal(ba_v, 10);
		assert_int_equal(json_array_size(edges), 3); /* a→b, b→a, a→c */
	}
	json_decref(tree);
	json_decref(tab);
	json_decref(cg);
	wt_flame_free(f);
}

static void test_wide_and_truncated(void **state)
{
	wt_flame *f = wt_flame_new();
	json_t *tree, *r, *cg, *tab;
	char s[64];
	int64_t total = 0;
	size_t i, n;
	(void)state;

	/* a very wide node: 20000 children under main */
	for (i = 0; i < 20000; i++) {
		snprintf(s, sizeof(s), "main;fn%05zu;leaf", i);
		add(f, s, (int64_t)(i % 100) + 1);
		total += (int64_t)(i % 100) + 1;
	}
	add(f, "main;fn00099;leaf", 1000000); /* the biggest subtree */
	total += 1000000;
	tree = wt_flame_tree_json(f, "samples", 0);
	r = json_object_get(tree, "root");
	assert_int_equal(check_tree(r), 1 + 1 + 20000 * 2);
	assert_int_equal(JI(r, "total"), total);
	json_decref(tree);

	/* truncated: at most 10 nodes, totals preserved, dropped → parent self */
	tree = wt_flame_tree_json(f, "samples", 10);
	assert_true(json_is_true(json_object_get(tree, "truncated")));
	r = json_object_get(tree, "root");
	n = check_tree(r);
	assert_true(n <= 10 && n >= 3);
	assert_int_equal(JI(r, "total"), total);
	assert_non_null(child(child(r, "main"), "fn00099"));            /* biggest kept */
	assert_non_null(child(child(child(r, "main"), "fn00099"), "leaf"));
	assert_true(JI(child(r, "main"), "self") > 0);                  /* folded in */
	json_decref(tree);

	/* a limit above the node count truncates nothing */
	tree = wt_flame_tree_json(f, "samples", 1000000);
	assert_false(json_is_true(json_object_get(tree, "truncated")));
	json_decref(tree);

	cg = wt_flame_callgraph_json(f, NULL, 5);
	assert_true(json_is_null(json_object_get(cg, "unit")));
	assert_true(json_is_true(json_object_get(cg, "truncated")));
	assert_int_equal(json_array_size(json_object_get(cg, "nodes")), 5);
	for (i = 0; i < json_array_size(json_object_get(cg, "edges")); i++) {
		json_t *e = json_array_get(json_object_get(cg, "edges"), i);
		assert_true(JI(e, "from") < 5 && JI(e, "to") < 5);
	}
	json_decref(cg);

	tab = wt_flame_table_json(f, "samples", 3);
	assert_int_equal(json_array_size(json_object_get(tab, "rows")), 3);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(tab, "rows"), 0), "function")), "leaf");
	json_decref(tab);
	wt_flame_free(f);
}

/* Real file: tree total == decoded total == awk sum; table self per leaf
 * function == awk sum over lines ending in that frame. */
static void test_corpus(void **state)
{
	const char *root = getenv("WT_ROOT") ? getenv("WT_ROOT") : ".";
	char path[1024], cmd[2048], line[4096];
	FILE *fp;
	char *buf;
	size_t len, checked = 0;
	wt_profile *p = NULL;
	wt_flame *f = wt_flame_new();
	json_t *tree, *tab;
	wt_err e;
	int64_t self_sum = 0;
	(void)state;

	snprintf(path, sizeof(path), "%s/tests/corpus/folded/cargo-flamegraph__rust-rayon-stacks.folded",
		 root);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	len = (size_t)ftell(fp);
	rewind(fp);
	buf = malloc(len);
	assert_int_equal(fread(buf, 1, len, fp), len);
	fclose(fp);
	assert_int_equal(wt_folded_decode((const uint8_t *)buf, len, NULL, &p, &e), 0);
	assert_int_equal(wt_flame_add_profile(f, p, 0, &e), 0);
	tree = wt_flame_tree_json(f, "samples", 0);
	check_tree(json_object_get(tree, "root"));
	tab = wt_flame_table_json(f, "samples", 0);
	for (size_t i = 0; i < json_array_size(json_object_get(tab, "rows")); i++)
		self_sum += JI(json_array_get(json_object_get(tab, "rows"), i), "self");

	snprintf(cmd, sizeof(cmd),
		 "awk '{ c = $NF; k = $0; sub(/ [0-9]+$/, \"\", k); n = split(k, f, \";\"); "
		 "s[f[n]] += c; t += c } END { print \"TOTAL\\t\" t; for (x in s) print x \"\\t\" s[x] }' '%s'",
		 path);
	fp = popen(cmd, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		char *tab1 = strchr(line, '\t');
		long long v;

		assert_non_null(tab1);
		*tab1 = 0;
		v = atoll(tab1 + 1);
		if (!strcmp(line, "TOTAL")) {
			assert_int_equal(JI(tree, "total"), v);
			assert_int_equal(self_sum, v);
			assert_int_equal(wt_profile_total(p, 0), v);
		} else {
			json_t *row = row_of(tab, line);

			if (!row || JI(row, "self") != v)
				fail_msg("%s: table self %lld, awk %lld", line, row ? (long long)JI(row, "self") : -1LL, v);
			checked++;
		}
	}
	pclose(fp);
	assert_true(checked > 50);
	json_decref(tree);
	json_decref(tab);
	wt_flame_free(f);
	wt_profile_free(p);
	free(buf);
}

/* The builder reuses the previous stack's path for a shared prefix: the
 * views must not depend on the order stacks are added in (sorted = long
 * shared prefixes, shuffled = short ones, repeats and recursion included),
 * and skip_edges changes nothing but the call graph's edges. */
static void test_order_independent(void **state)
{
	enum { NS = 400, DEPTH = 9 };
	static char names[NS][DEPTH][16];
	const char *fr[DEPTH];
	size_t len[NS], order[NS], i, j;
	wt_flame *a = wt_flame_new(), *b = wt_flame_new(), *c = wt_flame_new();
	json_t *ja, *jb;
	char *sa, *sb;
	(void)state;

	srand(11);
	for (i = 0; i < NS; i++) {
		len[i] = 1 + (size_t)rand() % DEPTH;
		for (j = 0; j < len[i]; j++)
			snprintf(names[i][j], sizeof(names[i][j]), "f%d", rand() % (j < 3 ? 2 : 4));
		order[i] = i;
	}
	for (i = NS - 1; i > 0; i--) {
		size_t k = (size_t)rand() % (i + 1), t = order[i];
		order[i] = order[k];
		order[k] = t;
	}
	wt_flame_skip_edges(c);
	for (i = 0; i < NS; i++) {
		for (j = 0; j < len[i]; j++)
			fr[j] = names[i][j];
		assert_int_equal(wt_flame_add(a, fr, len[i], (int64_t)i + 1), 0);
		assert_int_equal(wt_flame_add(c, fr, len[i], (int64_t)i + 1), 0);
		for (j = 0; j < len[order[i]]; j++)
			fr[j] = names[order[i]][j];
		assert_int_equal(wt_flame_add(b, fr, len[order[i]], (int64_t)order[i] + 1), 0);
	}
	for (i = 0; i < 4; i++) {
		ja = i == 0 ? wt_flame_tree_json(a, "u", 100000) : i == 1 ? wt_flame_table_json(a, "u", 100000)
		   : i == 2 ? wt_flame_callgraph_json(a, "u", 100000) : wt_flame_tree_json(a, "u", 100000);
		jb = i == 0 ? wt_flame_tree_json(b, "u", 100000) : i == 1 ? wt_flame_table_json(b, "u", 100000)
		   : i == 2 ? wt_flame_callgraph_json(b, "u", 100000) : wt_flame_tree_json(c, "u", 100000);
		sa = json_dumps(ja, JSON_SORT_KEYS | JSON_COMPACT);
		sb = json_dumps(jb, JSON_SORT_KEYS | JSON_COMPACT);
		assert_string_equal(sa, sb);
		free(sa);
		free(sb);
		json_decref(ja);
		json_decref(jb);
	}
	assert_int_equal(json_array_size(json_object_get(ja = wt_flame_callgraph_json(c, "u", 100000), "edges")), 0);
	json_decref(ja);
	wt_flame_free(a);
	wt_flame_free(b);
	wt_flame_free(c);
}

/* A table limited to k rows is the first k rows of the whole table (the
 * top-k selection in functions_sorted), ties included; wt_flame_add_ids
 * builds the same views as wt_flame_add. */
static void test_table_limit_and_ids(void **state)
{
	wt_flame *a = wt_flame_new(), *b = wt_flame_new();
	char names[400][16];
	const char *fr[6];
	uint32_t ids[6], bad = 999999;
	int64_t bad64;
	size_t i, j, k;
	(void)state;

	srand(11);
	for (i = 0; i < 400; i++)
		snprintf(names[i], sizeof(names[i]), "fn%zu", i);
	for (i = 0; i < 3000; i++) {
		size_t n = 1 + (size_t)rand() % 6;
		int64_t v = 1 + rand() % 4; /* small values: many ties */
		for (j = 0; j < n; j++) {
			fr[j] = names[rand() % 400];
			assert_int_equal(wt_flame_intern(b, fr[j], &ids[j]), 0);
		}
		assert_int_equal(wt_flame_add(a, fr, n, v), 0);
		assert_int_equal(wt_flame_add_ids(b, ids, n, v), 0);
	}
	assert_int_equal(wt_flame_add_ids(b, &bad, 1, 1), WT_EINVAL);
	{
		json_t *ta = wt_flame_table_json(a, "samples", 0), *tb = wt_flame_table_json(b, "samples", 0);
		json_t *fa = wt_flame_tree_json(a, "samples", 0), *fb = wt_flame_tree_json(b, "samples", 0);
		json_t *all = json_object_get(ta, "rows");
		size_t nfn = 0;
		assert_true(json_equal(ta, tb));
		assert_true(json_equal(fa, fb));
		/* wt_flame_fn: the table's rows, name by name */
		for (i = 0; i < wt_flame_nnames(a); i++) {
			const char *nm;
			int64_t self, total;
			if (!wt_flame_fn(a, i, &nm, &self, &total))
				continue;
			nfn++;
			for (j = 0; j < json_array_size(all); j++) {
				json_t *r = json_array_get(all, j);
				if (!strcmp(json_string_value(json_object_get(r, "function")), nm)) {
					assert_int_equal(json_integer_value(json_object_get(r, "self")), self);
					assert_int_equal(json_integer_value(json_object_get(r, "total")), total);
					break;
				}
			}
			assert_true(j < json_array_size(all));
		}
		assert_int_equal(nfn, json_array_size(all));
		assert_int_equal(wt_flame_fn(a, wt_flame_nnames(a), &fr[0], &bad64, &bad64), 0);
		for (k = 1; k < json_array_size(all) + 3; k += 37) {
			json_t *t = wt_flame_table_json(a, "samples", k);
			json_t *rows = json_object_get(t, "rows");
			assert_int_equal(json_array_size(rows), k < json_array_size(all) ? k : json_array_size(all));
			for (i = 0; i < json_array_size(rows); i++)
				assert_true(json_equal(json_array_get(rows, i), json_array_get(all, i)));
			json_decref(t);
		}
		json_decref(ta);
		json_decref(tb);
		json_decref(fa);
		json_decref(fb);
	}
	wt_flame_free(a);
	wt_flame_free(b);
}

/* json_dumps(wt_flame_tree_json(...), JSON_COMPACT) + extra members:
 * what wt_flame_tree_text must equal byte for byte. */
static char *tree_dumped(const wt_flame *f, const char *unit, size_t max_nodes)
{
	json_t *doc = wt_flame_tree_json(f, unit, max_nodes);
	char *s;

	assert_non_null(doc);
	json_object_set_new(doc, "source", json_string("edge"));
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	assert_non_null(s);
	return s;
}

static void text_equals_json(const wt_flame *f, const char *unit, size_t max_nodes)
{
	wt_buf b = WT_BUF_INIT;
	char *want = tree_dumped(f, unit, max_nodes);

	assert_int_equal(wt_flame_tree_text(f, unit, max_nodes, ",\"source\":\"edge\"", &b), 0);
	assert_int_equal(wt_buf_putc(&b, 0), 0);
	assert_string_equal((const char *)b.data, want);
	free(want);
	wt_buf_free(&b);
}

/* wt_flame_tree_text: the same bytes as jansson's compact dump, for names
 * that need escaping, non-ASCII names, many siblings, big and negative
 * values, with and without truncation; U+FFFD where a name is not UTF-8. */
static void test_tree_text(void **state)
{
	static const char *const names[] = {"main", "a\"quoted\"", "back\\slash", "tab\there",
					    "nl\nret\r", "bell\a\x01\x1f", "caf\xc3\xa9", "\xe2\x82\xac euro",
					    "\xf0\x9f\x94\xa5", "slash/ok", "\x7f", "b\bf\f", "zz"};
	const size_t nn = sizeof(names) / sizeof(names[0]);
	wt_flame *f = wt_flame_new();
	uint32_t seed = 7;
	size_t i, k;
	(void)state;

	assert_non_null(f);
	text_equals_json(f, "samples", 0); /* empty: the root alone */
	for (i = 0; i < 3000; i++) {
		const char *fr[8];
		size_t d = 1 + (seed = seed * 1103515245u + 12345u) % 8;

		for (k = 0; k < d; k++)
			fr[k] = names[(seed = seed * 1103515245u + 12345u) % nn];
		assert_int_equal(wt_flame_add(f, fr, d, (int64_t)(seed % 1000) - 100), 0);
	}
	{
		const char *big[2] = {"main", "huge"};
		assert_int_equal(wt_flame_add(f, big, 2, INT64_MAX / 2), 0);
	}
	text_equals_json(f, "samples", 0);
	text_equals_json(f, "nano\"seconds", 0);
	text_equals_json(f, "samples", 1);
	text_equals_json(f, "samples", 50);
	text_equals_json(f, "samples", 100000);
	{
		/* not UTF-8: jansson refuses it, the text has U+FFFD */
		wt_flame *g = wt_flame_new();
		const char *bad[2] = {"ok", "x\xff\xc3(y"};
		wt_buf b = WT_BUF_INIT;

		assert_non_null(g);
		assert_int_equal(wt_flame_add(g, bad, 2, 5), 0);
		assert_int_equal(wt_flame_tree_text(g, "u", 0, NULL, &b), 0);
		assert_int_equal(wt_buf_putc(&b, 0), 0);
		assert_non_null(strstr((const char *)b.data, "\"name\":\"x\xef\xbf\xbd\xef\xbf\xbd(y\""));
		wt_buf_free(&b);
		wt_flame_free(g);
	}
	wt_flame_free(f);
}

/* A builder that skips the tree gives the same table and call graph as a
 * full one (and a tree of the root alone, with the total); one that skips
 * the per-function figures gives the same tree (and an empty table);
 * wt_flame_reserve changes nothing. Stacks with recursion and shared
 * prefixes, added in one order to all three. */
static void test_skip_parts(void **state)
{
	enum { NS = 300, DEPTH = 8 };
	char names[DEPTH][16];
	const char *fr[DEPTH];
	wt_flame *full = wt_flame_new(), *notree = wt_flame_new(), *nofns = wt_flame_new();
	json_t *ja, *jb;
	char *sa, *sb;
	size_t i, j, n;
	(void)state;

	wt_flame_skip_tree(notree);
	wt_flame_skip_functions(nofns);
	assert_int_equal(wt_flame_reserve(notree, 100, 1000), 0);
	assert_int_equal(wt_flame_reserve(nofns, 100, 1000), 0);
	srand(7);
	for (i = 0; i < NS; i++) {
		n = 1 + (size_t)rand() % DEPTH;
		for (j = 0; j < n; j++) {
			snprintf(names[j], sizeof(names[j]), "g%d", rand() % (j < 2 ? 2 : 5));
			fr[j] = names[j];
		}
		assert_int_equal(wt_flame_add(full, fr, n, (int64_t)i + 1), 0);
		assert_int_equal(wt_flame_add(notree, fr, n, (int64_t)i + 1), 0);
		assert_int_equal(wt_flame_add(nofns, fr, n, (int64_t)i + 1), 0);
	}
	for (i = 0; i < 3; i++) {
		ja = i == 0 ? wt_flame_table_json(full, "u", 0) : i == 1 ? wt_flame_callgraph_json(full, "u", 0)
		   : wt_flame_tree_json(full, "u", 0);
		jb = i == 0 ? wt_flame_table_json(notree, "u", 0) : i == 1 ? wt_flame_callgraph_json(notree, "u", 0)
		   : wt_flame_tree_json(nofns, "u", 0);
		sa = json_dumps(ja, JSON_SORT_KEYS | JSON_COMPACT);
		sb = json_dumps(jb, JSON_SORT_KEYS | JSON_COMPACT);
		assert_string_equal(sa, sb);
		free(sa);
		free(sb);
		json_decref(ja);
		json_decref(jb);
	}
	assert_int_equal(wt_flame_total(notree), wt_flame_total(full));
	ja = wt_flame_tree_json(notree, "u", 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ja, "root"), "total")),
			 wt_flame_total(full));
	assert_int_equal(json_array_size(json_object_get(json_object_get(ja, "root"), "children")), 0);
	json_decref(ja);
	ja = wt_flame_table_json(nofns, "u", 0);
	assert_int_equal(json_array_size(json_object_get(ja, "rows")), 0);
	json_decref(ja);
	wt_flame_free(full);
	wt_flame_free(notree);
	wt_flame_free(nofns);
}

/* Render every view of f into one string (tree cut at each of cuts, the
 * table, the call graph); the caller frees. */
static char *all_views(const wt_flame *f)
{
	static const size_t cuts[] = {0, 1, 7, 60, 400};
	wt_buf b = WT_BUF_INIT;
	json_t *j;
	char *s;
	size_t i;

	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		assert_int_equal(wt_flame_tree_text(f, "u", cuts[i], NULL, &b), 0);
		wt_buf_putc(&b, '\n');
	}
	for (i = 0; i < 2; i++) {
		j = i ? wt_flame_callgraph_json(f, "u", 0) : wt_flame_table_json(f, "u", 0);
		assert_non_null(j);
		s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
		assert_non_null(s);
		wt_buf_puts(&b, s);
		wt_buf_putc(&b, '\n');
		free(s);
		json_decref(j);
	}
	assert_int_equal(wt_buf_putc(&b, '\0'), 0);
	return (char *)b.data;
}

/* wt_flame_add_stacks gives every view wt_flame_add_ids gives for the
 * same stacks in the same order — on a fresh builder, on one that has
 * nodes already (and gets more stacks one by one afterwards: its child
 * index is rebuilt), for each part a builder may skip — with recursion,
 * empty stacks, zero, negative and tied values; the cut of the tree does
 * not depend on the order stacks are added in; an unknown id is refused.
 * Both ways of reading the frames (in place, and copied a depth at a
 * time as for many stacks). */
static void test_add_stacks(void **state)
{
	enum { NS = 3000, DEPTH = 10, NNAMES = 12 };
	uint32_t ids[NS * DEPTH], off[NS], len[NS], nid[NNAMES], pos = 0, bad[1], bad_off[1] = {0}, bad_len[1] = {1};
	int64_t vals[NS];
	char name[16];
	size_t i, k, mode;
	(void)state;

	srand(11);
	for (i = 0; i < NS; i++) {
		len[i] = (uint32_t)(i % 97 == 0 ? 0 : 1 + (size_t)rand() % DEPTH);
		off[i] = pos;
		for (k = 0; k < len[i]; k++) /* few names near the root: shared prefixes, recursion deeper */
			ids[pos++] = (uint32_t)(rand() % (k < 2 ? 3 : NNAMES));
		vals[i] = i % 13 == 0 ? -(int64_t)(rand() % 5) : (int64_t)(rand() % 4); /* ties and zeros */
	}
	for (mode = 0; mode < 8; mode++) {
		wt_flame *fs[4];
		char *want, *got;
		size_t b;

		wt_flame_bulk_cols_frames = mode < 4 ? (size_t)4 << 20 : 0;
		for (b = 0; b < 4; b++) {
			fs[b] = wt_flame_new();
			assert_non_null(fs[b]);
			if (mode % 4 == 1)
				wt_flame_skip_edges(fs[b]);
			if (mode % 4 == 2) { /* the flame graph's builder */
				wt_flame_skip_edges(fs[b]);
				wt_flame_skip_functions(fs[b]);
			}
			if (mode % 4 == 3)
				wt_flame_skip_tree(fs[b]);
			for (k = 0; k < NNAMES; k++) {
				snprintf(name, sizeof(name), "n%zu", k);
				assert_int_equal(wt_flame_intern(fs[b], name, &nid[k]), 0);
				assert_int_equal(nid[k], k + 1); /* the root's name is id 0 */
			}
		}
		for (i = 0; i < NS * DEPTH; i++)
			ids[i] = ids[i] % NNAMES + 1;
		/* 0: one by one; 1: all at once; 2: one by one, at once, one by
		 * one; 3: one by one in reverse order */
		for (i = 0; i < NS; i++) {
			assert_int_equal(wt_flame_add_ids(fs[0], ids + off[i], len[i], vals[i]), 0);
			assert_int_equal(wt_flame_add_ids(fs[3], ids + off[NS - 1 - i], len[NS - 1 - i],
							  vals[NS - 1 - i]), 0);
		}
		assert_int_equal(wt_flame_add_stacks(fs[1], ids, off, len, vals, NS), 0);
		for (i = 0; i < 100; i++)
			assert_int_equal(wt_flame_add_ids(fs[2], ids + off[i], len[i], vals[i]), 0);
		assert_int_equal(wt_flame_add_stacks(fs[2], ids, off + 100, len + 100, vals + 100, NS - 200), 0);
		for (i = NS - 100; i < NS; i++)
			assert_int_equal(wt_flame_add_ids(fs[2], ids + off[i], len[i], vals[i]), 0);
		want = all_views(fs[0]);
		for (b = 1; b < 4; b++) {
			got = all_views(fs[b]);
			assert_string_equal(got, want);
			free(got);
		}
		assert_int_equal(wt_flame_total(fs[1]), wt_flame_total(fs[0]));
		free(want);
		bad[0] = (uint32_t)wt_flame_nnames(fs[1]);
		assert_int_equal(wt_flame_add_stacks(fs[1], bad, bad_off, bad_len, vals, 1), WT_EINVAL);
		for (b = 0; b < 4; b++)
			wt_flame_free(fs[b]);
		for (i = 0; i < NS * DEPTH; i++)
			ids[i] -= 1;
	}
	wt_flame_bulk_cols_frames = (size_t)4 << 20;
}

/* wt_flame_intern_new gives the ids wt_flame_intern gives: on a new
 * builder (names added without the index, found by a later
 * wt_flame_intern), on one holding many names (one by one), a name equal
 * to one the builder holds ("total", the root's), names shown without
 * their " [bid:…]" suffix (one by one: they may merge). */
static void test_intern_new(void **state)
{
	enum { N = 500 };
	char buf[N][32];
	const char *names[N];
	uint32_t ids[N], id;
	size_t i, round;
	(void)state;

	for (i = 0; i < N; i++) {
		snprintf(buf[i], sizeof(buf[i]), "fn_%zu", i * 7919 % 1000);
		names[i] = buf[i];
	}
	names[17] = "total";
	for (round = 0; round < 3; round++) {
		wt_flame *f = wt_flame_new(), *g = wt_flame_new();
		const char *stack[2];

		assert_non_null(f);
		assert_non_null(g);
		if (round == 1) /* many names already: one by one */
			for (i = 0; i < 40; i++)
				assert_int_equal(wt_flame_intern(f, names[N - 1 - i], &id), 0);
		if (round == 2) /* a suffixed name: one by one, merging with its plain form */
			names[3] = "fn_0 [bid:00112233445566778899aabbccddeeff00112233]";
		for (i = 0; round == 1 && i < 40; i++)
			assert_int_equal(wt_flame_intern(g, names[N - 1 - i], &id), 0);
		assert_int_equal(wt_flame_reserve(f, N, 10), 0);
		assert_int_equal(wt_flame_intern_new(f, names, N, ids), 0);
		for (i = 0; i < N; i++) {
			assert_int_equal(wt_flame_intern(g, names[i], &id), 0);
			assert_int_equal(ids[i], id);
		}
		assert_int_equal(ids[17], 0);
		if (round == 2)
			assert_int_equal(ids[3], ids[0]); /* "fn_0" shown for both */
		assert_int_equal(wt_flame_nnames(f), wt_flame_nnames(g));
		/* found again by a plain intern afterwards (the index filled then) */
		for (i = 0; i < N; i++) {
			assert_int_equal(wt_flame_intern(f, names[i], &id), 0);
			assert_int_equal(id, ids[i]);
		}
		assert_int_equal(wt_flame_intern(f, "brand new", &id), 0);
		assert_int_equal(id, wt_flame_nnames(f) - 1);
		stack[0] = names[5];
		stack[1] = "brand new";
		assert_int_equal(wt_flame_add(f, stack, 2, 3), 0);
		assert_int_equal(wt_flame_nnames(f), wt_flame_nnames(g) + 1);
		wt_flame_free(f);
		wt_flame_free(g);
	}
}

/* Names that are not UTF-8 (an upload's bytes, a string read from a
 * process's memory) are shown with U+FFFD in every view, as the text
 * flame graph shows them: a view never fails on a name. */
static void test_names_not_utf8(void **state)
{
	static const char *const bad[] = {"ok\xff", "\xed\xa0\x80sur", "cut\xe2\x82"};
	const char *fr[3];
	wt_flame *f = wt_flame_new();
	json_t *t, *g, *c;
	wt_buf text = WT_BUF_INIT;
	char *dump;
	(void)state;

	assert_non_null(f);
	fr[0] = "main";
	fr[1] = bad[0];
	fr[2] = bad[1];
	assert_int_equal(wt_flame_add(f, fr, 3, 5), 0);
	fr[1] = bad[2];
	assert_int_equal(wt_flame_add(f, fr, 2, 2), 0);
	t = wt_flame_table_json(f, "samples", 0);
	g = wt_flame_tree_json(f, "samples", 0);
	c = wt_flame_callgraph_json(f, "samples", 0);
	assert_non_null(t);
	assert_non_null(g);
	assert_non_null(c);
	assert_int_equal(json_array_size(json_object_get(t, "rows")), 4);
	dump = json_dumps(t, JSON_COMPACT);
	assert_non_null(strstr(dump, "ok\xEF\xBF\xBD"));
	assert_non_null(strstr(dump, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDsur"));
	assert_non_null(strstr(dump, "cut\xEF\xBF\xBD\xEF\xBF\xBD"));
	free(dump);
	/* the text flame graph and the jansson one agree */
	assert_int_equal(wt_flame_tree_text(f, "samples", 0, NULL, &text), 0);
	dump = json_dumps(g, JSON_COMPACT);
	assert_string_equal((const char *)text.data, dump);
	free(dump);
	wt_buf_free(&text);
	json_decref(t);
	json_decref(g);
	json_decref(c);
	wt_flame_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_wide_and_truncated),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_order_independent),
		cmocka_unit_test(test_table_limit_and_ids),
		cmocka_unit_test(test_tree_text),
		cmocka_unit_test(test_skip_parts),
		cmocka_unit_test(test_add_stacks),
		cmocka_unit_test(test_intern_new),
		cmocka_unit_test(test_names_not_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
