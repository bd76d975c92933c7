/* Odd data from the platform end to end: a device name and an alert text
 * holding a byte that is not UTF-8 (the simulator serves the scenario's
 * bytes as they are), run after run while the webhook receiver fails. The
 * state must stay loadable, so that the alert waits in the outbox and goes
 * out once when the receiver is back. */
#include "proc.h"
#include "relay.h"
#include "util/utf8.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "not-utf8");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(odd_data, .init = setup, .fini = teardown, .timeout = 120);

Test(odd_data, bytes_that_are_not_utf8_do_not_spoil_the_state)
{
    char *err = NULL;
    hooksink_set_status(R.hook, 500);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(relay_run_at(&R, T0 + i * 300, &err), 1, "the webhook fails: %s", err);
        cr_assert_null(strstr(err, "corrupt"), "run %d: %s", i + 1, err);
        free(err);
        err = NULL;
        cr_assert_eq(test_count_files(R.dir, "state.json.corrupt-"), 0,
                     "run %d moved the state aside", i + 1);
    }
    char *state = read_file_str(R.state_path);
    cr_assert_not_null(state);
    cr_assert(utf8_valid(state, strlen(state)), "the state is valid UTF-8");
    cr_assert_not_null(strstr(state, "Freezer" UTF8_REPLACEMENT " A"), "%s", state);
    free(state);
    cr_assert_eq(hooksink_count(R.hook), 3, "one attempt a run");

    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 3600, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 3900, NULL), 0);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_assert_eq(n, 1, "sent once when the receiver is back:\n%s", keys);
    cr_assert_eq(occurrences(keys, "5214000A/1794999000/ch1\n"), 1, "%s", keys);
    free(keys);
    struct hook_request *rq = hooksink_request(R.hook, 0);
    cr_assert_not_null(rq);
    cr_assert(utf8_valid(rq->body, strlen(rq->body)));
    cr_assert_not_null(strstr(rq->body, "CH1 Upper Limit Exceeded" UTF8_REPLACEMENT " -70.2"), "%s",
                       rq->body);
    hook_request_free(rq);

    /* The file receiver took it at the first run; what it wrote is UTF-8. */
    char *out = read_file_str(R.out_path);
    cr_assert_not_null(out);
    cr_assert(utf8_valid(out, strlen(out)), "%s", out);
    cr_assert_eq(occurrences(out, "CH1 Upper Limit Exceeded" UTF8_REPLACEMENT " -70.2"), 1, "%s",
                 out);
    free(out);
}
