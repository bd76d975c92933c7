/* util/strmap.h: every key put is found with its last index, no other is,
 * through the growth of the table. */
#include "util/strmap.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(strmap, an_empty_map_has_nothing)
{
    struct strmap m = {0};
    size_t i = 7;
    cr_expect(!strmap_get(&m, "", &i));
    cr_expect(!strmap_get(&m, "50000000", &i));
    cr_expect_eq(i, 7);
    strmap_clear(&m);
}

/* Serials as a fleet has them (close to each other, so their hashes are
 * too), put twice with another index the second time, through many
 * growths; then keys never put, and the map cleared. */
Test(strmap, keys_are_found_through_growth_with_their_last_index)
{
    struct strmap m = {0};
    enum { N = 5000 };
    char key[32];
    for (size_t i = 0; i < N; i++) {
        snprintf(key, sizeof key, "%zu", 50000000 + i);
        strmap_put(&m, key, i);
    }
    for (size_t i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "%zu", 50000000 + i);
        strmap_put(&m, key, i + N);
    }
    strmap_put(&m, "", 99);
    cr_expect_eq(m.n, N + 1);
    for (size_t i = 0; i < N; i++) {
        size_t got = 0;
        snprintf(key, sizeof key, "%zu", 50000000 + i);
        cr_assert(strmap_get(&m, key, &got), "%s", key);
        cr_expect_eq(got, i % 2 ? i : i + N, "%s", key);
        snprintf(key, sizeof key, "%zu", 60000000 + i);
        cr_expect(!strmap_get(&m, key, &got), "%s was never put", key);
    }
    size_t got = 0;
    cr_expect(strmap_get(&m, "", &got));
    cr_expect_eq(got, 99);
    cr_expect(!strmap_get(&m, "5000000", &got), "a prefix of a key is not the key");
    strmap_clear(&m);
    cr_expect(!strmap_get(&m, "50000000", &got));
    cr_expect_eq(m.n, 0);
}

/* Keys are copied into the map's blocks: keys longer than a block, and
 * keys that fill many blocks, come back whole after the caller's text is
 * gone; the map may be filled again after it was cleared. */
Test(strmap, keys_of_any_length_are_kept_by_the_map)
{
    struct strmap m = {0};
    enum { LONG = 10000, N = 3000 };
    for (int round = 0; round < 2; round++) {
        char *key = xmalloc(LONG + 1);
        memset(key, 'k', LONG);
        key[LONG] = '\0';
        strmap_put(&m, key, 1);
        key[LONG - 1] = 'j';
        strmap_put(&m, key, 2);
        for (size_t i = 0; i < N; i++) {
            snprintf(key, 64, "device-%zu-with-a-longer-name", i);
            strmap_put(&m, key, i + 10);
        }
        memset(key, 'x', LONG); /* the caller's text changes: the map's copies do not */
        free(key);
        char *want = xmalloc(LONG + 1);
        memset(want, 'k', LONG);
        want[LONG] = '\0';
        size_t got = 0;
        cr_expect(strmap_get(&m, want, &got) && got == 1);
        want[LONG - 1] = 'j';
        cr_expect(strmap_get(&m, want, &got) && got == 2);
        free(want);
        char name[64];
        for (size_t i = 0; i < N; i++) {
            snprintf(name, sizeof name, "device-%zu-with-a-longer-name", i);
            cr_assert(strmap_get(&m, name, &got) && got == i + 10, "%s", name);
        }
        cr_expect_eq(m.n, N + 2);
        strmap_clear(&m);
    }
}
