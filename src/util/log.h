/* Log lines on stderr: "wsrelay: LEVEL: message". Under systemd the journal
 * adds the time; `-v` shows debug lines. Never pass a secret to these. */
#ifndef WSRELAY_LOG_H
#define WSRELAY_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Lines below `level` are dropped. The default is LOG_INFO. */
void log_set_level(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
