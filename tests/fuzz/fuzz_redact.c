/* Fuzzes redaction with "SECRET\nTEXT": the secret is added as a value, a
 * URL and a header value, and the text redacted. Checks that a secret
 * found in the text never comes out of it (unless it holds a bracket, which
 * "[redacted]" itself could complete), on top of what the sanitizers see
 * while escapes are undone. */
#include "fuzz.h"
#include "util/redact.h"
#include "util/xalloc.h"

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
    if (strlen(input) >= REDACT_MIN && !strpbrk(input, "[]") && strstr(out, input))
        abort();
    free(out);
    redact_free(r);
    free(input);
    return 0;
}
