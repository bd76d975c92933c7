/* Absolute URLs: taking one apart, and the one rule that decides whether a
 * URL may be used.
 *
 * url_parse reads "scheme://[userinfo@]host[:port][/path][?query][#fragment]".
 * A URL may carry a secret (a token in its path, query or userinfo), so no
 * message written here quotes the URL or any part of it: messages name the
 * problem, and the caller decides what else to say. */
#ifndef WSRELAY_URL_H
#define WSRELAY_URL_H

#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>

#define URL_SCHEME_MAX 15
#define URL_HOST_MAX 255

struct url {
    char scheme[URL_SCHEME_MAX + 1]; /* lower case: "https" */
    char host[URL_HOST_MAX + 1];     /* lower case; an IPv6 address keeps its brackets: "[::1]" */
    unsigned port;                   /* 1 to 65535; 0 when not given */
    bool has_userinfo;               /* "user[:password]@" before the host */
    bool has_query;                  /* "?..." after the path */
    bool has_fragment;               /* "#..." */
    size_t path_start; /* offset of what follows the authority: the path, '?', '#' or the end */
};

/* Splits `text` into *out. Fails (-1, *out undefined) when it is not an
 * absolute URL with a host: no "scheme://", a space or control character
 * anywhere, more than one '@' before the host, a host that is not a name
 * (letters, digits, '-', '.', '_'), an IPv4 address of four numbers from 0 to
 * 255 or a bracketed IPv6 address, or a port that is not 1 to 65535. */
int url_parse(struct url *out, const char *text, struct err *e);

/* True for a host, as url_parse gives it, that always means this machine:
 * localhost, 127.0.0.0/8, [::1] (in any spelling) and [::ffff:127.x.y.z].
 * Names that merely resolve to a loopback address do not count. */
bool url_host_is_loopback(const char *host);

/* What url_check allows beyond https:// to any host. */
enum {
    URL_HTTP_LOOPBACK_ONLY = 1 << 0, /* http:// to a loopback host */
    URL_HTTP_ANY = 1 << 1,           /* http:// to any host (wins over LOOPBACK_ONLY) */
    URL_NO_USERINFO = 1 << 2,        /* refuse "user[:password]@" */
    URL_NO_QUERY = 1 << 3,           /* refuse "?..." */
    URL_NO_FRAGMENT = 1 << 4,        /* refuse "#..." */
    /* A base URL that paths are appended to (the platform's base_url). */
    URL_BASE = URL_HTTP_LOOPBACK_ONLY | URL_NO_USERINFO | URL_NO_QUERY | URL_NO_FRAGMENT,
};

/* url_check's failures; both are negative, so `< 0` catches either. */
#define URL_E_INVALID (-1) /* anything else that is wrong */
#define URL_E_HTTP (-2)    /* http:// to a host that is not loopback, and nothing else wrong */

/* The policy: `text` must parse, use https:// (or http:// as `flags` allow)
 * and pass the URL_NO_* flags. Returns 0, or URL_E_INVALID or URL_E_HTTP
 * with the reason in `e` (which never quotes the URL). URL_E_HTTP lets a
 * caller give its own advice for plain http. `out` (may be NULL) receives
 * the parts when the URL parses. */
int url_check(struct url *out, const char *text, unsigned flags, struct err *e);

#endif
