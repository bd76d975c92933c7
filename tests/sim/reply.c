/* Building replies (JSON documents, the platform's error object) and
 * parsing request bodies for the simulator's handlers. */
#include "reply.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

void reply_json(struct reply *out, int status, struct json_object *obj)
{
    free(out->body);
    out->status = status;
    out->content_type = NULL;
    out->body = xstrdup(json_object_to_json_string_ext(obj, JSON_FLAGS));
    json_object_put(obj);
}

void reply_error(struct reply *out, int status, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    struct json_object *error = json_object_new_object();
    json_object_object_add(error, "code", json_object_new_int(status));
    json_object_object_add(error, "message", json_object_new_string(message));
    struct json_object *root = json_object_new_object();
    json_object_object_add(root, "error", error);
    reply_json(out, status, root);
}

void reply_raw(struct reply *out, int status, const char *body)
{
    free(out->body);
    out->status = status;
    out->content_type = NULL;
    out->body = xstrdup(body);
}

void reply_take(struct reply *out, int status, const char *content_type, char *body)
{
    free(out->body);
    out->status = status;
    out->content_type = content_type;
    out->body = body;
}

void reply_clear(struct reply *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

struct json_object *request_json_object(const struct request *rq)
{
    if (rq->body_len == 0 || rq->body_len > INT_MAX || strlen(rq->body) != rq->body_len)
        return NULL;
    struct json_tokener *tok = json_tokener_new();
    struct json_object *obj = json_tokener_parse_ex(tok, rq->body, (int)rq->body_len);
    size_t end = json_tokener_get_parse_end(tok);
    bool ok = json_tokener_get_error(tok) == json_tokener_success &&
              json_object_is_type(obj, json_type_object);
    for (; ok && end < rq->body_len; end++)
        ok = strchr(" \t\r\n", rq->body[end]) != NULL;
    json_tokener_free(tok);
    if (!ok) {
        json_object_put(obj);
        return NULL;
    }
    return obj;
}
