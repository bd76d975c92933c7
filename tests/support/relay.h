/* A whole relay set up for an integration test: a temp dir, the simulator
 * on a scenario, a webhook sink, a config naming both, and `wsrelay run`
 * at a chosen time. One per test process (Criterion runs each test in its
 * own process). */
#ifndef WSRELAY_TEST_RELAY_H
#define WSRELAY_TEST_RELAY_H

#include "hooksink.h"
#include "simctl.h"
#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>

#define RELAY_API_KEY "TEST-API-KEY-abcdefghijklmnopqrstuvwxyz01234"
#define RELAY_LOGIN "tbzz9999"
#define RELAY_PASSWORD "p\"ss\\word"

struct relay {
    char *dir;
    struct sim sim;
    struct hooksink *hook;
    char *config_path;
    char *out_path; /* the file receiver "log" */
    char *state_path;
    /* Incidents as a user has them (the default); false, as relay_start
     * leaves it: the config says `incidents: {enabled: false}`, so that a
     * test of delivery counts one message per alert-log entry, as its
     * scenario (many alarms of a channel without their recoveries) has
     * them. Set it before relay_config to test incidents. */
    bool incidents;
};

/* Starts the simulator on `scenario` (JSON text; "@API_KEY@",
 * "@LOGIN@" and "@PASSWORD@" are replaced by the values above) and the
 * webhook sink, and writes the default config: one account "lab" (in
 * plain round robin: signals: false), incidents off (see `incidents`
 * above), the receivers "hook" (webhook,
 * Authorization: Bearer t0ken) and "log" (file).
 * The password comes from pass.txt, the API key from $TEST_API_KEY. */
void relay_start(struct relay *r, const char *scenario);

/* The scenario tests/data/scenarios/NAME.json, a world that tests share
 * (JSON with the placeholders above); caller frees. Fails the test when
 * the file cannot be read. */
char *relay_world(const char *name);

/* relay_start on relay_world(name). */
void relay_start_world(struct relay *r, const char *name);

/* relay_start with a simulator that holds every platform reply
 * `latency_ms`, as a distant platform would (see sim_start_slow). */
void relay_start_slow(struct relay *r, const char *scenario, unsigned latency_ms);
void relay_stop(struct relay *r);

/* Rewrites the config with other `accounts:` and/or `receivers:` items
 * (YAML list items indented by two spaces; NULL keeps the default).
 * "@BASE_URL@", "@HOOK_URL@", "@OUT@" and "@DIR@" (the test's directory)
 * are replaced. */
void relay_config(struct relay *r, const char *accounts_yaml, const char *receivers_yaml);

/* relay_config with the default account "lab" at `base_url` instead of
 * the simulator (a raw server of a fault test), and the default receivers. */
void relay_config_platform(struct relay *r, const char *base_url);

/* relay_config plus `extra_yaml`: top-level lines appended to the config
 * (e.g. "rules: @DIR@/rules.d\ntimezone: Asia/Tokyo\n"), with the same
 * replacements; NULL adds nothing. */
void relay_config_extra(struct relay *r, const char *accounts_yaml, const char *receivers_yaml,
                        const char *extra_yaml);

/* Appends the opening of a scenario of one account with the relay's
 * credentials to `b`: `{"now": NOW, "accounts": [{..., "devices": [`. The
 * caller appends the devices and closes with "]}]}". */
void relay_scenario_open(struct buf *b, long long now);

/* Removes the state: the state file, its fleet files (state.json.fleet-N)
 * and its directory of device files (state.json.d), as a new installation
 * has none of them. */
void relay_forget_state(struct relay *r);

/* The state as one document, as a version 1 state file held it: the
 * state file with the base and the records of the fleet file it names
 * applied, entry by entry (src/state/fleetfile.c); NULL (and a failed
 * assertion) when it cannot be read. Caller puts it. */
struct json_object *relay_state_doc(const struct relay *r);

/* Moves the simulator's clock to `now` and runs `wsrelay run --now NOW`;
 * returns its exit status and, when asked, its stderr (caller frees). */
int relay_run_at(struct relay *r, long long now, char **err);

/* relay_run_at with `--look SERIAL` (NULL: none). */
int relay_run_with(struct relay *r, long long now, const char *look, char **err);

/* Every event of every webhook request so far as "SERIAL/UNIXTIME/KIND\n"
 * lines (KIND "reading-chN" for an early warning: its id) in arrival
 * order, checking each document's shape on the way; caller frees. */
char *relay_hook_keys(struct relay *r, size_t *count);

/* The same for requests [from, to) of any webhook sink whose receiver
 * sends "Authorization: Bearer t0ken". */
char *hook_keys(struct hooksink *h, size_t from, size_t to, size_t *count);

/* Non-overlapping occurrences of `needle` in `hay` (NULL hay: 0). */
size_t occurrences(const char *hay, const char *needle);

#endif
