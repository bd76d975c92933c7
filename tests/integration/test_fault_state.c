/* A damaged part of the state costs that part only, end to end: a fleet
 * file deleted or cut short (a backup that restored state.json alone),
 * while an alert waits in the outbox for a receiver that fails. The outbox,
 * the seen keys and the budget ledger are in the state file: the queued
 * alert goes out once when the receiver is back, and nothing seen is sent
 * again. */
#include "proc.h"
#include "relay.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define T0 1795000000LL

static struct relay R;

static void setup(void)
{
    relay_start_world(&R, "freezer-a");
}

static void teardown(void)
{
    relay_stop(&R);
}

TestSuite(fault_state, .init = setup, .fini = teardown, .timeout = 120);

/* The name of the state's fleet file (state.json.fleet-N); caller frees. */
static char *fleet_file(void)
{
    char *found = NULL;
    DIR *d = opendir(R.dir);
    cr_assert_not_null(d);
    for (struct dirent *de; (de = readdir(d));)
        if (strncmp(de->d_name, "state.json.fleet-", 17) == 0) {
            cr_assert_null(found, "two fleet files: %s and %s", found, de->d_name);
            found = xasprintf("%s/%s", R.dir, de->d_name);
        }
    closedir(d);
    cr_assert_not_null(found, "no fleet file in %s", R.dir);
    return found;
}

/* The alert reaches the file receiver and waits for the failing webhook;
 * `damage` spoils the fleet file; then the webhook is back. */
static void queued_alert_survives(void (*damage)(const char *fleet))
{
    char *err = NULL;
    hooksink_set_status(R.hook, 500);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1, "the webhook fails");
    cr_assert_eq(hooksink_count(R.hook), 1);
    char *fleet = fleet_file();
    damage(fleet);
    free(fleet);

    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 300, &err), 0, "%s", err);
    cr_expect_not_null(strstr(err, "relearn"), "no warning: %s", err);
    cr_expect_null(strstr(err, "corrupt"), "%s", err);
    free(err);
    cr_expect_eq(test_count_files(R.dir, "state.json.corrupt-"), 0, "the state was set aside");
    for (int i = 1; i <= 12; i++) /* later runs poll the device again */
        cr_assert_eq(relay_run_at(&R, T0 + 300 + i * 600, NULL), 0, "run %d", i);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_expect_eq(n, 1, "the queued alert, once:\n%s", keys);
    cr_expect_eq(occurrences(keys, "5214000A/1794999000/ch1\n"), 1, "%s", keys);
    free(keys);
    char *out = read_file_str(R.out_path);
    cr_expect_eq(occurrences(out, "CH1 Upper Limit Exceeded -70.2"), 1, "sent again:\n%s", out);
    free(out);
    struct json_object *doc = relay_state_doc(&R);
    struct json_object *accounts = NULL;
    cr_expect(json_object_object_get_ex(doc, "accounts", &accounts) &&
                  json_object_object_length(accounts) == 1,
              "the device list was not relearnt");
    json_object_put(doc);
}

static void delete (const char *fleet)
{
    cr_assert_eq(unlink(fleet), 0);
}

static void cut_short(const char *fleet)
{
    cr_assert_eq(truncate(fleet, 20), 0);
}

Test(fault_state, a_deleted_fleet_file_keeps_the_outbox_and_the_seen_keys)
{
    queued_alert_survives(delete);
}

Test(fault_state, a_fleet_file_cut_short_keeps_the_outbox_and_the_seen_keys)
{
    queued_alert_survives(cut_short);
}

/* A file size limit (ulimit -f) below what a save writes: the write fails
 * with EFBIG, which the run reports like any failed write and exits
 * non-zero, rather than dying by SIGXFSZ with nothing said; the state
 * file stays whole, and once the limit is gone the queued alert goes out
 * once. The limit is set in this process for the run it starts (a child
 * inherits it), and lifted after. */
Test(fault_state, a_file_size_limit_fails_the_save_and_says_why)
{
    char *err = NULL;
    hooksink_set_status(R.hook, 500);
    cr_assert_eq(relay_run_at(&R, T0, NULL), 1, "the webhook fails");
    char *before = read_file_str(R.state_path);
    cr_assert_gt(strlen(before), 1200);

    hooksink_set_status(R.hook, 503);
    struct rlimit was, low;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    low = was;
    low.rlim_cur = 1024; /* the run's stderr needs less */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
    int rc = relay_run_at(&R, T0 + 300, &err);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
    cr_expect_eq(rc, 1, "exit status %d: %s", rc, err);
    cr_expect_not_null(strstr(err, "File too large"), "%s", err);
    free(err);
    char *after = read_file_str(R.state_path);
    cr_expect_str_eq(after, before, "the state file changed");
    free(after);
    free(before);

    hooksink_clear(R.hook);
    hooksink_set_status(R.hook, 200);
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 1200, NULL), 0);
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_expect_eq(n, 1, "the queued alert, once:\n%s", keys);
    free(keys);
}

/* A device's seen file damaged between two runs: the device falls back to
 * its high-water mark in the state file, with a warning, and its alert is
 * not sent again (before: the device started over and its log went out a
 * second time); later runs take its entries below the new floor for seen
 * ones, not for an older copy of the log (before: a false warning at every
 * poll). */
Test(fault_state, a_damaged_seen_file_sends_nothing_again)
{
    char *err = NULL;
    cr_assert_eq(relay_run_at(&R, T0, NULL), 0);
    cr_assert_eq(relay_run_at(&R, T0 + 600, NULL), 0); /* the keys are in the device file now */
    char *seen = xasprintf("%s/state.json.d/5214000A.json", R.dir);
    cr_assert_eq(access(seen, F_OK), 0, "no %s", seen);
    write_file(seen, "{\"serial\":\"5214000A\",\"seen\":{");
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(relay_run_at(&R, T0 + 1200 + i * 600, &err), 0, "%s", err);
        if (i == 0)
            cr_expect_not_null(strstr(err, "its seen file is lost"), "no warning: %s", err);
        else /* the entries below the new floor are seen, not an older copy of the log */
            cr_expect_null(strstr(err, "older than entries already handled"), "run %d: %s", i + 1,
                           err);
        free(err);
        err = NULL;
    }
    size_t n = 0;
    char *keys = relay_hook_keys(&R, &n);
    cr_expect_eq(n, 1, "sent once:\n%s", keys);
    free(keys);
    char *out = read_file_str(R.out_path);
    cr_expect_eq(occurrences(out, "CH1 Upper Limit Exceeded -70.2"), 1, "sent again:\n%s", out);
    free(out);
    free(seen);
}
