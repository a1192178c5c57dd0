/*
 * h2flood.c — test tool for the edge's OTLP/gRPC receiver limits
 * (edge/otlp_recv.c), driven by tests/integration/test_bounds.py:
 *
 *   h2flood PORT STREAMS BYTES HOLD_S [TOKEN]
 *
 * Opens one HTTP/2 cleartext connection, starts STREAMS gRPC Export calls
 * (with "authorization: Bearer TOKEN" when TOKEN is given and not empty)
 * and sends BYTES zero bytes on each without ever ending the stream,
 * following the server's flow control, for HOLD_S seconds or until every
 * stream is closed. Then prints one JSON line:
 *   {"streams":[{"id":1,"status":16,"rst":8,"sent":N,"closed":1},...],
 *    "goaway":0,"conn_closed":0}
 * status is the grpc-status the server answered (-1: none), rst the
 * RST_STREAM / close error code (-1: still open), sent the body bytes
 * nghttp2 sent on the stream. Exit 0 unless the connection could not be
 * made.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXS 256
#define PATH "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

typedef struct {
	int32_t id;
	int status, rst, closed;
	size_t sent, want;
} fstream;

static fstream st[MAXS];
static int nst, fd, goaway, conn_closed;

static fstream *find(int32_t id)
{
	for (int i = 0; i < nst; i++)
		if (st[i].id == id)
			return &st[i];
	return NULL;
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *d, size_t n, int fl, void *ud)
{
	ssize_t w = send(fd, d, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK
							      : NGHTTP2_ERR_CALLBACK_FAILURE;
	return w;
}

static ssize_t data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *ud)
{
	fstream *f = find(id);
	size_t n;
	if (!f || f->sent >= f->want)
		return NGHTTP2_ERR_DEFERRED; /* never END_STREAM */
	n = f->want - f->sent;
	if (n > len)
		n = len;
	memset(buf, 0, n);
	if (f->sent == 0 && n >= 5) { /* a gRPC frame header announcing the whole body */
		uint32_t l = (uint32_t)(f->want - 5);
		buf[1] = (uint8_t)(l >> 24), buf[2] = (uint8_t)(l >> 16), buf[3] = (uint8_t)(l >> 8),
		buf[4] = (uint8_t)l;
	}
	f->sent += n;
	return (ssize_t)n;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name, size_t nl,
		     const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	fstream *f = find(fr->hd.stream_id);
	if (f && nl == 11 && !memcmp(name, "grpc-status", 11)) {
		char v[16];
		snprintf(v, sizeof(v), "%.*s", (int)(vl < 15 ? vl : 15), value);
		f->status = atoi(v);
	}
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud)
{
	fstream *f = find(id);
	if (f) {
		f->closed = 1;
		f->rst = (int)code;
	}
	return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *fr, void *ud)
{
	if (fr->hd.type == NGHTTP2_GOAWAY)
		goaway = 1;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	nghttp2_session_callbacks *cb;
	nghttp2_session *sess;
	struct sockaddr_in sa;
	const char *token;
	char auth[600];
	double end;
	int n, one = 1;
	size_t bytes;

	if (argc < 5) {
		fprintf(stderr, "usage: h2flood PORT STREAMS BYTES HOLD_S [TOKEN]\n");
		return 2;
	}
	n = atoi(argv[2]);
	bytes = (size_t)strtoull(argv[3], NULL, 10);
	end = now_s() + atof(argv[4]);
	token = argc > 5 ? argv[5] : "";
	if (n < 1 || n > MAXS || bytes < 5)
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("connect");
		return 1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
	nghttp2_session_client_new(&sess, cb, NULL);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(sess, NGHTTP2_FLAG_NONE, NULL, 0);
	snprintf(auth, sizeof(auth), "Bearer %s", token);
	for (int i = 0; i < n; i++) {
		nghttp2_nv nva[] = {
			{(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
			{(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
			{(uint8_t *)":path", (uint8_t *)PATH, 5, sizeof(PATH) - 1, 0},
			{(uint8_t *)":authority", (uint8_t *)"127.0.0.1", 10, 9, 0},
			{(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
			{(uint8_t *)"te", (uint8_t *)"trailers", 2, 8, 0},
			{(uint8_t *)"authorization", (uint8_t *)auth, 13, strlen(auth), 0},
		};
		nghttp2_data_provider prd = {.source.ptr = NULL, .read_callback = data_read};
		int32_t id = nghttp2_submit_request(sess, NULL, nva, *token ? 7 : 6, &prd, NULL);
		if (id < 0)
			break;
		st[nst].id = id;
		st[nst].status = -1;
		st[nst].rst = -1;
		st[nst].want = bytes;
		nst++;
	}
	while (now_s() < end) {
		struct pollfd p = {fd, POLLIN, 0};
		uint8_t buf[65536];
		int open = 0;
		for (int i = 0; i < nst; i++) {
			open += !st[i].closed;
			if (!st[i].closed && st[i].sent < st[i].want)
				nghttp2_session_resume_data(sess, st[i].id);
		}
		if (!open)
			break;
		if (nghttp2_session_send(sess) != 0)
			break;
		if (nghttp2_session_want_write(sess))
			p.events |= POLLOUT;
		if (poll(&p, 1, 50) < 0)
			break;
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(fd, buf, sizeof(buf), 0);
			if (r <= 0) {
				conn_closed = 1;
				break;
			}
			if (nghttp2_session_mem_recv(sess, buf, (size_t)r) < 0) {
				conn_closed = 1;
				break;
			}
		}
	}
	printf("{\"streams\":[");
	for (int i = 0; i < nst; i++)
		printf("%s{\"id\":%d,\"status\":%d,\"rst\":%d,\"sent\":%zu,\"closed\":%d}", i ? "," : "",
		       st[i].id, st[i].status, st[i].rst, st[i].sent, st[i].closed);
	printf("],\"goaway\":%d,\"conn_closed\":%d}\n", goaway, conn_closed);
	nghttp2_session_del(sess);
	close(fd);
	return 0;
}
