/* The rule for device serials, shared by the configuration and the readers
 * of platform replies. */
#include "serial.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdlib.h>

#define SHOW_MAX 48 /* bytes of a bad serial shown in a message */

static int is_alnum(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

int serial_check(const char *s, size_t n, struct err *e)
{
    size_t ok = 0;
    while (ok < n && is_alnum(s[ok]))
        ok++;
    if (n != SERIAL_LEN || ok != n)
        return err_set(e, "expected a device serial: exactly %d letters or digits", SERIAL_LEN);
    return 0;
}

int serial_copy(char **out, const char *s, size_t n, const char *what, struct err *e)
{
    *out = NULL;
    if (serial_check(s, n, e) < 0) {
        char *shown = serial_show(s, n);
        err_set(e, "%s %s is not a device serial (exactly %d letters or digits)", what, shown,
                SERIAL_LEN);
        free(shown);
        return -1;
    }
    *out = xstrndup(s, n);
    return 0;
}

char *serial_show(const char *s, size_t n)
{
    return utf8_escape(s, n, SHOW_MAX);
}
