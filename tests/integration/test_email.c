/* The email receiver end to end: `wsrelay run` (the real binary) polls the
 * simulator and mails a real SMTP server on 127.0.0.1 (aiosmtpd) with
 * STARTTLS and AUTH, certificates made for the test by a throwaway CA.
 * What arrived is read back with Python's email package, an independent
 * decoder of what wsrelay wrote. */
#include "incident.h"
#include "notify/notify.h"
#include "proc.h"
#include "relay.h"
#include "smtpd.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define DEVICE "超低温フリーザー 3号機 (−80℃) 検体保管室 B-204"
#define EVENT_ID "5214000A/1794999000/ch1"
#define MESSAGE_ID "<wsrelay.mail.5214000A.ch1.1794999000@example.org>"
#define USER "relay@example.org"
#define PASSWORD "s3cret-Pa55word"
#define WRONG_PASSWORD "wr0ng-Pa55word"

static struct relay R;
static struct smtpd S, S2;
static struct test_ca CA;
static char *server_cert, *server_key;

static void setup(void)
{
    relay_start_world(&R, "freezer-ja");
    test_ca_make(&CA, R.dir, "ca");
    test_cert_make(&server_cert, &server_key, &CA, R.dir, "server", "DNS:localhost,IP:127.0.0.1");
    char *pass = xasprintf("%s/smtp.pass", R.dir);
    write_file(pass, PASSWORD "\n");
    chmod(pass, 0600);
    free(pass);
}

static void teardown(void)
{
    smtpd_stop(&S);
    smtpd_stop(&S2);
    relay_stop(&R);
    test_ca_free(&CA);
    free(server_cert);
    free(server_key);
}

TestSuite(email, .init = setup, .fini = teardown, .timeout = 120);

/* The server with STARTTLS (required) and AUTH for USER:PASSWORD. */
static void start_secure_server(struct smtpd_options o)
{
    o.tls_cert = server_cert;
    o.tls_key = server_key;
    o.require_starttls = true;
    o.auth = USER ":" PASSWORD;
    smtpd_start(&S, R.dir, &o);
}

/* One email receiver "mail" on the server; `to` and `extra` are YAML
 * lines of the email mapping (indented six spaces). */
static void use_email(const char *host, const char *to, const char *extra)
{
    char *yaml = xasprintf("  - name: mail\n"
                           "    email:\n"
                           "      host: %s\n"
                           "      port: %d\n"
                           "      from: \"wsrelay <relay@example.org>\"\n"
                           "%s%s",
                           host, S.port, to, extra);
    relay_config(&R, NULL, yaml);
    free(yaml);
}

static const char to_oncall[] = "      to: \"オンコール当番 <oncall@example.org>\"\n";
static const char secure[] = "      ca_file: ca.pem\n"
                             "      username: " USER "\n"
                             "      password_file: smtp.pass\n";

static const char *member(struct json_object *obj, const char *key)
{
    struct json_object *v;
    cr_assert(json_object_object_get_ex(obj, key, &v), "no '%s' in %s", key,
              json_object_to_json_string(obj));
    return json_object_get_string(v);
}

static size_t header_count(struct json_object *mail, const char *name)
{
    struct json_object *headers, *list;
    cr_assert(json_object_object_get_ex(mail, "headers", &headers));
    return json_object_object_get_ex(headers, name, &list) ? json_object_array_length(list) : 0;
}

static const char *header(struct json_object *mail, const char *name)
{
    struct json_object *headers, *list;
    cr_assert(json_object_object_get_ex(mail, "headers", &headers));
    cr_assert(json_object_object_get_ex(headers, name, &list), "no %s header", name);
    return json_object_get_string(json_object_array_get_idx(list, 0));
}

/* Nothing arrived, and the server never saw a message's envelope. */
static void expect_nothing_sent(void)
{
    cr_assert_eq(smtpd_count(&S), 0, "a message arrived");
    char *log = smtpd_log(&S);
    cr_assert_null(strstr(log, "DATA"), "server log:\n%s", log);
    free(log);
}

/* The event is still queued for the receiver (in the state's outbox). */
static void expect_still_queued(void)
{
    char *state = read_file_str(R.state_path);
    cr_assert_not_null(state);
    const char *outbox = strstr(state, "\"outbox\"");
    cr_assert_not_null(outbox, "no outbox in the state:\n%s", state);
    cr_assert_not_null(strstr(outbox, EVENT_ID), "the event left the outbox:\n%s", state);
    free(state);
}

static void deliver_with(const char *mech)
{
    start_secure_server((struct smtpd_options){.auth_mech = mech});
    use_email("127.0.0.1", to_oncall, secure);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 0, "stderr:\n%s", err);
    free(err);
    cr_assert_eq(smtpd_count(&S), 1);

    struct json_object *mail = smtpd_mail(&S, 0);
    cr_assert_str_eq(member(mail, "subject"), "[ALARM] " DEVICE ": CH1 上限値警報 -70.2℃");
    cr_assert(json_object_get_boolean(json_object_object_get(mail, "tls")));
    cr_assert(json_object_get_boolean(json_object_object_get(mail, "authenticated")));
    cr_assert_str_eq(member(mail, "mail_from"), USER);
    cr_assert_str_eq(json_object_to_json_string(json_object_object_get(mail, "rcpt_tos")),
                     "[ \"oncall@example.org\" ]");
    cr_assert_str_eq(json_object_to_json_string(json_object_object_get(mail, "defects")), "[ ]");
    static const char *const once[] = {"date",       "from",         "to",          "subject",
                                       "message-id", "mime-version", "content-type"};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++)
        cr_assert_eq(header_count(mail, once[i]), 1, "%s: %zu times", once[i],
                     header_count(mail, once[i]));
    cr_assert_str_eq(header(mail, "message-id"), MESSAGE_ID);
    cr_assert_str_eq(header(mail, "to"), "オンコール当番 <oncall@example.org>");
    cr_assert_str_eq(header(mail, "from"), "wsrelay <relay@example.org>");
    cr_assert_str_eq(member(mail, "content_type"), "multipart/alternative");
    struct json_object *parts = json_object_object_get(mail, "parts");
    cr_assert_eq(json_object_array_length(parts), 2);
    struct json_object *part = json_object_array_get_idx(parts, 0);
    cr_assert_str_eq(member(part, "charset"), "utf-8");
    cr_assert_str_eq(member(part, "cte"), "quoted-printable");
    const char *body = member(part, "body");
    cr_assert_not_null(strstr(body, "[ALARM] " DEVICE "\nCH1 上限値警報 -70.2℃\n"), "%s", body);
    cr_assert_not_null(strstr(body, "value -70.2℃"), "%s", body);
    const char *html = member(json_object_array_get_idx(parts, 1), "body");
    cr_assert_not_null(strstr(html, DEVICE), "%s", html);
    json_object_put(mail);

    char *log = smtpd_log(&S);
    char *auth_ok = xasprintf("AUTH %s ok", mech);
    cr_assert_not_null(strstr(log, auth_ok), "server log:\n%s", log);
    free(auth_ok);
    free(log);

    /* Delivered means delivered: later runs send nothing again. */
    for (int i = 1; i < 4; i++)
        cr_assert_eq(relay_run_at(&R, T0 + i * 300, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 1);
}

Test(email, starttls_and_auth_plain_deliver_once_and_the_subject_decodes)
{
    deliver_with("PLAIN");
}

Test(email, starttls_and_auth_login_deliver_once)
{
    deliver_with("LOGIN");
}

Test(email, a_host_name_is_verified_and_sent_as_sni)
{
    start_secure_server((struct smtpd_options){0});
    use_email("localhost", to_oncall, secure);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 0, "stderr:\n%s", err);
    free(err);
    cr_assert_eq(smtpd_count(&S), 1);
    char *log = smtpd_log(&S);
    cr_assert_not_null(strstr(log, "SNI localhost"), "server log:\n%s", log);
    free(log);
}

Test(email, a_certificate_from_another_ca_fails_and_the_event_is_kept)
{
    struct test_ca other;
    test_ca_make(&other, R.dir, "other-ca");
    test_ca_free(&other);
    start_secure_server((struct smtpd_options){0});
    use_email("127.0.0.1", to_oncall,
              "      ca_file: other-ca.pem\n"
              "      username: " USER "\n"
              "      password_file: smtp.pass\n");
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    char *server = xasprintf("127.0.0.1:%d: STARTTLS failed: the server's certificate was "
                             "refused",
                             S.port);
    cr_assert_not_null(strstr(err, server), "stderr:\n%s", err);
    free(server);
    free(err);
    expect_nothing_sent();
    char *log = smtpd_log(&S);
    cr_assert_null(strstr(log, "AUTH"), "credentials sent over a bad TLS: %s", log);
    free(log);
    expect_still_queued();

    /* With the right CA, the kept event goes out after the back-off. */
    use_email("127.0.0.1", to_oncall, secure);
    cr_assert_eq(relay_run_at(&R, T0 + 60, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 1);
}

Test(email, a_certificate_for_another_host_name_fails)
{
    char *other_cert, *other_key;
    test_cert_make(&other_cert, &other_key, &CA, R.dir, "other", "DNS:mail.example.net");
    start_secure_server((struct smtpd_options){0});
    smtpd_stop(&S);
    struct smtpd_options o = {.tls_cert = other_cert,
                              .tls_key = other_key,
                              .require_starttls = true,
                              .auth = USER ":" PASSWORD};
    smtpd_start(&S, R.dir, &o);
    use_email("127.0.0.1", to_oncall, secure);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert_not_null(strstr(err, "IP address mismatch"), "stderr:\n%s", err);
    free(err);
    expect_nothing_sent();
    free(other_cert);
    free(other_key);
}

Test(email, starttls_required_and_not_offered_fails_before_auth_or_data)
{
    smtpd_start(&S, R.dir, NULL);
    use_email("127.0.0.1", to_oncall, secure);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    char *want = xasprintf("127.0.0.1:%d: the server does not offer STARTTLS", S.port);
    cr_assert_not_null(strstr(err, want), "stderr:\n%s", err);
    free(want);
    free(err);
    char *log = smtpd_log(&S);
    cr_assert_not_null(strstr(log, "EHLO"), "server log:\n%s", log);
    cr_assert_null(strstr(log, "MAIL"), "server log:\n%s", log);
    free(log);
    expect_nothing_sent();
    expect_still_queued();
}

Test(email, opportunistic_starttls_sends_in_the_clear_when_not_offered)
{
    smtpd_start(&S, R.dir, NULL);
    use_email("127.0.0.1", to_oncall, "      starttls: opportunistic\n");
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 1);
    struct json_object *mail = smtpd_mail(&S, 0);
    cr_assert_not(json_object_get_boolean(json_object_object_get(mail, "tls")));
    json_object_put(mail);
}

Test(email, a_temporary_failure_is_delivered_once_after_the_backoff)
{
    start_secure_server(
        (struct smtpd_options){.fail_first = 1, .fail_reply = "451 4.3.0 try again"});
    use_email("127.0.0.1", to_oncall, secure);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert_not_null(strstr(err, "451 4.3.0 try again (temporary)"), "stderr:\n%s", err);
    free(err);
    cr_assert_eq(smtpd_count(&S), 0);
    cr_assert_eq(smtpd_refused(&S), 1);
    expect_still_queued();

    cr_assert_eq(relay_run_at(&R, T0 + 30, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 0, "retried before the back-off");
    cr_assert_eq(relay_run_at(&R, T0 + 60, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 1);
    for (int i = 1; i < 4; i++)
        cr_assert_eq(relay_run_at(&R, T0 + 60 + i * 300, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 1, "delivered exactly once");

    /* The retry is the same mail: same Message-ID. */
    struct json_object *mail = smtpd_mail(&S, 0);
    cr_assert_str_eq(header(mail, "message-id"), MESSAGE_ID);
    json_object_put(mail);
    char *first = smtpd_refused_raw(&S, 0);
    cr_assert_not_null(strstr(first, "Message-ID: " MESSAGE_ID "\r\n"), "%s", first);
    free(first);
}

Test(email, a_refused_recipient_fails_the_run_and_is_named)
{
    start_secure_server((struct smtpd_options){.refuse = "nobody@example.org"});
    use_email("127.0.0.1",
              "      to: [oncall@example.org, \"Nobody <nobody@example.org>\"]\n"
              "      cc: lab@example.org\n",
              secure);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert_not_null(strstr(err, "recipient refused: <nobody@example.org>: 550 5.1.1 no such "
                                   "user (the message went to the 2 others)"),
                       "stderr:\n%s", err);
    free(err);
    cr_assert_eq(smtpd_count(&S), 1, "the others still get the alarm");
    struct json_object *mail = smtpd_mail(&S, 0);
    cr_assert_str_eq(json_object_to_json_string(json_object_object_get(mail, "rcpt_tos")),
                     "[ \"oncall@example.org\", \"lab@example.org\" ]");
    cr_assert_str_eq(header(mail, "cc"), "lab@example.org");
    json_object_put(mail);
    expect_still_queued();
}

/* No form of the password is in `text`, nor any 8 characters in a row of
 * one: a part of a password gives most of it away. */
static void expect_no_password(const char *text, const char *where)
{
    static const char *const forms[] = {
        WRONG_PASSWORD, "d3IwbmctUGE1NXdvcmQ",          /* base64(WRONG_PASSWORD) */
        "AHJlbGF5QGV4YW1wbGUub3JnAHdyMG5nLVBhNTV3b3Jk", /* AUTH PLAIN's "\0USER\0PASS" */
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        for (size_t k = 0; k + 8 <= strlen(forms[i]); k++) {
            char run[9];
            memcpy(run, forms[i] + k, 8);
            run[8] = '\0';
            cr_assert_null(strstr(text, run), "%s holds '%s' of a form of the password:\n%s", where,
                           run, text);
        }
    }
}

/* `wsrelay -c CONFIG status --now NOW [--json]`'s stdout and stderr. */
static char *status_output(bool json)
{
    char now[32];
    snprintf(now, sizeof now, "%lld", T0 + 10);
    char *argv[] = {(char *)WSRELAY_BIN,
                    (char *)"-c",
                    R.config_path,
                    (char *)"status",
                    (char *)"--now",
                    now,
                    json ? (char *)"--json" : NULL,
                    NULL};
    char *out = NULL, *err = NULL;
    run_cmd(&out, &err, 60, argv, NULL);
    char *both = xasprintf("%s\n%s", out, err);
    free(out);
    free(err);
    return both;
}

/* Runs with WRONG_PASSWORD against the server `o` and checks that the run
 * fails with `reply` quoted, nothing is sent, and no form of the password
 * is in the output or the state. */
static void wrong_password(struct smtpd_options o, const char *reply)
{
    start_secure_server(o);
    char *pass = xasprintf("%s/smtp.pass", R.dir);
    write_file(pass, WRONG_PASSWORD "\n");
    chmod(pass, 0600);
    free(pass);
    use_email("127.0.0.1", to_oncall, secure);
    char when[32];
    snprintf(when, sizeof when, "%lld", T0);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-v",    (char *)"-c", R.config_path,
                    (char *)"run",       (char *)"--now", when,         NULL};
    char *out = NULL, *err = NULL;
    cr_assert_eq(run_cmd(&out, &err, 60, argv, NULL), 1, "stderr:\n%s", err);
    char *want =
        xasprintf("127.0.0.1:%d: login as " USER " refused: %s; nothing was sent", S.port, reply);
    cr_assert_not_null(strstr(err, want), "stderr:\n%s", err);
    free(want);
    expect_no_password(out, "stdout");
    expect_no_password(err, "stderr");
    free(out);
    free(err);
    char *state = read_file_str(R.state_path);
    expect_no_password(state, "the state file");
    free(state);
    for (int json = 0; json <= 1; json++) {
        char *status = status_output(json);
        cr_assert_not_null(strstr(status, "refused"), "status does not show the error:\n%s",
                           status);
        expect_no_password(status, json ? "status --json" : "status");
        free(status);
    }
    expect_nothing_sent();
    expect_still_queued();
}

Test(email, a_wrong_password_fails_without_showing_it)
{
    wrong_password((struct smtpd_options){0}, "535 5.7.8 Authentication credentials invalid");
}

/* A server that quotes the password in its reply: wsrelay passes the reply
 * on, with the password in any form it was sent replaced. */
Test(email, a_password_quoted_by_the_server_is_redacted)
{
    wrong_password((struct smtpd_options){.auth_echo = true},
                   "535 5.7.8 wrong password [redacted] ([redacted])");
}

/* A server that quotes a part of the password (wr0ng-Pa55word without its
 * first 3 characters, its last 3, or both): 8 or more characters in a row of
 * it are redacted, wherever the reply goes. */
Test(email, a_password_quoted_without_its_first_characters_is_redacted)
{
    wrong_password((struct smtpd_options){.auth_echo_cut = "first"},
                   "535 5.7.8 no user with password <[redacted]>");
}

Test(email, a_password_quoted_without_its_last_characters_is_redacted)
{
    wrong_password((struct smtpd_options){.auth_echo_cut = "last"},
                   "535 5.7.8 no user with password <[redacted]>");
}

Test(email, the_middle_of_a_password_quoted_is_redacted)
{
    wrong_password((struct smtpd_options){.auth_echo_cut = "middle"},
                   "535 5.7.8 no user with password <[redacted]>");
}

/* libESMTP carries on after a failed login; a server that takes mail
 * without one must still not get the message. */
Test(email, a_failed_login_stops_the_mail_even_if_the_server_would_take_it)
{
    wrong_password((struct smtpd_options){.auth_optional = true},
                   "535 5.7.8 Authentication credentials invalid");
    char *log = smtpd_log(&S);
    cr_assert_null(strstr(log, "DATA accepted"), "server log:\n%s", log);
    free(log);
}

/* A listening socket on 127.0.0.1 that is never accepted from; *port is
 * its port. With `full`, its accept queue is filled first, so that Linux
 * drops further SYNs and a connect() hangs as with a dead host. */
static int listen_only(int *port, bool full)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(fd, full ? 0 : 8), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    for (int i = 0; full && i < 3; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(c, (struct sockaddr *)&a, sizeof a); /* EINPROGRESS; left open */
    }
    struct timespec settle = {0, 300 * 1000000L};
    nanosleep(&settle, NULL);
    return fd;
}

/* A host that never answers the connection attempt. */
Test(email, an_unreachable_server_times_out_within_seconds)
{
    int fd = listen_only(&S.port, true);
    use_email("127.0.0.1", to_oncall, "      starttls: \"off\"\n");
    time_t start = time(NULL);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert_leq(time(NULL) - start, 25, "took %ld s", (long)(time(NULL) - start));
    char *want = xasprintf("127.0.0.1:%d: cannot connect: no answer within 10 s", S.port);
    cr_assert_not_null(strstr(err, want), "stderr:\n%s", err);
    free(want);
    free(err);
    close(fd);
    expect_still_queued();
}

/* A server that accepts the connection and never says a word. */
Test(email, a_silent_server_times_out_within_seconds)
{
    int fd = listen_only(&S.port, false);
    use_email("127.0.0.1", to_oncall, "      starttls: \"off\"\n");
    time_t start = time(NULL);
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, &err), 1);
    cr_assert_leq(time(NULL) - start, 25, "took %ld s", (long)(time(NULL) - start));
    char *want = xasprintf("127.0.0.1:%d: the session ended before the server accepted the "
                           "message: no complete answer within 10 s, waiting for the greeting",
                           S.port);
    cr_assert_not_null(strstr(err, want), "stderr:\n%s", err);
    free(want);
    free(err);
    close(fd);
    expect_still_queued();
}

/* The alarm's mail, then its recovery: the recovery mail points at the
 * alarm mail, so mail clients show them as one thread. */
Test(email, a_recovery_is_threaded_under_its_alarm)
{
    start_secure_server((struct smtpd_options){.auth_mech = "PLAIN"});
    use_email("127.0.0.1", to_oncall, secure);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    sim_add_alert(&R.sim, "5214000A",
                  "{\"unixtime\": 1795000100, \"ch1\": \"CH1 正常復帰 -79.5℃\"}");
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 2);
    struct json_object *alarm = smtpd_mail(&S, 0), *recovery = smtpd_mail(&S, 1);
    cr_assert_str_eq(header(alarm, "message-id"), MESSAGE_ID);
    cr_assert_eq(header_count(alarm, "in-reply-to"), 0);
    cr_assert(strstr(member(recovery, "subject"), "[RECOVERED]"), "%s",
              member(recovery, "subject"));
    cr_assert_str_eq(header(recovery, "in-reply-to"), MESSAGE_ID);
    cr_assert_str_eq(header(recovery, "references"), MESSAGE_ID);
    cr_assert_str_neq(header(recovery, "message-id"), MESSAGE_ID);
    json_object_put(alarm);
    json_object_put(recovery);
}

/* The mail has a text part first and an HTML part last, both from the
 * built-in templates. */
Test(email, the_mail_is_text_then_html)
{
    start_secure_server((struct smtpd_options){.auth_mech = "PLAIN"});
    use_email("127.0.0.1", to_oncall, secure);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    char *raw = smtpd_raw(&S, 0);
    const char *text = strstr(raw, "Content-Type: text/plain; charset=UTF-8");
    const char *html = strstr(raw, "Content-Type: text/html; charset=UTF-8");
    cr_assert(strstr(raw, "multipart/alternative"), "%s", raw);
    cr_assert(text && html && text < html, "text first, HTML last:\n%s", raw);
    free(raw);
}

/* The display columns of `s` (a wide character counts two). */
static size_t columns_of(const char *s)
{
    size_t n = strlen(s), i = 0, cols = 0;
    while (i < n) {
        uint32_t cp;
        size_t step = utf8_decode(&cp, s + i, n - i);
        cr_assert_gt(step, 0, "not UTF-8 at %zu: %s", i, s);
        int w = utf8_char_width(cp);
        cols += w > 0 ? (size_t)w : 0;
        i += step;
    }
    return cols;
}

/* A hostile alert text of 4,356 characters (wide ones, encoded-word
 * lookalikes, spaces) makes a subject of at most 200 columns that ends
 * with "…" and decodes cleanly. */
Test(email, a_long_alert_text_makes_a_bounded_subject)
{
    start_secure_server((struct smtpd_options){.auth_mech = "PLAIN"});
    use_email("127.0.0.1", to_oncall, secure);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    struct buf text;
    buf_init(&text, 0);
    buf_puts(&text, "{\"unixtime\": 1795000100, \"ch1\": \"CH1 上限値警報 ");
    for (size_t chars = 9; chars + 18 <= 4356; chars += 18)
        buf_puts(&text, "=?UTF-8?B?QUJD?= 警報"); /* 18 characters */
    buf_puts(&text, "\"}");
    sim_add_alert(&R.sim, "5214000A", buf_str(&text));
    buf_free(&text);
    cr_assert_eq(relay_run_at(&R, T0 + 300, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 2);
    struct json_object *mail = smtpd_mail(&S, 1);
    const char *subject = member(mail, "subject");
    size_t cols = columns_of(subject);
    cr_assert_leq(cols, 200, "%zu columns: %s", cols, subject);
    cr_assert_geq(cols, 198, "%zu columns: %s", cols, subject);
    cr_assert(strncmp(subject, "[ALARM] " DEVICE ": CH1 上限値警報 =?UTF-8?B?QUJD?= 警報",
                      strlen("[ALARM] " DEVICE ": CH1 上限値警報 =?UTF-8?B?QUJD?= 警報")) == 0,
              "%s", subject);
    cr_assert_str_eq(subject + strlen(subject) - strlen("…"), "…", "%s", subject);
    cr_assert_str_eq(json_object_to_json_string(json_object_object_get(mail, "defects")), "[ ]");
    json_object_put(mail);
}

/* The receiver "mail" on server `s` (plain SMTP), with incidents on and a
 * rule that reminds every 15 minutes. */
static void use_incident_mail(const struct smtpd *s)
{
    char *rules = xasprintf("%s/rules.yaml", R.dir);
    write_file(rules, "- name: freezers\n"
                      "  match: {kind: ch1}\n"
                      "  receivers: [mail]\n"
                      "  repeat: 15m\n");
    free(rules);
    char *yaml = xasprintf("  - name: mail\n"
                           "    email:\n"
                           "      host: 127.0.0.1\n"
                           "      port: %d\n"
                           "      from: \"wsrelay <relay@example.org>\"\n"
                           "      starttls: off\n"
                           "%s",
                           s->port, to_oncall);
    R.incidents = true;
    relay_config_extra(&R, NULL, yaml, "rules: @DIR@/rules.yaml\n");
    free(yaml);
}

/* An incident nobody acknowledges for half an hour, then somebody does:
 * its first notice, two reminders and the acknowledgement are four mails
 * with four ids, each follow-up answering the first mail; the subject of
 * each follow-up names its notice and the incident; a reminder refused
 * once is sent again with the same id. */
Test(email, an_incidents_notices_are_distinct_mails_in_the_first_ones_thread)
{
    smtpd_start(&S, R.dir, NULL);
    use_incident_mail(&S);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 900, NULL), 0);
    cr_assert_eq(smtpd_count(&S), 2);

    /* The second reminder meets a server that refuses it once. */
    char *dir2 = xasprintf("%s/second", R.dir);
    cr_assert_eq(mkdir(dir2, 0700), 0);
    smtpd_start(&S2, dir2,
                &(struct smtpd_options){.fail_first = 1, .fail_reply = "451 4.3.0 try again"});
    free(dir2);
    use_incident_mail(&S2);
    cr_assert_eq(relay_run_at(&R, T0 + 1800, NULL), 1);
    cr_assert_eq(smtpd_refused(&S2), 1);
    cr_assert_eq(relay_run_at(&R, T0 + 1860, NULL), 0);
    cr_assert_eq(smtpd_count(&S2), 1);
    struct cmd_result ack =
        wsrelay_cmd(30, "-c", R.config_path, "ack", "1", "--by", "night shift", "--note",
                    "moving the samples", "--now", "1795001900", NULL);
    cr_assert_eq(ack.status, 0, "%s", ack.err);
    cmd_result_free(&ack);
    cr_assert_eq(relay_run_at(&R, T0 + 1960, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 2700, NULL), 0);
    cr_assert_eq(smtpd_count(&S2), 2, "the acknowledgement, and no reminder after it");
    sim_add_alert(&R.sim, "5214000A",
                  "{\"unixtime\": 1795002000, \"ch1\": \"CH1 正常復帰 -79.5℃\"}");
    cr_assert_eq(relay_run_at(&R, T0 + 3000, NULL), 0);
    cr_assert_eq(smtpd_count(&S2), 3, "the resolution");

    struct json_object *mails[4] = {smtpd_mail(&S, 0), smtpd_mail(&S, 1), smtpd_mail(&S2, 0),
                                    smtpd_mail(&S2, 1)};
    static const char *const subjects[4] = {
        "[ALARM] " DEVICE ": CH1 上限値警報 -70.2℃",
        "[REMINDER 1] " DEVICE ": incident 1 · open 15 min · not acknowledged · wsrelay ack 1",
        "[REMINDER 2] " DEVICE ": incident 1 · open 30 min · not acknowledged · wsrelay ack 1",
        "[ACKNOWLEDGED] " DEVICE ": incident 1 · open 31 min · acknowledged by night shift at "
        "20:38: moving the samples",
    };
    static const char *const ids[4] = {
        MESSAGE_ID,
        "<wsrelay.mail.5214000A.ch1-reminder1.1794999000@example.org>",
        "<wsrelay.mail.5214000A.ch1-reminder2.1794999000@example.org>",
        "<wsrelay.mail.5214000A.ch1-acknowledged.1794999000@example.org>",
    };
    for (size_t i = 0; i < 4; i++) {
        cr_assert_str_eq(member(mails[i], "subject"), subjects[i]);
        cr_assert_str_eq(header(mails[i], "message-id"), ids[i]);
        for (size_t k = 0; k < i; k++)
            cr_assert_str_neq(header(mails[i], "message-id"), header(mails[k], "message-id"));
        if (i == 0) {
            cr_assert_eq(header_count(mails[i], "in-reply-to"), 0);
            continue;
        }
        cr_assert_str_eq(header(mails[i], "in-reply-to"), MESSAGE_ID, "mail %zu", i);
        cr_assert_str_eq(header(mails[i], "references"), MESSAGE_ID, "mail %zu", i);
    }
    /* the retry is the same mail */
    char *refused = smtpd_refused_raw(&S2, 0);
    char *line = xasprintf("Message-ID: %s\r\n", ids[2]);
    cr_assert_not_null(strstr(refused, line), "%s", refused);
    free(line);
    free(refused);
    for (size_t i = 0; i < 4; i++)
        json_object_put(mails[i]);

    /* The resolution is the recovery's mail, under its alarm's. */
    struct json_object *resolved = smtpd_mail(&S2, 2);
    cr_assert_str_eq(member(resolved, "subject"),
                     "[RESOLVED] " DEVICE ": incident 1 · resolved after 50 min · acknowledged by "
                     "night shift at 20:38: moving the samples");
    cr_assert_str_eq(header(resolved, "message-id"),
                     "<wsrelay.mail.5214000A.ch1.1795002000@example.org>");
    cr_assert_str_eq(header(resolved, "in-reply-to"), MESSAGE_ID);
    json_object_put(resolved);
}

/* --- the ids of an incident's mails, sent one by one -------------------- */

/* An incident of 5214000A's ch1 whose first event is `kind` ("ch1" or
 * "reading") at `at`, announced by an early warning at `warning` (0:
 * none). */
static struct incident incident_of(const char *kind, long long at, long long warning)
{
    struct incident inc = {.id = 7,
                           .key = xstrdup("5214000A/ch1"),
                           .state = INCIDENT_OPEN,
                           .opened_at = at + 30,
                           .paged = true};
    inc.first = (struct event){
        .account = xstrdup("lab"),
        .serial = xstrdup("5214000A"),
        .model = xstrdup("TR-72A2"),
        .name = xstrdup("Freezer"),
        .base_serial = xstrdup("5214000A"),
        .unixtime = at,
        .kind = xstrdup(kind),
        .text = xstrdup("CH1 Upper Limit -70.2°C"),
        .state = xstrdup("alarm"),
        .channel = strcmp(kind, "reading") ? 0 : 1,
        .early_warning = warning,
        .utc_offset = 540,
    };
    incident_tell(&inc, "boss");
    return inc;
}

/* Sends `ev` alone to the receiver "boss" on S; returns the mail as the
 * server decoded it. */
static struct json_object *send_alone(const struct event *ev)
{
    char name[] = "boss", host[] = "127.0.0.1", from[] = "wsrelay <relay@example.org>";
    char boss[] = "boss@example.org";
    char *to[] = {boss};
    struct receiver_conf r = {.name = name,
                              .type = RECEIVER_EMAIL,
                              .email = {.host = host,
                                        .port = S.port,
                                        .starttls = STARTTLS_OFF,
                                        .from = from,
                                        .to = to,
                                        .n_to = 1},
                              .timeout = 30};
    struct notify_message m = {.events = ev, .n = 1, .now = ev->unixtime + 60};
    struct notify_result res;
    struct err e = {{0}};
    size_t before = smtpd_count(&S);
    struct notify_env env = {0};
    cr_assert_eq(notify_send(&env, &r, &m, &res, &e), 0, "%s", e.msg);
    json_object_put(res.refs); /* the mail's id, kept by a run with its incident */
    cr_assert_eq(smtpd_count(&S), before + 1);
    return smtpd_mail(&S, before);
}

/* Each notice of `inc` sent: the first one's id is `first_id`, and every
 * other has its own id and answers `parent`. */
static void expect_thread(struct incident *inc, const char *first_id, const char *parent)
{
    static const char *const parts[] = {"",           "-reminder1",    "-escalation1",
                                        "-reminder2", "-acknowledged", "-closed"};
    const char *kind = strcmp(inc->first.kind, "reading") ? "ch1" : "reading-ch1";
    long long now = inc->opened_at;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        enum incident_notice notice = NOTICE_REMINDER;
        now += 600;
        if (i == 0)
            notice = NOTICE_OPENED;
        else if (i == 2)
            notice = NOTICE_ESCALATION, inc->step++;
        else if (i == 4)
            notice = NOTICE_ACKNOWLEDGED, inc->acked_at = now, inc->acked_by = xstrdup("x");
        else if (i == 5)
            notice = NOTICE_CLOSED, inc->state = INCIDENT_CLOSED, inc->ended = now;
        else
            inc->reminders++;
        struct event ev;
        incident_message(&ev, inc, notice, NULL, now);
        struct json_object *mail = send_alone(&ev);
        char *id = xasprintf("<wsrelay.boss.5214000A.%s%s.%lld@example.org>", kind, parts[i],
                             inc->first.unixtime);
        if (i == 0)
            cr_assert_str_eq(id, first_id);
        cr_assert_str_eq(header(mail, "message-id"), id);
        if (i > 0) {
            cr_assert_str_eq(header(mail, "in-reply-to"), parent, "%s", id);
            cr_assert_str_eq(header(mail, "references"), parent, "%s", id);
        }
        if (i == 1) { /* a retry of the same notice is the same mail */
            json_object_put(mail);
            mail = send_alone(&ev);
            cr_assert_str_eq(header(mail, "message-id"), id);
        }
        free(id);
        json_object_put(mail);
        event_clear(&ev);
    }
}

Test(email, an_incidents_follow_ups_answer_its_first_mail_or_that_ones_warning)
{
    smtpd_start(&S, R.dir, NULL);
    /* opened by the alert log's alarm: under that alarm's mail */
    struct incident inc = incident_of("ch1", 1794999000, 0);
    expect_thread(&inc, "<wsrelay.boss.5214000A.ch1.1794999000@example.org>",
                  "<wsrelay.boss.5214000A.ch1.1794999000@example.org>");
    incident_clear(&inc);
    /* opened by wsrelay's early warning: under the warning's mail */
    inc = incident_of("reading", 1794998700, 0);
    expect_thread(&inc, "<wsrelay.boss.5214000A.reading-ch1.1794998700@example.org>",
                  "<wsrelay.boss.5214000A.reading-ch1.1794998700@example.org>");
    incident_clear(&inc);
    /* opened by an alarm that a warning announced, whose mail went under
     * the warning's: the follow-ups too */
    inc = incident_of("ch1", 1794999000, 1794998700);
    expect_thread(&inc, "<wsrelay.boss.5214000A.ch1.1794999000@example.org>",
                  "<wsrelay.boss.5214000A.reading-ch1.1794998700@example.org>");
    incident_clear(&inc);
}
