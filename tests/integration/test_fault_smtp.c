/* Mail servers that misbehave: one that drips a reply that never ends (a
 * "220-" or "250-" line every quarter second, at the greeting, after EHLO,
 * after the message), one that closes the connection early, one that
 * refuses. `wsrelay run` must end each delivery by the receiver's
 * `timeout:`, say what happened, keep the event in the outbox and exit;
 * the event then goes out in a later run to a server that works
 * (tests/support/smtpd.py). The drips use short lines so that libESMTP's
 * own cap on a reply's length (4 KiB) does not end them first. */
#include "brokensmtp.h"
#include "proc.h"
#include "relay.h"
#include "smtpd.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 1795000000LL
#define EVENT_ID "5214000A/1794999000/ch1"
#define TIMEOUT_S 5 /* the smallest `timeout:` there is */
#define DRIP_MS 250
/* A delivery ends by TIMEOUT_S; the rest of a run takes about a second.
 * The margin is for a busy machine and the sanitizers, not a prediction. */
#define RUN_BOUND_S (TIMEOUT_S + 15)
/* Without the timeout a drip lasts minutes: past this, the test fails. */
#define RUN_KILL_S 45

static struct relay R;
static struct brokensmtp B;
static struct smtpd S;

static void setup(void)
{
    relay_start_world(&R, "freezer-3");
}

static void teardown(void)
{
    brokensmtp_stop(&B);
    smtpd_stop(&S);
    relay_stop(&R);
}

TestSuite(fault_smtp, .init = setup, .fini = teardown, .timeout = 120);

/* The only receiver: "mail", plain SMTP on 127.0.0.1:`port`. */
static void use_server(int port)
{
    char *yaml = xasprintf("  - name: mail\n"
                           "    timeout: %ds\n"
                           "    email:\n"
                           "      host: 127.0.0.1\n"
                           "      port: %d\n"
                           "      starttls: \"off\"\n"
                           "      from: \"wsrelay <relay@example.org>\"\n"
                           "      to: oncall@example.org\n",
                           TIMEOUT_S, port);
    relay_config(&R, NULL, yaml);
    free(yaml);
}

/* Runs `wsrelay run --now NOW`; returns its exit status, its stderr in
 * *err (caller frees) and its duration in *seconds. */
static int timed_run(long long now, char **err, double *seconds)
{
    char when[32];
    snprintf(when, sizeof when, "%lld", now);
    sim_set_clock(&R.sim, now);
    char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c", R.config_path, (char *)"run",
                    (char *)"--now",     when,         NULL};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int status = run_cmd(NULL, err, RUN_KILL_S, argv, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    cr_log_info("run took %.1f s", *seconds);
    return status;
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

static void expect_in(const char *text, const char *want)
{
    cr_assert_not_null(strstr(text, want), "no \"%s\" in:\n%s", want, text);
}

/* A run against the server in `mode` fails within the bound, its error
 * says that the session outlasted its limit `while` and with what
 * `outcome`, and the event stays queued. */
static void drip(const char *mode, const char *while_, const char *outcome)
{
    brokensmtp_start(&B, R.dir, mode, DRIP_MS, 100);
    use_server(B.port);
    char *err = NULL;
    double took;
    cr_assert_eq(timed_run(T0, &err, &took), 1, "stderr:\n%s", err);
    cr_assert_leq(took, RUN_BOUND_S, "the run took %.1f s", took);
    char *want = xasprintf("receiver 'mail' (email): 127.0.0.1:%d: the SMTP session took longer "
                           "than its %d s limit (the receiver's timeout), %s",
                           B.port, TIMEOUT_S, while_);
    expect_in(err, want);
    expect_in(err, outcome);
    expect_in(err, "1 event kept for a later run");
    free(want);
    free(err);
    char *log = brokensmtp_log(&B);
    char *dripped = xasprintf("DRIP %s", strchr(mode, '-') + 1);
    expect_in(log, dripped); /* the server did drip: the run did not stop for another reason */
    free(dripped);
    free(log);
    expect_still_queued();
}

Test(fault_smtp, a_greeting_that_never_ends_is_cut_at_the_timeout)
{
    drip("drip-greeting", "waiting for the greeting, of which ", "; nothing was sent");
}

Test(fault_smtp, an_ehlo_reply_that_never_ends_is_cut_at_the_timeout)
{
    drip("drip-ehlo", "waiting for the reply to EHLO, of which ", "; nothing was sent");
}

/* The worst place: the server has the whole message and never says
 * whether it takes it. The event is kept (the server may or may not
 * deliver what it has: a repeat is better than a loss), and goes out once
 * the server works. */
Test(fault_smtp, a_final_reply_that_never_ends_is_cut_and_sent_again_later)
{
    drip("drip-body", "waiting for the reply to the end of the message, of which ",
         "; the server did not confirm the message");
    char *log = brokensmtp_log(&B);
    expect_in(log, "BODY\n");
    free(log);

    brokensmtp_stop(&B);
    smtpd_start(&S, R.dir, NULL);
    use_server(S.port);
    char *err = NULL;
    double took;
    cr_assert_eq(timed_run(T0 + 60, &err, &took), 0, "stderr:\n%s", err); /* after the back-off */
    free(err);
    cr_assert_eq(smtpd_count(&S), 1);
    char *state = read_file_str(R.state_path);
    cr_assert_null(strstr(state, EVENT_ID "\""), "still queued:\n%s", state);
    free(state);
}

/* A server that took the message and then never finishes saying goodbye:
 * the mail has arrived, so the delivery counts, and no later run sends it
 * again. */
Test(fault_smtp, a_quit_reply_that_never_ends_does_not_undo_the_delivery)
{
    brokensmtp_start(&B, R.dir, "drip-quit", DRIP_MS, 100);
    use_server(B.port);
    char *err = NULL;
    double took;
    cr_assert_eq(timed_run(T0, &err, &took), 0, "stderr:\n%s", err);
    cr_assert_leq(took, RUN_BOUND_S, "the run took %.1f s", took);
    expect_in(err, "receiver mail: 1 event delivered");
    free(err);
    char *log = brokensmtp_log(&B);
    expect_in(log, "DRIP quit");
    free(log);
    char *state = read_file_str(R.state_path);
    cr_assert_null(strstr(state, EVENT_ID "\""), "still queued:\n%s", state);
    free(state);
}

/* A run that fails the same way every minute stays bounded every time. */
Test(fault_smtp, each_run_is_bounded_while_the_server_drips)
{
    brokensmtp_start(&B, R.dir, "drip-ehlo", DRIP_MS, 100);
    use_server(B.port);
    for (int i = 0; i < 2; i++) {
        char *err = NULL;
        double took;
        /* The back-off after one failure is a minute; after two, two. */
        cr_assert_eq(timed_run(T0 + i * 60, &err, &took), 1, "stderr:\n%s", err);
        cr_assert_leq(took, RUN_BOUND_S, "run %d took %.1f s", i, took);
        expect_in(err, "the SMTP session took longer than its 5 s limit");
        free(err);
    }
    expect_still_queued();
}

/* A server that hangs up: a clear error at once, and the event kept. */
static void broken(const char *mode, const char *want_a, const char *want_b)
{
    brokensmtp_start(&B, R.dir, mode, DRIP_MS, 100);
    use_server(B.port);
    char *err = NULL;
    double took;
    cr_assert_eq(timed_run(T0, &err, &took), 1, "stderr:\n%s", err);
    cr_assert_leq(took, RUN_BOUND_S, "the run took %.1f s", took);
    char *server = xasprintf("receiver 'mail' (email): 127.0.0.1:%d: ", B.port);
    expect_in(err, server);
    expect_in(err, want_a);
    expect_in(err, want_b);
    expect_in(err, "1 event kept for a later run");
    free(server);
    free(err);
    expect_still_queued();
}

Test(fault_smtp, a_server_that_closes_after_the_greeting_is_named_and_the_event_kept)
{
    broken("close", "the session ended before the server accepted the message: ",
           "(waiting for the reply to EHLO)");
}

Test(fault_smtp, a_server_that_closes_in_the_middle_of_the_message_is_named)
{
    broken("close-data",
           "the session ended before the server accepted the message: ", "the end of the message");
    char *log = brokensmtp_log(&B);
    expect_in(log, "BODY closed after the first line");
    free(log);
}

Test(fault_smtp, a_server_that_refuses_the_session_is_quoted)
{
    broken("refuse", "the session ended before the server accepted the message",
           "421 4.3.2 service not available");
}

Test(fault_smtp, a_server_that_refuses_every_recipient_is_quoted)
{
    broken("refuse-rcpt",
           "every recipient refused: <oncall@example.org>: ", "550 5.1.1 no such user");
}
