/* libhooks.c -- allocation failure inside the libraries autoshard links is
 * the same one line and exit 1 as in autoshard's own allocators (as_oom).
 *
 * DESIGN: each library gets its own hook, installed once per process before
 * its first use (as_lib_hooks_install is idempotent and called by main, by
 * the readers that use PCRE2 and by the GLPK users):
 *  - jansson: json_set_alloc_funcs(as_xmalloc, free), so a failing
 *    json_loadb or json_dumps never surfaces as a misleading parse error;
 *  - PCRE2: a general context whose allocator is as_xmalloc; patterns are
 *    compiled and match data created with it (as_pcre2_ccontext,
 *    as_pcre2_gcontext), and pcre2_match takes its heap frames from there;
 *  - GLPK: its terminal output is captured line by line (printed only with
 *    -v) and glp_error_hook prints GLPK's last message ("glp_add_rows: no
 *    memory available") as one line and exits 1 instead of GLPK's abort();
 *  - igraph: its error handler (src/graph/graph_check.c) sends IGRAPH_ENOMEM
 *    to as_oom.
 * Note: GLPK keeps its hooks in a per-thread environment; autoshard calls
 * GLPK from the main thread only.
 */
#include "config.h"

#include <glpk.h>
#include <jansson.h>
#include <pthread.h>
#include <string.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "autoshard.h"
#include "libhooks.h"

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static pcre2_general_context *pcre2_gctx;
static pcre2_compile_context *pcre2_cctx;

/* GLPK's last complete line of output, for the error hook. */
static char glpk_line[256], glpk_last[256];

static void *
pcre2_alloc(size_t n, void *data)
{
    (void)data;
    return as_xmalloc(n);
}

static void
pcre2_release(void *p, void *data)
{
    (void)data;
    free(p);
}

static void *
jansson_alloc(size_t n)
{
    return as_xmalloc(n);
}

int
as_glpk_term(void *info, const char *s)
{
    size_t have = strlen(glpk_line);

    (void)info;
    if (as_verbosity >= 2)
        fputs(s, stderr);
    for (; *s != '\0'; s++) {
        if (*s == '\n') {
            if (strncmp(glpk_line, "Error detected in file", 22) != 0)
                memcpy(glpk_last, glpk_line, sizeof glpk_last);
            have = 0;
        } else if (have + 1 < sizeof glpk_line) {
            glpk_line[have++] = *s;
        }
        glpk_line[have] = '\0';
    }
    return 1; /* never to stdout */
}

static void
glpk_error(void *info)
{
    char where[300];
    size_t n;

    (void)info;
    n = strlen(glpk_last);
    while (n > 0 && (glpk_last[n - 1] == ' ' || glpk_last[n - 1] == '\r'))
        glpk_last[--n] = '\0';
    if (strstr(glpk_last, "memory") != NULL) {
        snprintf(where, sizeof where, "GLPK (%s)", glpk_last);
        as_oom(0, where);
    }
    /* Not memory: a GLPK-internal check failed -- still one line and exit 1, no abort(). */
    as_die("GLPK failed: %s", glpk_last[0] ? glpk_last : "internal error");
}

void
as_glpk_hooks(void)
{
    glp_term_hook(as_glpk_term, NULL);
    glp_error_hook(glpk_error, NULL);
}

static void
hooks_once_fn(void)
{
    json_set_alloc_funcs(jansson_alloc, free);
    pcre2_gctx = pcre2_general_context_create(pcre2_alloc, pcre2_release, NULL);
    if (pcre2_gctx == NULL)
        as_oom(0, "PCRE2");
    pcre2_cctx = pcre2_compile_context_create(pcre2_gctx);
    if (pcre2_cctx == NULL)
        as_oom(0, "PCRE2");
}

void
as_lib_hooks_install(void)
{
    pthread_once(&hooks_once, hooks_once_fn);
    as_glpk_hooks();
}

pcre2_general_context *
as_pcre2_gcontext(void)
{
    pthread_once(&hooks_once, hooks_once_fn);
    return pcre2_gctx;
}

pcre2_compile_context *
as_pcre2_ccontext(void)
{
    pthread_once(&hooks_once, hooks_once_fn);
    return pcre2_cctx;
}
