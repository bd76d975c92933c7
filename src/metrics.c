/* Prometheus text for the node_exporter textfile collector. */
#include "metrics.h"
#include "budget.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A label value as the exposition format wants it: \, " and newline
 * escaped. Names of logins and receivers never need it; it costs nothing. */
static void put_label(struct buf *b, const char *name, const char *value, bool first)
{
    buf_printf(b, "%s%s=\"", first ? "" : ",", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"')
            buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            buf_puts(b, "\\n");
        else
            buf_append(b, p, 1);
    }
    buf_puts(b, "\"");
}

static void count_series(struct state *s, struct buf *name)
{
    state_count(s, buf_str(name), 1);
    buf_free(name);
}

void metrics_count_call(struct state *s, const char *login, enum platform_op op, bool ok,
                        long http_status)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "wsrelay_platform_calls_total{");
    put_label(&b, "login", login, true);
    put_label(&b, "op", platform_op_name(op), false);
    put_label(&b, "result", ok ? "ok" : "error", false);
    buf_puts(&b, "}");
    count_series(s, &b);
    if (ok)
        return;
    char code[24];
    snprintf(code, sizeof code, "%ld", http_status);
    buf_init(&b, 0);
    buf_puts(&b, "wsrelay_platform_errors_total{");
    put_label(&b, "login", login, true);
    put_label(&b, "op", platform_op_name(op), false);
    put_label(&b, "code", code, false);
    buf_puts(&b, "}");
    count_series(s, &b);
}

void metrics_count_lost(struct state *s, const char *receiver, const char *outcome, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "wsrelay_notifications_total{");
    put_label(&b, "receiver", receiver, true);
    put_label(&b, "outcome", outcome, false);
    buf_puts(&b, "}");
    state_count(s, buf_str(&b), (long long)n);
    buf_free(&b);
}

void metrics_count_message(struct state *s, const char *receiver, const char *outcome)
{
    metrics_count_lost(s, receiver, outcome, 1); /* the same series, one message */
}

void metrics_count_heartbeat(struct state *s, bool ok)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "wsrelay_heartbeats_total{");
    put_label(&b, "result", ok ? "ok" : "failed", true);
    buf_puts(&b, "}");
    count_series(s, &b);
}

/* One sample with one label: `metric{label="value"} n`. */
static void sample(struct buf *out, const char *metric, const char *label, const char *value,
                   long long n)
{
    buf_printf(out, "%s{", metric);
    put_label(out, label, value, true);
    buf_printf(out, "} %lld\n", n);
}

static void family(struct buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The stored series of counter family `name`, in name order. */
static void stored(struct buf *out, const struct state *s, const char *name, char **names, size_t n)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(names[i], name, len) && names[i][len] == '{')
            buf_printf(out, "%s %lld\n", names[i], state_counter(s, names[i]));
}

/* Event outcomes: the state counter and its label. */
static const struct {
    const char *counter, *outcome;
} event_outcomes[] = {
    {METRICS_EVENTS_ROUTED, "routed"},       {METRICS_EVENTS_DROPPED, "dropped"},
    {METRICS_EVENTS_THROTTLED, "throttled"}, {METRICS_EVENTS_UNROUTED, "unrouted"},
    {METRICS_EVENTS_OLD, "before_catch_up"}, {METRICS_EVENTS_GAP, "gap"},
    {METRICS_EVENTS_EARLY, "early_warning"}, {METRICS_EVENTS_JOINED, "joined"},
};

void metrics_render(struct buf *out, const struct config *c, const struct state *s, long long now,
                    bool run_ok)
{
    size_t n = 0;
    char **names = state_counter_names(s, &n);

    family(out, "wsrelay_platform_calls_total", "counter",
           "Platform calls, by login ID, operation and result.");
    stored(out, s, "wsrelay_platform_calls_total", names, n);
    family(out, "wsrelay_platform_errors_total", "counter",
           "Failed platform calls, by login ID, operation and HTTP status (0: no answer).");
    stored(out, s, "wsrelay_platform_errors_total", names, n);

    family(out, "wsrelay_events_total", "counter",
           "New alert-log events by what became of them; gap counts gap events made.");
    for (size_t i = 0; i < sizeof event_outcomes / sizeof event_outcomes[0]; i++)
        buf_printf(out, "wsrelay_events_total{outcome=\"%s\"} %lld\n", event_outcomes[i].outcome,
                   state_counter(s, event_outcomes[i].counter));

    family(out, "wsrelay_notifications_total", "counter",
           "Messages to receivers, by receiver and outcome (sent, failed, given_up); events "
           "given up from the outbox (expired, dropped).");
    stored(out, s, "wsrelay_notifications_total", names, n);

    family(out, "wsrelay_heartbeats_total", "counter",
           "Heartbeat GETs after good runs, by result (ok, failed).");
    stored(out, s, "wsrelay_heartbeats_total", names, n);

    family(out, "wsrelay_outbox_events", "gauge", "Events waiting for delivery, by receiver.");
    size_t n_queued = 0;
    char **queued = state_outbox_receivers(s, &n_queued);
    for (size_t i = 0; i < c->n_receivers; i++)
        sample(out, "wsrelay_outbox_events", "receiver", c->receivers[i].name,
               (long long)state_outbox_count(s, c->receivers[i].name));
    for (size_t i = 0; i < n_queued; i++) {
        if (!config_receiver(c, queued[i])) /* a receiver no longer configured */
            sample(out, "wsrelay_outbox_events", "receiver", queued[i],
                   (long long)state_outbox_count(s, queued[i]));
        free(queued[i]);
    }
    free(queued);

    family(out, "wsrelay_alert_calls_remaining", "gauge",
           "Alert-log calls the platform's hourly limit still allows each login ID now.");
    for (size_t i = 0; i < c->n_accounts; i++) {
        const char *login = c->accounts[i].login_id;
        if (!config_login_first(c, i))
            continue;
        struct sched_budget b = budget_read(s, login, PLATFORM_ALERT, now);
        sample(out, "wsrelay_alert_calls_remaining", "login", login,
               b.used >= (size_t)b.limit ? 0 : b.limit - (long long)b.used);
    }

    family(out, "wsrelay_last_run_timestamp_seconds", "gauge", "When the last run ended.");
    buf_printf(out, "wsrelay_last_run_timestamp_seconds %lld\n", now);
    family(out, "wsrelay_last_run_success", "gauge", "1 when the last run had no failure, else 0.");
    buf_printf(out, "wsrelay_last_run_success %d\n", run_ok ? 1 : 0);
    family(out, "wsrelay_last_success_timestamp_seconds", "gauge",
           "When a run last ended without any failure (0: never).");
    buf_printf(out, "wsrelay_last_success_timestamp_seconds %lld\n",
               state_counter(s, METRICS_LAST_SUCCESS));

    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int metrics_write(const char *path, const struct config *c, const struct state *s, long long now,
                  bool run_ok, struct err *e)
{
    struct buf text;
    buf_init(&text, 0);
    metrics_render(&text, c, s, now, run_ok);
    int rc = file_write_atomic(path, text.data, text.len, 0644, e);
    buf_free(&text);
    return rc;
}
