/* Google Chat's incoming webhooks, Chatwork's API v2 and Pushover's API
 * inside the test process: one HTTP server on 127.0.0.1 (a free port)
 * that checks each request as the services document them (paths,
 * credentials, content types, fields and their limits), answers as they
 * do (Google Chat's message and thread, Chatwork's message_id and rate
 * limit headers, Pushover's status, request and receipt, and each one's
 * errors), and records what it took. Pushover's receipts are kept: a test
 * acknowledges one as the phone's user would. All functions lock; setup
 * failures fail the test. */
#ifndef WSRELAY_TEST_SVCAPI_H
#define WSRELAY_TEST_SVCAPI_H

#include <stdbool.h>
#include <stddef.h>

/* The credentials the server takes; anything else is refused as the
 * service refuses it. */
#define SVC_GCHAT_SPACE "AAAAqRsTuVw"
#define SVC_GCHAT_KEY "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"
#define SVC_GCHAT_TOKEN "Xk3vQ9zLmT0pW2sYbR7nHc5uJd8eFg1aK4oPi6rUtE0"
#define SVC_CHATWORK_TOKEN "f3c1a9e7b5d2c8a4e6f0b1d3c5a7e9f2"
#define SVC_CHATWORK_ROOM "314159"
#define SVC_PUSHOVER_TOKEN "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
#define SVC_PUSHOVER_USER "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"

/* One message a service took. Strings are owned by the struct; NULL when
 * the request had no such field. */
struct svc_message {
    char *text;         /* Google Chat's text, Chatwork's body, Pushover's message */
    char *thread_key;   /* Google Chat: thread.threadKey */
    char *thread_name;  /* Google Chat: the thread it went into ("spaces/S/threads/N") */
    char *reply_option; /* Google Chat: the messageReplyOption parameter */
    char *title;        /* Pushover */
    char *url;          /* Pushover */
    char *self_unread;  /* Chatwork */
    int priority;       /* Pushover: -2 to 2 (0 when absent) */
    long retry, expire; /* Pushover: given with priority 2 */
    char *receipt;      /* Pushover: the receipt given for priority 2 */
    char *tags;         /* Pushover: the tags field, as given */
};

enum svc_service { SVC_GOOGLECHAT, SVC_CHATWORK, SVC_PUSHOVER, SVC_SERVICES };

struct svcapi;

struct svcapi *svcapi_start(void);

/* "http://127.0.0.1:PORT", owned by the server. */
const char *svcapi_base(const struct svcapi *s);

/* The space's webhook URL as Google Chat shows it:
 * BASE/v1/spaces/SPACE/messages?key=KEY&token=TOKEN; caller frees. */
char *svcapi_gchat_url(const struct svcapi *s);

/* Makes the next request to `service` that would succeed answer `status`
 * instead (429 with Retry-After: 1, 500, ...), as the service words it;
 * queued replies are used in order. */
void svcapi_push_failure(struct svcapi *s, enum svc_service service, int status);

/* Every request that reached `service`, answered or refused. */
size_t svcapi_requests(struct svcapi *s, enum svc_service service);

/* Messages `service` took. */
size_t svcapi_count(struct svcapi *s, enum svc_service service);

/* A copy of the i-th message `service` took; NULL when i >= count. Free
 * with svc_message_free. */
struct svc_message *svcapi_message(struct svcapi *s, enum svc_service service, size_t i);
void svc_message_free(struct svc_message *m);

/* Acknowledges Pushover receipt `receipt` as the user's device `device`
 * (NULL: none named); false when there is no such receipt. */
bool svcapi_pushover_ack(struct svcapi *s, const char *receipt, const char *device);

/* How many times receipts were asked for (GET) and cancelled (POST, by
 * receipt or by tag); whether receipt `receipt` was cancelled. */
size_t svcapi_receipt_polls(struct svcapi *s);
size_t svcapi_receipt_cancels(struct svcapi *s);
bool svcapi_receipt_cancelled(struct svcapi *s, const char *receipt);

/* Makes the server wait `ms` milliseconds (0: none) before answering each
 * following GET of a receipt: a Pushover that hangs. The server answers
 * one request at a time, so the wait holds up the next request too. */
void svcapi_set_receipt_delay_ms(struct svcapi *s, int ms);

void svcapi_stop(struct svcapi *s);

#endif
