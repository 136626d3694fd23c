// SPDX-License-Identifier: Apache-2.0
/* Unit tests for lith csi's metrics pieces: the endpoint's address parsing
 * and the CSI call accounting. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "csi/callstats.h"
#include "csi/httpd.h"

static void test_addresses(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	CHECK_INT(csi_httpd_parse_addr("127.0.0.1:9808", &ss), 0);
	CHECK_INT(s4->sin_family, AF_INET);
	CHECK_INT(ntohs(s4->sin_port), 9808);
	CHECK_INT(ntohl(s4->sin_addr.s_addr), 0x7f000001);
	CHECK_INT(csi_httpd_parse_addr(":9808", &ss), 0);
	CHECK_INT(s4->sin_addr.s_addr, htonl(INADDR_ANY));
	CHECK_INT(csi_httpd_parse_addr("[::1]:80", &ss), 0);
	CHECK_INT(s6->sin6_family, AF_INET6);
	CHECK_INT(ntohs(s6->sin6_port), 80);
	const char *bad[] = { "", "9808", "host:9808", "1.2.3.4:0", "1.2.3.4:65536",
			      "1.2.3.4:-1", "1.2.3.4:80x", "[::1:80", "[zz]:80", "1.2.3.4:" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(csi_httpd_parse_addr(bad[i], &ss), -EINVAL);
}

static void test_calls(void)
{
	static const char pub[] = "/csi.v1.Node/NodePublishVolume";
	static const char odd[] = "/evil.Service/\"Inject\"\n{x=\"1\"}";
	struct strbuf sb;

	csi_callstats_add(pub, strlen(pub), 0, 0.2);
	csi_callstats_add(pub, strlen(pub), 5, 0.003);
	csi_callstats_add(odd, strlen(odd), 12, 0.0001);
	csi_callstats_add(odd, strlen(odd), 99, 0.0001); /* out of range: UNKNOWN */
	strbuf_init(&sb, 1 << 20);
	CHECK_INT(csi_callstats_render(&sb), 0);
	CHECK(strstr(sb.p, "lith_csi_calls_total{method=\"NodePublishVolume\",code=\"OK\"} 1\n"));
	CHECK(strstr(sb.p, "lith_csi_calls_total{method=\"NodePublishVolume\",code=\"NOT_FOUND\"} 1\n"));
	CHECK(strstr(sb.p, "lith_csi_calls_total{method=\"other\",code=\"UNIMPLEMENTED\"} 1\n"));
	CHECK(strstr(sb.p, "lith_csi_calls_total{method=\"other\",code=\"UNKNOWN\"} 1\n"));
	CHECK(strstr(sb.p, "Inject") == NULL); /* a client's method name never becomes a label */
	CHECK(strstr(sb.p, "lith_csi_call_seconds_count{method=\"NodePublishVolume\"} 2\n"));
	CHECK(strstr(sb.p, "lith_csi_call_seconds_bucket{method=\"NodePublishVolume\",le=\"0.005\"} 1\n"));
	strbuf_free(&sb);
}

int main(void)
{
	test_addresses();
	test_calls();
	return check_done();
}
