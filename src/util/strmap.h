/* A map from strings to indices: the position of an entry in the caller's
 * own array, found by hash rather than by walking the array. The map
 * copies its keys (into blocks of its own: a map of 2000 serials is a
 * few allocations, not 2000); removing is by rebuilding (strmap_clear,
 * then a put per entry left), which suits arrays that shrink rarely. */
#ifndef WSRELAY_STRMAP_H
#define WSRELAY_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

struct strmap {
    struct strmap_slot *slots; /* NULL until the first put */
    size_t cap;                /* a power of two, or 0 */
    size_t n;
    struct strmap_keys *keys; /* the blocks the keys are copied into, the last first */
};

/* The index stored for `key`, in *out; false when there is none. */
bool strmap_get(const struct strmap *m, const char *key, size_t *out);

/* Stores `index` for `key` (a copy of it), replacing any index it had. */
void strmap_put(struct strmap *m, const char *key, size_t index);

/* Forgets every key; the map may be used again. */
void strmap_clear(struct strmap *m);

#endif
