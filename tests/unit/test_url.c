/* util/url: the parts url_parse finds, which hosts count as loopback, and
 * what url_check lets through under each flag, with messages that never
 * quote the URL. */
#include "util/url.h"

#include <criterion/criterion.h>
#include <string.h>

/* ---- url_parse ---- */

Test(url, parts_of_a_full_url)
{
    struct url u;
    struct err e = {{0}};
    const char *text = "HTTPS://User:Pw@API.Example.COM:8443/v1/x?k=v#frag";
    cr_assert_eq(url_parse(&u, text, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.scheme, "https");
    cr_assert_str_eq(u.host, "api.example.com");
    cr_assert_eq(u.port, 8443);
    cr_assert(u.has_userinfo);
    cr_assert(u.has_query);
    cr_assert(u.has_fragment);
    cr_assert_str_eq(text + u.path_start, "/v1/x?k=v#frag");
}

Test(url, parts_of_a_bare_url)
{
    struct url u;
    struct err e = {{0}};
    cr_assert_eq(url_parse(&u, "http://localhost", &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.scheme, "http");
    cr_assert_str_eq(u.host, "localhost");
    cr_assert_eq(u.port, 0);
    cr_assert_not(u.has_userinfo);
    cr_assert_not(u.has_query);
    cr_assert_not(u.has_fragment);
    cr_assert_eq(u.path_start, strlen("http://localhost"));
}

Test(url, ipv6_hosts_keep_their_brackets)
{
    struct url u;
    struct err e = {{0}};
    cr_assert_eq(url_parse(&u, "http://[::1]:9000/sim", &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.host, "[::1]");
    cr_assert_eq(u.port, 9000);
    cr_assert_eq(url_parse(&u, "https://[2001:DB8::A]", &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.host, "[2001:db8::a]");
    cr_assert_eq(url_parse(&u, "https://[::ffff:127.0.0.1]/", &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.host, "[::ffff:127.0.0.1]");
}

Test(url, query_and_fragment_are_told_apart)
{
    struct url u;
    cr_assert_eq(url_parse(&u, "https://h/p?q", NULL), 0);
    cr_assert(u.has_query);
    cr_assert_not(u.has_fragment);
    cr_assert_eq(url_parse(&u, "https://h/p#f?not-a-query", NULL), 0);
    cr_assert_not(u.has_query);
    cr_assert(u.has_fragment);
    cr_assert_eq(url_parse(&u, "https://h?q", NULL), 0);
    cr_assert(u.has_query);
    cr_assert_str_eq(u.host, "h");
    /* An '@' after the authority is part of the path, not userinfo. */
    cr_assert_eq(url_parse(&u, "https://h/a@b", NULL), 0);
    cr_assert_not(u.has_userinfo);
    cr_assert_str_eq(u.host, "h");
}

/* The host is what follows the '@': a name before it is only a user name. */
Test(url, userinfo_does_not_become_the_host)
{
    struct url u;
    cr_assert_eq(url_parse(&u, "http://localhost@example.com/", NULL), 0);
    cr_assert(u.has_userinfo);
    cr_assert_str_eq(u.host, "example.com");
    cr_assert_eq(url_parse(&u, "http://127.0.0.1:80@example.com:81/", NULL), 0);
    cr_assert_str_eq(u.host, "example.com");
    cr_assert_eq(u.port, 81);
}

Test(url, malformed_urls)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "the URL is empty"},
        {"example.com", "expected an absolute URL such as https://host[:port][/path]"},
        {"https:/example.com", "expected an absolute URL such as https://host[:port][/path]"},
        {"1http://h", "expected an absolute URL such as https://host[:port][/path]"},
        {"https://", "expected a host after the scheme's //"},
        {"https:///p", "expected a host after the scheme's //"},
        {"https://:443", "expected a host after the scheme's //"},
        {"https://u@", "expected a host after the scheme's //"},
        {"https://h x", "the URL must not contain spaces or control characters"},
        {"https://h/\tx", "the URL must not contain spaces or control characters"},
        {"https://h/x\x7f", "the URL must not contain spaces or control characters"},
        {"https://a@b@c/", "more than one '@' before the host; write an '@' in a user name or "
                           "password as %40"},
        {"https://h:0", "expected a port number from 1 to 65535 after the host"},
        {"https://h:65536", "expected a port number from 1 to 65535 after the host"},
        {"https://h:", "expected a port number from 1 to 65535 after the host"},
        {"https://h:8x", "expected a port number from 1 to 65535 after the host"},
        {"https://h:0000443", "expected a port number from 1 to 65535 after the host"},
        {"https://[::1", "expected an IPv6 address between [ and ]"},
        {"https://[]", "expected an IPv6 address between [ and ]"},
        {"https://[1:2:3]", "expected an IPv6 address between [ and ]"},
        {"https://[::1%25eth0]", "expected an IPv6 address between [ and ]"},
        {"https://[::1]x", "expected ':' and a port number, or the path, after the host"},
        {"https://h%41.example", "expected a host name (letters, digits, '-', '.', '_'), an IPv4 "
                                 "address or an [IPv6] address"},
        {"https://h,example", "expected a host name (letters, digits, '-', '.', '_'), an IPv4 "
                              "address or an [IPv6] address"},
        {"https://.example", "the host name has an empty label"},
        {"https://a..example", "the host name has an empty label"},
        {"https://127.1", "expected an IPv4 address as four numbers from 0 to 255"},
        {"https://0177.0.0.1", "expected an IPv4 address as four numbers from 0 to 255"},
        {"https://256.0.0.1", "expected an IPv4 address as four numbers from 0 to 255"},
        {"https://2130706433", "expected an IPv4 address as four numbers from 0 to 255"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct url u;
        struct err e = {{0}};
        cr_assert_eq(url_parse(&u, bad[i].text, &e), -1, "accepted %s", bad[i].text);
        cr_assert_str_eq(e.msg, bad[i].why, "for %s", bad[i].text);
    }
    struct url u;
    cr_assert_eq(url_parse(&u, NULL, NULL), -1);
}

Test(url, long_hosts)
{
    char text[400] = "https://";
    memset(text + 8, 'a', URL_HOST_MAX);
    struct url u;
    struct err e = {{0}};
    cr_assert_eq(url_parse(&u, text, &e), 0, "%s", e.msg);
    cr_assert_eq(strlen(u.host), URL_HOST_MAX);
    text[8 + URL_HOST_MAX] = 'a';
    cr_assert_eq(url_parse(&u, text, &e), -1);
    cr_assert_str_eq(e.msg, "the host name is longer than 255 characters");
}

/* ---- url_host_is_loopback ---- */

Test(url, loopback_hosts)
{
    static const char *const yes[] = {
        "localhost",       "LocalHost", "127.0.0.1",         "127.0.0.2",
        "127.255.255.254", "[::1]",     "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]",
    };
    static const char *const no[] = {
        "localhost.example.com",
        "localhost.",
        "example.com",
        "128.0.0.1",
        "126.255.255.255",
        "0.0.0.0",
        "10.0.0.1",
        "::1",
        "[::2]",
        "[::]",
        "[::ffff:10.0.0.1]",
        "127.1",
        "2130706433",
        "127.0.0.1.nip",
        "[::1",
        "[]",
        "",
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_assert(url_host_is_loopback(yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert_not(url_host_is_loopback(no[i]), "%s", no[i]);
    cr_assert_not(url_host_is_loopback(NULL));
}

/* ---- url_check ---- */

static int check(const char *text, unsigned flags, struct err *e)
{
    memset(e, 0, sizeof *e);
    return url_check(NULL, text, flags, e);
}

Test(url, https_goes_anywhere)
{
    struct err e;
    static const unsigned flag_sets[] = {0, URL_HTTP_LOOPBACK_ONLY, URL_HTTP_ANY, URL_BASE};
    for (size_t i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
        cr_assert_eq(check("https://example.com/x", flag_sets[i], &e), 0, "%s", e.msg);
        cr_assert_eq(check("https://10.0.0.1:8443", flag_sets[i], &e), 0, "%s", e.msg);
        cr_assert_eq(check("https://[2001:db8::1]/", flag_sets[i], &e), 0, "%s", e.msg);
    }
}

Test(url, plain_http_by_flag)
{
    struct err e;
    cr_assert_eq(check("http://127.0.0.1:8080", 0, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "expected a URL starting with https://");

    cr_assert_eq(check("http://127.0.0.1:8080", URL_HTTP_LOOPBACK_ONLY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("http://localhost/x", URL_HTTP_LOOPBACK_ONLY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("http://[::1]:1", URL_HTTP_LOOPBACK_ONLY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("http://127.9.9.9", URL_HTTP_LOOPBACK_ONLY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("http://alerts.internal/T0ken", URL_HTTP_LOOPBACK_ONLY, &e), URL_E_HTTP);
    cr_assert_str_eq(e.msg, "http:// is only allowed to this machine (localhost, 127.0.0.0/8 or "
                            "[::1]); use https://");
    cr_assert_eq(check("http://localhost@evil.example/", URL_HTTP_LOOPBACK_ONLY, &e), URL_E_HTTP);
    cr_assert_eq(check("http://127.0.0.1.evil.example/", URL_HTTP_LOOPBACK_ONLY, &e), URL_E_HTTP);

    cr_assert_eq(check("http://alerts.internal/T0ken", URL_HTTP_ANY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("http://alerts.internal/", URL_HTTP_ANY | URL_HTTP_LOOPBACK_ONLY, &e), 0,
                 "%s", e.msg);
}

Test(url, other_schemes)
{
    struct err e;
    cr_assert_eq(check("ftp://h/", 0, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "expected a URL starting with https://");
    cr_assert_eq(check("ftp://h/", URL_HTTP_LOOPBACK_ONLY, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "expected a URL starting with https:// (or http:// to this machine)");
    cr_assert_eq(check("file://h/etc/passwd", URL_HTTP_ANY, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "expected a URL starting with https:// or http://");
    cr_assert_eq(check("httpss://h/", URL_HTTP_ANY, &e), URL_E_INVALID);
    cr_assert_eq(check("not a url", URL_HTTP_ANY, &e), URL_E_INVALID);
}

Test(url, userinfo_query_fragment_by_flag)
{
    struct err e;
    cr_assert_eq(check("https://u:pw@h/?q#f", URL_HTTP_ANY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("https://u:pw@h/", URL_NO_USERINFO, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "the URL must not carry a user name or password");
    cr_assert_eq(check("https://h/?q", URL_NO_QUERY, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "the URL must not have a query ('?')");
    cr_assert_eq(check("https://h/#f", URL_NO_QUERY, &e), 0, "%s", e.msg);
    cr_assert_eq(check("https://h/#f", URL_NO_FRAGMENT, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "the URL must not have a fragment ('#')");
    cr_assert_eq(check("https://h/?q", URL_NO_FRAGMENT, &e), 0, "%s", e.msg);
}

/* URL_E_HTTP means plain http is the only thing wrong. */
Test(url, other_problems_come_before_plain_http)
{
    struct err e;
    cr_assert_eq(check("http://u@remote.example/", URL_BASE, &e), URL_E_INVALID);
    cr_assert_str_eq(e.msg, "the URL must not carry a user name or password");
    cr_assert_eq(check("http://remote.example/?q", URL_BASE, &e), URL_E_INVALID);
    cr_assert_eq(check("http://remote.example/", URL_BASE, &e), URL_E_HTTP);
}

Test(url, check_fills_in_the_parts)
{
    struct url u;
    struct err e = {{0}};
    cr_assert_eq(url_check(&u, "http://[::1]:9000/sim/", URL_BASE, &e), 0, "%s", e.msg);
    cr_assert_str_eq(u.host, "[::1]");
    cr_assert_eq(u.port, 9000);
    cr_assert_eq(u.path_start, strlen("http://[::1]:9000"));
    cr_assert_eq(url_check(NULL, "https://h", 0, NULL), 0);
    cr_assert_eq(url_check(NULL, "http://h", 0, NULL), URL_E_INVALID);
}

/* No message, whatever the flags, carries a piece of the URL. */
Test(url, messages_never_quote_the_url)
{
    static const char *const texts[] = {
        "http://S3cr3tHost.example/S3cr3tPath?S3cr3tQ#S3cr3tF",
        "https://S3cr3tUser:S3cr3tPw@h.example/",
        "https://S3cr3tHost.example:S3cr3tPort/",
        "https://S3cr3t%Host/",
        "gopher://S3cr3tHost/",
        "S3cr3t",
        "https://[S3cr3t]/",
        "https://a@S3cr3t@b/",
        "https://S3cr3t/ with space",
    };
    static const unsigned flag_sets[] = {0, URL_HTTP_LOOPBACK_ONLY, URL_HTTP_ANY, URL_BASE};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (size_t j = 0; j < sizeof flag_sets / sizeof flag_sets[0]; j++) {
            struct err e = {{0}};
            if (check(texts[i], flag_sets[j], &e) == 0)
                continue;
            cr_assert_neq(e.msg[0], '\0', "no message for %s", texts[i]);
            cr_assert_null(strstr(e.msg, "S3cr3t"), "%s", e.msg);
            cr_assert_null(strstr(e.msg, "s3cr3t"), "%s", e.msg);
        }
}
