/*
 * perfmap.c — JIT symbol maps (/tmp/perf-PID.map) read for the eBPF
 * sampler; see perfmap.h for the format, the path rules and the limits.
 */
#include "perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct pm_ent {
	uint64_t start, end;
	uint32_t name; /* offset into names */
	uint32_t seq;  /* file order: a later entry wins */
} pm_ent;

#define TAIL 64 /* bytes before off remembered to tell an append from a rewrite */

/* descriptors held by all maps (pinned /tmp directories and open maps) */
static atomic_uint g_held;

struct edge_perfmap {
	char *root;
	uint32_t tgid;
	uint32_t nspid; /* 0 until resolved */
	char path[256]; /* "" until resolved */
	char name[32];  /* perf-NSPID.map */
	int dirfd;      /* the process's /tmp while pinned, else -1 */
	int fd;         /* the map as last opened, else -1 */
	uint64_t dev, ino;
	uint64_t off;   /* bytes of the file consumed (whole lines) */
	unsigned char tail[TAIL]; /* the last ntail bytes before off */
	size_t ntail;
	uint64_t gen;
	int have_gen;
	int truncated;
	pm_ent *ents;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

edge_perfmap *edge_perfmap_new(const char *proc_root, uint32_t tgid)
{
	edge_perfmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->root = strdup(proc_root);
	if (!m->root) {
		free(m);
		return NULL;
	}
	m->tgid = tgid;
	m->dirfd = m->fd = -1;
	return m;
}

static void release(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		atomic_fetch_sub(&g_held, 1);
		*fd = -1;
	}
}

/* Count a descriptor as held: 0, or -1 past the limit (not held). */
static int hold(void)
{
	if (atomic_fetch_add(&g_held, 1) >= EDGE_PERFMAP_MAX_HELD) {
		atomic_fetch_sub(&g_held, 1);
		return -1;
	}
	return 0;
}

void edge_perfmap_free(edge_perfmap *m)
{
	if (!m)
		return;
	release(&m->dirfd);
	release(&m->fd);
	free(m->ents);
	free(m->names);
	free(m->root);
	free(m);
}

size_t edge_perfmap_entries(const edge_perfmap *m)
{
	return m ? m->n : 0;
}

int edge_perfmap_truncated(const edge_perfmap *m)
{
	return m ? m->truncated : 0;
}

/* The pid the process knows itself by: the last NSpid field of
 * /proc/PID/status (kernels before 4.1 have none: the pid itself). */
static uint32_t ns_pid(const edge_perfmap *m)
{
	char p[256], line[256];
	uint32_t pid = m->tgid;
	snprintf(p, sizeof(p), "%s/%u/status", m->root, m->tgid);
	FILE *f = fopen(p, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		char *s = line + 6, *end;
		for (;;) {
			unsigned long v = strtoul(s, &end, 10);
			if (end == s)
				break;
			pid = (uint32_t)v;
			s = end;
		}
		break;
	}
	fclose(f);
	return pid;
}

static void resolve(edge_perfmap *m)
{
	if (m->path[0])
		return;
	m->nspid = ns_pid(m);
	snprintf(m->name, sizeof(m->name), "perf-%u.map", m->nspid);
	snprintf(m->path, sizeof(m->path), "%s/%u/root/tmp/%s", m->root, m->tgid, m->name);
}

int edge_perfmap_pin(edge_perfmap *m)
{
	char p[256];
	int fd, rc = -1;
	if (!m || m->dirfd >= 0)
		return m ? 0 : -1;
	resolve(m);
	snprintf(p, sizeof(p), "%s/%u/root/tmp", m->root, m->tgid);
	if (hold())
		goto out;
	fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		atomic_fetch_sub(&g_held, 1);
		goto out;
	}
	m->dirfd = fd;
	rc = 0;
out:
	return rc;
}

void edge_perfmap_unpin(edge_perfmap *m)
{
	if (!m || m->dirfd < 0)
		return;
	if (m->fd < 0) {
		/* the map as it is now: the runtime keeps writing to this file */
		int fd = openat(m->dirfd, m->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			close(m->dirfd);
			m->dirfd = -1;
			m->fd = fd; /* takes over the pin's count */
			return;
		}
	}
	release(&m->dirfd);
}

void edge_perfmap_close(edge_perfmap *m)
{
	if (!m)
		return;
	release(&m->dirfd);
	release(&m->fd);
}

int edge_perfmap_pinned(const edge_perfmap *m)
{
	return m && m->dirfd >= 0;
}

static void reset(edge_perfmap *m)
{
	m->n = 0;
	m->names_len = 0;
	m->off = 0;
	m->ntail = 0;
	m->truncated = 0;
}

/* The map's descriptor for this read: opened again (through the pinned
 * directory, else the path), so a file the runtime replaced is seen; the
 * one held from an earlier read when that fails (the process exited: its
 * /proc entry is gone). The descriptor opened is held for later reads
 * when the limit allows, else *tmp says to close it after the read. */
static int open_map(edge_perfmap *m, int *tmp)
{
	int fd;
	*tmp = 0;
	if (m->dirfd >= 0)
		fd = openat(m->dirfd, m->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	else
		fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return m->fd;
	if (m->fd >= 0) {
		close(m->fd); /* its count goes to the new one */
		m->fd = fd;
	} else if (hold() == 0) {
		m->fd = fd;
	} else {
		*tmp = 1;
	}
	return fd;
}

static int parse_hex(const char **s, const char *end, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int nd = 0;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; p < end; p++, nd++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (nd >= 16)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	if (nd == 0)
		return -1;
	*s = p;
	*out = v;
	return 0;
}

/* One line without its '\n'. Malformed lines are skipped. 0, or -1 when a
 * limit was reached (nothing more is added). */
static int add_line(edge_perfmap *m, const char *s, const char *end)
{
	uint64_t start, size;
	if (end > s && end[-1] == '\r')
		end--;
	if (parse_hex(&s, end, &start) || s >= end || *s != ' ')
		return 0;
	while (s < end && *s == ' ')
		s++;
	if (parse_hex(&s, end, &size) || s >= end || *s != ' ' || size == 0 || start + size < start)
		return 0;
	s++;
	if (s >= end)
		return 0;
	size_t len = (size_t)(end - s);
	if (m->n >= EDGE_PERFMAP_MAX_ENTRIES)
		return -1;
	if (m->n == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 256;
		pm_ent *ne = realloc(m->ents, nc * sizeof(*ne));
		if (!ne)
			return -1;
		m->ents = ne;
		m->cap = nc;
	}
	if (m->names_len + len + 1 > m->names_cap) {
		size_t nc = m->names_cap ? 2 * m->names_cap : 4096;
		while (nc < m->names_len + len + 1)
			nc *= 2;
		char *nn = realloc(m->names, nc);
		if (!nn)
			return -1;
		m->names = nn;
		m->names_cap = nc;
	}
	memcpy(m->names + m->names_len, s, len);
	m->names[m->names_len + len] = '\0';
	m->ents[m->n] = (pm_ent){start, start + size, (uint32_t)m->names_len, (uint32_t)m->n};
	m->names_len += len + 1;
	m->n++;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const pm_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Read what was appended since the last read (whole lines only). */
static void refresh(edge_perfmap *m)
{
	struct stat st;
	char *buf = NULL;
	unsigned char tail[TAIL];
	int fd, tmp;

	resolve(m);
	fd = open_map(m, &tmp);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out;
	/* runtimes append, but the JVM's Compiler.perfmap writes the whole
	 * file again (same inode, entries in code-cache order): bytes before
	 * where the last read stopped that changed mean a rewrite */
	if ((uint64_t)st.st_dev != m->dev || (uint64_t)st.st_ino != m->ino || (uint64_t)st.st_size < m->off ||
	    (m->ntail && (pread(fd, tail, m->ntail, (off_t)(m->off - m->ntail)) != (ssize_t)m->ntail ||
			  memcmp(tail, m->tail, m->ntail)))) {
		reset(m);
		m->dev = (uint64_t)st.st_dev;
		m->ino = (uint64_t)st.st_ino;
	}
	uint64_t limit = (uint64_t)st.st_size < EDGE_PERFMAP_MAX_BYTES ? (uint64_t)st.st_size : EDGE_PERFMAP_MAX_BYTES;
	if ((uint64_t)st.st_size > EDGE_PERFMAP_MAX_BYTES)
		m->truncated = 1;
	if (limit <= m->off || m->n >= EDGE_PERFMAP_MAX_ENTRIES)
		goto out;
	size_t want = (size_t)(limit - m->off);
	buf = malloc(want);
	if (!buf)
		goto out;
	ssize_t got = pread(fd, buf, want, (off_t)m->off);
	if (got <= 0)
		goto out;
	const char *p = buf, *end = buf + got, *nl;
	size_t before = m->n;
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (add_line(m, p, nl)) {
			m->truncated = 1;
			break;
		}
		p = nl + 1;
	}
	m->off += (uint64_t)(p - buf);
	if (p > buf) {
		size_t keep = (size_t)(p - buf) < TAIL ? (size_t)(p - buf) : TAIL;
		if (keep < TAIL && m->ntail) {
			/* a short read: the tail spans the previous one's too */
			size_t old = m->ntail + keep > TAIL ? TAIL - keep : m->ntail;
			memmove(m->tail, m->tail + m->ntail - old, old);
			memcpy(m->tail + old, p - keep, keep);
			m->ntail = old + keep;
		} else {
			memcpy(m->tail, p - keep, keep);
			m->ntail = keep;
		}
	}
	if (m->n != before)
		qsort(m->ents, m->n, sizeof(*m->ents), ent_cmp);
out:
	free(buf);
	if (tmp)
		close(fd);
}

const char *edge_perfmap_lookup(edge_perfmap *m, uint64_t addr, uint64_t gen)
{
	if (!m)
		return NULL;
	if (!m->have_gen || m->gen != gen) {
		m->have_gen = 1;
		m->gen = gen;
		refresh(m);
	}
	/* last entry starting at or below addr */
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const pm_ent *best = NULL;
	/* overlapping entries (code compiled again over freed code) lie just
	 * below: the newest one that covers addr wins */
	for (size_t i = lo, k = 0; i > 0 && k < 32; i--, k++) {
		const pm_ent *e = &m->ents[i - 1];
		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? m->names + best->name : NULL;
}
