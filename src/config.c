/* The configuration file: YAML in, a validated `struct config` out. Every key
 * is a row of a table (kind, flags, default, check, help); one walker checks a
 * mapping against its rows, so validation, freeing and the key reference all
 * come from the same tables. */
#include "config.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/url.h"
#include "util/xalloc.h"
#include "util/yamlfile.h"

#include "alerttext.h"
#include "event.h"
#include "glob.h"
#include "mime.h"
#include "regexp.h"
#include "serial.h"
#include "watch.h"
#include "window.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define CONFIG_MAX_BYTES (1024 * 1024)
#define SECRET_MAX_BYTES (64 * 1024)
#define CATCH_UP_DEFAULT "1h"
#define RUN_TIME_DEFAULT "3m"
#define SELF_AFTER_DEFAULT "15m"
#define OUTBOX_MAX_AGE_DEFAULT "7d"
#define OUTBOX_MAX_ITEMS_DEFAULT "10000"
/* A receiver's `timeout:`. At least 5 s: a mail session with STARTTLS and a
 * login is several round trips, and a far end that is merely slow should
 * not fail. At most 2 min: a run stops only between deliveries, and the
 * packaged units give a stopping loop 3 min (TimeoutStopSec) and a whole
 * timer run 5 min (TimeoutStartSec), polling included; a delivery that
 * outlived them would be killed and sent again by the next run. */
#define RECEIVER_TIMEOUT_DEFAULT "60s"
#define RECEIVER_TIMEOUT_MIN 5
#define RECEIVER_TIMEOUT_MAX 120

/* How a key's YAML value becomes a C value, and where that value lives. */
enum kind {
    K_STRING,       /* char *: a string, ${VAR} expanded */
    K_PATH,         /* char *: a path; a relative one is taken from the config's directory */
    K_SECRET_FILE,  /* char *: the contents of the file the value names */
    K_GLOB,         /* char *: one glob, passed to `check` like a string */
    K_DURATION,     /* long: seconds, written "90s", "30m", "1h"; from `min` to `max`
                       when `max` is not 0 */
    K_BOOL,         /* bool: the plain words true or false */
    K_INT,          /* long: a decimal integer from `min` to `max` */
    K_NUMBER,       /* double: a finite decimal number, "-75", "8.5", "1e3"; and the bool
                       at `count_off` is set when the key is given */
    K_ENUM,         /* an enum (int-sized): the index of the value in `words` */
    K_GLOBS,        /* char ** and a size_t count: one string or a list of strings */
    K_STRINGS,      /* like K_GLOBS, each string passed to `check`; a list must not be empty */
    K_LIST,         /* an array of `sub` structs and a size_t count: a non-empty list */
    K_AUTO_OR_LIST, /* the word "auto" (the list stays empty) or a K_LIST */
    K_MAP,          /* a `sub` struct embedded at `off` */
    K_HEADERS,      /* an array of struct header_conf and a size_t count */
};

enum {
    F_REQUIRED = 1 << 0,
    F_SECRET = 1 << 1, /* never echoed; may not contain a line break (for a K_SECRET_FILE
                          row: the file holds a secret, its path is not one) */
    F_UNIQUE = 1 << 2, /* unique among the elements of the enclosing list */
    F_GROUP_OPTIONAL = 1 << 3, /* the key's group may be left out: at most one of it */
    F_NOT_EMPTY = 1 << 4, /* K_GLOBS: an empty list is an error, not "all" */
    F_DEFAULTS = 1 << 5,  /* K_MAP: when the mapping is absent, its keys take their defaults */
};

struct schema;

struct key {
    const char *name;
    enum kind kind;
    unsigned flags;
    int group;        /* non-zero: exactly one key of this group must be given */
    size_t off;       /* where the value is stored */
    size_t count_off; /* K_GLOBS, K_LIST, K_AUTO_OR_LIST, K_HEADERS: the element count;
                         K_NUMBER: a bool, true when the key is given */
    const char *def;  /* default, as it would be written in the file */
    long min, max;    /* K_INT, and K_DURATION when max is not 0: the bounds */
    const char *const *words; /* K_ENUM: the values, NULL-terminated, in enum order */
    int (*check)(char *value, struct err *e); /* -1 with what is wrong in e; may normalise */
    const struct schema *sub;
    const char *help;
};

struct schema {
    const char *what; /* names an element in messages: "duplicate receiver name" */
    const struct key *keys;
    size_t n_keys;
    size_t size;
    void (*finish)(void *obj); /* fills in what depends on several keys */
    /* Checks what depends on several keys, once all are read: -1 with what is
     * wrong in e, and in *off the `off` of the key to point at. */
    int (*check)(const void *obj, size_t *off, struct err *e);
};

static int check_name(char *v, struct err *e);
static int check_base_url(char *v, struct err *e);
static int check_login_id(char *v, struct err *e);
static int check_serial(char *v, struct err *e);
static int check_webhook_url(char *v, struct err *e);
static int check_webhook(const void *obj, size_t *off, struct err *e);
static int check_host(char *v, struct err *e);
static int check_address(char *v, struct err *e);
static int check_readable_file(char *v, struct err *e);
static int check_directory(char *v, struct err *e);
static int check_chat_url(char *v, struct err *e);
static int check_email(const void *obj, size_t *off, struct err *e);
static int check_glob(char *v, struct err *e);
static int check_kind(char *v, struct err *e);
static int check_event_state(char *v, struct err *e);
static int check_regex(char *v, struct err *e);
static int check_window(char *v, struct err *e);
static int check_timezone(char *v, struct err *e);
static int check_label(char *v, struct err *e);
static int check_rule(const void *obj, size_t *off, struct err *e);
static int check_limit(const void *obj, size_t *off, struct err *e);
static void finish_device(void *obj);
static void finish_account(void *obj);
static void finish_receiver(void *obj);
static int check_heartbeat_url(char *v, struct err *e);

#define N(rows) (sizeof(rows) / sizeof((rows)[0]))
#define AT(type, member) offsetof(struct type, member)
/* The webhook mapping is an anonymous struct inside struct receiver_conf. */
#define WEBHOOK_AT(member) (AT(receiver_conf, webhook.member) - AT(receiver_conf, webhook))
#define EMAIL_AT(member) (AT(receiver_conf, email.member) - AT(receiver_conf, email))
#define MATCH_AT(member) (AT(rule_conf, match.member) - AT(rule_conf, match))
#define SELF_AT(member) AT(self_conf, member)
#define OUTBOX_AT(member) AT(outbox_conf, member)

static const char *const starttls_words[] = {"required", "opportunistic", "off", NULL};

/* clang-format off: the tables read better as rows */
static const struct key device_keys[] = {
    {.name = "serial",
     .kind = K_STRING,
     .flags = F_REQUIRED | F_UNIQUE,
     .off = AT(device_conf, serial),
     .check = check_serial,
     .help = "The device's serial number: 8 letters or digits."},
    {.name = "base",
     .kind = K_STRING,
     .off = AT(device_conf, base),
     .check = check_serial,
     .help = "The serial of the base unit the device reports through (default: the serial)."},
    /* No .def: a priority left out is 0, so that the account's priorities: can apply. */
    {.name = "priority",
     .kind = K_INT,
     .off = AT(device_conf, priority),
     .min = 1,
     .max = 10,
     .help = "Looked at about this many times as often as a device of priority 1 (default: "
             "from the account's priorities, else 1)."},
};
static const struct schema device_schema = {.what = "device",
                                            .keys = device_keys,
                                            .n_keys = N(device_keys),
                                            .size = sizeof(struct device_conf),
                                            .finish = finish_device};

static const struct key priority_keys[] = {
    {.name = "serial",
     .kind = K_GLOB,
     .flags = F_REQUIRED | F_UNIQUE,
     .off = AT(priority_conf, serial),
     .check = check_glob,
     .help = "A glob on the device's serial, matched as in include and exclude, e.g. \"5214*\"."},
    {.name = "priority",
     .kind = K_INT,
     .flags = F_REQUIRED,
     .off = AT(priority_conf, priority),
     .min = 1,
     .max = 10,
     .help = "Looked at about this many times as often as a device of priority 1."},
};
static const struct schema priority_schema = {.what = "priority",
                                              .keys = priority_keys,
                                              .n_keys = N(priority_keys),
                                              .size = sizeof(struct priority_conf)};

static const struct key limit_keys[] = {
    {.name = "serial",
     .kind = K_GLOB,
     .flags = F_REQUIRED,
     .off = AT(limit_conf, serial),
     .check = check_glob,
     .help = "A glob on the device's serial, matched as in rules (letters in either case), "
             "e.g. \"5214*\" or \"*\"."},
    {.name = "channel",
     .kind = K_INT,
     .flags = F_REQUIRED,
     .off = AT(limit_conf, channel),
     .min = 1,
     .max = WATCH_CHANNELS,
     .help = "The channel the limits are of (ch1 is 1)."},
    {.name = "upper",
     .kind = K_NUMBER,
     .off = AT(limit_conf, upper),
     .count_off = AT(limit_conf, has_upper),
     .help = "A reading above this is beyond the limit, in the channel's unit, e.g. -15 or 8.5."},
    {.name = "lower",
     .kind = K_NUMBER,
     .off = AT(limit_conf, lower),
     .count_off = AT(limit_conf, has_lower),
     .help = "A reading below this is beyond the limit; give upper, lower or both (lower below "
             "upper)."},
};
static const struct schema limit_schema = {.what = "limit",
                                           .keys = limit_keys,
                                           .n_keys = N(limit_keys),
                                           .size = sizeof(struct limit_conf),
                                           .check = check_limit};

static const struct key account_keys[] = {
    {.name = "name",
     .kind = K_STRING,
     .flags = F_REQUIRED | F_UNIQUE,
     .off = AT(account_conf, name),
     .check = check_name,
     .help = "A short name for the account: letters, digits, '_', '.', '-'."},
    {.name = "base_url",
     .kind = K_STRING,
     .off = AT(account_conf, base_url),
     .def = CONFIG_DEFAULT_BASE_URL,
     .check = check_base_url,
     .help = "The platform's API; https://api.webstorage.jp for the Japanese service."},
    {.name = "api_key",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(account_conf, api_key),
     .help = "The API key, e.g. \"${WS_API_KEY}\"."},
    {.name = "api_key_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(account_conf, api_key),
     .help = "A file holding the API key (mode 0600)."},
    {.name = "login_id",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = AT(account_conf, login_id),
     .check = check_login_id,
     .help = "The WebStorage login ID the API calls are made as."},
    {.name = "login_pass",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 2,
     .off = AT(account_conf, login_pass),
     .help = "The login password."},
    {.name = "login_pass_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 2,
     .off = AT(account_conf, login_pass),
     .help = "A file holding the password (mode 0600)."},
    {.name = "devices",
     .kind = K_AUTO_OR_LIST,
     .off = AT(account_conf, devices),
     .count_off = AT(account_conf, n_devices),
     .def = "auto",
     .sub = &device_schema,
     .help = "`auto` to discover the account's devices, or a list of {serial, base}."},
    {.name = "include",
     .kind = K_GLOBS,
     .off = AT(account_conf, include),
     .count_off = AT(account_conf, n_include),
     .check = check_glob,
     .help = "Only serials matching one of these globs are polled (default: all); globs as in "
             "rules (letters in either case)."},
    {.name = "exclude",
     .kind = K_GLOBS,
     .off = AT(account_conf, exclude),
     .count_off = AT(account_conf, n_exclude),
     .check = check_glob,
     .help = "Serials matching one of these globs are never polled; globs as in rules."},
    {.name = "priorities",
     .kind = K_LIST,
     .off = AT(account_conf, priorities),
     .count_off = AT(account_conf, n_priorities),
     .sub = &priority_schema,
     .help = "A list of {serial, priority}: a device takes the priority of the first item whose "
             "glob matches its serial, unless devices lists it with a priority of its own."},
    {.name = "limits",
     .kind = K_LIST,
     .off = AT(account_conf, limits),
     .count_off = AT(account_conf, n_limits),
     .sub = &limit_schema,
     .help = "A list of {serial, channel, upper, lower}: the alarm limits of a channel; the first "
             "item whose glob matches the serial and whose channel is the reading's applies, and "
             "wins over a limit learnt from the platform's alert texts."},
    {.name = "early_warning",
     .kind = K_BOOL,
     .off = AT(account_conf, early_warning),
     .def = "true",
     .help = "When a reading crosses a known limit, send a `reading` event at once, before the "
             "platform's alert log shows the alarm."},
    {.name = "signals",
     .kind = K_BOOL,
     .off = AT(account_conf, signals),
     .def = "true",
     .help = "Read current readings every run and poll the alert log of devices whose readings "
             "moved first; false: plain round robin (each device every N x 5.5 minutes)."},
};
static const struct schema account_schema = {.what = "account",
                                             .keys = account_keys,
                                             .n_keys = N(account_keys),
                                             .size = sizeof(struct account_conf),
                                             .finish = finish_account};

/* Only used to free header arrays; parse_headers reads them. */
static const struct key header_keys[] = {
    {.name = "name", .kind = K_STRING, .off = AT(header_conf, name)},
    {.name = "value", .kind = K_STRING, .flags = F_SECRET, .off = AT(header_conf, value)},
};
static const struct schema header_schema = {.what = "header",
                                            .keys = header_keys,
                                            .n_keys = N(header_keys),
                                            .size = sizeof(struct header_conf)};

static const struct key webhook_keys[] = {
    {.name = "url",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = WEBHOOK_AT(url),
     .check = check_webhook_url,
     .help = "Where events are POSTed: https://, or http:// to this machine (see allow_http)."},
    {.name = "url_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = WEBHOOK_AT(url),
     .check = check_webhook_url,
     .help = "A file holding the URL (mode 0600)."},
    {.name = "allow_http",
     .kind = K_BOOL,
     .off = WEBHOOK_AT(allow_http),
     .def = "false",
     .help = "Allow a plain http:// URL to a host other than this machine; the URL and headers "
             "then cross the network unencrypted."},
    {.name = "headers",
     .kind = K_HEADERS,
     .off = WEBHOOK_AT(headers),
     .count_off = WEBHOOK_AT(n_headers),
     .sub = &header_schema,
     .help = "Extra request headers, name: value (not Content-Type or Content-Length)."},
    {.name = "template",
     .kind = K_PATH,
     .off = WEBHOOK_AT(template),
     .check = check_readable_file,
     .help = "A template for the JSON document (default: webhook.json)."},
};
static const struct schema webhook_schema = {.what = "webhook",
                                             .keys = webhook_keys,
                                             .n_keys = N(webhook_keys),
                                             .size = sizeof(((struct receiver_conf *)0)->webhook),
                                             .check = check_webhook};

static const struct key file_keys[] = {
    {.name = "path",
     .kind = K_PATH,
     .flags = F_REQUIRED,
     .off = AT(receiver_conf, file.path) - AT(receiver_conf, file),
     .help = "The file events are appended to; \"-\" is standard output."},
    {.name = "template",
     .kind = K_PATH,
     .off = AT(receiver_conf, file.template) - AT(receiver_conf, file),
     .check = check_readable_file,
     .help = "A template for the text block (default: file.txt)."},
};
static const struct schema file_schema = {.what = "file",
                                          .keys = file_keys,
                                          .n_keys = N(file_keys),
                                          .size = sizeof(((struct receiver_conf *)0)->file)};

static const struct key email_keys[] = {
    {.name = "host",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = EMAIL_AT(host),
     .check = check_host,
     .help = "The SMTP server (mail submission) to send through: a host name or IPv4 address."},
    {.name = "port",
     .kind = K_INT,
     .off = EMAIL_AT(port),
     .def = "587",
     .min = 1,
     .max = 65535,
     .help = "The server's port: 587 is mail submission with STARTTLS."},
    {.name = "starttls",
     .kind = K_ENUM,
     .off = EMAIL_AT(starttls),
     .def = "required",
     .words = starttls_words,
     .help = "required: send nothing unless the connection is encrypted and the certificate "
             "matches host; opportunistic: encrypt when the server offers it; off: never."},
    {.name = "username",
     .kind = K_STRING,
     .off = EMAIL_AT(username),
     .help = "Log in (SMTP AUTH PLAIN or LOGIN) as this user; needs password or password_file."},
    {.name = "password",
     .kind = K_STRING,
     .flags = F_SECRET | F_GROUP_OPTIONAL,
     .group = 1,
     .off = EMAIL_AT(password),
     .help = "The SMTP password, e.g. \"${SMTP_PASSWORD}\"."},
    {.name = "password_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET | F_GROUP_OPTIONAL,
     .group = 1,
     .off = EMAIL_AT(password),
     .help = "A file holding the SMTP password (mode 0600)."},
    {.name = "ca_file",
     .kind = K_PATH,
     .off = EMAIL_AT(ca_file),
     .check = check_readable_file,
     .help = "PEM certificates to verify the server with (default: the system's store)."},
    {.name = "from",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = EMAIL_AT(from),
     .check = check_address,
     .help = "The sender: name@example.org or \"Display Name <name@example.org>\"."},
    {.name = "to",
     .kind = K_STRINGS,
     .flags = F_REQUIRED,
     .off = EMAIL_AT(to),
     .count_off = EMAIL_AT(n_to),
     .check = check_address,
     .help = "The recipients, in the same forms as from."},
    {.name = "cc",
     .kind = K_STRINGS,
     .off = EMAIL_AT(cc),
     .count_off = EMAIL_AT(n_cc),
     .check = check_address,
     .help = "More recipients, shown as Cc."},
    {.name = "template",
     .kind = K_PATH,
     .off = EMAIL_AT(template),
     .check = check_readable_file,
     .help = "A template for the text body (default: email.txt; the subject comes from "
             "email-subject.txt)."},
    {.name = "html_template",
     .kind = K_PATH,
     .off = EMAIL_AT(html_template),
     .check = check_readable_file,
     .help = "A template for the HTML body sent beside the text one (default: email.html)."},
};
static const struct schema email_schema = {.what = "email",
                                           .keys = email_keys,
                                           .n_keys = N(email_keys),
                                           .size = sizeof(((struct receiver_conf *)0)->email),
                                           .check = check_email};

/* Slack and Teams share the shape of struct chat_conf. */
static const struct key chat_keys[] = {
    {.name = "url",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(chat_conf, url),
     .check = check_chat_url,
     .help = "The incoming-webhook URL: https://, or http:// to this machine."},
    {.name = "url_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(chat_conf, url),
     .check = check_chat_url,
     .help = "A file holding the URL (mode 0600)."},
    {.name = "template",
     .kind = K_PATH,
     .off = AT(chat_conf, template),
     .check = check_readable_file,
     .help = "A template for the whole JSON payload (default: slack.json or teams.json)."},
};
static const struct schema chat_schema = {.what = "chat",
                                          .keys = chat_keys,
                                          .n_keys = N(chat_keys),
                                          .size = sizeof(struct chat_conf)};

static const struct key receiver_keys[] = {
    {.name = "name",
     .kind = K_STRING,
     .flags = F_REQUIRED | F_UNIQUE,
     .off = AT(receiver_conf, name),
     .check = check_name,
     .help = "A short name for logs and the state: letters, digits, '_', '.', '-'."},
    {.name = "webhook",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, webhook),
     .sub = &webhook_schema,
     .help = "Send events to a URL in an HTTP POST."},
    {.name = "file",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, file),
     .sub = &file_schema,
     .help = "Append events to a file."},
    {.name = "email",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, email),
     .sub = &email_schema,
     .help = "Send events by email through an SMTP server."},
    {.name = "slack",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, slack),
     .sub = &chat_schema,
     .help = "Post events to a Slack incoming webhook."},
    {.name = "teams",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, teams),
     .sub = &chat_schema,
     .help = "Post events to a Microsoft Teams incoming webhook."},
    {.name = "timeout",
     .kind = K_DURATION,
     .off = AT(receiver_conf, timeout),
     .def = RECEIVER_TIMEOUT_DEFAULT,
     .min = RECEIVER_TIMEOUT_MIN,
     .max = RECEIVER_TIMEOUT_MAX,
     .help = "How long one delivery may take in all, whatever the far end does; past it the "
             "delivery fails and its events wait for a later run."},
};
static const struct schema receiver_schema = {.what = "receiver",
                                              .keys = receiver_keys,
                                              .n_keys = N(receiver_keys),
                                              .size = sizeof(struct receiver_conf),
                                              .finish = finish_receiver};

static const struct key match_keys[] = {
    {.name = "account",
     .kind = K_GLOBS,
     .flags = F_NOT_EMPTY,
     .off = MATCH_AT(account),
     .count_off = MATCH_AT(n_account),
     .check = check_glob,
     .help = "Globs on the configuration's account name."},
    {.name = "serial",
     .kind = K_GLOBS,
     .flags = F_NOT_EMPTY,
     .off = MATCH_AT(serial),
     .count_off = MATCH_AT(n_serial),
     .check = check_glob,
     .help = "Globs on the device's serial, e.g. \"5214*\"."},
    {.name = "device",
     .kind = K_GLOBS,
     .flags = F_NOT_EMPTY,
     .off = MATCH_AT(device),
     .count_off = MATCH_AT(n_device),
     .check = check_glob,
     .help = "Globs on the device's name (UTF-8), e.g. \"Freezer*\"."},
    {.name = "model",
     .kind = K_GLOBS,
     .flags = F_NOT_EMPTY,
     .off = MATCH_AT(model),
     .count_off = MATCH_AT(n_model),
     .check = check_glob,
     .help = "Globs on the device's model, e.g. \"TR-7*\"."},
    {.name = "group",
     .kind = K_GLOBS,
     .flags = F_NOT_EMPTY,
     .off = MATCH_AT(group),
     .count_off = MATCH_AT(n_group),
     .check = check_glob,
     .help = "Globs on the device's group name on the platform."},
    {.name = "kind",
     .kind = K_STRINGS,
     .off = MATCH_AT(kind),
     .count_off = MATCH_AT(n_kind),
     .check = check_kind,
     .help = "Event kinds: ch1 to ch6, battery-level, communication-status, gap, relay."},
    {.name = "event",
     .kind = K_STRINGS,
     .off = MATCH_AT(event),
     .count_off = MATCH_AT(n_event),
     .check = check_event_state,
     .help = "What the text says: alarm, recovered, sensor-error, battery, communication, other."},
    {.name = "text",
     .kind = K_STRING,
     .off = MATCH_AT(text),
     .check = check_regex,
     .help = "A PCRE2 regular expression searched in the raw alert text, e.g. \"(?i)upper\"."},
};
static const struct schema match_schema = {.what = "match",
                                           .keys = match_keys,
                                           .n_keys = N(match_keys),
                                           .size = sizeof(struct rule_match)};

static const struct key rule_keys[] = {
    {.name = "name",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = AT(rule_conf, name),
     .check = check_name,
     .help = "The rule's name, unique among all rules: letters, digits, '_', '.', '-'."},
    {.name = "match",
     .kind = K_MAP,
     .off = AT(rule_conf, match),
     .sub = &match_schema,
     .help = "What an event must be; all fields given must match (default: every event)."},
    {.name = "when",
     .kind = K_STRINGS,
     .off = AT(rule_conf, when),
     .count_off = AT(rule_conf, n_when),
     .check = check_window,
     .help = "Time windows such as \"Mon-Fri 08:00-18:00\"; outside them the rule does not match."},
    {.name = "receivers",
     .kind = K_STRINGS,
     .off = AT(rule_conf, receivers),
     .count_off = AT(rule_conf, n_receivers),
     .help = "The receivers that get the events it matches."},
    {.name = "severity",
     .kind = K_STRING,
     .off = AT(rule_conf, severity),
     .check = check_label,
     .help = "A label for the messages, e.g. critical."},
    {.name = "throttle",
     .kind = K_DURATION,
     .off = AT(rule_conf, throttle),
     .def = "0s",
     .help = "At most one notification per device and kind in this time; the rest are counted."},
    {.name = "continue",
     .kind = K_BOOL,
     .off = AT(rule_conf, cont),
     .def = "false",
     .help = "true: the rules after this one are tried as well."},
    {.name = "drop",
     .kind = K_BOOL,
     .off = AT(rule_conf, drop),
     .def = "false",
     .help = "true: the events it matches are recorded as seen, counted and sent nowhere."},
};
static const struct schema rule_schema = {.what = "rule",
                                          .keys = rule_keys,
                                          .n_keys = N(rule_keys),
                                          .size = sizeof(struct rule_conf),
                                          .check = check_rule};

static const struct key self_keys[] = {
    {.name = "receivers",
     .kind = K_STRINGS,
     .off = SELF_AT(receivers),
     .count_off = SELF_AT(n_receivers),
     .help = "Receivers of wsrelay's own relay events (default: every receiver); rules do not "
             "apply to them."},
    {.name = "after",
     .kind = K_DURATION,
     .off = SELF_AT(after),
     .def = SELF_AFTER_DEFAULT,
     .help = "How long the platform or a receiver may fail before a relay event says so."},
    {.name = "heartbeat",
     .kind = K_STRING,
     .flags = F_SECRET | F_GROUP_OPTIONAL,
     .group = 1,
     .off = SELF_AT(heartbeat),
     .check = check_heartbeat_url,
     .help = "A URL that gets an HTTP GET after each run without failure (a dead man's switch): "
             "https://, or http:// to this machine."},
    {.name = "heartbeat_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET | F_GROUP_OPTIONAL,
     .group = 1,
     .off = SELF_AT(heartbeat),
     .check = check_heartbeat_url,
     .help = "A file holding the heartbeat URL (mode 0600)."},
};
static const struct schema self_schema = {.what = "self",
                                          .keys = self_keys,
                                          .n_keys = N(self_keys),
                                          .size = sizeof(struct self_conf)};

static const struct key outbox_keys[] = {
    {.name = "max_age",
     .kind = K_DURATION,
     .off = OUTBOX_AT(max_age),
     .def = OUTBOX_MAX_AGE_DEFAULT,
     .help = "Events undelivered this long are given up, with an error and a relay event."},
    {.name = "max_items",
     .kind = K_INT,
     .off = OUTBOX_AT(max_items),
     .def = OUTBOX_MAX_ITEMS_DEFAULT,
     .min = 10,
     .max = 1000000,
     .help = "Events kept per receiver; beyond it the oldest are dropped, with an error and a "
             "relay event."},
};
static const struct schema outbox_schema = {.what = "outbox",
                                            .keys = outbox_keys,
                                            .n_keys = N(outbox_keys),
                                            .size = sizeof(struct outbox_conf)};

static const struct key top_keys[] = {
    {.name = "state_file",
     .kind = K_PATH,
     .off = AT(config, state_file),
     .def = CONFIG_DEFAULT_STATE,
     .help = "Where wsrelay keeps what it has seen and what it still has to send."},
    {.name = "catch_up",
     .kind = K_DURATION,
     .off = AT(config, catch_up),
     .def = CATCH_UP_DEFAULT,
     .help = "On a device's first poll, older entries are recorded as seen, not sent."},
    {.name = "run_time",
     .kind = K_DURATION,
     .off = AT(config, run_time),
     .def = RUN_TIME_DEFAULT,
     .min = 30,
     .max = 3600,
     .help = "How long one run may go on starting work: no platform call starts after half of "
             "it, no delivery after all of it; what is left waits for the next run."},
    {.name = "templates",
     .kind = K_PATH,
     .off = AT(config, templates_dir),
     .check = check_directory,
     .help = "A directory of message templates."},
    {.name = "metrics_file",
     .kind = K_PATH,
     .off = AT(config, metrics_file),
     .help = "A file for Prometheus metrics, rewritten after each run (node_exporter textfile)."},
    {.name = "accounts",
     .kind = K_LIST,
     .flags = F_REQUIRED,
     .off = AT(config, accounts),
     .count_off = AT(config, n_accounts),
     .sub = &account_schema,
     .help = "The WebStorage accounts to poll."},
    {.name = "receivers",
     .kind = K_LIST,
     .flags = F_REQUIRED,
     .off = AT(config, receivers),
     .count_off = AT(config, n_receivers),
     .sub = &receiver_schema,
     .help = "Where events are sent."},
    {.name = "rules",
     .kind = K_PATH,
     .off = AT(config, rules_path),
     .def = CONFIG_DEFAULT_RULES,
     .help = "A rule file, or a directory of *.yaml rule files (see `wsrelay keys --rules`)."},
    {.name = "default_receivers",
     .kind = K_STRINGS,
     .off = AT(config, default_receivers),
     .count_off = AT(config, n_default_receivers),
     .help = "Receivers of the events that no rule matches (default: every receiver if no rules)."},
    {.name = "timezone",
     .kind = K_STRING,
     .off = AT(config, timezone),
     .check = check_timezone,
     .help = "The IANA time zone of the rules' `when:`, e.g. Asia/Tokyo (default: the system's)."},
    {.name = "self",
     .kind = K_MAP,
     .flags = F_DEFAULTS,
     .off = AT(config, self),
     .sub = &self_schema,
     .help = "Self-monitoring: relay events about wsrelay's own health, and a heartbeat."},
    {.name = "outbox",
     .kind = K_MAP,
     .flags = F_DEFAULTS,
     .off = AT(config, outbox),
     .sub = &outbox_schema,
     .help = "Limits of the outbox, where undelivered events wait."},
};
static const struct schema top_schema = {.what = "configuration",
                                         .keys = top_keys,
                                         .n_keys = N(top_keys),
                                         .size = sizeof(struct config)};
/* clang-format on */

/* ---- value checks: each puts what is wrong in e (never quoting the value) ---- */

static bool is_alnum(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_ctl(char ch)
{
    return (unsigned char)ch < 0x20 || ch == 0x7f;
}

static int check_name(char *v, struct err *e)
{
    for (const char *p = v; *p; p++)
        if (!is_alnum(*p) && !strchr("_.-", *p))
            return err_set(e, "expected a name made of letters, digits, '_', '.' and '-'");
    return 0;
}

static int check_login_id(char *v, struct err *e)
{
    for (const char *p = v; *p; p++)
        if (*p == ' ' || is_ctl(*p))
            return err_set(e, "expected a login ID without spaces or control characters");
    return 0;
}

/* The rule platform replies are held to as well (serial.h). */
static int check_serial(char *v, struct err *e)
{
    return serial_check(v, strlen(v), e);
}

/* The form only; whether plain http may go to its host is check_webhook's. */
static int check_webhook_url(char *v, struct err *e)
{
    return url_check(v, URL_HTTP_ANY, NULL, e) < 0 ? -1 : 0;
}

/* Slack and Teams: https://, or http:// to this machine only. */
static int check_chat_url(char *v, struct err *e)
{
    return url_check(v, URL_HTTP_LOOPBACK_ONLY, NULL, e) < 0 ? -1 : 0;
}

/* A host name (letters, digits, '-' and dots) or an IPv4 address; made
 * lower case. libESMTP takes "host:port", so there is no room for IPv6. */
static int check_host(char *v, struct err *e)
{
    size_t len = strlen(v);
    bool ok = len <= 253;
    for (char *p = v; *p && ok; p++) {
        ok = is_alnum(*p) || *p == '-' || *p == '.';
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    }
    ok = ok && v[0] != '.' && v[0] != '-' && v[len - 1] != '.' && !strstr(v, "..");
    if (!ok)
        return err_set(e, "expected a host name or IPv4 address (no port: see port; no IPv6 "
                          "address: use a name)");
    return 0;
}

static int check_address(char *v, struct err *e)
{
    struct mime_address a;
    if (mime_address_parse(&a, v, e) < 0)
        return -1;
    mime_address_clear(&a);
    return 0;
}

/* The file must exist and be readable now; what is in it is checked by
 * whoever reads it. */
static int check_readable_file(char *v, struct err *e)
{
    int fd = file_open_regular(v, FILE_FOLLOW, NULL, e);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int check_directory(char *v, struct err *e)
{
    DIR *d = opendir(v);
    if (!d)
        return err_set(e, "cannot read the directory %s: %s", v, strerror(errno));
    closedir(d);
    return 0;
}

/* URL_BASE: https://host[:port][/prefix], or http:// to a loopback host;
 * trailing slashes are removed. */
static int check_base_url(char *v, struct err *e)
{
    struct url u;
    if (url_check(v, URL_BASE, &u, e) < 0)
        return -1;
    size_t len = strlen(v);
    while (len > u.path_start && v[len - 1] == '/')
        v[--len] = '\0';
    return 0;
}

/* https://, or http:// to this machine: the heartbeat URL may carry a token. */
static int check_heartbeat_url(char *v, struct err *e)
{
    return url_check(v, URL_HTTP_LOOPBACK_ONLY, NULL, e) < 0 ? -1 : 0;
}

/* ---- rule values ---- */

static int check_glob(char *v, struct err *e)
{
    return glob_check(v, e);
}

/* The kinds of alert-log entries, and "gap", "reading" (an early warning)
 * and "relay", which wsrelay makes itself (relay events never go through
 * the rules, but a rule naming the kind is not a mistake). */
static int check_kind(char *v, struct err *e)
{
    for (size_t i = 0; i < event_n_kinds; i++)
        if (!strcmp(v, event_kinds[i]))
            return 0;
    if (!strcmp(v, "gap") || !strcmp(v, "reading") || !strcmp(v, "relay"))
        return 0;
    return err_set(e, "unknown kind '%s' (expected ch1 to ch6, battery-level, "
                      "communication-status, gap, reading or relay)", v);
}

static int check_event_state(char *v, struct err *e)
{
    enum alert_state st;
    if (alert_state_from_name(&st, v))
        return 0;
    return err_set(e, "unknown event '%s' (expected alarm, recovered, sensor-error, battery, "
                      "communication or other)", v);
}

static int check_regex(char *v, struct err *e)
{
    pcre2_code *re = NULL;
    if (regexp_compile(&re, v, e) < 0)
        return -1;
    pcre2_code_free(re);
    return 0;
}

static int check_window(char *v, struct err *e)
{
    struct window *w = NULL;
    if (window_parse(&w, v, e) < 0)
        return -1;
    window_free(w);
    return 0;
}

static int check_timezone(char *v, struct err *e)
{
    if (!window_zone_known(v))
        return err_set(e, "unknown time zone '%s' (expected an IANA name such as Asia/Tokyo, "
                          "as in /usr/share/zoneinfo)", v);
    return 0;
}

/* A label goes into message headers and subjects: one line, printable. */
static int check_label(char *v, struct err *e)
{
    for (const char *p = v; *p; p++)
        if (is_ctl(*p))
            return err_set(e, "expected one line without control characters");
    if (strlen(v) > 64)
        return err_set(e, "expected at most 64 bytes");
    return 0;
}

/* A rule sends somewhere or drops, and dropping takes nothing else. */
static int check_rule(const void *obj, size_t *off, struct err *e)
{
    const struct rule_conf *r = obj;
    if (r->drop && r->n_receivers) {
        *off = AT(rule_conf, receivers);
        return err_set(e, "give receivers or drop: true, not both");
    }
    if (!r->drop && !r->n_receivers) {
        *off = AT(rule_conf, receivers);
        return err_set(e, "missing required key 'receivers' (or drop: true to send nowhere)");
    }
    if (r->drop && (r->throttle || r->cont || r->severity)) {
        *off = r->throttle ? AT(rule_conf, throttle)
               : r->cont   ? AT(rule_conf, cont)
                           : AT(rule_conf, severity);
        return err_set(e, "%s does nothing with drop: true",
                       r->throttle ? "throttle" : r->cont ? "continue" : "severity");
    }
    return 0;
}

/* ---- what depends on several keys ---- */

/* A limit has a bound, and two bounds leave room between them. */
static int check_limit(const void *obj, size_t *off, struct err *e)
{
    const struct limit_conf *l = obj;
    if (!l->has_upper && !l->has_lower) {
        *off = AT(limit_conf, upper);
        return err_set(e, "give upper, lower or both");
    }
    if (l->has_upper && l->has_lower && !(l->lower < l->upper)) {
        *off = AT(limit_conf, lower);
        return err_set(e, "lower (%g) must be below upper (%g)", l->lower, l->upper);
    }
    return 0;
}

static void finish_device(void *obj)
{
    struct device_conf *d = obj;
    if (!d->base)
        d->base = xstrdup(d->serial);
}

static void finish_account(void *obj)
{
    struct account_conf *a = obj;
    a->devices_auto = a->n_devices == 0;
}

static void finish_receiver(void *obj)
{
    struct receiver_conf *r = obj;
    if (r->file.path)
        r->type = RECEIVER_FILE;
    else if (r->email.host)
        r->type = RECEIVER_EMAIL;
    else if (r->slack.url)
        r->type = RECEIVER_SLACK;
    else if (r->teams.url)
        r->type = RECEIVER_TEAMS;
    else
        r->type = RECEIVER_WEBHOOK;
}

/* A user name needs a password and a password a user name. A password is
 * not sent in the clear to another machine: starttls: off is refused for
 * it, and the transport itself withholds it when opportunistic STARTTLS
 * found no encryption. */
static int check_email(const void *obj, size_t *off, struct err *e)
{
    const char *base = obj;
    const char *host = *(char *const *)(const void *)(base + EMAIL_AT(host));
    const char *user = *(char *const *)(const void *)(base + EMAIL_AT(username));
    const char *pass = *(char *const *)(const void *)(base + EMAIL_AT(password));
    enum starttls_mode tls = *(const enum starttls_mode *)(const void *)(base + EMAIL_AT(starttls));
    if (user && !pass) {
        *off = EMAIL_AT(username);
        return err_set(e, "a username needs password or password_file");
    }
    if (pass && !user) {
        *off = EMAIL_AT(password);
        return err_set(e, "a password is only used with a username");
    }
    if (user && tls == STARTTLS_OFF && host && !url_host_is_loopback(host)) {
        *off = EMAIL_AT(starttls);
        return err_set(e, "with starttls: off the password would cross the network "
                          "unencrypted; use required (or opportunistic)");
    }
    return 0;
}

/* Plain http to another machine only with allow_http: true. The URL is a
 * secret, so the message does not name its host. */
static int check_webhook(const void *obj, size_t *off, struct err *e)
{
    const char *url = *(char *const *)(const void *)((const char *)obj + WEBHOOK_AT(url));
    bool allow_http = *(const bool *)(const void *)((const char *)obj + WEBHOOK_AT(allow_http));
    *off = WEBHOOK_AT(url);
    if (url && !allow_http && url_check(url, URL_HTTP_LOOPBACK_ONLY, NULL, NULL) == URL_E_HTTP)
        return err_set(e, "http:// sends the URL and headers unencrypted; use https://, or set "
                          "allow_http: true for a trusted network");
    return 0;
}

/* ---- the walker ---- */

struct ctx {
    const char *file; /* for messages */
    char *dir;        /* relative paths start here */
    yaml_document_t *doc;
    struct err *e;
    char key[512]; /* the key path being read: "receivers[1].webhook.url" */
    size_t key_len;
    char **warned; /* secret files already warned about */
    size_t n_warned;
    bool literal;  /* no ${VAR} expansion (rule files: '$' belongs to patterns) */
    size_t n_inline;      /* secrets written out in the file, without a ${VAR} */
    char inline_key[512]; /* the key path of the first */
};

/* `arr`, holding `n` elements of `size`, with room for one more. The
 * capacity is the power of two at or above `n`, doubled when full: adding
 * one element at a time with realloc would copy the whole array each time,
 * the square of its length (minutes for a long list under the sanitizers).
 * Every append to such an array goes through here. */
static void *grow(void *arr, size_t n, size_t size)
{
    if (n & (n - 1))
        return arr; /* not a power of two, nor 0: there is room */
    return xreallocarray(arr, n ? 2 * n : 1, size);
}

static size_t key_push(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t key_push(struct ctx *c, const char *fmt, ...)
{
    size_t old = c->key_len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->key + old, sizeof c->key - old, fmt, ap);
    va_end(ap);
    if (n > 0)
        c->key_len = old + (size_t)n < sizeof c->key ? old + (size_t)n : sizeof c->key - 1;
    return old;
}

static size_t key_push_name(struct ctx *c, const char *name)
{
    return key_push(c, c->key_len ? ".%s" : "%s", name);
}

static void key_pop(struct ctx *c, size_t old)
{
    c->key_len = old;
    c->key[old] = '\0';
}

/* "FILE:LINE:COL: KEY: message"; libyaml counts from 0, people from 1. */
static int fail(struct ctx *c, yaml_mark_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, yaml_mark_t at, const char *fmt, ...)
{
    char msg[ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(c->e, "%s:%zu:%zu: %s%s%s", c->file, at.line + 1, at.column + 1, c->key,
                   c->key_len ? ": " : "", msg);
}

static yaml_node_t *node(struct ctx *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* A plain empty scalar, `~` or `null`: YAML's way of writing nothing. */
static bool is_null(const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    for (size_t i = 0; i < N(nulls); i++)
        if (!strcmp(scalar(n), nulls[i]))
            return true;
    return false;
}

static const char *kind_name(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    return is_null(n) ? "an empty value" : "a string";
}

static bool is_name_start(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

/* ${NAME} becomes the variable's value, $${ a literal ${. In a secret, a
 * message names no part of the value, not even a variable's name: an inline
 * password may well contain "${". */
static int expand(struct ctx *c, yaml_mark_t at, const char *in, bool secret, char **out,
                  bool *from_env)
{
    *from_env = false;
    if (c->literal) {
        *out = xstrdup(in);
        return 0;
    }
    int rc = -1;
    struct buf b;
    buf_init(&b, 0);
    char *var = NULL;
    const char *p = in;
    while (*p) {
        const char *dollar = strchr(p, '$');
        if (!dollar) {
            buf_puts(&b, p);
            break;
        }
        buf_append(&b, p, (size_t)(dollar - p));
        p = dollar;
        if (!strncmp(p, "$${", 3)) {
            buf_puts(&b, "${");
            p += 3;
        } else if (!strncmp(p, "${", 2)) {
            const char *name = p + 2, *end = name;
            if (is_name_start(*end))
                while (is_name_start(*end) || (*end >= '0' && *end <= '9'))
                    end++;
            if (end == name || *end != '}') {
                fail(c, at,
                     "malformed ${...}: expected ${NAME}, NAME made of letters, digits "
                     "and '_' (write $${ for a literal ${)");
                goto out;
            }
            var = xstrndup(name, (size_t)(end - name));
            const char *value = getenv(var);
            if (!value && secret) {
                fail(c, at,
                     "the value refers to an environment variable that is not set (write $${ "
                     "for a literal ${)");
                goto out;
            }
            if (!value) {
                fail(c, at, "environment variable '%s' is not set", var);
                goto out;
            }
            buf_puts(&b, value);
            *from_env = true;
            free(var);
            var = NULL;
            p = end + 1;
        } else {
            buf_append(&b, p, 1);
            p++;
        }
    }
    *out = buf_steal(&b);
    rc = 0;
out:
    free(var);
    buf_free(&b);
    return rc;
}

static bool is_space(char ch)
{
    return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* A secret is one line of printable text, wherever it comes from: the
 * whitespace at its end (the newline an editor adds, a CRLF, a stray
 * space) is dropped, and what is left may hold no control character, so
 * that it can never split a header or a request line. Returns the length
 * left, or -1 when a control character remains. */
static long secret_trim(const char *v, size_t len)
{
    while (len && is_space(v[len - 1]))
        len--;
    for (size_t i = 0; i < len; i++)
        if (is_ctl(v[i]))
            return -1;
    return (long)len;
}

/* Counts a secret written out in the configuration, for warn_if_exposed. */
static void note_inline_secret(struct ctx *c)
{
    if (!c->n_inline++)
        snprintf(c->inline_key, sizeof c->inline_key, "%s", c->key);
}

/* The expanded text of a scalar node that should be a string; `secret`: the
 * text is a secret (see expand and secret_trim). A value that takes an
 * environment variable may hold no control character either. */
static int string_of(struct ctx *c, yaml_node_t *n, const char *expected, bool secret, char **out)
{
    bool from_env;
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return fail(c, n->start_mark, "expected %s, got %s", expected, kind_name(n));
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
        return fail(c, n->start_mark, "the value contains a NUL character");
    if (expand(c, n->start_mark, scalar(n), secret, out, &from_env) < 0)
        return -1;
    long len = (long)strlen(*out);
    if (secret) {
        len = secret_trim(*out, (size_t)len);
        if (len >= 0)
            (*out)[len] = '\0';
        if (!from_env && !c->literal)
            note_inline_secret(c);
    } else if (from_env && secret_trim(*out, (size_t)len) < 0) {
        len = -1;
    }
    if (len < 0) {
        free(*out);
        *out = NULL;
        return fail(c, n->start_mark, "the value must not contain a line break or other control "
                                      "character%s",
                    from_env ? " (it comes from an environment variable)" : "");
    }
    return 0;
}

static char *resolve_path(struct ctx *c, const char *path)
{
    if (path[0] == '/' || !strcmp(path, "-"))
        return xstrdup(path);
    return xasprintf("%s/%s", c->dir, path);
}

static void warn_if_readable(struct ctx *c, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0 || !(st.st_mode & (S_IRGRP | S_IROTH)))
        return;
    for (size_t i = 0; i < c->n_warned; i++)
        if (!strcmp(c->warned[i], path))
            return;
    c->warned = grow(c->warned, c->n_warned, sizeof *c->warned);
    c->warned[c->n_warned++] = xstrdup(path);
    log_warn("secret file %s is readable by group or others; make it mode 0600 (chmod 600 %s)",
             path, path);
}

/* The contents of the secret file `name`, less trailing whitespace (see
 * secret_trim). */
static int read_secret(struct ctx *c, yaml_mark_t at, const char *name, char **out)
{
    int rc = -1;
    char *path = resolve_path(c, name);
    struct buf b;
    buf_init(&b, SECRET_MAX_BYTES);
    struct err fe;
    if (file_read(&b, path, &fe) < 0) {
        fail(c, at, "cannot read secret file: %s", fe.msg);
        goto out;
    }
    long len = secret_trim(b.data, b.len);
    if (!len) {
        fail(c, at, "secret file %s is empty", path);
        goto out;
    }
    if (len < 0) {
        fail(c, at,
             "secret file %s contains a line break, tab, NUL or other control character "
             "before its end; a secret is one line (whitespace at its end is removed)",
             path);
        goto out;
    }
    warn_if_readable(c, path);
    *out = xstrndup(b.data, (size_t)len);
    rc = 0;
out:
    buf_free(&b);
    free(path);
    return rc;
}

/* "a, b or c" from a NULL-terminated list of words. */
static char *words_text(const char *const *words)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; words[i]; i++)
        buf_printf(&b, "%s%s", i == 0 ? "" : words[i + 1] ? ", " : " or ", words[i]);
    return buf_steal(&b);
}

/* A number as YAML writes a decimal int or float: an optional sign, digits
 * with at most one '.', an optional exponent ("-75", "-75.0", "8.5",
 * "+.5", "1e3"); finite once read. Not hexadecimal, not .inf or .nan. */
static bool number_parse(double *out, const char *text)
{
    const char *p = text;
    size_t digits = 0;
    if (*p == '+' || *p == '-')
        p++;
    for (; *p >= '0' && *p <= '9'; p++)
        digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return false;
    double d = strtod(text, NULL); /* the C locale: wsrelay never calls setlocale */
    if (!isfinite(d))
        return false;
    *out = d;
    return true;
}

/* Stores the expanded text `text` (taken over) for a scalar row. */
static int store_scalar(struct ctx *c, const struct key *k, yaml_mark_t at, char *text, void *obj)
{
    int rc = -1;
    char *value = NULL;
    char *field = (char *)obj + k->off;
    if (k->kind == K_DURATION) {
        long seconds;
        if (duration_parse(&seconds, text) < 0) {
            fail(c, at, "expected a duration such as 90s, 30m, 1h");
            goto out;
        }
        if (k->max && (seconds < k->min || seconds > k->max)) {
            char lo[24], hi[24];
            duration_format(lo, sizeof lo, k->min);
            duration_format(hi, sizeof hi, k->max);
            fail(c, at, "expected a duration from %s to %s", lo, hi);
            goto out;
        }
        *(long *)(void *)field = seconds;
        rc = 0;
        goto out;
    }
    if (k->kind == K_BOOL) {
        if (strcmp(text, "true") && strcmp(text, "false")) {
            fail(c, at, "expected true or false");
            goto out;
        }
        *(bool *)(void *)field = !strcmp(text, "true");
        rc = 0;
        goto out;
    }
    if (k->kind == K_INT) {
        char *end;
        errno = 0;
        long n = strtol(text, &end, 10);
        if (*text < '0' || *text > '9' || *end || errno || n < k->min || n > k->max) {
            fail(c, at, "expected a whole number from %ld to %ld", k->min, k->max);
            goto out;
        }
        *(long *)(void *)field = n;
        rc = 0;
        goto out;
    }
    if (k->kind == K_NUMBER) {
        double d;
        if (!number_parse(&d, text)) {
            fail(c, at, "expected a number such as -75, -75.0 or 8.5");
            goto out;
        }
        *(double *)(void *)field = d;
        *(bool *)(void *)((char *)obj + k->count_off) = true;
        rc = 0;
        goto out;
    }
    if (k->kind == K_ENUM) {
        int i = 0;
        while (k->words[i] && strcmp(k->words[i], text))
            i++;
        if (!k->words[i]) {
            char *words = words_text(k->words);
            fail(c, at, "expected %s", words);
            free(words);
            goto out;
        }
        *(int *)(void *)field = i;
        rc = 0;
        goto out;
    }
    if (!*text) {
        fail(c, at, "expected a non-empty %s", k->kind == K_GLOB ? "glob" : "string");
        goto out;
    }
    if (k->kind == K_PATH) {
        value = resolve_path(c, text);
    } else if (k->kind == K_SECRET_FILE) {
        if (read_secret(c, at, text, &value) < 0)
            goto out;
    } else {
        value = text;
        text = NULL;
    }
    struct err problem;
    if (k->check && k->check(value, &problem) < 0) {
        fail(c, at, "%s", problem.msg);
        goto out;
    }
    *(char **)(void *)field = value;
    value = NULL;
    rc = 0;
out:
    free(text);
    free(value);
    return rc;
}

static int parse_map(struct ctx *c, const struct schema *s, yaml_node_t *map, void *obj);

/* One item of a K_GLOBS or K_STRINGS row, passed through the row's check. */
static int add_string(struct ctx *c, const struct key *k, yaml_node_t *n, char ***items,
                      size_t *count)
{
    const char *what = k->kind == K_GLOBS ? "glob" : "string";
    char *text = NULL;
    struct err problem;
    char an[32];
    snprintf(an, sizeof an, "a %s", what);
    if (string_of(c, n, an, false, &text) < 0)
        return -1;
    if (!*text) {
        free(text);
        return fail(c, n->start_mark, "expected a non-empty %s", what);
    }
    if (k->check && k->check(text, &problem) < 0) {
        free(text);
        return fail(c, n->start_mark, "%s", problem.msg);
    }
    *items = grow(*items, *count, sizeof **items);
    (*items)[(*count)++] = text;
    return 0;
}

/* One string or a list of strings; for K_STRINGS the list must not be
 * empty (an empty `include:` list of globs means "all"). */
static int parse_strings(struct ctx *c, const struct key *k, yaml_node_t *n, void *obj)
{
    const char *what = k->kind == K_GLOBS ? "glob" : "string";
    char ***items = (char ***)(void *)((char *)obj + k->off);
    size_t *count = (size_t *)(void *)((char *)obj + k->count_off);
    if (n->type == YAML_SCALAR_NODE && !is_null(n))
        return add_string(c, k, n, items, count);
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(c, n->start_mark, "expected a %s or a list of %ss, got %s", what, what,
                    kind_name(n));
    yaml_node_item_t *start = n->data.sequence.items.start;
    if ((k->kind == K_STRINGS || (k->flags & F_NOT_EMPTY)) && start == n->data.sequence.items.top)
        return fail(c, n->start_mark, "the list is empty; give at least one");
    for (size_t i = 0; start + i < n->data.sequence.items.top; i++) {
        size_t mark = key_push(c, "[%zu]", i);
        if (add_string(c, k, node(c, start[i]), items, count) < 0)
            return -1;
        key_pop(c, mark);
    }
    return 0;
}

/* The value node of key `name` in mapping `map`, or NULL. */
static yaml_node_t *map_value(struct ctx *c, yaml_node_t *map, const char *name)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node(c, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), name))
            return node(c, p->value);
    }
    return NULL;
}

/* One value of a list and where it stands, for first_repeat. */
struct ranked {
    const char *value;
    size_t index;
};

static int ranked_cmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int by_value = strcmp(x->value, y->value);
    return by_value ? by_value : (x->index > y->index) - (x->index < y->index);
}

static int ranked_casecmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int by_value = strcasecmp(x->value, y->value);
    return by_value ? by_value : (x->index > y->index) - (x->index < y->index);
}

/* Where the `n` values of `v` (reordered) first repeat one: the smallest
 * index whose value an earlier one has (*second), and the earliest of
 * those (*first). Sorting keeps a long list from costing the square of its
 * length, as comparing every pair would. */
static bool first_repeat(struct ranked *v, size_t n, bool nocase, size_t *first, size_t *second)
{
    bool found = false;
    if (n < 2)
        return false;
    qsort(v, n, sizeof *v, nocase ? ranked_casecmp : ranked_cmp);
    for (size_t k = 1, start = 0; k < n; k++) {
        if ((nocase ? strcasecmp : strcmp)(v[start].value, v[k].value)) {
            start = k;
            continue;
        }
        if (k == start + 1 && (!found || v[k].index < *second)) {
            *first = v[start].index;
            *second = v[k].index;
            found = true;
        }
    }
    return found;
}

/* Reports the second of two list elements that share a F_UNIQUE value. */
static int check_unique(struct ctx *c, const struct schema *s, yaml_node_t *seq, char *arr)
{
    int rc = -1;
    yaml_node_item_t *items = seq->data.sequence.items.start;
    size_t n = (size_t)(seq->data.sequence.items.top - items);
    struct ranked *v = xcalloc(n ? n : 1, sizeof *v);
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        if (!(k->flags & F_UNIQUE))
            continue;
        size_t m = 0, i, j;
        for (size_t at = 0; at < n; at++) {
            const char *value = *(char **)(void *)(arr + at * s->size + k->off);
            if (value)
                v[m++] = (struct ranked){value, at};
        }
        if (!first_repeat(v, m, false, &i, &j))
            continue;
        yaml_node_t *first = node(c, items[i]), *second = node(c, items[j]);
        yaml_node_t *v1 = map_value(c, first, k->name);
        yaml_node_t *v2 = map_value(c, second, k->name);
        const char *b = *(char **)(void *)(arr + j * s->size + k->off);
        key_push(c, "[%zu].%s", j, k->name);
        fail(c, (v2 ? v2 : second)->start_mark, "duplicate %s %s '%s' (first at line %zu)", s->what,
             k->name, b, (v1 ? v1 : first)->start_mark.line + 1);
        goto out;
    }
    rc = 0;
out:
    free(v);
    return rc;
}

/* A list of mappings, each read with the row's sub-schema; or, for
 * K_AUTO_OR_LIST, the word auto. */
static int parse_list(struct ctx *c, const struct key *k, yaml_node_t *n, void *obj)
{
    int rc = -1;
    char *text = NULL;
    bool allow_auto = k->kind == K_AUTO_OR_LIST;
    const char *expected = allow_auto ? "'auto' or a list" : "a list";
    if (allow_auto && n->type == YAML_SCALAR_NODE && !is_null(n)) {
        if (string_of(c, n, expected, false, &text) < 0)
            goto out;
        if (strcmp(text, "auto")) {
            fail(c, n->start_mark, "expected 'auto' or a list of {serial, base}");
            goto out;
        }
        rc = 0;
        goto out;
    }
    if (n->type != YAML_SEQUENCE_NODE) {
        fail(c, n->start_mark, "expected %s, got %s", expected, kind_name(n));
        goto out;
    }
    yaml_node_item_t *items = n->data.sequence.items.start;
    size_t count = (size_t)(n->data.sequence.items.top - items);
    if (!count) {
        fail(c, n->start_mark, "the list is empty; give at least one %s", k->sub->what);
        goto out;
    }
    const struct schema *s = k->sub;
    char *arr = xcalloc(count, s->size);
    *(void **)(void *)((char *)obj + k->off) = arr;
    *(size_t *)(void *)((char *)obj + k->count_off) = count;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = node(c, items[i]);
        size_t mark = key_push(c, "[%zu]", i);
        if (item->type != YAML_MAPPING_NODE) {
            fail(c, item->start_mark, "expected a mapping, got %s", kind_name(item));
            goto out;
        }
        if (parse_map(c, s, item, arr + i * s->size) < 0)
            goto out;
        key_pop(c, mark);
    }
    if (check_unique(c, s, n, arr) < 0)
        goto out;
    rc = 0;
out:
    free(text);
    return rc;
}

static bool is_token_char(char ch)
{
    return is_alnum(ch) || (ch && strchr("!#$%&'*+.^_`|~-", ch));
}

/* name: value pairs, built so that no header can smuggle in another. */
static int parse_headers(struct ctx *c, const struct key *k, yaml_node_t *n, void *obj)
{
    static const char *const reserved[] = {"Content-Type", "Content-Length"};
    struct header_conf **headers = (struct header_conf **)(void *)((char *)obj + k->off);
    size_t *count = (size_t *)(void *)((char *)obj + k->count_off);
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n->start_mark, "expected a mapping of header names to values, got %s",
                    kind_name(n));
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = node(c, p->key), *vn = node(c, p->value);
        if (kn->type != YAML_SCALAR_NODE)
            return fail(c, kn->start_mark, "expected a header name, got %s", kind_name(kn));
        const char *name = scalar(kn);
        size_t mark = key_push(c, ".%s", name);
        int rc = -1;
        char *value = NULL;
        const char *bad = name;
        while (is_token_char(*bad))
            bad++;
        if (!*name || *bad || bad != name + kn->data.scalar.length) {
            fail(c, kn->start_mark,
                 "expected a header name made of letters, digits and "
                 "!#$%%&'*+.^_`|~-");
            goto next;
        }
        for (size_t i = 0; i < N(reserved); i++)
            if (!strcasecmp(name, reserved[i])) {
                fail(c, kn->start_mark, "%s is set by wsrelay and cannot be overridden",
                     reserved[i]);
                goto next;
            }
        if (string_of(c, vn, "a string", true, &value) < 0)
            goto next;
        if (!*value) {
            fail(c, vn->start_mark, "expected a non-empty string");
            goto next;
        }
        *headers = grow(*headers, *count, sizeof **headers);
        (*headers)[*count].name = xstrdup(name);
        (*headers)[*count].value = value;
        (*count)++;
        value = NULL;
        rc = 0;
    next:
        free(value);
        key_pop(c, mark);
        if (rc < 0)
            return -1;
    }
    /* One header per pair, in order: header i was written at pair i. */
    struct ranked *v = xcalloc(*count ? *count : 1, sizeof *v);
    for (size_t i = 0; i < *count; i++)
        v[i] = (struct ranked){(*headers)[i].name, i};
    size_t first, second;
    bool repeated = first_repeat(v, *count, true, &first, &second);
    free(v);
    if (!repeated)
        return 0;
    const char *name = (*headers)[second].name;
    key_push(c, ".%s", name);
    return fail(c, node(c, n->data.mapping.pairs.start[second].key)->start_mark,
                "duplicate header '%s' (header names ignore case)", name);
}

static int parse_value(struct ctx *c, const struct key *k, yaml_node_t *n, void *obj)
{
    char *text = NULL;
    switch (k->kind) {
    case K_DURATION:
        if (string_of(c, n, "a duration such as 90s, 30m, 1h", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_INT:
        if (string_of(c, n, "a whole number", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_NUMBER:
        if (string_of(c, n, "a number", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_ENUM:
        if (string_of(c, n, "one of the words listed", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_BOOL:
        /* Only YAML's plain true and false; no ${VAR}, no "yes", no quotes. */
        if (n->type != YAML_SCALAR_NODE || is_null(n))
            return fail(c, n->start_mark, "expected true or false, got %s", kind_name(n));
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
            return fail(c, n->start_mark, "expected true or false, without quotes");
        return store_scalar(c, k, n->start_mark, xstrdup(scalar(n)), obj);
    case K_GLOB:
        if (string_of(c, n, "a glob", false, &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_STRING:
    case K_PATH:
    case K_SECRET_FILE:
        /* A *_file value is where a secret is, not the secret. */
        if (string_of(c, n, "a string", k->kind == K_STRING && (k->flags & F_SECRET), &text) < 0)
            return -1;
        return store_scalar(c, k, n->start_mark, text, obj);
    case K_GLOBS:
    case K_STRINGS:
        return parse_strings(c, k, n, obj);
    case K_LIST:
    case K_AUTO_OR_LIST:
        return parse_list(c, k, n, obj);
    case K_MAP:
        if (n->type != YAML_MAPPING_NODE)
            return fail(c, n->start_mark, "expected a mapping, got %s", kind_name(n));
        return parse_map(c, k->sub, n, (char *)obj + k->off);
    case K_HEADERS:
        return parse_headers(c, k, n, obj);
    }
    return fail(c, n->start_mark, "internal error: unknown key kind");
}

/* "a, b or c", each name optionally quoted. */
static char *group_names(const struct schema *s, int group, bool quote)
{
    struct buf b;
    buf_init(&b, 0);
    size_t total = 0, seen = 0;
    for (size_t i = 0; i < s->n_keys; i++)
        total += s->keys[i].group == group;
    for (size_t i = 0; i < s->n_keys; i++) {
        if (s->keys[i].group != group)
            continue;
        if (seen++)
            buf_puts(&b, seen == total ? " or " : ", ");
        buf_printf(&b, quote ? "'%s'" : "%s", s->keys[i].name);
    }
    return buf_steal(&b);
}

/* The defaults of the scalar keys of `s`, for a mapping left out. */
static int defaults_of(struct ctx *c, const struct schema *s, yaml_mark_t at, void *obj)
{
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        bool scalar_kind = k->kind == K_DURATION || k->kind == K_BOOL || k->kind == K_INT ||
                           k->kind == K_NUMBER || k->kind == K_ENUM;
        if (k->def && scalar_kind && store_scalar(c, k, at, xstrdup(k->def), obj) < 0)
            return -1;
    }
    return 0;
}

/* Checks the keys of `map` against the rows of `s`, then reads each value. */
static int parse_map(struct ctx *c, const struct schema *s, yaml_node_t *map, void *obj)
{
    int rc = -1;
    char *names = NULL;
    yaml_node_t **given = xcalloc(s->n_keys, sizeof *given);
    yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    size_t n_pairs = (size_t)(map->data.mapping.pairs.top - pairs);
    size_t *row_of = xcalloc(n_pairs, sizeof *row_of); /* the row each pair was found in */

    for (size_t p = 0; p < n_pairs; p++) {
        yaml_node_t *kn = node(c, pairs[p].key);
        if (kn->type != YAML_SCALAR_NODE) {
            fail(c, kn->start_mark, "expected a key name, got %s", kind_name(kn));
            goto out;
        }
        const char *name = scalar(kn);
        size_t i = 0;
        while (i < s->n_keys && strcmp(s->keys[i].name, name))
            i++;
        if (i == s->n_keys) {
            struct buf list;
            buf_init(&list, 0);
            for (size_t j = 0; j < s->n_keys; j++)
                buf_printf(&list, "%s%s", j ? ", " : "", s->keys[j].name);
            fail(c, kn->start_mark, "unknown key '%s' (expected one of: %s)", name, buf_str(&list));
            buf_free(&list);
            goto out;
        }
        if (given[i]) {
            fail(c, kn->start_mark, "duplicate key '%s' (first at line %zu)", name,
                 given[i]->start_mark.line + 1);
            goto out;
        }
        for (size_t j = 0; s->keys[i].group && j < s->n_keys; j++)
            if (given[j] && s->keys[j].group == s->keys[i].group) {
                names = group_names(s, s->keys[i].group, false);
                fail(c, kn->start_mark, "give %s, not both", names);
                goto out;
            }
        given[i] = kn;
        row_of[p] = i;
    }
    for (size_t i = 0; i < s->n_keys; i++) {
        const struct key *k = &s->keys[i];
        if ((k->flags & F_REQUIRED) && !given[i]) {
            fail(c, map->start_mark, "missing required key '%s'", k->name);
            goto out;
        }
        bool group_given = false;
        for (size_t j = 0; k->group && j < s->n_keys; j++)
            group_given |= given[j] && s->keys[j].group == k->group;
        if (k->group && !group_given && !(k->flags & F_GROUP_OPTIONAL)) {
            names = group_names(s, k->group, true);
            fail(c, map->start_mark, "missing required key %s", names);
            goto out;
        }
    }
    for (size_t p = 0; p < n_pairs; p++) {
        const struct key *k = &s->keys[row_of[p]];
        size_t mark = key_push_name(c, k->name);
        if (parse_value(c, k, node(c, pairs[p].value), obj) < 0)
            goto out;
        key_pop(c, mark);
    }
    for (size_t i = 0; i < s->n_keys; i++) {
        const struct key *k = &s->keys[i];
        /* A list's default is its absence (devices: auto); finish hooks do the rest. */
        bool scalar_kind = k->kind == K_STRING || k->kind == K_PATH || k->kind == K_GLOB ||
                           k->kind == K_DURATION || k->kind == K_BOOL || k->kind == K_INT ||
                           k->kind == K_NUMBER || k->kind == K_ENUM;
        if (!given[i] && k->kind == K_MAP && (k->flags & F_DEFAULTS)) {
            if (defaults_of(c, k->sub, map->start_mark, (char *)obj + k->off) < 0)
                goto out;
            continue;
        }
        if (given[i] || !k->def || !scalar_kind)
            continue;
        size_t mark = key_push_name(c, k->name);
        int r = store_scalar(c, k, map->start_mark, xstrdup(k->def), obj);
        key_pop(c, mark);
        if (r < 0)
            goto out;
    }
    size_t off = 0;
    struct err problem;
    if (s->check && s->check(obj, &off, &problem) < 0) {
        /* Point at the value of the given key that holds the field. */
        yaml_node_t *at = NULL;
        for (size_t i = 0; i < s->n_keys && !at; i++)
            if (given[i] && s->keys[i].off == off && (at = map_value(c, map, s->keys[i].name)))
                key_push_name(c, s->keys[i].name);
        fail(c, (at ? at : map)->start_mark, "%s", problem.msg);
        goto out;
    }
    if (s->finish)
        s->finish(obj);
    rc = 0;
out:
    free(names);
    free(given);
    free(row_of);
    return rc;
}

/* ---- freeing, from the same rows ---- */

static void free_obj(const struct schema *s, void *obj)
{
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        char *field = (char *)obj + k->off;
        switch (k->kind) {
        case K_STRING:
        case K_PATH:
        case K_SECRET_FILE:
        case K_GLOB: {
            char **p = (char **)(void *)field;
            free(*p);
            *p = NULL; /* api_key and api_key_file share one field */
            break;
        }
        case K_DURATION:
        case K_BOOL:
        case K_INT:
        case K_NUMBER:
        case K_ENUM:
            break;
        case K_GLOBS:
        case K_STRINGS: {
            char ***v = (char ***)(void *)field;
            size_t *n = (size_t *)(void *)((char *)obj + k->count_off);
            for (size_t i = 0; i < *n; i++)
                free((*v)[i]);
            free(*v);
            *v = NULL;
            *n = 0;
            break;
        }
        case K_LIST:
        case K_AUTO_OR_LIST:
        case K_HEADERS: {
            char **arr = (char **)(void *)field;
            size_t *n = (size_t *)(void *)((char *)obj + k->count_off);
            for (size_t i = 0; i < *n; i++)
                free_obj(k->sub, *arr + i * k->sub->size);
            free(*arr);
            *arr = NULL;
            *n = 0;
            break;
        }
        case K_MAP:
            free_obj(k->sub, field);
            break;
        }
    }
}

/* ---- loading ---- */

/* The node naming item `i` of a string-or-list value `n`. */
static yaml_node_t *string_item(struct ctx *c, yaml_node_t *n, size_t i)
{
    if (n->type == YAML_SEQUENCE_NODE)
        return node(c, n->data.sequence.items.start[i]);
    return n;
}

/* What config_load looks things up in while it reads the rules: sorted,
 * so that many rules and receivers do not cost the square of their number. */
struct lookup {
    const char **receivers; /* the receivers' names, sorted */
    size_t n_receivers;
    yaml_mark_t *rule_name_at; /* where each rule of cfg->rules has its name */
};

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each name of `names` (read from value node `n`) is a configured receiver. */
static int check_receivers(struct ctx *c, const struct config *cfg, const struct lookup *lk,
                           char **names, size_t n_names, yaml_node_t *n)
{
    for (size_t i = 0; i < n_names; i++) {
        const char *name = names[i];
        if (bsearch(&name, lk->receivers, lk->n_receivers, sizeof *lk->receivers, str_cmp))
            continue;
        struct buf known;
        buf_init(&known, 0);
        for (size_t j = 0; j < cfg->n_receivers; j++)
            buf_printf(&known, "%s%s", j ? ", " : "", cfg->receivers[j].name);
        if (n->type == YAML_SEQUENCE_NODE)
            key_push(c, "[%zu]", i);
        fail(c, string_item(c, n, i)->start_mark, "unknown receiver '%s' (the receivers are: %s)",
             names[i], buf_str(&known));
        buf_free(&known);
        return -1;
    }
    return 0;
}

/* Reads the rules of one file into cfg->rules. */
static int load_rule_file(struct config *cfg, struct lookup *lk, const char *path, struct err *e)
{
    int rc = -1;
    struct yamlfile y;
    struct ctx c = {.file = path, .dir = file_dirname(path), .e = e, .literal = true};
    if (yamlfile_open(&y, path, CONFIG_MAX_BYTES, e) < 0)
        goto out;
    c.doc = &y.doc;
    yaml_node_t *root = yaml_document_get_root_node(&y.doc);
    if (!root || is_null(root)) {
        log_warn("%s: no rules in the file", path);
        rc = 0;
        goto out;
    }
    if (root->type != YAML_SEQUENCE_NODE) {
        fail(&c, root->start_mark, "expected a list of rules (each starting with '- name:'), "
                                   "got %s", kind_name(root));
        goto out;
    }
    for (yaml_node_item_t *it = root->data.sequence.items.start;
         it < root->data.sequence.items.top; it++) {
        yaml_node_t *item = node(&c, *it);
        if (item->type != YAML_MAPPING_NODE) {
            fail(&c, item->start_mark, "expected a rule (a mapping with name, match, receivers), "
                                       "got %s", kind_name(item));
            goto out;
        }
        cfg->rules = grow(cfg->rules, cfg->n_rules, sizeof *cfg->rules);
        lk->rule_name_at = grow(lk->rule_name_at, cfg->n_rules, sizeof *lk->rule_name_at);
        struct rule_conf *r = &cfg->rules[cfg->n_rules++];
        memset(r, 0, sizeof *r);
        r->file = xstrdup(path);
        r->line = (long)item->start_mark.line + 1;
        r->col = (long)item->start_mark.column + 1;
        if (parse_map(&c, &rule_schema, item, r) < 0)
            goto out;
        lk->rule_name_at[cfg->n_rules - 1] = map_value(&c, item, "name")->start_mark;
        size_t mark = key_push(&c, "rule '%s'", r->name);
        yaml_node_t *rv = map_value(&c, item, "receivers");
        key_push_name(&c, "receivers");
        if (rv && check_receivers(&c, cfg, lk, r->receivers, r->n_receivers, rv) < 0)
            goto out;
        key_pop(&c, mark);
    }
    rc = 0;
out:
    yamlfile_close(&y);
    free(c.dir);
    return rc;
}

/* Rule names are unique across all rule files: the second of a pair is
 * reported, where its name is written. */
static int check_rule_names(const struct config *cfg, const struct lookup *lk, struct err *e)
{
    struct ranked *v = xcalloc(cfg->n_rules ? cfg->n_rules : 1, sizeof *v);
    for (size_t i = 0; i < cfg->n_rules; i++)
        v[i] = (struct ranked){cfg->rules[i].name, i};
    size_t i, j;
    bool repeated = first_repeat(v, cfg->n_rules, false, &i, &j);
    free(v);
    if (!repeated)
        return 0;
    const struct rule_conf *first = &cfg->rules[i], *second = &cfg->rules[j];
    yaml_mark_t at = lk->rule_name_at[j];
    return err_set(e, "%s:%zu:%zu: rule '%s': duplicate rule name (first at %s:%ld:%ld)",
                   second->file, at.line + 1, at.column + 1, second->name, first->file,
                   first->line, first->col);
}

/* `rules:` names a file or a directory of *.yaml files (read in name
 * order; hidden files are skipped). */
static int load_rules(struct config *cfg, struct lookup *lk, struct err *e)
{
    int rc = -1;
    const char *path = cfg->rules_path;
    char **names = NULL;
    size_t n = 0;
    DIR *d = NULL;
    struct stat st;
    if (stat(path, &st) < 0) {
        err_set(e, "%s: rules: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        rc = load_rule_file(cfg, lk, path, e);
        goto out;
    }
    if (!(d = opendir(path))) {
        err_set(e, "%s: cannot read the rules directory: %s", path, strerror(errno));
        goto out;
    }
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".yaml"))
            continue;
        names = grow(names, n, sizeof *names);
        names[n++] = xasprintf("%s/%s", path, de->d_name);
    }
    if (n) /* an empty directory leaves names NULL, which qsort must not get */
        qsort(names, n, sizeof *names, str_cmp);
    for (size_t i = 0; i < n; i++)
        if (load_rule_file(cfg, lk, names[i], e) < 0)
            goto out;
    rc = 0;
out:
    if (d)
        closedir(d);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* A configuration that others may read should not hold secrets: warns,
 * once per load, when it holds some written out and gives "other" any
 * permission. Secrets from *_file keys or ${VAR} are not in the file. */
static void warn_if_exposed(const struct ctx *c, mode_t mode)
{
    if (!c->n_inline || !(mode & S_IRWXO))
        return;
    char more[48] = "";
    if (c->n_inline > 1)
        snprintf(more, sizeof more, " and %zu more", c->n_inline - 1);
    log_warn("%s is mode %04o, open to other users, and holds secrets written out in it (%s%s); "
             "chmod 0640 %s (or 0600), or move the secrets to *_file keys, ${VAR} or systemd "
             "credentials",
             c->file, (unsigned)(mode & 07777), c->inline_key, more, c->file);
}

int config_load(struct config **out, const char *path, struct err *e)
{
    int rc = -1;
    struct config *cfg = xcalloc(1, sizeof *cfg);
    struct ctx c = {.file = path, .dir = file_dirname(path), .e = e};
    struct yamlfile y;
    struct lookup lk = {0};

    *out = NULL;
    cfg->path = xstrdup(path);
    if (yamlfile_open(&y, path, CONFIG_MAX_BYTES, e) < 0)
        goto out;
    c.doc = &y.doc;
    yaml_node_t *root = yaml_document_get_root_node(&y.doc);
    if (!root) {
        err_set(e, "%s:1:1: the file is empty; it needs at least accounts and receivers", path);
        goto out;
    }
    if (root->type != YAML_MAPPING_NODE) {
        fail(&c, root->start_mark, "expected a mapping with accounts and receivers, got %s",
             kind_name(root));
        goto out;
    }
    if (parse_map(&c, &top_schema, root, cfg) < 0)
        goto out;
    warn_if_exposed(&c, y.mode);
    lk.n_receivers = cfg->n_receivers;
    lk.receivers = xcalloc(lk.n_receivers ? lk.n_receivers : 1, sizeof *lk.receivers);
    for (size_t i = 0; i < cfg->n_receivers; i++)
        lk.receivers[i] = cfg->receivers[i].name;
    qsort(lk.receivers, lk.n_receivers, sizeof *lk.receivers, str_cmp);
    yaml_node_t *dr = map_value(&c, root, "default_receivers");
    size_t mark = key_push_name(&c, "default_receivers");
    if (dr && check_receivers(&c, cfg, &lk, cfg->default_receivers, cfg->n_default_receivers, dr) < 0)
        goto out;
    key_pop(&c, mark);
    yaml_node_t *self = map_value(&c, root, "self");
    yaml_node_t *sr = self ? map_value(&c, self, "receivers") : NULL;
    mark = key_push_name(&c, "self");
    key_push_name(&c, "receivers");
    if (sr && check_receivers(&c, cfg, &lk, cfg->self.receivers, cfg->self.n_receivers, sr) < 0)
        goto out;
    key_pop(&c, mark);
    /* The default rules directory is optional; a configured one is not. */
    struct stat st;
    if (!map_value(&c, root, "rules") && stat(cfg->rules_path, &st) < 0 && errno == ENOENT) {
        free(cfg->rules_path);
        cfg->rules_path = NULL;
    }
    if (cfg->rules_path && (load_rules(cfg, &lk, e) < 0 || check_rule_names(cfg, &lk, e) < 0))
        goto out;
    *out = cfg;
    cfg = NULL;
    rc = 0;
out:
    yamlfile_close(&y);
    free(lk.receivers);
    free(lk.rule_name_at);
    for (size_t i = 0; i < c.n_warned; i++)
        free(c.warned[i]);
    free(c.warned);
    free(c.dir);
    config_free(cfg);
    return rc;
}

void config_free(struct config *c)
{
    if (!c)
        return;
    free_obj(&top_schema, c);
    for (size_t i = 0; i < c->n_rules; i++) {
        free_obj(&rule_schema, &c->rules[i]);
        free(c->rules[i].file);
    }
    free(c->rules);
    free(c->path);
    free(c);
}

long account_device_priority(const struct account_conf *a, const char *serial)
{
    for (size_t i = 0; i < a->n_devices; i++)
        if (!strcmp(a->devices[i].serial, serial) && a->devices[i].priority)
            return a->devices[i].priority;
    for (size_t i = 0; i < a->n_priorities; i++)
        if (glob_match(a->priorities[i].serial, serial))
            return a->priorities[i].priority;
    return 1;
}

bool account_limit(const struct account_conf *a, const char *serial, int channel,
                   struct watch_limit *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < a->n_limits; i++) {
        const struct limit_conf *l = &a->limits[i];
        if (l->channel != channel || !glob_match(l->serial, serial))
            continue;
        out->has_upper = l->has_upper;
        out->has_lower = l->has_lower;
        out->upper = l->has_upper ? l->upper : 0;
        out->lower = l->has_lower ? l->lower : 0;
        return true;
    }
    return false;
}

bool config_login_first(const struct config *c, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (strcmp(c->accounts[k].login_id, c->accounts[i].login_id) == 0)
            return false;
    return true;
}

bool account_wants_serial(const struct account_conf *a, const char *serial)
{
    bool wanted = a->n_include == 0;
    for (size_t i = 0; i < a->n_include && !wanted; i++)
        wanted = glob_match(a->include[i], serial);
    for (size_t i = 0; i < a->n_exclude && wanted; i++)
        wanted = !glob_match(a->exclude[i], serial);
    return wanted;
}

const struct receiver_conf *config_receiver(const struct config *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->n_receivers; i++)
        if (!strcmp(c->receivers[i].name, name))
            return &c->receivers[i];
    return NULL;
}

/* ---- the key reference ---- */

static const char *kind_text(enum kind kind)
{
    switch (kind) {
    case K_STRING:
        return "string";
    case K_PATH:
        return "path";
    case K_SECRET_FILE:
        return "path of a secret file";
    case K_GLOB:
        return "glob";
    case K_DURATION:
        return "duration";
    case K_BOOL:
        return "boolean";
    case K_INT:
        return "whole number";
    case K_NUMBER:
        return "number";
    case K_ENUM:
        return "word";
    case K_GLOBS:
        return "glob or list of globs";
    case K_STRINGS:
        return "string or list of strings";
    case K_LIST:
        return "list";
    case K_AUTO_OR_LIST:
        return "auto or list";
    case K_MAP:
        return "mapping";
    case K_HEADERS:
        return "mapping of header names to values";
    }
    return "?";
}

static void reference(struct buf *b, const struct schema *s, const char *prefix)
{
    for (const struct key *k = s->keys; k < s->keys + s->n_keys; k++) {
        buf_printf(b, "%s%s (", prefix, k->name);
        if (k->kind == K_INT) {
            buf_printf(b, "whole number from %ld to %ld", k->min, k->max);
        } else if (k->kind == K_DURATION && k->max) {
            char lo[24], hi[24];
            duration_format(lo, sizeof lo, k->min);
            duration_format(hi, sizeof hi, k->max);
            buf_printf(b, "duration from %s to %s", lo, hi);
        } else if (k->kind == K_ENUM) {
            char *words = words_text(k->words);
            buf_printf(b, "%s", words);
            free(words);
        } else {
            buf_puts(b, kind_text(k->kind));
        }
        if (k->flags & F_REQUIRED)
            buf_puts(b, "; required");
        if (k->group) {
            char *names = group_names(s, k->group, false);
            buf_printf(b, "; give %s of %s",
                       k->flags & F_GROUP_OPTIONAL ? "at most one" : "exactly one", names);
            free(names);
        }
        if (k->def)
            buf_printf(b, "; default %s", k->def);
        if (k->flags & F_SECRET)
            buf_puts(b, "; secret");
        if (k->flags & F_UNIQUE)
            buf_puts(b, "; unique");
        buf_printf(b, ")\n    %s\n", k->help);
        if (k->sub && k->kind != K_HEADERS) {
            char *sub = xasprintf("%s%s%s", prefix, k->name, k->kind == K_MAP ? "." : "[].");
            reference(b, k->sub, sub);
            free(sub);
        }
    }
}

char *config_reference(void)
{
    struct buf b;
    buf_init(&b, 0);
    reference(&b, &top_schema, "");
    return buf_steal(&b);
}

char *config_rules_reference(void)
{
    struct buf b;
    buf_init(&b, 0);
    reference(&b, &rule_schema, "");
    return buf_steal(&b);
}
