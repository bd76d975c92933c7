/* Receivers: where notifications go.
 *
 * Each transport is one file exporting one `struct notifier`; a new channel
 * is one file and one row in the table of notify.c. A notifier sends all the
 * events of a message as one message and reports what the far end
 * answered; where the far end limits a message's size, its `fit` says how
 * many events one message holds, and the caller sends the rest in more
 * messages.
 * It never retries by itself: the caller keeps failed events in the outbox
 * for a later run, or gives them up when the answer was permanent. No
 * secret reaches an error or an answer: URLs appear without their path,
 * and notify_send takes every secret of the receiver's configuration out
 * of both, in every form util/redact.h knows, whatever the transport did. */
#ifndef WSRELAY_NOTIFY_H
#define WSRELAY_NOTIFY_H

#include "chartproc.h"
#include "config.h"
#include "event.h"
#include "util/buf.h"
#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct redact;

/* One message: the events it carries and when it is sent. */
struct notify_message {
    const struct event *events;
    size_t n;      /* >= 1 */
    long long now; /* the run's clock */
    bool test;     /* a test notification (wsrelay test-receiver) */
    size_t part;   /* this message's place among the messages of one delivery, from 1;
                      0 (or parts 0): the only one */
    size_t parts;  /* how many messages that delivery takes */
};

/* What bounds a run's extras (the charts of mails): an extra never costs
 * an alert, so a chart helper that hangs, dies or answers nonsense is
 * tried once, within the run's time, and the mails of the rest of the run
 * keep their sparklines. */
struct notify_extras {
    struct chartproc_limits charts; /* the run's deadline and stop flag */
    bool charts_broken;             /* the helper failed (chartproc_png's -2): no more charts */
};

/* What every notifier of a run shares. */
struct notify_env {
    const char *templates_dir;    /* the config's templates: directory, or NULL */
    struct notify_extras *extras; /* NULL: charts bounded by CHARTPROC_TIMEOUT_MS only */
};

/* What the far end answered. Filled on success and on failure. */
struct notify_result {
    long status;      /* HTTP status or SMTP reply code; 0 when none came */
    char answer[256]; /* its answer, one printable line, secrets redacted */
    bool permanent;   /* a failure that retrying cannot fix */
    long retry_after; /* seconds the far end asked to wait first; 0: none */
    /* What the service gave back to keep with the incident of the
     * message (a thread's id, a receipt), for its later messages and its
     * acknowledgements (collect): an object the caller takes over and
     * keeps with every incident among the message's events
     * (state_incident_set_refs); NULL: nothing. Set on success only. */
    struct json_object *refs;
};

/* One open incident that a receiver was told of and nobody acknowledged,
 * as a notifier's collect sees it. Borrowed for the call. */
struct notify_open {
    unsigned long id;
    const char *key;                /* incident.h: incident_key */
    const struct event *first;      /* the event that opened it */
    const struct json_object *refs; /* what this receiver's service gave back for it; NULL */
};

/* An acknowledgement a receiver's service holds (notify_acks_free). */
struct notify_ack {
    unsigned long id; /* one of the notify_open ids */
    char *by;         /* who, as the service names them: an address, a user; one line */
    char *note;       /* NULL: none; one line */
};

void notify_acks_free(struct notify_ack *acks, size_t n);

struct notifier {
    enum receiver_type type;
    const char *name; /* the config key: "webhook", "file", "email", "slack", "teams" */
    unsigned pace_ms; /* least time between two posts to one receiver; 0: none */
    /* How many of the first events of `m` one message can hold within the
     * service's limits (1 to m->n); NULL: all of them. */
    size_t (*fit)(const struct notify_env *env, const struct receiver_conf *r,
                  const struct notify_message *m);
    int (*send)(const struct notify_env *env, const struct receiver_conf *r,
                const struct notify_message *m, struct notify_result *res, struct err *e);
    /* Reads from the service the acknowledgements of the incidents
     * open[0..n) (a mailbox's replies, a thread's reactions, a receipt),
     * within r->timeout, into *acks (*n_acks of them; the caller frees
     * them with notify_acks_free), marking what it took as taken there
     * where the service allows (a mail seen). NULL: the service gives no
     * acknowledgements. 0, or -1 with the reason in `e` (then *acks is
     * NULL). */
    int (*collect)(const struct notify_env *env, const struct receiver_conf *r,
                   const struct notify_open *open, size_t n, long long now,
                   struct notify_ack **acks, size_t *n_acks, struct err *e);
};

extern const struct notifier notifier_webhook;
extern const struct notifier notifier_file;
extern const struct notifier notifier_email;
extern const struct notifier notifier_slack;
extern const struct notifier notifier_teams;
extern const struct notifier notifier_pagerduty;
extern const struct notifier notifier_opsgenie;

/* Sends message `m` to receiver `r`. Returns 0 when the far end accepted
 * it; -1 with the reason in `e` (prefixed with the receiver's name) and the
 * details in `res` otherwise. The receiver's secrets (URL and its parts,
 * header values, the SMTP password and its base64 forms) are redacted
 * from res->answer and e->msg (util/redact.h). */
int notify_send(const struct notify_env *env, const struct receiver_conf *r,
                const struct notify_message *m, struct notify_result *res, struct err *e);

/* Whether receiver `r`'s service gives acknowledgements (its notifier
 * has a collect). */
bool notify_collects(const struct receiver_conf *r);

/* The acknowledgements receiver `r`'s service holds for open[0..n), as
 * its notifier's collect reads them, with the receiver's secrets redacted
 * from `e` as notify_send does; an ack of an id not among `open` is
 * dropped. 0 (nothing for a receiver without collect), or -1. */
int notify_collect(const struct notify_env *env, const struct receiver_conf *r,
                   const struct notify_open *open, size_t n, long long now,
                   struct notify_ack **acks, size_t *n_acks, struct err *e);

/* How many of the first events of `m` one message to receiver `r` can
 * hold within its service's limits (Slack's 50 blocks, a Teams card's 28
 * KB), from 1 to m->n: a caller sends the rest in more messages, each
 * whole, rather than let a transport summarise what does not fit. A
 * template that cannot be rendered fits all (its send will say why).
 * m->parts, when set, is the most messages the delivery can take (at
 * most its number of events): the message is measured with the longest
 * "message N of N" that delivery can show, so it fits at any place. */
size_t notify_fit(const struct notify_env *env, const struct receiver_conf *r,
                  const struct notify_message *m);

/* Adds every secret of receiver `r`'s configuration to `secrets`: a URL
 * and its parts (redact_add_url), header values (redact_add_header), an
 * SMTP password and the two base64 forms in which SMTP AUTH sends it
 * (LOGIN: the password; PLAIN: "\0user\0password"). */
void notify_add_secrets(struct redact *secrets, const struct receiver_conf *r);

/* Every secret of configuration `c`, as notify_send redacts a receiver's,
 * for all its receivers together, with each account's API key and
 * password and the heartbeat URL: for what shows one receiver's answer
 * where another's secret could be quoted (test-receiver). Caller frees
 * (redact_free). */
struct redact *notify_secrets(const struct config *c);

/* The template context of a message (a new reference): templates_context
 * (templates.h) over the events as event_to_json writes them, with
 * "more": 0, and what is said of the message as a whole: "summary"
 * (notify_summary with the devices), "tally" (without them), "devices"
 * (notify_devices), "several" (true when it has more than one event),
 * "part" and "parts" (its place among the messages of one delivery; 1 and
 * 1 when it is the only one) and "split" (true when parts > 1). */
struct json_object *notify_context(const char *receiver, const struct notify_message *m);

/* The same with only the first `k` events listed, for services that limit
 * a message's size: "count" stays the message's number of events and
 * "more" is how many were left out, for "…and 37 more". */
struct json_object *notify_context_first(const char *receiver, const struct notify_message *m,
                                         size_t k);

/* Renders the template `name` ("slack.json") for a message context:
 * `explicit_path` (a receiver's template: key) when not NULL, else the file
 * of that name in env->templates_dir, else the built-in one. The escaping
 * is that of the role `name` (templates_escape: Slack's and Teams' own for
 * slack.json and teams.json, JSON for other .json, HTML for .html, text
 * for .txt), never of a custom file's name. Returns 0; -1 when the template file cannot be
 * read now (worth retrying); -2 when it does not compile or render (a
 * mistake to fix: retrying cannot help). `e` says which. */
int notify_render(struct buf *out, const struct notify_env *env, const char *explicit_path,
                  const char *name, const struct json_object *ctx, struct err *e);

/* `text` as one JSON object, parsed strictly (standard JSON only, and
 * nothing but whitespace after it); NULL with `e` set otherwise. A new
 * reference. */
struct json_object *notify_parse_json(const char *text, struct err *e);

/* The plain-text form of a message (file.txt, or `explicit_path`), as the
 * file receiver writes it and a dry run shows it: a heading line, then a
 * block per event. */
int notify_render_text(struct buf *out, const struct notify_env *env, const char *explicit_path,
                       const char *receiver, const struct notify_message *m, struct err *e);

/* For `wsrelay check`: every template the receiver will render compiles,
 * and every partial it uses exists and compiles. Fails with
 * "receiver 'NAME': ORIGIN:LINE:COL: ...". */
int notify_check_templates(const struct notify_env *env, const struct receiver_conf *r,
                           struct err *e);

/* What matters most in a message comes first, whatever the transport:
 * alarms, then sensor errors, communication failures, wsrelay's own
 * reports (kinds "gap" and "relay"), battery alerts, recoveries, and
 * everything else. */
enum notify_rank {
    NOTIFY_RANK_ALARM,
    NOTIFY_RANK_SENSOR_ERROR,
    NOTIFY_RANK_COMMUNICATION,
    NOTIFY_RANK_REPORT,
    NOTIFY_RANK_BATTERY,
    NOTIFY_RANK_RECOVERED,
    NOTIFY_RANK_OTHER,
    NOTIFY_RANKS
};

/* The rank of an event: its kind for wsrelay's own reports, else its
 * state (read from its text when it has none, as event_to_json does). */
enum notify_rank notify_rank_of(const struct event *ev);

/* The order in which a message shows `events` (n of them), in out[0..n)
 * as indexes into `events`: by rank (an incident's acknowledgement with
 * the alarms, ahead of its resolution); within a rank, grouped by device,
 * the devices in the order of their most important event and then of
 * their first event; within a device, as given (the alert logs' time
 * order). The order is stable: ordering events already in this order
 * leaves them as they are, so a message cut into several keeps it. */
void notify_order(size_t *out, const struct event *events, size_t n);

/* One line that counts a message's events by rank, the most important
 * first, with the number of devices of the first when there are several:
 * "21 alarms on 2 devices, 41 recoveries", "1 alarm". With `devices`
 * false the devices are left out ("21 alarms, 41 recoveries"). The
 * caller frees it. */
char *notify_summary(const struct event *events, size_t n, bool devices);

/* The devices of a message, each once, in the order of the events: their
 * names, else their serials ("Bulk Freezer, Freezer B"). The caller frees
 * it. */
char *notify_devices(const struct event *events, size_t n);

/* The transport name of a receiver type ("webhook", "file", ...). */
const char *notify_type_name(enum receiver_type type);

/* The least time between two posts to a receiver of that type, in ms. */
unsigned notify_pace_ms(enum receiver_type type);

#endif
