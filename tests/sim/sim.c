/* wsrelay-sim: a stand-in for the T&D WebStorage platform that serves the
 * scenario in a JSON file over HTTP on 127.0.0.1, with a virtual clock and
 * control endpoints for tests. One libmicrohttpd polling thread answers
 * every request, so the world needs no locks; the main thread only waits
 * for SIGTERM or SIGINT. */
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BODY_MAX (1024u * 1024)
#define EXIT_USAGE 2

struct options {
    const char *scenario;
    const char *port;
    const char *port_file;
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
    {"--help", NULL, "show this help", offsetof(struct options, help)},
};

#define N_OPTIONS (sizeof option_table / sizeof option_table[0])

static void usage(FILE *f)
{
    fputs("usage: wsrelay-sim --scenario FILE [--port N] [--port-file PATH]\n", f);
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

static int parse_port(unsigned short *out, const char *text)
{
    char *end;
    long n = strtol(text, &end, 10);
    if (!*text || *end || n < 0 || n > 65535)
        return -1;
    *out = (unsigned short)n;
    return 0;
}


static enum MHD_Result send_reply(struct MHD_Connection *conn, const struct reply *r)
{
    const char *body = r->body ? r->body : "";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json; charset=utf-8");
    if (r->rate_headers) {
        char text[32];
        snprintf(text, sizeof text, "%d", r->rate.limit);
        MHD_add_response_header(resp, "X-RateLimit-Limit", text);
        snprintf(text, sizeof text, "%d", r->rate.remaining);
        MHD_add_response_header(resp, "X-RateLimit-Remaining", text);
        snprintf(text, sizeof text, "%lld", r->rate.reset);
        MHD_add_response_header(resp, "X-RateLimit-Reset", text);
    }
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    struct world *w = cls;
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
    if (up->too_big)
        reply_error(&r, 413, "the body is larger than %u bytes", BODY_MAX);
    else if (strncmp(url, "/_sim/", 6) == 0)
        control_answer(w, &rq, &r);
    else
        world_answer(w, &rq, &r);
    fprintf(stderr, "wsrelay-sim: [t=%lld] %s %s -> %d\n", world_now(w), method, url, r.status);
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
    struct world *w = NULL;
    struct MHD_Daemon *d = NULL;
    unsigned short port = 0;
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
    if (!opt.scenario || (opt.port && parse_port(&port, opt.port) < 0)) {
        fprintf(stderr, "wsrelay-sim: %s\n",
                !opt.scenario ? "--scenario FILE is required" : "--port must be 0 to 65535");
        usage(stderr);
        rc = EXIT_USAGE;
        goto out;
    }
    if (scenario_load(&sc, opt.scenario, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        rc = EXIT_USAGE;
        goto out;
    }
    w = world_new(sc);
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
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG,
                         port, NULL, NULL, on_request, w, MHD_OPTION_SOCK_ADDR,
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
    world_free(w);
    scenario_free(sc);
    return rc;
}
