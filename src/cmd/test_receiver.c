/* `wsrelay test-receiver NAME`: one marked test notification sent through
 * the receiver's real path, and what the far end answered, with every
 * secret of the configuration redacted. Touches no state. */
#include "cmd/cmd.h"
#include "event.h"
#include "notify/notify.h"
#include "run/run.h"
#include "util/redact.h"

#include <stdlib.h>
#include <time.h>

static const struct opt_spec opts[] = {{0}};

/* The event of a test notification: plainly a test, from no real device. */
static struct event test_event(long long now)
{
    struct event ev = {
        .account = (char *)"test",
        .serial = (char *)"TEST0000",
        .model = (char *)"wsrelay",
        .name = (char *)"wsrelay test",
        .base_serial = (char *)"TEST0000",
        .base_model = (char *)"wsrelay",
        .base_name = (char *)"wsrelay test",
        .unixtime = now,
        .kind = (char *)"ch1",
        .text = (char *)"TEST: this is a test notification from wsrelay; no device raised an alert",
    };
    return ev;
}

static int cmd_test_receiver(const struct cmd_globals *g, const struct opt_args *a)
{
    struct config *c = NULL;
    int rc = RUN_USAGE;
    if (a->n_operands != 1) {
        cmd_usage(stderr, &cmd_test_receiver_entry);
        return RUN_USAGE;
    }
    if (cmd_load_config(&c, g) < 0)
        return RUN_USAGE;
    const struct receiver_conf *r = config_receiver(c, a->operands[0]);
    if (!r) {
        fprintf(stderr, "wsrelay: test-receiver: no receiver named '%s' in %s\n", a->operands[0],
                c->path);
        goto out;
    }
    struct event ev = test_event((long long)time(NULL));
    struct notify_env env = {.templates_dir = c->templates_dir};
    struct notify_message m = {.events = &ev, .n = 1, .now = ev.unixtime, .test = true};
    struct notify_result res;
    struct err e;
    int sent = notify_send(&env, r, &m, &res, &e);
    json_object_put(res.refs); /* a test belongs to no incident */
    /* The far end may quote another receiver's secret, or an account's. */
    struct redact *secrets = notify_secrets(c);
    char *answer = redact_text(secrets, res.answer);
    char *why = redact_text(secrets, sent < 0 ? e.msg : "");
    redact_free(secrets);
    printf("receiver %s (%s): %s\n", r->name, notify_type_name(r->type),
           sent == 0 ? "test notification accepted" : "test notification NOT accepted");
    if (res.status)
        printf("  the far end answered %ld%s%s\n", res.status, *answer ? ": " : "", answer);
    if (sent < 0)
        printf("  %s%s\n", why, res.permanent ? " (retrying would not help)" : "");
    free(answer);
    free(why);
    rc = sent == 0 ? RUN_OK : RUN_FAILED;
    /* A receiver that takes acknowledgements (an email receiver's ack:
     * mailbox) is asked too, about the test alone: that it logs in and
     * reads, never acknowledging anything. */
    if (notify_collects(r)) {
        struct notify_open probe = {.id = 0, .key = "test", .first = &ev};
        struct notify_ack *acks = NULL;
        size_t n_acks = 0;
        if (notify_collect(&env, r, &probe, 1, ev.unixtime, &acks, &n_acks, &e) < 0) {
            secrets = notify_secrets(c);
            why = redact_text(secrets, e.msg);
            redact_free(secrets);
            printf("  acknowledgements NOT readable: %s\n", why);
            free(why);
            rc = RUN_FAILED;
        } else {
            printf("  acknowledgements readable: %zu repl%s to this test\n", n_acks,
                   n_acks == 1 ? "y" : "ies");
        }
        notify_acks_free(acks, n_acks);
    }
out:
    config_free(c);
    return rc;
}

const struct cmd_entry cmd_test_receiver_entry = {
    "test-receiver",
    "NAME",
    "send a marked test notification to one receiver and show what it answered",
    opts,
    cmd_test_receiver,
};
