/* The table of transports and the one entry point that dispatches to them. */
#include "notify/notify.h"

static const struct notifier *const notifiers[] = {
    &notifier_webhook,
    &notifier_file,
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
