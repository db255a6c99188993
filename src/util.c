/* util.c -- the shared base: errors, allocation, arenas, string maps,
 * logging, files, formatting and a deterministic PRNG.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "autoshard.h"

int as_verbosity = 1;

/* Errors. */

void
as_one_line(char *dst, size_t cap, const char *src)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    if (cap == 0)
        return;
    for (; *src != '\0'; src++) {
        unsigned char c = (unsigned char)*src;

        if (c < 0x20 || c == 0x7f) { /* a control byte from the input: \xNN */
            if (o + 4 >= cap)
                break;
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        } else {
            if (o + 1 >= cap)
                break;
            dst[o++] = (char)c;
        }
    }
    dst[o] = '\0';
}

int
as_errf(as_err *err, int code, const char *fmt, ...)
{
    char raw[sizeof err->msg];
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    as_one_line(err->msg, sizeof err->msg, raw);
    return code;
}

void
as_err_prefix(as_err *err, const char *fmt, ...)
{
    char raw[512], pre[512], old[512];
    va_list ap;

    if (err == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    as_one_line(pre, sizeof pre, raw);
    size_t np;

    memcpy(old, err->msg, sizeof old);
    np = strlen(pre);
    if (np >= sizeof err->msg)
        np = sizeof err->msg - 1;
    memcpy(err->msg, pre, np);
    snprintf(err->msg + np, sizeof err->msg - np, "%.*s", (int)(sizeof err->msg - 1), old);
}

void
as_err_clear(as_err *err)
{
    if (err == NULL)
        return;
    err->code = AS_OK;
    err->msg[0] = '\0';
}

int
as_status_exit(int code)
{
    switch (code) {
    case AS_OK:
        return AS_EXIT_OK;
    case AS_EUSAGE:
    case AS_EPARSE:
        return AS_EXIT_USAGE;
    case AS_EINFEAS:
        return AS_EXIT_INFEAS;
    default:
        return AS_EXIT_RUNTIME;
    }
}

int
as_stdout_finish(int status)
{
    int bad, e;

    errno = 0;
    bad = fflush(stdout) != 0 || ferror(stdout);
    e = errno; /* 0 when the failure was an earlier write's: no reason to give */

    if (!bad || status != AS_EXIT_OK)
        return status;
    fprintf(stderr, "autoshard: cannot write to standard output: %s\n",
            e != 0 ? strerror(e) : "write error");
    return AS_EXIT_RUNTIME;
}

/* Temporary files alive now.
 *
 * DESIGN: output goes to an unnamed file (O_TMPFILE) that only gets a name
 * at commit, so SIGKILL leaves nothing behind (except in the instant between
 * linkat and rename when the target exists: Linux has no linkat that replaces
 * a file, and a kill there leaves a complete copy under the temporary name,
 * never a partial one; tests/cli/bad_inputs_output.sh); where the file system
 * has no O_TMPFILE, or a library needs a path (GLPK's MPS writer), a named
 * temporary "PATH.tmp.XXXXXX" is tracked here and removed by the fatal
 * signal handler and by the out-of-memory exit.  The table is written before
 * a name is used and read from a signal handler, hence the fixed slots.
 */
#define TMP_SLOTS 16
static char *volatile tmp_live[TMP_SLOTS];

static void
tmp_track(char *name)
{
    int i;

    for (i = 0; i < TMP_SLOTS; i++)
        if (tmp_live[i] == NULL) {
            tmp_live[i] = name;
            return;
        }
}

static void
tmp_untrack(const char *name)
{
    int i;

    for (i = 0; i < TMP_SLOTS; i++)
        if (tmp_live[i] == name)
            tmp_live[i] = NULL;
}

/* Async-signal-safe: unlink every tracked temporary file. */
static void
tmp_remove_all(void)
{
    int i;

    for (i = 0; i < TMP_SLOTS; i++)
        if (tmp_live[i] != NULL)
            unlink(tmp_live[i]);
}

static void
fatal_signal(int sig)
{
    tmp_remove_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

void
as_install_signal_cleanup(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ};
    size_t i;

    for (i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction sa, old;

        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* nohup and friends: stay ignored */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Allocation. */

void
as_die(const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    int len;

    /* No stdio buffers and no malloc here: the heap may be exhausted. */
    memcpy(msg, "autoshard: ", 11);
    va_start(ap, fmt);
    len = vsnprintf(msg + 11, sizeof msg - 12, fmt, ap);
    va_end(ap);
    if (len < 0)
        len = 0;
    len += 11;
    if ((size_t)len > sizeof msg - 2)
        len = (int)sizeof msg - 2;
    msg[len++] = '\n';
    (void)!write(2, msg, (size_t)len);
    tmp_remove_all();
    _exit(AS_EXIT_RUNTIME);
}

void
as_oom(size_t n, const char *where)
{
    const char *in = where != NULL ? " in " : "", *w = where != NULL ? where : "";

    if (n == SIZE_MAX) {
#ifdef AS_FUZZING
        /* a size computed from unchecked input: a finding, which libFuzzer keeps only on abort() */
        fprintf(stderr, "autoshard: out of memory (a size overflows)%s%s\n", in, w);
        abort();
#endif
        as_die("out of memory (a size overflows)%s%s", in, w);
    }
    if (n == 0)
        as_die("out of memory%s%s", in, w);
    as_die("out of memory allocating %zu bytes%s%s", n, in, w);
}

static void
oom(size_t n)
{
    as_oom(n, NULL);
}

void *
as_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL)
        oom(n);
    return p;
}

void *
as_xcalloc(size_t n, size_t size)
{
    void *p;

    if (size != 0 && n > SIZE_MAX / size)
        oom(SIZE_MAX);
    p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        oom(n * size);
    return p;
}

void *
as_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (q == NULL)
        oom(n);
    return q;
}

void *
as_xreallocarray(void *p, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        oom(SIZE_MAX);
    return as_xrealloc(p, n * size);
}

char *
as_xstrdup(const char *s)
{
    return as_xstrndup(s, strlen(s));
}

char *
as_xstrndup(const char *s, size_t n)
{
    char *p;

    if (n == SIZE_MAX)
        oom(SIZE_MAX);
    p = as_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *
as_xasprintf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    p = as_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* Arenas.
 *
 * DESIGN: a singly linked list of blocks; small requests are carved from
 * the head block, requests larger than a quarter block get a block of their
 * own (inserted behind the head so the head keeps its free space).
 */

#define ARENA_BLOCK (64 * 1024)

struct arena_block {
    struct arena_block *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

struct as_arena {
    struct arena_block *head;
    size_t bytes;
};

as_arena *
as_arena_new(void)
{
    return as_xcalloc(1, sizeof(as_arena));
}

void
as_arena_free(as_arena *a)
{
    struct arena_block *b, *next;

    if (a == NULL)
        return;
    for (b = a->head; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

void *
as_arena_alloc(as_arena *a, size_t n)
{
    struct arena_block *b;

    if (n > SIZE_MAX / 2)
        oom(SIZE_MAX);
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    if (a->head != NULL && a->head->size - a->head->used >= n) {
        void *p = a->head->data + a->head->used;
        a->head->used += n;
        return p;
    }
    if (n > ARENA_BLOCK / 4) {
        b = as_xmalloc(sizeof *b + n);
        b->size = b->used = n;
        a->bytes += sizeof *b + n;
        if (a->head != NULL) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = NULL;
            a->head = b;
        }
        return b->data;
    }
    b = as_xmalloc(sizeof *b + ARENA_BLOCK);
    b->size = ARENA_BLOCK;
    b->used = n;
    b->next = a->head;
    a->head = b;
    a->bytes += sizeof *b + ARENA_BLOCK;
    return b->data;
}

void *
as_arena_calloc(as_arena *a, size_t n, size_t size)
{
    void *p;

    if (size != 0 && n > SIZE_MAX / size)
        oom(SIZE_MAX);
    p = as_arena_alloc(a, n * size);
    memset(p, 0, n * size);
    return p;
}

char *
as_arena_strndup(as_arena *a, const char *s, size_t n)
{
    char *p = as_arena_alloc(a, n + 1);

    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *
as_arena_strdup(as_arena *a, const char *s)
{
    return as_arena_strndup(a, s, strlen(s));
}

void *
as_arena_memdup(as_arena *a, const void *p, size_t n)
{
    void *q = as_arena_alloc(a, n);

    if (n)
        memcpy(q, p, n);
    return q;
}

size_t
as_arena_bytes(const as_arena *a)
{
    return a->bytes;
}

/* String maps (FNV-1a, linear probing, load <= 1/2). */

static uint64_t
strmap_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void
as_strmap_init(as_strmap *m)
{
    memset(m, 0, sizeof *m);
}

void
as_strmap_destroy(as_strmap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->hashes);
    memset(m, 0, sizeof *m);
}

void
as_vpool_destroy(as_vpool *pl)
{
    free(pl->v);
    free(pl->k);
    free(pl->h);
    free(pl->tab);
    memset(pl, 0, sizeof *pl);
}

const double *
as_vpool_find(as_vpool *pl, const double *x, size_t k)
{
    uint64_t h = 1469598103934665603ull ^ k;
    size_t s, at, i, nc;

    for (s = 0; s < k; s++) {
        uint64_t bits;
        double d = x[s] == 0 ? 0 : x[s]; /* -0 and 0 alike (compared with ==) */
        memcpy(&bits, &d, sizeof bits);
        h = (h ^ bits) * 1099511628211ull;
    }
    if (2 * (pl->n + 1) > pl->tcap) { /* grow and rehash */
        nc = pl->tcap ? 2 * pl->tcap : 1024;
        free(pl->tab);
        pl->tab = as_xcalloc(nc, sizeof *pl->tab);
        pl->tcap = nc;
        for (i = 0; i < pl->n; i++) {
            for (at = (size_t)(pl->h[i] % nc); pl->tab[at] != 0; at = (at + 1) % nc)
                ;
            pl->tab[at] = i + 1;
        }
    }
    for (at = (size_t)(h % pl->tcap); pl->tab[at] != 0; at = (at + 1) % pl->tcap) {
        i = pl->tab[at] - 1;
        if (pl->h[i] == h && pl->k[i] == k) {
            for (s = 0; s < k && pl->v[i][s] == x[s]; s++)
                ;
            if (s == k)
                return pl->v[i];
        }
    }
    pl->last_h = h;
    pl->last_at = at;
    return NULL;
}

void
as_vpool_add(as_vpool *pl, const double *x, size_t k)
{
    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? 2 * pl->cap : 256;
        pl->v = as_xreallocarray(pl->v, pl->cap, sizeof *pl->v);
        pl->k = as_xreallocarray(pl->k, pl->cap, sizeof *pl->k);
        pl->h = as_xreallocarray(pl->h, pl->cap, sizeof *pl->h);
    }
    pl->v[pl->n] = x;
    pl->k[pl->n] = k;
    pl->h[pl->n] = pl->last_h;
    pl->tab[pl->last_at] = ++pl->n;
}

double *
as_vpool_take(as_vpool *pl, double *x, size_t k)
{
    const double *y = as_vpool_find(pl, x, k);

    if (y != NULL) {
        free(x);
        return (double *)y;
    }
    as_vpool_add(pl, x, k);
    return x;
}

static void
strmap_grow(as_strmap *m)
{
    size_t oldcap = m->cap, i, j;
    const char **oldk = m->keys;
    int64_t *oldv = m->vals;
    uint64_t *oldh = m->hashes;

    m->cap = oldcap ? oldcap * 2 : 64;
    m->keys = as_xcalloc(m->cap, sizeof *m->keys);
    m->vals = as_xcalloc(m->cap, sizeof *m->vals);
    m->hashes = as_xcalloc(m->cap, sizeof *m->hashes);
    for (i = 0; i < oldcap; i++) {
        if (oldk[i] == NULL)
            continue;
        /* keys are distinct: the first free slot, with the hash kept */
        for (j = oldh[i] & (m->cap - 1); m->keys[j] != NULL; j = (j + 1) & (m->cap - 1))
            ;
        m->keys[j] = oldk[i];
        m->vals[j] = oldv[i];
        m->hashes[j] = oldh[i];
    }
    free(oldk);
    free(oldv);
    free(oldh);
}

void
as_strmap_put(as_strmap *m, const char *key, int64_t val)
{
    size_t len = strlen(key), i;
    uint64_t h = strmap_hash(key, len);

    if ((m->n + 1) * 2 > m->cap)
        strmap_grow(m);
    i = h & (m->cap - 1);
    while (m->keys[i] != NULL) {
        if (m->hashes[i] == h && strcmp(m->keys[i], key) == 0) {
            m->vals[i] = val;
            return;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->hashes[i] = h;
    m->n++;
}

int
as_strmap_get(const as_strmap *m, const char *key, size_t len, int64_t *val)
{
    size_t i;
    uint64_t h;

    if (m->cap == 0)
        return 0;
    if (len == (size_t)-1)
        len = strlen(key);
    h = strmap_hash(key, len);
    i = h & (m->cap - 1);
    while (m->keys[i] != NULL) {
        if (m->hashes[i] == h && strncmp(m->keys[i], key, len) == 0 && m->keys[i][len] == '\0') {
            if (val != NULL)
                *val = m->vals[i];
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

/* Logging. */

void
as_warn(const char *fmt, ...)
{
    va_list ap;

    if (as_verbosity < 1)
        return;
    fputs("autoshard: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void
as_info(const char *fmt, ...)
{
    va_list ap;

    if (as_verbosity < 1)
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void
as_debug(const char *fmt, ...)
{
    va_list ap;

    if (as_verbosity < 2)
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Misc. */

double
as_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t
as_peak_rss(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (size_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
}

void
as_huge_pages(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t a = ((uintptr_t)p + ((uintptr_t)1 << 21) - 1) & ~(((uintptr_t)1 << 21) - 1);
    uintptr_t b = ((uintptr_t)p + bytes) & ~(((uintptr_t)1 << 21) - 1);

    if (p != NULL && b > a)
        (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void *
as_xmalloc_huge(size_t n, size_t size)
{
    void *p;

    if (size != 0 && n > SIZE_MAX / size)
        as_oom(SIZE_MAX, NULL);
    p = as_xmalloc(n * size);
    as_huge_pages(p, n * size);
    return p;
}

int
as_read_file(const char *path, char **buf, size_t *len, as_err *err)
{
    FILE *fp;
    char *p = NULL;
    size_t n = 0, cap = 0, got;
    int is_stdin = strcmp(path, "-") == 0;
    struct stat st;

    size_t max = AS_READ_MAX;
    const char *env = getenv("AUTOSHARD_READ_MAX"); /* tests: a smaller cap */

    if (env != NULL && *env != '\0')
        max = (size_t)strtoull(env, NULL, 10);
    fp = is_stdin ? stdin : fopen(path, "rb");
    if (fp == NULL)
        return as_errf(err, AS_EIO, "%s: %s", path, strerror(errno));
    /* a regular file: one buffer of its size (+ room to see the end), so a big
     * file is neither copied by realloc nor faulted in 4 KiB at a time */
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max) {
        if (!is_stdin)
            fclose(fp);
        return as_errf(err, AS_EPARSE, "%s: input larger than %zu bytes, the most autoshard reads",
                       path, max);
    }
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uintmax_t)st.st_size < (uintmax_t)SIZE_MAX / 2) {
        cap = (size_t)st.st_size + 65536;
        p = as_xmalloc(cap + 1);
        as_huge_pages(p, cap + 1);
    }
    for (;;) {
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 131072;
            p = as_xrealloc(p, cap + 1);
        }
        got = fread(p + n, 1, cap - n, fp);
        n += got;
        if (got == 0)
            break;
        if (n > max) { /* /dev/zero, a runaway pipe: stop before memory runs out */
            free(p);
            if (!is_stdin)
                fclose(fp);
            return as_errf(err, AS_EPARSE, "%s: input larger than %zu bytes, the most autoshard reads",
                           path, max);
        }
    }
    if (ferror(fp)) {
        int e = errno;
        free(p);
        if (!is_stdin)
            fclose(fp);
        return as_errf(err, AS_EIO, "%s: read error: %s", path, strerror(e));
    }
    if (!is_stdin)
        fclose(fp);
    p[n] = '\0';
    *buf = p;
    if (len != NULL)
        *len = n;
    return AS_OK;
}

int
as_mkstemp_beside(const char *path, char **tmp, as_err *err)
{
    mode_t mask;
    int fd;

    *tmp = as_xasprintf("%s.tmp.XXXXXX", path);
    if ((fd = mkstemp(*tmp)) < 0) {
        as_errf(err, AS_EIO, "%s: %s", path, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    tmp_track(*tmp);
    /* mkstemp creates 0600; give the file the mode a plain fopen would. */
    mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    return fd;
}

void
as_tmp_remove(char *tmp)
{
    if (tmp == NULL)
        return;
    tmp_untrack(tmp);
    unlink(tmp);
    free(tmp);
}

void
as_tmp_forget(char *tmp)
{
    if (tmp == NULL)
        return;
    tmp_untrack(tmp);
    free(tmp);
}

/* An unnamed file in PATH's directory, or -1 (the caller falls back to a named one). */
static int
open_unnamed_beside(const char *path)
{
#ifdef O_TMPFILE
    const char *slash = strrchr(path, '/');
    char *dir;
    mode_t mask;
    int fd;

    if (slash == NULL)
        dir = as_xstrdup(".");
    else
        dir = as_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
    mask = umask(0);
    umask(mask);
    fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666 & ~mask);
    free(dir);
    return fd;
#else
    (void)path;
    return -1;
#endif
}

/* Give the unnamed file O->fp a name beside O->final and rename it over O->final. */
static int
link_unnamed(as_outfile *o)
{
    char proc[64];
    int i, e = EEXIST;

    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(o->fp));
    for (i = 0; i < 100 && e == EEXIST; i++) {
        char *name = as_xasprintf("%s.tmp.%06x", o->final, (unsigned)(as_now() * 1e6) ^
                                  (unsigned)getpid() * 2654435761u ^ (unsigned)i * 40503u);

        tmp_track(name);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0) {
            if (rename(name, o->final) == 0) {
                as_tmp_forget(name);
                return 0;
            }
            e = errno;
            as_tmp_remove(name);
            break;
        }
        e = errno;
        as_tmp_forget(name);
    }
    errno = e;
    return -1;
}

/*
 * Where output for PATH goes.  A path that exists and is not a regular file
 * (a terminal, /dev/null, a FIFO) is written in place: renaming over it
 * would replace the device.  A symlink is followed, so the file it points to
 * is replaced and the link stays.  Directories are refused.
 */
int
as_outfile_open(as_outfile *o, const char *path, as_err *err)
{
    struct stat st;
    int fd;

    memset(o, 0, sizeof *o);
    if (path == NULL || strcmp(path, "-") == 0) {
        o->fp = stdout;
        o->final = as_xstrdup("<stdout>");
        return AS_OK;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            return as_errf(err, AS_EIO, "%s: is a directory", path);
        if ((o->fp = fopen(path, "wb")) == NULL)
            return as_errf(err, AS_EIO, "%s: %s", path, strerror(errno));
        o->final = as_xstrdup(path);
        o->in_place = 1;
        return AS_OK;
    }
    o->final = realpath(path, NULL); /* NULL when PATH does not exist yet */
    if (o->final == NULL)
        o->final = as_xstrdup(path);
    if ((fd = open_unnamed_beside(o->final)) >= 0) {
        snprintf(o->path, sizeof o->path, "/proc/self/fd/%d", fd);
    } else if ((fd = as_mkstemp_beside(o->final, &o->tmp, err)) >= 0) {
        snprintf(o->path, sizeof o->path, "%s", o->tmp);
    } else {
        free(o->final);
        o->final = NULL;
        return AS_EIO;
    }
    if ((o->fp = fdopen(fd, "wb")) == NULL) {
        as_errf(err, AS_EIO, "%s: %s", path, strerror(errno));
        close(fd);
        as_outfile_abort(o);
        return AS_EIO;
    }
    return AS_OK;
}

int
as_outfile_commit(as_outfile *o, as_err *err)
{
    int rc = AS_OK;

    if (o->fp == stdout) {
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = as_errf(err, AS_EIO, "<stdout>: write error: %s", strerror(errno));
    } else if (o->in_place) {
        if (ferror(o->fp) || fclose(o->fp) != 0)
            rc = as_errf(err, AS_EIO, "%s: write error: %s", o->final, strerror(errno));
        o->fp = NULL;
    } else if (ferror(o->fp) || fflush(o->fp) != 0 || fsync(fileno(o->fp)) != 0) {
        rc = as_errf(err, AS_EIO, "%s: write error: %s", o->final, strerror(errno));
    } else if (o->tmp == NULL) { /* unnamed: link it in, then close */
        if (link_unnamed(o) != 0) {
            rc = as_errf(err, AS_EIO, "%s: %s", o->final, strerror(errno));
        } else {
            int closed = fclose(o->fp);

            o->fp = NULL;
            if (closed != 0)
                rc = as_errf(err, AS_EIO, "%s: %s", o->final, strerror(errno));
        }
    } else if (fclose(o->fp) != 0 || (o->fp = NULL, rename(o->tmp, o->final) != 0)) {
        o->fp = NULL;
        rc = as_errf(err, AS_EIO, "%s: %s", o->final, strerror(errno));
    } else {
        as_tmp_forget(o->tmp);
        o->tmp = NULL;
    }
    if (rc != AS_OK) {
        as_outfile_abort(o);
        return rc;
    }
    o->fp = NULL;
    free(o->final);
    o->final = NULL;
    return AS_OK;
}

void
as_outfile_abort(as_outfile *o)
{
    if (o->fp != NULL && o->fp != stdout)
        fclose(o->fp);
    o->fp = NULL;
    as_tmp_remove(o->tmp);
    o->tmp = NULL;
    free(o->final);
    o->final = NULL;
}

int
as_write_file_atomic(const char *path, const char *buf, size_t len, as_err *err)
{
    as_outfile o;

    AS_CHECK(as_outfile_open(&o, path, err));
    if (len > 0 && fwrite(buf, 1, len, o.fp) != len) {
        as_errf(err, AS_EIO, "%s: write error: %s", o.final, strerror(errno));
        as_outfile_abort(&o);
        return AS_EIO;
    }
    return as_outfile_commit(&o, err);
}

int
as_parse_bytes(const char *s, double *out)
{
    static const char *const suf[] = {"K", "M", "G", "T"};
    char *end;
    double x, mul = 1;
    int i;

    errno = 0;
    x = strtod(s, &end);
    if (end == s || !isfinite(x) || x < 0 || errno == ERANGE)
        return 0;
    for (i = 0; *end != '\0' && i < 4; i++) {
        if (strcmp(end, suf[i]) == 0 || (end[0] == suf[i][0] && strcmp(end + 1, "B") == 0))
            mul = pow(1000, i + 1);
        else if (end[0] == suf[i][0] && (strcmp(end + 1, "i") == 0 || strcmp(end + 1, "iB") == 0))
            mul = pow(1024, i + 1);
    }
    if (*end != '\0' && mul == 1 && strcmp(end, "B") != 0)
        return 0;
    if (!isfinite(x * mul))
        return 0;
    *out = x * mul;
    return 1;
}

const char *
as_fmt_bytes(double bytes, char *buf, size_t n)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;

    while (bytes >= 1024.0 && u < 6) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f B", bytes);
    else
        snprintf(buf, n, "%.2f %s", bytes, unit[u]);
    return buf;
}

const char *
as_fmt_si(double x, char *buf, size_t n)
{
    static const char *suf[] = {"", " k", " M", " G", " T", " P", " E", " Z"};
    int u = 0;

    while ((x >= 1000.0 || x <= -1000.0) && u < 7) {
        x /= 1000.0;
        u++;
    }
    snprintf(buf, n, u ? "%.3g%s" : "%.4g%s", x, suf[u]);
    return buf;
}

static uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void
as_rng_seed(as_rng *r, uint64_t seed)
{
    int i;

    for (i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t
as_rng_next(as_rng *r)
{
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double
as_rng_uniform(as_rng *r)
{
    return (double)(as_rng_next(r) >> 11) * 0x1.0p-53;
}

int64_t
as_rng_range(as_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;

    if (span == 0)
        return (int64_t)as_rng_next(r);
    return lo + (int64_t)(as_rng_next(r) % span);
}

int
as_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int
as_add_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* ---- JSON positions for error messages ---- */

/* Skip whitespace from *I. */
static void
js_ws(const char *t, size_t n, size_t *i)
{
    while (*i < n && (t[*i] == ' ' || t[*i] == '\t' || t[*i] == '\n' || t[*i] == '\r'))
        (*i)++;
}

/* Skip the string starting at *I (a '"'); 0 at an unterminated one. */
static int
js_string(const char *t, size_t n, size_t *i)
{
    for ((*i)++; *i < n; (*i)++) {
        if (t[*i] == '\\')
            (*i)++;
        else if (t[*i] == '"') {
            (*i)++;
            return 1;
        }
    }
    return 0;
}

/* Skip the value starting at *I (iteratively: nesting depth costs nothing); 0 if malformed. */
static int
js_skip(const char *t, size_t n, size_t *i)
{
    size_t depth = 0;

    do {
        js_ws(t, n, i);
        if (*i >= n)
            return 0;
        if (t[*i] == '"') {
            if (!js_string(t, n, i))
                return 0;
        } else if (t[*i] == '{' || t[*i] == '[') {
            depth++;
            (*i)++;
        } else if (t[*i] == '}' || t[*i] == ']') {
            if (depth == 0)
                return 0;
            depth--;
            (*i)++;
        } else { /* a scalar: at least one byte (a stray one, a NUL, makes progress too) */
            do
                (*i)++;
            while (*i < n && t[*i] != ',' && t[*i] != ':' && t[*i] != ']' && t[*i] != '}' &&
                   t[*i] != ' ' && t[*i] != '\t' && t[*i] != '\r' && t[*i] != '\n');
        }
        if (depth > 0) { /* inside a container: skip separators, stop at closers */
            js_ws(t, n, i);
            while (*i < n && (t[*i] == ',' || t[*i] == ':')) {
                (*i)++;
                js_ws(t, n, i);
            }
        }
    } while (depth > 0);
    return 1;
}

/* Within the value at *I, step to the member KEY (KLEN bytes) or element IDX (KEY NULL). */
static int
js_step(const char *t, size_t n, size_t *i, const char *key, size_t klen, long idx)
{
    long k = 0;

    js_ws(t, n, i);
    if (*i >= n || t[*i] != (key != NULL ? '{' : '['))
        return 0;
    (*i)++;
    for (;;) {
        size_t ks;

        js_ws(t, n, i);
        if (*i >= n || t[*i] == '}' || t[*i] == ']')
            return 0;
        if (key != NULL) {
            if (t[*i] != '"')
                return 0;
            ks = *i + 1;
            if (!js_string(t, n, i))
                return 0;
            js_ws(t, n, i);
            if (*i >= n || t[*i] != ':')
                return 0;
            (*i)++;
            js_ws(t, n, i);
            if (*i - ks >= klen + 1 && memcmp(t + ks, key, klen) == 0 && t[ks + klen] == '"')
                return 1;
        } else if (k++ == idx) {
            return 1;
        }
        if (!js_skip(t, n, i))
            return 0;
        js_ws(t, n, i);
        if (*i < n && t[*i] == ',')
            (*i)++;
    }
}

int
as_json_locate(const char *text, size_t len, const char *path, int *line, int *col)
{
    size_t i = 0, at, k;
    const char *p = path;
    int found = 1;

    js_ws(text, len, &i);
    at = i;
    while (*p != '\0' && found) {
        if (*p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);

            if (end == p + 1 || *end != ']' || idx < 0)
                return 0;
            p = end + 1;
            found = js_step(text, len, &i, NULL, 0, idx);
        } else {
            const char *ks, *ke;

            if (*p == '.')
                p++;
            if (*p == '\'') {
                ks = ++p;
                ke = strchr(p, '\'');
                if (ke == NULL)
                    return 0;
                p = ke + 1;
            } else {
                ks = p;
                while (*p != '\0' && *p != '.' && *p != '[')
                    p++;
                ke = p;
            }
            if (ke == ks)
                return 0;
            for (const char *c = ks; c < ke; c++)
                if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-'))
                    return 0;
            found = js_step(text, len, &i, ks, (size_t)(ke - ks), 0);
        }
        if (found) {
            js_ws(text, len, &i);
            at = i;
        }
    }
    *line = 1;
    *col = 1;
    for (k = 0; k < at && k < len; k++) {
        if (text[k] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
    return 1;
}

void
as_err_json_pos(as_err *err, const char *name, const char *text, size_t len)
{
    size_t nl = strlen(name);
    const char *rest, *sep;
    char path[256];
    int line, col;

    if (err->code == AS_OK || strncmp(err->msg, name, nl) != 0 || strncmp(err->msg + nl, ": ", 2))
        return;
    rest = err->msg + nl + 2;
    sep = strstr(rest, ": ");
    path[0] = '\0';
    if (sep != NULL && (size_t)(sep - rest) < sizeof path) {
        memcpy(path, rest, (size_t)(sep - rest));
        path[sep - rest] = '\0';
    }
    if (!as_json_locate(text, len, path, &line, &col)) {
        char *sp = strchr(path, ' '); /* "mesh 'x=0'": the key before a quoted value */

        if (sp != NULL)
            *sp = '\0';
        if (!as_json_locate(text, len, path, &line, &col) &&
            !as_json_locate(text, len, "", &line, &col))
            return;
    }
    {
        char msg[sizeof err->msg];

        snprintf(msg, sizeof msg, "%s:%d:%d: %s", name, line, col, rest);
        memcpy(err->msg, msg, sizeof msg);
    }
}

int
as_err_nul(as_err *err, const char *path, const char *text, const char *what)
{
    size_t k, n = strlen(text);
    int line = 1, col = 1;

    for (k = 0; k < n; k++) {
        if (text[k] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return as_errf(err, AS_EPARSE, "%s:%d:%d: contains a NUL byte (%s)", path, line, col, what);
}
