/* Fuzzes the configuration loader with arbitrary file contents: it must
 * either load or fail with a "FILE:..." message, never crash or leak. */
#include "config.h"
#include "fuzz.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;

static void remove_dir(void)
{
    rmdir(dir);
    free(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct config *c = NULL;
    struct err e;
    if (!dir) {
        char tmpl[] = "/tmp/wsrelay-fuzz-config-XXXXXX";
        if (!mkdtemp(tmpl))
            abort();
        dir = xstrdup(tmpl);
        atexit(remove_dir);
    }
    char *path = xasprintf("%s/wsrelay.yaml", dir);
    if (file_write_atomic(path, data, size, 0600, &e) < 0)
        abort();
    if (config_load(&c, path, &e) == 0)
        config_free(c);
    else if (strncmp(e.msg, path, strlen(path)) != 0)
        abort(); /* every error names the file */
    unlink(path);
    free(path);
    return 0;
}
