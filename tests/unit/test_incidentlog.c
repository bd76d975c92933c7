/* The incident log (src/state/incidentlog.c) on real files: lines appended
 * and read back across months, `since`, the longest line, pruning whole
 * months, the modes, symbolic links and FIFOs refused, a torn last line and
 * a line written twice after a crash, a month file over the cap, and the
 * CSV export (its exact bytes,
 * cells no spreadsheet can take for a formula, and a note that comes back
 * whole through Python's csv module). Every test works in its own
 * temporary directory. */
#include "proc.h"
#include "state/incidentlog.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Times of three months of 2026, UTC. */
#define SEP_10 1788998400LL  /* 2026-09-10T00:00:00Z */
#define OCT_15 1792022400LL  /* 2026-10-15T00:00:00Z */
#define OCT_END 1793491199LL /* 2026-10-31T23:59:59Z, the last second of October */
#define NOV_1 1793491200LL   /* 2026-11-01T00:00:00Z */
#define NOV_15 1794700800LL  /* 2026-11-15T00:00:00Z */

static char *dir;  /* the test's directory */
static char *path; /* DIR/state.json */
static char *ldir; /* DIR/state.json.incidents */

static void setup(void)
{
    dir = test_tmpdir();
    path = xasprintf("%s/state.json", dir);
    ldir = xasprintf("%s.incidents", path);
}

static void teardown(void)
{
    test_rmtree(dir);
    free(dir);
    free(path);
    free(ldir);
}

TestSuite(incidentlog, .init = setup, .fini = teardown);

/* --- helpers ----------------------------------------------------------- */

/* A line of the log: step `seq` of incident `incident` at `at`. */
static char *line_of(long long at, const char *incident, int seq, const char *what)
{
    return xasprintf("{\"at\":%lld,\"incident\":\"%s\",\"seq\":%d,\"what\":\"%s\"}", at, incident,
                     seq, what);
}

/* Appends one line, which must succeed. */
static void append_ok(long long at, const char *incident, int seq, const char *what)
{
    struct err e = {{0}};
    char *line = line_of(at, incident, seq, what);
    const char *lines[] = {line};
    cr_assert_eq(incidentlog_append(path, at, lines, 1, &e), 0, "%s", e.msg);
    free(line);
}

/* DIR/state.json.incidents/NAME; caller frees. */
static char *in_log(const char *name)
{
    return xasprintf("%s/%s", ldir, name);
}

static char *file_text(const char *name)
{
    char *p = in_log(name);
    char *text = read_file_str(p);
    free(p);
    return text;
}

static void add_text(const char *name, const char *text)
{
    char *p = in_log(name);
    FILE *f = fopen(p, "a");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    free(p);
}

/* What a reading gave: "INCIDENT/SEQ/WHAT" of each line, joined by ' '. */
struct seen {
    char text[4096];
    size_t calls;
    size_t stop_after; /* 0: never stop */
};

static bool collect(const struct json_object *line, void *ctx)
{
    struct seen *s = ctx;
    struct json_object *inc, *seq, *what;
    json_object_object_get_ex(line, "incident", &inc);
    json_object_object_get_ex(line, "seq", &seq);
    json_object_object_get_ex(line, "what", &what);
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof s->text - len, "%s%s/%d/%s", len ? " " : "",
             json_object_get_string(inc), json_object_get_int(seq),
             what ? json_object_get_string(what) : "-");
    s->calls++;
    return s->stop_after == 0 || s->calls < s->stop_after;
}

/* Reads the log from `since`, which must succeed; the damaged count in
 * *damaged. */
static struct seen read_ok(long long since, size_t *damaged)
{
    struct seen s = {.calls = 0};
    struct err e = {{0}};
    size_t d = 99;
    cr_assert_eq(incidentlog_read(&d, path, since, collect, &s, &e), 0, "%s", e.msg);
    if (damaged)
        *damaged = d;
    return s;
}

static mode_t mode_of(const char *p)
{
    struct stat st;
    cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
    return st.st_mode & 07777;
}

/* --- appending and reading ----------------------------------------------- */

Test(incidentlog, lines_come_back_oldest_month_first_and_in_file_order)
{
    append_ok(NOV_15, "7", 1, "opened");
    append_ok(OCT_15, "3", 1, "opened");
    append_ok(OCT_15 + 60, "3", 2, "reminder");
    /* One call with two lines, as a step that writes several does. */
    char *a = line_of(NOV_15 + 60, "7", 2, "notice");
    char *b = line_of(NOV_15 + 60, "7", 3, "escalated");
    const char *lines[] = {a, b};
    struct err e = {{0}};
    cr_assert_eq(incidentlog_append(path, NOV_15 + 60, lines, 2, &e), 0, "%s", e.msg);

    size_t damaged;
    struct seen s = read_ok(0, &damaged);
    cr_assert_str_eq(s.text, "3/1/opened 3/2/reminder 7/1/opened 7/2/notice 7/3/escalated");
    cr_assert_eq(damaged, 0);

    /* One file a month, each line whole with its newline. */
    char *oct = file_text("2026-10.jsonl");
    char *nov = file_text("2026-11.jsonl");
    char *want_nov = xasprintf("%s\n%s\n%s\n",
                               "{\"at\":1794700800,\"incident\":\"7\",\"seq\":1,"
                               "\"what\":\"opened\"}",
                               a, b);
    cr_assert_str_eq(oct,
                     "{\"at\":1792022400,\"incident\":\"3\",\"seq\":1,\"what\":\"opened\"}\n"
                     "{\"at\":1792022460,\"incident\":\"3\",\"seq\":2,\"what\":\"reminder\"}\n");
    cr_assert_str_eq(nov, want_nov);
    cr_assert_eq(test_count_files(ldir, "2026-"), 2);
    free(oct);
    free(nov);
    free(want_nov);
    free(a);
    free(b);
}

Test(incidentlog, the_last_second_of_a_month_goes_in_that_month)
{
    append_ok(OCT_END, "1", 1, "opened");
    append_ok(NOV_1, "1", 2, "resolved");
    char *oct = file_text("2026-10.jsonl");
    char *nov = file_text("2026-11.jsonl");
    cr_assert_not_null(oct);
    cr_assert_not_null(nov);
    cr_assert_not_null(strstr(oct, "\"seq\":1"));
    cr_assert_not_null(strstr(nov, "\"seq\":2"));
    free(oct);
    free(nov);
}

Test(incidentlog, since_gives_the_lines_at_it_and_after)
{
    append_ok(SEP_10, "1", 1, "opened");
    append_ok(OCT_15, "2", 1, "opened");
    append_ok(OCT_15 + 100, "2", 2, "acknowledged");
    append_ok(NOV_15, "2", 3, "resolved");
    cr_assert_str_eq(read_ok(OCT_15 + 100, NULL).text, "2/2/acknowledged 2/3/resolved");
    cr_assert_str_eq(read_ok(OCT_15 + 101, NULL).text, "2/3/resolved");
    cr_assert_str_eq(read_ok(NOV_1, NULL).text, "2/3/resolved");
    cr_assert_str_eq(read_ok(NOV_15 + 1, NULL).text, "");
    cr_assert_str_eq(read_ok(0, NULL).text, "1/1/opened 2/1/opened 2/2/acknowledged 2/3/resolved");
}

Test(incidentlog, the_reader_stops_when_told)
{
    append_ok(OCT_15, "1", 1, "opened");
    append_ok(OCT_15, "1", 2, "notice");
    append_ok(NOV_15, "1", 3, "resolved");
    struct seen s = {.stop_after = 2};
    size_t damaged;
    struct err e = {{0}};
    cr_assert_eq(incidentlog_read(&damaged, path, 0, collect, &s, &e), 0, "%s", e.msg);
    cr_assert_str_eq(s.text, "1/1/opened 1/2/notice");
    cr_assert_eq(s.calls, 2);
}

Test(incidentlog, a_missing_log_is_empty)
{
    size_t damaged = 5;
    cr_assert_str_eq(read_ok(0, &damaged).text, "");
    cr_assert_eq(damaged, 0);
    struct err e = {{0}};
    cr_assert_eq(incidentlog_prune(path, NOV_15, &e), 0, "%s", e.msg);
    cr_assert_eq(access(ldir, F_OK), -1, "nothing is created by reading or pruning");
    cr_assert_eq(incidentlog_append(path, NOV_15, NULL, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(access(ldir, F_OK), -1, "nor by appending nothing");
}

Test(incidentlog, the_directory_is_0700_and_its_files_0600)
{
    mode_t old = umask(0);
    append_ok(OCT_15, "1", 1, "opened");
    append_ok(NOV_15, "1", 2, "resolved");
    umask(old);
    cr_assert_eq(mode_of(ldir), 0700);
    char *oct = in_log("2026-10.jsonl");
    char *nov = in_log("2026-11.jsonl");
    cr_assert_eq(mode_of(oct), 0600);
    cr_assert_eq(mode_of(nov), 0600);
    free(oct);
    free(nov);
}

Test(incidentlog, a_line_with_a_newline_or_too_long_writes_nothing)
{
    struct err e = {{0}};
    char *good = line_of(NOV_15, "1", 1, "opened");
    const char *lines[] = {good, "{\"at\":1,\n\"incident\":\"1\",\"seq\":2}"};
    cr_assert_eq(incidentlog_append(path, NOV_15, lines, 2, &e), -1);
    char *want = xasprintf("%s: line 2 of 2 not appended: holds a newline", ldir);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(access(ldir, F_OK), -1);

    char *big = xmalloc(INCIDENTLOG_LINE_MAX + 2);
    memset(big, 'x', INCIDENTLOG_LINE_MAX + 1);
    big[INCIDENTLOG_LINE_MAX + 1] = '\0';
    const char *too_long[] = {big};
    cr_assert_eq(incidentlog_append(path, NOV_15, too_long, 1, &e), -1);
    cr_assert(strstr(e.msg, "line 1 of 1 not appended: longer than the log takes"), "%s", e.msg);
    cr_assert_eq(access(ldir, F_OK), -1);
    free(big);
    free(want);
    free(good);
}

Test(incidentlog, a_line_as_long_as_the_log_takes_comes_back)
{
    static const char head[] = "{\"at\":1794700800,\"incident\":\"1\",\"seq\":1,\"text\":\"";
    char *line = xmalloc(INCIDENTLOG_LINE_MAX + 1);
    size_t fill = INCIDENTLOG_LINE_MAX - strlen(head) - 2;
    strcpy(line, head);
    memset(line + strlen(head), 'x', fill);
    strcpy(line + strlen(head) + fill, "\"}");
    cr_assert_eq(strlen(line), INCIDENTLOG_LINE_MAX);
    const char *lines[] = {line};
    struct err e = {{0}};
    cr_assert_eq(incidentlog_append(path, NOV_15, lines, 1, &e), 0, "%s", e.msg);
    append_ok(NOV_15, "1", 2, "notice");
    size_t damaged;
    cr_assert_str_eq(read_ok(0, &damaged).text, "1/1/- 1/2/notice");
    cr_assert_eq(damaged, 0);
    free(line);
}

Test(incidentlog, a_month_file_that_is_not_a_regular_file_is_refused)
{
    append_ok(OCT_15, "1", 1, "opened");
    char *nov = in_log("2026-11.jsonl");
    cr_assert_eq(mkfifo(nov, 0600), 0, "%s", strerror(errno));
    struct err e = {{0}};
    char *line = line_of(NOV_15, "1", 2, "notice");
    const char *lines[] = {line};
    char *want = xasprintf("%s: not a regular file", nov);
    cr_assert_eq(incidentlog_append(path, NOV_15, lines, 1, &e), -1);
    cr_assert_str_eq(e.msg, want);
    size_t damaged;
    struct seen s = {.calls = 0};
    err_clear(&e);
    cr_assert_eq(incidentlog_read(&damaged, path, 0, collect, &s, &e), -1, "no wait on a FIFO");
    cr_assert(strstr(e.msg, "not a regular file"), "%s", e.msg);
    cr_assert_str_eq(s.text, "1/1/opened");
    free(want);
    free(line);
    free(nov);
}

/* --- pruning --------------------------------------------------------------- */

Test(incidentlog, prune_removes_only_whole_months_before_the_bound)
{
    append_ok(SEP_10, "1", 1, "opened");
    append_ok(OCT_15, "2", 1, "opened");
    append_ok(NOV_15, "3", 1, "opened");
    add_text("notes.txt", "not a month file\n");
    struct err e = {{0}};

    /* October ends at the first second of November: before NOV_1 it has
     * not ended, at NOV_1 it has. */
    cr_assert_eq(incidentlog_prune(path, NOV_1 - 1, &e), 0, "%s", e.msg);
    cr_assert_str_eq(read_ok(0, NULL).text, "2/1/opened 3/1/opened");
    cr_assert_eq(test_count_files(ldir, "2026-"), 2);

    cr_assert_eq(incidentlog_prune(path, NOV_1, &e), 0, "%s", e.msg);
    cr_assert_str_eq(read_ok(0, NULL).text, "3/1/opened");

    /* The month the bound falls into stays whole. */
    cr_assert_eq(incidentlog_prune(path, NOV_15 + 86400, &e), 0, "%s", e.msg);
    cr_assert_str_eq(read_ok(0, NULL).text, "3/1/opened");
    cr_assert_eq(test_count_files(ldir, "2026-11.jsonl"), 1);
    cr_assert_eq(test_count_files(ldir, "notes.txt"), 1, "only month files are pruned");
}

/* --- symbolic links ------------------------------------------------------- */

Test(incidentlog, a_symlinked_directory_is_refused_and_nothing_written_through_it)
{
    char *elsewhere = xasprintf("%s/elsewhere", dir);
    cr_assert_eq(mkdir(elsewhere, 0700), 0);
    cr_assert_eq(symlink(elsewhere, ldir), 0);
    struct err e = {{0}};
    char *line = line_of(NOV_15, "1", 1, "opened");
    const char *lines[] = {line};
    char *want =
        xasprintf("%s: is a symbolic link (refused: wsrelay never follows one here)", ldir);

    cr_assert_eq(incidentlog_append(path, NOV_15, lines, 1, &e), -1);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(test_count_files(elsewhere, ""), 2,
                 "only . and ..: nothing written through the link");

    /* A month file planted behind the link is not read, nor pruned. */
    char *planted = xasprintf("%s/2026-10.jsonl", elsewhere);
    write_file(planted, "{\"at\":1792022400,\"incident\":\"9\",\"seq\":1}\n");
    size_t damaged;
    struct seen s = {.calls = 0};
    err_clear(&e);
    cr_assert_eq(incidentlog_read(&damaged, path, 0, collect, &s, &e), -1);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(s.calls, 0);
    err_clear(&e);
    cr_assert_eq(incidentlog_prune(path, NOV_15, &e), -1);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(access(planted, F_OK), 0);
    free(planted);
    free(want);
    free(line);
    free(elsewhere);
}

Test(incidentlog, a_symlinked_month_file_is_refused_and_nothing_written_through_it)
{
    append_ok(OCT_15, "1", 1, "opened"); /* makes the directory */
    char *target = xasprintf("%s/target", dir);
    char *dangling = xasprintf("%s/nothing-yet", dir);
    char *nov = in_log("2026-11.jsonl");
    char *dec = in_log("2026-12.jsonl");
    write_file(target, "precious\n");
    cr_assert_eq(symlink(target, nov), 0);
    cr_assert_eq(symlink(dangling, dec), 0);
    struct err e = {{0}};
    char *line = line_of(NOV_15, "1", 2, "notice");
    const char *lines[] = {line};

    cr_assert_eq(incidentlog_append(path, NOV_15, lines, 1, &e), -1);
    char *want = xasprintf("%s: is a symbolic link (refused: wsrelay never follows one here)", nov);
    cr_assert_str_eq(e.msg, want);
    char *kept = read_file_str(target);
    cr_assert_str_eq(kept, "precious\n");

    /* A link to nothing is not a way to create a file elsewhere either. */
    err_clear(&e);
    cr_assert_eq(incidentlog_append(path, NOV_15 + 30 * 86400, lines, 1, &e), -1);
    cr_assert(strstr(e.msg, "is a symbolic link"), "%s", e.msg);
    cr_assert_eq(access(dangling, F_OK), -1);

    /* The reader refuses it too, after the month before. */
    size_t damaged;
    struct seen s = {.calls = 0};
    err_clear(&e);
    cr_assert_eq(incidentlog_read(&damaged, path, 0, collect, &s, &e), -1);
    cr_assert_str_eq(e.msg, want);
    cr_assert_str_eq(s.text, "1/1/opened");
    free(want);
    free(kept);
    free(line);
    free(dec);
    free(nov);
    free(dangling);
    free(target);
}

/* --- after a crash ------------------------------------------------------- */

Test(incidentlog, a_torn_last_line_costs_that_line_only)
{
    append_ok(NOV_15, "4", 1, "opened");
    append_ok(NOV_15 + 60, "4", 2, "notice");
    add_text("2026-11.jsonl", "{\"at\":1794700920,\"incident\":\"4\",\"se");
    size_t damaged;
    cr_assert_str_eq(read_ok(0, &damaged).text, "4/1/opened 4/2/notice");
    cr_assert_eq(damaged, 1);

    /* The next line starts a line of its own. */
    append_ok(NOV_15 + 180, "4", 3, "reminder");
    cr_assert_str_eq(read_ok(0, &damaged).text, "4/1/opened 4/2/notice 4/3/reminder");
    cr_assert_eq(damaged, 1);
    char *text = file_text("2026-11.jsonl");
    cr_assert(strstr(text, "\"se\n{\"at\":1794700980,\"incident\":\"4\",\"seq\":3,"), "%s", text);
    free(text);
}

Test(incidentlog, lines_that_are_not_a_step_are_skipped_and_counted)
{
    append_ok(NOV_15, "5", 1, "opened");
    add_text("2026-11.jsonl",
             "\n"
             "[1,2]\n"
             "{\"at\":\"1794700800\",\"incident\":\"5\",\"seq\":2}\n"
             "{\"at\":1794700800,\"incident\":5,\"seq\":2}\n"
             "{\"at\":1794700800,\"incident\":\"5\",\"seq\":2.5}\n"
             "{\"at\":1794700800,\"incident\":\"5\"}\n"
             "{\"at\":1794700800,\"incident\":\"5\",\"seq\":2} trailing\n"
             "{\"at\":1794700800,\"incident\":\"5\",\"seq\":2,\"text\":\"\xff\"}\n");
    append_ok(NOV_15 + 60, "5", 2, "resolved");
    size_t damaged;
    cr_assert_str_eq(read_ok(0, &damaged).text, "5/1/opened 5/2/resolved");
    cr_assert_eq(damaged, 8);
}

Test(incidentlog, a_line_written_twice_is_read_once)
{
    append_ok(OCT_15, "6", 1, "opened");
    append_ok(OCT_15, "6", 1, "opened"); /* a crash between the save and the append */
    append_ok(OCT_15 + 60, "6", 2, "notice");
    append_ok(OCT_15 + 60, "16", 2, "notice"); /* another incident's step 2 */
    append_ok(NOV_15, "6", 2, "notice");       /* even in a later month */
    size_t damaged;
    cr_assert_str_eq(read_ok(0, &damaged).text, "6/1/opened 6/2/notice 16/2/notice");
    cr_assert_eq(damaged, 0);
}

Test(incidentlog, a_month_file_over_the_cap_is_read_up_to_it)
{
    append_ok(NOV_15, "8", 1, "opened");
    append_ok(NOV_15, "8", 2, "notice");
    /* Beyond the lines, zeros to past the cap (a sparse file: no disk). */
    char *nov = in_log("2026-11.jsonl");
    cr_assert_eq(truncate(nov, (off_t)INCIDENTLOG_FILE_MAX + 4096), 0, "%s", strerror(errno));
    size_t damaged;
    cr_assert_str_eq(read_ok(0, &damaged).text, "8/1/opened 8/2/notice");
    cr_assert_eq(damaged, 0, "what is cut at the cap is not counted as damage");
    free(nov);
}

/* --- CSV ------------------------------------------------------------------ */

/* What incidentlog_csv_line writes for the JSON text `json`; caller frees. */
static char *csv_of(const char *json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct json_object *line = json_tokener_parse(json);
    cr_assert_not_null(line, "%s", json);
    incidentlog_csv_line(f, line);
    cr_assert_eq(fclose(f), 0);
    json_object_put(line);
    return text;
}

/* The row of a line whose only member is a note holding `note`; the note
 * is column 14 of 20. */
static char *row_of_note(const char *note, size_t len)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    struct json_object *line = json_object_new_object();
    json_object_object_add(line, "note", json_object_new_string_len(note, (int)len));
    incidentlog_csv_line(f, line);
    cr_assert_eq(fclose(f), 0);
    json_object_put(line);
    return text;
}

static void expect_note_cell(const char *note, const char *cell)
{
    char *row = row_of_note(note, strlen(note));
    char *want = xasprintf(",,,,,,,,,,,,,%s,,,,,,\r\n", cell);
    cr_assert_str_eq(row, want, "note %s", note);
    free(want);
    free(row);
}

Test(incidentlog, csv_header)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    incidentlog_csv_header(f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_str_eq(text, "at,incident,seq,what,account,serial,device,kind,channel,rule,severity,"
                           "receivers,by,note,value,limit,peak,duration,event_time,text\r\n");
    free(text);
}

Test(incidentlog, csv_line_with_every_member)
{
    char *row =
        csv_of("{\"at\":1795000000,\"incident\":\"12\",\"seq\":3,\"what\":\"acknowledged\","
               "\"account\":\"lab\",\"serial\":\"5214000A\",\"device\":\"Freezer -80 A\","
               "\"kind\":\"ch1\",\"channel\":1,\"rule\":\"freezers\",\"severity\":\"critical\","
               "\"receivers\":[\"oncall-slack\",\"oncall-mail\"],\"by\":\"night shift\","
               "\"note\":\"moving the samples, \\\"all\\\" of them\\nto freezer B\","
               "\"value\":-68.1,\"limit\":-75,\"peak\":\"-68.1\xc2\xb0"
               "C\",\"duration\":2040,"
               "\"event_time\":1794998000,"
               "\"text\":\"=HYPERLINK(\\\"http://x.example\\\",\\\"see\\\")\"}");
    cr_assert_str_eq(row, "2026-11-18T11:06:40Z,12,3,acknowledged,lab,5214000A,Freezer -80 A,"
                          "ch1,1,freezers,critical,oncall-slack oncall-mail,night shift,"
                          "\"moving the samples, \"\"all\"\" of them\nto freezer B\","
                          "-68.1,-75,-68.1\xc2\xb0"
                          "C,2040,2026-11-18T10:33:20Z,"
                          "\"'=HYPERLINK(\"\"http://x.example\"\",\"\"see\"\")\"\r\n");
    free(row);
}

Test(incidentlog, csv_missing_and_odd_members)
{
    char *row = csv_of("{\"at\":\"soon\",\"incident\":\"1\",\"seq\":1,\"channel\":null,"
                       "\"receivers\":\"everyone\",\"value\":true,\"limit\":{\"a\":1},"
                       "\"event_time\":-1}");
    cr_assert_str_eq(row, "soon,1,1,,,,,,,,,everyone,,,true,\"{\"\"a\"\":1}\",,,"
                          "1969-12-31T23:59:59Z,\r\n");
    free(row);
}

Test(incidentlog, csv_cells_cannot_be_formulas)
{
    expect_note_cell("=1+1", "'=1+1");
    expect_note_cell("@x", "'@x");
    expect_note_cell("+1", "'+1");
    expect_note_cell("-x", "'-x");
    expect_note_cell("-", "'-");
    expect_note_cell("\tx", "'\tx");
    expect_note_cell("\r=1", "\"'\r=1\"");
    expect_note_cell("  =1", "'  =1");
    expect_note_cell("\n@x", "\"'\n@x\"");
    expect_note_cell("-1+HYPERLINK(\"http://x.example\")",
                     "\"'-1+HYPERLINK(\"\"http://x.example\"\")\"");
    expect_note_cell("-2*A1", "'-2*A1");
    expect_note_cell("\x1b=1", "' =1");
    /* What cannot be a formula stays as it is. */
    expect_note_cell("-68.1\xc2\xb0"
                     "C",
                     "-68.1\xc2\xb0"
                     "C");
    expect_note_cell("-3 min", "-3 min");
    expect_note_cell("a = b", "a = b");
    expect_note_cell("ACK 4821", "ACK 4821");
}

Test(incidentlog, csv_cells_are_valid_utf8_without_controls)
{
    expect_note_cell("bad \xff byte", "bad \xef\xbf\xbd byte");
    expect_note_cell("esc\x1b[2J", "esc [2J");
    expect_note_cell("c1 \xc2\x9b", "c1  ");
    char *row = row_of_note("a\0b", 3);
    cr_assert_str_eq(row, ",,,,,,,,,,,,,a\xef\xbf\xbd"
                          "b,,,,,,\r\n");
    free(row);
}

Test(incidentlog, csv_note_comes_back_whole_through_pythons_csv)
{
    static const char note[] = "moved to freezer B, shelf 2; \"urgent\"\r\nline two\nline 3, end";
    char *csv = xasprintf("%s/out.csv", dir);
    FILE *f = fopen(csv, "w");
    cr_assert_not_null(f);
    incidentlog_csv_header(f);
    struct json_object *line = json_object_new_object();
    json_object_object_add(line, "at", json_object_new_int64(1795000000));
    json_object_object_add(line, "incident", json_object_new_string("12"));
    json_object_object_add(line, "note", json_object_new_string(note));
    json_object_object_add(line, "text", json_object_new_string("=cmd|' /C calc'!A0"));
    incidentlog_csv_line(f, line);
    incidentlog_csv_line(f, line);
    cr_assert_eq(fclose(f), 0);
    json_object_put(line);

    const char *argv[] = {"python3", "-c",
                          "import csv, json, sys\n"
                          "with open(sys.argv[1], newline='', encoding='utf-8') as f:\n"
                          "    print(json.dumps(list(csv.reader(f))))\n",
                          csv, NULL};
    struct cmd_result r = cmd_run(60, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct json_object *rows = json_tokener_parse(r.out);
    cr_assert_not_null(rows, "%s", r.out);
    cr_assert_eq(json_object_array_length(rows), 3);
    for (size_t i = 1; i < 3; i++) {
        struct json_object *row = json_object_array_get_idx(rows, i);
        cr_assert_eq(json_object_array_length(row), 20);
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(row, 0)),
                         "2026-11-18T11:06:40Z");
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(row, 13)), note);
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(row, 19)),
                         "'=cmd|' /C calc'!A0");
    }
    json_object_put(rows);
    cmd_result_free(&r);
    free(csv);
}
