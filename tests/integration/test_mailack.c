/* Acknowledgements by mail reply: an alarm's incident is mailed to the
 * on-call address through the test SMTP server, a reply is put in a real
 * Dovecot's mailbox (tests/support/imapd.h, IMAP over TLS on 127.0.0.1),
 * and the next `wsrelay run` reads it through the receiver's `ack:`: a
 * reply with "ACK ID note" or one that names the alarm's mail by
 * In-Reply-To acknowledges the incident as its sender, with its note, and
 * the acknowledgement is mailed; a sender not allowed, a display name
 * that holds an allowed address, or a reply without the PIN acknowledges
 * nothing and stays unseen; a mailbox that refuses the login or never
 * answers costs no alert and no more than the receiver's timeout; the
 * mailbox's password and the PIN appear in no output. */
#include "imapd.h"
#include "proc.h"
#include "relay.h"
#include "smtpd.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define ONCALL "oncall@example.org"
#define IMAP_USER "oncall"
#define IMAP_PASSWORD "imap-S3cret-pw!"
#define PIN "7391"
#define TIMEOUT_S 5 /* the smallest `timeout:` there is */
/* A hang guard, not a prediction: a run whose mailbox never answers ends
 * by TIMEOUT_S; the rest is for a busy machine and the sanitizers. */
#define RUN_BOUND_S (TIMEOUT_S + 20)

static struct relay R;
static struct smtpd S;
static struct imapd D;
static int hang_fd = -1;

static void setup(void)
{
    relay_start_world(&R, "freezer-a"); /* 5214000A, an alarm of ch1 */
    smtpd_start(&S, R.dir, NULL);
}

static void teardown(void)
{
    if (hang_fd >= 0)
        close(hang_fd);
    hang_fd = -1;
    imapd_stop(&D);
    smtpd_stop(&S);
    relay_stop(&R);
}

TestSuite(mailack, .init = setup, .fini = teardown, .timeout = 180);

/* The only receiver: "mail" to ONCALL, its ack: mailbox at `port` with
 * `password`, the PIN when `pin`, and `extra` lines in ack:. */
static void configure(int port, const char *password, bool pin, const char *extra)
{
    char *pw_path = xasprintf("%s/imap-password", R.dir);
    char *pin_path = xasprintf("%s/imap-pin", R.dir);
    write_file(pw_path, password);
    write_file(pin_path, PIN "\n");
    chmod(pw_path, 0600);
    chmod(pin_path, 0600);
    char *pin_line = pin ? xasprintf("        pin_file: %s\n", pin_path) : xstrdup("");
    char *yaml =
        xasprintf("  - name: mail\n"
                  "    timeout: %ds\n"
                  "    email:\n"
                  "      host: 127.0.0.1\n"
                  "      port: %d\n"
                  "      starttls: \"off\"\n"
                  "      from: \"wsrelay <relay@example.org>\"\n"
                  "      to: \"On call <" ONCALL ">\"\n"
                  "      ack:\n"
                  "        imap: imaps://127.0.0.1:%d/INBOX\n"
                  "        username: " IMAP_USER "\n"
                  "        password_file: %s\n"
                  "        ca_file: %s\n"
                  "%s%s",
                  TIMEOUT_S, S.port, port, pw_path, D.ca_file, pin_line, extra ? extra : "");
    free(pin_line);
    R.incidents = true;
    relay_config(&R, NULL, yaml);
    free(yaml);
    free(pw_path);
    free(pin_path);
}

/* Runs at `now`; the run must succeed. Returns its stderr (caller frees),
 * which must hold neither the password nor the PIN. */
static char *run(long long now)
{
    char *err = NULL;
    int status = relay_run_at(&R, now, &err);
    cr_assert_eq(status, 0, "run at T0%+lld failed:\n%s", now - T0, err);
    if (getenv("MAILACK_DEBUG"))
        fprintf(stderr, "--- run T0%+lld:\n%s", now - T0, err);
    cr_assert_null(strstr(err, IMAP_PASSWORD), "the password in the log:\n%s", err);
    cr_assert_null(strstr(err, PIN), "the PIN in the log:\n%s", err);
    return err;
}

/* A header of the i-th mail the SMTP server took (caller frees); NULL
 * when it has none. */
static char *mail_header(size_t i, const char *name)
{
    struct json_object *mail = smtpd_mail(&S, i), *headers, *list;
    cr_assert_not_null(mail, "no mail %zu", i);
    cr_assert(json_object_object_get_ex(mail, "headers", &headers));
    char *v = json_object_object_get_ex(headers, name, &list)
                  ? xstrdup(json_object_get_string(json_object_array_get_idx(list, 0)))
                  : NULL;
    json_object_put(mail);
    return v;
}

/* The reply `text` from `from`, naming `in_reply_to` (NULL: nothing). */
static char *reply(const char *from, const char *in_reply_to, const char *text)
{
    char *irt = in_reply_to
                    ? xasprintf("In-Reply-To: %s\r\nReferences: %s\r\n", in_reply_to, in_reply_to)
                    : xstrdup("");
    char *m = xasprintf("From: %s\r\n"
                        "To: wsrelay <relay@example.org>\r\n"
                        "Subject: Re: alarm\r\n"
                        "Date: Fri, 20 Nov 2026 10:00:00 +0900\r\n"
                        "Message-ID: <%ld.%d@phone.example.org>\r\n"
                        "%s"
                        "MIME-Version: 1.0\r\n"
                        "Content-Type: text/plain; charset=utf-8\r\n"
                        "\r\n"
                        "%s",
                        from, (long)random(), getpid(), irt, text);
    free(irt);
    return m;
}

/* Incident `id` of the state: acked_by and ack_note into the strings
 * (caller frees; NULL when not set). */
static void incident_ack_of(unsigned long id, char **by, char **note)
{
    struct json_object *doc = relay_state_doc(&R), *incs, *items, *v;
    *by = *note = NULL;
    cr_assert(json_object_object_get_ex(doc, "incidents", &incs) &&
              json_object_object_get_ex(incs, "items", &items));
    bool found = false;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *inc = json_object_array_get_idx(items, i);
        if (!json_object_object_get_ex(inc, "id", &v) ||
            (unsigned long)json_object_get_int64(v) != id)
            continue;
        found = true;
        if (json_object_object_get_ex(inc, "acked_by", &v) &&
            json_object_is_type(v, json_type_string))
            *by = xstrdup(json_object_get_string(v));
        if (json_object_object_get_ex(inc, "ack_note", &v) &&
            json_object_is_type(v, json_type_string))
            *note = xstrdup(json_object_get_string(v));
    }
    cr_assert(found, "no incident %lu in the state", id);
    json_object_put(doc);
}

/* Every line of the incident log (the .jsonl files of STATE.incidents), caller frees. */
static char *incident_log(void)
{
    char *dir_path = xasprintf("%s.incidents", R.state_path);
    struct buf b;
    buf_init(&b, 0);
    DIR *dir = opendir(dir_path);
    cr_assert(dir, "no incident log at %s", dir_path);
    for (struct dirent *de; (de = readdir(dir));) {
        if (!strstr(de->d_name, ".jsonl"))
            continue;
        char *path = xasprintf("%s/%s", dir_path, de->d_name);
        char *text = read_file_str(path);
        buf_puts(&b, text ? text : "");
        free(text);
        free(path);
    }
    closedir(dir);
    free(dir_path);
    return b.data ? buf_steal(&b) : xstrdup("");
}

/* The alarm's first run: one mail, the incident's first, to ONCALL;
 * returns its Message-ID (caller frees). */
static char *alarm_mailed(void)
{
    free(run(T0));
    cr_assert_eq(smtpd_count(&S), 1, "the alarm's mail");
    char *id = mail_header(0, "message-id");
    cr_assert_not_null(id);
    return id;
}

/* Incident 1 was acknowledged by ONCALL with `note`, its timeline says so,
 * and the acknowledgement was mailed as a follow-up of the alarm's mail. */
static void acknowledged(const char *alarm_id, const char *note)
{
    char *by, *kept_note;
    incident_ack_of(1, &by, &kept_note);
    cr_assert_str_eq(by ? by : "(none)", ONCALL);
    cr_assert_str_eq(kept_note ? kept_note : "(none)", note);
    char *log = incident_log();
    char *want_by = xasprintf("\"by\":\"%s\"", ONCALL);
    char *want_note = xasprintf("\"note\":\"%s\"", note);
    cr_assert(strstr(log, "acknowledged") && strstr(log, want_by) && strstr(log, want_note),
              "the timeline:\n%s", log);
    cr_assert_eq(smtpd_count(&S), 2, "the acknowledgement is mailed");
    char *irt = mail_header(1, "in-reply-to"), *id = mail_header(1, "message-id");
    cr_assert_str_eq(irt ? irt : "(none)", alarm_id, "it follows up the alarm's mail");
    cr_assert_str_neq(id, alarm_id, "a Message-ID of its own");
    char *raw = smtpd_raw(&S, 1);
    cr_assert(strstr(raw, ONCALL), "the mail says who:\n%.3000s", raw);
    free(raw);
    free(irt);
    free(id);
    free(want_by);
    free(want_note);
    free(log);
    free(by);
    free(kept_note);
}

Test(mailack, an_ack_line_acknowledges_as_its_sender_with_its_note)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, IMAP_PASSWORD, false, NULL);
    char *alarm = alarm_mailed();
    /* the mailbox is the on-call one, where the alarm itself lands too:
     * the relay's own mail is no reply, and stays unseen */
    char *own = smtpd_raw(&S, 0);
    char *own_name = imapd_deliver(&D, own);
    /* and so is a reminder of it, which follows it up */
    char *reminder = reply("wsrelay <relay@example.org>", alarm,
                           "Reminder 1: incident 1 open for 15 min, not acknowledged.\r\n");
    char *reminder_name = imapd_deliver(&D, reminder);
    char *m = reply(ONCALL, NULL, "ACK 1 moving samples\r\n\r\nSent from my phone\r\n");
    char *name = imapd_deliver(&D, m);
    char *err = run(T0 + 60);
    acknowledged(alarm, "moving samples");
    cr_assert_not(imapd_seen(&D, own_name), "the alarm mail stays unseen");
    cr_assert_not(imapd_seen(&D, reminder_name), "the reminder stays unseen");
    free(reminder_name);
    free(reminder);
    cr_assert_null(strstr(err, "warning"), "%s", err);
    free(own_name);
    free(own);
    cr_assert(strstr(err, "incident 1 acknowledged by " ONCALL " through receiver mail"), "%s",
              err);
    cr_assert(imapd_seen(&D, name), "the reply taken is marked seen");
    /* the next run finds nothing more to take, and sends nothing more */
    free(run(T0 + 120));
    cr_assert_eq(smtpd_count(&S), 2);
    free(err);
    free(name);
    free(m);
    free(alarm);
}

Test(mailack, a_reply_to_the_alarm_mail_acknowledges_by_in_reply_to)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, IMAP_PASSWORD, false, NULL);
    char *alarm = alarm_mailed();
    /* a mail that replies to something else is left alone */
    char *other = reply(ONCALL, "<unrelated@example.org>", "lunch?\r\n");
    char *other_name = imapd_deliver(&D, other);
    char *m = reply("On Call <OnCall@Example.org>", alarm,
                    "\r\nOn it, moving samples to freezer B\r\n\r\n> CH1 Upper Limit Exceeded\r\n");
    char *name = imapd_deliver(&D, m);
    free(run(T0 + 60));
    acknowledged(alarm, "On it, moving samples to freezer B");
    cr_assert(imapd_seen(&D, name));
    cr_assert_not(imapd_seen(&D, other_name), "a mail that is no acknowledgement stays unseen");
    free(name);
    free(m);
    free(other_name);
    free(other);
    free(alarm);
}

/* "<wsrelay.mail.5214000A.ch1.1794999000@example.org>" with `part` after
 * the kind, as the mail of a follow-up notice has it (caller frees). */
static char *follow_up_id(const char *alarm_id, const char *part)
{
    const char *at = strrchr(alarm_id, '@'), *dot = at;
    while (*dot != '.')
        dot--;
    return xasprintf("%.*s-%s%s", (int)(dot - alarm_id), alarm_id, part, dot);
}

Test(mailack, a_reply_to_a_reminder_acknowledges_its_incident)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, IMAP_PASSWORD, false, NULL);
    char *alarm = alarm_mailed();
    char *reminder = follow_up_id(alarm, "reminder2");
    /* a mail client that names the mail it answers only */
    char *m = reply(ONCALL, reminder, "looking now\r\n");
    char *name = imapd_deliver(&D, m);
    /* and one whose id only looks like a follow-up's */
    char *forged = follow_up_id(alarm, "x.y");
    char *other = reply(ONCALL, forged, "not this one\r\n");
    char *other_name = imapd_deliver(&D, other);
    free(run(T0 + 60));
    acknowledged(alarm, "looking now");
    cr_assert(imapd_seen(&D, name));
    cr_assert_not(imapd_seen(&D, other_name));
    free(other_name);
    free(other);
    free(forged);
    free(name);
    free(m);
    free(reminder);
    free(alarm);
}

Test(mailack, a_sender_not_allowed_or_a_reply_without_the_pin_acknowledges_nothing)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, IMAP_PASSWORD, true, NULL);
    char *alarm = alarm_mailed();
    char *stranger = reply("eve@evil.example", alarm, "ACK 1 " PIN " all fine\r\n");
    char *smuggled = reply("\"" ONCALL "\" <eve@evil.example>", NULL, "ACK 1 " PIN " fine\r\n");
    char *no_pin = reply(ONCALL, alarm, "ACK 1 moving samples\r\n");
    char *wrong_pin = reply(ONCALL, NULL, "ACK 1 0000 moving samples\r\n");
    char *names[] = {imapd_deliver(&D, stranger), imapd_deliver(&D, smuggled),
                     imapd_deliver(&D, no_pin), imapd_deliver(&D, wrong_pin)};
    char *err = run(T0 + 60);
    char *by, *note;
    incident_ack_of(1, &by, &note);
    cr_assert_null(by, "acknowledged by %s", by);
    cr_assert_eq(smtpd_count(&S), 1, "no acknowledgement mailed");
    for (size_t i = 0; i < 4; i++)
        cr_assert_not(imapd_seen(&D, names[i]), "mail %zu stays unseen", i);
    cr_assert_eq(occurrences(err, "a reply from eve@evil.example names an incident, but "
                                  "eve@evil.example is not among to:, cc: or ack.from:"),
                 2, "%s", err);
    cr_assert_eq(occurrences(err, "a reply from " ONCALL " names an incident without the PIN"), 2,
                 "%s", err);
    /* the PIN in its place acknowledges; the note leaves it out */
    char *right = reply(ONCALL, NULL, "ACK 1 " PIN " moving samples\r\n");
    char *right_name = imapd_deliver(&D, right);
    free(run(T0 + 120));
    acknowledged(alarm, "moving samples");
    cr_assert(imapd_seen(&D, right_name));
    for (size_t i = 0; i < 4; i++) {
        cr_assert_not(imapd_seen(&D, names[i]), "mail %zu stays unseen", i);
        free(names[i]);
    }
    char *log = incident_log();
    cr_assert_null(strstr(log, PIN), "the PIN in the timeline:\n%s", log);
    free(log);
    free(right_name);
    free(right);
    free(err);
    free(stranger);
    free(smuggled);
    free(no_pin);
    free(wrong_pin);
    free(alarm);
}

Test(mailack, ack_from_allows_another_sender)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, IMAP_PASSWORD, false, "        from: [\"Lab Lead <LEAD@example.org>\"]\n");
    char *alarm = alarm_mailed();
    char *m = reply("lead@example.org", NULL, "ack 1 on my way\r\n");
    char *name = imapd_deliver(&D, m);
    free(run(T0 + 60));
    char *by, *note;
    incident_ack_of(1, &by, &note);
    cr_assert_str_eq(by ? by : "(none)", "lead@example.org");
    cr_assert_str_eq(note ? note : "(none)", "on my way");
    cr_assert(imapd_seen(&D, name));
    free(by);
    free(note);
    free(name);
    free(m);
    free(alarm);
}

Test(mailack, a_mailbox_that_refuses_the_login_costs_no_alert)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, "not-the-" IMAP_PASSWORD, false, NULL);
    char *m = reply(ONCALL, NULL, "ACK 1 moving samples\r\n");
    char *name = imapd_deliver(&D, m);
    /* the alarm's run delivers, then asks the mailbox */
    char *err = run(T0);
    cr_assert_eq(smtpd_count(&S), 1, "the alarm is mailed whatever the mailbox does");
    cr_assert(strstr(err, "receiver 'mail' (email): acknowledgements: imaps://127.0.0.1:"), "%s",
              err);
    cr_assert(strstr(err, "login as " IMAP_USER ": the server refused it (nothing is lost: the "
                          "next run asks again)"),
              "%s", err);
    cr_assert_null(strstr(err, "not-the-"), "%s", err);
    free(err);
    /* Dovecot makes a client that failed wait longer each time: the next
     * run still ends, by its timeout */
    err = run(T0 + 60);
    cr_assert_null(strstr(err, "not-the-"), "%s", err);
    char *by, *note;
    incident_ack_of(1, &by, &note);
    cr_assert_null(by);
    cr_assert_not(imapd_seen(&D, name));
    char *log = imapd_log(&D);
    cr_assert_null(strstr(log, "not-the-"), "%s", log);
    free(log);
    free(err);
    free(name);
    free(m);
}

/* A port where the kernel takes the connection and nobody ever answers. */
static int silent_port(void)
{
    hang_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(hang_fd >= 0 && bind(hang_fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              listen(hang_fd, 8) == 0 && getsockname(hang_fd, (struct sockaddr *)&a, &len) == 0);
    return ntohs(a.sin_port);
}

Test(mailack, a_mailbox_that_never_answers_costs_no_alert_and_no_more_than_the_timeout)
{
    struct test_ca ca;
    test_ca_make(&ca, R.dir, "ca");
    D.ca_file = ca.cert; /* a certificate file for ca_file: never reached */
    configure(silent_port(), IMAP_PASSWORD, false, NULL);
    D.ca_file = NULL;
    time_t start = time(NULL);
    /* the alarm's run asks the mailbox after delivering */
    free(run(T0));
    cr_assert_eq(smtpd_count(&S), 1, "the alarm is mailed whatever the mailbox does");
    char *err = run(T0 + 60);
    time_t took = time(NULL) - start;
    cr_assert_leq(took, 2 * RUN_BOUND_S, "two runs took %lds", (long)took);
    cr_assert(strstr(err, "search: no answer within 5s") || strstr(err, "out of time"), "%s", err);
    cr_assert(strstr(err, "nothing is lost: the next run asks again"), "%s", err);
    free(err);
    test_ca_free(&ca);
}

/* test-receiver mails a test and reads the ack: mailbox; neither it nor
 * check shows a secret. */
Test(mailack, check_and_test_receiver_hold_no_secret)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, IMAP_PASSWORD, true, NULL);
    struct cmd_result c = wsrelay_cmd(30, "-c", R.config_path, "check", NULL);
    cr_assert_eq(c.status, 0, "%s%s", c.out, c.err);
    cr_assert_null(strstr(c.out, IMAP_PASSWORD));
    cr_assert_null(strstr(c.err, IMAP_PASSWORD));
    cr_assert_null(strstr(c.out, PIN));
    cr_assert_null(strstr(c.err, PIN));
    cmd_result_free(&c);
    c = wsrelay_cmd(60, "-c", R.config_path, "test-receiver", "mail", NULL);
    cr_assert_eq(c.status, 0, "%s%s", c.out, c.err);
    cr_assert(strstr(c.out, "receiver mail (email): test notification accepted\n"), "%s", c.out);
    cr_assert(strstr(c.out, "  acknowledgements readable: 0 replies to this test\n"), "%s", c.out);
    cr_assert_null(strstr(c.out, IMAP_PASSWORD));
    cr_assert_null(strstr(c.err, IMAP_PASSWORD));
    cmd_result_free(&c);
}

Test(mailack, test_receiver_says_when_the_mailbox_refuses_the_login)
{
    imapd_start(&D, IMAP_USER, IMAP_PASSWORD);
    configure(D.port, "not-the-" IMAP_PASSWORD, false, NULL);
    struct cmd_result c = wsrelay_cmd(60, "-c", R.config_path, "test-receiver", "mail", NULL);
    cr_assert_neq(c.status, 0, "%s%s", c.out, c.err);
    cr_assert(strstr(c.out, "receiver mail (email): test notification accepted\n"), "%s", c.out);
    cr_assert(strstr(c.out, "  acknowledgements NOT readable: receiver 'mail' (email): "
                            "acknowledgements: imaps://127.0.0.1:"),
              "%s", c.out);
    cr_assert(strstr(c.out, ": login as " IMAP_USER ": the server refused it\n"), "%s", c.out);
    cr_assert_null(strstr(c.out, "not-the-"), "%s", c.out);
    cr_assert_null(strstr(c.err, "not-the-"), "%s", c.err);
    cmd_result_free(&c);
}
