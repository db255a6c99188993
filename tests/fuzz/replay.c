/* replay.c -- main() for a fuzz target built without libFuzzer: runs the
 * target once on every file named on the command line or found (not
 * recursively) in a directory named there, and prints TAP, one line per
 * file.  Without arguments it replays $top_srcdir/tests/fuzz/corpus/NAME
 * and $top_srcdir/tests/fuzz/regress/NAME (every past crash), where NAME
 * is FUZZ_NAME, set by the makefile.  A crash or a finding (abort) ends the
 * program, so the last "ok" line before it names the input after it.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int tap_n;

static void
replay_file(const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    as_err err = {0};

    if (as_read_file(path, &buf, &len, &err) != AS_OK) {
        printf("not ok %d - %s\n", ++tap_n, err.msg);
        exit(1);
    }
    printf("# %s\n", path);
    fflush(stdout);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
    printf("ok %d - %s\n", ++tap_n, path);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay PATH (a file or a directory); a missing directory counts as empty if OPTIONAL. */
static void
replay(const char *path, int optional)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    AS_VEC(char *) names = {0};
    size_t i;

    if (stat(path, &st) != 0) {
        if (optional && errno == ENOENT)
            return;
        printf("not ok %d - %s: %s\n", ++tap_n, path, strerror(errno));
        exit(1);
    }
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path);
        return;
    }
    if ((d = opendir(path)) == NULL) {
        printf("not ok %d - %s: %s\n", ++tap_n, path, strerror(errno));
        exit(1);
    }
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            AS_VEC_PUSH(&names, as_xasprintf("%s/%s", path, e->d_name));
    closedir(d);
    if (names.n > 0)
        qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (i = 0; i < names.n; i++) {
        replay_file(names.v[i]);
        free(names.v[i]);
    }
    free(names.v);
}

int
main(int argc, char **argv)
{
    const char *top = getenv("top_srcdir");
    char *dir;
    int i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1) {
        for (i = 1; i < argc; i++)
            replay(argv[i], 0);
    } else {
        for (i = 0; i < 2; i++) {
            dir = as_xasprintf("%s/tests/fuzz/%s/%s", top != NULL ? top : ".",
                               i == 0 ? "corpus" : "regress", FUZZ_NAME);
            replay(dir, i == 1);
            free(dir);
        }
    }
    printf("1..%d\n", tap_n);
    return 0;
}
