/* What the readers of native sections (section.h: struct state_native)
 * share: where a reader is, for its messages, and the one way a member is
 * read and a failure named, in the state file and in the fleet file
 * alike. Below every section: native.c calls none of them. */
#ifndef WSRELAY_STATE_NATIVE_H
#define WSRELAY_STATE_NATIVE_H

#include "state/section.h"
#include "util/err.h"
#include "util/jscan.h"

#include <stdbool.h>
#include <stddef.h>

/* Where a native section's reader is, for its messages: a chain from the
 * innermost member or item out to the section's member, built on the
 * stack as the reader descends and formatted only when something fails
 * ("watch.5214000A.ch[0].value"). */
struct where {
    const struct where *up; /* NULL: the section's member itself */
    const char *key;        /* a member's name; NULL for an item of an array */
    size_t index;           /* the item's position */
};

/* Fails the scan with `what` at `at`: "WHERE: WHAT (byte N)", or, when
 * the text itself was broken or ends there, "WHERE: byte N: WHY".
 * Returns -1. */
int native_fail(struct jscan *js, const struct where *at, const char *what, struct err *e);

/* Reads the member `js` is on with `nat`'s reader: -1 with the reader's
 * message, or, when the scan itself stopped (a truncated file),
 * "SECTION: why". For the state file and the fleet file alike. */
int native_read(const struct state_native *nat, struct state *s, struct jscan *js, bool merge,
                struct err *e);

#endif
