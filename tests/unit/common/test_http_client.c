/*
 * test_http_client.c — common/http_client.c against a one-shot HTTP/1.1
 * server on a loopback socket in a thread: status, body and the request
 * line, headers and body as sent; a body over the limit is WT_ELIMIT; a
 * refused connection is WT_EUNAVAIL; the sink's three modes;
 * wt_http_request's retries (a 503, then the answer, with the error text
 * rolled back), its retry rule saying no, and a DELETE that sends no body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "http_client.h"

typedef struct srv {
	int lfd, port;
	char req[4096];
	const char *reply;
	const char *reply2; /* a second connection's answer (NULL: one only) */
	int conns;
} srv;

static void *serve(void *arg)
{
	srv *s = arg;
	int fd;
	size_t got = 0;

again:
	fd = accept(s->lfd, NULL, NULL);
	got = 0;

	if (fd < 0)
		return NULL;
	/* read the head and a body of the Content-Length it announces */
	while (got < sizeof(s->req) - 1) {
		ssize_t n = read(fd, s->req + got, sizeof(s->req) - 1 - got);
		char *end, *cl;
		if (n <= 0)
			break;
		got += (size_t)n;
		s->req[got] = 0;
		if (!(end = strstr(s->req, "\r\n\r\n")))
			continue;
		cl = strcasestr(s->req, "Content-Length:");
		if (!cl || got >= (size_t)(end + 4 - s->req) + (size_t)atoi(cl + 15))
			break;
	}
	if (write(fd, s->reply, strlen(s->reply)) < 0)
		perror("write");
	close(fd);
	s->conns++;
	if (s->reply2) {
		s->reply = s->reply2;
		s->reply2 = NULL;
		goto again;
	}
	return NULL;
}

static void start(srv *s, const char *reply, pthread_t *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);

	memset(s->req, 0, sizeof(s->req));
	s->reply = reply;
	s->reply2 = NULL;
	s->conns = 0;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 1), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(t, NULL, serve, s), 0);
}

static void request_and_answer(void **state)
{
	srv s;
	pthread_t t;
	char url[64];
	const char *hdrs[] = {"X-Test: 1", NULL};
	wt_buf out = WT_BUF_INIT;
	wt_http_result r;
	CURL *h = curl_easy_init();

	start(&s, "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", &t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/x", s.port);
	assert_int_equal(wt_http_perform(h, "PUT", url, hdrs, "abc", 3, &out, 100, &r), 0);
	pthread_join(t, NULL);
	close(s.lfd);
	assert_int_equal(r.status, 201);
	assert_int_equal(out.len, 5);
	assert_memory_equal(out.data, "hello", 5);
	assert_non_null(strstr(s.req, "PUT /v1/x HTTP/1.1\r\n"));
	assert_non_null(strstr(s.req, "X-Test: 1\r\n"));
	assert_null(strcasestr(s.req, "Expect:"));
	assert_non_null(strstr(s.req, "\r\n\r\nabc"));
	wt_buf_free(&out);

	/* the same handle again: a body over the limit */
	start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789", &t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big", s.port);
	assert_int_equal(wt_http_perform(h, "GET", url, NULL, NULL, 0, &out, 4, &r), WT_ELIMIT);
	pthread_join(t, NULL);
	close(s.lfd);
	assert_true(r.over);
	assert_non_null(strstr(s.req, "GET /big HTTP/1.1\r\n"));
	wt_buf_free(&out);
	curl_easy_cleanup(h);
}

static void refused(void **state)
{
	srv s;
	pthread_t t;
	char url[64];
	wt_http_result r;
	CURL *h = curl_easy_init();
	int port;

	/* a port that was just free: nobody listens there now */
	start(&s, "", &t);
	port = s.port;
	shutdown(s.lfd, SHUT_RDWR);
	close(s.lfd);
	pthread_join(t, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	assert_int_equal(wt_http_perform(h, "GET", url, NULL, NULL, 0, NULL, 100, &r), WT_EUNAVAIL);
	assert_int_equal(r.cc, CURLE_COULDNT_CONNECT);
	assert_int_equal(r.status, 0);
	curl_easy_cleanup(h);
}

static void sink_modes(void **state)
{
	wt_buf out = WT_BUF_INIT, keep = WT_BUF_INIT;
	char data[700];
	wt_http_sink a = {&out, 10, 0, 0, 0, NULL, 0};
	wt_http_sink k = {NULL, 0, 0, 0, 0, &keep, 512};
	wt_http_sink d = {NULL, 8, 0, 0, 0, NULL, 0};

	memset(data, 'x', sizeof(data));
	wt_buf_append(&out, "pre", 3);
	a.got = out.len; /* bound the whole buffer */
	assert_int_equal(wt_http_sink_write(data, 1, 7, &a), 7);
	assert_int_equal(wt_http_sink_write(data, 1, 1, &a), 0);
	assert_true(a.over && out.len == 10);
	/* keep: the first keep_max bytes, never aborts */
	assert_int_equal(wt_http_sink_write(data, 1, 700, &k), 700);
	assert_int_equal(wt_http_sink_write(data, 1, 700, &k), 700);
	assert_int_equal(keep.len, 512);
	/* neither: counted against max, dropped */
	assert_int_equal(wt_http_sink_write(data, 2, 4, &d), 8);
	assert_int_equal(wt_http_sink_write(data, 1, 1, &d), 0);
	assert_true(d.over);
	wt_buf_free(&out);
	wt_buf_free(&keep);
}

static unsigned retry_calls;

static int retry_503(void *ctx, const wt_http_req *q, unsigned attempt, int rc, const wt_http_result *r)
{
	(void)ctx;
	(void)attempt;
	retry_calls++;
	/* the error answer is where the next attempt will overwrite it */
	assert_int_equal(rc, 0);
	assert_true(q->resp->len >= 4 && !memcmp(q->resp->data + q->resp->len - 4, "busy", 4));
	return r->status == 503;
}

static void request_retries(void **state)
{
	srv s;
	pthread_t t;
	char url[64];
	wt_buf out = WT_BUF_INIT;
	wt_http_result r;
	wt_backoff bo = {1, 0, 0};
	wt_http_req q = {.method = "POST", .url = url, .body = "q", .len = 1, .resp = &out, .max_response = 100,
			 .timeout_ms = 5000, .retries = 2, .backoff = &bo, .retry = retry_503};
	CURL *h = curl_easy_init();

	wt_buf_append(&out, "pre", 3);
	start(&s, "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy", &t);
	s.reply2 = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/q", s.port);
	retry_calls = 0;
	assert_int_equal(wt_http_request(h, &q, &r), 0);
	pthread_join(t, NULL);
	close(s.lfd);
	assert_int_equal(s.conns, 2);
	assert_int_equal(retry_calls, 1);
	assert_int_equal(r.status, 200);
	assert_int_equal(out.len, 5); /* what it held, then the last answer only */
	assert_memory_equal(out.data, "preok", 5);

	/* a 503 with no retries left: the rule is still told (it says why),
	 * the answer is the 503 */
	q.retries = 0;
	out.len = 0;
	start(&s, "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy", &t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/q", s.port);
	retry_calls = 0;
	assert_int_equal(wt_http_request(h, &q, &r), 0);
	pthread_join(t, NULL);
	close(s.lfd);
	assert_int_equal(retry_calls, 1);
	assert_int_equal(s.conns, 1);
	assert_int_equal(r.status, 503);
	wt_buf_free(&out);
	curl_easy_cleanup(h);
}

static void delete_sends_no_body(void **state)
{
	srv s;
	pthread_t t;
	char url[64];
	wt_buf keep = WT_BUF_INIT;
	wt_http_result r;
	wt_http_req q = {.method = "DELETE", .url = url, .keep = &keep, .keep_max = 3};
	CURL *h = curl_easy_init();

	start(&s, "HTTP/1.1 404 Not Found\r\nContent-Length: 7\r\nConnection: close\r\n\r\nmissing", &t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/o/k", s.port);
	assert_int_equal(wt_http_request(h, &q, &r), 0);
	pthread_join(t, NULL);
	close(s.lfd);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(s.req, "DELETE /o/k HTTP/1.1\r\n"));
	assert_null(strcasestr(s.req, "Content-Length"));
	assert_null(strcasestr(s.req, "Content-Type"));
	assert_int_equal(keep.len, 3);
	assert_memory_equal(keep.data, "mis", 3);
	wt_buf_free(&keep);
	curl_easy_cleanup(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sink_modes),
		cmocka_unit_test(request_retries),
		cmocka_unit_test(delete_sends_no_body),
		cmocka_unit_test(request_and_answer),
		cmocka_unit_test(refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
