/* Mustache templates over json-c values: a compiler that turns template
 * text into a tree of nodes once, checking everything that can be checked
 * without data, and a renderer that walks that tree against a context.
 * The standalone-line rules are applied while compiling, so rendering is
 * a plain walk. */
#include "mustache.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum node_type { NODE_TEXT, NODE_VAR, NODE_SECTION, NODE_INVERTED, NODE_PARTIAL };

struct node {
    enum node_type type;
    size_t pos;        /* offset of the tag (or text) in the template's source */
    const char *text;  /* TEXT: points into the template's source */
    size_t len;        /* TEXT */
    char *name;        /* the tag's name as written, without padding */
    char **parts;      /* VAR, SECTION, INVERTED: the name split at dots */
    size_t n_parts;    /* 0 for "." */
    bool raw;          /* VAR: {{{x}}} or {{&x}} */
    char *indent;      /* PARTIAL: the indentation of a standalone tag, or NULL */
    struct node *kids; /* SECTION, INVERTED */
    size_t n_kids;
};

struct template
{
    char *origin;
    char *src; /* a copy of the text; TEXT nodes point into it */
    size_t len;
    struct node *nodes;
    size_t n;
};

/* Position and messages */

/* LINE and COL (from 1; COL in UTF-8 characters) of byte `pos` of `src`. */
static void line_col(const char *src, size_t pos, unsigned *line, unsigned *col)
{
    unsigned l = 1, c = 1;
    for (size_t i = 0; i < pos; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Sets "ORIGIN:LINE:COL: message"; returns -1. */
static int fail_at(struct err *e, const char *origin, const char *src, size_t pos, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

static int fail_at(struct err *e, const char *origin, const char *src, size_t pos, const char *fmt,
                   ...)
{
    char msg[ERR_MAX];
    unsigned line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    line_col(src, pos, &line, &col);
    return err_set(e, "%s:%u:%u: %s", origin, line, col, msg);
}

/* Nodes */

static void nodes_free(struct node *nodes, size_t n);

/* Frees what `nd` owns, not `nd` itself. */
static void node_clear(struct node *nd)
{
    free(nd->name);
    for (size_t k = 0; k < nd->n_parts; k++)
        free(nd->parts[k]);
    free(nd->parts);
    free(nd->indent);
    nodes_free(nd->kids, nd->n_kids);
    memset(nd, 0, sizeof *nd);
}

static void nodes_free(struct node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        node_clear(&nodes[i]);
    free(nodes);
}

void template_free(struct template *t)
{
    if (!t)
        return;
    nodes_free(t->nodes, t->n);
    free(t->origin);
    free(t->src);
    free(t);
}

const char *template_origin(const struct template *t)
{
    return t->origin;
}

/* Compiling */

/* A section being read, or the template itself at the bottom. */
struct frame {
    struct node *kids;
    size_t n, cap;
    struct node open; /* the section's tag: type, pos, name, parts */
};

struct parser {
    const struct template *t;
    struct err *e;
    const char *otag, *ctag; /* the current delimiters */
    size_t olen, clen;
    struct frame frames[TEMPLATE_MAX_DEPTH + 1];
    size_t depth; /* open sections; frames[0] is the template */
};

static int fail(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, size_t pos, const char *fmt, ...)
{
    char msg[ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail_at(p->e, p->t->origin, p->t->src, pos, "%s", msg);
}

static struct node *add_node(struct parser *p)
{
    struct frame *f = &p->frames[p->depth];
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->kids = xreallocarray(f->kids, f->cap, sizeof *f->kids);
    }
    memset(&f->kids[f->n], 0, sizeof f->kids[f->n]);
    return &f->kids[f->n++];
}

static void add_text(struct parser *p, size_t from, size_t to)
{
    if (to <= from)
        return;
    struct node *nd = add_node(p);
    nd->type = NODE_TEXT;
    nd->pos = from;
    nd->text = p->t->src + from;
    nd->len = to - from;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Where `what` next occurs at or after `from`, or (size_t)-1. */
static size_t find(const struct parser *p, size_t from, const char *what, size_t len)
{
    const struct template *t = p->t;
    while (from < t->len && t->len - from >= len) {
        const char *hit = memchr(t->src + from, what[0], t->len - from - len + 1);
        if (!hit)
            break;
        from = (size_t)(hit - t->src);
        if (memcmp(hit, what, len) == 0)
            return from;
        from++;
    }
    return (size_t)-1;
}

/* The closing delimiter preceded by `before` (the '}' of {{{x}}}, the '='
 * of {{=a b=}}), searched from `from`; the returned offset is that of the
 * closing delimiter. */
static size_t find_close_after(const struct parser *p, size_t from, char before)
{
    size_t k = from;
    for (;;) {
        k = find(p, k, p->ctag, p->clen);
        if (k == (size_t)-1)
            return k;
        if (k > from && p->t->src[k - 1] == before)
            return k;
        k++;
    }
}

/* Reads the name of a tag, without its padding, and checks that there is
 * one and that it has no whitespace. Unless it is a partial's (a file
 * name), splits it into parts at dots ("." has none) and checks that none
 * is empty. */
static int parse_name(struct parser *p, struct node *nd, size_t tag, const char *s, size_t len)
{
    while (len && is_space(*s)) {
        s++;
        len--;
    }
    while (len && is_space(s[len - 1]))
        len--;
    if (len == 0)
        return fail(p, tag, "empty tag name");
    nd->name = xstrndup(s, len);
    for (size_t i = 0; i < len; i++)
        if (is_space(s[i]) || s[i] == '\0')
            return fail(p, tag, "tag name '%s' contains whitespace", nd->name);
    if (nd->type == NODE_PARTIAL || strcmp(nd->name, ".") == 0)
        return 0;
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += s[i] == '.';
    nd->parts = xcalloc(n, sizeof *nd->parts);
    const char *part = s;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.')
            continue;
        if (s + i == part)
            return fail(p, tag, "malformed name '%s': an empty part between dots", nd->name);
        nd->parts[nd->n_parts++] = xstrndup(part, (size_t)(s + i - part));
        part = s + i + 1;
    }
    return 0;
}

/* {{=OPEN CLOSE=}}: two delimiters without whitespace, separated by it. */
static int set_delimiters(struct parser *p, size_t tag, size_t from, size_t to)
{
    const char *s = p->t->src;
    size_t a = from, b, c, d;
    while (a < to && is_space(s[a]))
        a++;
    b = a;
    while (b < to && !is_space(s[b]))
        b++;
    c = b;
    while (c < to && is_space(s[c]))
        c++;
    d = c;
    while (d < to && !is_space(s[d]))
        d++;
    size_t rest = d;
    while (rest < to && is_space(s[rest]))
        rest++;
    if (b == a || d == c || rest != to)
        return fail(p, tag,
                    "bad delimiter change: expected two delimiters separated by a space, as in "
                    "{{=<%% %%>=}}");
    p->otag = s + a;
    p->olen = b - a;
    p->ctag = s + c;
    p->clen = d - c;
    return 0;
}

static int open_section(struct parser *p, size_t tag, enum node_type type, size_t from, size_t to)
{
    if (p->depth == TEMPLATE_MAX_DEPTH)
        return fail(p, tag, "sections nested deeper than %d", TEMPLATE_MAX_DEPTH);
    struct frame *f = &p->frames[++p->depth];
    memset(f, 0, sizeof *f);
    f->open.type = type;
    f->open.pos = tag;
    return parse_name(p, &f->open, tag, p->t->src + from, to - from);
}

static int close_section(struct parser *p, size_t tag, size_t from, size_t to)
{
    int rc = -1;
    struct node closer;
    memset(&closer, 0, sizeof closer);
    if (parse_name(p, &closer, tag, p->t->src + from, to - from) < 0)
        goto out;
    if (p->depth == 0) {
        fail(p, tag, "closing tag '%s' without an open section", closer.name);
        goto out;
    }
    struct frame *f = &p->frames[p->depth];
    if (strcmp(f->open.name, closer.name) != 0) {
        unsigned line, col;
        line_col(p->t->src, f->open.pos, &line, &col);
        fail(p, tag, "closing tag '%s' does not match the open section '%s' (opened at %u:%u)",
             closer.name, f->open.name, line, col);
        goto out;
    }
    struct node section = f->open;
    section.kids = f->kids;
    section.n_kids = f->n;
    memset(f, 0, sizeof *f);
    p->depth--;
    *add_node(p) = section;
    rc = 0;
out:
    node_clear(&closer);
    return rc;
}

static int add_partial(struct parser *p, size_t tag, size_t from, size_t to, size_t indent_from,
                       size_t indent_to)
{
    struct node *nd = add_node(p);
    nd->type = NODE_PARTIAL;
    nd->pos = tag;
    if (parse_name(p, nd, tag, p->t->src + from, to - from) < 0)
        return -1;
    if (nd->name[0] == '.' || strchr(nd->name, '/') || strchr(nd->name, '\\'))
        return fail(p, tag, "partial name '%s' is not a plain file name", nd->name);
    if (indent_to > indent_from)
        nd->indent = xstrndup(p->t->src + indent_from, indent_to - indent_from);
    return 0;
}

/* Is the tag at [tag, end) alone on its line but for spaces and tabs? If
 * so, *line_start is where its line begins and *after where the next line
 * does (or the end of the text). `text_start` is where the text since the
 * previous tag begins: nothing before it may be on the tag's line. */
static bool standalone(const struct parser *p, size_t text_start, size_t tag, size_t end,
                       size_t *line_start, size_t *after)
{
    const char *s = p->t->src;
    size_t i = tag;
    while (i > text_start && (s[i - 1] == ' ' || s[i - 1] == '\t'))
        i--;
    if (!(i == 0 || s[i - 1] == '\n'))
        return false;
    size_t q = end;
    while (q < p->t->len && (s[q] == ' ' || s[q] == '\t'))
        q++;
    if (q < p->t->len && s[q] == '\n')
        q++;
    else if (q + 1 < p->t->len && s[q] == '\r' && s[q + 1] == '\n')
        q += 2;
    else if (q != p->t->len)
        return false;
    *line_start = i;
    *after = q;
    return true;
}

/* Reads the tag at `tag` (where the opening delimiter begins): adds the
 * text from *text_start to it (less the indentation of a standalone tag),
 * then the tag's node, and moves *text_start past the tag (and past the
 * rest of its line when it stands alone). */
static int parse_tag(struct parser *p, size_t tag, size_t *text_start)
{
    const struct template *t = p->t;
    const char *s = t->src;
    size_t c = tag + p->olen;
    char sigil = c < t->len ? s[c] : '\0';
    size_t from = c, to, end, close;
    bool pair = sigil == '{' || sigil == '='; /* {{{x}}} and {{=a b=}} */
    if (sigil && strchr("{=&#^/!>", sigil))
        from = c + 1;
    close = pair ? find_close_after(p, from, sigil == '{' ? '}' : '=')
                 : find(p, from, p->ctag, p->clen);
    if (close == (size_t)-1)
        return fail(p, tag, "unclosed tag: '%.*s%.*s' without '%.*s%.*s'", (int)p->olen, p->otag,
                    pair ? 1 : 0, &sigil, pair ? 1 : 0, sigil == '{' ? "}" : "=", (int)p->clen,
                    p->ctag);
    to = pair ? close - 1 : close;
    end = close + p->clen;

    size_t line_start = 0, after = end;
    bool alone = sigil && strchr("#^/!>=", sigil) &&
                 standalone(p, *text_start, tag, end, &line_start, &after);
    add_text(p, *text_start, alone ? line_start : tag);
    *text_start = after;

    switch (sigil) {
    case '!':
        return 0;
    case '=':
        return set_delimiters(p, tag, from, to);
    case '#':
        return open_section(p, tag, NODE_SECTION, from, to);
    case '^':
        return open_section(p, tag, NODE_INVERTED, from, to);
    case '/':
        return close_section(p, tag, from, to);
    case '>':
        return add_partial(p, tag, from, to, alone ? line_start : 0, alone ? tag : 0);
    case '$':
    case '<':
        return fail(p, tag, "'%c' tags (template inheritance) are not supported", sigil);
    default: {
        struct node *nd = add_node(p);
        nd->type = NODE_VAR;
        nd->pos = tag;
        nd->raw = sigil == '{' || sigil == '&';
        return parse_name(p, nd, tag, s + from, to - from);
    }
    }
}

static int parse(struct parser *p)
{
    size_t text_start = 0;
    for (;;) {
        size_t tag = find(p, text_start, p->otag, p->olen);
        if (tag == (size_t)-1)
            break;
        if (parse_tag(p, tag, &text_start) < 0)
            return -1;
    }
    add_text(p, text_start, p->t->len);
    if (p->depth > 0)
        return fail(p, p->frames[p->depth].open.pos, "unclosed section '%s'",
                    p->frames[p->depth].open.name);
    return 0;
}

int template_compile(struct template **out, const char *text, size_t len, const char *origin,
                     struct err *e)
{
    int rc = -1;
    struct template *t = xcalloc(1, sizeof *t);
    struct parser *p = xcalloc(1, sizeof *p);
    t->origin = xstrdup(origin ? origin : "template");
    t->src = xmalloc(len + 1);
    if (len)
        memcpy(t->src, text, len);
    t->src[len] = '\0';
    t->len = len;
    p->t = t;
    p->e = e;
    p->otag = "{{";
    p->ctag = "}}";
    p->olen = p->clen = 2;
    if (parse(p) < 0)
        goto out;
    t->nodes = p->frames[0].kids;
    t->n = p->frames[0].n;
    p->frames[0].kids = NULL;
    p->frames[0].n = 0;
    rc = 0;
out:
    for (size_t d = 0; d <= p->depth; d++) {
        struct frame *f = &p->frames[d];
        nodes_free(f->kids, f->n);
        node_clear(&f->open);
    }
    free(p);
    if (rc == 0)
        *out = t;
    else
        template_free(t);
    return rc;
}

int template_each_partial(const struct template *t,
                          int (*fn)(void *ud, const char *name, unsigned line, unsigned col),
                          void *ud)
{
    /* Sections nest at most TEMPLATE_MAX_DEPTH deep: walk with a stack. */
    const struct node *stack_nodes[TEMPLATE_MAX_DEPTH + 1];
    size_t stack_n[TEMPLATE_MAX_DEPTH + 1], stack_i[TEMPLATE_MAX_DEPTH + 1];
    size_t depth = 0;
    stack_nodes[0] = t->nodes;
    stack_n[0] = t->n;
    stack_i[0] = 0;
    for (;;) {
        if (stack_i[depth] == stack_n[depth]) {
            if (depth == 0)
                return 0;
            depth--;
            continue;
        }
        const struct node *nd = &stack_nodes[depth][stack_i[depth]++];
        if (nd->type == NODE_PARTIAL) {
            unsigned line, col;
            line_col(t->src, nd->pos, &line, &col);
            int rc = fn(ud, nd->name, line, col);
            if (rc)
                return rc;
        } else if ((nd->type == NODE_SECTION || nd->type == NODE_INVERTED) && nd->n_kids) {
            depth++;
            stack_nodes[depth] = nd->kids;
            stack_n[depth] = nd->n_kids;
            stack_i[depth] = 0;
        }
    }
}

enum template_escape template_escape_for(const char *filename)
{
    static const struct {
        const char *suffix;
        enum template_escape esc;
    } table[] = {
        {".json", TEMPLATE_ESCAPE_JSON},
        {".html", TEMPLATE_ESCAPE_HTML},
        {".htm", TEMPLATE_ESCAPE_HTML},
        {".txt", TEMPLATE_ESCAPE_TEXT},
    };
    size_t len = filename ? strlen(filename) : 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        size_t n = strlen(table[i].suffix);
        if (len > n && strcasecmp(filename + len - n, table[i].suffix) == 0)
            return table[i].esc;
    }
    return TEMPLATE_ESCAPE_NONE;
}

/* Rendering */

/* A partial compiled during one rendering, kept for its next use. */
struct cached_partial {
    char *name;
    char *indent;       /* "" when not indented */
    struct template *t; /* NULL: there is no such partial */
};

/* The innermost lists being iterated, for @first and @last. */
struct iteration {
    size_t i, n;
};

struct render {
    struct buf *out;
    enum template_escape esc;
    template_partial_fn partials;
    void *ud;
    struct err *e;
    const struct json_object **ctx; /* the context stack, top last; NULL entries allowed */
    size_t n_ctx, cap_ctx;
    struct iteration *iters;
    size_t n_iters, cap_iters;
    struct cached_partial *cache;
    size_t n_cache;
    unsigned partial_depth;
    unsigned long steps;
    struct json_object *yes, *no;
};

static int render_nodes(struct render *r, const struct template *t, const struct node *nodes,
                        size_t n);

static int put(struct render *r, const void *data, size_t len)
{
    if (buf_append(r->out, data, len) < 0)
        return err_set(r->e, "output larger than %zu bytes", r->out->limit);
    return 0;
}

static void push_ctx(struct render *r, const struct json_object *v)
{
    if (r->n_ctx == r->cap_ctx) {
        r->cap_ctx = r->cap_ctx ? r->cap_ctx * 2 : 16;
        r->ctx = xreallocarray(r->ctx, r->cap_ctx, sizeof *r->ctx);
    }
    r->ctx[r->n_ctx++] = v;
}

static int put_json_escaped(struct render *r, const char *s, size_t len)
{
    size_t run = 0; /* bytes from s that need no escaping, not yet written */
    for (size_t i = 0; i < len;) {
        uint32_t c = 0;
        char esc[8];
        const char *rep = NULL;
        size_t n = utf8_decode(&c, s + i, len - i);
        if (n > 1 || (n == 1 && c >= 0x20 && c != '"' && c != '\\')) {
            i += n;
            run += n;
            continue;
        }
        switch (n ? c : 0x80) {
        case '"':
            rep = "\\\"";
            break;
        case '\\':
            rep = "\\\\";
            break;
        case '\b':
            rep = "\\b";
            break;
        case '\f':
            rep = "\\f";
            break;
        case '\n':
            rep = "\\n";
            break;
        case '\r':
            rep = "\\r";
            break;
        case '\t':
            rep = "\\t";
            break;
        case 0x80: /* a byte that is not UTF-8 */
            rep = UTF8_REPLACEMENT;
            break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)c);
            rep = esc;
            break;
        }
        if (put(r, s + i - run, run) < 0 || put(r, rep, strlen(rep)) < 0)
            return -1;
        run = 0;
        i++;
    }
    return put(r, s + len - run, run);
}

/* Writes `s` with the characters that `rep` names replaced: rep(c) returns
 * the replacement of the well-formed character c, or NULL to keep it. A
 * byte that is not UTF-8 becomes U+FFFD. */
static int put_replaced(struct render *r, const char *s, size_t len, const char *(*rep)(uint32_t c))
{
    size_t from = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c = 0;
        size_t n = utf8_decode(&c, s + i, len - i);
        const char *with = n ? rep(c) : UTF8_REPLACEMENT;
        if (!with) {
            i += n;
            continue;
        }
        if (put(r, s + from, i - from) < 0 || put(r, with, strlen(with)) < 0)
            return -1;
        i += n ? n : 1;
        from = i;
    }
    return put(r, s + from, len - from);
}

static const char *text_control(uint32_t c)
{
    return utf8_is_control(c) ? " " : NULL;
}

/* Slack reads &, < and > as the start of its markup in every text of a
 * message ("<!channel>", "<@U123>", "<http://x|click>", "&lt;") and asks
 * for them as these entities, which it shows as the characters. */
static const char *slack_entity(uint32_t c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    default:
        return NULL;
    }
}

/* HTML's: Slack's three, and both quotes for attribute values. */
static const char *html_entity(uint32_t c)
{
    if (c == '"')
        return "&quot;";
    if (c == '\'')
        return "&#39;";
    return slack_entity(c);
}

#define ZWSP "\xE2\x80\x8B" /* U+200B ZERO WIDTH SPACE */

/* True when a line of Markdown that starts at `s` (after its indentation)
 * would start a block: a heading, a quote, a list item, a rule or the
 * underline of a heading. */
static bool starts_block(const char *s, size_t len)
{
    size_t digits = 0;
    if (len == 0)
        return false;
    if (s[0] == '#' || s[0] == '>')
        return true;
    if (strchr("-+*=", s[0]))
        return len == 1 || strchr(" \t\r\n", s[1]) || s[1] == s[0];
    while (digits < len && digits < 10 && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    return digits > 0 && digits < 10 && digits < len && (s[digits] == '.' || s[digits] == ')') &&
           (digits + 1 == len || strchr(" \t\r\n", s[digits + 1]));
}

/* Teams reads the text of a TextBlock and of a Fact as Markdown (a subset
 * of CommonMark: emphasis, lists, links), and its clients do not all read
 * it alike. A value must not make a link, emphasis, a list or a heading:
 * - '\', '*', '_', '~' and '`' get CommonMark's backslash escape, which
 *   shows the character itself;
 * - a ']' is followed by a zero-width space, so that no "[text](url)"
 *   can form (a parser that ignores backslashes still needs "](");
 * - a line that would start a block (the value's first line too: a
 *   value may start a TextBlock) starts with a zero-width space;
 * - "{{" gets a zero-width space between its braces, so that it cannot
 *   call the cards' DATE() and TIME() functions.
 * Zero-width spaces do not show; backslash escapes show as the character
 * on clients that follow CommonMark. */
static void teams_neutral(struct buf *out, const char *s, size_t len)
{
    bool line_start = true;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (line_start && c != ' ' && c != '\t') {
            if (starts_block(s + i, len - i))
                buf_puts(out, ZWSP);
            line_start = false;
        }
        if (c && strchr("\\*_~`", c)) {
            buf_append(out, "\\", 1);
            buf_append(out, &c, 1);
        } else if (c == ']') {
            buf_puts(out, "]" ZWSP);
        } else if (c == '{' && i + 1 < len && s[i + 1] == '{') {
            buf_puts(out, "{" ZWSP);
        } else {
            buf_append(out, &c, 1);
            line_start = c == '\n' || c == '\r' || (line_start && (c == ' ' || c == '\t'));
        }
    }
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Google Chat's markup made inert (TEMPLATE_ESCAPE_GCHAT): only ASCII
 * bytes are looked at, which no byte of a longer UTF-8 character is. */
static void gchat_neutral(struct buf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i], next = i + 1 < len ? s[i + 1] : '\0';
        switch (c) {
        case '*':
            buf_puts(out, "\xE2\x88\x97"); /* U+2217 ASTERISK OPERATOR */
            break;
        case '_':
            buf_puts(out, "\xCB\x8D"); /* U+02CD MODIFIER LETTER LOW MACRON */
            break;
        case '~':
            buf_puts(out, "\xE2\x88\xBC"); /* U+223C TILDE OPERATOR */
            break;
        case '`':
            buf_puts(out, "\xCB\x8B"); /* U+02CB MODIFIER LETTER GRAVE ACCENT */
            break;
        case '<':
            buf_puts(out, "<" ZWSP);
            break;
        case ':':
            buf_puts(out, next == '/' ? ":" ZWSP : ":");
            break;
        case '.':
            buf_puts(out, is_letter(next) ? "." ZWSP : ".");
            break;
        default:
            buf_append(out, &c, 1);
        }
    }
}

/* Chatwork's notation made inert (TEMPLATE_ESCAPE_CHATWORK). */
static void chatwork_neutral(struct buf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i], next = i + 1 < len ? s[i + 1] : '\0';
        bool quiet = next == '\0' || (next >= '0' && next <= '9') || next == ' ' || next == '\t' ||
                     next == '\n';
        switch (c) {
        case '[':
        case '(':
            buf_append(out, &c, 1);
            buf_puts(out, ZWSP);
            break;
        case ')':
            buf_puts(out, ZWSP ")");
            break;
        case ':':
        case ';':
            buf_append(out, &c, 1);
            if (!quiet)
                buf_puts(out, ZWSP);
            break;
        case '.':
            buf_puts(out, is_letter(next) ? "." ZWSP : ".");
            break;
        default:
            buf_append(out, &c, 1);
        }
    }
}

/* Control characters as spaces (TEXT), then `neutral`, then written. */
static int put_neutral(struct render *r, const char *s, size_t len,
                       void (*neutral)(struct buf *out, const char *s, size_t len))
{
    struct buf plain, tmp;
    buf_init(&plain, 0);
    buf_init(&tmp, 0);
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        buf_append(&plain, (unsigned char)c < 0x20 || c == 0x7f ? " " : &c, 1);
    }
    neutral(&tmp, buf_str(&plain), plain.len);
    int rc = put_replaced(r, buf_str(&tmp), tmp.len, text_control);
    buf_free(&tmp);
    buf_free(&plain);
    return rc;
}

static int put_escaped(struct render *r, const char *s, size_t len, bool raw)
{
    struct buf tmp;
    int rc;
    switch (raw ? TEMPLATE_ESCAPE_NONE : r->esc) {
    case TEMPLATE_ESCAPE_HTML:
        return put_replaced(r, s, len, html_entity);
    case TEMPLATE_ESCAPE_JSON:
        return put_json_escaped(r, s, len);
    case TEMPLATE_ESCAPE_TEXT:
        return put_replaced(r, s, len, text_control);
    case TEMPLATE_ESCAPE_SLACK:
        buf_init(&tmp, 0);
        for (size_t i = 0; i < len; i++) {
            const char *with = slack_entity((unsigned char)s[i]);
            if (with)
                buf_puts(&tmp, with);
            else
                buf_append(&tmp, s + i, 1);
        }
        rc = put_json_escaped(r, buf_str(&tmp), tmp.len);
        buf_free(&tmp);
        return rc;
    case TEMPLATE_ESCAPE_TEAMS:
        buf_init(&tmp, 0);
        teams_neutral(&tmp, s, len);
        rc = put_json_escaped(r, buf_str(&tmp), tmp.len);
        buf_free(&tmp);
        return rc;
    case TEMPLATE_ESCAPE_GCHAT:
        return put_neutral(r, s, len, gchat_neutral);
    case TEMPLATE_ESCAPE_CHATWORK:
        return put_neutral(r, s, len, chatwork_neutral);
    case TEMPLATE_ESCAPE_NONE:
        break;
    }
    return put(r, s, len);
}

/* The shortest of %.15g, %.16g and %.17g that reads back as `d`: 1.21
 * rather than 1.2099999999999999. */
static void format_double(char *out, size_t size, double d)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

static int put_value(struct render *r, const struct json_object *v, bool raw)
{
    /* json-c's getters take a non-const object; none of these changes the
     * value (json_object_to_json_string keeps a cached text in it). */
    struct json_object *obj = (struct json_object *)v;
    char num[40];
    const char *s;
    switch (json_object_get_type(v)) {
    case json_type_null:
        return 0;
    case json_type_string:
        return put_escaped(r, json_object_get_string(obj), (size_t)json_object_get_string_len(v),
                           raw);
    case json_type_boolean:
        s = json_object_get_boolean(v) ? "true" : "false";
        return put(r, s, strlen(s));
    case json_type_double:
        format_double(num, sizeof num, json_object_get_double(v));
        return put(r, num, strlen(num));
    case json_type_int:
    case json_type_object:
    case json_type_array:
        break;
    }
    s = json_object_to_json_string_ext(obj,
                                       JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    return put_escaped(r, s, strlen(s), raw);
}

static bool truthy(const struct json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        return false;
    case json_type_boolean:
        return json_object_get_boolean(v);
    case json_type_int:
        return json_object_get_int64(v) != 0; /* INT64_MAX for a larger uint64 */
    case json_type_double:
        return json_object_get_double(v) != 0.0;
    case json_type_string:
        return json_object_get_string_len(v) > 0;
    case json_type_array:
        return json_object_array_length(v) > 0;
    case json_type_object:
        break;
    }
    return true;
}

/* The member `key` of an object, or the element of a list that an
 * all-digits `key` numbers. *found tells a missing member from a null. */
static const struct json_object *child(const struct json_object *v, const char *key, bool *found)
{
    struct json_object *m = NULL;
    *found = false;
    if (json_object_is_type(v, json_type_object)) {
        *found = json_object_object_get_ex(v, key, &m);
        return m;
    }
    if (json_object_is_type(v, json_type_array) && *key &&
        strspn(key, "0123456789") == strlen(key)) {
        unsigned long long i = strtoull(key, NULL, 10); /* too large: ULLONG_MAX */
        if (i < json_object_array_length(v)) {
            *found = true;
            return json_object_array_get_idx(v, (size_t)i);
        }
    }
    return NULL;
}

/* Resolves a name as the spec says: "." is the top of the context stack;
 * the first part is looked up from the top down, the other parts in what
 * the previous one found. NULL for a miss (and for null). */
static const struct json_object *lookup(const struct render *r, const struct node *nd)
{
    const struct json_object *v = NULL;
    bool found = false;
    if (nd->n_parts == 0)
        return r->n_ctx ? r->ctx[r->n_ctx - 1] : NULL;
    if (r->n_iters && nd->n_parts == 1) {
        const struct iteration *it = &r->iters[r->n_iters - 1];
        if (strcmp(nd->parts[0], "@first") == 0)
            return it->i == 0 ? r->yes : r->no;
        if (strcmp(nd->parts[0], "@last") == 0)
            return it->i + 1 == it->n ? r->yes : r->no;
    }
    for (size_t i = r->n_ctx; i-- > 0 && !found;)
        if (json_object_is_type(r->ctx[i], json_type_object))
            v = child(r->ctx[i], nd->parts[0], &found);
    for (size_t k = 1; k < nd->n_parts && v; k++)
        v = child(v, nd->parts[k], &found);
    return v;
}

/* A copy of `text` with `indent` at the start of every line, as the spec
 * wants for a partial whose tag stands alone on an indented line; NULL
 * when that passes TEMPLATE_MAX_PARTIAL_SIZE (a long indentation times
 * many lines). */
static char *indent_text(const char *text, size_t len, const char *indent, size_t *out_len)
{
    struct buf b;
    size_t ilen = strlen(indent), from = 0;
    buf_init(&b, TEMPLATE_MAX_PARTIAL_SIZE);
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\n' && i + 1 < len)
            continue;
        if (buf_append(&b, indent, ilen) < 0 || buf_append(&b, text + from, i + 1 - from) < 0) {
            buf_free(&b);
            return NULL;
        }
        from = i + 1;
    }
    *out_len = b.len;
    return b.data ? buf_steal(&b) : xstrdup("");
}

/* The partial `nd` names, compiled with its indentation; NULL when it
 * does not exist. -1 when it does not compile. */
static int get_partial(struct render *r, const struct template *t, const struct node *nd,
                       const struct template **out)
{
    int rc = -1;
    const char *indent = nd->indent ? nd->indent : "";
    char *text = NULL, *origin = NULL, *indented = NULL;
    struct cached_partial *c;
    for (size_t i = 0; i < r->n_cache; i++) {
        c = &r->cache[i];
        if (strcmp(c->name, nd->name) == 0 && strcmp(c->indent, indent) == 0) {
            *out = c->t;
            return 0;
        }
    }
    r->cache = xreallocarray(r->cache, r->n_cache + 1, sizeof *r->cache);
    c = &r->cache[r->n_cache++];
    c->name = xstrdup(nd->name);
    c->indent = xstrdup(indent);
    c->t = NULL;
    if (!r->partials || r->partials(r->ud, nd->name, &text, &origin) < 0) {
        *out = NULL;
        rc = 0;
        goto out;
    }
    if (!text)
        text = xstrdup("");
    const char *name = origin ? origin : nd->name;
    size_t len = strlen(text), ilen = len;
    if (*indent && !(indented = indent_text(text, len, indent, &ilen))) {
        fail_at(r->e, t->origin, t->src, nd->pos,
                "partial '%s' is larger than %d bytes once indented", nd->name,
                TEMPLATE_MAX_PARTIAL_SIZE);
        goto out;
    }
    if (template_compile(&c->t, indented ? indented : text, ilen, name, r->e) < 0) {
        char msg[ERR_MAX];
        unsigned line, col;
        struct template *plain = NULL;
        /* The indentation moved columns: report the partial as written. */
        if (indented && template_compile(&plain, text, len, name, r->e) == 0)
            template_free(plain);
        snprintf(msg, sizeof msg, "%s", r->e->msg);
        line_col(t->src, nd->pos, &line, &col);
        err_set(r->e, "%s (partial '%s' included at %s:%u:%u)", msg, nd->name, t->origin, line,
                col);
        c->t = NULL;
        goto out;
    }
    *out = c->t;
    rc = 0;
out:
    free(text);
    free(origin);
    free(indented);
    return rc;
}

static int render_section(struct render *r, const struct template *t, const struct node *nd)
{
    const struct json_object *v = lookup(r, nd);
    if (nd->type == NODE_INVERTED)
        return truthy(v) ? 0 : render_nodes(r, t, nd->kids, nd->n_kids);
    if (!truthy(v))
        return 0;
    if (!json_object_is_type(v, json_type_array)) {
        push_ctx(r, v);
        int rc = render_nodes(r, t, nd->kids, nd->n_kids);
        r->n_ctx--;
        return rc;
    }
    size_t n = json_object_array_length(v);
    if (r->n_iters == r->cap_iters) {
        r->cap_iters = r->cap_iters ? r->cap_iters * 2 : 8;
        r->iters = xreallocarray(r->iters, r->cap_iters, sizeof *r->iters);
    }
    struct iteration *it = &r->iters[r->n_iters++];
    it->n = n;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (++r->steps > TEMPLATE_MAX_STEPS) {
            rc = fail_at(r->e, t->origin, t->src, nd->pos,
                         "rendering takes more than %d steps (lists nested in lists?)",
                         TEMPLATE_MAX_STEPS);
            break;
        }
        r->iters[r->n_iters - 1].i = i; /* the array may have moved */
        push_ctx(r, json_object_array_get_idx(v, i));
        rc = render_nodes(r, t, nd->kids, nd->n_kids);
        r->n_ctx--;
    }
    r->n_iters--;
    return rc;
}

static int render_partial(struct render *r, const struct template *t, const struct node *nd)
{
    const struct template *p = NULL;
    if (r->partial_depth == TEMPLATE_MAX_PARTIAL_DEPTH)
        return fail_at(r->e, t->origin, t->src, nd->pos,
                       "partials nested deeper than %d ('%s' includes itself without end?)",
                       TEMPLATE_MAX_PARTIAL_DEPTH, nd->name);
    if (get_partial(r, t, nd, &p) < 0)
        return -1;
    if (!p)
        return 0;
    r->partial_depth++;
    int rc = render_nodes(r, p, p->nodes, p->n);
    r->partial_depth--;
    return rc;
}

static int render_nodes(struct render *r, const struct template *t, const struct node *nodes,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct node *nd = &nodes[i];
        int rc = 0;
        if (++r->steps > TEMPLATE_MAX_STEPS)
            return fail_at(r->e, t->origin, t->src, nd->pos,
                           "rendering takes more than %d steps (lists nested in lists?)",
                           TEMPLATE_MAX_STEPS);
        switch (nd->type) {
        case NODE_TEXT:
            rc = put(r, nd->text, nd->len);
            break;
        case NODE_VAR:
            rc = put_value(r, lookup(r, nd), nd->raw);
            break;
        case NODE_SECTION:
        case NODE_INVERTED:
            rc = render_section(r, t, nd);
            break;
        case NODE_PARTIAL:
            rc = render_partial(r, t, nd);
            break;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

int template_render(struct buf *out, const struct template *t, const struct json_object *ctx,
                    enum template_escape esc, template_partial_fn partials, void *ud, struct err *e)
{
    size_t start = out->len;
    struct render r = {
        .out = out,
        .esc = esc,
        .partials = partials,
        .ud = ud,
        .e = e,
        .yes = json_object_new_boolean(1),
        .no = json_object_new_boolean(0),
    };
    if (!r.yes || !r.no)
        xalloc_die();
    push_ctx(&r, ctx);
    int rc = render_nodes(&r, t, t->nodes, t->n);
    if (rc < 0 && out->data) {
        out->len = start;
        out->data[start] = '\0';
    }
    for (size_t i = 0; i < r.n_cache; i++) {
        free(r.cache[i].name);
        free(r.cache[i].indent);
        template_free(r.cache[i].t);
    }
    free(r.cache);
    free(r.ctx);
    free(r.iters);
    json_object_put(r.yes);
    json_object_put(r.no);
    return rc;
}
