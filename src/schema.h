/* Reading a YAML file into C structs by tables of rows.
 *
 * A `struct schema` describes one C struct: a row (`struct key`) per key of
 * the mapping that fills it, with the key's kind, flags, default, bounds,
 * value check and help text. schema_parse walks a mapping against those
 * rows; schema_clear frees by the same rows, and schema_reference prints
 * them. The module knows no key of any particular file: what a value must
 * be beyond its kind is a row's `check`, what depends on several keys is a
 * schema's `check` and `finish`.
 *
 * What the reading does for every table alike: unknown keys, a key given
 * twice, a missing required key and two keys of one group are errors;
 * strings take ${NAME} from the environment (an unset variable is an
 * error; $${ is a literal ${) unless the file is read SCHEMA_LITERAL; a
 * *_file row (K_SECRET_FILE) reads its value from a file, with a warning
 * (once per file) when group or others can read that file. A secret
 * (F_SECRET) loses the whitespace at its end, may hold no control
 * character, and no part of it, nor the name of a variable in it, is ever
 * put in a message.
 * Every message is "FILE:LINE:COL: KEY: what is wrong", KEY being the path
 * of the key read ("receivers[1].webhook.url"). */
#ifndef WSRELAY_SCHEMA_H
#define WSRELAY_SCHEMA_H

#include "util/buf.h"
#include "util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/* How a key's YAML value becomes a C value, and where that value lives. */
enum key_kind {
    K_STRING,       /* char *: a string, ${VAR} expanded */
    K_PATH,         /* char *: a path; a relative one is taken from the file's directory,
                       and "-" stays as it is */
    K_SECRET_FILE,  /* char *: the contents of the file the value names */
    K_GLOB,         /* char *: one glob, passed to `check` like a string */
    K_DURATION,     /* long: seconds, written "90s", "30m", "1h"; from `min` to `max`
                       when `max` is not 0 */
    K_BOOL,         /* bool: the plain words true or false */
    K_INT,          /* long: a decimal integer from `min` to `max` */
    K_NUMBER,       /* double: a finite decimal number, "-75", "8.5", "1e3"; and the bool
                       at `count_off` is set when the key is given */
    K_ENUM,         /* an enum (int-sized): the index of the value in `words` */
    K_FLAGS,        /* unsigned: one word of `words` or a non-empty list of them, word i
                       setting bit 1 << i; left out, 0 */
    K_GLOBS,        /* char ** and a size_t count: one string or a list of strings, each
                       passed to `check`; an empty list unless F_NOT_EMPTY */
    K_STRINGS,      /* like K_GLOBS, but a list must not be empty */
    K_LIST,         /* an array of `sub` structs and a size_t count: a non-empty list */
    K_AUTO_OR_LIST, /* the word "auto" (the list stays empty) or a K_LIST */
    K_MAP,          /* a `sub` struct embedded at `off` */
    K_HEADERS,      /* an array of `sub` structs and a size_t count: HTTP header names
                       (RFC 9110 tokens, unique ignoring case, each passed to `check`)
                       mapped to non-empty values; a header's name is stored where the
                       first row of `sub` says, its value where the second says (a secret
                       when that row has F_SECRET) */
};

enum {
    F_REQUIRED = 1 << 0,
    F_SECRET = 1 << 1,         /* never echoed; may not contain a line break (for a K_SECRET_FILE
                                  row: the file holds a secret, its path is not one) */
    F_UNIQUE = 1 << 2,         /* unique among the elements of the enclosing list */
    F_GROUP_OPTIONAL = 1 << 3, /* the key's group may be left out: at most one of it */
    F_NOT_EMPTY = 1 << 4,      /* K_GLOBS: an empty list is an error, not "all" */
    F_DEFAULTS = 1 << 5,       /* K_MAP: when the mapping is absent, its keys take their defaults */
};

struct schema;

/* One key of a mapping: a row of a table. */
struct key {
    const char *name;
    enum key_kind kind;
    unsigned flags;
    int group;                /* non-zero: exactly one key of this group must be given */
    size_t off;               /* where the value is stored */
    size_t count_off;         /* K_GLOBS, K_LIST, K_AUTO_OR_LIST, K_HEADERS: the element count;
                                 K_NUMBER: a bool, true when the key is given */
    const char *def;          /* default, as it would be written in the file */
    long min, max;            /* K_INT, and K_DURATION when max is not 0: the bounds */
    const char *const *words; /* K_ENUM, K_FLAGS: the values, NULL-terminated, in enum
                                 (bit) order */
    const char *shape;        /* K_AUTO_OR_LIST: how an item is written, for the message a word
                                 other than auto gets: "{serial, base}" */
    /* -1 with what is wrong in e (never quoting a secret); may normalise the
     * value in place. K_HEADERS: gets each header's name. */
    int (*check)(char *value, struct err *e);
    const struct schema *sub;
    const char *help;
};

/* One C struct and the keys of the mapping that fills it. */
struct schema {
    const char *what; /* names an element in messages: "duplicate receiver name" */
    const struct key *keys;
    size_t n_keys;
    size_t size;
    void (*finish)(void *obj); /* fills in what depends on several keys */
    /* Checks what depends on several keys, once all are read: -1 with what is
     * wrong in e, and in *off the `off` of the key to point at. */
    int (*check)(const void *obj, size_t *off, struct err *e);
};

/* schema_open's flags. */
enum {
    SCHEMA_LITERAL = 1 << 0, /* no ${VAR} expansion ('$' belongs to the values, as in
                                patterns), and no secret written out is counted */
};

/* One YAML file being read, and where in it the reading is (the key path
 * that messages name). */
struct schema_doc;

/* Reads the YAML file `path` (util/yamlfile.h: at most `max_bytes`, within
 * its limits of nesting and aliases). On success *out belongs to the caller
 * (schema_close). On failure returns -1 with "PATH: reason" or
 * "PATH:LINE:COL: problem" in `e`, and *out is NULL. */
int schema_open(struct schema_doc **out, const char *path, size_t max_bytes, unsigned flags,
                struct err *e);

/* Frees the document and what it remembers (the secret files warned
 * about). Accepts NULL. */
void schema_close(struct schema_doc *d);

/* The document's top node, or NULL when the file holds none; the node and
 * every node reached from it belong to `d`. */
yaml_node_t *schema_root(struct schema_doc *d);

/* The node numbered `id` (a sequence item or a mapping pair's key or
 * value), belonging to `d`. */
yaml_node_t *schema_node(struct schema_doc *d, int id);

/* The value node of key `name` in mapping `map`, or NULL when it has no
 * such key; it belongs to `d`. */
yaml_node_t *schema_lookup(struct schema_doc *d, yaml_node_t *map, const char *name);

/* True for a plain empty scalar, `~` or `null`: YAML's way of writing nothing. */
bool schema_is_null(const yaml_node_t *n);

/* What `n` is, for "got ..." in messages: "a mapping", "a list", "an empty
 * value" or "a string". A static string. */
const char *schema_describe(const yaml_node_t *n);

/* Reads the scalar `n` as a K_PATH row does (${NAME} expanded, a relative
 * path taken from the file's directory) into *out, which the caller
 * frees: for a program that needs one path of a file and not the rest
 * (src/front.c). On failure returns -1 with "FILE:LINE:COL: message". */
int schema_path(char **out, struct schema_doc *d, yaml_node_t *n, struct err *e);

/* Fills the struct at `out` from mapping `map` by the rows of `s`: checks
 * the keys, reads each value (sub-schemas too), stores the defaults of the
 * keys left out, then runs s->check and s->finish. What it stores belongs
 * to the struct (schema_clear), on failure too. On failure returns -1 with
 * "FILE:LINE:COL: KEY: message" in `e` (of the first mistake, or with
 * schema_collect the last; the list has them all). */
int schema_parse(void *out, const struct schema *s, struct schema_doc *d, yaml_node_t *map,
                 struct err *e);

/* Frees what the fields of `obj` hold by the rows of `s` (sub-schemas too)
 * and leaves those pointers NULL and counts 0; `obj` itself is the caller's.
 * A zeroed struct and NULL are fine. */
void schema_clear(const struct schema *s, void *obj);

/* Appends to the key path that messages name (printf-style, e.g.
 * "[%zu]" or "rule '%s'"), cut short at 511 bytes. Returns the mark to
 * give schema_pop to take it off again. */
size_t schema_push(struct schema_doc *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends key `name` to the key path, after a '.' unless the path is
 * empty. Returns the mark for schema_pop. */
size_t schema_push_key(struct schema_doc *d, const char *name);

/* Cuts the key path back to where it was when `mark` was returned. */
void schema_pop(struct schema_doc *d, size_t mark);

/* Every mistake of one pass over one or more files, for `wsrelay check`:
 * the messages, a line each, in the order found, at most
 * SCHEMA_ERRORS_MAX + 1: the first SCHEMA_ERRORS_MAX are shown, one more
 * tells that there were more than that. Zeroed is empty. */
#define SCHEMA_ERRORS_MAX 50
struct schema_errors {
    struct buf lines; /* valid when n > 0 */
    size_t n;
};

/* Adds a message (one line, without its newline); past SCHEMA_ERRORS_MAX +
 * 1, nothing. */
void schema_errors_add(struct schema_errors *list, const char *msg);

/* Frees the lines; accepts NULL. */
void schema_errors_free(struct schema_errors *list);

/* From now on, every message of `d` goes to `list` too (which must outlive
 * the reading), and schema_parse goes on after a mistake to find the next:
 * a key that is wrong is left out and the others read, an item of a list
 * that is wrong is left out and the next read, until SCHEMA_ERRORS_MAX + 1. A
 * mapping with a mistake skips its schema's check and finish (they would
 * see keys missing). schema_parse still returns -1 when anything was
 * wrong, with the last message in `e`. */
void schema_collect(struct schema_doc *d, struct schema_errors *list);

/* True when `d` collects its mistakes and the list has room for more: a
 * caller that checks more itself (names across files) goes on after one. */
bool schema_carry_on(const struct schema_doc *d);

/* Puts "FILE:LINE:COL: KEY: message" in `e`, `at` being where the problem
 * is and KEY the current key path (left out when empty). Returns -1. */
int schema_fail(struct schema_doc *d, yaml_mark_t at, struct err *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether two of the `n` strings of `values` are equal (ignoring ASCII
 * case when `nocase`); NULL entries are skipped. If so, sets *second to the
 * smallest index whose string an earlier one has, and *first to the
 * earliest of those. Costs n log n, not the square of n. */
bool schema_find_repeat(size_t *first, size_t *second, const char *const *values, size_t n,
                        bool nocase);

/* Warns (log_warn) when the file gives "other" any permission and holds
 * secrets written out in it, rather than from ${VAR} or a *_file key; the
 * warning names the key of the first. For a file read without
 * SCHEMA_LITERAL, after schema_parse. */
void schema_warn_exposed(const struct schema_doc *d);

/* Every key of `s` and of its sub-schemas with its kind, bounds, flags,
 * default and help: "accounts[].login_id (string; required)" and the help
 * on the next line, indented. The caller frees the string. */
char *schema_reference(const struct schema *s);

#endif
