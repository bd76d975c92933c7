/* The metrics file: counters kept in the state add up across runs, gauges
 * come from the state, and the text is valid exposition format. The
 * reference in docs/OPERATIONS.md (Metrics) names every label value the
 * code emits. */
#include "metrics.h"
#include "proc.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char dir[64];
static char *path;
static struct state *st;
static struct config cfg;
static struct account_conf accounts[2];
static struct receiver_conf receivers[2];

static void setup(void)
{
    struct err e;
    strcpy(dir, "/tmp/wsrelay-metrics-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    path = xasprintf("%s/state.json", dir);
    cr_assert_eq(state_open(&st, path, 0, &e), 0, "%s", e.msg);
    accounts[0] = (struct account_conf){.name = (char *)"tokyo", .login_id = (char *)"tbzz9999"};
    accounts[1] = (struct account_conf){.name = (char *)"osaka", .login_id = (char *)"tbzz9999"};
    receivers[0] = (struct receiver_conf){.name = (char *)"oncall-mail"};
    receivers[1] = (struct receiver_conf){.name = (char *)"lab-slack"};
    cfg = (struct config){
        .accounts = accounts, .n_accounts = 2, .receivers = receivers, .n_receivers = 2};
}

static void teardown(void)
{
    state_close(st);
    test_rmtree(dir);
    free(path);
}

TestSuite(metrics, .init = setup, .fini = teardown);

static char *render(long long now, bool ok)
{
    struct buf b;
    buf_init(&b, 0);
    metrics_render(&b, &cfg, st, now, ok);
    return buf_steal(&b);
}

/* Every line is a comment or "name{labels} number", and every sample's
 * family was declared with # TYPE before it. */
static void assert_exposition(const char *text)
{
    char family[128] = "";
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end, "the text must end with a newline");
        char buf[512];
        size_t len = (size_t)(end - line);
        cr_assert_lt(len, sizeof buf);
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (!strncmp(buf, "# TYPE ", 7)) {
            cr_assert_eq(sscanf(buf + 7, "%127s", family), 1);
        } else if (buf[0] != '#') {
            cr_assert(!strncmp(buf, family, strlen(family)), "sample outside its family: %s", buf);
            const char *space = strrchr(buf, ' ');
            cr_assert_not_null(space, "%s", buf);
            char *num_end;
            strtod(space + 1, &num_end);
            cr_assert(*num_end == '\0' && num_end != space + 1, "not a number: %s", buf);
        }
        line = end + 1;
    }
}

Test(metrics, counters_and_gauges)
{
    metrics_count_call(st, "tbzz9999", PLATFORM_ALERT, true, 200);
    metrics_count_call(st, "tbzz9999", PLATFORM_ALERT, true, 200);
    metrics_count_call(st, "tbzz9999", PLATFORM_ALERT, false, 401);
    metrics_count_call(st, "tbzz9999", PLATFORM_CURRENT, false, 0);
    metrics_count_message(st, "oncall-mail", "sent");
    metrics_count_message(st, "lab-slack", "given_up");
    state_count(st, METRICS_EVENTS_ROUTED, 5);
    state_count(st, "throttled", 2);
    state_set_counter(st, METRICS_LAST_SUCCESS, 1795000000);
    for (int i = 0; i < 3; i++)
        state_record_call(st, "tbzz9999", PLATFORM_ALERT, 1795000000 - 600 + i);
    struct event ev = {.account = (char *)"tokyo",
                       .serial = (char *)"5214A000",
                       .model = (char *)"",
                       .name = (char *)"",
                       .base_serial = (char *)"5214A000",
                       .base_model = (char *)"",
                       .base_name = (char *)"",
                       .unixtime = 1794999000,
                       .kind = (char *)"ch1",
                       .text = (char *)"x"};
    state_enqueue(st, "lab-slack", &ev, 1795000000);
    state_enqueue(st, "gone", &ev, 1795000000);
    char *text = render(1795000000, false);
    assert_exposition(text);
    static const char *const want[] = {
        "wsrelay_platform_calls_total{login=\"tbzz9999\",op=\"alert\",result=\"ok\"} 2\n",
        "wsrelay_platform_calls_total{login=\"tbzz9999\",op=\"alert\",result=\"error\"} 1\n",
        "wsrelay_platform_errors_total{login=\"tbzz9999\",op=\"alert\",code=\"401\"} 1\n",
        "wsrelay_platform_errors_total{login=\"tbzz9999\",op=\"current\",code=\"0\"} 1\n",
        "wsrelay_events_total{outcome=\"routed\"} 5\n",
        "wsrelay_events_total{outcome=\"throttled\"} 2\n",
        "wsrelay_events_total{outcome=\"unrouted\"} 0\n",
        "wsrelay_notifications_total{receiver=\"oncall-mail\",outcome=\"sent\"} 1\n",
        "wsrelay_notifications_total{receiver=\"lab-slack\",outcome=\"given_up\"} 1\n",
        "wsrelay_outbox_events{receiver=\"oncall-mail\"} 0\n",
        "wsrelay_outbox_events{receiver=\"lab-slack\"} 1\n",
        "wsrelay_outbox_events{receiver=\"gone\"} 1\n",
        "# TYPE wsrelay_alert_calls_remaining gauge\n"
        "wsrelay_alert_calls_remaining{login=\"tbzz9999\"} 9\n"
        "# HELP", /* once per login ID, not per account */
        "wsrelay_last_run_timestamp_seconds 1795000000\n",
        "wsrelay_last_run_success 0\n",
        "wsrelay_last_success_timestamp_seconds 1795000000\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(text, want[i]), "missing %s in:\n%s", want[i], text);
    free(text);
}

Test(metrics, counters_survive_a_save_and_the_file_is_replaced_whole)
{
    struct err e;
    metrics_count_call(st, "tbzz9999", PLATFORM_ALERT, true, 200);
    cr_assert_eq(state_save(st, &e), 0, "%s", e.msg);
    state_close(st);
    cr_assert_eq(state_open(&st, path, 0, &e), 0, "%s", e.msg);
    metrics_count_call(st, "tbzz9999", PLATFORM_ALERT, true, 200);
    char *file = xasprintf("%s/wsrelay.prom", dir);
    cr_assert_eq(metrics_write(file, &cfg, st, 1795000000, true, &e), 0, "%s", e.msg);
    struct stat sb;
    cr_assert_eq(stat(file, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0644);
    struct buf b;
    buf_init(&b, 0);
    cr_assert_eq(file_read(&b, file, &e), 0);
    assert_exposition(buf_str(&b));
    cr_assert(strstr(buf_str(&b), "result=\"ok\"} 2\n"), "%s", buf_str(&b));
    cr_assert(strstr(buf_str(&b), "wsrelay_last_run_success 1\n"));
    buf_free(&b);
    free(file);
}

/* The values the metrics table of docs/OPERATIONS.md gives label `label` of `metric`:
 * the backquoted words in the parentheses after `label`, as one string
 * " a b c " (each between spaces), sorted as written. */
static char *documented_values(const char *metric, const char *label)
{
    char *doc = read_file_str(WSRELAY_SOURCE_DIR "/docs/OPERATIONS.md");
    cr_assert_not_null(doc);
    char *row_start = xasprintf("\n| `%s` |", metric);
    const char *row = strstr(doc, row_start);
    cr_assert_not_null(row, "docs/OPERATIONS.md's metrics table has no row %s", metric);
    const char *row_end = strchr(row + 1, '\n');
    char *label_text = xasprintf("`%s` (", label);
    const char *p = strstr(row, label_text);
    cr_assert(p && p < row_end, "docs/OPERATIONS.md's row %s gives no values of %s", metric, label);
    p += strlen(label_text);
    struct buf out;
    buf_init(&out, 0);
    buf_puts(&out, " ");
    while (*p && *p != ')' && p < row_end) {
        const char *open = strchr(p, '`');
        const char *close = open ? strchr(open + 1, '`') : NULL;
        const char *paren = strchr(p, ')');
        if (!close || (paren && open > paren))
            break;
        buf_append(&out, open + 1, (size_t)(close - open - 1));
        buf_puts(&out, " ");
        p = close + 1;
    }
    free(label_text);
    free(row_start);
    free(doc);
    return buf_steal(&out);
}

static void expect_documented(const char *documented, const char *value, const char *what)
{
    char *word = xasprintf(" %s ", value);
    cr_expect(strstr(documented, word),
              "docs/OPERATIONS.md's metrics reference lacks %s \"%s\" (it has:%s)", what, value,
              documented);
    free(word);
}

/* Every operation a call is counted under (a lookup counts all of them),
 * and no other. */
Test(metrics, the_metrics_reference_lists_every_operation)
{
    char *documented = documented_values("wsrelay_platform_calls_total", "op");
    size_t words = 0;
    for (const char *p = documented + 1; *p; p++)
        words += *p == ' ';
    for (int op = 0; op < PLATFORM_N_OPS; op++)
        expect_documented(documented, platform_op_name((enum platform_op)op), "op");
    cr_expect_eq(words, (size_t)PLATFORM_N_OPS, "docs/OPERATIONS.md lists other operations:%s",
                 documented);
    free(documented);
}

/* Every outcome wsrelay_events_total is written with, and no other. */
Test(metrics, the_metrics_reference_lists_every_event_outcome)
{
    char *documented = documented_values("wsrelay_events_total", "outcome");
    char *text = render(1795000000, true);
    size_t emitted = 0;
    const char *prefix = "\nwsrelay_events_total{outcome=\"";
    for (const char *p = strstr(text, prefix); p; p = strstr(p + 1, prefix)) {
        const char *v = p + strlen(prefix);
        char *value = xstrndup(v, (size_t)(strchr(v, '"') - v));
        expect_documented(documented, value, "outcome");
        free(value);
        emitted++;
    }
    size_t words = 0;
    for (const char *p = documented + 1; *p; p++)
        words += *p == ' ';
    cr_expect_gt(emitted, 0);
    cr_expect_eq(words, emitted, "docs/OPERATIONS.md lists other outcomes:%s", documented);
    free(text);
    free(documented);
}
