/* Reading a YAML file into a document in two passes over its bytes: the
 * first only counts (nesting, anchors, what aliases repeat) and stops at
 * the first thing past a limit; the second lets libyaml build the tree. */
#include "util/yamlfile.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "PATH:LINE:COL: problem" from a parser that failed; libyaml counts from
 * 0, people from 1. */
static int syntax_error(struct err *e, const char *path, const yaml_parser_t *p,
                        const struct buf *text)
{
    const char *problem = p->problem ? p->problem : "cannot parse the YAML";
    yaml_mark_t at = p->problem_mark;
    if (p->error == YAML_READER_ERROR) {
        /* Only a byte offset is known: count the lines up to it. */
        size_t line = 0, col = 0;
        for (size_t i = 0; i < p->problem_offset && i < text->len; i++, col++)
            if (text->data[i] == '\n')
                line++, col = (size_t)-1;
        at.line = line;
        at.column = col;
    }
    if (p->context)
        return err_set(e, "%s:%zu:%zu: %s %s at %zu:%zu", path, at.line + 1, at.column + 1, problem,
                       p->context, p->context_mark.line + 1, p->context_mark.column + 1);
    return err_set(e, "%s:%zu:%zu: %s", path, at.line + 1, at.column + 1, problem);
}

/* An anchored node: how much an alias of it repeats, once it is complete. */
struct anchor {
    char *name;
    size_t size;
    bool done; /* false while the node is open: an alias of it would be a cycle */
};

/* The first pass. A node's size is its scalars' bytes plus one per node,
 * aliases counted as copies of their nodes. */
struct shape {
    const char *path;
    struct err *e;
    size_t depth;
    size_t open[YAMLFILE_MAX_DEPTH];      /* the size so far of each open list or mapping */
    long open_anchor[YAMLFILE_MAX_DEPTH]; /* its index in anchors, or -1 */
    struct anchor anchors[YAMLFILE_MAX_ANCHORS];
    size_t n_anchors;
    size_t repeated; /* all aliases together */
};

static int shape_fail(struct shape *s, yaml_mark_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int shape_fail(struct shape *s, yaml_mark_t at, const char *fmt, ...)
{
    char msg[ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(s->e, "%s:%zu:%zu: %s", s->path, at.line + 1, at.column + 1, msg);
}

static void shape_forget_anchors(struct shape *s)
{
    for (size_t i = 0; i < s->n_anchors; i++)
        free(s->anchors[i].name);
    s->n_anchors = 0;
}

/* Records anchor `name` (may be NULL: no anchor); its index, or -1. */
static int shape_anchor(struct shape *s, yaml_mark_t at, const yaml_char_t *name, long *index)
{
    *index = -1;
    if (!name)
        return 0;
    if (s->n_anchors == YAMLFILE_MAX_ANCHORS)
        return shape_fail(s, at, "more than %d anchors (&name) in the document",
                          YAMLFILE_MAX_ANCHORS);
    struct anchor *a = &s->anchors[s->n_anchors];
    a->name = xstrdup((const char *)name);
    a->size = 0;
    a->done = false;
    *index = (long)s->n_anchors++;
    return 0;
}

/* Adds a finished node of `size` to the list or mapping it is in. */
static void shape_add(struct shape *s, size_t size)
{
    if (s->depth)
        s->open[s->depth - 1] += size;
}

static int shape_alias(struct shape *s, yaml_mark_t at, const char *name)
{
    const struct anchor *a = NULL;
    for (size_t i = s->n_anchors; i-- > 0 && !a;)
        if (!strcmp(s->anchors[i].name, name))
            a = &s->anchors[i];
    if (!a)
        return 0; /* the second pass reports it ("found undefined alias") */
    if (!a->done)
        return shape_fail(s, at, "the alias *%s is part of the list or mapping it names", name);
    if (a->size > YAMLFILE_MAX_REPEAT - s->repeated)
        return shape_fail(s, at,
                          "the aliases repeat more than %d bytes of the document; write the "
                          "repeated parts out, or use fewer aliases",
                          YAMLFILE_MAX_REPEAT);
    s->repeated += a->size;
    shape_add(s, a->size);
    return 0;
}

static int shape_event(struct shape *s, const yaml_event_t *ev)
{
    long index;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        shape_forget_anchors(s); /* anchors belong to their document */
        s->depth = 0;
        return 0;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (s->depth == YAMLFILE_MAX_DEPTH)
            return shape_fail(s, ev->start_mark,
                              "lists and mappings nested more than %d levels deep",
                              YAMLFILE_MAX_DEPTH);
        if (shape_anchor(s, ev->start_mark,
                         ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
                                                               : ev->data.mapping_start.anchor,
                         &index) < 0)
            return -1;
        s->open[s->depth] = 1;
        s->open_anchor[s->depth] = index;
        s->depth++;
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
        if (!s->depth)
            return 0;
        s->depth--;
        size_t size = s->open[s->depth];
        index = s->open_anchor[s->depth];
        if (index >= 0) {
            s->anchors[index].size = size;
            s->anchors[index].done = true;
        }
        shape_add(s, size);
        return 0;
    }
    case YAML_SCALAR_EVENT: {
        size_t size = ev->data.scalar.length + 1;
        if (shape_anchor(s, ev->start_mark, ev->data.scalar.anchor, &index) < 0)
            return -1;
        if (index >= 0) {
            s->anchors[index].size = size;
            s->anchors[index].done = true;
        }
        shape_add(s, size);
        return 0;
    }
    case YAML_ALIAS_EVENT:
        return shape_alias(s, ev->start_mark, (const char *)ev->data.alias.anchor);
    default:
        return 0;
    }
}

/* The first pass over y->text. */
static int check_shape(struct yamlfile *y, const char *path, struct err *e)
{
    int rc = -1;
    yaml_parser_t parser;
    struct shape *s = xcalloc(1, sizeof *s);
    s->path = path;
    s->e = e;
    if (!yaml_parser_initialize(&parser))
        xalloc_die();
    yaml_parser_set_input_string(&parser, (const unsigned char *)y->text.data, y->text.len);
    for (bool end = false; !end;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            syntax_error(e, path, &parser, &y->text);
            goto out;
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        int r = shape_event(s, &ev);
        yaml_event_delete(&ev);
        if (r < 0)
            goto out;
    }
    rc = 0;
out:
    yaml_parser_delete(&parser);
    shape_forget_anchors(s);
    free(s);
    return rc;
}

/* The second pass: libyaml's own loader, which must find one document. */
static int load(struct yamlfile *y, const char *path, struct err *e)
{
    int rc = -1;
    yaml_parser_t parser;
    yaml_document_t extra;
    if (!yaml_parser_initialize(&parser))
        xalloc_die();
    yaml_parser_set_input_string(&parser, (const unsigned char *)y->text.data, y->text.len);
    if (!yaml_parser_load(&parser, &y->doc)) {
        syntax_error(e, path, &parser, &y->text);
        goto out;
    }
    y->have_doc = true;
    if (!yaml_parser_load(&parser, &extra)) {
        syntax_error(e, path, &parser, &y->text);
        goto out;
    }
    bool second = yaml_document_get_root_node(&extra) != NULL;
    yaml_mark_t at = extra.start_mark;
    yaml_document_delete(&extra);
    if (second) {
        err_set(e, "%s:%zu:%zu: a second YAML document; the file must hold exactly one", path,
                at.line + 1, at.column + 1);
        goto out;
    }
    rc = 0;
out:
    yaml_parser_delete(&parser);
    return rc;
}

int yamlfile_open(struct yamlfile *y, const char *path, size_t max_bytes, struct err *e)
{
    int rc = -1;
    struct stat st;
    memset(y, 0, sizeof *y);
    buf_init(&y->text, max_bytes);
    int fd = file_open_regular(path, FILE_FOLLOW, &st, e);
    if (fd < 0)
        goto out;
    y->mode = st.st_mode;
    if (file_read_fd(&y->text, fd, path, e) < 0)
        goto out;
    if (check_shape(y, path, e) < 0 || load(y, path, e) < 0)
        goto out;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

void yamlfile_close(struct yamlfile *y)
{
    if (y->have_doc)
        yaml_document_delete(&y->doc);
    y->have_doc = false;
    buf_free(&y->text);
}
