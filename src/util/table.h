/* Text tables for a terminal: rows of cells in columns, each column as
 * wide as its widest cell in display columns (util/utf8.h, utf8_width),
 * so that names in Japanese line up with names in Latin letters. */
#ifndef WSRELAY_TABLE_H
#define WSRELAY_TABLE_H

#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>

struct table;

/* An empty table of `n_cols` columns (at least 1), every column aligned
 * to the left. The caller frees it with table_free. */
struct table *table_new(size_t n_cols);

void table_free(struct table *t);

/* Aligns column `col` to the right (for numbers); nothing when there is
 * no such column. */
void table_align_right(struct table *t, size_t col);

/* Adds a row of n_cols cells, copied; a NULL cell is empty. */
void table_add(struct table *t, const char *const *cells);

/* The rows added so far. */
size_t table_rows(const struct table *t);

/* Appends the table to `b`: one line per row, ending in "\n", columns two
 * spaces apart, each cell padded to its column's width but the last
 * cell of a line, which has no trailing spaces. */
void table_render(struct buf *b, const struct table *t);

#endif
