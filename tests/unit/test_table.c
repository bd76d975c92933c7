/* Tests of util/table.c: columns as wide as their widest cell in display
 * columns, right alignment, and lines without trailing spaces. */
#include "util/buf.h"
#include "util/table.h"

#include <criterion/criterion.h>
#include <stdlib.h>

TestSuite(table, .timeout = 20);

static char *render(const struct table *t)
{
    struct buf b;
    buf_init(&b, 0);
    table_render(&b, t);
    return buf_steal(&b);
}

Test(table, lines_up_wide_characters)
{
    struct table *t = table_new(3);
    table_add(t, (const char *const[]){"NAME", "VALUE", "NOTE"});
    table_add(t, (const char *const[]){"冷蔵庫 2F", "-18.5 °C", "ok"});
    table_add(t, (const char *const[]){"Freezer", "7 °C", NULL});
    table_add(t, (const char *const[]){"ＡＢ", NULL, "x"});
    cr_assert_eq(table_rows(t), 4);
    char *text = render(t);
    cr_assert_str_eq(text, "NAME       VALUE     NOTE\n"
                           "冷蔵庫 2F  -18.5 °C  ok\n"
                           "Freezer    7 °C\n"
                           "ＡＢ                 x\n");
    free(text);
    table_free(t);
}

Test(table, right_aligned_columns)
{
    struct table *t = table_new(2);
    table_align_right(t, 1);
    table_align_right(t, 7); /* no such column: nothing */
    table_add(t, (const char *const[]){"A", "BATTERY"});
    table_add(t, (const char *const[]){"温度", "5"});
    table_add(t, (const char *const[]){"B", ""});
    char *text = render(t);
    cr_assert_str_eq(text, "A     BATTERY\n"
                           "温度        5\n"
                           "B\n");
    free(text);
    table_free(t);
}

Test(table, empty_table_renders_nothing)
{
    struct table *t = table_new(0);
    char *text = render(t);
    cr_assert_str_eq(text, "");
    free(text);
    table_free(t);
    table_free(NULL);
}
