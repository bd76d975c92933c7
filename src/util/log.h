/* Log lines on stderr: "wsrelay: LEVEL: message", one line per event worth
 * knowing. Under systemd the journal adds the time; when stderr is the
 * journal's stream ($JOURNAL_STREAM, see log_msg), each line starts with
 * its syslog priority ("<4>") so that `journalctl -p warning` finds it,
 * and without "wsrelay: ", which the journal shows already.
 * `-v` shows debug lines, `-q` only warnings and errors. Never pass a
 * secret to these; a URL goes through http_redact_url (notify/http.h). */
#ifndef WSRELAY_LOG_H
#define WSRELAY_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Lines below `level` are dropped. The default is LOG_INFO. */
void log_set_level(enum log_level level);

/* Writes "wsrelay: LEVEL: message\n" to stderr, unless `level` is below
 * the threshold. When $JOURNAL_STREAM is "DEV:INO" and names stderr's
 * device and inode (fstat), the line is "<P>LEVEL: message\n" instead,
 * with the level's syslog priority: "<7>" debug, "<6>" info, "<4>"
 * warning, "<3>" error (the journal adds the program's name). A value
 * that is missing, malformed or names another file changes nothing. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes "wsrelay: message\n" to stderr ("<P>message\n" to the journal,
 * as log_msg does), whatever the threshold: the command line's
 * own error messages (a configuration that does not load), which keep
 * their plain form on a terminal but must reach `journalctl -p err`. */
void log_plain(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
