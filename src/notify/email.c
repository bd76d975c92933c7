/* The email receiver: one mail per message. Its subject and bodies come
 * from the email templates over the message's context, its charts are
 * drawn as images of the mail (chartproc.h), its Message-ID and the mail
 * it follows up put it in its alarm's thread (an incident's reminders,
 * escalations, acknowledgement and closing under its first mail); mime.h
 * composes it and notify/smtp.h hands it to the server. */
#include "chartproc.h"
#include "mime.h"
#include "notify/imap.h"
#include "notify/notify.h"
#include "notify/smtp.h"
#include "util/buf.h"
#include "util/jsonv.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define EMAIL_CHARTS_MAX 5 /* charts in one mail: those of its first events with a trend */
/* The display columns of a subject: a mail list shows less, and an alert
 * text can be 4 KB. */
#define EMAIL_SUBJECT_COLUMNS 200

struct email_content {
    char *subject;
    char *text;
    char *html; /* NULL: text only */
    struct mime_image images[EMAIL_CHARTS_MAX];
    size_t n_images;
};

static void email_content_clear(struct email_content *c)
{
    free(c->subject);
    free(c->text);
    free(c->html);
    for (size_t i = 0; i < c->n_images; i++) {
        free((char *)c->images[i].content_id);
        free((char *)c->images[i].filename);
        free((unsigned char *)c->images[i].data);
    }
    memset(c, 0, sizeof *c);
}

/* The string member `key` of `obj`, or "" when it has none. */
static const char *member_text(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : "";
}

/* What the chart of `ev` shows, in words, for those who do not see the
 * picture (its alt text): "Chart of Freezer 3, Temperature, last 6 h:
 * 3.9 to 9.5 °C, now 9.5 (rising); upper limit 8 °C; alarm at 11:26". */
static char *chart_alt(const struct event *ev, struct json_object *trend)
{
    struct buf b;
    buf_init(&b, 0);
    const char *unit = member_text(trend, "unit");
    const char *space = *unit ? " " : "";
    const struct series_channel *ch = &ev->trend->series.channels[0];
    buf_printf(&b, "Chart of %s, ", ev->name && *ev->name ? ev->name : ev->serial);
    if (ch->name && *ch->name)
        buf_printf(&b, "%s", ch->name);
    else
        buf_printf(&b, "ch%d", ch->num);
    buf_printf(&b, ", last %s: %s to %s%s%s, now %s (%s)", member_text(trend, "span"),
               member_text(trend, "min"), member_text(trend, "max"), space, unit,
               member_text(trend, "last"), member_text(trend, "direction"));
    if (*member_text(trend, "upper_limit"))
        buf_printf(&b, "; upper limit %s%s%s", member_text(trend, "upper_limit"), space, unit);
    if (*member_text(trend, "lower_limit"))
        buf_printf(&b, "; lower limit %s%s%s", member_text(trend, "lower_limit"), space, unit);
    char when[32];
    event_local_time(when, sizeof when, ev); /* "YYYY-MM-DD HH:MM:SS +HH:MM" */
    bool reading = !strcmp(ev->kind, "reading");
    bool recovered = ev->state && !strcmp(ev->state, "recovered");
    const char *what = recovered   ? (reading ? "back within the limit" : "recovery")
                       : reading   ? "early warning"
                       : ev->state ? ev->state
                                   : "alert";
    buf_printf(&b, "; %s at %.5s", what, when + 11);
    return buf_steal(&b);
}

/* Draws the charts of the first events that have a trend, as images of
 * the mail, and names each in its event's context (events[i].trend's
 * chart_cid, and chart_alt saying what it shows in words), which
 * email.html shows with <img src="cid:..." alt="...">. Each image has a
 * file name of its own: SERIAL-chN.png, then SERIAL-chN-2.png for the
 * second chart of that channel (an alarm and its recovery). An event
 * whose chart cannot be drawn keeps its sparkline (logged). A try that
 * fails counts against EMAIL_CHARTS_MAX as one that draws; a helper that
 * fails (chartproc_png's -2: it hangs, dies, answers nonsense, or the run
 * is out of time or stopping) draws no more charts in the run
 * (env->extras), so every later event keeps its sparkline at once. */
static void email_charts(struct email_content *out, struct json_object *ctx,
                         const struct notify_env *env, const struct notify_message *m)
{
    struct json_object *events = NULL;
    struct notify_extras *x = env->extras;
    size_t tries = 0;
    const struct event *drawn[EMAIL_CHARTS_MAX]; /* the event of each image */
    if (!json_object_object_get_ex(ctx, "events", &events))
        return;
    size_t n = json_object_array_length(events);
    for (size_t i = 0; i < n && i < m->n && tries < EMAIL_CHARTS_MAX && !(x && x->charts_broken);
         i++) {
        const struct event *ev = &m->events[i];
        struct json_object *trend = NULL;
        unsigned char *png = NULL;
        size_t len = 0;
        struct err e;
        if (!ev->trend ||
            !json_object_object_get_ex(json_object_array_get_idx(events, i), "trend", &trend) ||
            !trend)
            continue;
        tries++;
        int rc = chartproc_png(&png, &len, ev, x ? &x->charts : NULL, &e);
        if (rc == -2 && x) {
            x->charts_broken = true;
            log_warn("email: %s: no chart: %s; the mails of this run keep their sparklines",
                     ev->serial, e.msg);
        } else if (rc < 0) {
            log_info("email: %s: no chart: %s", ev->serial, e.msg);
        }
        if (rc < 0)
            continue;
        struct mime_image *img = &out->images[out->n_images++];
        img->content_id = xasprintf("chart-%zu@wsrelay", out->n_images);
        img->content_type = "image/png";
        int num = ev->trend->series.channels[0].num;
        size_t same = 1; /* charts of this device and channel so far, this one too */
        for (size_t k = 0; k + 1 < out->n_images; k++)
            same += !strcmp(drawn[k]->serial, ev->serial) &&
                    drawn[k]->trend->series.channels[0].num == num;
        drawn[out->n_images - 1] = ev;
        img->filename = same > 1 ? xasprintf("%s-ch%d-%zu.png", ev->serial, num, same)
                                 : xasprintf("%s-ch%d.png", ev->serial, num);
        img->data = png;
        img->len = len;
        json_object_object_add(trend, "chart_cid", json_object_new_string(img->content_id));
        char *alt = chart_alt(ev, trend);
        json_object_object_add(trend, "chart_alt", json_object_new_string(alt));
        free(alt);
    }
}

/* Leaves out the charts the HTML does not show (a template of the
 * receiver's own that has no <img src="cid:...">): a mail client would
 * list them as attachments. */
static void drop_unshown_charts(struct email_content *c)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->n_images; i++) {
        struct mime_image *img = &c->images[i];
        char *ref = xasprintf("cid:%s", img->content_id);
        bool shown = c->html && strstr(c->html, ref);
        free(ref);
        if (shown) {
            c->images[kept++] = *img;
            continue;
        }
        free((char *)img->content_id);
        free((char *)img->filename);
        free((unsigned char *)img->data);
    }
    c->n_images = kept;
}

/* `line` cut to EMAIL_SUBJECT_COLUMNS display columns (a wide character
 * counts two), its last one "…" when cut, never inside a character. */
static void fit_subject(char *line)
{
    size_t len = strlen(line), i = 0, columns = 0, keep = 0;
    while (i < len) {
        uint32_t cp;
        size_t step = utf8_decode(&cp, line + i, len - i);
        int w = step ? utf8_char_width(cp) : 1;
        if (!step)
            step = 1;
        if (w < 0)
            w = 0;
        if (columns + (size_t)w > EMAIL_SUBJECT_COLUMNS) {
            memcpy(line + keep, "…", sizeof "…");
            return;
        }
        columns += (size_t)w;
        i += step;
        if (columns < EMAIL_SUBJECT_COLUMNS)
            keep = i; /* room for "…" after it */
    }
}

/* Subject and bodies of the mail: the email-subject.txt, email.txt (or
 * the receiver's `template`) and email.html (or its `html_template`)
 * templates over the message's context. The subject is one line, trimmed,
 * of at most EMAIL_SUBJECT_COLUMNS columns.
 * Returns as notify_render does: -1 worth retrying, -2 a template to fix. */
static int email_render(struct email_content *out, const struct notify_env *env,
                        const struct receiver_conf *r, const struct notify_message *m,
                        struct err *e)
{
    int rc = -1;
    struct json_object *ctx = notify_context(r->name, m);
    struct buf subject, text, html;
    email_charts(out, ctx, env, m);
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
    out->subject = xrealloc(xstrndup(line + start, end - start), end - start + sizeof "…");
    fit_subject(out->subject);
    free(line);
    out->text = buf_steal(&text);
    out->html = buf_steal(&html);
    drop_unshown_charts(out);
    rc = 0;
out:
    buf_free(&subject);
    buf_free(&text);
    buf_free(&html);
    json_object_put(ctx);
    return rc;
}

/* The kind part of a Message-ID: an early warning's channel is part of
 * it ("reading-ch1"), as in its event id. */
static char *id_kind(const struct event *ev)
{
    if (ev->channel > 0 && !strcmp(ev->kind, "reading"))
        return xasprintf("reading-ch%d", ev->channel);
    return xstrdup(ev->kind);
}

/* The Message-ID of the mail a lone event would have had. */
static char *lone_id(const struct receiver_conf *r, const struct event *ev, long long unixtime,
                     size_t n, const char *host)
{
    char *kind = id_kind(ev);
    char *id = mime_message_id(r->name, ev->serial, kind, unixtime, n, host);
    free(kind);
    return id;
}

/* The integer member `key` of an incident snapshot; 0 when it has none. */
static long long snapshot_int(struct json_object *inc, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(inc, key, &v) ? json_object_get_int64(v) : 0;
}

/* What the notice of an incident that `ev` is adds to its mail's id, in
 * `out` (at least 32 bytes): "reminder2", "escalation1", "acknowledged",
 * "closed". A notice after the first is a copy of the incident's first
 * event (its serial, kind and time), whose id would be the first mail's:
 * mail services drop a repeated id as a duplicate. The part comes from
 * the notice and its number, never from the clock, so that a retry keeps
 * its id. "" for the first notice, for a resolution (the recovery's own
 * event, with an id of its own) and for an event of no incident. */
static void notice_part(char *out, size_t size, const struct event *ev)
{
    out[0] = '\0';
    if (!ev->incident)
        return;
    const char *notice = member_text(ev->incident, "notice");
    if (!strcmp(notice, "reminder"))
        snprintf(out, size, "reminder%lld", snapshot_int(ev->incident, "reminder"));
    else if (!strcmp(notice, "escalation"))
        snprintf(out, size, "escalation%lld", snapshot_int(ev->incident, "step"));
    else if (!strcmp(notice, "acknowledged") || !strcmp(notice, "closed") ||
             (!strcmp(notice, "resolved") && ev->unixtime == snapshot_int(ev->incident, "opened")))
        snprintf(out, size, "%s", notice);
}

/* The Message-ID of a mail whose first event is `ev`, of `n` events: the
 * lone id, with the notice's part after the kind for an incident's
 * follow-up ("ch1-reminder2": no kind of the platform ends so). */
static char *message_id(const struct receiver_conf *r, const struct event *ev, size_t n,
                        const char *host)
{
    char part[32];
    notice_part(part, sizeof part, ev);
    if (!*part)
        return lone_id(r, ev, ev->unixtime, n, host);
    char *base = id_kind(ev);
    char *kind = xasprintf("%s-%s", base, part);
    char *id = mime_message_id(r->name, ev->serial, kind, ev->unixtime, n, host);
    free(kind);
    free(base);
    return id;
}

/* Whether `ref`, a msg-id a reply names, is the mail `id` or a
 * follow-up of it (message_id: the notice's part after the kind,
 * "<wsrelay.mail.5214000A.ch1-reminder2.1794999000@example.org>"). */
static bool email_names(const char *id, const char *ref)
{
    const char *at = strrchr(id, '@');
    const char *dot = at;
    while (dot > id && *dot != '.')
        dot--;
    size_t head = (size_t)(dot - id), len = strlen(ref), tail = strlen(dot);
    if (!strcmp(id, ref))
        return true;
    if (*dot != '.' || len <= head + 1 + tail || strncmp(ref, id, head) || ref[head] != '-' ||
        strcmp(ref + len - tail, dot))
        return false;
    for (size_t i = head + 1; i < len - tail; i++)
        if (!isalnum((unsigned char)ref[i]))
            return false;
    return true;
}

/* The mail an event's mail belongs under: its thread's root. */
struct thread_root {
    const char *serial;
    char kind[32]; /* "ch1", "reading-ch1" */
    long long at;  /* its unixtime */
};

/* Sets out->kind to the kind that `root`'s lone mail has in its id
 * (id_kind). */
static void root_kind(struct thread_root *out, const struct event *root)
{
    char *kind = id_kind(root);
    snprintf(out->kind, sizeof out->kind, "%s", kind);
    free(kind);
}

/* The root of `ev`, one of the events of a mail (events[0..n)); false when
 * it starts a thread of its own (an alarm nobody warned of, an early
 * warning). An early warning's way back and an alarm that the warning
 * announced belong under the warning; a recovery under the mail of the
 * alarm it ends, or, when that alarm is in the same mail and was
 * announced, under the warning too: a mail that holds an alarm and its
 * recovery follows the warning as the alarm alone would. */
static bool thread_root(struct thread_root *out, const struct event *ev, const struct event *events,
                        size_t n)
{
    bool reading = !strcmp(ev->kind, "reading");
    int channel = reading ? ev->channel : !strncmp(ev->kind, "ch", 2) ? atoi(ev->kind + 2) : 0;
    out->serial = ev->serial;
    if (reading && ev->recovers) {
        root_kind(out, ev);
        out->at = ev->recovers;
        return true;
    }
    if (!reading && channel > 0 && ev->early_warning) {
        char kind[] = "reading";
        struct event warning = {.kind = kind, .channel = channel};
        root_kind(out, &warning);
        out->at = ev->early_warning;
        return true;
    }
    if (reading || !ev->recovers)
        return false;
    for (size_t i = 0; i < n; i++) {
        const struct event *alarm = &events[i];
        if (alarm != ev && alarm->unixtime == ev->recovers && !alarm->recovers &&
            !strcmp(alarm->serial, ev->serial) && !strcmp(alarm->kind, ev->kind)) {
            if (thread_root(out, alarm, events, n))
                return true; /* the alarm's own root: its warning */
            break;
        }
    }
    root_kind(out, ev);
    out->at = ev->recovers;
    return true;
}

/* The Message-ID this mail follows up, or NULL: the mail of the thread
 * root (thread_root) that all its events share, as lone_id made it (the
 * mail of an alarm or a warning alone, as they usually are). A mail of
 * events from several threads starts a thread of its own. */
static char *email_parent_id(const struct receiver_conf *r, const struct event *events, size_t n,
                             const char *host)
{
    struct thread_root first, other;
    if (!thread_root(&first, &events[0], events, n))
        return NULL;
    for (size_t i = 1; i < n; i++)
        if (!thread_root(&other, &events[i], events, n) || strcmp(other.serial, first.serial) ||
            strcmp(other.kind, first.kind) || other.at != first.at)
            return NULL;
    return mime_message_id(r->name, first.serial, first.kind, first.at, 1, host);
}

/* The Message-ID that a mail of an incident's follow-ups answers: the
 * incident's first mail, when every event of the mail is a follow-up
 * (notice_part) of one incident; NULL otherwise. A follow-up is a copy of
 * the incident's first event, so that mail is the one of its first event
 * alone (lone_id), or, when that one was under an early warning, the
 * warning's: the root of the thread it joined. */
static char *incident_parent_id(const struct receiver_conf *r, const struct event *events, size_t n,
                                const char *host)
{
    char part[32];
    const char *id = events[0].incident ? member_text(events[0].incident, "id") : "";
    for (size_t i = 0; i < n; i++) {
        notice_part(part, sizeof part, &events[i]);
        if (!*id || !*part || strcmp(member_text(events[i].incident, "id"), id))
            return NULL;
    }
    struct thread_root root;
    if (thread_root(&root, &events[0], &events[0], 1))
        return mime_message_id(r->name, root.serial, root.kind, root.at, 1, host);
    return lone_id(r, &events[0], events[0].unixtime, 1, host);
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
    id = message_id(r, &events[0], n, host);
    parent = incident_parent_id(r, events, n, host);
    if (!parent)
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
        .images = c.images,
        .n_images = c.n_images,
    };
    if (mime_compose(&message, &m, e) < 0)
        goto out;
    struct smtp_job j = {
        .r = r, .sender = from.addr, .rcpts = rcpts, .n = n_rcpts, .message = message};
    rc = smtp_send(&j, e);
    /* The answer is a line for people; a long one is cut. */
    const char *answer = rc == 0 ? "the server accepted the message for every recipient" : e->msg;
    /* the first mail of an incident: what a reply to it names */
    if (rc == 0 && events[0].incident &&
        !strcmp(member_text(events[0].incident, "notice"), "opened")) {
        res->refs = jsonv_need(json_object_new_object());
        jsonv_put(res->refs, "message_id", jsonv_need(json_object_new_string(id)));
    }
    size_t len = strlen(answer) < sizeof res->answer - 1 ? strlen(answer) : sizeof res->answer - 1;
    memcpy(res->answer, answer, len);
    res->answer[len] = '\0';
out:
    for (size_t i = 0; i < n_rcpts; i++)
        free(rcpts[i]);
    free(rcpts);
    mime_address_clear(&from);
    email_content_clear(&c);
    free(message);
    free(id);
    free(parent);
    return rc;
}

/* One mail per incident: its first mail is the one a reply names, and its
 * later notices follow it up. Events of no incident go together. */
static size_t email_fit(const struct notify_env *env, const struct receiver_conf *r,
                        const struct notify_message *m)
{
    (void)env;
    (void)r;
    if (m->events[0].incident)
        return 1;
    size_t k = 1;
    while (k < m->n && !m->events[k].incident)
        k++;
    return k;
}

/* ---- acknowledgements by reply (ack:) ---- */

/* The longest note kept from a reply: a line for a timeline. */
#define EMAIL_NOTE_MAX 200

/* Whether `addr` (lower case) may acknowledge: one of the receiver's to:,
 * cc: or ack.from:, compared without regard to case. */
static bool sender_allowed(const struct receiver_conf *r, const char *addr)
{
    size_t n = r->email.n_to + r->email.n_cc + r->email.ack.n_from;
    bool allowed = false;
    for (size_t i = 0; i < n && !allowed; i++) {
        const char *text = i < r->email.n_to ? r->email.to[i]
                           : i < r->email.n_to + r->email.n_cc
                               ? r->email.cc[i - r->email.n_to]
                               : r->email.ack.from[i - r->email.n_to - r->email.n_cc];
        struct mime_address a;
        if (mime_address_parse(&a, text, NULL) == 0) {
            allowed = !strcasecmp(a.addr, addr);
            mime_address_clear(&a);
        }
    }
    return allowed;
}

/* What the text of a reply says: the ACK line's incident and PIN, and the
 * note (the ACK line's words after them, else the first other line that
 * is not empty and not quoted). */
struct reply_words {
    bool has_ack;
    unsigned long id;
    bool pin_ok; /* the ACK line carries the receiver's PIN (true when it has none) */
    char *note;  /* one line of valid UTF-8, at most EMAIL_NOTE_MAX bytes; NULL: none */
};

/* The words of a line after `p` (a word and the blanks after it). */
static const char *next_word(const char *p, const char *end, size_t *len)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *w = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    *len = (size_t)(p - w);
    return w;
}

static void read_reply(struct reply_words *out, const char *text, const char *pin)
{
    memset(out, 0, sizeof *out);
    const char *first_line = NULL, *note = NULL, *note_end = NULL;
    for (const char *p = text; *p;) {
        const char *end = p + strcspn(p, "\r\n");
        const char *next = end + strspn(end, "\r\n");
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *last = end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
            last--;
        if (p == last || *p == '>') { /* empty, or quoted from the mail replied to */
            p = next;
            continue;
        }
        if (!strncmp(p, "-- ", 3) && last == p + 2)
            break; /* the signature */
        size_t len;
        const char *w = next_word(p, last, &len);
        if (!out->has_ack && len == 3 && !strncasecmp(w, "ACK", 3)) {
            const char *num = next_word(w + len, last, &len);
            char *stop = NULL;
            unsigned long id = len ? strtoul(num, &stop, 10) : 0;
            if (len && isdigit((unsigned char)*num) && stop == num + len) {
                out->has_ack = true;
                out->id = id;
                const char *after = num + len;
                out->pin_ok = !pin;
                if (pin) {
                    const char *given = next_word(after, last, &len);
                    out->pin_ok = len == strlen(pin) && !memcmp(given, pin, len);
                    if (out->pin_ok)
                        after = given + len;
                }
                after += strspn(after, " \t");
                if (after < last && (!pin || out->pin_ok)) {
                    note = after;
                    note_end = last;
                }
                p = next;
                continue;
            }
        }
        if (!first_line) {
            first_line = p;
            if (!note) {
                note = p;
                note_end = last;
            }
        }
        p = next;
    }
    if (note) {
        out->note = utf8_clean(note, (size_t)(note_end - note), EMAIL_NOTE_MAX, UTF8_CONTROLS_NONE);
        if (pin && strstr(out->note, pin)) { /* a PIN written twice stays out of the timeline */
            free(out->note);
            out->note = NULL;
        }
    }
}

/* The incidents among open[0..n) a reply names by In-Reply-To or
 * References: each incident's first mail (its refs' message_id, else the
 * id its opening event's lone mail has) or a notice after it. Sets
 * hit[i] for each. */
static void named_incidents(bool *hit, const struct receiver_conf *r,
                            const struct notify_open *open, size_t n, const char *host,
                            const struct imap_mail *m)
{
    const char *fields[] = {m->in_reply_to, m->references};
    for (size_t i = 0; i < n; i++) {
        const char *kept = json_object_get_string(jsonv_member(open[i].refs, "message_id"));
        char *lone = lone_id(r, open[i].first, open[i].first->unixtime, 1, host);
        for (size_t f = 0; f < 2 && !hit[i]; f++) {
            char ref[512];
            for (const char *next = fields[f]; !hit[i] && imap_next_id(ref, sizeof ref, &next);)
                hit[i] = email_names(lone, ref) || (kept && email_names(kept, ref));
        }
        free(lone);
    }
}

/* What mail `m` acknowledges among open[0..n), appended to *acks; true
 * when it acknowledges one (the caller marks it seen). A mail from the
 * relay itself, from a sender not allowed, or without the PIN where one
 * is set acknowledges nothing (the last two are logged with the sender). */
static bool take_reply(struct notify_ack **acks, size_t *n_acks, const struct receiver_conf *r,
                       const struct notify_open *open, size_t n, const char *self,
                       const struct imap_mail *m)
{
    const char *host = strchr(self, '@') + 1;
    const struct email_ack_conf *a = &r->email.ack;
    char *from = m->from ? imap_from_address(m->from) : NULL;
    bool *hit = xcalloc(n, sizeof *hit), taken = false;
    struct reply_words words;
    read_reply(&words, m->text, a->pin);
    named_incidents(hit, r, open, n, host, m);
    size_t named = 0;
    for (size_t i = 0; i < n; i++) {
        if (words.has_ack)
            hit[i] = open[i].id == words.id; /* the ACK line says which */
        named += hit[i];
    }
    if (!named || (from && !strcasecmp(from, self)))
        goto out; /* not a reply to an open incident, or the relay's own mail */
    if (!from) {
        log_warn("receiver %s: mail %lu names an incident but its From: is not one address: "
                 "it acknowledges nothing",
                 r->name, m->uid);
        goto out;
    }
    if (!sender_allowed(r, from)) {
        log_warn("receiver %s: a reply from %s names an incident, but %s is not among to:, cc: "
                 "or ack.from: it acknowledges nothing",
                 r->name, from, from);
        goto out;
    }
    if (a->pin && !(words.has_ack && words.pin_ok)) {
        log_warn("receiver %s: a reply from %s names an incident without the PIN (\"ACK ID "
                 "PIN\"): it acknowledges nothing",
                 r->name, from);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!hit[i])
            continue;
        *acks = xreallocarray(*acks, *n_acks + 1, sizeof **acks);
        (*acks)[(*n_acks)++] = (struct notify_ack){
            .id = open[i].id, .by = xstrdup(from), .note = words.note ? xstrdup(words.note) : NULL};
    }
    taken = true;
out:
    free(words.note);
    free(hit);
    free(from);
    return taken;
}

static int email_collect(const struct notify_env *env, const struct receiver_conf *r,
                         const struct notify_open *open, size_t n, long long now,
                         struct notify_ack **acks, size_t *n_acks, struct err *e)
{
    (void)env;
    (void)now;
    int rc = -1;
    struct imap_session *s = NULL;
    struct imap_mail *mails = NULL;
    struct mime_address self = {0};
    size_t n_mails = 0;
    *acks = NULL;
    *n_acks = 0;
    if (!r->email.ack.imap)
        return 0;
    if (mime_address_parse(&self, r->email.from, e) < 0)
        return -1;
    imap_open(&s, &r->email.ack, r->timeout);
    if (imap_unseen(s, &mails, &n_mails, e) < 0)
        goto out;
    log_debug("receiver %s: %zu unseen mails in its ack: mailbox", r->name, n_mails);
    for (size_t i = 0; i < n_mails; i++) {
        struct err why;
        log_debug("receiver %s: mail %lu from %s", r->name, mails[i].uid,
                  mails[i].from ? mails[i].from : "(none)");
        if (!take_reply(acks, n_acks, r, open, n, self.addr, &mails[i]))
            continue;
        if (imap_mark_seen(s, mails[i].uid, &why) < 0) /* its acknowledgement still counts */
            log_warn("receiver %s: mail %lu: cannot mark it seen: %s", r->name, mails[i].uid,
                     why.msg);
    }
    rc = 0;
out:
    imap_mails_free(mails, n_mails);
    imap_close(s);
    mime_address_clear(&self);
    if (rc < 0) {
        notify_acks_free(*acks, *n_acks);
        *acks = NULL;
        *n_acks = 0;
    }
    return rc;
}

const struct notifier notifier_email = {
    .type = RECEIVER_EMAIL,
    .name = "email",
    .fit = email_fit,
    .send = email_send,
    .collect = email_collect,
};
