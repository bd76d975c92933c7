/* A platform that answers anything: the account's base_url points at a
 * raw HTTP server (tests/support/rawhttp.h) that sends each case's bytes
 * as they are, for the discovery call and the alert-log call. Whatever it
 * sends, a run ends within its bound, fails only that call, never makes
 * the state unloadable (no "corrupt", no file set aside, `wsrelay status`
 * reads it), and the next run does the same: nothing repeats run after
 * run. Cases that carry an alert check that it reaches the receiver once. */
#include "proc.h"
#include "rawhttp.h"
#include "relay.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 1795000000LL
#define RUN_LIMIT_S 30 /* the platform client's total timeout; each case stays well under */

static struct relay R;
static struct rawhttp *S;

static void teardown(void)
{
    rawhttp_stop(S);
    S = NULL;
    relay_stop(&R);
}

#define OK_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"

/* A device list of one standalone device, 5214D000. */
#define DEVICES                                                                                    \
    OK_HEAD "{\"devices\": [{\"num\": \"0\", \"serial\": \"5214D000\", \"model\": \"TR-72A2\", "   \
            "\"name\": \"Freezer\", \"time_diff\": \"540\", \"std_bias\": \"0\", \"dst_flg\": "    \
            "\"0\", \"dst_bias\": \"60\", \"baseunit\": {\"serial\": \"5214D000\", \"model\": "    \
            "\"TR-72A2\", \"name\": \"Freezer\"}, \"group\": {\"num\": \"0\", \"name\": \"\"}}]}"

/* The head of an alert log of 5214D000, up to its entries. */
#define LOG_OF(serial)                                                                             \
    OK_HEAD "{\"remote-serial\": \"" serial "\", \"remote-model\": \"TR-72A2\", "                  \
            "\"remote-name\": \"Freezer\", \"base-serial\": \"" serial "\", \"base-model\": "      \
            "\"TR-72A2\", \"base-name\": \"Freezer\", \"time-diff\": \"540\", \"std-bias\": "      \
            "\"0\", \"dst-flg\": \"0\", \"dst-bias\": \"60\", \"channel\": [], \"alert-logs\": "

struct hostile {
    const char *name;
    struct rawhttp_reply discovery; /* the Get Current Readings reply */
    struct rawhttp_reply alert;     /* the Get Alert Logs reply ({0}: never asked) */
    const char *sent;               /* text of an alert that must reach the receiver once */
};

static const struct hostile cases[] = {
    {.name = "discovery: not JSON", .discovery = {.head = OK_HEAD "{\"devices\": [{\"serial\""}},
    {.name = "discovery: 100 MB of body",
     .discovery = {.head = OK_HEAD "{\"devices\": [\"", .fill = 100ull * 1024 * 1024}},
    {.name = "discovery: a Content-Length that lies",
     .discovery = {.head = "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n{\"devices\": []}"}},
    {.name = "discovery: cut in the middle", .discovery = {.head = DEVICES, .close_after = 120}},
    {.name = "discovery: JSON nested 100000 deep",
     .discovery = {.head = OK_HEAD "{\"devices\": ", .fill = 100000, .fill_byte = '['}},
    {.name = "discovery: devices is not a list",
     .discovery = {.head = OK_HEAD "{\"devices\": {\"serial\": \"5214D000\"}}"}},
    {.name = "discovery: a serial with CR, LF and ESC, a name with 0xFF",
     .discovery = {.head = OK_HEAD "{\"devices\": [{\"serial\": \"52\\r\\n\\u001b[31m\", "
                                   "\"name\": \"\xff\xfe\"}, {\"serial\": \"5214D000\", \"name\": "
                                   "\"Fr\xffzer\"}]}"},
     .alert = {.head = LOG_OF("5214D000") "[{\"unixtime\": \"1794999900\", \"ch1\": \"CH1 "
                                          "Upper Limit Exceeded\"}]}"},
     .sent = "CH1 Upper Limit Exceeded"},
    {.name = "discovery: 503 with an HTML page",
     .discovery = {.head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\n\r\n"
                           "<html><body>\xff down</body></html>"}},
    {.name = "discovery: 429 asking for a pause of 30 years",
     .discovery = {.head = "HTTP/1.1 429 Too Many Requests\r\nX-RateLimit-Limit: 10\r\n"
                           "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 999999999\r\n\r\n"
                           "{\"error\": {\"code\": 429, \"message\": \"slow down\"}}"}},
    {.name = "alert log: about another device",
     .discovery = {.head = DEVICES},
     .alert = {.head = LOG_OF("5214D999") "[{\"unixtime\": \"1794999900\", \"ch1\": \"x\"}]}"}},
    {.name = "alert log: 0xFF and NUL in a text",
     .discovery = {.head = DEVICES},
     .alert = {.head = LOG_OF("5214D000") "[{\"unixtime\": \"1794999900\", \"ch1\": \"CH1 "
                                          "\xff\xfe hot\\u0000 and more\"}]}"},
     .sent = "and more"},
    {.name = "alert log: unixtimes that are no times",
     .discovery = {.head = DEVICES},
     .alert = {.head =
                   LOG_OF("5214D000") "[{\"unixtime\": \"-5\", \"ch1\": \"a\"}, "
                                      "{\"unixtime\": \"99999999999999999999\", \"ch1\": \"b\"}, "
                                      "{\"unixtime\": \"soon\", \"ch1\": \"c\"}, "
                                      "{\"unixtime\": \"1794999900\", \"ch1\": \"CH1 real\"}]}"}},
    {.name = "alert log: a 200 with no body",
     .discovery = {.head = DEVICES},
     .alert = {.head = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}},
};

/* Points the account at a new raw server for `c` and writes the config. */
static void serve(const struct hostile *c)
{
    rawhttp_stop(S);
    struct rawhttp_reply replies[2] = {c->discovery, c->alert};
    S = rawhttp_start(replies, c->alert.head ? 2 : 1, 120);
    relay_config_platform(&R, rawhttp_url(S));
}

static double seconds_since(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* Files beside the state whose name says it was set aside. */
static int set_aside_files(void)
{
    int n = 0;
    DIR *d = opendir(R.dir);
    cr_assert_not_null(d);
    for (struct dirent *de; (de = readdir(d));)
        n += strstr(de->d_name, ".corrupt-") != NULL;
    closedir(d);
    return n;
}

Test(fault_platform, hostile_replies_fail_one_call_and_never_spoil_the_state, .fini = teardown,
     .timeout = 600)
{
    /* The simulator is not called: the account is at the raw server. */
    relay_start(&R, "{\"now\": 1795000000, \"accounts\": [{\"api_key\": \"@API_KEY@\", "
                    "\"login_id\": \"@LOGIN@\", \"login_pass\": \"@PASSWORD@\", "
                    "\"devices\": []}]}");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct hostile *c = &cases[i];
        relay_forget_state(&R); /* each case starts afresh: discovery is due */
        unlink(R.out_path);
        serve(c);
        for (int run = 0; run < 2; run++) {
            struct timespec t0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            char *err = NULL;
            int status = relay_run_at(&R, T0 + run * 700, &err);
            double took = seconds_since(&t0);
            cr_expect(status == 0 || status == 1, "%s, run %d: exit %d\n%.2000s", c->name, run,
                      status, err);
            cr_expect_lt(took, RUN_LIMIT_S, "%s, run %d: %.1f s", c->name, run, took);
            cr_expect_null(strstr(err, "corrupt"), "%s, run %d:\n%.2000s", c->name, run, err);
            for (const char *p = err; *p; p++)
                cr_expect(*p == '\n' || *p == '\t' || (unsigned char)*p >= 0x20,
                          "%s: a control character in the log:\n%.2000s", c->name, err);
            free(err);
        }
        cr_expect_eq(set_aside_files(), 0, "%s: the state was set aside", c->name);
        char *argv[] = {(char *)WSRELAY_BIN, (char *)"-c",         R.config_path, (char *)"status",
                        (char *)"--now",     (char *)"1795001400", NULL};
        char *out = NULL, *err = NULL;
        int status = run_cmd(&out, &err, 30, argv, NULL);
        cr_expect(status == 0 || status == 1, "%s: status exit %d\n%s%s", c->name, status, out,
                  err);
        cr_expect_null(strstr(err, "corrupt"), "%s: %s", c->name, err);
        free(out);
        free(err);
        if (c->sent) {
            char *log = read_file_str(R.out_path);
            cr_expect_eq(occurrences(log, c->sent), 1, "%s: the alert went out %zu times:\n%s",
                         c->name, occurrences(log, c->sent), log ? log : "");
            free(log);
        }
    }
}
