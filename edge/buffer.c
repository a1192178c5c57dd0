/*
 * buffer.c — RocksDB buffer of the edge: opening the column families with
 * their merge operators, the group-commit writer thread, and the retention
 * thread (replicated raw expiry, rollup age, disk quota). See buffer.h.
 */
#include "buffer.h"
#include "clock.h"
#include "rng.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <time.h>
#include <zstd.h>

#include "compress.h"
#include "fsdir.h"
#include "keys.h"
#include "log.h"

static const char *const cf_names[EDGE_CF_COUNT] = {
	"default", "raw", "rolluplog", "rollup", "stacks", "meta", "config", "stackidx", "stackdict",
};

struct edge_buffer {
	const edge_config *cfg;
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_options_t *cf_opts[EDGE_CF_COUNT];
	rocksdb_column_family_handle_t *cf[EDGE_CF_COUNT];
	rocksdb_writeoptions_t *wopts;
	rocksdb_readoptions_t *ropts;

	pthread_mutex_t mu;
	pthread_cond_t cv;       /* committer: queue non-empty or stopping */
	edge_commit *head, *tail;
	int stopping;
	pthread_t committer;
	void (*on_commit)(void *arg); /* under mu */
	void *on_commit_arg;

	pthread_mutex_t rmu;
	pthread_cond_t rcv;
	int rstop;
	pthread_t retention;
	pthread_mutex_t retention_run_mu; /* one retention run at a time */

	char incarnation[72]; /* hex; "" = pre-incarnation data dir */
	int64_t stackidx_since; /* edge_buffer_stackidx_since() */
	uint64_t seq; /* last assigned, committer-only after open */
	_Atomic uint64_t last_seq;
	_Atomic uint64_t raw_dropped, raw_dropped_bytes, raw_expired;
	_Atomic uint64_t groups, items, errors;
	_Atomic int over_quota;
	/* free space guard (committer thread; read by stats) */
	_Atomic int disk_full;
	_Atomic uint64_t disk_free, disk_full_refused;
	char *reserve_path;      /* data_dir/wt-reserve */
};

/* ---- merge operators ---------------------------------------------------- */

/* rollup: LE64 self, LE64 total — summed (saturating) */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static char *rollup_sum(const char *existing, size_t elen, const char *const *ops, const size_t *oplen,
			int nops, unsigned char *success, size_t *outlen)
{
	int64_t self = 0, total = 0;
	char *out = malloc(16);
	if (!out) {
		*success = 0;
		return NULL;
	}
	if (existing && elen >= 16) {
		self = edge_le64_get((const uint8_t *)existing);
		total = edge_le64_get((const uint8_t *)existing + 8);
	}
	for (int i = 0; i < nops; i++) {
		if (oplen[i] < 16)
			continue;
		self = sat_add(self, edge_le64_get((const uint8_t *)ops[i]));
		total = sat_add(total, edge_le64_get((const uint8_t *)ops[i] + 8));
	}
	edge_le64_put((uint8_t *)out, self);
	edge_le64_put((uint8_t *)out + 8, total);
	*outlen = 16;
	*success = 1;
	return out;
}

/* stacks: LE64 value + payload; values summed, payload of the first kept */
static char *stack_sum(const char *existing, size_t elen, const char *const *ops, const size_t *oplen,
		       int nops, unsigned char *success, size_t *outlen)
{
	const char *payload = NULL;
	size_t plen = 0;
	int64_t v = 0;
	if (existing && elen >= 8) {
		v = edge_le64_get((const uint8_t *)existing);
		payload = existing + 8;
		plen = elen - 8;
	}
	for (int i = 0; i < nops; i++) {
		if (oplen[i] < 8)
			continue;
		v = sat_add(v, edge_le64_get((const uint8_t *)ops[i]));
		if (!payload) {
			payload = ops[i] + 8;
			plen = oplen[i] - 8;
		}
	}
	char *out = malloc(8 + plen);
	if (!out) {
		*success = 0;
		return NULL;
	}
	edge_le64_put((uint8_t *)out, v);
	if (plen)
		memcpy(out + 8, payload, plen);
	*outlen = 8 + plen;
	*success = 1;
	return out;
}

/* stackidx: entries of EDGE_STACKIDX_ENTRY bytes, appended (a query sums
 * the ones of one stack; keys.h). A value that is not whole entries is
 * dropped rather than shifting every entry after it. */
static char *idx_cat(const char *existing, size_t elen, const char *const *ops, const size_t *oplen,
		     int nops, unsigned char *success, size_t *outlen)
{
	size_t n = existing && elen % EDGE_STACKIDX_ENTRY == 0 ? elen : 0, off;
	char *out;

	for (int i = 0; i < nops; i++)
		if (oplen[i] % EDGE_STACKIDX_ENTRY == 0)
			n += oplen[i];
	if (!(out = malloc(n ? n : 1))) {
		*success = 0;
		return NULL;
	}
	off = existing && elen % EDGE_STACKIDX_ENTRY == 0 ? elen : 0;
	if (off)
		memcpy(out, existing, off);
	for (int i = 0; i < nops; i++)
		if (oplen[i] % EDGE_STACKIDX_ENTRY == 0) {
			memcpy(out + off, ops[i], oplen[i]);
			off += oplen[i];
		}
	*outlen = n;
	*success = 1;
	return out;
}

/* stackdict: every value of a key is the same frames; keep the first */
static char *dict_first(const char *existing, size_t elen, const char *const *ops, const size_t *oplen,
			int nops, unsigned char *success, size_t *outlen)
{
	const char *v = existing;
	size_t n = elen;
	char *out;

	if (!v && nops > 0) {
		v = ops[0];
		n = oplen[0];
	}
	if (!(out = malloc(n ? n : 1))) {
		*success = 0;
		return NULL;
	}
	if (n)
		memcpy(out, v, n);
	*outlen = n;
	*success = 1;
	return out;
}

/* The merge operator of each column family that has one: its name (kept
 * in the data dir: never change it) and the merge above, which RocksDB's
 * full merge calls with the existing value and its partial merge without;
 * the operator's state points here. */
typedef char *(*merge_fn)(const char *existing, size_t elen, const char *const *ops, const size_t *oplen,
			  int nops, unsigned char *success, size_t *outlen);
typedef struct merge_op {
	const char *name;
	merge_fn fn;
} merge_op;

static const merge_op merge_ops[EDGE_CF_COUNT] = {
	[EDGE_CF_ROLLUP] = {"wt.rollup.sum.v1", rollup_sum},
	[EDGE_CF_STACKS] = {"wt.stacks.sum.v1", stack_sum},
	[EDGE_CF_STACKIDX] = {"wt.stackidx.cat.v1", idx_cat},
	[EDGE_CF_STACKDICT] = {"wt.stackdict.first.v1", dict_first},
};

static char *merge_full(void *st, const char *k, size_t kl, const char *ev, size_t evl,
			const char *const *ops, const size_t *opl, int n, unsigned char *ok, size_t *ol)
{
	return ((const merge_op *)st)->fn(ev, evl, ops, opl, n, ok, ol);
}

static char *merge_partial(void *st, const char *k, size_t kl, const char *const *ops, const size_t *opl,
			   int n, unsigned char *ok, size_t *ol)
{
	return ((const merge_op *)st)->fn(NULL, 0, ops, opl, n, ok, ol);
}

static const char *merge_name(void *st)
{
	return ((const merge_op *)st)->name;
}

static void merge_delete(void *st, const char *v, size_t vl)
{
	free((void *)v);
}

static void merge_state_destroy(void *st) {}

/* ---- commit items ------------------------------------------------------- */

/* A group whose operations add up to this many bytes is split: the batch
 * holds the raw records, rolluplog, puts and seq (atomic, as always); its
 * derived merges follow in batches of at most EDGE_CHUNK_BYTES. */
#define EDGE_SPLIT_BYTES (32u << 20)
#define EDGE_CHUNK_BYTES (8u << 20)
/* a spilled commit compresses its merges in pieces of this size */
#define EDGE_SPILL_PIECE (4u << 20)

/* A commit's stacks/rollup merges (edge_commit_spill): raw records not
 * compressed yet, then zstd frames of whole records. */
struct edge_spill {
	wt_buf raw, z;
	uint64_t zraw; /* uncompressed bytes in z */
	ZSTD_CCtx *zc;
	int oom;
};

int edge_commit_spill(edge_commit *c)
{
	if (c->spill)
		return 0;
	c->spill = calloc(1, sizeof(*c->spill));
	return c->spill ? 0 : WT_ENOMEM;
}

void edge_commit_ops_free(edge_commit *c)
{
	wt_buf_free(&c->ops);
	if (c->spill) {
		wt_buf_free(&c->spill->raw);
		wt_buf_free(&c->spill->z);
		ZSTD_freeCCtx(c->spill->zc);
		free(c->spill);
		c->spill = NULL;
	}
}

/* Compress sp->raw into one more frame of sp->z. */
static int spill_compress(struct edge_spill *sp)
{
	size_t bound = ZSTD_compressBound(sp->raw.len), n;

	if (!sp->zc && !(sp->zc = ZSTD_createCCtx()))
		return WT_ENOMEM;
	ZSTD_CCtx_setParameter(sp->zc, ZSTD_c_compressionLevel, 1);
	if (wt_buf_reserve(&sp->z, bound))
		return WT_ENOMEM;
	n = ZSTD_compress2(sp->zc, sp->z.data + sp->z.len, bound, sp->raw.data, sp->raw.len);
	if (ZSTD_isError(n))
		return WT_ENOMEM;
	sp->z.len += n;
	sp->zraw += sp->raw.len;
	wt_buf_free(&sp->raw); /* given back: the next piece is small */
	return 0;
}

int edge_commit_op(edge_commit *c, int cf, int kind, const void *key, size_t klen, const void *val, size_t vlen)
{
	uint8_t h[10];
	wt_buf *out = &c->ops;
	struct edge_spill *sp = c->spill;
	h[0] = (uint8_t)cf;
	h[1] = (uint8_t)kind;
	for (int i = 0; i < 4; i++) {
		h[2 + i] = (uint8_t)(klen >> (8 * i));
		h[6 + i] = (uint8_t)(vlen >> (8 * i));
	}
	if (sp && kind == EDGE_OP_MERGE &&
	    (cf == EDGE_CF_STACKS || cf == EDGE_CF_STACKIDX || cf == EDGE_CF_STACKDICT || cf == EDGE_CF_ROLLUP))
		out = &sp->raw;
	wt_buf_append(out, h, sizeof(h));
	wt_buf_append(out, key, klen);
	wt_buf_append(out, val, vlen);
	if (out->oom)
		return WT_ENOMEM;
	if (sp && out == &sp->raw && sp->raw.len >= (sp->zraw ? EDGE_SPILL_PIECE : EDGE_SPLIT_BYTES))
		return spill_compress(sp);
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- committer ---------------------------------------------------------- */

/* Read-modify-write of a rollup row inside the group batch (rollup_mode=rmw). */
static int rmw_rollup(edge_buffer *s, rocksdb_writebatch_wi_t *wb, const uint8_t *k, size_t kl,
		      const uint8_t *v, size_t vl)
{
	char *e = NULL, *cur;
	size_t cl = 0;
	unsigned char ok;
	size_t ol;
	const char *ops[1] = {(const char *)v};
	size_t opl[1] = {vl};

	cur = rocksdb_writebatch_wi_get_from_batch_and_db_cf(wb, s->db, s->ropts, s->cf[EDGE_CF_ROLLUP],
							     (const char *)k, kl, &cl, &e);
	if (e) {
		wt_error("rmw get failed: %s", e);
		free(e);
		return WT_EIO;
	}
	char *sum = rollup_sum(cur, cl, ops, opl, 1, &ok, &ol);
	free(cur);
	if (!sum)
		return WT_ENOMEM;
	rocksdb_writebatch_wi_put_cf(wb, s->cf[EDGE_CF_ROLLUP], (const char *)k, kl, sum, ol);
	free(sum);
	return 0;
}

/* ---- free space ------------------------------------------------------------
 * A full disk must not reach RocksDB: a WAL append that fails with ENOSPC
 * puts the DB into a background-error state that only a reopen clears. So
 * each group commit first asks statvfs; under retention.min_free_mb the
 * group is refused whole (nothing written, uploads answered 503) and the
 * ballast file data_dir/wt-reserve (retention.reserve_mb) is deleted, so
 * that the buffer's own small writes (replication cursor, retention
 * deletes, a memtable flush) still find room while uploads wait. Once free
 * space is back above min_free + reserve the ballast is recreated and
 * commits go through again, without a restart. */

static void reserve_create(edge_buffer *s)
{
	int fd;

	if (!s->cfg->reserve_bytes || !s->reserve_path)
		return;
	fd = open(s->reserve_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (posix_fallocate(fd, 0, (off_t)s->cfg->reserve_bytes) != 0) {
		close(fd);
		unlink(s->reserve_path); /* a partial ballast would only confuse */
		return;
	}
	close(fd);
}

/* 0: room for need more bytes; -1: refuse. Committer thread. */
static int disk_room(edge_buffer *s, uint64_t need)
{
	struct statvfs v;
	uint64_t avail, min = s->cfg->min_free_bytes;

	if (statvfs(s->cfg->data_dir, &v) != 0)
		return 0; /* cannot tell: let RocksDB answer */
	avail = (uint64_t)v.f_bavail * v.f_frsize;
	atomic_store(&s->disk_free, avail);
	if (!atomic_load(&s->disk_full)) {
		if (avail >= min + need)
			return 0;
		atomic_store(&s->disk_full, 1);
		if (s->reserve_path && unlink(s->reserve_path) == 0 && statvfs(s->cfg->data_dir, &v) == 0)
			atomic_store(&s->disk_free, (uint64_t)v.f_bavail * v.f_frsize);
		wt_error("disk full: %s has %llu MiB free, under retention.min_free_mb = %llu; uploads are "
			 "refused (503) until space returns; the reserve file was released",
			 s->cfg->data_dir, (unsigned long long)(avail >> 20), (unsigned long long)(min >> 20));
		return -1;
	}
	if (avail < min + s->cfg->reserve_bytes + need)
		return -1;
	atomic_store(&s->disk_full, 0);
	reserve_create(s);
	wt_info("disk space back: %s has %llu MiB free; accepting uploads again", s->cfg->data_dir,
		(unsigned long long)(avail >> 20));
	return 0;
}

void edge_commit_error(const edge_buffer *s, int rc, wt_err *err)
{
	if (rc == EDGE_COMMIT_DISK_FULL)
		wt_err_set(err, WT_EUNAVAIL, "the edge's disk is full (edge.data_dir has %llu MiB free, "
			   "under retention.min_free_mb = %llu); nothing was stored; retry later",
			   (unsigned long long)(atomic_load(&((edge_buffer *)s)->disk_free) >> 20),
			   (unsigned long long)(s->cfg->min_free_bytes >> 20));
	else if (rc == WT_EUNAVAIL)
		wt_err_set(err, WT_EUNAVAIL, "the edge is shutting down; the upload was not stored");
	else
		wt_err_set(err, WT_EIO, "writing the upload to the buffer failed; nothing was stored");
}

/* A group whose records add up to this many bytes is flushed at once. */
#define EDGE_FLUSH_AFTER_BYTES (32u << 20)

/* Which merges of a split group are chunked: the stacks (and their
 * stackidx entries), and the rollups unless they are read-modify-write
 * (those need the batch's view). */
static int chunked_op(int rmw, int cf)
{
	return cf == EDGE_CF_STACKS || cf == EDGE_CF_STACKIDX || cf == EDGE_CF_STACKDICT ||
	       (cf == EDGE_CF_ROLLUP && !rmw);
}

/* The chunked merges of a split group, after its batch was written. Each
 * chunk is its own write, so memtables switch and flush between them and
 * RocksDB holds at most its write buffers, not the whole upload a second
 * time. A crash between the batch and the last chunk leaves the edge's
 * local stacks/rollup views short of part of that upload (its original,
 * rolluplog and replication are whole); a failed chunk is logged. */
typedef struct chunker {
	edge_buffer *s;
	rocksdb_writebatch_t *wb;
	int rmw;
	size_t bytes, chunks;
	char *err;
} chunker;

static void chunk_write(chunker *ck)
{
	if (!ck->bytes || ck->err)
		return;
	rocksdb_write(ck->s->db, ck->s->wopts, ck->wb, &ck->err);
	rocksdb_writebatch_clear(ck->wb);
	ck->bytes = 0;
	ck->chunks++;
}

/* The chunked merges among the records [p, e). */
static void chunk_ops(chunker *ck, const uint8_t *p, const uint8_t *e)
{
	while (p + 10 <= e && !ck->err) {
		int cf = p[0], kind = p[1];
		uint32_t kl = rd32(p + 2), vl = rd32(p + 6);
		const uint8_t *k = p + 10, *v = k + kl;
		if (v + vl > e)
			break;
		if (kind == EDGE_OP_MERGE && chunked_op(ck->rmw, cf)) {
			rocksdb_writebatch_merge_cf(ck->wb, ck->s->cf[cf], (const char *)k, kl, (const char *)v, vl);
			ck->bytes += kl + vl + 16;
		}
		p = v + vl;
		if (ck->bytes >= EDGE_CHUNK_BYTES)
			chunk_write(ck);
	}
}

/* The spilled merges of a commit: its compressed frames, one at a time,
 * then what was not compressed yet. */
static void chunk_spill(chunker *ck, struct edge_spill *sp)
{
	const uint8_t *z = sp->z.data, *ze = sp->z.data + sp->z.len;
	uint8_t *tmp = NULL;

	while (z < ze && !ck->err) {
		size_t zn = ZSTD_findFrameCompressedSize(z, (size_t)(ze - z));
		unsigned long long rn = ZSTD_isError(zn) ? ZSTD_CONTENTSIZE_ERROR : ZSTD_getFrameContentSize(z, zn);
		size_t got;
		if (rn == ZSTD_CONTENTSIZE_ERROR || rn == ZSTD_CONTENTSIZE_UNKNOWN || rn > (1ull << 31) ||
		    !(tmp = malloc(rn ? rn : 1))) {
			ck->err = strdup("a spilled piece of merges could not be decompressed (or out of memory)");
			break;
		}
		got = ZSTD_decompress(tmp, rn, z, zn);
		if (ZSTD_isError(got) || got != rn) {
			ck->err = strdup("a spilled piece of merges is corrupt");
			break;
		}
		chunk_ops(ck, tmp, tmp + got);
		free(tmp);
		tmp = NULL;
		z += zn;
	}
	free(tmp);
	chunk_ops(ck, sp->raw.data, sp->raw.data + sp->raw.len);
}

/* The chunked merges of a split group, after its batch was written. Each
 * chunk is its own write, so memtables switch and flush between them and
 * RocksDB holds at most its write buffers, not the whole upload a second
 * time. A crash between the batch and the last chunk leaves the edge's
 * local stacks/rollup views short of part of that upload (its original,
 * rolluplog and replication are whole); a failed chunk is logged. */
static void write_chunked(edge_buffer *s, edge_commit *list, int rmw)
{
	chunker ck = {s, rocksdb_writebatch_create(), rmw, 0, 0, NULL};

	for (edge_commit *c = list; c && !ck.err; c = c->next) {
		chunk_ops(&ck, c->ops.data, c->ops.data + c->ops.len);
		if (c->spill)
			chunk_spill(&ck, c->spill);
		/* given back as soon as written: the next commit's are still held */
		edge_commit_ops_free(c);
	}
	chunk_write(&ck);
	if (ck.err) {
		wt_error("writing the stacks/rollup merges of a large group failed after %zu chunks: %s", ck.chunks,
			 ck.err);
		atomic_fetch_add(&s->errors, 1);
		free(ck.err);
	}
	rocksdb_writebatch_destroy(ck.wb);
}

static void commit_group(edge_buffer *s, edge_commit *list)
{
	int rmw = s->cfg->rollup_mode == EDGE_ROLLUP_RMW;
	rocksdb_writebatch_t *wb = rmw ? NULL : rocksdb_writebatch_create();
	rocksdb_writebatch_wi_t *wbi = rmw ? rocksdb_writebatch_wi_create(0, 1) : NULL;
	uint64_t seq = s->seq;
	uint8_t key[8];
	int rc = 0;
	size_t n = 0;
	uint64_t opsz = 0;

	for (edge_commit *c = list; c; c = c->next)
		opsz += c->ops.len + (c->spill ? c->spill->raw.len + c->spill->zraw : 0);
	/* A large group writes its derived merges (stacks, and rollups unless
	 * read-modify-write) after the atomic batch, in chunks (write_chunked). */
	int split = opsz >= EDGE_SPLIT_BYTES;

#define WB_PUT(cfi, k, kl, v, vl) \
	(rmw ? rocksdb_writebatch_wi_put_cf(wbi, s->cf[cfi], (const char *)(k), kl, (const char *)(v), vl) \
	     : rocksdb_writebatch_put_cf(wb, s->cf[cfi], (const char *)(k), kl, (const char *)(v), vl))
#define WB_MERGE(cfi, k, kl, v, vl) \
	(rmw ? rocksdb_writebatch_wi_merge_cf(wbi, s->cf[cfi], (const char *)(k), kl, (const char *)(v), vl) \
	     : rocksdb_writebatch_merge_cf(wb, s->cf[cfi], (const char *)(k), kl, (const char *)(v), vl))

	for (edge_commit *c = list; c; c = c->next, n++) {
		c->seq = ++seq;
		edge_be64_put(key, c->seq);
		WB_PUT(EDGE_CF_RAW, key, 8, c->raw, c->raw_len);
		WB_PUT(EDGE_CF_ROLLUPLOG, key, 8, c->rolluplog, c->rolluplog_len);
		/* the spilled merges: compressed ones exist only in a split
		 * group (past EDGE_SPLIT_BYTES) and are all chunked; the
		 * others go through the batch like any operation */
		const uint8_t *p = c->ops.data, *e = c->ops.data + c->ops.len;
		int second = 0;
		if (!split && c->spill && c->spill->zraw)
			rc = WT_EINVAL;
		for (;;) {
			if (p + 10 > e || rc) {
				if (second++ || !c->spill || !c->spill->raw.len || split || rc)
					break;
				p = c->spill->raw.data;
				e = p + c->spill->raw.len;
				continue;
			}
			int cf = p[0], kind = p[1];
			uint32_t kl = rd32(p + 2), vl = rd32(p + 6);
			const uint8_t *k = p + 10, *v = k + kl;
			if (cf <= EDGE_CF_DEFAULT || cf >= EDGE_CF_COUNT || v + vl > e) {
				rc = WT_EINVAL;
				break;
			}
			if (kind == EDGE_OP_PUT)
				WB_PUT(cf, k, kl, v, vl);
			else if (split && chunked_op(rmw, cf))
				; /* write_chunked, after the batch */
			else if (rmw && cf == EDGE_CF_ROLLUP)
				rc = rmw_rollup(s, wbi, k, kl, v, vl);
			else
				WB_MERGE(cf, k, kl, v, vl);
			p = v + vl;
		}
	}
	edge_be64_put(key, seq);
	WB_PUT(EDGE_CF_META, EDGE_META_SEQ, strlen(EDGE_META_SEQ), key, 8);

	/* what the group will take, twice (the WAL, then the memtable's flush);
	 * the batch holds a copy of everything now: the commits' buffers are
	 * given back before the write, so a large upload is not held three
	 * times (ops, batch, memtable) at once. */
	uint64_t need = 0;
	for (edge_commit *c = list; c; c = c->next) {
		need += 2 * ((uint64_t)c->raw_len + c->rolluplog_len + c->ops.len +
			     (c->spill ? c->spill->raw.len + c->spill->zraw : 0));
		free(c->raw);
		free(c->rolluplog);
		if (!split)
			edge_commit_ops_free(c);
		c->raw = c->rolluplog = NULL;
		c->raw_len = c->rolluplog_len = 0;
	}
	if (rc == 0) {
		if (disk_room(s, need) != 0) {
			rc = EDGE_COMMIT_DISK_FULL;
			atomic_fetch_add(&s->disk_full_refused, n);
		}
	}
	if (rc == 0) {
		char *err = NULL;
		if (rmw)
			rocksdb_write_writebatch_wi(s->db, s->wopts, wbi, &err);
		else
			rocksdb_write(s->db, s->wopts, wb, &err);
		if (err) {
			wt_error("group commit of %zu uploads failed: %s", n, err);
			free(err);
			rc = WT_EIO;
		}
	}
	if (wb)
		rocksdb_writebatch_destroy(wb);
	if (wbi)
		rocksdb_writebatch_wi_destroy(wbi);
	if (split) {
		if (rc == 0)
			write_chunked(s, list, rmw);
		for (edge_commit *c = list; c; c = c->next)
			edge_commit_ops_free(c);
	}
	if (rc == 0) {
		s->seq = seq;
		atomic_store(&s->last_seq, seq);
		/* A group past the write buffer (one large upload) sits whole in
		 * the memtables until the next flush, which a quiet edge may not
		 * reach for hours: ask for it now (in the background) so that
		 * memory is given back once the SST files are written. */
		if (need / 2 >= EDGE_FLUSH_AFTER_BYTES) {
			rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
			char *ferr = NULL;
			rocksdb_flushoptions_set_wait(fo, 0);
			for (int i = 0; i < EDGE_CF_COUNT && !ferr; i++)
				rocksdb_flush_cf(s->db, fo, s->cf[i], &ferr);
			if (ferr) {
				wt_warn("msg=\"flush after a large group failed\" error=\"%s\"", ferr);
				free(ferr);
			}
			rocksdb_flushoptions_destroy(fo);
		}
	} else {
		atomic_fetch_add(&s->errors, 1);
	}
	atomic_fetch_add(&s->groups, 1);
	atomic_fetch_add(&s->items, n);
	for (edge_commit *c = list, *next; c; c = next) {
		next = c->next;
		c->rc = rc;
		if (rc)
			c->seq = 0;
		c->done(c);
	}
#undef WB_PUT
#undef WB_MERGE
}

static void *committer_main(void *arg)
{
	edge_buffer *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head && s->stopping)
			break;
		edge_commit *list = s->head;
		s->head = s->tail = NULL;
		pthread_mutex_unlock(&s->mu);
		commit_group(s, list);
		pthread_mutex_lock(&s->mu);
		if (s->on_commit)
			s->on_commit(s->on_commit_arg);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

void edge_buffer_submit(edge_buffer *s, edge_commit *c)
{
	c->next = NULL;
	pthread_mutex_lock(&s->mu);
	if (s->stopping) {
		pthread_mutex_unlock(&s->mu);
		c->rc = WT_EUNAVAIL;
		c->done(c);
		return;
	}
	if (s->tail)
		s->tail->next = c;
	else
		s->head = c;
	s->tail = c;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void edge_buffer_on_commit(edge_buffer *s, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&s->mu);
	s->on_commit = fn;
	s->on_commit_arg = arg;
	pthread_mutex_unlock(&s->mu);
}

/* ---- raw records -------------------------------------------------------- */

int edge_raw_encode(int64_t received_ns, const char *hdr, const uint8_t *body, size_t len,
		    uint8_t **out, size_t *outlen, wt_err *err)
{
	uint8_t *z = NULL;
	size_t zl = 0, hl = strlen(hdr);
	int rc = wt_zstd_compress(body, len, 3, &z, &zl, err);
	if (rc)
		return rc;
	uint8_t *r = malloc(16 + hl + zl);
	if (!r) {
		free(z);
		return wt_err_set(err, WT_ENOMEM, "out of memory building the raw record");
	}
	memcpy(r, "WTR1", 4);
	edge_le64_put(r + 4, received_ns);
	for (int i = 0; i < 4; i++)
		r[12 + i] = (uint8_t)(hl >> (8 * i));
	memcpy(r + 16, hdr, hl);
	memcpy(r + 16 + hl, z, zl);
	free(z);
	*out = r;
	*outlen = 16 + hl + zl;
	return 0;
}

/* ---- stats -------------------------------------------------------------- */

static uint64_t prop_u64(edge_buffer *s, int cf, const char *name)
{
	char *v = rocksdb_property_value_cf(s->db, s->cf[cf], name);
	uint64_t r = v ? strtoull(v, NULL, 10) : 0;
	free(v);
	return r;
}

static uint64_t disk_bytes(edge_buffer *s)
{
	uint64_t t = 0;
	for (int i = 0; i < EDGE_CF_COUNT; i++)
		t += prop_u64(s, i, "rocksdb.total-sst-files-size") + prop_u64(s, i, "rocksdb.size-all-mem-tables");
	return t;
}

static uint64_t get_be64_meta(edge_buffer *s, const char *key)
{
	char *e = NULL;
	size_t vl = 0;
	char *v = rocksdb_get_cf(s->db, s->ropts, s->cf[EDGE_CF_META], key, strlen(key), &vl, &e);
	uint64_t r = 0;
	if (e)
		free(e);
	if (v && vl == 8)
		r = edge_be64_get((const uint8_t *)v);
	free(v);
	return r;
}

/* Read or create the incarnation (keys.h). A data dir with uploads but no
 * incarnation predates them: it keeps replicating as "" so the hub's ledger
 * of its seqs still applies; an empty one gets a fresh id. */
/* edge_buffer_stackidx_since(): read, or decided once and written. A data
 * dir without stacks rows is indexed from minute 0; one with stacks rows
 * written before stackidx existed, from the minute after the last of them
 * (and after the current minute: uploads of this minute may predate the
 * open). */
static int stackidx_init(edge_buffer *s, wt_err *err)
{
	char *e = NULL, *v;
	size_t vl = 0;
	int64_t since = 0;
	uint8_t b8[8];
	rocksdb_iterator_t *it;

	v = rocksdb_get_cf(s->db, s->ropts, s->cf[EDGE_CF_META], EDGE_META_STACKIDX_SINCE,
			   strlen(EDGE_META_STACKIDX_SINCE), &vl, &e);
	if (e) {
		int rc = wt_err_set(err, WT_EIO, "reading %s in %s: %s", EDGE_META_STACKIDX_SINCE, s->cfg->data_dir, e);
		free(e);
		return rc;
	}
	if (v) {
		s->stackidx_since = vl == 8 ? (int64_t)edge_be64_get((const uint8_t *)v) : INT64_MAX;
		free(v);
		return 0;
	}
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[EDGE_CF_STACKS]);
	rocksdb_iter_seek_to_first(it);
	if (rocksdb_iter_valid(it)) {
		/* every series' last stacks row: the series prefix is the key up
		 * to its third NUL, the minute the 8 bytes after it */
		since = wt_now_ns(CLOCK_REALTIME) / 60000000000LL + 1;
		while (rocksdb_iter_valid(it)) {
			size_t kl, rl;
			const char *k = rocksdb_iter_key(it, &kl);
			const char *p, *sv, *ty;
			const uint8_t *rest;
			wt_buf hi = WT_BUF_INIT;

			if (edge_key_split((const uint8_t *)k, kl, &p, &sv, &ty, &rest, &rl) || rl < 8) {
				rocksdb_iter_next(it);
				continue;
			}
			edge_key_series(&hi, p, sv, ty);
			edge_be64_put(b8, UINT64_MAX);
			wt_buf_append(&hi, b8, 8);
			if (hi.oom) {
				wt_buf_free(&hi);
				break;
			}
			rocksdb_iter_seek_for_prev(it, (const char *)hi.data, hi.len);
			if (rocksdb_iter_valid(it)) {
				k = rocksdb_iter_key(it, &kl);
				if (!edge_key_split((const uint8_t *)k, kl, &p, &sv, &ty, &rest, &rl) && rl >= 8 &&
				    (int64_t)edge_be64_get(rest) + 1 > since)
					since = (int64_t)edge_be64_get(rest) + 1;
			}
			/* on to the next series */
			rocksdb_iter_seek(it, (const char *)hi.data, hi.len);
			wt_buf_free(&hi);
		}
		wt_info("msg=\"stacks rows from before the stack index: local queries read them row by row before"
			" minute %lld\" data_dir=%s", (long long)since, s->cfg->data_dir);
	}
	rocksdb_iter_destroy(it);
	edge_be64_put(b8, (uint64_t)since);
	rocksdb_put_cf(s->db, s->wopts, s->cf[EDGE_CF_META], EDGE_META_STACKIDX_SINCE,
		       strlen(EDGE_META_STACKIDX_SINCE), (const char *)b8, 8, &e);
	if (e) {
		int rc = wt_err_set(err, WT_EIO, "writing %s in %s: %s", EDGE_META_STACKIDX_SINCE, s->cfg->data_dir, e);
		free(e);
		return rc;
	}
	s->stackidx_since = since;
	return 0;
}

int64_t edge_buffer_stackidx_since(const edge_buffer *s)
{
	return s->stackidx_since;
}

static int incarnation_init(edge_buffer *s, wt_err *err)
{
	char *e = NULL;
	size_t vl = 0, i;
	char *v = rocksdb_get_cf(s->db, s->ropts, s->cf[EDGE_CF_META], EDGE_META_INCARNATION,
				 strlen(EDGE_META_INCARNATION), &vl, &e);
	uint8_t rnd[16];
	int rc = 0;

	if (e) {
		rc = wt_err_set(err, WT_EIO, "reading the incarnation in %s: %s", s->cfg->data_dir, e);
		goto out;
	}
	if (v) {
		if (vl >= sizeof(s->incarnation)) {
			rc = wt_err_set(err, WT_EIO, "incarnation in %s is %zu bytes (corrupt)", s->cfg->data_dir, vl);
			goto out;
		}
		memcpy(s->incarnation, v, vl);
		s->incarnation[vl] = '\0';
		goto out;
	}
	if (s->seq) {
		wt_info("msg=\"data dir holds uploads from before incarnations; replicating them under the legacy"
			" (empty) incarnation\" data_dir=%s last_seq=%llu", s->cfg->data_dir, (unsigned long long)s->seq);
		goto out;
	}
	if (wt_random_bytes(rnd, sizeof(rnd))) {
		rc = wt_err_set(err, WT_EIO, "getrandom for the incarnation failed: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(s->incarnation + 2 * i, 3, "%02x", rnd[i]);
	{
		rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
		rocksdb_writeoptions_set_sync(wo, 1);
		rocksdb_put_cf(s->db, wo, s->cf[EDGE_CF_META], EDGE_META_INCARNATION, strlen(EDGE_META_INCARNATION),
			       s->incarnation, strlen(s->incarnation), &e);
		rocksdb_writeoptions_destroy(wo);
	}
	if (e)
		rc = wt_err_set(err, WT_EIO, "writing the incarnation in %s: %s", s->cfg->data_dir, e);
	else
		wt_info("msg=\"new data dir: new incarnation\" data_dir=%s incarnation=%s", s->cfg->data_dir,
			s->incarnation);
out:
	free(e);
	free(v);
	return rc;
}

const char *edge_buffer_incarnation(const edge_buffer *s)
{
	return s->incarnation;
}

void edge_buffer_stats_get(edge_buffer *s, edge_buffer_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->last_seq = atomic_load(&s->last_seq);
	st->repl_cursor = get_be64_meta(s, EDGE_META_REPL_CURSOR);
	st->disk_bytes = disk_bytes(s);
	st->raw_bytes = prop_u64(s, EDGE_CF_RAW, "rocksdb.total-sst-files-size") +
			prop_u64(s, EDGE_CF_RAW, "rocksdb.size-all-mem-tables");
	st->unreplicated = st->last_seq > st->repl_cursor ? st->last_seq - st->repl_cursor : 0;
	if (st->unreplicated) {
		uint8_t k[8];
		edge_be64_put(k, st->repl_cursor + 1);
		rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[EDGE_CF_ROLLUPLOG]);
		rocksdb_iter_seek(it, (const char *)k, 8);
		if (rocksdb_iter_valid(it)) {
			size_t vl;
			const char *v = rocksdb_iter_value(it, &vl);
			if (vl >= 8)
				st->oldest_unreplicated_ns = edge_le64_get((const uint8_t *)v);
		}
		rocksdb_iter_destroy(it);
	}
	st->raw_dropped = atomic_load(&s->raw_dropped);
	st->raw_dropped_bytes = atomic_load(&s->raw_dropped_bytes);
	st->raw_expired = atomic_load(&s->raw_expired);
	st->commit_groups = atomic_load(&s->groups);
	st->commit_items = atomic_load(&s->items);
	st->commit_errors = atomic_load(&s->errors);
	st->over_quota = atomic_load(&s->over_quota);
	st->disk_full = atomic_load(&s->disk_full);
	st->disk_free = atomic_load(&s->disk_free);
	st->disk_full_refused = atomic_load(&s->disk_full_refused);
}

/* ---- retention ---------------------------------------------------------- */

/* Raw originals the hub acknowledged more than N hours ago: the replication
 * client writes meta repl/ledger/BE64(seq) → LE64(acked_at_ns) for each acked
 * batch; every raw seq ≤ such a seq is deleted once acked_at + N h < now. */
static void expire_replicated(edge_buffer *s, int64_t now)
{
	const size_t pl = strlen(EDGE_META_REPL_LEDGER);
	int64_t keep_ns = s->cfg->raw_hours_after_replication * 3600LL * 1000000000LL;
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[EDGE_CF_META]);
	uint64_t upto = 0;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();

	for (rocksdb_iter_seek(it, EDGE_META_REPL_LEDGER, pl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);
		if (kl != pl + 8 || memcmp(k, EDGE_META_REPL_LEDGER, pl) != 0)
			break;
		if (vl != 8 || edge_le64_get((const uint8_t *)v) + keep_ns > now)
			break;
		upto = edge_be64_get((const uint8_t *)k + pl);
		rocksdb_writebatch_delete_cf(wb, s->cf[EDGE_CF_META], k, kl);
	}
	rocksdb_iter_destroy(it);
	if (upto) {
		uint8_t a[8], b[8];
		edge_be64_put(a, 0);
		edge_be64_put(b, upto + 1);
		rocksdb_writebatch_delete_range_cf(wb, s->cf[EDGE_CF_RAW], (char *)a, 8, (char *)b, 8);
		rocksdb_writebatch_delete_range_cf(wb, s->cf[EDGE_CF_ROLLUPLOG], (char *)a, 8, (char *)b, 8);
		char *e = NULL;
		rocksdb_write(s->db, s->wopts, wb, &e);
		if (e) {
			wt_error("retention: expiring replicated raw up to seq %llu failed: %s", (unsigned long long)upto, e);
			free(e);
		} else {
			atomic_fetch_add(&s->raw_expired, 1);
			wt_info("retention: expired raw originals replicated more than %lld h ago seq_upto=%llu",
				(long long)s->cfg->raw_hours_after_replication, (unsigned long long)upto);
		}
	}
	rocksdb_writebatch_destroy(wb);
}

/* Local rollups and stacks older than rollup_days: delete_range per series
 * (project/service/type) listed in meta types/. Unreplicated rollup deltas
 * live in rolluplog and are not touched here. */
static void expire_rollups(edge_buffer *s, int64_t now)
{
	const size_t pl = strlen(EDGE_META_TYPES);
	int64_t cutoff_min = now / 60000000000LL - s->cfg->rollup_days * 1440;
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[EDGE_CF_META]);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	int n = 0;

	if (cutoff_min <= 0)
		goto out;
	for (rocksdb_iter_seek(it, EDGE_META_TYPES, pl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < pl || memcmp(k, EDGE_META_TYPES, pl) != 0)
			break;
		wt_buf a = WT_BUF_INIT, b = WT_BUF_INIT;
		uint8_t m[8];
		wt_buf_append(&a, k + pl, kl - pl);
		wt_buf_append(&b, k + pl, kl - pl);
		edge_be64_put(m, 0);
		wt_buf_append(&a, m, 8);
		edge_be64_put(m, (uint64_t)cutoff_min);
		wt_buf_append(&b, m, 8);
		if (!a.oom && !b.oom) {
			rocksdb_writebatch_delete_range_cf(wb, s->cf[EDGE_CF_ROLLUP], (char *)a.data, a.len,
							   (char *)b.data, b.len);
			rocksdb_writebatch_delete_range_cf(wb, s->cf[EDGE_CF_STACKS], (char *)a.data, a.len,
							   (char *)b.data, b.len);
			rocksdb_writebatch_delete_range_cf(wb, s->cf[EDGE_CF_STACKIDX], (char *)a.data, a.len,
							   (char *)b.data, b.len);
			/* stackdict: whole days before the cutoff's (the day of
			 * the cutoff still has minutes that use its frames) */
			b.len -= 8;
			edge_be64_put(m, (uint64_t)(cutoff_min / EDGE_MINUTES_PER_DAY));
			wt_buf_append(&b, m, 8);
			if (!b.oom)
				rocksdb_writebatch_delete_range_cf(wb, s->cf[EDGE_CF_STACKDICT], (char *)a.data, a.len,
								   (char *)b.data, b.len);
			n++;
		}
		wt_buf_free(&a);
		wt_buf_free(&b);
	}
	if (n) {
		char *e = NULL;
		rocksdb_write(s->db, s->wopts, wb, &e);
		if (e) {
			wt_error("retention: expiring rollups failed: %s", e);
			free(e);
		}
	}
out:
	rocksdb_iter_destroy(it);
	rocksdb_writebatch_destroy(wb);
}

/* Disk quota: drop the oldest raw originals (replicated or not — they are
 * the bulk; rollup deltas stay) until the DB is 10% under quota. */
static void enforce_quota(edge_buffer *s)
{
	uint64_t quota = s->cfg->disk_quota_bytes;
	uint64_t used = disk_bytes(s);
	if (used <= quota) {
		atomic_store(&s->over_quota, 0);
		return;
	}
	uint64_t need = used - quota + quota / 10, freed = 0, dropped = 0;
	uint8_t last[8];
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[EDGE_CF_RAW]);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && freed < need; rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		rocksdb_iter_value(it, &vl);
		rocksdb_writebatch_delete_cf(wb, s->cf[EDGE_CF_RAW], k, kl);
		if (kl == 8)
			memcpy(last, k, 8);
		freed += kl + vl;
		dropped++;
	}
	rocksdb_iter_destroy(it);
	if (dropped) {
		char *e = NULL;
		rocksdb_write(s->db, s->wopts, wb, &e);
		if (e) {
			wt_error("retention: dropping raw originals over quota failed: %s", e);
			free(e);
			dropped = 0;
		} else {
			atomic_fetch_add(&s->raw_dropped, dropped);
			atomic_fetch_add(&s->raw_dropped_bytes, freed);
			wt_warn("retention: disk quota reached, dropped oldest raw originals used_bytes=%llu quota_bytes=%llu dropped=%llu dropped_bytes=%llu upto_seq=%llu",
				(unsigned long long)used, (unsigned long long)quota, (unsigned long long)dropped,
				(unsigned long long)freed, (unsigned long long)edge_be64_get(last));
			rocksdb_flush_wal(s->db, 1, &e);
			free(e);
			rocksdb_compact_range_cf(s->db, s->cf[EDGE_CF_RAW], NULL, 0, (const char *)last, 8);
		}
	}
	rocksdb_writebatch_destroy(wb);
	if (freed < need) {
		if (!atomic_exchange(&s->over_quota, 1))
			wt_error("retention: disk quota exceeded and no raw originals left to drop; rollups are kept (never dropped unreplicated) used_bytes=%llu quota_bytes=%llu",
				 (unsigned long long)used, (unsigned long long)quota);
	} else {
		atomic_store(&s->over_quota, 0);
	}
}

void edge_buffer_retention_run(edge_buffer *s)
{
	pthread_mutex_lock(&s->retention_run_mu);
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	expire_replicated(s, now);
	expire_rollups(s, now);
	enforce_quota(s);
	pthread_mutex_unlock(&s->retention_run_mu);
}

static void *retention_main(void *arg)
{
	edge_buffer *s = arg;
	pthread_mutex_lock(&s->rmu);
	while (!s->rstop) {
		struct timespec ts;
		ts = wt_deadline(CLOCK_REALTIME, (int64_t)s->cfg->retention_interval_s * 1000);
		pthread_cond_timedwait(&s->rcv, &s->rmu, &ts);
		if (s->rstop)
			break;
		pthread_mutex_unlock(&s->rmu);
		edge_buffer_retention_run(s);
		pthread_mutex_lock(&s->rmu);
	}
	pthread_mutex_unlock(&s->rmu);
	return NULL;
}

/* ---- open / close ------------------------------------------------------- */

rocksdb_t *edge_buffer_db(edge_buffer *s) { return s->db; }
rocksdb_column_family_handle_t *edge_buffer_cf(edge_buffer *s, int cf) { return s->cf[cf]; }

int edge_buffer_open(const edge_config *cfg, const char *config_text, edge_buffer **out, wt_err *err)
{
	edge_buffer *s = calloc(1, sizeof(*s));
	char *e = NULL;
	int rc = 0;

	*out = NULL;
	if (!s)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	s->cfg = cfg;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	pthread_cond_init(&s->rcv, NULL);
	pthread_mutex_init(&s->retention_run_mu, NULL);
	if (wt_mkdir_p(cfg->data_dir, 0750, NULL) != 0) {
		rc = wt_err_set(err, WT_EIO, "cannot create data_dir %s: %s", cfg->data_dir, strerror(errno));
		goto fail;
	}
	if (asprintf(&s->reserve_path, "%s/wt-reserve", cfg->data_dir) < 0) {
		s->reserve_path = NULL;
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	{
		struct statvfs v;
		if (statvfs(cfg->data_dir, &v) == 0 &&
		    (uint64_t)v.f_bavail * v.f_frsize >= cfg->min_free_bytes + cfg->reserve_bytes)
			reserve_create(s);
	}
	s->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(s->opts, 1);
	rocksdb_options_set_create_missing_column_families(s->opts, 1);
	rocksdb_options_increase_parallelism(s->opts, 2);
	rocksdb_options_set_max_total_wal_size(s->opts, 256u << 20);
	for (int i = 0; i < EDGE_CF_COUNT; i++) {
		s->cf_opts[i] = rocksdb_options_create_copy(s->opts);
		if (merge_ops[i].fn)
			rocksdb_options_set_merge_operator(s->cf_opts[i],
				rocksdb_mergeoperator_create((void *)&merge_ops[i], merge_state_destroy, merge_full,
							     merge_partial, merge_delete, merge_name));
		/* raw bodies are zstd already; rollups/stacks compress well */
		rocksdb_options_set_compression(s->cf_opts[i],
						i == EDGE_CF_RAW ? rocksdb_no_compression : rocksdb_lz4_compression);
	}
	s->db = rocksdb_open_column_families(s->opts, cfg->data_dir, EDGE_CF_COUNT, cf_names,
					     (const rocksdb_options_t *const *)s->cf_opts, s->cf, &e);
	if (e) {
		rc = wt_err_set(err, WT_EIO, "opening RocksDB in %s: %s", cfg->data_dir, e);
		free(e);
		s->db = NULL;
		goto fail;
	}
	s->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(s->wopts, cfg->sync ? 1 : 0);
	s->ropts = rocksdb_readoptions_create();
	s->seq = get_be64_meta(s, EDGE_META_SEQ);
	atomic_store(&s->last_seq, s->seq);
	if ((rc = incarnation_init(s, err)) || (rc = stackidx_init(s, err)))
		goto fail;
	if (config_text) {
		rocksdb_put_cf(s->db, s->wopts, s->cf[EDGE_CF_CONFIG], "local", 5, config_text, strlen(config_text), &e);
		free(e);
		e = NULL;
	}
	if (pthread_create(&s->committer, NULL, committer_main, s) != 0) {
		rc = wt_err_set(err, WT_ENOMEM, "cannot start the committer thread");
		goto fail;
	}
	if (pthread_create(&s->retention, NULL, retention_main, s) != 0) {
		pthread_mutex_lock(&s->mu);
		s->stopping = 1;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->committer, NULL);
		rc = wt_err_set(err, WT_ENOMEM, "cannot start the retention thread");
		goto fail;
	}
	wt_info("store opened data_dir=%s last_seq=%llu incarnation=%s sync=%d rollup_mode=%s", cfg->data_dir,
		(unsigned long long)s->seq, *s->incarnation ? s->incarnation : "(legacy)", cfg->sync, cfg->rollup_mode == EDGE_ROLLUP_RMW ? "rmw" : "merge");
	*out = s;
	return 0;
fail:
	if (s->db) {
		for (int i = 0; i < EDGE_CF_COUNT; i++)
			if (s->cf[i])
				rocksdb_column_family_handle_destroy(s->cf[i]);
		rocksdb_close(s->db);
	}
	if (s->wopts)
		rocksdb_writeoptions_destroy(s->wopts);
	if (s->ropts)
		rocksdb_readoptions_destroy(s->ropts);
	for (int i = 0; i < EDGE_CF_COUNT; i++)
		if (s->cf_opts[i])
			rocksdb_options_destroy(s->cf_opts[i]);
	if (s->opts)
		rocksdb_options_destroy(s->opts);
	free(s->reserve_path);
	free(s);
	return rc;
}

void edge_buffer_close(edge_buffer *s)
{
	char *e = NULL;
	if (!s)
		return;
	pthread_mutex_lock(&s->rmu);
	s->rstop = 1;
	pthread_cond_signal(&s->rcv);
	pthread_mutex_unlock(&s->rmu);
	pthread_join(s->retention, NULL);
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->committer, NULL);
	rocksdb_flush_wal(s->db, 1, &e);
	if (e) {
		wt_error("flushing the WAL at shutdown failed: %s", e);
		free(e);
	}
	rocksdb_cancel_all_background_work(s->db, 1);
	for (int i = 0; i < EDGE_CF_COUNT; i++)
		rocksdb_column_family_handle_destroy(s->cf[i]);
	rocksdb_close(s->db);
	rocksdb_writeoptions_destroy(s->wopts);
	rocksdb_readoptions_destroy(s->ropts);
	for (int i = 0; i < EDGE_CF_COUNT; i++)
		rocksdb_options_destroy(s->cf_opts[i]);
	rocksdb_options_destroy(s->opts);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->rmu);
	pthread_cond_destroy(&s->rcv);
	pthread_mutex_destroy(&s->retention_run_mu);
	wt_info("store closed");
	free(s->reserve_path);
	free(s);
}
