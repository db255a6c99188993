/* autoshard.h -- the shared base every module includes: status codes, the
 * error record, allocation that never fails, arenas, growable vectors and
 * logging.
 *
 * Conventions (stated once, used everywhere):
 *  - A fallible function returns int (an as_status), takes `as_err *err`
 *    last, and fills err->msg with one lower-case line without a trailing
 *    period ("FILE:LINE:COL: what was wrong").  main prints it once as
 *    "autoshard: MSG".
 *  - Out-of-memory is not an error code: as_x*alloc (and the hooks the
 *    libraries get, see as_lib_hooks_install) print one line, remove
 *    temporary output files and exit 1.
 *  - Objects come in new/free pairs; free(NULL) is a no-op.
 */
#ifndef AS_AUTOSHARD_H
#define AS_AUTOSHARD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Status codes. */
typedef enum as_status {
    AS_OK = 0,
    AS_EUSAGE,    /* bad option or argument */
    AS_EIO,       /* cannot open/read/write a file */
    AS_EPARSE,    /* malformed graph, mesh, profile or instance file */
    AS_ESOLVER,   /* a backend failed (GLPK/CBC error, not "infeasible") */
    AS_EINFEAS,   /* solved, but nothing fits the limits (exit 3) */
    AS_EINTERNAL  /* broken invariant: a bug, the message says where */
} as_status;

/* Process exit codes (documented in --help and README). */
enum {
    AS_EXIT_OK = 0,
    AS_EXIT_RUNTIME = 1, /* I/O, solver failure */
    AS_EXIT_USAGE = 2,   /* usage error, malformed input */
    AS_EXIT_INFEAS = 3   /* solved, but no plan fits the limits */
};

typedef struct as_err {
    int code;      /**< as_status */
    char msg[512]; /**< one line, no trailing newline */
} as_err;

/** Set *err to CODE and a printf-formatted message; returns CODE. */
int as_errf(as_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/**
 * Copy SRC to DST (CAP bytes, NUL-terminated, truncated) with every control
 * byte (newline, CR, NUL-less binary from an input file) written as \xNN,
 * so a message quoting input stays one line.  as_errf does this itself.
 */
void as_one_line(char *dst, size_t cap, const char *src);
/** Prefix err->msg with a formatted context ("mesh '2x4': " + old msg). */
void as_err_prefix(as_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Reset *err to AS_OK with an empty message. */
void as_err_clear(as_err *err);
/** Map an as_status to a process exit code. */
int as_status_exit(int code);
/* At the end of a command that exited STATUS: flush stdout; if that or an
 * earlier write to it failed (/dev/full, a closed pipe) and the command did
 * not fail already, print one line and return exit status 1. */
int as_stdout_finish(int status);

#define AS_CHECK(expr)                                                                             \
    do {                                                                                           \
        int as_rc_ = (expr);                                                                       \
        if (as_rc_ != AS_OK)                                                                       \
            return as_rc_;                                                                         \
    } while (0)
#define AS_CHECK_GOTO(rc, expr, label)                                                             \
    do {                                                                                           \
        if (((rc) = (expr)) != AS_OK)                                                              \
            goto label;                                                                            \
    } while (0)

/* Allocation: on out-of-memory, one line on stderr and exit 1 (as_oom). */
/** Out of memory allocating N bytes (0: unknown, SIZE_MAX: a size overflows) in WHERE (or NULL): print, remove temporaries, _exit(1). */
_Noreturn void as_oom(size_t n, const char *where);
/** Fatal resource failure: "autoshard: MSG" on stderr, remove temporaries, _exit(1). */
_Noreturn void as_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Route GLPK's, igraph's, jansson's and PCRE2's allocation failures to as_oom (idempotent; src/libhooks.c). */
void as_lib_hooks_install(void);
/** Remove temporary output files on SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ. */
void as_install_signal_cleanup(void);
void *as_xmalloc(size_t n);
void *as_xcalloc(size_t n, size_t size);
void *as_xrealloc(void *p, size_t n);
void *as_xreallocarray(void *p, size_t n, size_t size);
char *as_xstrdup(const char *s);
char *as_xstrndup(const char *s, size_t n);
char *as_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Arenas: many small allocations released together. */
typedef struct as_arena as_arena;
as_arena *as_arena_new(void);
void as_arena_free(as_arena *a);
/** Aligned (16 bytes), uninitialised memory valid until as_arena_free. */
void *as_arena_alloc(as_arena *a, size_t n);
void *as_arena_calloc(as_arena *a, size_t n, size_t size);
char *as_arena_strdup(as_arena *a, const char *s);
char *as_arena_strndup(as_arena *a, const char *s, size_t n);
void *as_arena_memdup(as_arena *a, const void *p, size_t n);
/** Bytes obtained from malloc by the arena so far. */
size_t as_arena_bytes(const as_arena *a);

/* Growable vectors: AS_VEC(int) v = {0}; AS_VEC_PUSH(&v, 3); free(v.v); */
#define AS_VEC(T)                                                                                  \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, cap;                                                                             \
    }
#define AS_VEC_RESERVE(vec, want)                                                                  \
    do {                                                                                           \
        if ((want) > (vec)->cap) {                                                                 \
            size_t as_nc_ = (vec)->cap ? (vec)->cap * 2 : 8;                                       \
            while (as_nc_ < (want))                                                                \
                as_nc_ *= 2;                                                                       \
            (vec)->v = as_xreallocarray((vec)->v, as_nc_, sizeof(*(vec)->v));                      \
            (vec)->cap = as_nc_;                                                                   \
        }                                                                                          \
    } while (0)
#define AS_VEC_PUSH(vec, x)                                                                        \
    do {                                                                                           \
        AS_VEC_RESERVE((vec), (vec)->n + 1);                                                       \
        (vec)->v[(vec)->n++] = (x);                                                                \
    } while (0)
#define AS_VEC_FREE(vec)                                                                           \
    do {                                                                                           \
        free((vec)->v);                                                                            \
        (vec)->v = NULL;                                                                           \
        (vec)->n = (vec)->cap = 0;                                                                 \
    } while (0)

/* String -> int64 hash map (open addressing); keys are borrowed, not copied. */
typedef struct as_strmap {
    const char **keys;
    int64_t *vals;
    uint64_t *hashes; /* of each slot's key: probes compare them first, growing reuses them */
    size_t cap, n;
} as_strmap;
void as_strmap_init(as_strmap *m);
void as_strmap_destroy(as_strmap *m);
/** Insert or replace; KEY must outlive the map. */
void as_strmap_put(as_strmap *m, const char *key, int64_t val);
/** Look up KEY (LEN bytes, or strlen if LEN is (size_t)-1); returns 1 and sets *val if found. */
int as_strmap_get(const as_strmap *m, const char *key, size_t len, int64_t *val);

/* Distinct double vectors, each held once (hash-consing): a reduced 3-axis problem's
   memory rows and the heuristics' views repeat the same vectors at many points.  The
   vectors are borrowed: the caller owns and frees them. */
typedef struct as_vpool {
    const double **v; /**< n vectors in order of addition */
    size_t *k;        /**< their lengths */
    uint64_t *h;      /**< their hashes */
    size_t n, cap;
    size_t *tab, tcap; /**< open addressing: index + 1, 0 = empty */
    uint64_t last_h;   /**< the last as_vpool_find that found nothing: its hash and slot */
    size_t last_at;
} as_vpool;
/** The pool's arrays freed (not the vectors); zeroed. */
void as_vpool_destroy(as_vpool *pl);
/** The pooled vector with the values of X[0..K) (-0 and 0 alike), or NULL: then
    as_vpool_add may add one (before any other find). */
const double *as_vpool_find(as_vpool *pl, const double *x, size_t k);
/** Add X (K entries, the values the last as_vpool_find did not find), borrowed. */
void as_vpool_add(as_vpool *pl, const double *x, size_t k);
/** X (K entries, malloc'd) held once: the pooled vector with its values (X freed), or X,
    added.  The caller frees the pool's vectors, as with as_vpool_add. */
double *as_vpool_take(as_vpool *pl, double *x, size_t k);

/* Logging to stderr: level 0 quiet, 1 normal (warnings), 2 verbose. */
extern int as_verbosity;
void as_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void as_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void as_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Misc. */
/** Monotonic wall time in seconds. */
double as_now(void);
/** Peak resident set size of this process in bytes (0 if unknown). */
size_t as_peak_rss(void);
/**
 * Where PATH (a JSON path as messages print it: `nodes[3].c`, `'mesh'`,
 * `pipeline.layers[2]`; "" is the root) starts in the JSON TEXT: its 1-based
 * *LINE and *COL, or those of the deepest part of PATH present.  0 if PATH
 * is not a path.
 */
int as_json_locate(const char *text, size_t len, const char *path, int *line, int *col);
/**
 * Give the error "NAME: PATH: what" of a JSON reader the position of PATH in
 * TEXT ("NAME:LINE:COL: PATH: what"; the root's position when the message
 * names no path).  Other messages are left as they are.
 */
void as_err_json_pos(as_err *err, const char *name, const char *text, size_t len);
/** AS_EPARSE "PATH:LINE:COL: contains a NUL byte (WHAT)" at the first NUL of TEXT. */
int as_err_nul(as_err *err, const char *path, const char *text, const char *what);
/**
 * Ask for transparent huge pages on the whole 2 MiB pages inside [P, P + BYTES)
 * (a no-op for arrays under 2 MiB and off Linux): the first touches of a big
 * array then fault once per 2 MiB instead of once per 4 KiB.
 */
void as_huge_pages(void *p, size_t bytes);
/** as_xmalloc(N * SIZE) with as_huge_pages on it: for big arrays filled once. */
void *as_xmalloc_huge(size_t n, size_t size);
/** The largest input as_read_file reads (4 GiB; AUTOSHARD_READ_MAX=N in the
    environment sets another cap, for tests). */
#define AS_READ_MAX ((size_t)4 << 30)
/**
 * Read a whole file ("-" is stdin) into a NUL-terminated malloc'ed buffer
 * (a regular file: one buffer of its size, on huge pages).  A file or stream
 * longer than AS_READ_MAX is AS_EPARSE "PATH: input larger than N bytes ...",
 * read no further.
 */
int as_read_file(const char *path, char **buf, size_t *len, as_err *err);
/**
 * Write LEN bytes atomically: to PATH.tmp.XXXXXX, then rename over PATH, so
 * a failed write never leaves a half-written file.  PATH "-" or NULL is stdout.
 */
int as_write_file_atomic(const char *path, const char *buf, size_t len, as_err *err);
/**
 * An output file being written: a temporary file beside its target, renamed
 * over the target on commit, so a failed write never leaves half a file.
 * Targets that exist and are not regular files (a terminal, /dev/null, a
 * FIFO) are written in place; symlinks are followed (the link stays).
 * PATH "-" or NULL is stdout.
 */
typedef struct as_outfile {
    FILE *fp;      /**< write here */
    char *tmp;     /**< named temporary file, NULL when unnamed (O_TMPFILE) or in place */
    char *final;   /**< the file replaced on commit */
    int in_place;  /**< a device or FIFO written directly */
    char path[64 + 4096]; /**< a path that opens the file being written (for libraries) */
} as_outfile;
int as_outfile_open(as_outfile *o, const char *path, as_err *err);
/** Flush, sync and rename into place; on failure the temporary file is removed. */
int as_outfile_commit(as_outfile *o, as_err *err);
/** Give up: close and remove the temporary file. */
void as_outfile_abort(as_outfile *o);
/**
 * Create a temporary file "PATH.tmp.XXXXXX" beside PATH with the mode a plain
 * fopen would give (0666 less the umask); *TMP gets its malloc'ed name.
 * Returns the open descriptor, or -1 with AS_EIO in ERR.  Rename it over
 * PATH when complete, unlink it on failure.
 */
int as_mkstemp_beside(const char *path, char **tmp, as_err *err);
/** Unlink and free a name from as_mkstemp_beside (and stop tracking it). */
void as_tmp_remove(char *tmp);
/** Free a name from as_mkstemp_beside that was renamed into place. */
void as_tmp_forget(char *tmp);
/**
 * Parse a byte count: a finite number >= 0 with an optional suffix K/M/G/T
 * or KB/MB/GB/TB (powers of 1000) or Ki/Mi/Gi/Ti, KiB/MiB/GiB/TiB (1024), or
 * B.  Returns 1 and sets *OUT, or 0 (nothing written) for anything else,
 * including overflow to infinity ("1e400", "1e308T").
 */
int as_parse_bytes(const char *s, double *out);
/** Format a byte count as "1.50 GiB" into BUF (at least 32 bytes). */
const char *as_fmt_bytes(double bytes, char *buf, size_t n);
/** Format a count with SI suffix ("1.23 T") into BUF. */
const char *as_fmt_si(double x, char *buf, size_t n);
/** Deterministic 64-bit PRNG (splitmix64 / xoshiro256**). */
typedef struct as_rng {
    uint64_t s[4];
} as_rng;
void as_rng_seed(as_rng *r, uint64_t seed);
uint64_t as_rng_next(as_rng *r);
/** Uniform double in [0, 1). */
double as_rng_uniform(as_rng *r);
/** Uniform integer in [lo, hi]. */
int64_t as_rng_range(as_rng *r, int64_t lo, int64_t hi);

/* Checked 64-bit arithmetic: return 0 on overflow. */
int as_mul_ok(int64_t a, int64_t b, int64_t *out);
int as_add_ok(int64_t a, int64_t b, int64_t *out);

#endif /* AS_AUTOSHARD_H */
