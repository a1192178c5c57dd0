/*
 * test_listen_addr.c — listen addresses of common/listen_addr.c: IPv4,
 * bracketed IPv6, ":PORT" / "*:PORT", port bounds, rejects, and the socket
 * address each gives (compared with inet_pton's bytes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "listen_addr.h"

static void parse(void **state)
{
	wt_listen_addr a;
	wt_err err;

	(void)state;
	assert_int_equal(wt_listen_parse("127.0.0.1:4040", "k", 0, &a, &err), 0);
	assert_string_equal(a.host, "127.0.0.1");
	assert_int_equal(a.port, 4040);
	assert_int_equal(wt_listen_parse("[::1]:8443", "k", 0, &a, &err), 0);
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 8443);
	assert_int_equal(wt_listen_parse("[::]:1", "k", 0, &a, &err), 0);
	assert_string_equal(a.host, "::");
	assert_int_equal(wt_listen_parse(":9000", "k", 0, &a, &err), 0);
	assert_string_equal(a.host, "0.0.0.0");
	assert_int_equal(wt_listen_parse("*:9000", "k", 0, &a, &err), 0);
	assert_string_equal(a.host, "0.0.0.0");
	assert_int_equal(wt_listen_parse("localhost:0", "k", 1, &a, &err), 0);
	assert_int_equal(a.port, 0);
	assert_int_equal(wt_listen_parse("localhost:65535", "k", 0, &a, &err), 0);
}

static void rejects(void **state)
{
	static const char *bad[] = {
		"", "4040", "127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:65536", "127.0.0.1:-1",
		"127.0.0.1:+80", "::1:80", "[::1]80", "[::1", "[]:80", "[::1]:", "localhost:0",
	};
	wt_listen_addr a;
	wt_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		assert_int_equal(wt_listen_parse(bad[i], "edge.listen", 0, &a, &err), WT_EINVAL);
		assert_non_null(strstr(err.msg, "edge.listen"));
	}
	assert_int_equal(wt_listen_parse(NULL, "k", 0, &a, &err), WT_EINVAL);
}

static void sockaddrs(void **state)
{
	wt_listen_addr a;
	struct sockaddr_storage ss;
	socklen_t len;
	wt_err err;
	struct in6_addr lo6;

	(void)state;
	assert_int_equal(wt_listen_parse("[::1]:8443", "k", 0, &a, &err), 0);
	assert_int_equal(wt_listen_sockaddr(&a, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(inet_pton(AF_INET6, "::1", &lo6), 1);
	assert_memory_equal(&((struct sockaddr_in6 *)&ss)->sin6_addr, &lo6, sizeof(lo6));
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 8443);
	assert_int_equal(wt_listen_parse("localhost:80", "k", 0, &a, &err), 0);
	assert_int_equal(wt_listen_sockaddr(&a, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(wt_listen_parse("*:80", "k", 0, &a, &err), 0);
	assert_int_equal(wt_listen_sockaddr(&a, &ss, &len, &err), 0);
	assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr, htonl(INADDR_ANY));
	assert_int_equal(wt_listen_parse("no-such-host.invalid:80", "k", 0, &a, &err), 0);
	assert_int_equal(wt_listen_sockaddr(&a, &ss, &len, &err), WT_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse),
		cmocka_unit_test(rejects),
		cmocka_unit_test(sockaddrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
