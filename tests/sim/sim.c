/* wsrelay-sim: a stand-in for the T&D WebStorage platform that serves the
 * scenario in a JSON file over HTTP on 127.0.0.1, with a virtual clock and
 * control endpoints for tests. libmicrohttpd gives each connection a
 * thread; one lock makes the world's answers one at a time, in the order
 * the requests arrived, while a platform reply's latency (--latency) is
 * waited out with the lock released, as a distant server's would be. The
 * main thread only waits for SIGTERM or SIGINT. */
#include "control.h"
#include "scenario.h"
#include "world.h"
#include "upload.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BODY_MAX (8u * 1024 * 1024) /* a fault's body may be a whole reply of up to 4 MiB */
#define EXIT_USAGE 2
#define LATENCY_MAX_MS 60000u

/* What the connection threads share. */
struct server {
    struct world *w;
    pthread_mutex_t lock; /* held around every use of w */
    unsigned latency_ms;
};

struct options {
    const char *scenario;
    const char *port;
    const char *port_file;
    const char *latency;
    int help;
};

static const struct option_row {
    const char *name;
    const char *arg; /* NULL: a flag */
    const char *help;
    size_t offset;
} option_table[] = {
    {"--scenario", "FILE", "the scenario to serve (JSON; see tests/sim/README.md)",
     offsetof(struct options, scenario)},
    {"--port", "N", "TCP port on 127.0.0.1; 0 (the default) picks a free one",
     offsetof(struct options, port)},
    {"--port-file", "PATH", "write the port number to PATH once listening",
     offsetof(struct options, port_file)},
    {"--latency", "MS", "hold each platform reply MS milliseconds (default 0)",
     offsetof(struct options, latency)},
    {"--help", NULL, "show this help", offsetof(struct options, help)},
};

#define N_OPTIONS (sizeof option_table / sizeof option_table[0])

static void usage(FILE *f)
{
    fputs("usage: wsrelay-sim --scenario FILE [--port N] [--port-file PATH] [--latency MS]\n", f);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct option_row *o = &option_table[i];
        fprintf(f, "  %-12s %-5s %s\n", o->name, o->arg ? o->arg : "", o->help);
    }
}

/* Fills `opt` from argv ("--name VALUE" or "--name=VALUE"); -1 with a
 * message on stderr when something is wrong. */
static int parse_args(struct options *opt, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const struct option_row *row = NULL;
        for (size_t j = 0; j < N_OPTIONS && !row; j++) {
            if (strlen(option_table[j].name) == len && strncmp(option_table[j].name, arg, len) == 0)
                row = &option_table[j];
        }
        if (!row) {
            fprintf(stderr, "wsrelay-sim: unknown option '%s'\n", arg);
            return -1;
        }
        char *field = (char *)opt + row->offset;
        if (!row->arg) {
            if (eq) {
                fprintf(stderr, "wsrelay-sim: %s takes no value\n", row->name);
                return -1;
            }
            *(int *)(void *)field = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            fprintf(stderr, "wsrelay-sim: %s needs a value (%s)\n", row->name, row->arg);
            return -1;
        }
        *(const char **)(void *)field = value;
    }
    return 0;
}

/* A whole number from 0 to max, in decimal; -1 otherwise. */
static int parse_uint(unsigned *out, const char *text, unsigned max)
{
    char *end;
    long n = strtol(text, &end, 10);
    if (!*text || *end || n < 0 || n > (long)max)
        return -1;
    *out = (unsigned)n;
    return 0;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, const struct reply *r)
{
    const char *body = r->body ? r->body : "";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type",
                            r->content_type ? r->content_type : REPLY_JSON_TYPE);
    if (r->rate_headers) {
        char text[32];
        snprintf(text, sizeof text, "%d", r->rate.limit);
        MHD_add_response_header(resp, "X-RateLimit-Limit", text);
        snprintf(text, sizeof text, "%d", r->rate.remaining);
        MHD_add_response_header(resp, "X-RateLimit-Remaining", text);
        snprintf(text, sizeof text, "%lld", r->rate.reset);
        MHD_add_response_header(resp, "X-RateLimit-Reset", text);
    }
    if (r->data_count_header) {
        char text[32];
        snprintf(text, sizeof text, "%lld", r->data_count);
        MHD_add_response_header(resp, "X-RateLimit-Remaining-DataCount", text);
    }
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct server *srv = cls;
    struct upload *up = upload_feed(con_cls, upload_data, upload_data_size, BODY_MAX);
    if (!up)
        return MHD_YES;

    struct request rq = {
        .method = method,
        .path = url,
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"),
        .method_override =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-HTTP-Method-Override"),
        .body = buf_str(&up->body),
        .body_len = up->body.len,
    };
    struct reply r = {0};
    bool platform = !up->too_big && strncmp(url, "/_sim/", 6) != 0;
    pthread_mutex_lock(&srv->lock);
    if (up->too_big)
        reply_error(&r, 413, "the body is larger than %u bytes", BODY_MAX);
    else if (!platform)
        control_answer(srv->w, &rq, &r);
    else
        world_answer(srv->w, &rq, &r);
    fprintf(stderr, "wsrelay-sim: [t=%lld] %s %s -> %d\n", world_now(srv->w), method, url,
            r.status);
    if (platform)
        world_flight_begin(srv->w, url);
    pthread_mutex_unlock(&srv->lock);
    if (platform) {
        sleep_ms(srv->latency_ms);
        pthread_mutex_lock(&srv->lock);
        world_flight_end(srv->w, url);
        pthread_mutex_unlock(&srv->lock);
    }
    enum MHD_Result ok = send_reply(conn, &r);
    reply_clear(&r);
    return ok;
}

static int write_port_file(const char *path, unsigned port)
{
    struct err e;
    char text[16];
    int n = snprintf(text, sizeof text, "%u\n", port);
    if (file_write_atomic(path, text, (size_t)n, 0644, &e) < 0) {
        fprintf(stderr, "wsrelay-sim: %s\n", e.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 1;
    struct options opt = {0};
    struct scenario *sc = NULL;
    struct server srv = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct MHD_Daemon *d = NULL;
    unsigned port = 0;
    struct err e;
    sigset_t stop;

    if (parse_args(&opt, argc, argv) < 0) {
        usage(stderr);
        rc = EXIT_USAGE;
        goto out;
    }
    if (opt.help) {
        usage(stdout);
        rc = 0;
        goto out;
    }
    const char *bad = NULL;
    if (!opt.scenario)
        bad = "--scenario FILE is required";
    else if (opt.port && parse_uint(&port, opt.port, 65535) < 0)
        bad = "--port must be 0 to 65535";
    else if (opt.latency && parse_uint(&srv.latency_ms, opt.latency, LATENCY_MAX_MS) < 0)
        bad = "--latency must be 0 to 60000 (milliseconds)";
    if (bad) {
        fprintf(stderr, "wsrelay-sim: %s\n", bad);
        usage(stderr);
        rc = EXIT_USAGE;
        goto out;
    }
    if (scenario_load(&sc, opt.scenario, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        rc = EXIT_USAGE;
        goto out;
    }
    srv.w = world_new(sc);
    sc = NULL;

    /* Block the stop signals before the server thread exists, so that it
     * inherits the mask and only sigwait below sees them. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                             MHD_USE_AUTO | MHD_USE_ERROR_LOG,
                         (unsigned short)port, NULL, NULL, on_request, &srv, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, upload_completed,
                         NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "wsrelay-sim: cannot listen on 127.0.0.1:%u\n", (unsigned)port);
        goto out;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || info->port == 0) {
        fprintf(stderr, "wsrelay-sim: cannot tell which port was bound\n");
        goto out;
    }
    printf("wsrelay-sim listening on http://127.0.0.1:%u\n", (unsigned)info->port);
    fflush(stdout);
    if (opt.port_file && write_port_file(opt.port_file, info->port) < 0)
        goto out;

    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    fprintf(stderr, "wsrelay-sim: stopping on signal %d\n", sig);
    rc = 0;
out:
    if (d)
        MHD_stop_daemon(d);
    world_free(srv.w);
    scenario_free(sc);
    return rc;
}
