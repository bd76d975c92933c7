/* Fuzzes the glob checker and matcher with "GLOB\nTEXT". Checks that an
 * error names a column inside the glob (or just past it), that a refused
 * glob matches nothing, and that a match survives a '*' added at either
 * end. */
#include "fuzz.h"
#include "glob.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e = {{0}};
    char *input = xstrndup((const char *)data, size);
    char *nl = strchr(input, '\n');
    const char *text = nl ? nl + 1 : "";
    char *around;
    bool hit;
    if (nl)
        *nl = '\0';
    hit = glob_match(input, text);
    if (glob_check(input, &e) < 0) {
        unsigned long col;
        if (strncmp(e.msg, "column ", 7) != 0)
            abort();
        col = strtoul(e.msg + 7, NULL, 10);
        if (col < 1 || col > strlen(input) + 1 || hit)
            abort();
    } else if (hit) {
        around = xasprintf("*%s", input);
        if (!glob_match(around, text))
            abort();
        free(around);
        around = xasprintf("%s*", input);
        if (!glob_match(around, text))
            abort();
        free(around);
    }
    free(input);
    return 0;
}
