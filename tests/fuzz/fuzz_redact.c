/* Fuzzes redaction with "SECRET\nTEXT": the secret is added as a value, a
 * URL and a header value, and the text redacted. Checks that neither the
 * secret nor any REDACT_RUN_MIN bytes in a row of it come out of the text
 * (unless it holds a bracket or "redacted", which "[redacted]" itself could
 * complete), on top of what the sanitizers see while escapes are undone. */
#include "fuzz.h"
#include "util/redact.h"
#include "util/xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *input = xstrndup((const char *)data, size);
    char *nl = strchr(input, '\n');
    const char *text = nl ? nl + 1 : "";
    if (nl)
        *nl = '\0';
    struct redact *r = redact_new();
    redact_add(r, input);
    redact_add_url(r, input);
    redact_add_header(r, input);
    char *out = redact_text(r, text);
    size_t len = strlen(input);
    bool plain = !strpbrk(input, "[]") && !strstr(input, "redacted");
    if (len >= REDACT_MIN && plain && strstr(out, input))
        abort();
    for (size_t k = 0; plain && k + REDACT_RUN_MIN <= len; k++) {
        char run[REDACT_RUN_MIN + 1];
        memcpy(run, input + k, REDACT_RUN_MIN);
        run[REDACT_RUN_MIN] = '\0';
        if (strstr(out, run))
            abort();
    }
    free(out);
    redact_free(r);
    free(input);
    return 0;
}
