/* Microsoft Teams through a Workflows webhook ("when a Teams webhook
 * request is received"; the Office 365 connectors are retired): an
 * Adaptive Card 1.4 in a message (teams.json).
 *
 * Success is 202 (200 is accepted too). A card must stay under 28 KB:
 * teams_fit says how many events one card holds, and wsrelay sends the
 * others in more cards; a card that is still larger (a message not
 * fitted first) is rendered again with fewer events and says how many
 * more there were (logged as an error). 429 and 5xx are retried on a later run;
 * other 4xx say the card or the URL is wrong and are given up for this
 * receiver only. Teams reads a TextBlock's and a Fact's text as Markdown;
 * the template's escaping (templates_escape) keeps a value from making a
 * link, emphasis or a list. */
#include "notify/chat.h"

#include <stdlib.h>
#include <string.h>

#define TEAMS_CARD_MAX (28 * 1024)

/* Renders the card with as many events as fit under the size limit. */
static struct json_object *fitting_card(const struct notify_env *env, const struct receiver_conf *r,
                                        const struct notify_message *m, struct notify_result *res,
                                        struct err *e)
{
    size_t k = m->n;
    for (;;) {
        struct json_object *card = chat_render(env, r, &r->teams, "teams.json", m, k, res, e);
        if (!card)
            return NULL;
        size_t size = strlen(json_object_to_json_string_ext(
            card, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        if (size <= TEAMS_CARD_MAX || k <= 1)
            return card; /* one event that is too large: Teams will say so */
        json_object_put(card);
        k /= 2;
    }
}

static bool fits(struct json_object *card)
{
    return strlen(json_object_to_json_string_ext(
               card, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) <= TEAMS_CARD_MAX;
}

static size_t teams_fit(const struct notify_env *env, const struct receiver_conf *r,
                        const struct notify_message *m)
{
    return chat_fit(env, r, &r->teams, "teams.json", m, m->n, fits);
}

/* Teams answers 202 Accepted (200 is taken as well). */
static bool accepted(long status, const char *body)
{
    (void)body;
    return status == 202 || status == 200;
}

static int teams_send(const struct notify_env *env, const struct receiver_conf *r,
                      const struct notify_message *m, struct notify_result *res, struct err *e)
{
    struct json_object *card = fitting_card(env, r, m, res, e);
    if (!card)
        return -1;
    int rc = chat_send(&r->teams, card, accepted, r->timeout, res, e);
    json_object_put(card);
    return rc;
}

const struct notifier notifier_teams = {
    .type = RECEIVER_TEAMS,
    .name = "teams",
    .fit = teams_fit,
    .send = teams_send,
};
