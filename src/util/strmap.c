/* A string-to-index map with open addressing (strmap.h). */
#include "util/strmap.h"

#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct strmap_slot {
    const char *key; /* NULL: empty; a copy in one of the map's blocks */
    uint64_t hash;   /* of key: a probe compares it before the key, and growing
                        needs no key read again */
    size_t index;
};

/* A block of copied keys. */
struct strmap_keys {
    struct strmap_keys *next;
    size_t used, size;
    char data[];
};

#define KEYS_BLOCK 4000 /* bytes of keys a block holds, unless one key is longer */

/* A copy of `key` (`len` bytes) in the map's blocks. */
static const char *keep_key(struct strmap *m, const char *key, size_t len)
{
    struct strmap_keys *b = m->keys;
    if (!b || b->size - b->used < len + 1) {
        size_t size = len + 1 > KEYS_BLOCK ? len + 1 : KEYS_BLOCK;
        b = xmalloc(sizeof *b + size);
        b->next = m->keys;
        b->used = 0;
        b->size = size;
        m->keys = b;
    }
    char *copy = b->data + b->used;
    memcpy(copy, key, len + 1);
    b->used += len + 1;
    return copy;
}

static uint64_t hash_of(const char *key)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The slot of `key` (whose hash is `h`), or the empty slot where it would
 * go. */
static struct strmap_slot *slot_of(const struct strmap *m, const char *key, uint64_t h)
{
    size_t i = (size_t)h & (m->cap - 1);
    while (m->slots[i].key && (m->slots[i].hash != h || strcmp(m->slots[i].key, key) != 0))
        i = (i + 1) & (m->cap - 1);
    return &m->slots[i];
}

bool strmap_get(const struct strmap *m, const char *key, size_t *out)
{
    if (!m->cap)
        return false;
    const struct strmap_slot *s = slot_of(m, key, hash_of(key));
    if (!s->key)
        return false;
    *out = s->index;
    return true;
}

static void grow(struct strmap *m)
{
    struct strmap old = *m;
    m->cap = old.cap ? old.cap * 2 : 16;
    m->slots = xcalloc(m->cap, sizeof *m->slots);
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slots[i].key)
            continue;
        size_t k = (size_t)old.slots[i].hash & (m->cap - 1); /* keys are unique: no compare */
        while (m->slots[k].key)
            k = (k + 1) & (m->cap - 1);
        m->slots[k] = old.slots[i];
    }
    free(old.slots);
}

void strmap_put(struct strmap *m, const char *key, size_t index)
{
    if ((m->n + 1) * 2 > m->cap) /* at most half full: short probes */
        grow(m);
    uint64_t h = hash_of(key);
    struct strmap_slot *s = slot_of(m, key, h);
    if (!s->key) {
        s->key = keep_key(m, key, strlen(key));
        s->hash = h;
        m->n++;
    }
    s->index = index;
}

void strmap_clear(struct strmap *m)
{
    for (struct strmap_keys *b = m->keys, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(m->slots);
    *m = (struct strmap){0};
}
