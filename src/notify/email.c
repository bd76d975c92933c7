/* The email receiver: one mail per message, handed to an SMTP server with
 * libESMTP over STARTTLS (our own OpenSSL context: the certificate must
 * chain to ca_file or the system store and match `host`), logging in with
 * AUTH PLAIN or LOGIN when a username is configured.
 *
 * A mail counts as sent only when the server accepted it for every
 * recipient. libESMTP is lenient where wsrelay must not be: after a failed
 * AUTH it carries on unauthenticated, and it would send the body whatever
 * happened before DATA. So this file watches the session (events, and the
 * server's replies through the protocol monitor) and feeds the body
 * through a callback that refuses, which makes libESMTP drop the
 * connection before the end of DATA, when TLS was required and is not up
 * or a login was configured and did not succeed. The password is handed to
 * libESMTP only over TLS (or to this machine), and never appears in a
 * message: server replies quoted in errors are redacted first. */
#include "notify/mime.h"
#include "notify/notify.h"
#include "util/buf.h"
#include "util/url.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

/* After openssl/ssl.h and auth-client.h: libesmtp.h declares
 * smtp_starttls_set_ctx and smtp_auth_set_context only when they came first. */
#include <auth-client.h>
#include <libesmtp.h>

/* Each step of the session has its own limit; the whole stays well under a
 * minute even against a server that answers as slowly as it may. */
#define CONNECT_TIMEOUT_S 10
static const struct {
    int which;
    long ms;
} timeouts[] = {
    {Timeout_GREETING, 10000}, /* the server's banner */
    {Timeout_ENVELOPE, 10000}, /* each reply to EHLO, STARTTLS, AUTH, MAIL, RCPT */
    {Timeout_DATA, 10000},     /* the reply to DATA */
    {Timeout_TRANSFER, 10000}, /* each write of the message */
    {Timeout_DATA2, 20000},    /* the reply after the message: the server may scan it */
};

#define REPLY_MAX 200 /* bytes of a server reply quoted in a message */

/* What one delivery learns while libESMTP runs the protocol. */
struct session {
    const struct receiver_conf *r;
    char server[300]; /* "host:port", for messages */
    bool loopback;    /* `host` always means this machine */
    bool connected;
    bool tls_sent;         /* STARTTLS was written */
    bool tls_up;           /* ... and the handshake and the certificate checks passed */
    bool no_starttls;      /* starttls: required, and the server offers none */
    char tls_problem[256]; /* what went wrong with TLS, when known */
    bool auth_sent;        /* an AUTH command was written */
    bool auth_ok;          /* ... and answered 2xx */
    bool auth_withheld;    /* credentials asked for on a connection that is not encrypted */
    char auth_reply[REPLY_MAX + 1];
    bool in_auth;                   /* the replies being read answer AUTH */
    char last_reply[REPLY_MAX + 1]; /* the last 4xx/5xx reply line, for context */
    char line[512];                 /* a reply line being read */
    size_t line_len;
    const char *message; /* the message, for the callback */
    bool message_given;
    char *secrets[4]; /* redacted from quoted replies; NULL-terminated */
};

static volatile sig_atomic_t alarms;

/* ---- helpers ---- */

static bool is_ipv4(const char *host)
{
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1;
}

static char *base64_of(const void *data, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

/* Copies a server reply into `out` (of REPLY_MAX + 1 bytes): printable
 * ASCII only (line breaks become spaces, other bytes '?'), trimmed, with
 * the password and its base64 forms replaced. */
static void quote_reply(char *out, const char *text, char *const *secrets)
{
    struct buf b;
    buf_init(&b, 0);
    for (const char *p = text ? text : ""; *p; p++)
        buf_append(&b, *p >= ' ' && *p < 0x7f ? p : *p == '\r' || *p == '\n' ? " " : "?", 1);
    for (char *const *secret = secrets; *secret; secret++) {
        size_t n = strlen(*secret);
        if (n < 4)
            continue;
        struct buf r;
        buf_init(&r, 0);
        const char *p = buf_str(&b);
        for (const char *hit; (hit = strstr(p, *secret)); p = hit + n) {
            buf_append(&r, p, (size_t)(hit - p));
            buf_puts(&r, "[redacted]");
        }
        buf_puts(&r, p);
        buf_free(&b);
        b = r;
    }
    const char *s = buf_str(&b);
    while (*s == ' ')
        s++;
    snprintf(out, REPLY_MAX + 1, "%s", s);
    for (size_t n = strlen(out); n && out[n - 1] == ' ';)
        out[--n] = '\0';
    buf_free(&b);
}

static void openssl_error(char *out, size_t size)
{
    unsigned long code = ERR_peek_last_error();
    if (code)
        ERR_error_string_n(code, out, size);
    else
        snprintf(out, size, "the TLS handshake failed");
    ERR_clear_error();
}

/* ---- what libESMTP reports ---- */

/* The first reason OpenSSL rejected the server's certificate. */
static int on_verify(int ok, X509_STORE_CTX *x)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct session *s = ssl ? SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)) : NULL;
    if (!ok && s && !s->tls_problem[0])
        snprintf(s->tls_problem, sizeof s->tls_problem,
                 "the server's certificate was refused: %s (at depth %d)",
                 X509_verify_cert_error_string(X509_STORE_CTX_get_error(x)),
                 X509_STORE_CTX_get_error_depth(x));
    return ok;
}

/* libESMTP creates the SSL object itself and sends no server name (SNI);
 * servers that host several names need it to pick their certificate. */
static void on_tls_info(const SSL *ssl, int where, int ret)
{
    (void)ret;
    struct session *s = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if ((where & SSL_CB_HANDSHAKE_START) && s && !is_ipv4(s->r->email.host))
        SSL_set_tlsext_host_name((SSL *)ssl, s->r->email.host);
}

static void tls_refused(struct session *s, int *ok, const char *why)
{
    *ok = 0;
    if (!s->tls_problem[0])
        snprintf(s->tls_problem, sizeof s->tls_problem, "%s", why);
}

/* The variadic arguments of each event are as libESMTP's smtp-tls.c and
 * protocol.c pass them. */
static void on_event(smtp_session_t session, int event, void *arg, ...)
{
    (void)session;
    struct session *s = arg;
    struct itimerval off = {{0, 0}, {0, 0}};
    va_list ap;
    va_start(ap, arg);
    switch (event) {
    case SMTP_EV_CONNECT:
        setitimer(ITIMER_REAL, &off, NULL); /* the connect timeout is over */
        s->connected = true;
        break;
    case SMTP_EV_STARTTLS_OK:
        s->tls_up = true;
        break;
    case SMTP_EV_EXTNA_STARTTLS:
        s->no_starttls = true;
        break;
    case SMTP_EV_INVALID_PEER_CERTIFICATE: { /* (long result, int *ok, SSL *) */
        long result = va_arg(ap, long);
        tls_refused(s, va_arg(ap, int *), X509_verify_cert_error_string(result));
        break;
    }
    case SMTP_EV_WRONG_PEER_CERTIFICATE: { /* (int *ok, char *name, SSL *) */
        /* libESMTP compares DNS names only, never an IP address. OpenSSL
         * has already checked the certificate against `host` (name or IP
         * address) as our context demands, so its verdict is the one that
         * counts. */
        int *ok = va_arg(ap, int *);
        (void)va_arg(ap, char *);
        *ok = SSL_get_verify_result(va_arg(ap, SSL *)) == X509_V_OK;
        if (!*ok)
            tls_refused(s, ok, "the server's certificate does not match the host name");
        break;
    }
    case SMTP_EV_NO_PEER_CERTIFICATE: /* (int *ok) */
        tls_refused(s, va_arg(ap, int *), "the server sent no certificate");
        break;
    case SMTP_EV_WEAK_CIPHER: /* (int bits, int *ok) */
        (void)va_arg(ap, int);
        tls_refused(s, va_arg(ap, int *), "the negotiated cipher is too weak");
        break;
    case SMTP_EV_NO_CLIENT_CERTIFICATE: /* (int *ok) */
        tls_refused(s, va_arg(ap, int *),
                    "libESMTP found a client certificate under ~/.authenticate without a "
                    "usable key");
        break;
    case SMTP_EV_UNUSABLE_CLIENT_CERTIFICATE: {
        int ignored;
        tls_refused(s, &ignored,
                    "libESMTP found a client certificate under ~/.authenticate that it cannot "
                    "use (check its permissions)");
        break;
    }
    default:
        break;
    }
    va_end(ap);
}

/* One complete reply line from the server. */
static void on_reply_line(struct session *s)
{
    const char *l = s->line;
    if (s->line_len < 3 || l[0] < '2' || l[0] > '5' || l[1] < '0' || l[1] > '9' || l[2] < '0' ||
        l[2] > '9' || l[3] == '-')
        return;
    int code = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
    if (code >= 400)
        quote_reply(s->last_reply, l, s->secrets);
    if (!s->in_auth || code == 334)
        return;
    s->in_auth = false;
    if (code < 300)
        s->auth_ok = true;
    else
        quote_reply(s->auth_reply, l, s->secrets);
}

/* The protocol as it crosses the wire (after TLS decryption). Only the
 * start of what is written is looked at (the AUTH and STARTTLS commands);
 * replies are read line by line. */
static void on_monitor(const char *buf, int len, int writing, void *arg)
{
    struct session *s = arg;
    if (writing == SMTP_CB_WRITING) {
        if (len >= 5 && !strncasecmp(buf, "AUTH ", 5))
            s->auth_sent = s->in_auth = true;
        if (len >= 8 && !strncasecmp(buf, "STARTTLS", 8))
            s->tls_sent = true;
        return;
    }
    if (writing != SMTP_CB_READING)
        return;
    for (int i = 0; i < len; i++) {
        if (buf[i] == '\n') {
            while (s->line_len && s->line[s->line_len - 1] == '\r')
                s->line_len--;
            s->line[s->line_len] = '\0';
            on_reply_line(s);
            s->line_len = 0;
        } else if (s->line_len + 1 < sizeof s->line) {
            s->line[s->line_len++] = buf[i];
        }
    }
}

/* Credentials only over TLS, or to this machine. */
static int on_interact(auth_client_request_t req, char **result, int fields, void *arg)
{
    struct session *s = arg;
    if (!s->tls_up && !s->loopback) {
        s->auth_withheld = true;
        return 0;
    }
    for (int i = 0; i < fields; i++) {
        if (req[i].flags & AUTH_USER)
            result[i] = s->r->email.username;
        else if (req[i].flags & AUTH_PASS)
            result[i] = s->r->email.password;
        else
            return 0;
    }
    return 1;
}

static bool may_send_body(const struct session *s)
{
    if (s->r->email.starttls == STARTTLS_REQUIRED && !s->tls_up)
        return false;
    return !s->r->email.username || s->auth_ok;
}

/* The message for DATA, in one piece; or, when the session is not what the
 * configuration demands, an error, on which libESMTP drops the connection
 * without ending DATA, so the server discards what it has. */
static const char *on_message(void **ctx, int *len, void *arg)
{
    (void)ctx;
    struct session *s = arg;
    if (!len) { /* rewind */
        s->message_given = false;
        return NULL;
    }
    if (!may_send_body(s)) {
        errno = EACCES;
        *len = 0;
        return NULL;
    }
    *len = s->message_given ? 0 : (int)strlen(s->message);
    s->message_given = true;
    return *len ? s->message : NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* ---- the verdict ---- */

static const char *class_of(int code)
{
    return code >= 400 && code < 500 ? " (temporary)" : "";
}

struct refusals {
    struct session *s;
    struct buf text;
    size_t refused, accepted;
};

static void on_recipient(smtp_recipient_t rcpt, const char *mailbox, void *arg)
{
    struct refusals *f = arg;
    const smtp_status_t *st = smtp_recipient_status(rcpt);
    if (!st || !st->code) /* never got as far as RCPT */
        return;
    if (st->code >= 200 && st->code < 300) {
        f->accepted++;
        return;
    }
    char reply[REPLY_MAX + 1];
    quote_reply(reply, st->text, f->s->secrets);
    buf_printf(&f->text, "%s<%s>: %d %s%s", f->refused ? "; " : "", mailbox, st->code, reply,
               class_of(st->code));
    f->refused++;
}

/* Turns what the session learnt into 0 (sent to everyone) or an error. */
static int verdict(struct session *s, smtp_message_t msg, int smtp_err, struct err *e)
{
    const struct receiver_conf *r = s->r;
    const smtp_status_t *ms = smtp_message_transfer_status(msg);
    const smtp_status_t *rp = smtp_reverse_path_status(msg);
    int code = ms ? ms->code : 0;
    char reply[REPLY_MAX + 1] = "", detail[256];
    struct refusals f = {.s = s};
    int rc = -1;
    buf_init(&f.text, 0);

    if (!s->connected) {
        char *text = smtp_strerror(smtp_err, detail, sizeof detail);
        if (alarms)
            err_set(e, "%s: cannot connect: no answer within %d s", s->server, CONNECT_TIMEOUT_S);
        else
            err_set(e, "%s: cannot connect: %s", s->server, text ? text : "unknown error");
        goto out;
    }
    if (s->tls_sent && !s->tls_up) {
        if (!s->tls_problem[0] && s->last_reply[0])
            snprintf(s->tls_problem, sizeof s->tls_problem, "%s", s->last_reply);
        if (!s->tls_problem[0])
            openssl_error(s->tls_problem, sizeof s->tls_problem);
        err_set(e, "%s: STARTTLS failed: %s; nothing was sent", s->server, s->tls_problem);
        goto out;
    }
    if (r->email.starttls == STARTTLS_REQUIRED && !s->tls_up) {
        err_set(e,
                "%s: the server does not offer STARTTLS, which starttls: required demands; "
                "nothing was sent",
                s->server);
        goto out;
    }
    if (r->email.username && !s->auth_ok) {
        if (s->auth_withheld)
            err_set(e,
                    "%s: the password was not sent because the connection is not encrypted "
                    "(the server offers no STARTTLS); nothing was sent",
                    s->server);
        else if (!s->auth_sent)
            err_set(e,
                    "%s: the server offers no login method wsrelay can use (PLAIN or "
                    "LOGIN); nothing was sent",
                    s->server);
        else
            err_set(e, "%s: login as %s refused: %s; nothing was sent", s->server,
                    r->email.username, s->auth_reply[0] ? s->auth_reply : "no reason given");
        goto out;
    }
    if (rp && rp->code && (rp->code < 200 || rp->code >= 300)) {
        quote_reply(reply, rp->text, s->secrets);
        err_set(e, "%s: sender refused: %d %s%s", s->server, rp->code, reply, class_of(rp->code));
        goto out;
    }
    smtp_enumerate_recipients(msg, on_recipient, &f);
    if (code >= 200 && code < 300 && f.refused) {
        err_set(e, "%s: recipient refused: %s (the message went to the %zu other%s)", s->server,
                buf_str(&f.text), f.accepted, f.accepted == 1 ? "" : "s");
        goto out;
    }
    if (f.refused && !f.accepted) {
        err_set(e, "%s: every recipient refused: %s", s->server, buf_str(&f.text));
        goto out;
    }
    if (code < 200 || code >= 300) {
        if (code) {
            quote_reply(reply, ms->text, s->secrets);
            err_set(e, "%s: message not accepted: %d %s%s", s->server, code, reply, class_of(code));
        } else {
            char *text = smtp_strerror(smtp_err, detail, sizeof detail);
            err_set(e, "%s: the session ended before the server accepted the message: %s%s%s",
                    s->server, text ? text : "unknown error",
                    s->last_reply[0] ? "; last reply: " : "", s->last_reply);
        }
        if (f.refused)
            err_prefix(e, "recipient refused: %s", buf_str(&f.text));
        goto out;
    }
    rc = 0;
out:
    buf_free(&f.text);
    return rc;
}

/* ---- the session ---- */

static SSL_CTX *tls_context(struct session *s, struct err *e)
{
    const struct receiver_conf *r = s->r;
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        openssl_error(why, sizeof why);
        err_set(e, "cannot set up TLS: %s", why);
        return NULL;
    }
    /* TLS 1.2 exactly. Over TLS 1.3 a server sends session tickets after
     * the handshake; OpenSSL 3 may then take the server's next reply off
     * the socket while SSL_read reports "want read", and libESMTP 1.1,
     * which polls the socket before reading again (it checks SSL_pending,
     * which does not count such records), waits for its timeout and gives
     * up. The tests hit this about one time in three. */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, on_verify);
    SSL_CTX_set_app_data(ctx, s);
    SSL_CTX_set_info_callback(ctx, on_tls_info);
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    bool ok = is_ipv4(r->email.host) ? X509_VERIFY_PARAM_set1_ip_asc(param, r->email.host)
                                     : X509_VERIFY_PARAM_set1_host(param, r->email.host, 0);
    if (ok)
        ok = r->email.ca_file ? SSL_CTX_load_verify_locations(ctx, r->email.ca_file, NULL)
                              : SSL_CTX_set_default_verify_paths(ctx);
    if (!ok) {
        openssl_error(why, sizeof why);
        err_set(e, "cannot load the CA certificates%s%s: %s", r->email.ca_file ? " from " : "",
                r->email.ca_file ? r->email.ca_file : "", why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Sends `message` from `sender` to the `n` addr-specs in `rcpts`. */
static int smtp_send(const struct receiver_conf *r, const char *sender, char *const *rcpts,
                     size_t n, const char *message, struct err *e)
{
    int rc = -1;
    struct session s = {.r = r, .message = message};
    smtp_session_t session = NULL;
    smtp_message_t msg;
    auth_context_t auth = NULL;
    SSL_CTX *ctx = NULL;
    char *plain_blob = NULL;
    struct sigaction ign = {.sa_handler = SIG_IGN}, wake = {.sa_handler = on_alarm};
    struct sigaction old_pipe, old_alarm;
    struct itimerval timer = {{CONNECT_TIMEOUT_S, 0}, {CONNECT_TIMEOUT_S, 0}};
    struct itimerval off = {{0, 0}, {0, 0}};

    snprintf(s.server, sizeof s.server, "%s:%ld", r->email.host, r->email.port);
    s.loopback = url_host_is_loopback(r->email.host);
    if (r->email.password) {
        size_t ul = strlen(r->email.username), pl = strlen(r->email.password);
        char *blob = xmalloc(ul + pl + 2); /* AUTH PLAIN's "\0user\0password" */
        blob[0] = '\0';
        memcpy(blob + 1, r->email.username, ul + 1);
        memcpy(blob + ul + 2, r->email.password, pl);
        s.secrets[0] = xstrdup(r->email.password);
        s.secrets[1] = base64_of(r->email.password, pl);
        plain_blob = base64_of(blob, ul + pl + 2);
        s.secrets[2] = plain_blob;
        free(blob);
    }

    if (!(session = smtp_create_session()) || !(msg = smtp_add_message(session)))
        xalloc_die();
    smtp_set_server(session, s.server);
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++)
        smtp_set_timeout(session, timeouts[i].which | Timeout_OVERRIDE_RFC2822_MINIMUM,
                         timeouts[i].ms);
    smtp_set_eventcb(session, on_event, &s);
    smtp_set_monitorcb(session, on_monitor, &s, 0);
    if (r->email.starttls == STARTTLS_OFF) {
        smtp_starttls_enable(session, Starttls_DISABLED);
    } else {
        if (!(ctx = tls_context(&s, e)))
            goto out;
        smtp_starttls_set_ctx(session, ctx); /* takes its own reference */
        smtp_starttls_enable(session, r->email.starttls == STARTTLS_REQUIRED ? Starttls_REQUIRED
                                                                             : Starttls_ENABLED);
    }
    if (r->email.username) {
        auth_client_init();
        if (!(auth = auth_create_context()))
            xalloc_die();
        auth_set_mechanism_flags(auth, AUTH_PLUGIN_PLAIN, 0);
        auth_set_interact_cb(auth, on_interact, &s);
        /* The mechanisms are plugins that libESMTP loads at run time. */
        if (!auth_set_mechanism(auth, "PLAIN") && !auth_set_mechanism(auth, "LOGIN")) {
            err_set(e,
                    "%s: libESMTP cannot load its PLAIN or LOGIN plugin (sasl-plain.so, "
                    "sasl-login.so; on Debian in package libesmtp6), so it cannot log in",
                    s.server);
            goto out;
        }
        smtp_auth_set_context(session, auth);
    }
    smtp_set_reverse_path(msg, sender);
    smtp_set_messagecb(msg, on_message, &s);
    for (size_t i = 0; i < n; i++)
        if (!smtp_add_recipient(msg, rcpts[i]))
            xalloc_die();

    /* A peer that closes early must not kill the run with SIGPIPE, and a
     * connect() that hangs is cut short by SIGALRM (no SA_RESTART): the
     * classic connect timeout, as libESMTP has none of its own. */
    sigemptyset(&ign.sa_mask);
    sigemptyset(&wake.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);
    sigaction(SIGALRM, &wake, &old_alarm);
    alarms = 0;
    struct itimerval old_timer;
    setitimer(ITIMER_REAL, &timer, &old_timer);
    smtp_start_session(session);
    int smtp_err = smtp_errno();
    setitimer(ITIMER_REAL, &off, NULL);
    setitimer(ITIMER_REAL, &old_timer, NULL); /* whatever timer was set before */
    sigaction(SIGALRM, &old_alarm, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);

    rc = verdict(&s, msg, smtp_err, e);
out:
    if (session)
        smtp_destroy_session(session);
    if (auth) {
        auth_destroy_context(auth);
        auth_client_exit();
    }
    SSL_CTX_free(ctx);
    ERR_clear_error();
    free(s.secrets[0]);
    free(s.secrets[1]);
    free(plain_blob);
    return rc;
}

/* ---- what the mail says ---- */

struct email_content {
    char *subject;
    char *text;
    char *html; /* NULL: text only */
};

/* Subject and bodies of the mail: the email-subject.txt, email.txt (or
 * the receiver's `template`) and email.html (or its `html_template`)
 * templates over the message's context. The subject is one line, trimmed.
 * Returns as notify_render does: -1 worth retrying, -2 a template to fix. */
static int email_render(struct email_content *out, const struct notify_env *env,
                        const struct receiver_conf *r, const struct notify_message *m,
                        struct err *e)
{
    int rc = -1;
    struct json_object *ctx = notify_context(r->name, m);
    struct buf subject, text, html;
    buf_init(&subject, 64 * 1024);
    buf_init(&text, 4 * 1024 * 1024);
    buf_init(&html, 4 * 1024 * 1024);
    if ((rc = notify_render(&subject, env, NULL, "email-subject.txt", ctx, e)) < 0 ||
        (rc = notify_render(&text, env, r->email.template, "email.txt", ctx, e)) < 0 ||
        (rc = notify_render(&html, env, r->email.html_template, "email.html", ctx, e)) < 0)
        goto out;
    char *line = buf_steal(&subject);
    line[strcspn(line, "\r\n")] = '\0';
    size_t start = strspn(line, " \t"), end = strlen(line);
    while (end > start && (line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    out->subject = xstrndup(line + start, end - start);
    free(line);
    out->text = buf_steal(&text);
    out->html = buf_steal(&html);
    rc = 0;
out:
    buf_free(&subject);
    buf_free(&text);
    buf_free(&html);
    json_object_put(ctx);
    return rc;
}

/* The Message-ID this mail follows up, or NULL. A recovery mail belongs
 * under the mail of the alarm it ends: when every event is a recovery of
 * one serial and kind that ends the alarm of unixtime R (`recovers`), that
 * alarm's mail had the id mime_message_id(r->name, serial, kind, R, 1,
 * host) when the alarm was alone in its mail, as an alarm usually is. */
static char *email_parent_id(const struct receiver_conf *r, const struct event *events, size_t n,
                             const char *host)
{
    const struct event *first = &events[0];
    for (size_t i = 0; i < n; i++) {
        const struct event *ev = &events[i];
        if (!ev->recovers || strcmp(ev->serial, first->serial) != 0 ||
            strcmp(ev->kind, first->kind) != 0)
            return NULL;
    }
    return mime_message_id(r->name, first->serial, first->kind, first->recovers, 1, host);
}

static void add_unique(char ***list, size_t *n, const char *addr)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcasecmp((*list)[i], addr))
            return;
    *list = xreallocarray(*list, *n + 1, sizeof **list);
    (*list)[(*n)++] = xstrdup(addr);
}

static int email_send(const struct notify_env *env, const struct receiver_conf *r,
                      const struct notify_message *nm, struct notify_result *res, struct err *e)
{
    const struct event *events = nm->events;
    size_t n = nm->n;
    int rc = -1;
    struct email_content c = {0};
    struct mime_address from = {0}, a;
    char *message = NULL, *id = NULL, *parent = NULL;
    char **rcpts = NULL;
    size_t n_rcpts = 0;

    if (mime_address_parse(&from, r->email.from, e) < 0) {
        err_prefix(e, "from");
        goto out;
    }
    for (size_t i = 0; i < r->email.n_to + r->email.n_cc; i++) {
        const char *text = i < r->email.n_to ? r->email.to[i] : r->email.cc[i - r->email.n_to];
        if (mime_address_parse(&a, text, e) < 0)
            goto out;
        add_unique(&rcpts, &n_rcpts, a.addr);
        mime_address_clear(&a);
    }
    /* The sender's domain, not this machine's name: the id stays the same
     * whichever machine sends or retries the mail. */
    const char *host = strchr(from.addr, '@') + 1;
    int rendered = email_render(&c, env, r, nm, e);
    if (rendered < 0) {
        res->permanent = rendered == -2; /* a template to fix, not a server to retry */
        goto out;
    }
    id = mime_message_id(r->name, events[0].serial, events[0].kind, events[0].unixtime, n, host);
    parent = email_parent_id(r, events, n, host);
    struct mime_mail m = {
        .from = r->email.from,
        .to = (const char *const *)r->email.to,
        .n_to = r->email.n_to,
        .cc = (const char *const *)r->email.cc,
        .n_cc = r->email.n_cc,
        .subject = c.subject,
        .text = c.text,
        .html = c.html,
        .date = (long long)time(NULL),
        .message_id = id,
        .in_reply_to = parent,
    };
    if (mime_compose(&message, &m, e) < 0)
        goto out;
    rc = smtp_send(r, from.addr, rcpts, n_rcpts, message, e);
    /* The answer is a line for people; a long one is cut. */
    const char *answer = rc == 0 ? "the server accepted the message for every recipient" : e->msg;
    size_t len = strlen(answer) < sizeof res->answer - 1 ? strlen(answer) : sizeof res->answer - 1;
    memcpy(res->answer, answer, len);
    res->answer[len] = '\0';
out:
    for (size_t i = 0; i < n_rcpts; i++)
        free(rcpts[i]);
    free(rcpts);
    mime_address_clear(&from);
    free(c.subject);
    free(c.text);
    free(c.html);
    free(message);
    free(id);
    free(parent);
    return rc;
}

const struct notifier notifier_email = {
    .type = RECEIVER_EMAIL,
    .name = "email",
    .send = email_send,
};
