/* Rows of cells laid out in columns by their display width. */
#include "util/table.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_GAP 2 /* spaces between two columns */

struct table {
    size_t n_cols;
    bool *right;  /* per column */
    char **cells; /* n_rows * n_cols, row by row */
    size_t n_rows;
};

struct table *table_new(size_t n_cols)
{
    struct table *t = xcalloc(1, sizeof *t);
    t->n_cols = n_cols ? n_cols : 1;
    t->right = xcalloc(t->n_cols, sizeof *t->right);
    return t;
}

void table_free(struct table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->right);
    free(t);
}

void table_align_right(struct table *t, size_t col)
{
    if (col < t->n_cols)
        t->right[col] = true;
}

void table_add(struct table *t, const char *const *cells)
{
    t->cells = xreallocarray(t->cells, (t->n_rows + 1) * t->n_cols, sizeof *t->cells);
    char **row = &t->cells[t->n_rows * t->n_cols];
    for (size_t c = 0; c < t->n_cols; c++)
        row[c] = xstrdup(cells[c] ? cells[c] : "");
    t->n_rows++;
}

size_t table_rows(const struct table *t)
{
    return t->n_rows;
}

static void spaces(struct buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf_append(b, " ", 1);
}

void table_render(struct buf *b, const struct table *t)
{
    size_t *width = xcalloc(t->n_cols, sizeof *width);
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++) {
        size_t w = utf8_width(t->cells[i], strlen(t->cells[i]));
        if (w > width[i % t->n_cols])
            width[i % t->n_cols] = w;
    }
    for (size_t r = 0; r < t->n_rows; r++) {
        char **row = &t->cells[r * t->n_cols];
        size_t last = t->n_cols; /* the line ends after the last cell that is not empty */
        while (last > 0 && !*row[last - 1])
            last--;
        for (size_t c = 0; c < last; c++) {
            if (c > 0)
                spaces(b, TABLE_GAP);
            if (t->right[c])
                spaces(b, width[c] - utf8_width(row[c], strlen(row[c])));
            if (!t->right[c] && c + 1 < last)
                utf8_pad(b, row[c], width[c]);
            else
                buf_puts(b, row[c]);
        }
        buf_puts(b, "\n");
    }
    free(width);
}
