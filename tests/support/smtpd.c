/* Starting the test SMTP server and making certificates for it. */
#include "smtpd.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3" /* Debian's, which python3-aiosmtpd installs for */
#define START_TIMEOUT_MS 15000

void smtpd_start(struct smtpd *s, const char *dir, const struct smtpd_options *o)
{
    static const struct smtpd_options none = {0};
    if (!o)
        o = &none;
    memset(s, 0, sizeof *s);
    s->dir = xasprintf("%s/mail", dir);
    char *port_file = xasprintf("%s/smtpd.port", dir);
    char *fail_n = xasprintf("%d", o->fail_first);
    unlink(port_file);
    char *argv[32];
    size_t n = 0;
    argv[n++] = (char *)PYTHON;
    argv[n++] = (char *)WSRELAY_SOURCE_DIR "/tests/support/smtpd.py";
    argv[n++] = (char *)"--dir";
    argv[n++] = s->dir;
    argv[n++] = (char *)"--port-file";
    argv[n++] = port_file;
    if (o->tls_cert) {
        argv[n++] = (char *)"--tls-cert";
        argv[n++] = (char *)o->tls_cert;
        argv[n++] = (char *)"--tls-key";
        argv[n++] = (char *)o->tls_key;
    }
    if (o->require_starttls)
        argv[n++] = (char *)"--require-starttls";
    if (o->auth) {
        argv[n++] = (char *)"--auth";
        argv[n++] = (char *)o->auth;
    }
    if (o->auth_mech) {
        argv[n++] = (char *)"--auth-mech";
        argv[n++] = (char *)o->auth_mech;
    }
    if (o->auth_optional)
        argv[n++] = (char *)"--auth-optional";
    if (o->auth_echo)
        argv[n++] = (char *)"--auth-echo";
    if (o->auth_echo_cut) {
        argv[n++] = (char *)"--auth-echo-cut";
        argv[n++] = (char *)o->auth_echo_cut;
    }
    if (o->fail_first) {
        argv[n++] = (char *)"--fail-first";
        argv[n++] = fail_n;
        argv[n++] = (char *)o->fail_reply;
    }
    if (o->refuse) {
        argv[n++] = (char *)"--refuse";
        argv[n++] = (char *)o->refuse;
    }
    argv[n] = NULL;
    cr_assert_eq(access(PYTHON, X_OK), 0, "%s is missing: apt-get install python3-aiosmtpd",
                 PYTHON);
    proc_start(&s->proc, argv, NULL, dir);
    for (int waited = 0; !(s->port = test_read_port(port_file)); waited += 10) {
        int status = proc_poll(&s->proc);
        if (status >= 0 || waited >= START_TIMEOUT_MS) {
            char *err = proc_stderr(&s->proc);
            cr_log_error("smtpd.py stderr:\n%.4000s", err);
            free(err);
            cr_assert_fail("smtpd.py %s",
                           status >= 0 ? "exited before listening" : "did not listen within 15 s");
        }
        test_sleep_ms(10);
    }
    free(port_file);
    free(fail_n);
}

void smtpd_stop(struct smtpd *s)
{
    if (!s || !s->dir)
        return;
    if (s->proc.pid) {
        int status = proc_terminate(&s->proc, 5);
        /* Criterion 2.4 ends the binary with status 1 after any warning,
         * so a server that did not end cleanly fails the tests it served. */
        if (status != 0) {
            char *err = proc_stderr(&s->proc);
            cr_log_warn("smtpd.py ended with status %d:\n%.4000s", status, err);
            free(err);
        }
    }
    proc_stop(&s->proc);
    free(s->dir);
    memset(s, 0, sizeof *s);
}

static char *nth(const struct smtpd *s, const char *sub, size_t i, const char *ext)
{
    char *path = xasprintf("%s/%s%03zu.%s", s->dir, sub, i + 1, ext);
    char *text = read_file_str(path);
    free(path);
    return text;
}

static size_t count(const struct smtpd *s, const char *sub)
{
    size_t n = 0;
    for (char *text; (text = nth(s, sub, n, "eml")); n++)
        free(text);
    return n;
}

size_t smtpd_count(const struct smtpd *s)
{
    return count(s, "");
}

size_t smtpd_refused(const struct smtpd *s)
{
    return count(s, "refused/");
}

char *smtpd_raw(const struct smtpd *s, size_t i)
{
    return nth(s, "", i, "eml");
}

char *smtpd_refused_raw(const struct smtpd *s, size_t i)
{
    return nth(s, "refused/", i, "eml");
}

struct json_object *smtpd_mail(const struct smtpd *s, size_t i)
{
    char *text = nth(s, "", i, "json");
    cr_assert_not_null(text, "no message %zu in %s", i, s->dir);
    struct json_object *doc = json_tokener_parse(text);
    cr_assert_not_null(doc, "not JSON: %s", text);
    free(text);
    return doc;
}

char *smtpd_log(const struct smtpd *s)
{
    char *path = xasprintf("%s/log", s->dir);
    char *text = read_file_str(path);
    free(path);
    return text ? text : xstrdup("");
}

/* ---- certificates ---- */

static void openssl(char *const argv[])
{
    char *err = NULL;
    int status = run_cmd(NULL, &err, 30, argv, NULL);
    cr_assert_eq(status, 0, "openssl %s failed (%d): %s", argv[1], status, err);
    free(err);
}

void test_ca_make(struct test_ca *ca, const char *dir, const char *name)
{
    ca->cert = xasprintf("%s/%s.pem", dir, name);
    ca->key = xasprintf("%s/%s.key", dir, name);
    char *subject = xasprintf("/CN=%s", name);
    char *argv[] = {(char *)"openssl",
                    (char *)"req",
                    (char *)"-x509",
                    (char *)"-new",
                    (char *)"-newkey",
                    (char *)"ec",
                    (char *)"-pkeyopt",
                    (char *)"ec_paramgen_curve:prime256v1",
                    (char *)"-nodes",
                    (char *)"-keyout",
                    ca->key,
                    (char *)"-out",
                    ca->cert,
                    (char *)"-days",
                    (char *)"2",
                    (char *)"-subj",
                    subject,
                    (char *)"-addext",
                    (char *)"basicConstraints=critical,CA:TRUE",
                    (char *)"-addext",
                    (char *)"keyUsage=critical,keyCertSign,cRLSign",
                    NULL};
    openssl(argv);
    free(subject);
}

void test_ca_free(struct test_ca *ca)
{
    free(ca->cert);
    free(ca->key);
    ca->cert = ca->key = NULL;
}

void test_cert_make(char **cert, char **key, const struct test_ca *ca, const char *dir,
                    const char *name, const char *san)
{
    *cert = xasprintf("%s/%s.pem", dir, name);
    *key = xasprintf("%s/%s.key", dir, name);
    char *csr = xasprintf("%s/%s.csr", dir, name);
    char *ext = xasprintf("%s/%s.ext", dir, name);
    char *ext_text = xasprintf("subjectAltName=%s\nbasicConstraints=CA:FALSE\n"
                               "keyUsage=critical,digitalSignature\n"
                               "extendedKeyUsage=serverAuth\n",
                               san);
    char *serial = xasprintf("%ld%ld", (long)getpid(), (long)time(NULL) % 100000);
    write_file(ext, ext_text);
    char *req[] = {(char *)"openssl",
                   (char *)"req",
                   (char *)"-new",
                   (char *)"-newkey",
                   (char *)"ec",
                   (char *)"-pkeyopt",
                   (char *)"ec_paramgen_curve:prime256v1",
                   (char *)"-nodes",
                   (char *)"-keyout",
                   *key,
                   (char *)"-out",
                   csr,
                   (char *)"-subj",
                   (char *)"/CN=wsrelay test server",
                   NULL};
    openssl(req);
    char *sign[] = {(char *)"openssl",
                    (char *)"x509",
                    (char *)"-req",
                    (char *)"-in",
                    csr,
                    (char *)"-CA",
                    ca->cert,
                    (char *)"-CAkey",
                    ca->key,
                    (char *)"-set_serial",
                    serial,
                    (char *)"-days",
                    (char *)"2",
                    (char *)"-extfile",
                    ext,
                    (char *)"-out",
                    *cert,
                    NULL};
    openssl(sign);
    chmod(*key, 0600);
    free(csr);
    free(ext);
    free(ext_text);
    free(serial);
}
