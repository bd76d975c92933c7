/* Runs a fuzz target over every file of the directories given: the corpus
 * replay that ctest does in builds without libFuzzer. */
#include "fuzz.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    if (!d) {
        perror(dir);
        return -1;
    }
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.')
            continue;
        char *path = xasprintf("%s/%s", dir, ent->d_name);
        struct buf b;
        struct err e;
        buf_init(&b, 16 * 1024 * 1024);
        if (file_read(&b, path, &e) < 0) {
            fprintf(stderr, "%s\n", e.msg);
            free(path);
            closedir(d);
            return -1;
        }
        LLVMFuzzerTestOneInput((const uint8_t *)buf_str(&b), b.len);
        buf_free(&b);
        free(path);
        (*count)++;
    }
    closedir(d);
    return 0;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    for (int i = 1; i < argc; i++)
        if (replay_dir(argv[i], &count) < 0)
            return 1;
    if (count == 0) {
        fprintf(stderr, "no corpus files found\n");
        return 1;
    }
    printf("%zu passed, 0 failed\n", count);
    return 0;
}
