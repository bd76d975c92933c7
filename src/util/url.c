/* Taking absolute URLs apart, and the rule for which ones may be used. The
 * host rules follow what libcurl will connect to, and err towards "not
 * loopback": a host that could be read two ways is refused or counted as
 * remote, never as this machine. */
#include "util/url.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

static const char usage[] = "expected an absolute URL such as https://host[:port][/path]";

static bool is_alpha(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* An IPv6 address between brackets, `len` bytes including them. */
static bool is_ipv6_literal(const char *host, size_t len, struct in6_addr *addr)
{
    char inner[INET6_ADDRSTRLEN];
    if (len < 3 || host[0] != '[' || host[len - 1] != ']' || len - 2 >= sizeof inner)
        return false;
    memcpy(inner, host + 1, len - 2);
    inner[len - 2] = '\0';
    return inet_pton(AF_INET6, inner, addr) == 1;
}

/* Copies the host [start, end) in lower case, checking its form. */
static int parse_host(struct url *u, const char *start, const char *end, struct err *e)
{
    size_t len = (size_t)(end - start);
    if (!len)
        return err_set(e, "expected a host after the scheme's //");
    if (len > URL_HOST_MAX)
        return err_set(e, "the host name is longer than %d characters", URL_HOST_MAX);
    for (size_t i = 0; i < len; i++)
        u->host[i] = lower(start[i]);
    u->host[len] = '\0';
    if (u->host[0] == '[') {
        struct in6_addr addr;
        if (!is_ipv6_literal(u->host, len, &addr))
            return err_set(e, "expected an IPv6 address between [ and ]");
        return 0;
    }
    bool numeric = true;
    for (size_t i = 0; i < len; i++) {
        char ch = u->host[i];
        if (!is_alpha(ch) && !is_digit(ch) && ch != '-' && ch != '.' && ch != '_')
            return err_set(e, "expected a host name (letters, digits, '-', '.', '_'), an IPv4 "
                              "address or an [IPv6] address");
        numeric &= is_digit(ch) || ch == '.';
    }
    if (u->host[0] == '.' || strstr(u->host, ".."))
        return err_set(e, "the host name has an empty label");
    /* libcurl reads "127.1" or "0177.0.0.1" as addresses; only the plain
     * form is accepted, so that what is checked is what is connected to. */
    struct in_addr addr;
    if (numeric && inet_pton(AF_INET, u->host, &addr) != 1)
        return err_set(e, "expected an IPv4 address as four numbers from 0 to 255");
    return 0;
}

int url_parse(struct url *out, const char *text, struct err *e)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return err_set(e, "the URL is empty");
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return err_set(e, "the URL must not contain spaces or control characters");

    const char *p = text;
    if (!is_alpha(*p))
        return err_set(e, "%s", usage);
    while (is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    size_t scheme_len = (size_t)(p - text);
    if (strncmp(p, "://", 3) || scheme_len > URL_SCHEME_MAX)
        return err_set(e, "%s", usage);
    for (size_t i = 0; i < scheme_len; i++)
        out->scheme[i] = lower(text[i]);
    out->scheme[scheme_len] = '\0';
    p += 3;

    const char *authority = p, *end = p + strcspn(p, "/?#");
    const char *at = memchr(authority, '@', (size_t)(end - authority));
    if (at) {
        if (memchr(at + 1, '@', (size_t)(end - at - 1)))
            return err_set(e, "more than one '@' before the host; write an '@' in a user name "
                              "or password as %%40");
        out->has_userinfo = true;
        authority = at + 1;
    }
    const char *host_end;
    if (*authority == '[') {
        host_end = memchr(authority, ']', (size_t)(end - authority));
        if (!host_end)
            return err_set(e, "expected an IPv6 address between [ and ]");
        host_end++;
    } else {
        host_end = memchr(authority, ':', (size_t)(end - authority));
        if (!host_end)
            host_end = end;
    }
    if (parse_host(out, authority, host_end, e) < 0)
        return -1;
    if (host_end < end) {
        const char *q = host_end;
        unsigned long port = 0;
        int digits = 0;
        if (*q++ != ':')
            return err_set(e, "expected ':' and a port number, or the path, after the host");
        for (; q < end && is_digit(*q) && digits < 6; q++, digits++)
            port = port * 10 + (unsigned long)(*q - '0');
        if (!digits || q != end || port < 1 || port > 65535)
            return err_set(e, "expected a port number from 1 to 65535 after the host");
        out->port = (unsigned)port;
    }
    out->path_start = (size_t)(end - text);
    const char *hash = strchr(end, '#');
    const char *question = strchr(end, '?');
    out->has_fragment = hash != NULL;
    out->has_query = question && (!hash || question < hash);
    return 0;
}

bool url_host_is_loopback(const char *host)
{
    if (!host)
        return false;
    if (!strcasecmp(host, "localhost"))
        return true;
    if (host[0] == '[') {
        struct in6_addr a6;
        if (!is_ipv6_literal(host, strlen(host), &a6))
            return false;
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    }
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) != 1)
        return false;
    return ((const unsigned char *)&a4.s_addr)[0] == 127;
}

int url_check(struct url *out, const char *text, unsigned flags, struct err *e)
{
    struct url parsed;
    struct url *u = out ? out : &parsed;
    if (url_parse(u, text, e) < 0)
        return URL_E_INVALID;
    bool http = !strcmp(u->scheme, "http");
    bool http_ok = flags & (URL_HTTP_ANY | URL_HTTP_LOOPBACK_ONLY);
    if (strcmp(u->scheme, "https") && !(http && http_ok)) {
        if (flags & URL_HTTP_ANY)
            err_set(e, "expected a URL starting with https:// or http://");
        else if (flags & URL_HTTP_LOOPBACK_ONLY)
            err_set(e, "expected a URL starting with https:// (or http:// to this machine)");
        else
            err_set(e, "expected a URL starting with https://");
        return URL_E_INVALID;
    }
    if (u->has_userinfo && (flags & URL_NO_USERINFO)) {
        err_set(e, "the URL must not carry a user name or password");
        return URL_E_INVALID;
    }
    if (u->has_query && (flags & URL_NO_QUERY)) {
        err_set(e, "the URL must not have a query ('?')");
        return URL_E_INVALID;
    }
    if (u->has_fragment && (flags & URL_NO_FRAGMENT)) {
        err_set(e, "the URL must not have a fragment ('#')");
        return URL_E_INVALID;
    }
    if (http && !(flags & URL_HTTP_ANY) && !url_host_is_loopback(u->host)) {
        err_set(e, "http:// is only allowed to this machine (localhost, 127.0.0.0/8 or [::1]); "
                   "use https://");
        return URL_E_HTTP;
    }
    return 0;
}
