/* Request bodies of the test HTTP servers (libmicrohttpd), gathered over
 * the access handler's calls with a size cap. Used by wsrelay-sim, the
 * webhook sink and the platform client's test server. */
#ifndef WSRELAY_TEST_UPLOAD_H
#define WSRELAY_TEST_UPLOAD_H

#include "util/buf.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct upload {
    struct buf body; /* what fitted under the cap */
    bool too_big;    /* more was sent than the cap allows */
};

/* Feeds one call of an access handler. Returns NULL while the request is
 * still arriving (the handler then returns MHD_YES at once), and the
 * complete upload when the handler should answer. The upload belongs to
 * the connection; upload_completed frees it. `cap` 0: no cap. */
struct upload *upload_feed(void **con_cls, const char *data, size_t *size, size_t cap);

/* The MHD_OPTION_NOTIFY_COMPLETED callback that frees the upload. */
void upload_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode why);

#endif
