/* util/strmap.h: every key put is found with its last index, no other is,
 * through the growth of the table. */
#include "util/strmap.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

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
