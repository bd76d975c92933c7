/* Fuzzes the configuration loader with arbitrary file contents: it must
 * either load or fail with a "FILE:..." message, never crash or leak; and
 * so must `check`'s loader that goes on after a mistake (config_load_all),
 * whose first line is config_load's message, and which lists at most
 * SCHEMA_ERRORS_MAX. */
#include "config.h"
#include "fuzz.h"
#include "schema.h"
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
    int rc = config_load(&c, path, &e);
    if (rc == 0)
        config_free(c);
    else if (strncmp(e.msg, path, strlen(path)) != 0)
        abort(); /* every error names the file */
    char *errors = NULL;
    struct err first;
    c = NULL;
    bool more;
    if (config_load_all(&c, &errors, &more, path, &first) != rc)
        abort();
    config_free(c);
    size_t lines = 0;
    for (const char *line = errors; line && *line; line = strchr(line, '\n') + 1)
        lines++;
    if (lines > SCHEMA_ERRORS_MAX || (rc < 0) != (lines > 0) || (more && lines < SCHEMA_ERRORS_MAX))
        abort();
    if (rc < 0 && strcmp(first.msg, e.msg) != 0)
        abort(); /* the first mistake is the one config_load reports */
    free(errors);
    unlink(path);
    free(path);
    return 0;
}
