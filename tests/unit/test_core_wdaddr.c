/* FB_WATCHDOG_ADDR's syntax: HOST or HOST:PORT, and the one-line usage
 * error that names the value and the fix for everything else. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/watchdog_channel.h"

static void test_host_and_port_are_taken(void)
{
    char host[FB_HOST_MAX];
    int port = -1;
    struct fb_err err = {0};
    CHECK_INT(fb_wd_parse_addr("10.0.0.7:7001", host, sizeof host, &port, &err), FB_OK);
    CHECK_STR(host, "10.0.0.7");
    CHECK_INT(port, 7001);
    CHECK_INT(fb_wd_parse_addr("node-3.cluster.local", host, sizeof host, &port, &err), FB_OK);
    CHECK_STR(host, "node-3.cluster.local");
    CHECK_INT(port, 0);
    CHECK_INT(fb_wd_parse_addr("h:65535", host, sizeof host, &port, &err), FB_OK);
    CHECK_INT(port, 65535);
    CHECK_INT(err.code, FB_OK);
}

static void test_malformed_values_are_usage_errors(void)
{
    const char *bad[] = {"", ":80", "host:", "host:0", "host:65536", "host:080000", "host:12a",
                         "host:-1", "a b", "::1", "[::1]:80", "h/x:80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char host[FB_HOST_MAX];
        int port = -1;
        struct fb_err err = {0};
        CHECK_INT(fb_wd_parse_addr(bad[i], host, sizeof host, &port, &err), FB_ERR_USAGE);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "FB_WATCHDOG_ADDR='%s'", bad[i]);
        CHECK_CONTAINS(err.msg, quoted);
        CHECK_CONTAINS(err.msg, "give HOST or HOST:PORT");
        CHECK(strchr(err.msg, '\n') == NULL);
    }
}

static void test_a_host_too_long_is_refused(void)
{
    char value[FB_HOST_MAX + 8], host[FB_HOST_MAX];
    memset(value, 'a', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    int port;
    struct fb_err err = {0};
    CHECK_INT(fb_wd_parse_addr(value, host, sizeof host, &port, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "too long");
}

int main(void)
{
    RUN(test_host_and_port_are_taken);
    RUN(test_malformed_values_are_usage_errors);
    RUN(test_a_host_too_long_is_refused);
    return fbt_done();
}
