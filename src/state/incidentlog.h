/* The incident log: every incident's timeline (opened, each notice with its
 * receivers, reminders, escalations, acknowledgements, silences, the
 * resolution with its peak and duration), kept beside the state for the
 * record an auditor asks for, and its export as CSV.
 *
 * It is a directory PATH.incidents (mode 0700) beside the state file PATH,
 * holding one file per UTC month, YYYY-MM.jsonl (mode 0600), of JSON lines:
 * one object a line, each with at least an integer "at" (unixtime), a
 * string "incident" (its id) and an integer "seq" (1, 2, … per incident).
 * The files are only ever appended to, never rewritten in place; the log
 * is bounded by age by removing whole month files (incidentlog_prune).
 * Neither the directory nor a file in it is ever followed when it is a
 * symbolic link. The state's lock (PATH.lock) covers the directory: only
 * the process that holds it appends or prunes; a reader holds nothing.
 *
 * What the lines say, and when they are written, is the incidents'
 * business; this module keeps them, reads them back and writes them as
 * CSV. A line is written after the state that records its step is saved:
 * a crash between the two can write a line twice, and a crash during the
 * write can leave the last line torn, so the reader skips a repeated
 * ("incident", "seq") and a damaged line, each costing that line only. */
#ifndef WSRELAY_STATE_INCIDENTLOG_H
#define WSRELAY_STATE_INCIDENTLOG_H

#include "util/err.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The longest line the log takes, newline excluded: a step's line is a few
 * hundred bytes (an alert text is bounded, a note too); a longer one is
 * refused by incidentlog_append and skipped as damaged when read. */
#define INCIDENTLOG_LINE_MAX ((size_t)64 << 10)

/* The most of one month file that incidentlog_read reads: a month of a
 * busy fleet is a few MB (a hundred steps a day at 500 bytes is 1.5 MB);
 * a file beyond this is read up to it, with a warning naming the file. */
#define INCIDENTLOG_FILE_MAX ((size_t)64 << 20)

/* Appends the `n` lines of `lines` (each one JSON object's text, without
 * a newline) to the month file of `at` (wsrelay's clock, the lines'
 * "at"), creating the directory and the file as needed: one write() of
 * the line and its newline each (O_APPEND), then an fsync of the file,
 * and of the directory when the file was created (and of the state's
 * directory when the directory was). A file whose last line was torn by a
 * crash gets its newline first, so that the torn line costs nothing
 * more. The caller holds the state's lock. Nothing is written when a line
 * holds a newline or is longer than INCIDENTLOG_LINE_MAX, or when the
 * directory or the file is a symbolic link or not what it should be
 * ("PATH.incidents/2026-11.jsonl: is a symbolic link (refused: …)"). 0, or
 * -1 with the reason in `e`; when a write fails midway the lines before
 * it are in the file and the one being written may be torn. n == 0 does
 * nothing. */
int incidentlog_append(const char *state_path, long long at, const char *const *lines, size_t n,
                       struct err *e);

/* Removes the month files whose whole month ended before `before` (the
 * first second of the next month is at or before it), and nothing else
 * of the directory; a month that `before` falls into stays whole. A
 * missing directory is nothing to prune. 0, or -1 with the reason in `e`
 * (a symlinked directory, a file that cannot be removed: the files before
 * it are gone). */
int incidentlog_prune(const char *state_path, long long before, struct err *e);

/* Calls `fn` for each line of the log whose "at" is `since` or later,
 * oldest month first and in the order of the file, with the line parsed
 * (borrowed for the call only: json_object_get keeps it) and `ctx`; `fn`
 * returns false to stop the reading there. A line that is not a JSON
 * object with an integer "at", a string "incident" and an integer "seq"
 * (a torn last line, a line longer than INCIDENTLOG_LINE_MAX) is skipped
 * and counted in *out; a line whose ("incident", "seq") an earlier line
 * had is skipped and not counted. A month file larger than
 * INCIDENTLOG_FILE_MAX is read up to it and a warning logged. A missing
 * directory is an empty log. *out is set to 0 first; on -1, with the
 * reason in `e` (a symlinked directory or file, a read that fails), `fn`
 * may have been called for the lines before. A line being appended at the
 * moment of the reading may be counted as damaged. */
int incidentlog_read(size_t *out, const char *state_path, long long since,
                     bool (*fn)(const struct json_object *line, void *ctx), void *ctx,
                     struct err *e);

/* Writes the CSV header row (RFC 4180, UTF-8, CRLF): at, incident, seq,
 * what, account, serial, device, kind, channel, rule, severity,
 * receivers, by, note, value, limit, peak, duration, event_time, text. */
void incidentlog_csv_header(FILE *out);

/* Writes `line` as one CSV row under that header: each member in its
 * column, empty when missing or null; "at" and "event_time" as UTC
 * YYYY-MM-DDTHH:MM:SSZ, the receivers joined by a space, numbers as the
 * JSON wrote them, an object or array elsewhere as its JSON text. Every
 * cell is made safe for a spreadsheet by construction: valid UTF-8 of at
 * most 32767 bytes (cut with "…"), control characters other than tab, CR
 * and LF as spaces; a leading "'" when it starts (after any spaces or line
 * feeds) with '=', '+', '@', a tab or a CR, or with '-' unless a digit
 * follows and nothing after holds an operator ("-68.1°C" stays as it is,
 * "-x" and "-1+A1" do not); quoted when it holds a comma, a quote, a CR or
 * a LF, quotes doubled. Errors of `out` are the caller's to check
 * (ferror). */
void incidentlog_csv_line(FILE *out, const struct json_object *line);

#endif
