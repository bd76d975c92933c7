/* The table of transports and the one entry point that dispatches to them. */
#include "notify/notify.h"

/* Slack and Teams receivers are accepted in the configuration before their
 * transports exist. Until slack.c and teams.c replace these rows, sending
 * to one fails loudly (the run exits 1) and keeps the events queued, so
 * nothing is lost and the other receivers still get everything; refusing
 * the configuration instead would stop every receiver. */
static int not_yet(const struct receiver_conf *r, const struct event *events, size_t n,
                   struct err *e)
{
    (void)events;
    (void)n;
    return err_set(e, "the %s transport is not implemented yet in this build; the events stay "
                      "queued",
                   r->type == RECEIVER_SLACK ? "slack" : "teams");
}

static const struct notifier notifier_slack_pending = {
    .type = RECEIVER_SLACK,
    .name = "slack",
    .send = not_yet,
};

static const struct notifier notifier_teams_pending = {
    .type = RECEIVER_TEAMS,
    .name = "teams",
    .send = not_yet,
};

static const struct notifier *const notifiers[] = {
    &notifier_webhook,
    &notifier_file,
    &notifier_email,
    &notifier_slack_pending,
    &notifier_teams_pending,
};

static const struct notifier *notify_find(enum receiver_type type)
{
    for (size_t i = 0; i < sizeof notifiers / sizeof notifiers[0]; i++)
        if (notifiers[i]->type == type)
            return notifiers[i];
    return NULL;
}

const char *notify_type_name(enum receiver_type type)
{
    const struct notifier *n = notify_find(type);
    return n ? n->name : "unknown";
}

int notify_send(const struct receiver_conf *r, const struct event *events, size_t n,
                struct err *e)
{
    const struct notifier *nt = notify_find(r->type);
    if (!nt)
        return err_set(e, "receiver '%s': no transport for its type", r->name);
    if (nt->send(r, events, n, e) < 0)
        return err_prefix(e, "receiver '%s' (%s)", r->name, nt->name);
    return 0;
}
