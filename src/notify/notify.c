/* The table of transports, the one entry point that dispatches to them,
 * and the template context every transport renders. */
#include "notify/notify.h"
#include "templates.h"

#include "util/redact.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct notifier *const notifiers[] = {
    &notifier_webhook, &notifier_file, &notifier_email, &notifier_slack, &notifier_teams,
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

/* Adds every secret of a receiver's configuration to `secrets`. */
static void receiver_add_secrets(struct redact *secrets, const struct receiver_conf *r)
{
    switch (r->type) {
    case RECEIVER_WEBHOOK:
        redact_add_url(secrets, r->webhook.url);
        for (size_t i = 0; i < r->webhook.n_headers; i++)
            redact_add_header(secrets, r->webhook.headers[i].value);
        break;
    case RECEIVER_EMAIL:
        redact_add(secrets, r->email.password);
        break;
    case RECEIVER_SLACK:
        redact_add_url(secrets, r->slack.url);
        break;
    case RECEIVER_TEAMS:
        redact_add_url(secrets, r->teams.url);
        break;
    case RECEIVER_FILE:
        break;
    }
}

static struct redact *receiver_secrets(const struct receiver_conf *r)
{
    struct redact *secrets = redact_new();
    receiver_add_secrets(secrets, r);
    return secrets;
}

struct redact *notify_secrets(const struct config *c)
{
    struct redact *secrets = redact_new();
    for (size_t i = 0; i < c->n_receivers; i++)
        receiver_add_secrets(secrets, &c->receivers[i]);
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
        uses[0].path = r->slack.template, uses[0].name = "slack.json";
        break;
    case RECEIVER_TEAMS:
        uses[0].path = r->teams.template, uses[0].name = "teams.json";
        break;
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
