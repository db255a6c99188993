/* test_oom.c -- allocation failure anywhere is one line on stderr and exit 1
 * (never abort()): autoshard's allocators, and the hooks GLPK, igraph,
 * jansson and PCRE2 get from as_lib_hooks_install.  Each case runs in a
 * forked child whose address space is limited (setrlimit RLIMIT_AS, the
 * same as `ulimit -v`) or, for GLPK, whose GLPK memory limit is 1 MB; the
 * parent checks the exit status and the child's stderr.
 */
#include "config.h"

#include <glpk.h>
#include <igraph.h>
#include <jansson.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph/check.h"
#include "libhooks.h"
#include "tap.h"

#if defined(__SANITIZE_ADDRESS__)
#define AS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AS_TEST_ASAN 1
#endif
#endif

/* Limit the address space to what is mapped now plus EXTRA bytes. */
static void
limit_as(size_t extra)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    struct rlimit rl;

    if (fp != NULL) {
        if (fscanf(fp, "%lu", &pages) != 1)
            pages = 0;
        fclose(fp);
    }
    rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + extra;
    setrlimit(RLIMIT_AS, &rl);
}

/* Run FN in a child with stderr in a pipe; *status and the first line of its stderr. */
static void
run_child(void (*fn)(void), int *status, char *line, size_t n)
{
    int fd[2];
    pid_t pid;
    ssize_t got, have = 0;

    line[0] = '\0';
    fflush(stdout);
    if (pipe(fd) != 0 || (pid = fork()) < 0) {
        *status = -1;
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn();
        _exit(0); /* FN did not run out of memory: a test failure */
    }
    close(fd[1]);
    while ((got = read(fd[0], line + have, n - 1 - (size_t)have)) > 0)
        have += got;
    line[have] = '\0';
    close(fd[0]);
    waitpid(pid, status, 0);
}

static void
expect_oom(void (*fn)(void), const char *what, const char *want)
{
    char err[1024], *nl;
    int st, lines = 0;

    run_child(fn, &st, err, sizeof err);
    for (nl = err; (nl = strchr(nl, '\n')) != NULL; nl++)
        lines++;
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: exit 1 (not abort)", what);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 1))
        diag("  status %#x (signal %d), stderr: %s", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0, err);
    ok(lines == 1 && strncmp(err, want, strlen(want)) == 0, "%s: one line '%s...'", what, want);
    if (!(lines == 1 && strncmp(err, want, strlen(want)) == 0))
        diag("  got %d lines: %s", lines, err);
}

static void __attribute__((unused)) /* not under AddressSanitizer */
child_xmalloc(void)
{
    limit_as(16u << 20);
    free(as_xmalloc((size_t)1 << 40));
}

static void
child_xcalloc_overflow(void)
{
    free(as_xcalloc(SIZE_MAX / 2, 4));
}

static void
child_glpk(void)
{
    glp_prob *lp;

    as_lib_hooks_install();
    glp_mem_limit(1);
    lp = glp_create_prob();
    glp_add_rows(lp, 1000000);
    glp_add_cols(lp, 1000000);
    glp_delete_prob(lp);
}

static void __attribute__((unused)) /* not under AddressSanitizer */
child_jansson(void)
{
    json_t *a;
    int i;

    as_lib_hooks_install();
    a = json_array();
    limit_as(8u << 20);
    for (i = 0; i < 100000000; i++)
        if (json_array_append_new(a, json_string("some string that takes room")) != 0)
            break; /* jansson reported the failure itself: a test failure */
    json_decref(a);
}

static void __attribute__((unused)) /* not under AddressSanitizer */
child_pcre2(void)
{
    pcre2_match_data *md[4096];
    int i;

    limit_as(8u << 20);
    for (i = 0; i < 4096; i++)
        if ((md[i] = pcre2_match_data_create(65535, as_pcre2_gcontext())) == NULL)
            return; /* PCRE2 reported the failure itself: a test failure */
}

static void __attribute__((unused)) /* not under AddressSanitizer */
child_igraph(void)
{
    igraph_vector_int_t v;

    as_igraph_setup();
    limit_as(8u << 20);
    if (igraph_vector_int_init(&v, (igraph_integer_t)1 << 32) == IGRAPH_SUCCESS)
        igraph_vector_int_destroy(&v);
}

int
main(void)
{
    json_malloc_t jm = NULL;
    json_free_t jf = NULL;

    plan_lazy();
    as_lib_hooks_install();
    json_get_alloc_funcs(&jm, &jf);
    ok(jm != NULL && jm != malloc, "jansson allocates through autoshard's allocator");
    expect_oom(child_xcalloc_overflow, "as_xcalloc size overflow",
               "autoshard: out of memory (a size overflows)");
    expect_oom(child_glpk, "GLPK over its memory limit", "autoshard: out of memory in GLPK (");
#ifdef AS_TEST_ASAN
    diag("AddressSanitizer build: the address-space limits are skipped");
#else
    expect_oom(child_xmalloc, "as_xmalloc under ulimit -v", "autoshard: out of memory allocating");
    expect_oom(child_jansson, "jansson under ulimit -v", "autoshard: out of memory allocating");
    expect_oom(child_pcre2, "PCRE2 under ulimit -v", "autoshard: out of memory allocating");
    expect_oom(child_igraph, "igraph under ulimit -v", "autoshard: out of memory in igraph");
#endif
    return done_testing();
}
