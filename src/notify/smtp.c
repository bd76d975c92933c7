/* The SMTP session of the email receiver: one mail handed to an SMTP server
 * with libESMTP over STARTTLS (our own OpenSSL context: the certificate must
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
 * message: server replies quoted in errors are redacted first.
 *
 * The whole session ends by the receiver's `timeout`, whatever the server
 * does. libESMTP's own limits apply to one wait at a time and start again
 * with every line the server sends, so a server that drips a reply that
 * never ends ("250-" every few seconds) would hold a run until systemd
 * killed it, and the next run would send again what it had delivered.
 * Nothing inside the process can cut that wait short: libESMTP keeps no
 * clock of its own to shorten, sets the time of a wait only when a step
 * begins (not per line, so the protocol monitor cannot shrink it), and
 * polls again when a signal interrupts it. So the session runs in a child
 * process (util/timebox.h) that the run kills at the deadline; the child
 * reports over a pipe which step it is in, and at the end its verdict.
 * That covers every part of it alike, name lookup and TLS handshake
 * included, and the child's memory and sockets go with it. */
#include "notify/smtp.h"
#include "notify/notify.h"
#include "util/buf.h"
#include "util/redact.h"
#include "util/timebox.h"
#include "util/url.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
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

/* Each wait of the session has its own limit, which libESMTP starts again
 * with every line read; the receiver's `timeout` bounds the whole. */
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

/* Where a session stands: what it waits for. The values are the bytes the
 * session writes to the pipe when it gets there. */
enum step {
    STEP_CONNECT = 'c',
    STEP_GREETING = 'g',
    STEP_EHLO = 'e',
    STEP_STARTTLS = 's',
    STEP_TLS = 't',
    STEP_AUTH = 'a',
    STEP_MAIL = 'm',
    STEP_RCPT = 'r',
    STEP_DATA = 'd',
    STEP_BODY = 'b',
    STEP_FINAL = 'f',
    STEP_QUIT = 'q',
    STEP_OTHER = 'o',
};

/* The rest of what the session tells the waiting run over the pipe. */
#define TELL_LINE '-'     /* a line of a reply that goes on */
#define TELL_REPLY '.'    /* a reply ended */
#define TELL_ACCEPTED '+' /* the server took the message for every recipient */
#define TELL_VERDICT '='  /* last: '0' (sent) or '1', then the error message */

static const struct {
    enum step step;
    const char *doing; /* for "... limit, DOING" */
    const char *reply; /* for "REPLY 421 ..." */
    int which;         /* the libESMTP limit in force during it (Timeout_*); -1: none */
    bool sent;         /* the message may have reached the server */
} steps[] = {
    {STEP_CONNECT, "while connecting", "the answer was", -1, false},
    {STEP_GREETING, "waiting for the greeting", "the greeting was", Timeout_GREETING, false},
    /* libESMTP keeps the greeting's limit until MAIL FROM. */
    {STEP_EHLO, "waiting for the reply to EHLO", "the reply to EHLO was", Timeout_GREETING, false},
    {STEP_STARTTLS, "waiting for the reply to STARTTLS", "the reply to STARTTLS was",
     Timeout_GREETING, false},
    {STEP_TLS, "during the TLS handshake", "the answer was", Timeout_GREETING, false},
    {STEP_AUTH, "waiting for the reply to AUTH", "the reply to AUTH was", Timeout_GREETING, false},
    {STEP_MAIL, "waiting for the reply to MAIL FROM", "the reply to MAIL FROM was",
     Timeout_ENVELOPE, false},
    {STEP_RCPT, "waiting for the reply to RCPT TO", "the reply to RCPT TO was", Timeout_ENVELOPE,
     false},
    {STEP_DATA, "waiting for the reply to DATA", "the reply to DATA was", Timeout_DATA, false},
    {STEP_BODY, "while sending the message", "the answer was", Timeout_TRANSFER, true},
    {STEP_FINAL, "waiting for the reply to the end of the message",
     "the reply to the end of the message was", Timeout_DATA2, true},
    {STEP_QUIT, "waiting for the reply to QUIT", "the reply to QUIT was", Timeout_DATA2, true},
    {STEP_OTHER, "waiting for a reply", "the last reply was", Timeout_ENVELOPE, true},
};

#define PENDING_MAX 64 /* commands sent and not answered yet, kept in order */

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
    enum step last_reply_to;        /* ... and what it answered */
    bool ended_refused;             /* the last reply of all was that one */
    char line[512];                 /* a reply line being read */
    size_t line_len;
    const char *message; /* the message, for the callback */
    bool message_given;
    bool message_ended;     /* ... all of it */
    struct redact *secrets; /* redacted from quoted replies */
    smtp_message_t msg;
    int report_fd;                  /* the pipe to the waiting run */
    enum step pending[PENDING_MAX]; /* what each command sent and not answered was */
    size_t n_pending;
    enum step idle;    /* the step when no reply is awaited */
    enum step told;    /* the last step reported */
    long long io_ms;   /* when a byte last crossed, to tell a limit reached from a drop */
    bool writing_line; /* the last write ended inside a command line */
};

static volatile sig_atomic_t alarms;

/* ---- helpers ---- */

static bool is_ipv4(const char *host)
{
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1;
}

/* Copies a server reply into `out` (of REPLY_MAX + 1 bytes): printable
 * ASCII only (line breaks become spaces, other bytes '?'), trimmed, with
 * the password, its base64 forms and any part of them (util/redact.h)
 * replaced. */
static void quote_reply(char *out, const char *text, const struct redact *secrets)
{
    struct buf b;
    buf_init(&b, 0);
    for (const char *p = text ? text : ""; *p; p++)
        buf_append(&b, *p >= ' ' && *p < 0x7f ? p : *p == '\r' || *p == '\n' ? " " : "?", 1);
    char *clean = redact_text(secrets, buf_str(&b));
    const char *s = clean;
    while (*s == ' ')
        s++;
    snprintf(out, REPLY_MAX + 1, "%s", s);
    for (size_t n = strlen(out); n && out[n - 1] == ' ';)
        out[--n] = '\0';
    free(clean);
    buf_free(&b);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t step_index(enum step step)
{
    size_t i = 0;
    while (i + 1 < sizeof steps / sizeof steps[0] && steps[i].step != step)
        i++;
    return i;
}

/* libESMTP's limit on one wait during `step`, in ms; 0 when none. */
static long step_limit_ms(enum step step)
{
    int which = steps[step_index(step)].which;
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++)
        if (timeouts[i].which == which)
            return timeouts[i].ms;
    return 0;
}

/* ---- what the session tells the run ---- */

static void tell(struct session *s, char what)
{
    timebox_tell(s->report_fd, &what, 1); /* a run that is gone reads nothing anyway */
}

/* Tells the step the session is in now, when it changed. */
static void tell_step(struct session *s)
{
    enum step now = s->n_pending ? s->pending[0] : s->idle;
    if (now != s->told)
        tell(s, (char)(s->told = now));
}

static void await(struct session *s, enum step step)
{
    if (s->n_pending < PENDING_MAX)
        s->pending[s->n_pending++] = step;
    tell_step(s);
}

/* A reply with `code` came: the oldest command waiting has its answer.
 * Returns what that command was. */
static enum step answered(struct session *s, int code)
{
    if (!s->n_pending)
        return s->idle;
    enum step step = s->pending[0];
    memmove(s->pending, s->pending + 1, --s->n_pending * sizeof s->pending[0]);
    /* What comes next when nothing else is awaited. */
    s->idle = step == STEP_STARTTLS && code == 220 ? STEP_TLS
              : step == STEP_DATA && code == 354   ? STEP_BODY
                                                   : step;
    return step;
}

static void count_refused(smtp_recipient_t rcpt, const char *mailbox, void *arg)
{
    (void)mailbox;
    const smtp_status_t *st = smtp_recipient_status(rcpt);
    if (!st || st->code < 200 || st->code >= 300)
        ++*(size_t *)arg;
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
        s->io_ms = now_ms();
        await(s, STEP_GREETING);
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
        l[2] > '9')
        return;
    if (l[3] == '-') {
        tell(s, TELL_LINE);
        return;
    }
    int code = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
    enum step step = answered(s, code);
    tell(s, TELL_REPLY);
    if (step == STEP_FINAL && code >= 200 && code < 300) {
        /* Said now, as it happens: if the session is cut short later
         * (QUIT unanswered), the mail has still arrived. */
        size_t refused = 0;
        smtp_enumerate_recipients(s->msg, count_refused, &refused);
        if (!refused)
            tell(s, TELL_ACCEPTED);
    }
    tell_step(s);
    s->ended_refused = code >= 400;
    if (code >= 400) {
        quote_reply(s->last_reply, l, s->secrets);
        s->last_reply_to = step;
    }
    if (!s->in_auth || code == 334)
        return;
    s->in_auth = false;
    if (code < 300)
        s->auth_ok = true;
    else
        quote_reply(s->auth_reply, l, s->secrets);
}

/* What a command line written to the server is; every line gets a reply. */
static enum step command_of(struct session *s, const char *line, size_t len)
{
    static const struct {
        const char *verb;
        enum step step;
    } verbs[] = {
        {"EHLO ", STEP_EHLO}, {"HELO ", STEP_EHLO},     {"STARTTLS", STEP_STARTTLS},
        {"AUTH ", STEP_AUTH}, {"MAIL FROM", STEP_MAIL}, {"RCPT TO", STEP_RCPT},
        {"DATA", STEP_DATA},  {"QUIT", STEP_QUIT},
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        size_t n = strlen(verbs[i].verb);
        if (len >= n && !strncasecmp(line, verbs[i].verb, n))
            return verbs[i].step;
    }
    return s->in_auth ? STEP_AUTH : STEP_OTHER; /* a line of a login dialogue */
}

/* The protocol as it crosses the wire (after TLS decryption; the message
 * itself is not shown). Commands are written in batches with PIPELINING:
 * each line counts. Replies are read line by line. */
static void on_monitor(const char *buf, int len, int writing, void *arg)
{
    struct session *s = arg;
    if (writing == SMTP_CB_WRITING || writing == SMTP_CB_READING)
        s->io_ms = now_ms();
    if (writing == SMTP_CB_WRITING) {
        for (int i = 0; i < len;) {
            int end = i;
            while (end < len && buf[end] != '\n')
                end++;
            if (!s->writing_line) {
                enum step step = command_of(s, buf + i, (size_t)(end - i));
                if (step == STEP_AUTH)
                    s->auth_sent = s->in_auth = true;
                if (step == STEP_STARTTLS)
                    s->tls_sent = true;
                await(s, step);
            }
            s->writing_line = end == len; /* a line that a full buffer cut */
            i = end + 1;
        }
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
        s->message_given = s->message_ended = false;
        return NULL;
    }
    if (!may_send_body(s)) {
        errno = EACCES;
        *len = 0;
        return NULL;
    }
    s->io_ms = now_ms();
    *len = s->message_given ? 0 : (int)strlen(s->message);
    if (s->message_given && !s->message_ended) {
        s->message_ended = true;
        await(s, STEP_FINAL); /* libESMTP ends DATA now and waits for the verdict */
    }
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
    /* Before the 2xx check: a lenient server answers the empty DATA that
     * libESMTP sends when no recipient is left with 250. */
    if (f.refused && !f.accepted) {
        err_set(e, "%s: every recipient refused: %s", s->server, buf_str(&f.text));
        goto out;
    }
    if (code >= 200 && code < 300 && f.refused) {
        err_set(e, "%s: recipient refused: %s (the message went to the %zu other%s)", s->server,
                buf_str(&f.text), f.accepted, f.accepted == 1 ? "" : "s");
        goto out;
    }
    if (code < 200 || code >= 300) {
        if (code) {
            quote_reply(reply, ms->text, s->secrets);
            err_set(e, "%s: message not accepted: %d %s%s", s->server, code, reply, class_of(code));
        } else if (s->ended_refused) { /* the server's last word says why */
            err_set(e, "%s: the session ended before the server accepted the message: %s %s",
                    s->server, steps[step_index(s->last_reply_to)].reply, s->last_reply);
        } else {
            /* libESMTP says "dropped" whether the server closed the
             * connection or a wait reached its limit; the clock tells. */
            enum step step = s->n_pending ? s->pending[0] : s->idle;
            long limit = step_limit_ms(step);
            if (!smtp_strerror(smtp_err, detail, sizeof detail))
                snprintf(detail, sizeof detail, "unknown error");
            if (limit && now_ms() - s->io_ms >= limit - 250)
                snprintf(detail, sizeof detail, "no complete answer within %ld s, %s", limit / 1000,
                         steps[step_index(step)].doing);
            else
                snprintf(detail + strlen(detail), sizeof detail - strlen(detail), " (%s)",
                         steps[step_index(step)].doing);
            err_set(e, "%s: the session ended before the server accepted the message: %s",
                    s->server, detail);
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

/* The SMTP session of `j`, telling its steps to `report_fd`; in the child
 * process of smtp_send, which owns its signal handlers and timer. */
static int smtp_session(const struct smtp_job *j, int report_fd, struct err *e)
{
    const struct receiver_conf *r = j->r;
    int rc = -1;
    struct session s = {.r = r,
                        .message = j->message,
                        .report_fd = report_fd,
                        .idle = STEP_CONNECT,
                        .told = STEP_CONNECT};
    smtp_session_t session = NULL;
    smtp_message_t msg;
    auth_context_t auth = NULL;
    SSL_CTX *ctx = NULL;
    struct sigaction ign = {.sa_handler = SIG_IGN}, wake = {.sa_handler = on_alarm};
    struct itimerval timer = {{CONNECT_TIMEOUT_S, 0}, {CONNECT_TIMEOUT_S, 0}};
    struct itimerval off = {{0, 0}, {0, 0}};

    snprintf(s.server, sizeof s.server, "%s:%ld", r->email.host, r->email.port);
    s.loopback = url_host_is_loopback(r->email.host);
    s.secrets = redact_new();
    notify_add_secrets(s.secrets, r);

    if (!(session = smtp_create_session()) || !(msg = smtp_add_message(session)))
        xalloc_die();
    s.msg = msg;
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
    smtp_set_reverse_path(msg, j->sender);
    smtp_set_messagecb(msg, on_message, &s);
    for (size_t i = 0; i < j->n; i++)
        if (!smtp_add_recipient(msg, j->rcpts[i]))
            xalloc_die();

    /* A peer that closes early must not end the session with SIGPIPE, and
     * a connect() that hangs is cut short by SIGALRM (no SA_RESTART): the
     * classic connect timeout, as libESMTP has none of its own. This
     * process is the session's alone, so nothing is restored after. */
    sigemptyset(&ign.sa_mask);
    sigemptyset(&wake.sa_mask);
    sigaction(SIGPIPE, &ign, NULL);
    sigaction(SIGALRM, &wake, NULL);
    alarms = 0;
    tell(&s, STEP_CONNECT);
    setitimer(ITIMER_REAL, &timer, NULL);
    smtp_start_session(session);
    int smtp_err = smtp_errno();
    setitimer(ITIMER_REAL, &off, NULL);

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
    redact_free(s.secrets);
    return rc;
}

/* The child's work: the session, then its verdict on the pipe. */
static int session_work(int fd, void *arg)
{
    struct err e;
    err_clear(&e);
    int rc = smtp_session(arg, fd, &e);
    char head[2] = {TELL_VERDICT, rc == 0 ? '0' : '1'};
    timebox_tell(fd, head, sizeof head);
    if (rc < 0)
        timebox_tell(fd, e.msg, strlen(e.msg));
    return rc;
}

/* What the run has heard from the session so far. */
struct hearing {
    enum step step;
    unsigned long lines; /* of the reply awaited */
    bool accepted;       /* the server took the message for every recipient */
    int reading;         /* 0: steps; 1: the verdict's first byte is next; 2: its message */
    bool sent;           /* the verdict: sent */
    char msg[ERR_MAX];   /* ... or why not */
    size_t msg_len;
};

static void on_heard(const char *data, size_t len, void *arg)
{
    struct hearing *h = arg;
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (h->reading == 2) {
            if (h->msg_len + 1 < sizeof h->msg)
                h->msg[h->msg_len++] = c;
        } else if (h->reading == 1) {
            h->sent = c == '0';
            h->reading = 2;
        } else if (c == TELL_VERDICT) {
            h->reading = 1;
        } else if (c == TELL_LINE) {
            h->lines++;
        } else if (c == TELL_REPLY) {
            h->lines = 0;
        } else if (c == TELL_ACCEPTED) {
            h->accepted = true;
        } else {
            h->step = (enum step)c;
            h->lines = 0;
        }
    }
}

int smtp_send(const struct smtp_job *j, struct err *e)
{
    const struct receiver_conf *r = j->r;
    struct hearing h = {.step = STEP_CONNECT};
    struct timebox_report tb;
    char server[300];
    snprintf(server, sizeof server, "%s:%ld", r->email.host, r->email.port);
    if (timebox_run(&tb, r->timeout * 1000LL, session_work, (void *)j, on_heard, &h, e) < 0)
        return err_prefix(e, "%s: cannot start the SMTP session", server);
    if (h.reading == 2) /* the session ended by itself, perhaps just in time */
        return h.sent ? 0 : err_set(e, "%s", h.msg);
    if (h.accepted) /* cut short after the server had taken the mail: it is delivered */
        return 0;
    size_t i = step_index(h.step);
    char lines[96] = "";
    if (h.lines)
        snprintf(lines, sizeof lines, ", of which %lu line%s came but never the last", h.lines,
                 h.lines == 1 ? "" : "s");
    const char *outcome =
        steps[i].sent ? "the server did not confirm the message" : "nothing was sent";
    if (tb.end == TIMEBOX_TIMED_OUT)
        return err_set(e,
                       "%s: the SMTP session took longer than its %ld s limit (the receiver's "
                       "timeout), %s%s; %s",
                       server, r->timeout, steps[i].doing, lines, outcome);
    return err_set(e, "%s: the SMTP session ended without a verdict (%s %d), %s; %s", server,
                   tb.end == TIMEBOX_DIED ? "signal" : "exit status", tb.status, steps[i].doing,
                   outcome);
}
