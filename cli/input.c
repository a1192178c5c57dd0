/*
 * input.c — mmap'd (or, for stdin and pipes, read) input files and the
 * progress line of wtctl's offline commands (see input.h).
 */
#include "input.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

/* ---- input ------------------------------------------------------------------------------- */

static int read_stream(int fd, cli_input *in, size_t max)
{
	wt_buf b = WT_BUF_INIT;
	uint8_t chunk[65536];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "wtctl: %s: read error: %s\n", in->path, strerror(errno));
			goto fail;
		}
		if (b.len + (size_t)n > max) {
			fprintf(stderr, "wtctl: %s: larger than %zu bytes\n", in->path, max);
			goto fail;
		}
		if (wt_buf_append(&b, chunk, (size_t)n)) {
			fprintf(stderr, "wtctl: %s: out of memory\n", in->path);
			goto fail;
		}
	}
	if (wt_buf_putc(&b, '\0')) { /* keeps an empty input non-NULL */
		fprintf(stderr, "wtctl: %s: out of memory\n", in->path);
		goto fail;
	}
	in->heap = wt_buf_steal(&b, &in->len);
	in->len--;
	in->data = in->heap;
	return 0;
fail:
	wt_buf_free(&b);
	return -1;
}

int cli_input_open(const char *path, size_t max, cli_input *in)
{
	struct stat st;
	int fd, rc = -1;

	memset(in, 0, sizeof(*in));
	in->path = path;
	in->data = (const uint8_t *)"";
	if (!strcmp(path, "-"))
		return read_stream(STDIN_FILENO, in, max);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "wtctl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		fprintf(stderr, "wtctl: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "wtctl: %s: is a directory\n", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) { /* a pipe, a FIFO, /dev/stdin ... */
		rc = read_stream(fd, in, max);
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		fprintf(stderr, "wtctl: %s: %lld bytes, larger than %zu\n", path, (long long)st.st_size, max);
		goto out;
	}
	rc = 0;
	if (!st.st_size) /* mmap of 0 bytes is EINVAL */
		goto out;
	in->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (in->map == MAP_FAILED) {
		in->map = NULL;
		rc = read_stream(fd, in, max); /* a file system without mmap */
		goto out;
	}
	/* parsers walk the input front to back: read ahead aggressively */
	(void)madvise(in->map, (size_t)st.st_size, MADV_SEQUENTIAL);
	in->data = in->map;
	in->len = (size_t)st.st_size;
out:
	close(fd);
	return rc;
}

void cli_input_close(cli_input *in)
{
	if (in->map)
		munmap(in->map, in->len);
	free(in->heap);
	memset(in, 0, sizeof(*in));
}

/* ---- progress line ------------------------------------------------------------------------- */

struct cli_progress {
	const cli_input *in;
	const char *what;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int pagemap_fd; /* -1 when /proc/self/pagemap is not readable */
	uint64_t *pm;   /* pagemap entries of the mapping */
	size_t npages;
	int64_t t0_ns; /* CLOCK_MONOTONIC */
};

static double elapsed(const cli_progress *pr)
{
	return (double)(wt_now_ns(CLOCK_MONOTONIC) - pr->t0_ns) / 1e9;
}

/* Share of the mapping's pages present in our page tables, 0..100, or -1. */
static int touched_pct(cli_progress *pr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), present = 0;
	off_t off = (off_t)((uintptr_t)pr->in->map / page * sizeof(uint64_t));
	ssize_t n;

	if (pr->pagemap_fd < 0 || !pr->npages)
		return -1;
	n = pread(pr->pagemap_fd, pr->pm, pr->npages * sizeof(uint64_t), off);
	if (n != (ssize_t)(pr->npages * sizeof(uint64_t)))
		return -1;
	for (size_t i = 0; i < pr->npages; i++)
		present += (pr->pm[i] >> 63) & 1; /* bit 63: page present */
	return (int)(present * 100 / pr->npages);
}

static void print_line(cli_progress *pr)
{
	int pct = touched_pct(pr);

	if (pct >= 0)
		fprintf(stderr, "\r\033[Kwtctl: %s: %s %.1f MB ... %d%% read, %.1f s", pr->in->path,
			pr->what, (double)pr->in->len / 1e6, pct, elapsed(pr));
	else
		fprintf(stderr, "\r\033[Kwtctl: %s: %s %.1f MB ... %.1f s", pr->in->path, pr->what,
			(double)pr->in->len / 1e6, elapsed(pr));
	fflush(stderr);
}

static void *progress_main(void *arg)
{
	cli_progress *pr = arg;
	struct timespec until;

	pthread_mutex_lock(&pr->mu);
	while (!pr->stop) {
		print_line(pr);
		until = wt_deadline(CLOCK_REALTIME, CLI_PROGRESS_INTERVAL_MS);
		while (!pr->stop && pthread_cond_timedwait(&pr->cv, &pr->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&pr->mu);
	return NULL;
}

cli_progress *cli_progress_start(const cli_input *in, const char *what)
{
	cli_progress *pr;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (in->len < CLI_PROGRESS_MIN_BYTES || !isatty(STDERR_FILENO))
		return NULL;
	if (!(pr = calloc(1, sizeof(*pr))))
		return NULL;
	pr->in = in;
	pr->what = what;
	pr->pagemap_fd = -1;
	pr->t0_ns = wt_now_ns(CLOCK_MONOTONIC);
	if (in->map) {
		pr->npages = (in->len + page - 1) / page;
		if ((pr->pm = malloc(pr->npages * sizeof(uint64_t))))
			pr->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_init(&pr->mu, NULL);
	pthread_cond_init(&pr->cv, NULL);
	if (pthread_create(&pr->thread, NULL, progress_main, pr)) {
		pthread_mutex_destroy(&pr->mu);
		pthread_cond_destroy(&pr->cv);
		if (pr->pagemap_fd >= 0)
			close(pr->pagemap_fd);
		free(pr->pm);
		free(pr);
		return NULL;
	}
	return pr;
}

void cli_progress_stop(cli_progress *pr, int ok)
{
	double s;

	if (!pr)
		return;
	pthread_mutex_lock(&pr->mu);
	pr->stop = 1;
	pthread_cond_signal(&pr->cv);
	pthread_mutex_unlock(&pr->mu);
	pthread_join(pr->thread, NULL);
	s = elapsed(pr);
	if (ok)
		fprintf(stderr, "\r\033[Kwtctl: %s: %s %.1f MB done in %.1f s (%.0f MB/s)\n", pr->in->path,
			pr->what, (double)pr->in->len / 1e6, s, s > 0 ? (double)pr->in->len / 1e6 / s : 0.0);
	else
		fputs("\r\033[K", stderr);
	fflush(stderr);
	pthread_mutex_destroy(&pr->mu);
	pthread_cond_destroy(&pr->cv);
	if (pr->pagemap_fd >= 0)
		close(pr->pagemap_fd);
	free(pr->pm);
	free(pr);
}
