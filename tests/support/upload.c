/* Gathering request bodies for the test HTTP servers. */
#include "upload.h"
#include "util/xalloc.h"

#include <stdlib.h>

struct upload *upload_feed(void **con_cls, const char *data, size_t *size, size_t cap)
{
    struct upload *up = *con_cls;
    if (!up) {
        up = xcalloc(1, sizeof *up);
        buf_init(&up->body, cap);
        *con_cls = up;
        return NULL;
    }
    if (*size) {
        if (!up->too_big && buf_append(&up->body, data, *size) < 0) {
            /* Keep what fits, so that a test can still see the start. */
            up->too_big = true;
            buf_append(&up->body, data, cap - up->body.len);
        }
        *size = 0;
        return NULL;
    }
    return up;
}

void upload_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)conn;
    (void)why;
    struct upload *up = *con_cls;
    if (up) {
        buf_free(&up->body);
        free(up);
        *con_cls = NULL;
    }
}
