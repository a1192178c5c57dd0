/*
 * ingest_load.c — HTTP upload load generator for bench/edge_ingest.sh.
 *   ingest_load HOST PORT PATH_AND_QUERY TOKEN FILE CLIENTS SECONDS
 * Each client thread keeps one HTTP/1.1 keep-alive connection and POSTs
 * FILE in a loop for SECONDS; prints "uploads=N errors=E seconds=S".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *host, *path, *token;
static int port, seconds;
static char *body;
static size_t body_len;
static _Atomic long ok_count, err_count;
static double t_end;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_once(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, host, &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* read one response; returns status or -1 */
static int read_response(int fd)
{
	char buf[65536];
	size_t have = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		char *eoh = strstr(buf, "\r\n\r\n");
		if (!eoh)
			continue;
		int status = atoi(buf + 9);
		char *cl = strcasestr(buf, "Content-Length:");
		size_t len = cl ? strtoul(cl + 15, NULL, 10) : 0;
		size_t need = (size_t)(eoh + 4 - buf) + len;
		while (have < need) {
			r = read(fd, buf, sizeof(buf));
			if (r <= 0)
				return -1;
			have += (size_t)r;
		}
		return status;
	}
}

static void *client(void *arg)
{
	char hdr[4096];
	int fd = -1;
	int hl = snprintf(hdr, sizeof(hdr),
			  "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
			  "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
			  path, host, token, body_len);
	while (now() < t_end) {
		if (fd < 0 && (fd = connect_once()) < 0) {
			atomic_fetch_add(&err_count, 1);
			usleep(10000);
			continue;
		}
		int st = -1;
		if (send_all(fd, hdr, (size_t)hl) == 0 && send_all(fd, body, body_len) == 0)
			st = read_response(fd);
		if (st >= 200 && st < 300) {
			atomic_fetch_add(&ok_count, 1);
		} else {
			atomic_fetch_add(&err_count, 1);
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 1) {
		/* bench/run executes every bench binary without arguments; this one
		 * is driven by bench/edge_ingest.sh. */
		printf("ingest_load: load generator for bench/edge_ingest.sh (nothing to do without arguments)\n");
		return 0;
	}
	if (argc != 8) {
		fprintf(stderr, "usage: ingest_load HOST PORT PATH TOKEN FILE CLIENTS SECONDS\n");
		return 2;
	}
	host = argv[1];
	port = atoi(argv[2]);
	path = argv[3];
	token = argv[4];
	int clients = atoi(argv[6]);
	seconds = atoi(argv[7]);
	FILE *f = fopen(argv[5], "rb");
	if (!f || clients <= 0 || clients > 1024 || seconds <= 0) {
		fprintf(stderr, "ingest_load: bad arguments or cannot open %s\n", argv[5]);
		return 2;
	}
	fseek(f, 0, SEEK_END);
	body_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	body = malloc(body_len ? body_len : 1);
	if (!body || fread(body, 1, body_len, f) != body_len) {
		fprintf(stderr, "ingest_load: cannot read %s\n", argv[5]);
		return 2;
	}
	fclose(f);
	pthread_t th[1024];
	double t0 = now();
	t_end = t0 + seconds;
	for (int i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client, NULL);
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	printf("uploads=%ld errors=%ld seconds=%.2f\n", atomic_load(&ok_count), atomic_load(&err_count), now() - t0);
	free(body);
	return 0;
}
