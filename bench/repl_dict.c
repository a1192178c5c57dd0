/*
 * repl_dict.c — does a zstd dictionary trained on rollup rows shrink
 * replication batches (proto/repl.proto, zstd-compressed as a whole)?
 *
 *   repl_dict [--rounds N] [--dict-kb K] [FILE...]
 *
 * Each FILE (default: a dozen real profiles from the shared corpus, one
 * "service" each) is decoded with wt_format_decode and rolled up with
 * wt_rollup_build, as the edge does. A site is simulated for N rounds
 * (default 24, one per minute): every round each service uploads once; its
 * rollup rows move to the round's minute and their values vary by a
 * deterministic factor (the function set of a service stays the same,
 * as in real traffic); the original is the file's bytes. The first half
 * of the rounds trains the dictionary (ZDICT_trainFromBuffer over the
 * serialised rollup-only uploads), the second half is measured:
 *   - "1/batch": one upload per batch (the steady state: the edge sends
 *     as soon as an upload is committed)
 *   - "round":   all services' uploads of a round in one batch (a backlog)
 * for the full batch (with originals) and the rollup part alone, at zstd
 * levels 1, 3 and 9, without and with the dictionary. Prints bytes per
 * replicated sample (wt_profile samples) and per raw original byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zdict.h>
#include <zstd.h>

#include "format.h"
#include "profile.h"
#include "proto/repl.pb-c.h"
#include "rollup.h"

#define MAX_FILES 64
#define BASE_MINUTE 29400000LL

static const char *const default_files[] = {
	"pprof/google-pprof__large.cpu.pb.gz",
	"pprof/pyroscope__go-heap.pb.gz",
	"pprof/pyroscope__go-cpu-labels.pb.gz",
	"pprof/pyroscope__java-async-profiler.pb.gz",
	"pprof/pyroscope__python.pb.gz",
	"pprof/pyroscope__ruby.pb.gz",
	"pprof/pyroscope__rust.pb.gz",
	"pprof/pyroscope__nodejs-wall.pb.gz",
	"pprof/parca__profile-with-labels.pb.gz",
	"gen/go/go-cpu.pb.gz",
	"folded/flamegraph__perf-vertx-java-collapsed-all.txt",
	"folded/flamegraph__perf-rust-collapsed-tid.txt",
	"gen/c/folded-gperftools-cpu.google-pprof-collapsed.txt",
};

typedef struct svc {
	const char *path;
	uint8_t *orig;
	size_t olen;
	size_t nsamples;
	wt_rollup r;
	wt_profile *p;
	char hdr[512];
} svc;

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b = malloc((size_t)n + 1);
		if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
			free(b);
			b = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return b;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb93fe51a87d3ULL;
	return x ^ (x >> 33);
}

/* Serialise a batch of the uploads (service s_from..s_to-1, round rd). */
static uint8_t *pack_batch(svc *sv, size_t s_from, size_t s_to, int rd, int with_orig, size_t *len)
{
	size_t n = s_to - s_from, nrows = 0;
	for (size_t s = s_from; s < s_to; s++)
		nrows += sv[s].r.n;
	Watchtower__Repl__Upload *ups = calloc(n, sizeof(*ups));
	Watchtower__Repl__Upload **upp = calloc(n, sizeof(*upp));
	Watchtower__Repl__RollupRow *rows = calloc(nrows ? nrows : 1, sizeof(*rows));
	Watchtower__Repl__RollupRow **rowp = calloc(nrows ? nrows : 1, sizeof(*rowp));
	size_t ri = 0;
	for (size_t i = 0; i < n; i++) {
		svc *v = &sv[s_from + i];
		watchtower__repl__upload__init(&ups[i]);
		ups[i].seq = (uint64_t)rd * 1000 + s_from + i + 1;
		ups[i].received_ns = (BASE_MINUTE + rd) * 60000000000LL + (int64_t)(s_from + i) * 1000003;
		ups[i].header_json.data = (uint8_t *)v->hdr;
		ups[i].header_json.len = strlen(v->hdr);
		if (with_orig) {
			ups[i].original.data = v->orig;
			ups[i].original.len = v->olen;
		}
		ups[i].rollup = rowp + ri;
		for (size_t j = 0; j < v->r.n; j++, ri++) {
			const wt_rollup_row *src = &v->r.rows[j];
			/* same functions, this round's minute, values varied +-25% */
			uint64_t h = mix((uint64_t)rd << 40 ^ (uint64_t)(s_from + i) << 20 ^ j);
			double f = 0.75 + (double)(h % 500) / 1000.0;
			watchtower__repl__rollup_row__init(&rows[ri]);
			rows[ri].type = (char *)src->type;
			rows[ri].unit = (char *)(src->unit ? src->unit : "");
			rows[ri].function = (char *)src->function;
			rows[ri].minute = BASE_MINUTE + rd + (src->minute - v->r.rows[0].minute);
			rows[ri].self = (int64_t)((double)src->self * f);
			rows[ri].total = (int64_t)((double)src->total * f);
			if (rows[ri].total < rows[ri].self)
				rows[ri].total = rows[ri].self;
			rowp[ri] = &rows[ri];
		}
		ups[i].n_rollup = v->r.n;
		upp[i] = &ups[i];
	}
	Watchtower__Repl__Batch b;
	watchtower__repl__batch__init(&b);
	b.edge_id = "edge1";
	b.first_seq = ups[0].seq;
	b.last_seq = ups[n - 1].seq;
	b.n_uploads = n;
	b.uploads = upp;
	*len = watchtower__repl__batch__get_packed_size(&b);
	uint8_t *out = malloc(*len ? *len : 1);
	watchtower__repl__batch__pack(&b, out);
	free(ups);
	free(upp);
	free(rows);
	free(rowp);
	return out;
}

static size_t zsize(ZSTD_CCtx *cc, const uint8_t *src, size_t n, int level, const ZSTD_CDict *cd)
{
	size_t cap = ZSTD_compressBound(n);
	void *dst = malloc(cap);
	size_t r = cd ? ZSTD_compress_usingCDict(cc, dst, cap, src, n, cd) : ZSTD_compressCCtx(cc, dst, cap, src, n, level);
	free(dst);
	if (ZSTD_isError(r)) {
		fprintf(stderr, "repl_dict: zstd: %s\n", ZSTD_getErrorName(r));
		exit(1);
	}
	return r;
}

int main(int argc, char **argv)
{
	const char *files[MAX_FILES];
	size_t nf = 0;
	int rounds = 24, dict_kb = 64;
	char root[4096];
	const char *wr = getenv("WT_ROOT");
	svc sv[MAX_FILES];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dict-kb") && i + 1 < argc)
			dict_kb = atoi(argv[++i]);
		else if (nf < MAX_FILES)
			files[nf++] = argv[i];
	}
	if (rounds < 4)
		rounds = 4;
	snprintf(root, sizeof(root), "%s/tests/corpus", wr ? wr : ".");
	static char paths[MAX_FILES][4200];
	if (!nf)
		for (size_t i = 0; i < sizeof(default_files) / sizeof(default_files[0]); i++) {
			snprintf(paths[nf], sizeof(paths[nf]), "%s/%s", root, default_files[i]);
			files[nf] = paths[nf];
			nf++;
		}

	size_t ns = 0, total_samples = 0, total_orig = 0;
	for (size_t i = 0; i < nf; i++) {
		svc *v = &sv[ns];
		wt_decode_opts o;
		wt_err err = {0};
		memset(v, 0, sizeof(*v));
		v->path = files[i];
		if (!(v->orig = slurp(files[i], &v->olen))) {
			fprintf(stderr, "repl_dict: cannot read %s (skipped)\n", files[i]);
			continue;
		}
		wt_decode_opts_default(&o);
		o.time_ns = BASE_MINUTE * 60000000000LL;
		if (wt_format_decode(v->orig, v->olen, WT_FMT_AUTO, &o, &v->p, NULL, &err) ||
		    wt_rollup_build(v->p, o.time_ns, &v->r, &err) || !v->r.n) {
			fprintf(stderr, "repl_dict: %s: %s (skipped)\n", files[i], err.msg[0] ? err.msg : "no rows");
			free(v->orig);
			wt_profile_free(v->p);
			continue;
		}
		v->nsamples = v->p->nsamples;
		const char *base = strrchr(files[i], '/');
		snprintf(v->hdr, sizeof(v->hdr),
			 "{\"v\":1,\"project\":\"demo\",\"service\":\"%s\",\"format\":\"auto\",\"endpoint\":\"/v1/profiles\","
			 "\"from_ns\":0,\"until_ns\":0,\"received_ns\":%lld,\"labels\":{\"env\":\"prod\"},\"edge\":\"edge1\","
			 "\"bytes\":%zu}",
			 base ? base + 1 : files[i], BASE_MINUTE * 60000000000LL, v->olen);
		total_samples += v->nsamples;
		total_orig += v->olen;
		ns++;
	}
	if (ns < 2) {
		fprintf(stderr, "repl_dict: need at least 2 decodable profiles\n");
		return 1;
	}
	size_t rows_total = 0;
	for (size_t s = 0; s < ns; s++)
		rows_total += sv[s].r.n;
	printf("repl_dict: %zu services (profiles), %zu samples, %zu rollup rows, %zu original bytes per round; "
	       "%d rounds (%d train, %d measured)\n",
	       ns, total_samples, rows_total, total_orig, rounds, rounds / 2, rounds - rounds / 2);

	/* training samples: rollup-only single-upload batches of the first half */
	int train = rounds / 2;
	size_t tn = (size_t)train * ns, tcap = 0, toff = 0;
	size_t *tsz = calloc(tn, sizeof(*tsz));
	uint8_t *tbuf = NULL;
	for (int rd = 0; rd < train; rd++)
		for (size_t s = 0; s < ns; s++) {
			size_t l;
			uint8_t *b = pack_batch(sv, s, s + 1, rd, 0, &l);
			if (toff + l > tcap) {
				tcap = (toff + l) * 2;
				tbuf = realloc(tbuf, tcap);
			}
			memcpy(tbuf + toff, b, l);
			toff += l;
			tsz[(size_t)rd * ns + s] = l;
			free(b);
		}
	size_t dcap = (size_t)dict_kb * 1024;
	uint8_t *dict = malloc(dcap);
	size_t dl = ZDICT_trainFromBuffer(dict, dcap, tbuf, tsz, (unsigned)tn);
	if (ZDICT_isError(dl)) {
		fprintf(stderr, "repl_dict: ZDICT_trainFromBuffer: %s\n", ZDICT_getErrorName(dl));
		return 1;
	}
	printf("dictionary: %zu bytes trained from %zu samples (%zu bytes)\n", dl, tn, toff);

	static const int levels[] = {1, 3, 9};
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	printf("%-22s %5s %12s %12s %12s %7s %10s %10s %11s %11s\n", "variant", "level", "uncompressed", "zstd",
	       "zstd+dict", "gain", "B/sample", "B/sample+d", "B/origbyte", "B/origbyte+d");
	for (int with_orig = 0; with_orig <= 1; with_orig++)
		for (int per_round = 0; per_round <= 1; per_round++)
			for (size_t li = 0; li < 3; li++) {
				int lv = levels[li];
				ZSTD_CDict *cd = ZSTD_createCDict(dict, dl, lv);
				size_t raw = 0, plain = 0, withd = 0, samples = 0, orig = 0;
				for (int rd = train; rd < rounds; rd++) {
					size_t step = per_round ? ns : 1;
					for (size_t s = 0; s < ns; s += step) {
						size_t l;
						uint8_t *b = pack_batch(sv, s, s + step, rd, with_orig, &l);
						raw += l;
						plain += zsize(cc, b, l, lv, NULL);
						withd += zsize(cc, b, l, lv, cd);
						free(b);
						for (size_t k = s; k < s + step; k++) {
							samples += sv[k].nsamples;
							orig += sv[k].olen;
						}
					}
				}
				char name[64];
				snprintf(name, sizeof(name), "%s, %s", with_orig ? "full" : "rollup-only",
					 per_round ? "round/batch" : "1/batch");
				printf("%-22s %5d %12zu %12zu %12zu %6.1f%% %10.2f %10.2f %11.4f %11.4f\n", name, lv, raw, plain,
				       withd, 100.0 * (1.0 - (double)withd / (double)plain), (double)plain / (double)samples,
				       (double)withd / (double)samples, (double)plain / (double)orig,
				       (double)withd / (double)orig);
				ZSTD_freeCDict(cd);
			}
	/* the dictionary matters most for small uploads: per service, level 3 */
	{
		ZSTD_CDict *cd = ZSTD_createCDict(dict, dl, 3);
		printf("\nper service, rollup-only, 1/batch, level 3 (measured rounds):\n%-56s %6s %9s %10s %10s %7s\n",
		       "profile", "rows", "samples", "zstd", "zstd+dict", "gain");
		for (size_t s = 0; s < ns; s++) {
			size_t plain = 0, withd = 0;
			for (int rd = train; rd < rounds; rd++) {
				size_t l;
				uint8_t *b = pack_batch(sv, s, s + 1, rd, 0, &l);
				plain += zsize(cc, b, l, 3, NULL);
				withd += zsize(cc, b, l, 3, cd);
				free(b);
			}
			const char *base = strrchr(sv[s].path, '/');
			printf("%-56s %6zu %9zu %10zu %10zu %6.1f%%\n", base ? base + 1 : sv[s].path, sv[s].r.n,
			       sv[s].nsamples, plain, withd, 100.0 * (1.0 - (double)withd / (double)plain));
		}
		ZSTD_freeCDict(cd);
	}
	ZSTD_freeCCtx(cc);
	for (size_t s = 0; s < ns; s++) {
		wt_rollup_free(&sv[s].r);
		wt_profile_free(sv[s].p);
		free(sv[s].orig);
	}
	free(dict);
	free(tbuf);
	free(tsz);
	return 0;
}
