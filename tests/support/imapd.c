/* Starting a private Dovecot for one test, and its mailbox. */
#include "imapd.h"

#include "util/xalloc.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DOVECOT "/usr/sbin/dovecot" /* Debian's dovecot-core, which dovecot-imapd pulls in */
#define START_TIMEOUT_MS 15000
#define START_TRIES 3 /* a free port taken by another process meanwhile: try another */

/* A port on 127.0.0.1 that nothing listens on now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                  getsockname(fd, (struct sockaddr *)&a, &len) == 0,
              "no free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

static bool accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static const char *user_name(uid_t uid)
{
    struct passwd *pw = getpwuid(uid);
    cr_assert(pw, "no user name for uid %ld", (long)uid);
    return pw->pw_name;
}

/* The users Dovecot's processes run as: as root, Debian's dovenull (login)
 * and dovecot (internal) and nobody for the mailbox; otherwise this user
 * for all (Dovecot's rootless setup). */
struct run_as {
    char *login, *internal, *internal_group;
    uid_t mail_uid;
    gid_t mail_gid;
};

static void run_as_of(struct run_as *out)
{
    if (geteuid() == 0) {
        struct passwd *nobody = getpwnam("nobody");
        cr_assert(getpwnam("dovenull") && getpwnam("dovecot") && nobody,
                  "the users dovenull, dovecot and nobody are missing: "
                  "apt-get install dovecot-imapd");
        out->login = xstrdup("dovenull");
        out->internal = xstrdup("dovecot");
        out->internal_group = xstrdup("dovecot");
        out->mail_uid = nobody->pw_uid;
        out->mail_gid = nobody->pw_gid;
        return;
    }
    struct group *g = getgrgid(getegid());
    cr_assert(g, "no group name for gid %ld", (long)getegid());
    out->login = xstrdup(user_name(geteuid()));
    out->internal = xstrdup(out->login);
    out->internal_group = xstrdup(g->gr_name);
    out->mail_uid = geteuid();
    out->mail_gid = getegid();
}

static void make_dir(const char *path, const struct run_as *as)
{
    cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
    if (geteuid() == 0)
        cr_assert(chown(path, as->mail_uid, as->mail_gid) == 0, "chown %s: %s", path,
                  strerror(errno));
}

/* The configuration: IMAP over TLS only, on 127.0.0.1:port, everything
 * under `d->dir`, one user from a passwd-file, a Maildir. */
static char *config_text(const struct imapd *d, const struct run_as *as, const char *cert,
                         const char *key, int port)
{
    return xasprintf("protocols = imap\n"
                     "listen = 127.0.0.1\n"
                     "instance_name = wsrelay-test-%ld\n"
                     "base_dir = %s/run\n"
                     "state_dir = %s/state\n"
                     "log_path = %s/dovecot.log\n"
                     "default_login_user = %s\n"
                     "default_internal_user = %s\n"
                     "default_internal_group = %s\n"
                     "first_valid_uid = %ld\n"
                     "first_valid_gid = %ld\n"
                     "ssl = required\n"
                     "ssl_cert = <%s\n"
                     "ssl_key = <%s\n"
                     "auth_mechanisms = plain login\n"
                     "auth_verbose = yes\n"
                     "mail_location = maildir:%s\n"
                     "passdb {\n  driver = passwd-file\n  args = %s/passwd\n}\n"
                     "userdb {\n  driver = passwd-file\n  args = %s/passwd\n}\n"
                     "service imap-login {\n"
                     "  chroot =\n"
                     "  inet_listener imap {\n    port = 0\n  }\n"
                     "  inet_listener imaps {\n    port = %d\n    ssl = yes\n  }\n"
                     "}\n"
                     "service anvil {\n  chroot =\n}\n"
                     "service stats {\n  chroot =\n}\n",
                     (long)getpid(), d->dir, d->dir, d->dir, as->login, as->internal,
                     as->internal_group, (long)as->mail_uid, (long)as->mail_gid, cert, key,
                     d->maildir, d->dir, d->dir, port);
}

void imapd_start(struct imapd *d, const char *user, const char *password)
{
    memset(d, 0, sizeof *d);
    cr_assert_eq(access(DOVECOT, X_OK), 0, "%s is missing: apt-get install dovecot-imapd", DOVECOT);
    struct run_as as;
    run_as_of(&as);
    d->dir = test_tmpdir();
    /* Dovecot's processes that are not root reach the Maildir through it */
    cr_assert(chmod(d->dir, 0755) == 0);
    d->maildir = xasprintf("%s/Maildir", d->dir);
    char *home = xasprintf("%s/home", d->dir);
    make_dir(home, &as);
    make_dir(d->maildir, &as);
    const char *subs[] = {"new", "cur", "tmp"};
    for (size_t i = 0; i < 3; i++) {
        char *sub = xasprintf("%s/%s", d->maildir, subs[i]);
        make_dir(sub, &as);
        free(sub);
    }
    char *state = xasprintf("%s/state", d->dir);
    cr_assert(mkdir(state, 0755) == 0);
    test_ca_make(&d->ca, d->dir, "imap-ca");
    d->ca_file = d->ca.cert;
    char *cert = NULL, *key = NULL;
    test_cert_make(&cert, &key, &d->ca, d->dir, "imap-server", "DNS:localhost,IP:127.0.0.1");
    char *passwd_path = xasprintf("%s/passwd", d->dir);
    char *passwd = xasprintf("%s:{PLAIN}%s:%ld:%ld::%s::\n", user, password, (long)as.mail_uid,
                             (long)as.mail_gid, home);
    write_file(passwd_path, passwd);
    char *conf = xasprintf("%s/dovecot.conf", d->dir);
    for (int attempt = 1; attempt <= START_TRIES && !d->port; attempt++) {
        int port = free_port();
        char *text = config_text(d, &as, cert, key, port);
        write_file(conf, text);
        free(text);
        char *argv[] = {(char *)DOVECOT, (char *)"-F", (char *)"-c", conf, NULL};
        proc_start(&d->proc, argv, NULL, d->dir);
        for (int waited = 0; waited < START_TIMEOUT_MS; waited += 20) {
            if (accepts(port)) {
                d->port = port;
                break;
            }
            if (proc_poll(&d->proc) >= 0)
                break;
            test_sleep_ms(20);
        }
        if (!d->port) {
            char *err = proc_stderr(&d->proc), *log = imapd_log(d);
            cr_log_info("dovecot did not listen on %d (try %d):\n%.2000s\n%.2000s", port, attempt,
                        err, log);
            free(err);
            free(log);
            proc_stop(&d->proc);
        }
    }
    cr_assert(d->port, "dovecot did not start: see its log above");
    free(conf);
    free(passwd);
    free(passwd_path);
    free(cert);
    free(key);
    free(state);
    free(home);
    free(as.login);
    free(as.internal);
    free(as.internal_group);
}

void imapd_stop(struct imapd *d)
{
    if (!d || !d->dir)
        return;
    if (d->proc.pid) {
        int status = proc_terminate(&d->proc, 5);
        if (status != 0) {
            char *log = imapd_log(d);
            cr_log_warn("dovecot ended with status %d:\n%.4000s", status, log);
            free(log);
        }
    }
    proc_stop(&d->proc);
    test_rmtree(d->dir);
    free(d->dir);
    free(d->maildir);
    test_ca_free(&d->ca);
    memset(d, 0, sizeof *d);
}

char *imapd_deliver(struct imapd *d, const char *message)
{
    char *name =
        xasprintf("%ld.M%luP%ld.wsrelay-test", (long)time(NULL), ++d->delivered, (long)getpid());
    char *tmp = xasprintf("%s/tmp/%s", d->maildir, name);
    char *dest = xasprintf("%s/new/%s", d->maildir, name);
    write_file(tmp, message);
    struct run_as as;
    run_as_of(&as);
    if (geteuid() == 0)
        cr_assert(chown(tmp, as.mail_uid, as.mail_gid) == 0);
    cr_assert(rename(tmp, dest) == 0, "rename into new/: %s", strerror(errno));
    free(as.login);
    free(as.internal);
    free(as.internal_group);
    free(tmp);
    free(dest);
    return name;
}

bool imapd_seen(const struct imapd *d, const char *name)
{
    char *cur = xasprintf("%s/cur", d->maildir);
    DIR *dir = opendir(cur);
    cr_assert(dir, "opendir %s: %s", cur, strerror(errno));
    bool seen = false;
    size_t len = strlen(name);
    for (struct dirent *de; (de = readdir(dir));) {
        const char *flags = strstr(de->d_name, ":2,");
        if (!strncmp(de->d_name, name, len) && de->d_name[len] == ':' && flags)
            seen = strchr(flags + 3, 'S') != NULL;
    }
    closedir(dir);
    free(cur);
    return seen;
}

char *imapd_log(const struct imapd *d)
{
    char *path = xasprintf("%s/dovecot.log", d->dir);
    char *text = read_file_str(path);
    free(path);
    return text ? text : xstrdup("");
}
