/* Starting and stopping the misbehaving SMTP server. */
#include "brokensmtp.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define START_TIMEOUT_MS 15000

void brokensmtp_start(struct brokensmtp *b, const char *dir, const char *mode, int drip_ms,
                      int lifetime_s)
{
    memset(b, 0, sizeof *b);
    b->dir = xasprintf("%s/brokensmtp", dir);
    char *port_file = xasprintf("%s/brokensmtp.port", dir);
    char *drip = xasprintf("%d", drip_ms);
    char *lifetime = xasprintf("%d", lifetime_s);
    unlink(port_file);
    char *argv[] = {(char *)PYTHON,
                    (char *)WSRELAY_SOURCE_DIR "/tests/support/brokensmtp.py",
                    (char *)"--dir",
                    b->dir,
                    (char *)"--port-file",
                    port_file,
                    (char *)"--mode",
                    (char *)mode,
                    (char *)"--drip-ms",
                    drip,
                    (char *)"--lifetime",
                    lifetime,
                    NULL};
    cr_assert_eq(access(PYTHON, X_OK), 0, "%s is missing", PYTHON);
    proc_start(&b->proc, argv, NULL, dir);
    for (int waited = 0; !(b->port = test_read_port(port_file)); waited += 10) {
        int status = proc_poll(&b->proc);
        if (status >= 0 || waited >= START_TIMEOUT_MS) {
            char *err = proc_stderr(&b->proc);
            cr_log_error("brokensmtp.py stderr:\n%.4000s", err);
            free(err);
            cr_assert_fail("brokensmtp.py %s",
                           status >= 0 ? "exited before listening" : "did not listen within 15 s");
        }
        test_sleep_ms(10);
    }
    free(port_file);
    free(drip);
    free(lifetime);
}

void brokensmtp_stop(struct brokensmtp *b)
{
    if (!b || !b->dir)
        return;
    proc_stop(&b->proc);
    free(b->dir);
    memset(b, 0, sizeof *b);
}

char *brokensmtp_log(const struct brokensmtp *b)
{
    char *path = xasprintf("%s/log", b->dir);
    char *text = read_file_str(path);
    free(path);
    return text ? text : xstrdup("");
}
