/* A strict reader of whole JSON files (jsonfile.h), for the files a person
 * hands a command: `render --data`, `explain`'s alert log. */
#include "util/jsonfile.h"

#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <string.h>

struct json_object *jsonfile_read(const char *path, size_t max_bytes, struct err *e)
{
    struct buf text;
    struct json_object *v = NULL;
    struct json_tokener *tok = NULL;
    buf_init(&text, max_bytes);
    if (file_read(&text, path, e) < 0)
        goto out;
    tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH * 2);
    if (!tok)
        xalloc_die();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* The final NUL tells the tokener that the text ends there. */
    v = json_tokener_parse_ex(tok, buf_str(&text), (int)text.len + 1);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (jerr != json_tokener_success) {
        err_set(e, "%s: not JSON: %s at offset %zu", path,
                jerr == json_tokener_continue ? "unexpected end of data"
                                              : json_tokener_error_desc(jerr),
                end);
        goto out;
    }
    while (end < text.len && strchr(" \t\r\n", text.data[end]))
        end++;
    if (end < text.len) {
        err_set(e, "%s: not JSON: unexpected data at offset %zu", path, end);
        json_object_put(v);
        v = NULL;
    }
out:
    if (tok)
        json_tokener_free(tok);
    buf_free(&text);
    return v;
}
