/* Whose the state is. The service runs as its own user and keeps its
 * state in a directory of its own; a command an administrator runs as root
 * against that state (`wsrelay status`, `current`, `run`) becomes that user
 * before it opens anything there, so that no file it writes is root's and
 * the next run of the service still can. A lock file that is someone
 * else's says so, with the command that gives it back. */
#include "state.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int state_run_as_owner(const char *path, struct err *e)
{
    int rc = -1;
    char *dir = file_dirname(path);
    struct stat st;
    if (geteuid() != 0 || stat(dir, &st) < 0 || st.st_uid == 0) {
        rc = 0; /* not root, or root's state: nothing to become */
        goto out;
    }
    const struct passwd *pw = getpwuid(st.st_uid);
    gid_t gid = pw ? pw->pw_gid : st.st_gid;
    /* Groups first: once the uid is dropped, they can no longer change. */
    if ((pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL)) < 0 || setgid(gid) < 0 ||
        setuid(st.st_uid) < 0) {
        err_set(e, "%s: cannot become uid %u, the owner of %s, to use its state: %s", path,
                (unsigned)st.st_uid, dir, strerror(errno));
        goto out;
    }
    if (setuid(0) == 0) {
        err_set(e, "%s: could become root again after becoming uid %u", path, (unsigned)st.st_uid);
        goto out;
    }
    log_debug("running as %s (uid %u), the owner of %s, so that the state stays its own",
              pw ? pw->pw_name : "a user without a name", (unsigned)st.st_uid, dir);
    rc = 0;
out:
    free(dir);
    return rc;
}

/* A user's name, or its number when it has none; caller frees. */
static char *user_name(uid_t uid)
{
    const struct passwd *pw = getpwuid(uid);
    return pw ? xstrdup(pw->pw_name) : xasprintf("%u", (unsigned)uid);
}

char *state_owner_fix(const char *path, const char *file)
{
    struct stat st;
    if (lstat(file, &st) < 0 || st.st_uid == geteuid())
        return NULL;
    char *owner = user_name(st.st_uid);
    char *self = user_name(geteuid());
    /* "NAME:" gives the user's login group; a bare number has none to give. */
    char *who = getpwuid(geteuid()) ? xasprintf("%s:", self)
                                    : xasprintf("%u:%u", (unsigned)geteuid(), (unsigned)getegid());
    char *fix = xasprintf("%s is owned by %s, and wsrelay runs as %s; run: chown -R %s %s*", file,
                          owner, self, who, path);
    free(who);
    free(self);
    free(owner);
    return fix;
}
