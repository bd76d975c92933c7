/* The table of transports, the one entry point that dispatches to them,
 * and the template context every transport renders. */
#include "notify/notify.h"
#include "alerttext.h"
#include "templates.h"

#include "util/buf.h"
#include "util/redact.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct notifier *const notifiers[] = {
    &notifier_webhook,    &notifier_file,      &notifier_email,    &notifier_slack,
    &notifier_teams,      &notifier_pagerduty, &notifier_opsgenie, &notifier_slack_app,
    &notifier_googlechat, &notifier_chatwork,  &notifier_pushover,
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

unsigned notify_pace_ms(enum receiver_type type)
{
    const struct notifier *n = notify_find(type);
    return n ? n->pace_ms : 0;
}

/* A password and the forms in which a login sends it: AUTH LOGIN in
 * base64, AUTH PLAIN "\0user\0password" in base64. */
static void add_login(struct redact *secrets, const char *username, const char *password)
{
    if (!password)
        return;
    const char *user = username ? username : "";
    size_t ul = strlen(user), pl = strlen(password);
    char *blob = xmalloc(ul + pl + 2);
    blob[0] = '\0';
    memcpy(blob + 1, user, ul + 1);
    memcpy(blob + ul + 2, password, pl);
    redact_add(secrets, password);
    char *b64 = redact_base64(password, pl);
    redact_add(secrets, b64);
    free(b64);
    b64 = redact_base64(blob, ul + pl + 2);
    redact_add(secrets, b64);
    free(b64);
    free(blob);
}

void notify_add_secrets(struct redact *secrets, const struct receiver_conf *r)
{
    switch (r->type) {
    case RECEIVER_WEBHOOK:
        redact_add_url(secrets, r->webhook.url);
        for (size_t i = 0; i < r->webhook.n_headers; i++)
            redact_add_header(secrets, r->webhook.headers[i].value);
        break;
    case RECEIVER_EMAIL:
        add_login(secrets, r->email.username, r->email.password);
        /* the ack: mailbox's login goes the same ways (IMAP AUTHENTICATE
         * PLAIN or LOGIN), and its PIN is a secret of its own */
        add_login(secrets, r->email.ack.username, r->email.ack.password);
        if (r->email.ack.pin)
            redact_add(secrets, r->email.ack.pin);
        break;
    case RECEIVER_SLACK:
        redact_add_url(secrets, r->slack.url);
        break;
    case RECEIVER_TEAMS:
        redact_add_url(secrets, r->teams.url);
        break;
    case RECEIVER_GOOGLECHAT:
        redact_add_url(secrets, r->googlechat.url);
        break;
    case RECEIVER_CHATWORK:
        /* Sent as the X-ChatWorkToken header's value. */
        redact_add_header(secrets, r->chatwork.token);
        break;
    case RECEIVER_PUSHOVER:
        /* Sent in a form body and a receipt's query, percent-encoding
         * nothing (Pushover's keys are letters and digits). */
        redact_add_header(secrets, r->pushover.token);
        redact_add_header(secrets, r->pushover.user);
        break;
    case RECEIVER_PAGERDUTY: /* in the body's routing_key */
        redact_add(secrets, r->pagerduty.routing_key);
        break;
    case RECEIVER_OPSGENIE: /* in the header "Authorization: GenieKey KEY" */
        redact_add(secrets, r->opsgenie.api_key);
        break;
    case RECEIVER_SLACK_APP: {
        /* the bot token, as it is and as its Authorization header sends it */
        char *bearer = xasprintf("Bearer %s", r->slack.token);
        redact_add(secrets, r->slack.token);
        redact_add_header(secrets, bearer);
        free(bearer);
        break;
    }
    case RECEIVER_FILE:
        break;
    }
}

static struct redact *receiver_secrets(const struct receiver_conf *r)
{
    struct redact *secrets = redact_new();
    notify_add_secrets(secrets, r);
    return secrets;
}

struct redact *notify_secrets(const struct config *c)
{
    struct redact *secrets = redact_new();
    for (size_t i = 0; i < c->n_receivers; i++)
        notify_add_secrets(secrets, &c->receivers[i]);
    for (size_t i = 0; i < c->n_accounts; i++) {
        redact_add(secrets, c->accounts[i].api_key);
        redact_add(secrets, c->accounts[i].login_pass);
    }
    redact_add_url(secrets, c->self.heartbeat);
    return secrets;
}

/* Redacts the string in `text` (a buffer of `size` bytes) in place, cut to
 * fit. */
static void redact_in(char *text, size_t size, const struct redact *secrets)
{
    char *clean = redact_text(secrets, text);
    snprintf(text, size, "%s", clean);
    free(clean);
}

size_t notify_fit(const struct notify_env *env, const struct receiver_conf *r,
                  const struct notify_message *m)
{
    const struct notifier *nt = notify_find(r->type);
    size_t k = nt && nt->fit ? nt->fit(env, r, m) : m->n;
    return k < 1 ? 1 : k > m->n ? m->n : k;
}

int notify_send(const struct notify_env *env, const struct receiver_conf *r,
                const struct notify_message *m, struct notify_result *res, struct err *e)
{
    const struct notifier *nt = notify_find(r->type);
    *res = (struct notify_result){0};
    if (!nt) {
        res->permanent = true;
        return err_set(e, "receiver '%s': no transport for its type", r->name);
    }
    int rc = nt->send(env, r, m, res, e);
    if (rc < 0) {
        json_object_put(res->refs);
        res->refs = NULL;
    }
    if (rc < 0)
        err_prefix(e, "receiver '%s' (%s)", r->name, nt->name);
    /* Whatever a transport wrote, what leaves here for logs, the state and
     * test-receiver holds none of the receiver's secrets in any form, even
     * where a transport quoted a far end without redacting. */
    struct redact *secrets = receiver_secrets(r);
    redact_in(res->answer, sizeof res->answer, secrets);
    if (rc < 0 && e)
        redact_in(e->msg, sizeof e->msg, secrets);
    redact_free(secrets);
    return rc < 0 ? -1 : 0;
}

void notify_acks_free(struct notify_ack *acks, size_t n)
{
    for (size_t i = 0; acks && i < n; i++) {
        free(acks[i].by);
        free(acks[i].note);
    }
    free(acks);
}

bool notify_collects(const struct receiver_conf *r)
{
    const struct notifier *nt = notify_find(r->type);
    if (r->type == RECEIVER_EMAIL && !r->email.ack.imap)
        return false; /* a mailbox to read is the email receiver's option */
    return nt && nt->collect;
}

int notify_collect(const struct notify_env *env, const struct receiver_conf *r,
                   const struct notify_open *open, size_t n, long long now,
                   struct notify_ack **acks, size_t *n_acks, struct err *e)
{
    const struct notifier *nt = notify_find(r->type);
    *acks = NULL;
    *n_acks = 0;
    if (!nt || !nt->collect || n == 0)
        return 0;
    if (nt->collect(env, r, open, n, now, acks, n_acks, e) < 0) {
        err_prefix(e, "receiver '%s' (%s): acknowledgements", r->name, nt->name);
        struct redact *secrets = receiver_secrets(r);
        redact_in(e->msg, sizeof e->msg, secrets);
        redact_free(secrets);
        notify_acks_free(*acks, *n_acks);
        *acks = NULL;
        *n_acks = 0;
        return -1;
    }
    /* only the incidents it was asked about: a service is not trusted to
     * name another */
    size_t kept = 0;
    for (size_t i = 0; i < *n_acks; i++) {
        bool asked = false;
        for (size_t k = 0; k < n && !asked; k++)
            asked = open[k].id == (*acks)[i].id;
        if (asked) {
            (*acks)[kept++] = (*acks)[i];
        } else {
            free((*acks)[i].by);
            free((*acks)[i].note);
        }
    }
    *n_acks = kept;
    return 0;
}

enum notify_rank notify_rank_of(const struct event *ev)
{
    static const struct {
        const char *state;
        enum notify_rank rank;
    } states[] = {
        {"alarm", NOTIFY_RANK_ALARM},
        {"sensor-error", NOTIFY_RANK_SENSOR_ERROR},
        {"communication", NOTIFY_RANK_COMMUNICATION},
        {"battery", NOTIFY_RANK_BATTERY},
        {"recovered", NOTIFY_RANK_RECOVERED},
    };
    enum notify_rank rank = NOTIFY_RANK_OTHER;
    if (ev->kind && (!strcmp(ev->kind, "gap") || !strcmp(ev->kind, "relay")))
        return NOTIFY_RANK_REPORT;
    const char *state = ev->state;
    struct alert_reading rd = {0};
    if (!state) { /* an event built by hand: read as event_to_json reads it */
        alert_classify(&rd, ev->kind, ev->text);
        state = alert_state_name(rd.state);
    }
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        if (!strcmp(state, states[i].state))
            rank = states[i].rank;
    alert_reading_clear(&rd);
    return rank;
}

/* notify_order's sort keys of one event. */
struct order_key {
    size_t index;  /* in the message as given */
    int rank;      /* of the event */
    int dev_rank;  /* of its device's most important event */
    size_t dev_at; /* the index of its device's first event */
};

static int order_compare(const void *pa, const void *pb)
{
    const struct order_key *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->dev_rank != b->dev_rank)
        return a->dev_rank < b->dev_rank ? -1 : 1;
    if (a->dev_at != b->dev_at)
        return a->dev_at < b->dev_at ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The index of the first event of `events[0..n)` from the device of
 * `ev`. */
static size_t device_first(const struct event *events, size_t n, const struct event *ev)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(events[i].serial, ev->serial))
            return i;
    return n;
}

/* An event's serial and place, to find each device's first event. */
struct by_serial {
    const char *serial;
    size_t index;
};

static int serial_compare(const void *pa, const void *pb)
{
    const struct by_serial *a = pa, *b = pb;
    int c = strcmp(a->serial, b->serial);
    return c ? c : a->index < b->index ? -1 : a->index > b->index;
}

/* The rank an event is ordered by: its rank, but an incident's
 * acknowledgement goes with the alarms, ahead of a recovery that may
 * share its message: people read that someone had it, then that it is
 * over. */
static int order_rank(const struct event *ev)
{
    struct json_object *v = NULL;
    if (ev->incident && json_object_object_get_ex(ev->incident, "notice", &v) &&
        !strcmp(json_object_get_string(v), "acknowledged"))
        return NOTIFY_RANK_ALARM;
    return (int)notify_rank_of(ev);
}

void notify_order(size_t *out, const struct event *events, size_t n)
{
    struct order_key *keys = xcalloc(n ? n : 1, sizeof *keys);
    struct by_serial *serials = xcalloc(n ? n : 1, sizeof *serials);
    for (size_t i = 0; i < n; i++) {
        keys[i].index = i;
        keys[i].rank = order_rank(&events[i]);
        keys[i].dev_rank = NOTIFY_RANKS;
        serials[i] = (struct by_serial){events[i].serial, i};
    }
    /* Each device's first event, in n log n: a run's outbox can be long. */
    qsort(serials, n, sizeof *serials, serial_compare);
    for (size_t i = 0, first = 0; i < n; i++) {
        if (i == 0 || strcmp(serials[i].serial, serials[i - 1].serial) != 0)
            first = serials[i].index;
        keys[serials[i].index].dev_at = first;
    }
    free(serials);
    /* A device's most important event, kept on its first event's key. */
    for (size_t i = 0; i < n; i++) {
        struct order_key *first = &keys[keys[i].dev_at];
        if (keys[i].rank < first->dev_rank)
            first->dev_rank = keys[i].rank;
    }
    for (size_t i = 0; i < n; i++)
        keys[i].dev_rank = keys[keys[i].dev_at].dev_rank;
    qsort(keys, n, sizeof *keys, order_compare);
    for (size_t i = 0; i < n; i++)
        out[i] = keys[i].index;
    free(keys);
}

char *notify_summary(const struct event *events, size_t n, bool devices)
{
    static const char *const words[NOTIFY_RANKS][2] = {
        [NOTIFY_RANK_ALARM] = {"alarm", "alarms"},
        [NOTIFY_RANK_SENSOR_ERROR] = {"sensor error", "sensor errors"},
        [NOTIFY_RANK_COMMUNICATION] = {"communication alert", "communication alerts"},
        [NOTIFY_RANK_REPORT] = {"report from wsrelay", "reports from wsrelay"},
        [NOTIFY_RANK_BATTERY] = {"battery alert", "battery alerts"},
        [NOTIFY_RANK_RECOVERED] = {"recovery", "recoveries"},
        [NOTIFY_RANK_OTHER] = {"other alert", "other alerts"},
    };
    size_t count[NOTIFY_RANKS] = {0};
    enum notify_rank *rank = xcalloc(n ? n : 1, sizeof *rank);
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++)
        count[rank[i] = notify_rank_of(&events[i])]++;
    for (int r = 0; r < NOTIFY_RANKS; r++) {
        if (!count[r])
            continue;
        buf_printf(&b, "%s%zu %s", b.len ? ", " : "", count[r], words[r][count[r] != 1]);
        if (!devices)
            continue;
        /* The devices of the most important rank, when they are several. */
        size_t on = 0;
        for (size_t i = 0; i < n; i++)
            if (rank[i] == (enum notify_rank)r) {
                size_t j = 0;
                while (j < i &&
                       !(rank[j] == rank[i] && !strcmp(events[j].serial, events[i].serial)))
                    j++;
                on += j == i;
            }
        if (on > 1)
            buf_printf(&b, " on %zu devices", on);
        devices = false;
    }
    free(rank);
    return buf_steal(&b);
}

char *notify_devices(const struct event *events, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        if (device_first(events, n, &events[i]) != i)
            continue;
        const char *who = events[i].name && *events[i].name ? events[i].name : events[i].serial;
        buf_printf(&b, "%s%s", b.len ? ", " : "", who);
    }
    return buf_steal(&b);
}

/* What is said of the message as a whole (notify_context). */
static void add_whole(struct json_object *ctx, const struct notify_message *m)
{
    char *summary = notify_summary(m->events, m->n, true);
    char *tally = notify_summary(m->events, m->n, false);
    char *devices = notify_devices(m->events, m->n);
    bool alone = m->part == 0 || m->parts == 0;
    json_object_object_add(ctx, "summary", json_object_new_string(summary));
    json_object_object_add(ctx, "tally", json_object_new_string(tally));
    json_object_object_add(ctx, "devices", json_object_new_string(devices));
    json_object_object_add(ctx, "several", json_object_new_boolean(m->n > 1));
    json_object_object_add(ctx, "part", json_object_new_int64(alone ? 1 : (int64_t)m->part));
    json_object_object_add(ctx, "parts", json_object_new_int64(alone ? 1 : (int64_t)m->parts));
    json_object_object_add(ctx, "split", json_object_new_boolean(!alone && m->parts > 1));
    free(summary);
    free(tally);
    free(devices);
}

struct json_object *notify_context_first(const char *receiver, const struct notify_message *m,
                                         size_t k)
{
    struct json_object *events = json_object_new_array();
    if (k > m->n)
        k = m->n;
    for (size_t i = 0; i < k; i++)
        json_object_array_add(events, event_to_json(&m->events[i]));
    struct json_object *ctx = templates_context(receiver, events, m->now, m->test);
    json_object_object_add(ctx, "count", json_object_new_int64((int64_t)m->n));
    json_object_object_add(ctx, "more", json_object_new_int64((int64_t)(m->n - k)));
    add_whole(ctx, m);
    return ctx;
}

struct json_object *notify_context(const char *receiver, const struct notify_message *m)
{
    return notify_context_first(receiver, m, m->n);
}

int notify_render(struct buf *out, const struct notify_env *env, const char *explicit_path,
                  const char *name, const struct json_object *ctx, struct err *e)
{
    struct template *t = NULL;
    const char *dir = env ? env->templates_dir : NULL;
    int rc = -1;
    if (templates_load(&t, explicit_path, dir, name, e) < 0) {
        /* A file that cannot be read now (permissions, a deploy under way)
         * may be readable on the next run; one that does not compile will
         * not be. */
        char *path = explicit_path ? xstrdup(explicit_path)
                     : dir         ? xasprintf("%s/%s", dir, name)
                                   : NULL;
        bool unreadable = path && access(path, F_OK) == 0 && access(path, R_OK) < 0;
        bool missing = explicit_path && access(explicit_path, F_OK) < 0;
        rc = unreadable || missing ? -1 : -2;
        free(path);
        goto out;
    }
    /* The escaping belongs to the role ("slack.json" is Slack's JSON),
     * whatever a custom file is called: a device name must never break a
     * payload, nor be read as markup. */
    if (template_render(out, t, ctx, templates_escape(name), templates_partial, (void *)dir, e) <
        0) {
        rc = -2;
        goto out;
    }
    rc = 0;
out:
    template_free(t);
    return rc;
}

struct json_object *notify_parse_json(const char *text, struct err *e)
{
    struct json_tokener *tok = json_tokener_new();
    size_t len = strlen(text);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (obj && strspn(text + used, " \t\r\n") != len - used) {
        json_object_put(obj);
        obj = NULL;
    }
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        err_set(e, "it is not one JSON object");
        return NULL;
    }
    return obj;
}

int notify_render_text(struct buf *out, const struct notify_env *env, const char *explicit_path,
                       const char *receiver, const struct notify_message *m, struct err *e)
{
    struct json_object *ctx = notify_context(receiver, m);
    int rc = notify_render(out, env, explicit_path, "file.txt", ctx, e);
    json_object_put(ctx);
    return rc;
}

int notify_check_templates(const struct notify_env *env, const struct receiver_conf *r,
                           struct err *e)
{
    /* Each transport's templates: the receiver's own file, or the name
     * looked up in the templates directory and then among the built-ins. */
    struct {
        const char *path;
        const char *name;
    } uses[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    switch (r->type) {
    case RECEIVER_WEBHOOK:
        uses[0].path = r->webhook.template, uses[0].name = "webhook.json";
        break;
    case RECEIVER_FILE:
        uses[0].path = r->file.template, uses[0].name = "file.txt";
        break;
    case RECEIVER_EMAIL:
        uses[0].name = "email-subject.txt";
        uses[1].path = r->email.template, uses[1].name = "email.txt";
        uses[2].path = r->email.html_template, uses[2].name = "email.html";
        break;
    case RECEIVER_SLACK:
    case RECEIVER_SLACK_APP:
        uses[0].path = r->slack.template, uses[0].name = "slack.json";
        break;
    case RECEIVER_TEAMS:
        uses[0].path = r->teams.template, uses[0].name = "teams.json";
        break;
    case RECEIVER_GOOGLECHAT:
        uses[0].path = r->googlechat.template;
        uses[0].name =
            r->googlechat.language == CHAT_LANG_JA ? "googlechat-ja.txt" : "googlechat-en.txt";
        break;
    case RECEIVER_CHATWORK:
        uses[0].path = r->chatwork.template;
        uses[0].name = r->chatwork.language == CHAT_LANG_JA ? "chatwork-ja.txt" : "chatwork-en.txt";
        break;
    case RECEIVER_PUSHOVER:
        uses[0].path = r->pushover.template, uses[0].name = "pushover.txt";
        break;
    case RECEIVER_PAGERDUTY:
    case RECEIVER_OPSGENIE:
        break; /* their payloads are the service's fields, without a template */
    }
    for (size_t i = 0; i < 3 && uses[i].name; i++) {
        struct template *t = NULL;
        const char *dir = env ? env->templates_dir : NULL;
        int rc = templates_load(&t, uses[i].path, dir, uses[i].name, e);
        if (rc == 0)
            rc = templates_check(t, dir, e);
        template_free(t);
        if (rc < 0)
            return err_prefix(e, "receiver '%s'", r->name);
    }
    return 0;
}
