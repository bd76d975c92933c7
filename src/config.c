/* The configuration file: YAML in, a validated `struct config` out. Every key
 * is a row of a table here (kind, flags, default, check, help) and schema.c
 * reads, frees and documents by the rows, so validation, freeing and the key
 * reference all come from the same tables. What this file adds is wsrelay's
 * own: the checks of values, what depends on several keys, and the rule
 * files with the receivers they name. */
#include "config.h"
#include "schema.h"
#include "util/buf.h"
#include "util/duration.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/url.h"
#include "util/xalloc.h"

#include "alerttext.h"
#include "event.h"
#include "glob.h"
#include "mime.h"
#include "readings_memory.h"
#include "regexp.h"
#include "serial.h"
#include "window.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define CATCH_UP_DEFAULT "1h"
#define RUN_TIME_DEFAULT "3m"
#define SELF_AFTER_DEFAULT "15m"
#define OUTBOX_MAX_AGE_DEFAULT "7d"
#define OUTBOX_MAX_ITEMS_DEFAULT "10000"
/* `incidents:`. An incident open a week is a device that never came back;
 * the log keeps a year and a month, enough for a yearly audit. */
#define INCIDENTS_MAX_OPEN_DEFAULT "7d"
#define INCIDENTS_KEEP_DEFAULT "400d"
/* A rule's `repeat:`: reminders closer than a minute apart would come at
 * every run; more than a day apart they are no longer reminders. */
#define RULE_REPEAT_MIN 60
#define RULE_REPEAT_MAX 86400
/* A receiver's `timeout:`. At least 5 s: a mail session with STARTTLS and a
 * login is several round trips, and a far end that is merely slow should
 * not fail. At most 2 min: a run stops only between deliveries, and the
 * packaged units give a stopping loop 3 min (TimeoutStopSec) and a whole
 * timer run 5 min (TimeoutStartSec), polling included; a delivery that
 * outlived them would be killed and sent again by the next run. */
#define RECEIVER_TIMEOUT_DEFAULT "60s"
#define RECEIVER_TIMEOUT_MIN 5
#define RECEIVER_TIMEOUT_MAX 120

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
static int check_https_url(char *v, struct err *e);
static int check_email(const void *obj, size_t *off, struct err *e);
static int check_imaps_url(char *v, struct err *e);
static int check_glob(char *v, struct err *e);
static int check_kind(char *v, struct err *e);
static int check_event_state(char *v, struct err *e);
static int check_regex(char *v, struct err *e);
static int check_window(char *v, struct err *e);
static int check_timezone(char *v, struct err *e);
static int check_label(char *v, struct err *e);
static int check_rule(const void *obj, size_t *off, struct err *e);
static int check_escalation(const void *obj, size_t *off, struct err *e);
static int check_incidents(const void *obj, size_t *off, struct err *e);
static int check_limit(const void *obj, size_t *off, struct err *e);
static void finish_device(void *obj);
static void finish_account(void *obj);
static void finish_receiver(void *obj);
static int check_header_name(char *v, struct err *e);
static int check_slack_token(char *v, struct err *e);
static int check_slack_channel(char *v, struct err *e);
static int check_slack(const void *obj, size_t *off, struct err *e);
static int check_slack_api_url(char *v, struct err *e);
static int check_digits(char *v, struct err *e);
static int check_pushover(const void *obj, size_t *off, struct err *e);

#define N(rows) (sizeof(rows) / sizeof((rows)[0]))
#define AT(type, member) offsetof(struct type, member)
/* The webhook mapping is an anonymous struct inside struct receiver_conf. */
#define WEBHOOK_AT(member) (AT(receiver_conf, webhook.member) - AT(receiver_conf, webhook))
#define EMAIL_AT(member) (AT(receiver_conf, email.member) - AT(receiver_conf, email))
#define ACK_AT(member) AT(email_ack_conf, member)
#define PAGERDUTY_AT(member) (AT(receiver_conf, pagerduty.member) - AT(receiver_conf, pagerduty))
#define OPSGENIE_AT(member) (AT(receiver_conf, opsgenie.member) - AT(receiver_conf, opsgenie))
#define MATCH_AT(member) (AT(rule_conf, match.member) - AT(rule_conf, match))
#define SELF_AT(member) AT(self_conf, member)
#define OUTBOX_AT(member) AT(outbox_conf, member)
#define INCIDENTS_AT(member) AT(incidents_conf, member)
#define GCHAT_AT(member) (AT(receiver_conf, googlechat.member) - AT(receiver_conf, googlechat))
#define CHATWORK_AT(member) (AT(receiver_conf, chatwork.member) - AT(receiver_conf, chatwork))
#define PUSHOVER_AT(member) (AT(receiver_conf, pushover.member) - AT(receiver_conf, pushover))

static const char *const starttls_words[] = {"required", "opportunistic", "off", NULL};
/* enum chat_language */
static const char *const language_words[] = {"en", "ja", NULL};
static const char *const pagerduty_severity_words[] = {"critical", "error", "warning", "info",
                                                       NULL};
static const char *const opsgenie_region_words[] = {"us", "eu", NULL};
/* `match: source:`, word i being bit 1 << i: RULE_SOURCE_READING, RULE_SOURCE_LOG. */
static const char *const source_words[] = {"reading", "log", NULL};

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
     .shape = "{serial, base}",
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
    {.name = "trend",
     .kind = K_BOOL,
     .off = AT(account_conf, trend),
     .def = "true",
     .help = "For an alarm or recovery on a channel (and an early warning), read the channel's "
             "last readings (one Get Latest Data call per device, of its 60 a minute) and show "
             "them in the message: a sparkline in chat, a chart in email."},
};
static const struct schema account_schema = {.what = "account",
                                             .keys = account_keys,
                                             .n_keys = N(account_keys),
                                             .size = sizeof(struct account_conf),
                                             .finish = finish_account};

/* Where K_HEADERS puts a header's name (the first row) and value (the
 * second), and how schema_clear frees them; the reference does not list them. */
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
     .check = check_header_name,
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

static const struct key email_ack_keys[] = {
    {.name = "imap",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = ACK_AT(imap),
     .check = check_imaps_url,
     .help = "The mailbox that replies to the mails reach: imaps://host[:port]/MAILBOX "
             "(TLS from the start; port 993 by default)."},
    {.name = "username",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = ACK_AT(username),
     .help = "The mailbox's user."},
    {.name = "password_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET | F_REQUIRED,
     .off = ACK_AT(password),
     .help = "A file holding the mailbox's password (mode 0600)."},
    {.name = "pin_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .off = ACK_AT(pin),
     .help = "A file holding a PIN that a reply must carry after its ACK line (\"ACK 12 PIN\"): "
             "a forged sender cannot acknowledge without it."},
    {.name = "from",
     .kind = K_STRINGS,
     .off = ACK_AT(from),
     .count_off = ACK_AT(n_from),
     .check = check_address,
     .help = "More senders whose replies acknowledge, besides the receiver's to: and cc:."},
    {.name = "ca_file",
     .kind = K_PATH,
     .off = ACK_AT(ca_file),
     .check = check_readable_file,
     .help = "PEM certificates to verify the IMAP server with (default: the system's store)."},
};
static const struct schema email_ack_schema = {.what = "ack",
                                               .keys = email_ack_keys,
                                               .n_keys = N(email_ack_keys),
                                               .size = sizeof(struct email_ack_conf)};

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
    {.name = "ack",
     .kind = K_MAP,
     .off = EMAIL_AT(ack),
     .sub = &email_ack_schema,
     .help = "Take acknowledgements from replies to the mails: a mailbox read over IMAP "
             "after each run's deliveries."},
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
     .check = check_https_url,
     .help = "The incoming-webhook URL: https://, or http:// to this machine."},
    {.name = "url_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(chat_conf, url),
     .check = check_https_url,
     .help = "A file holding the URL (mode 0600)."},
    {.name = "template",
     .kind = K_PATH,
     .off = AT(chat_conf, template),
     .check = check_readable_file,
     .help = "A template for the whole JSON payload (default: slack.json or teams.json)."},
};
static const struct schema chat_schema = {
    .what = "chat", .keys = chat_keys, .n_keys = N(chat_keys), .size = sizeof(struct chat_conf)};

/* Google Chat, Chatwork and Pushover (notify/googlechat.c, chatwork.c,
 * pushover.c). */
static const struct key googlechat_keys[] = {
    {.name = "url",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = GCHAT_AT(url),
     .check = check_https_url,
     .help = "The space's incoming-webhook URL (with its key and token): https://, or http:// "
             "to this machine."},
    {.name = "url_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = GCHAT_AT(url),
     .check = check_https_url,
     .help = "A file holding the URL (mode 0600)."},
    {.name = "language",
     .kind = K_ENUM,
     .off = GCHAT_AT(language),
     .def = "en",
     .words = language_words,
     .help = "The built-in template's language: en or ja."},
    {.name = "template",
     .kind = K_PATH,
     .off = GCHAT_AT(template),
     .check = check_readable_file,
     .help = "A template for the message's text (default: googlechat-en.txt or "
             "googlechat-ja.txt)."},
};
static const struct schema googlechat_schema = {
    .what = "googlechat",
    .keys = googlechat_keys,
    .n_keys = N(googlechat_keys),
    .size = sizeof(((struct receiver_conf *)0)->googlechat)};

static const struct key chatwork_keys[] = {
    {.name = "token",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = CHATWORK_AT(token),
     .help = "The API token, e.g. \"${CHATWORK_TOKEN}\"."},
    {.name = "token_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = CHATWORK_AT(token),
     .help = "A file holding the API token (mode 0600)."},
    {.name = "room_id",
     .kind = K_STRING,
     .flags = F_REQUIRED,
     .off = CHATWORK_AT(room_id),
     .check = check_digits,
     .help = "The room's number (the digits after rid in its address)."},
    {.name = "base_url",
     .kind = K_STRING,
     .off = CHATWORK_AT(base_url),
     .def = "https://api.chatwork.com",
     .check = check_https_url,
     .help = "The API: https://, or http:// to this machine."},
    {.name = "language",
     .kind = K_ENUM,
     .off = CHATWORK_AT(language),
     .def = "ja",
     .words = language_words,
     .help = "The built-in template's language: ja or en."},
    {.name = "template",
     .kind = K_PATH,
     .off = CHATWORK_AT(template),
     .check = check_readable_file,
     .help = "A template for the message (default: chatwork-ja.txt or chatwork-en.txt)."},
};
static const struct schema chatwork_schema = {.what = "chatwork",
                                              .keys = chatwork_keys,
                                              .n_keys = N(chatwork_keys),
                                              .size =
                                                  sizeof(((struct receiver_conf *)0)->chatwork)};

static const struct key pushover_keys[] = {
    {.name = "token",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = PUSHOVER_AT(token),
     .help = "The application's API token, e.g. \"${PUSHOVER_TOKEN}\"."},
    {.name = "token_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = PUSHOVER_AT(token),
     .help = "A file holding the application's API token (mode 0600)."},
    {.name = "user",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 2,
     .off = PUSHOVER_AT(user),
     .help = "The user or group key, e.g. \"${PUSHOVER_USER}\"."},
    {.name = "user_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 2,
     .off = PUSHOVER_AT(user),
     .help = "A file holding the user or group key (mode 0600)."},
    {.name = "retry",
     .kind = K_DURATION,
     .off = PUSHOVER_AT(retry),
     .def = "60s",
     .min = 30,
     .max = 10800,
     .help = "How often the phone repeats an incident's alarm until someone acknowledges it."},
    {.name = "expire",
     .kind = K_DURATION,
     .off = PUSHOVER_AT(expire),
     .def = "1h",
     .min = 30,
     .max = 10800,
     .help = "How long it keeps repeating (at most 3h, and not less than retry)."},
    {.name = "base_url",
     .kind = K_STRING,
     .off = PUSHOVER_AT(base_url),
     .def = "https://api.pushover.net",
     .check = check_https_url,
     .help = "The API: https://, or http:// to this machine."},
    {.name = "template",
     .kind = K_PATH,
     .off = PUSHOVER_AT(template),
     .check = check_readable_file,
     .help = "A template for the notification: its first line the title, the rest the message "
             "(default: pushover.txt)."},
};
static const struct schema pushover_schema = {.what = "pushover",
                                              .keys = pushover_keys,
                                              .n_keys = N(pushover_keys),
                                              .size = sizeof(((struct receiver_conf *)0)->pushover),
                                              .check = check_pushover};
/* PagerDuty's Events API v2 (notify/pagerduty.c). */
static const struct key pagerduty_keys[] = {
    {.name = "routing_key_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET | F_REQUIRED,
     .off = PAGERDUTY_AT(routing_key),
     .help = "A file holding the integration key of an Events API v2 integration (mode 0600)."},
    {.name = "severity",
     .kind = K_ENUM,
     .off = PAGERDUTY_AT(severity),
     .def = "error",
     .words = pagerduty_severity_words,
     .help = "The alert's severity when the rule's severity is not critical, error, warning or "
             "info."},
    {.name = "base_url",
     .kind = K_STRING,
     .off = PAGERDUTY_AT(base_url),
     .def = "https://events.pagerduty.com",
     .check = check_base_url,
     .help = "The Events API: https://, or http:// to this machine; events go to "
             "BASE_URL/v2/enqueue."},
};
static const struct schema pagerduty_schema = {.what = "pagerduty",
                                               .keys = pagerduty_keys,
                                               .n_keys = N(pagerduty_keys),
                                               .size =
                                                   sizeof(((struct receiver_conf *)0)->pagerduty)};

/* Opsgenie's Alert API (notify/opsgenie.c). */
static const struct key opsgenie_keys[] = {
    {.name = "api_key_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET | F_REQUIRED,
     .off = OPSGENIE_AT(api_key),
     .help = "A file holding the key of an API integration (mode 0600)."},
    {.name = "region",
     .kind = K_ENUM,
     .off = OPSGENIE_AT(region),
     .def = "us",
     .words = opsgenie_region_words,
     .help = "us: api.opsgenie.com; eu: api.eu.opsgenie.com."},
    {.name = "base_url",
     .kind = K_STRING,
     .off = OPSGENIE_AT(base_url),
     .check = check_base_url,
     .help = "Another Alert API in place of the region's (Jira Service Management's, after "
             "Opsgenie ends): https://, or http:// to this machine; alerts go to "
             "BASE_URL/v2/alerts."},
};
static const struct schema opsgenie_schema = {.what = "opsgenie",
                                              .keys = opsgenie_keys,
                                              .n_keys = N(opsgenie_keys),
                                              .size =
                                                  sizeof(((struct receiver_conf *)0)->opsgenie)};
/* Slack: an incoming webhook (the chat keys), or an app's bot token and
 * channel (notify/slackapp.c). */
static const struct key slack_keys[] = {
    {.name = "url",
     .kind = K_STRING,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(chat_conf, url),
     .check = check_https_url,
     .help = "The incoming-webhook URL: https://, or http:// to this machine."},
    {.name = "url_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(chat_conf, url),
     .check = check_https_url,
     .help = "A file holding the URL (mode 0600)."},
    {.name = "token_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET,
     .group = 1,
     .off = AT(chat_conf, token),
     .check = check_slack_token,
     .help = "Instead of url: a file holding a Slack app's bot token, xoxb-… (mode 0600); "
             "with channel, wsrelay posts through Slack's Web API, threads an incident's "
             "messages and takes acknowledgements from the thread."},
    {.name = "channel",
     .kind = K_STRING,
     .off = AT(chat_conf, channel),
     .check = check_slack_channel,
     .help = "With token_file: the id of the channel to post in, e.g. C0123456789 (the app "
             "must be a member)."},
    {.name = "api_url",
     .kind = K_STRING,
     .off = AT(chat_conf, api_url),
     .check = check_slack_api_url,
     .help = "With token_file: the Web API's base URL (default: https://slack.com/api)."},
    {.name = "template",
     .kind = K_PATH,
     .off = AT(chat_conf, template),
     .check = check_readable_file,
     .help = "A template for the whole JSON payload (default: slack.json)."},
};
static const struct schema slack_schema = {.what = "slack",
                                           .keys = slack_keys,
                                           .n_keys = N(slack_keys),
                                           .size = sizeof(struct chat_conf),
                                           .check = check_slack};

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
     .sub = &slack_schema,
     .help = "Post events to a Slack incoming webhook, or as a Slack app (token_file, channel)."},
    {.name = "teams",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, teams),
     .sub = &chat_schema,
     .help = "Post events to a Microsoft Teams incoming webhook."},
    {.name = "pagerduty",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, pagerduty),
     .sub = &pagerduty_schema,
     .help = "Trigger, acknowledge and resolve PagerDuty alerts (Events API v2), one per "
             "incident."},
    {.name = "opsgenie",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, opsgenie),
     .sub = &opsgenie_schema,
     .help = "Create, acknowledge and close Opsgenie alerts (Alert API), one per incident."},
    {.name = "googlechat",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, googlechat),
     .sub = &googlechat_schema,
     .help = "Post events to a Google Chat space's incoming webhook, an incident's in one thread."},
    {.name = "chatwork",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, chatwork),
     .sub = &chatwork_schema,
     .help = "Post events to a Chatwork room."},
    {.name = "pushover",
     .kind = K_MAP,
     .group = 1,
     .off = AT(receiver_conf, pushover),
     .sub = &pushover_schema,
     .help = "Push events to phones through Pushover, an incident's alarm as an emergency that "
             "repeats until acknowledged."},
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
     .help = "Event kinds: ch1 to ch6 (chN covers the early warnings of channel N too), "
             "battery-level, communication-status, gap, reading, relay."},
    {.name = "source",
     .kind = K_FLAGS,
     .off = MATCH_AT(source),
     .words = source_words,
     .help = "Where the event comes from: reading (an early warning from the current readings) "
             "or log (an entry of the platform's alert log); default: either."},
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

static const struct key escalation_keys[] = {
    {.name = "after",
     .kind = K_DURATION,
     .flags = F_REQUIRED,
     .off = AT(rule_escalation, after),
     .help = "How long after the incident opened, more than 0 and more than the step before's."},
    {.name = "receivers",
     .kind = K_STRINGS,
     .flags = F_REQUIRED,
     .off = AT(rule_escalation, receivers),
     .count_off = AT(rule_escalation, n_receivers),
     .help = "The receivers told at this step, besides those told before."},
};
static const struct schema escalation_schema = {.what = "escalation step",
                                                .keys = escalation_keys,
                                                .n_keys = N(escalation_keys),
                                                .size = sizeof(struct rule_escalation),
                                                .check = check_escalation};

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
    /* No .def: left out is 0, no reminders, which the bounds would refuse. */
    {.name = "repeat",
     .kind = K_DURATION,
     .off = AT(rule_conf, repeat),
     .min = RULE_REPEAT_MIN,
     .max = RULE_REPEAT_MAX,
     .help = "While an incident it opened is open and not acknowledged, remind its receivers "
             "this often (default: no reminders)."},
    {.name = "escalate",
     .kind = K_LIST,
     .off = AT(rule_conf, escalate),
     .count_off = AT(rule_conf, n_escalate),
     .sub = &escalation_schema,
     .help = "A list of {after, receivers}: while an incident it opened is open and not "
             "acknowledged, each step tells more receivers that long after it opened."},
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
     .check = check_https_url,
     .help = "A URL that gets an HTTP GET after each run without failure (a dead man's switch): "
             "https://, or http:// to this machine."},
    {.name = "heartbeat_file",
     .kind = K_SECRET_FILE,
     .flags = F_SECRET | F_GROUP_OPTIONAL,
     .group = 1,
     .off = SELF_AT(heartbeat),
     .check = check_https_url,
     .help = "A file holding the heartbeat URL (mode 0600)."},
};
static const struct schema self_schema = {
    .what = "self", .keys = self_keys, .n_keys = N(self_keys), .size = sizeof(struct self_conf)};

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

static const struct key incidents_keys[] = {
    {.name = "enabled",
     .kind = K_BOOL,
     .off = INCIDENTS_AT(enabled),
     .def = "true",
     .help = "Alarms open incidents: what follows for the same excursion pages nobody again, "
             "rules may repeat and escalate them, people acknowledge them; false: every entry "
             "of the alert log is relayed as it comes, as one message each."},
    {.name = "max_open",
     .kind = K_DURATION,
     .off = INCIDENTS_AT(max_open),
     .def = INCIDENTS_MAX_OPEN_DEFAULT,
     .min = 3600,
     .max = 365 * 86400,
     .help = "An incident still open this long after it opened (a device that never comes "
             "back) is closed, with a note."},
    {.name = "keep",
     .kind = K_DURATION,
     .off = INCIDENTS_AT(keep),
     .def = INCIDENTS_KEEP_DEFAULT,
     .min = 86400,
     .max = 3650 * 86400,
     .help = "How long the incident log keeps a line; at least max_open."},
};
static const struct schema incidents_schema = {.what = "incidents",
                                               .keys = incidents_keys,
                                               .n_keys = N(incidents_keys),
                                               .size = sizeof(struct incidents_conf),
                                               .check = check_incidents};

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
    {.name = "incidents",
     .kind = K_MAP,
     .flags = F_DEFAULTS,
     .off = AT(config, incidents),
     .sub = &incidents_schema,
     .help = "Incidents: how long one may stay open, how long their record is kept."},
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
    return url_check(NULL, v, URL_HTTP_ANY, e) < 0 ? -1 : 0;
}

/* Slack, Teams and the heartbeat: https://, or http:// to this machine
 * only (their URLs carry a token). */
static int check_https_url(char *v, struct err *e)
{
    return url_check(NULL, v, URL_HTTP_LOOPBACK_ONLY, e) < 0 ? -1 : 0;
}

/* A Slack token as Slack issues them ("xoxb-…", "xoxp-…"): the
 * letters, digits and '-' of one HTTP header value. */
static int check_slack_token(char *v, struct err *e)
{
    bool ok = strncmp(v, "xox", 3) == 0 && strlen(v) > 5 && v[4] == '-';
    for (const char *p = v; *p && ok; p++)
        ok = is_alnum(*p) || *p == '-';
    if (!ok)
        return err_set(e, "expected a Slack bot token (xoxb-…)");
    return 0;
}

/* A channel's id as Slack shows it in the channel's details: C (or G, D)
 * and upper-case letters and digits. A name ("#alerts") will not do:
 * reading a thread's reactions and replies takes the id. */
static int check_slack_channel(char *v, struct err *e)
{
    bool ok = (v[0] == 'C' || v[0] == 'G' || v[0] == 'D') && strlen(v) >= 3 && strlen(v) <= 32;
    for (const char *p = v; *p && ok; p++)
        ok = (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
    if (!ok)
        return err_set(e, "expected a channel id such as C0123456789 (a channel's details in "
                          "Slack show it), not its name");
    return 0;
}

/* The Web API's base: https (or http to this machine), kept without the
 * slashes at its end, as method names follow it after one. */
static int check_slack_api_url(char *v, struct err *e)
{
    if (check_https_url(v, e) < 0)
        return -1;
    for (size_t len = strlen(v); len > 0 && v[len - 1] == '/'; len--)
        v[len - 1] = '\0';
    return 0;
}

/* token_file and channel go together; channel and api_url are the app's
 * keys, not a webhook's. */
static int check_slack(const void *obj, size_t *off, struct err *e)
{
    const struct chat_conf *c = obj;
    if (c->token && !c->channel) {
        *off = AT(chat_conf, token);
        return err_set(e, "token_file needs channel (the id of the channel to post in)");
    }
    if (!c->token && c->channel) {
        *off = AT(chat_conf, channel);
        return err_set(e, "channel is for a Slack app (token_file), not an incoming webhook, "
                          "which posts to its own channel");
    }
    if (!c->token && c->api_url) {
        *off = AT(chat_conf, api_url);
        return err_set(e, "api_url is for a Slack app (token_file)");
    }
    return 0;
}

/* A number as a service names a room: 1 to 20 decimal digits. */
static int check_digits(char *v, struct err *e)
{
    size_t len = strlen(v);
    if (len == 0 || len > 20 || strspn(v, "0123456789") != len)
        return err_set(e, "expected a number (digits only)");
    return 0;
}

/* Pushover repeats an emergency every `retry` until `expire`: an expire
 * shorter than retry would never repeat it. */
static int check_pushover(const void *obj, size_t *off, struct err *e)
{
    const char *base = obj;
    long retry = *(const long *)(const void *)(base + PUSHOVER_AT(retry));
    long expire = *(const long *)(const void *)(base + PUSHOVER_AT(expire));
    if (expire < retry) {
        *off = PUSHOVER_AT(expire);
        return err_set(e, "expire (%lds) must not be shorter than retry (%lds)", expire, retry);
    }
    return 0;
}

/* imaps:// (IMAP over TLS from the start) to a host, with a mailbox as
 * its path and nothing after it. */
static int check_imaps_url(char *v, struct err *e)
{
    struct url u;
    if (url_parse(&u, v, e) < 0)
        return -1;
    if (strcmp(u.scheme, "imaps"))
        return err_set(e, "expected imaps://host[:port]/MAILBOX: the password and the "
                          "replies cross the network, so TLS from the start");
    if (u.has_userinfo || u.has_query || u.has_fragment || v[u.path_start] != '/' ||
        !v[u.path_start + 1] || strchr(v + u.path_start, ';'))
        return err_set(e, "expected imaps://host[:port]/MAILBOX, the mailbox after the host "
                          "and nothing else (the user and password are keys of their own)");
    return 0;
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
    if (url_check(&u, v, URL_BASE, e) < 0)
        return -1;
    size_t len = strlen(v);
    while (len > u.path_start && v[len - 1] == '/')
        v[--len] = '\0';
    return 0;
}

/* wsrelay sets these itself on every webhook request (notify/http.c);
 * the header names' grammar is schema.c's. */
static int check_header_name(char *v, struct err *e)
{
    static const char *const reserved[] = {"Content-Type", "Content-Length"};
    for (size_t i = 0; i < N(reserved); i++)
        if (!strcasecmp(v, reserved[i]))
            return err_set(e, "%s is set by wsrelay and cannot be overridden", reserved[i]);
    return 0;
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
    return err_set(e,
                   "unknown kind '%s' (expected ch1 to ch6, battery-level, "
                   "communication-status, gap, reading or relay)",
                   v);
}

static int check_event_state(char *v, struct err *e)
{
    enum alert_state st;
    if (alert_state_from_name(&st, v))
        return 0;
    return err_set(e,
                   "unknown event '%s' (expected alarm, recovered, sensor-error, battery, "
                   "communication or other)",
                   v);
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
        return err_set(e,
                       "unknown time zone '%s' (expected an IANA name such as Asia/Tokyo, "
                       "as in /usr/share/zoneinfo)",
                       v);
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
    const struct {
        bool given;
        size_t off;
        const char *name;
    } idle[] = {
        {r->throttle != 0, AT(rule_conf, throttle), "throttle"},
        {r->cont, AT(rule_conf, cont), "continue"},
        {r->severity != NULL, AT(rule_conf, severity), "severity"},
        {r->repeat != 0, AT(rule_conf, repeat), "repeat"},
        {r->n_escalate != 0, AT(rule_conf, escalate), "escalate"},
    };
    for (size_t i = 0; r->drop && i < N(idle); i++) {
        if (idle[i].given) {
            *off = idle[i].off;
            return err_set(e, "%s does nothing with drop: true", idle[i].name);
        }
    }
    return 0;
}

/* A step comes some time after the incident opened; that the steps come
 * in order, and name configured receivers, is load_rule_file's. */
static int check_escalation(const void *obj, size_t *off, struct err *e)
{
    const struct rule_escalation *step = obj;
    if (step->after <= 0) {
        *off = AT(rule_escalation, after);
        return err_set(e, "expected a duration of more than 0s (after the incident opened)");
    }
    return 0;
}

/* The log keeps an incident's lines at least as long as it may be open. */
static int check_incidents(const void *obj, size_t *off, struct err *e)
{
    const struct incidents_conf *in = obj;
    if (in->keep < in->max_open) {
        char keep[24], open[24];
        duration_format(keep, sizeof keep, in->keep);
        duration_format(open, sizeof open, in->max_open);
        *off = INCIDENTS_AT(keep);
        return err_set(e,
                       "keep (%s) must be at least max_open (%s): the record of an incident "
                       "would go while it is still open",
                       keep, open);
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
    else if (r->slack.token)
        r->type = RECEIVER_SLACK_APP;
    else if (r->slack.url)
        r->type = RECEIVER_SLACK;
    else if (r->teams.url)
        r->type = RECEIVER_TEAMS;
    else if (r->pagerduty.routing_key)
        r->type = RECEIVER_PAGERDUTY;
    else if (r->opsgenie.api_key)
        r->type = RECEIVER_OPSGENIE;
    else if (r->googlechat.url)
        r->type = RECEIVER_GOOGLECHAT;
    else if (r->chatwork.token)
        r->type = RECEIVER_CHATWORK;
    else if (r->pushover.token)
        r->type = RECEIVER_PUSHOVER;
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
    if (url && !allow_http && url_check(NULL, url, URL_HTTP_LOOPBACK_ONLY, NULL) == URL_E_HTTP)
        return err_set(e, "http:// sends the URL and headers unencrypted; use https://, or set "
                          "allow_http: true for a trusted network");
    return 0;
}

/* ---- loading ---- */

/* The node naming item `i` of a string-or-list value `n`. */
static yaml_node_t *string_item(struct schema_doc *d, yaml_node_t *n, size_t i)
{
    if (n->type == YAML_SEQUENCE_NODE)
        return schema_node(d, n->data.sequence.items.start[i]);
    return n;
}

/* What config_load looks things up in while it reads the rules: sorted,
 * so that many rules and receivers do not cost the square of their number. */
struct lookup {
    const char **receivers; /* the receivers' names, sorted */
    size_t n_receivers;
    yaml_mark_t *rule_name_at;    /* where each rule of cfg->rules has its name */
    struct schema_errors *errors; /* config_load_all: every mistake; NULL: stop at the first */
};

/* Whether the load goes on after a mistake (config_load_all), with room
 * for more; the message in `e` goes to the list first. */
static bool carry_on(const struct lookup *lk, const struct err *e)
{
    if (!lk->errors)
        return false;
    schema_errors_add(lk->errors, e->msg);
    return lk->errors->n <= SCHEMA_ERRORS_MAX;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each name of `names` (read from value node `n`) is a configured receiver. */
static int check_receivers(struct schema_doc *d, const struct config *cfg, const struct lookup *lk,
                           char **names, size_t n_names, yaml_node_t *n, struct err *e)
{
    int rc = 0;
    for (size_t i = 0; i < n_names; i++) {
        const char *name = names[i];
        if (bsearch(&name, lk->receivers, lk->n_receivers, sizeof *lk->receivers, str_cmp))
            continue;
        struct buf known;
        buf_init(&known, 0);
        for (size_t j = 0; j < cfg->n_receivers; j++)
            buf_printf(&known, "%s%s", j ? ", " : "", cfg->receivers[j].name);
        size_t mark = n->type == YAML_SEQUENCE_NODE ? schema_push(d, "[%zu]", i) : SIZE_MAX;
        schema_fail(d, string_item(d, n, i)->start_mark, e,
                    "unknown receiver '%s' (the receivers are: %s)", names[i], buf_str(&known));
        buf_free(&known);
        if (mark != SIZE_MAX)
            schema_pop(d, mark);
        rc = -1;
        if (!schema_carry_on(d))
            break;
    }
    return rc;
}

/* The steps of rule r's `escalate:` (read from sequence `seq`) come in
 * the order of their `after` and name configured receivers; each step
 * keeps where it is written. */
static int check_escalate(struct schema_doc *d, const struct config *cfg, const struct lookup *lk,
                          struct rule_conf *r, yaml_node_t *seq, struct err *e)
{
    int rc = 0;
    for (size_t i = 0; i < r->n_escalate; i++) {
        struct rule_escalation *step = &r->escalate[i];
        yaml_node_t *item = schema_node(d, seq->data.sequence.items.start[i]);
        step->line = (long)item->start_mark.line + 1;
        step->col = (long)item->start_mark.column + 1;
        size_t mark = schema_push(d, "[%zu]", i);
        int bad = 0;
        if (i && step->after <= r->escalate[i - 1].after) {
            char before[24];
            duration_format(before, sizeof before, r->escalate[i - 1].after);
            size_t at_after = schema_push_key(d, "after");
            bad = schema_fail(d, schema_lookup(d, item, "after")->start_mark, e,
                              "expected more than %s, the step before's (the steps are listed in "
                              "the order they are taken)",
                              before);
            schema_pop(d, at_after);
        }
        if (!bad || schema_carry_on(d)) {
            schema_push_key(d, "receivers");
            bad |= check_receivers(d, cfg, lk, step->receivers, step->n_receivers,
                                   schema_lookup(d, item, "receivers"), e);
        }
        schema_pop(d, mark);
        if (bad < 0) {
            rc = -1;
            if (!schema_carry_on(d))
                break;
        }
    }
    return rc;
}

/* Reads the rules of one file into cfg->rules. */
static int load_rule_file(struct config *cfg, struct lookup *lk, const char *path, struct err *e)
{
    int rc = -1;
    bool failed = false;
    struct schema_doc *d = NULL;
    if (schema_open(&d, path, CONFIG_MAX_BYTES, SCHEMA_LITERAL, e) < 0) {
        if (lk->errors)
            schema_errors_add(lk->errors, e->msg);
        goto out;
    }
    if (lk->errors)
        schema_collect(d, lk->errors);
    yaml_node_t *root = schema_root(d);
    if (!root || schema_is_null(root)) {
        log_warn("%s: no rules in the file", path);
        rc = 0;
        goto out;
    }
    if (root->type != YAML_SEQUENCE_NODE) {
        schema_fail(d, root->start_mark, e,
                    "expected a list of rules (each starting with '- name:'), got %s",
                    schema_describe(root));
        goto out;
    }
    for (yaml_node_item_t *it = root->data.sequence.items.start; it < root->data.sequence.items.top;
         it++) {
        yaml_node_t *item = schema_node(d, *it);
        if (item->type != YAML_MAPPING_NODE) {
            schema_fail(d, item->start_mark, e,
                        "expected a rule (a mapping with name, match, receivers), got %s",
                        schema_describe(item));
            if (!schema_carry_on(d))
                goto out;
            failed = true;
            continue;
        }
        cfg->rules = xgrowarray(cfg->rules, cfg->n_rules, sizeof *cfg->rules);
        lk->rule_name_at = xgrowarray(lk->rule_name_at, cfg->n_rules, sizeof *lk->rule_name_at);
        struct rule_conf *r = &cfg->rules[cfg->n_rules++];
        memset(r, 0, sizeof *r);
        r->file = xstrdup(path);
        r->line = (long)item->start_mark.line + 1;
        r->col = (long)item->start_mark.column + 1;
        lk->rule_name_at[cfg->n_rules - 1] = item->start_mark;
        if (schema_parse(r, &rule_schema, d, item, e) < 0) {
            if (!schema_carry_on(d))
                goto out;
            failed = true;
            continue;
        }
        lk->rule_name_at[cfg->n_rules - 1] = schema_lookup(d, item, "name")->start_mark;
        size_t mark = schema_push(d, "rule '%s'", r->name);
        yaml_node_t *rv = schema_lookup(d, item, "receivers");
        schema_push_key(d, "receivers");
        int checked = rv ? check_receivers(d, cfg, lk, r->receivers, r->n_receivers, rv, e) : 0;
        schema_pop(d, mark);
        if (checked < 0 && !schema_carry_on(d))
            goto out;
        failed |= checked < 0;
        yaml_node_t *es = schema_lookup(d, item, "escalate");
        schema_push(d, "rule '%s'", r->name);
        schema_push_key(d, "escalate");
        checked = es ? check_escalate(d, cfg, lk, r, es, e) : 0;
        schema_pop(d, mark);
        if (checked < 0 && !schema_carry_on(d))
            goto out;
        failed |= checked < 0;
    }
    rc = failed ? -1 : 0;
out:
    schema_close(d);
    return rc;
}

/* Rule names are unique across all rule files: the second of a pair is
 * reported, where its name is written. */
static int check_rule_names(const struct config *cfg, const struct lookup *lk, struct err *e)
{
    const char **names = xcalloc(cfg->n_rules ? cfg->n_rules : 1, sizeof *names);
    for (size_t i = 0; i < cfg->n_rules; i++)
        names[i] = cfg->rules[i].name;
    size_t i, j;
    bool repeated = schema_find_repeat(&i, &j, names, cfg->n_rules, false);
    free(names);
    if (!repeated)
        return 0;
    const struct rule_conf *first = &cfg->rules[i], *second = &cfg->rules[j];
    yaml_mark_t at = lk->rule_name_at[j];
    return err_set(e, "%s:%zu:%zu: rule '%s': duplicate rule name (first at %s:%ld:%ld)",
                   second->file, at.line + 1, at.column + 1, second->name, first->file, first->line,
                   first->col);
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
        carry_on(lk, e);
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        rc = load_rule_file(cfg, lk, path, e);
        goto out;
    }
    if (!(d = opendir(path))) {
        err_set(e, "%s: cannot read the rules directory: %s", path, strerror(errno));
        carry_on(lk, e);
        goto out;
    }
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".yaml"))
            continue;
        names = xgrowarray(names, n, sizeof *names);
        names[n++] = xasprintf("%s/%s", path, de->d_name);
    }
    if (n) /* an empty directory leaves names NULL, which qsort must not get */
        qsort(names, n, sizeof *names, str_cmp);
    bool failed = false;
    for (size_t i = 0; i < n; i++) {
        if (load_rule_file(cfg, lk, names[i], e) < 0) {
            failed = true;
            if (!lk->errors || lk->errors->n > SCHEMA_ERRORS_MAX)
                goto out;
        }
    }
    rc = failed ? -1 : 0;
out:
    if (d)
        closedir(d);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* config_load, and with `errors` config_load_all: a mistake is added to
 * the list and the load goes on to the next it can check. */
static int load(struct config **out, struct schema_errors *errors, const char *path, struct err *e)
{
    int rc = -1;
    bool failed = false;
    struct config *cfg = xcalloc(1, sizeof *cfg);
    struct schema_doc *d = NULL;
    struct lookup lk = {.errors = errors};

    *out = NULL;
    cfg->path = xstrdup(path);
    file_id_of(&cfg->file, path); /* before the read: a change during it shows */
    if (schema_open(&d, path, CONFIG_MAX_BYTES, 0, e) < 0) {
        carry_on(&lk, e);
        goto out;
    }
    if (errors)
        schema_collect(d, errors);
    yaml_node_t *root = schema_root(d);
    if (!root) {
        err_set(e, "%s:1:1: the file is empty; it needs at least accounts and receivers", path);
        carry_on(&lk, e);
        goto out;
    }
    if (root->type != YAML_MAPPING_NODE) {
        schema_fail(d, root->start_mark, e,
                    "expected a mapping with accounts and receivers, got %s",
                    schema_describe(root));
        goto out;
    }
    /* A configuration with a mistake is not looked at further: the
     * receivers that rules name may be among what did not read. */
    if (schema_parse(cfg, &top_schema, d, root, e) < 0)
        goto out;
    /* Once per load: rule files have no secret keys. */
    schema_warn_exposed(d);
    lk.n_receivers = cfg->n_receivers;
    lk.receivers = xcalloc(lk.n_receivers ? lk.n_receivers : 1, sizeof *lk.receivers);
    for (size_t i = 0; i < cfg->n_receivers; i++)
        lk.receivers[i] = cfg->receivers[i].name;
    qsort(lk.receivers, lk.n_receivers, sizeof *lk.receivers, str_cmp);
    yaml_node_t *dr = schema_lookup(d, root, "default_receivers");
    size_t mark = schema_push_key(d, "default_receivers");
    if (dr &&
        check_receivers(d, cfg, &lk, cfg->default_receivers, cfg->n_default_receivers, dr, e) < 0) {
        if (!schema_carry_on(d))
            goto out;
        failed = true;
    }
    schema_pop(d, mark);
    yaml_node_t *self = schema_lookup(d, root, "self");
    yaml_node_t *sr = self ? schema_lookup(d, self, "receivers") : NULL;
    mark = schema_push_key(d, "self");
    schema_push_key(d, "receivers");
    if (sr && check_receivers(d, cfg, &lk, cfg->self.receivers, cfg->self.n_receivers, sr, e) < 0) {
        if (!schema_carry_on(d))
            goto out;
        failed = true;
    }
    schema_pop(d, mark);
    /* The default rules directory is optional; a configured one is not. */
    struct stat st;
    if (!schema_lookup(d, root, "rules") && stat(cfg->rules_path, &st) < 0 && errno == ENOENT) {
        free(cfg->rules_path);
        cfg->rules_path = NULL;
    }
    if (cfg->rules_path) {
        if (load_rules(cfg, &lk, e) < 0)
            goto out;
        /* Names are compared once every rule has read. */
        if (!failed && check_rule_names(cfg, &lk, e) < 0) {
            carry_on(&lk, e);
            goto out;
        }
    }
    if (failed)
        goto out;
    *out = cfg;
    cfg = NULL;
    rc = 0;
out:
    schema_close(d);
    free(lk.receivers);
    free(lk.rule_name_at);
    config_free(cfg);
    return rc;
}

int config_load(struct config **out, const char *path, struct err *e)
{
    return load(out, NULL, path, e);
}

int config_load_all(struct config **out, char **errors, bool *more, const char *path, struct err *e)
{
    struct schema_errors list = {0};
    *errors = NULL;
    *more = false;
    int rc = load(out, &list, path, e);
    if (rc < 0 && list.n) {
        *errors = buf_steal(&list.lines);
        /* One more than shown was collected only to know there were more. */
        if (list.n > SCHEMA_ERRORS_MAX) {
            char *cut = *errors;
            for (size_t i = 0; i < SCHEMA_ERRORS_MAX; i++)
                cut = strchr(cut, '\n') + 1;
            *cut = '\0';
            *more = true;
        }
        list.n = 0;
        /* `e` has the last mistake found; the first is the one to fix first. */
        err_set(e, "%.*s", (int)strcspn(*errors, "\n"), *errors);
    } else if (rc < 0) {
        *errors = xasprintf("%s\n", e->msg);
    }
    schema_errors_free(&list);
    return rc;
}

void config_free(struct config *c)
{
    if (!c)
        return;
    schema_clear(&top_schema, c);
    for (size_t i = 0; i < c->n_rules; i++) {
        schema_clear(&rule_schema, &c->rules[i]);
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

const struct account_conf *config_account(const struct config *c, const char *name)
{
    for (size_t i = 0; name && i < c->n_accounts; i++)
        if (!strcmp(c->accounts[i].name, name))
            return &c->accounts[i];
    return NULL;
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

char *config_reference(void)
{
    return schema_reference(&top_schema);
}

char *config_rules_reference(void)
{
    return schema_reference(&rule_schema);
}
