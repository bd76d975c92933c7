/* A YAML file read into a libyaml document, within limits that keep a
 * broken or hostile file from costing more than its size: how deep lists
 * and mappings nest, how many anchors there are and how much the aliases
 * repeat are bounded and checked on the stream of parser events, before
 * libyaml builds the document. Loading is then linear in the file's size. */
#ifndef WSRELAY_YAMLFILE_H
#define WSRELAY_YAMLFILE_H

#include "util/buf.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <yaml.h>

/* Lists and mappings inside each other, the document's top one being level
 * 1. wsrelay's own files need 6 at most; libyaml's scanner costs the square
 * of the depth, so the reading stops at the first level past this one. */
#define YAMLFILE_MAX_DEPTH 64

/* Anchors (&name) in one document: libyaml looks each alias up among all
 * of them, so their number multiplies the cost of every alias. */
#define YAMLFILE_MAX_ANCHORS 256

/* What all aliases together may repeat, counted as the bytes of the
 * scalars they stand for plus one per node: an alias costs whoever walks
 * the document as much as a copy of its node would, so without a bound a
 * few hundred aliases of aliases make a small file as big as memory. */
#define YAMLFILE_MAX_REPEAT (1024 * 1024)

struct yamlfile {
    struct buf text;     /* the file's bytes */
    mode_t mode;         /* its type and permission bits (st_mode) */
    yaml_document_t doc; /* the document; no root node when the file holds none */
    bool have_doc;
};

/* Reads `path` (a regular file of at most `max_bytes`; file_read's rules)
 * into *y; the file must hold one YAML document or nothing. On failure
 * returns -1 with "PATH: reason" or "PATH:LINE:COL: problem" in `e` (a
 * syntax error, nesting deeper than YAMLFILE_MAX_DEPTH, too many anchors,
 * an alias of a node that holds it, aliases past YAMLFILE_MAX_REPEAT, a
 * second document). Call yamlfile_close whatever this returns. */
int yamlfile_open(struct yamlfile *y, const char *path, size_t max_bytes, struct err *e);

/* Frees what *y holds; *y may be zeroed, or left by a failed open. */
void yamlfile_close(struct yamlfile *y);

#endif
