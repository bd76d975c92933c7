/* The configuration file (YAML): accounts to poll, receivers to notify.
 *
 * config_load reads and validates the whole file before anything else runs.
 * Every problem is reported as "FILE:LINE:COL: message" naming the key and
 * what was expected; unknown keys are errors, because a misspelt key must
 * never silently switch alerting off. String values may use ${VAR}; an unset
 * variable is an error, and so is a control character (a line break...)
 * that a variable brings. Keys ending in `_file` read a secret from a file.
 * Secrets (api_key, login_pass, webhook, Slack and Teams URLs, header
 * values, the SMTP password, the heartbeat URL, PagerDuty's routing key,
 * Opsgenie's API key), from a file, ${VAR} or
 * written out, lose the whitespace at their end and may hold no control
 * character (tab included); they are never part of an error message, nor
 * is any part of them (a variable name in a secret is not named either).
 * A file that gives "other" any permission and holds secrets written out
 * (not from ${VAR} or a file) is warned about, once per load; so is a
 * secret file that group or others can read. A webhook URL with http:// to a host other than this
 * machine needs `allow_http: true`; Slack and Teams URLs must be https://
 * (http:// only to this machine). Template files and the templates
 * directory must exist and be readable when the file is loaded; only that
 * is checked here. */
#ifndef WSRELAY_CONFIG_H
#define WSRELAY_CONFIG_H

#include "util/err.h"
#include "util/fileio.h"

#include <stdbool.h>
#include <stddef.h>

struct watch_limit;

#define CONFIG_DEFAULT_PATH "/etc/wsrelay/wsrelay.yaml"
#define CONFIG_DEFAULT_STATE "/var/lib/wsrelay/state.json"
/* The largest configuration file read. */
#define CONFIG_MAX_BYTES (1024 * 1024)
#define CONFIG_DEFAULT_BASE_URL "https://api.webstorage-service.com"
#define CONFIG_DEFAULT_RULES "/etc/wsrelay/rules.d"

/* One device named in an account's `devices:` list. */
struct device_conf {
    char *serial;  /* 8 characters */
    char *base;    /* the base unit's serial; equals `serial` when not given */
    long priority; /* 1 to 10: looked at about this many times as often as priority 1;
                      0 when not given (see account_device_priority) */
};

/* One item of an account's `priorities:` list. */
struct priority_conf {
    char *serial;  /* a glob on serials (glob.h), as `include:` and `exclude:` */
    long priority; /* 1 to 10 */
};

/* One item of an account's `limits:` list: the known limits of a channel of
 * the devices whose serial matches a glob. At least one bound is given;
 * when both are, lower < upper. */
struct limit_conf {
    char *serial;   /* a glob on serials (glob.h: ASCII letters in either case) */
    long channel;   /* 1 to WATCH_CHANNELS (8) */
    bool has_upper; /* `upper:` was given */
    bool has_lower; /* `lower:` was given */
    double upper;   /* finite; 0 when not given */
    double lower;
};

struct account_conf {
    char *name;
    char *base_url; /* without trailing slash; https, or http to a loopback host */
    char *api_key;  /* secret */
    char *login_id;
    char *login_pass;  /* secret */
    bool devices_auto; /* `devices: auto` (the default): discover them */
    struct device_conf *devices;
    size_t n_devices;
    char **include; /* serial globs; empty: every serial */
    size_t n_include;
    char **exclude; /* serial globs */
    size_t n_exclude;
    struct priority_conf *priorities; /* in the file's order: the first that matches applies */
    size_t n_priorities;
    struct limit_conf *limits; /* in the file's order: the first that matches applies */
    size_t n_limits;
    bool early_warning; /* a reading that crosses a known limit is sent at once; default true */
    bool signals;       /* current readings decide which alert log to read; default true
                           (false: plain round robin) */
    bool trend;         /* an alarm's or recovery's message shows its channel's recent
                           readings (recent.c); default true */
};

struct header_conf {
    char *name;
    char *value; /* secret */
};

enum receiver_type {
    RECEIVER_WEBHOOK,
    RECEIVER_FILE,
    RECEIVER_EMAIL,
    RECEIVER_SLACK,
    RECEIVER_TEAMS,
    RECEIVER_PAGERDUTY,
    RECEIVER_OPSGENIE,
    RECEIVER_SLACK_APP,  /* `slack:` with a bot token: Slack's Web API */
    RECEIVER_GOOGLECHAT, /* notify/googlechat.c */
    RECEIVER_CHATWORK,   /* notify/chatwork.c */
    RECEIVER_PUSHOVER,   /* notify/pushover.c */
};

/* `starttls:` of an email receiver, in the order of the words in the file. */
enum starttls_mode {
    STARTTLS_REQUIRED,      /* no STARTTLS offered, or a failed one: nothing is sent */
    STARTTLS_OPPORTUNISTIC, /* STARTTLS when offered (the certificate is still verified) */
    STARTTLS_OFF,           /* plain SMTP */
};

/* The languages of the built-in templates of Google Chat and Chatwork. */
enum chat_language { CHAT_LANG_EN, CHAT_LANG_JA };
/* PagerDuty's severities (`pagerduty: severity:`), in the order of the
 * words in the file. */
enum pagerduty_severity {
    PAGERDUTY_CRITICAL,
    PAGERDUTY_ERROR,
    PAGERDUTY_WARNING,
    PAGERDUTY_INFO,
};

/* `opsgenie: region:`, in the order of the words in the file. */
enum opsgenie_region {
    OPSGENIE_US,
    OPSGENIE_EU,
};

/* A Slack or Teams incoming webhook; for Slack, instead of the URL, a bot
 * token and a channel (Slack as an app: notify/slackapp.c). */
struct chat_conf {
    char *url;      /* secret: https://, or http:// to this machine */
    char *template; /* a readable file, or NULL */
    char *token;    /* Slack only: secret, a bot token "xoxb-…"; set exactly when channel is */
    char *channel;  /* Slack only: a channel id, "C0123456789" */
    char *api_url;  /* Slack only: the Web API's base, without trailing slash; NULL: Slack's */
};

/* `ack:` of an email receiver: the mailbox its replies reach, read over
 * IMAP for acknowledgements (notify/imap.h). */
struct email_ack_conf {
    char *imap;     /* imaps://host[:port]/MAILBOX; NULL: no ack: */
    char *username; /* set exactly when imap is */
    char *password; /* secret; set exactly when imap is */
    char *pin;      /* secret: the word a reply's ACK line must carry; NULL: none */
    char **from;    /* more senders allowed besides to: and cc:, as addresses */
    size_t n_from;
    char *ca_file; /* a readable file, or NULL for the system store */
};

struct receiver_conf {
    char *name;
    enum receiver_type type;
    struct {
        char *url;       /* secret: may carry a token in its path */
        bool allow_http; /* http:// to a host that is not loopback is allowed */
        struct header_conf *headers;
        size_t n_headers;
        char *template; /* a readable file, or NULL */
    } webhook;
    struct {
        char *path;     /* "-" is standard output */
        char *template; /* a readable file, or NULL */
    } file;
    struct {
        char *host;                  /* a host name or IPv4 address */
        long port;                   /* 1 to 65535; default 587 */
        enum starttls_mode starttls; /* default STARTTLS_REQUIRED */
        char *username;              /* NULL: no AUTH */
        char *password;              /* secret; set exactly when username is */
        char *ca_file;               /* a readable file, or NULL for the system store */
        char *from;                  /* "addr@host" or "Display Name <addr@host>" */
        char **to;                   /* n_to >= 1 addresses, in the same forms */
        size_t n_to;
        char **cc;
        size_t n_cc;
        char *template; /* readable files, or NULL */
        char *html_template;
        struct email_ack_conf ack;
    } email;
    struct chat_conf slack;
    struct chat_conf teams;
    /* Google Chat, Chatwork and Pushover: the language of a built-in
     * template is CHAT_LANG_EN or CHAT_LANG_JA (the index in the words
     * "en", "ja"). */
    struct {
        char *url;      /* secret: the incoming webhook's URL, its key and token in the query */
        char *template; /* a readable file, or NULL: googlechat-LANG.txt */
        int language;   /* default CHAT_LANG_EN */
    } googlechat;
    struct {
        char *token;    /* secret: the API token (X-ChatWorkToken) */
        char *room_id;  /* digits */
        char *base_url; /* https://api.chatwork.com, or http:// to this machine */
        char *template; /* a readable file, or NULL: chatwork-LANG.txt */
        int language;   /* default CHAT_LANG_JA */
    } chatwork;
    struct {
        char *token;    /* secret: the application's API token */
        char *user;     /* secret: the user or group key */
        long retry;     /* seconds between an emergency's repeats, 30 to 10800; default 60 */
        long expire;    /* seconds an emergency repeats, 30 to 10800; default 3600 */
        char *base_url; /* https://api.pushover.net, or http:// to this machine */
        char *template; /* a readable file, or NULL: pushover.txt */
    } pushover;
    struct {
        char *routing_key;                /* secret: an Events API v2 integration's key */
        enum pagerduty_severity severity; /* when the rule's label is none of the four;
                                             default PAGERDUTY_ERROR */
        char *base_url; /* https://, or http:// to this machine; no trailing slash;
                           default https://events.pagerduty.com */
    } pagerduty;
    struct {
        char *api_key;               /* secret: an API integration's key */
        enum opsgenie_region region; /* default OPSGENIE_US */
        char *base_url; /* https://, or http:// to this machine; no trailing slash; NULL:
                           the region's API */
    } opsgenie;
    long timeout; /* seconds one delivery may take in all, 5 to 120; default 60 */
};

/* What an event must be for a rule to match it. Every list that is not
 * empty must have an item that matches (AND across fields, OR within one);
 * all lists empty and no text: every event matches. */
struct rule_match {
    char **account; /* globs (glob.h) on the config's account name */
    size_t n_account;
    char **serial; /* globs on the device's serial */
    size_t n_serial;
    char **device; /* globs on the device's name */
    size_t n_device;
    char **model; /* globs on the device's model */
    size_t n_model;
    char **group; /* globs on the device's group name */
    size_t n_group;
    char **kind; /* event kinds, each one of event_kinds */
    size_t n_kind;
    char **event; /* event states, each an alert_state_name */
    size_t n_event;
    char *text;      /* a PCRE2 pattern (UTF mode) searched in the raw text; NULL: any */
    unsigned source; /* RULE_SOURCE_* bits: where the event comes from; 0: anywhere */
};

/* `match: source:`: an early warning of the current readings (kind
 * "reading"), or an entry of the platform's alert log (every other kind
 * but wsrelay's own: relay, gap). */
#define RULE_SOURCE_READING 1u
#define RULE_SOURCE_LOG 2u

/* One step of a rule's `escalate:`: when an incident it opened is still
 * open and not acknowledged `after` seconds after it opened, these
 * receivers are told as well. */
struct rule_escalation {
    long after;       /* seconds since the incident opened, > 0 */
    char **receivers; /* names of configured receivers, at least one */
    size_t n_receivers;
    long line, col; /* where the step is in the rule file */
};

/* One rule of a rule file, checked when the file was read: its globs,
 * pattern and windows are valid, its receivers exist. */
struct rule_conf {
    char *name; /* unique among all rules */
    char *file; /* the rule file, and the line and column of the rule in it */
    long line, col;
    struct rule_match match;
    char **when; /* time windows (window.h), any of which must hold; none: always */
    size_t n_when;
    char **receivers; /* names of configured receivers; none exactly when drop */
    size_t n_receivers;
    char *severity; /* a free label for templates, or NULL */
    long throttle;  /* seconds; 0: no throttle */
    bool cont;      /* `continue:` later rules may match too */
    bool drop;      /* matched events go nowhere (recorded as seen and counted) */
    long repeat;    /* `repeat:` seconds between reminders of an incident it opened that is
                       open and not acknowledged; 0: no reminders */
    struct rule_escalation *escalate; /* `escalate:` steps, `after` strictly increasing */
    size_t n_escalate;
};

/* `incidents:`: how long an incident may stay open, how long its record is kept. */
struct incidents_conf {
    bool enabled;  /* default true; false: no incident, every entry relayed as it comes */
    long max_open; /* seconds an incident may stay open before it closes with a note;
                      default 7 days */
    long keep;     /* seconds the incident log keeps a line; default 400 days */
};

/* `self:`: how wsrelay reports on its own health (selfcheck.h). */
struct self_conf {
    char **receivers; /* configured receivers of relay events; none: every receiver */
    size_t n_receivers;
    long after;      /* seconds a failure may last before it is reported; default 900 */
    char *heartbeat; /* secret: a URL to GET after each run without failure, or NULL;
                        https://, or http:// to this machine */
};

/* `outbox:`: how long, and how much, undelivered events are kept. */
struct outbox_conf {
    long max_age;   /* seconds; older items are given up (default 7 days) */
    long max_items; /* per receiver; beyond it the oldest are dropped (default 10000) */
};

struct config {
    char *path;          /* the file it was read from */
    struct file_id file; /* that file as it was just before it was read */
    char *state_file;    /* default CONFIG_DEFAULT_STATE */
    long catch_up;       /* seconds; default 3600 */
    long run_time;       /* seconds a run may start work for (run.c); default 180 */
    char *templates_dir; /* `templates:`, a readable directory, or NULL */
    char *metrics_file;  /* `metrics_file:`, written after each run, or NULL */
    struct account_conf *accounts;
    size_t n_accounts;
    struct receiver_conf *receivers;
    size_t n_receivers;
    char *timezone;           /* IANA zone of rules' `when:`; NULL: the system's */
    char **default_receivers; /* where events that no rule matches go */
    size_t n_default_receivers;
    char *rules_path;        /* `rules:`, a file or a directory of *.yaml; NULL when the
                                default directory does not exist */
    struct rule_conf *rules; /* in the order they are evaluated */
    size_t n_rules;
    struct self_conf self;           /* defaults when `self:` is absent */
    struct outbox_conf outbox;       /* defaults when `outbox:` is absent */
    struct incidents_conf incidents; /* defaults when `incidents:` is absent */
};

/* Reads and validates `path`, and the rule files its `rules:` names (a
 * file, or a directory whose *.yaml files are read in name order; the
 * default directory may be missing, a configured path may not). On success *out belongs to the
 * caller (config_free). On failure returns -1 with "FILE:LINE:COL: ..." in `e` (just "FILE: ..."
 * when the file cannot be read at all: missing, not a regular file, over 1 MiB). Each YAML file is
 * read within the limits of util/yamlfile.h (nesting, anchors, what aliases repeat), and loading
 * costs time linear in the files' size. */
int config_load(struct config **out, const char *path, struct err *e);

/* config_load for `wsrelay check`: it goes on after a mistake to find the
 * others (a key that is wrong is left out and the rest read; each rule
 * file, each item of a list, each receiver a rule names is checked), up to
 * SCHEMA_ERRORS_MAX (50) of them. A configuration file with a mistake is
 * not checked further against its rule files, whose receivers it may not
 * have read. On failure *errors (the caller frees) holds every mistake
 * found, up to SCHEMA_ERRORS_MAX, one "FILE:LINE:COL: ..." line each, in
 * the order found, *more is true when there were more than that, and `e`
 * holds the first; on success *errors is NULL and *more false. */
int config_load_all(struct config **out, char **errors, bool *more, const char *path,
                    struct err *e);

void config_free(struct config *c);

/* How often the device `serial` of account `a` is looked at, 1 to 10: the
 * device's own `priority:` when the account lists it by hand with one;
 * otherwise the priority of the first item of the account's `priorities:`
 * whose glob matches the serial; otherwise 1. */
long account_device_priority(const struct account_conf *a, const char *serial);

/* The configured limits of channel `channel` of the device `serial` of
 * account `a`: those of the first item of the account's `limits:`, in the
 * file's order, whose glob matches the serial (glob.h) and whose channel is
 * `channel`. Fills *out and returns true; returns false, with *out zeroed
 * (no bound known), when no item matches. */
bool account_limit(const struct account_conf *a, const char *serial, int channel,
                   struct watch_limit *out);

/* The account of the config named `name`; NULL when none is (or `name`
 * is NULL). Borrowed from the config. */
const struct account_conf *config_account(const struct config *c, const char *name);

/* True when accounts[i] is the first account of the config with its login
 * ID: iterate over the accounts and keep these to visit each login ID once. */
bool config_login_first(const struct config *c, size_t i);

/* True when `serial` passes the account's include and exclude globs. */
bool account_wants_serial(const struct account_conf *a, const char *serial);

/* Every key of the file with its type, default and help text, one entry per
 * key ("accounts[].login_id (string; required)" and an indented help line),
 * for `wsrelay keys` and wsrelay.yaml(5). The caller frees the string. */
char *config_reference(void);

/* The rule-file keys in the same form, for `wsrelay keys --rules`. */
char *config_rules_reference(void);

/* The receiver called `name`, or NULL. */
const struct receiver_conf *config_receiver(const struct config *c, const char *name);

#endif
