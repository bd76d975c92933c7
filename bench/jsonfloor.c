/* What json-c alone costs on a file: the floor under any run that reads it
 * as one document. The quiet benchmark (bench/bench.py) runs it on a
 * Get Current Readings reply and on a state file of 2000 devices, to show
 * how much of a readings run's time no change to wsrelay's own code can
 * remove while those are read this way.
 *
 *   wsrelay-jsonfloor FILE...
 *
 * Prints, per FILE, one line: its size in bytes and the CPU milliseconds
 * (this process, user + system) of parsing it, serialising it again and
 * freeing it, the first time in a fresh process as a run does. Exit
 * status 0, or 2 when a file cannot be read or does not parse. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The whole of `path` in a buffer the caller frees; NULL on failure. */
static char *slurp(const char *path, long *size)
{
    char *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (*size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        text = malloc((size_t)*size + 1);
        if (text && fread(text, 1, (size_t)*size, f) != (size_t)*size) {
            free(text);
            text = NULL;
        }
    }
    fclose(f);
    if (text)
        text[*size] = '\0';
    return text;
}

int main(int argc, char **argv)
{
    int status = 0;
    for (int i = 1; i < argc && status == 0; i++) {
        long size = 0;
        char *text = slurp(argv[i], &size);
        if (!text) {
            fprintf(stderr, "wsrelay-jsonfloor: cannot read %s\n", argv[i]);
            status = 2;
            break;
        }
        double t0 = cpu_ms();
        struct json_object *doc = json_tokener_parse(text);
        double t1 = cpu_ms();
        size_t len = 0;
        const char *again = doc ? json_object_to_json_string_length(doc, 0, &len) : NULL;
        double t2 = cpu_ms();
        json_object_put(doc);
        double t3 = cpu_ms();
        if (!doc || !again) {
            fprintf(stderr, "wsrelay-jsonfloor: %s does not parse\n", argv[i]);
            status = 2;
        } else {
            printf("%ld %.2f %.2f %.2f\n", size, t1 - t0, t2 - t1, t3 - t2);
        }
        free(text);
    }
    return status;
}
