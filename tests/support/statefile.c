/* Opening and saving the state file where a failure ends the test. */
#include "statefile.h"
#include "util/err.h"

#include <criterion/criterion.h>
#include <stddef.h>

struct state *state_open_ok(const char *path)
{
    struct state *s = NULL;
    struct err e = {{0}};
    int rc = state_open(&s, path, 0, &e);
    cr_assert_eq(rc, 0, "state_open: %s", e.msg);
    cr_assert_not_null(s);
    return s;
}

void state_save_ok(struct state *s)
{
    struct err e = {{0}};
    cr_assert_eq(state_save(s, &e), 0, "state_save: %s", e.msg);
}

struct state *state_reopen_ok(struct state *s, const char *path)
{
    state_save_ok(s);
    state_close(s);
    return state_open_ok(path);
}
