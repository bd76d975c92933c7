/* PCRE2 for the rules: compile with a readable error, search with a bound. */
#include "regexp.h"

#include <stdio.h>
#include <string.h>

#define MATCH_LIMIT 1000000
#define DEPTH_LIMIT 10000

static void error_text(char *out, size_t size, int code)
{
    if (pcre2_get_error_message(code, (PCRE2_UCHAR *)out, size) < 0)
        snprintf(out, size, "PCRE2 error %d", code);
}

int regexp_compile(pcre2_code **out, const char *pattern, struct err *e)
{
    int code = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &offset, NULL);
    if (!re) {
        char msg[256];
        error_text(msg, sizeof msg, code);
        return err_set(e, "invalid regular expression at offset %zu: %s", (size_t)offset, msg);
    }
    *out = re;
    return 0;
}

int regexp_search(const pcre2_code *re, const char *text, struct err *e)
{
    int rc = -1;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!md || !mc) {
        err_set(e, "out of memory for a regular expression search");
        goto out;
    }
    pcre2_set_match_limit(mc, MATCH_LIMIT);
    pcre2_set_depth_limit(mc, DEPTH_LIMIT);
    int n = pcre2_match(re, (PCRE2_SPTR)text, strlen(text), 0, 0, md, mc);
    if (n >= 0) {
        rc = 1;
    } else if (n == PCRE2_ERROR_NOMATCH) {
        rc = 0;
    } else {
        char msg[256];
        error_text(msg, sizeof msg, n);
        err_set(e, "the regular expression search gave up: %s", msg);
    }
out:
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    return rc;
}
