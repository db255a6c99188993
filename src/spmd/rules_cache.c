/* rules_cache.c -- rule sets (building, printing), the process-wide rule
 * cache and its on-disk copy, and as_rules_get(), the one entry point.
 *
 * DESIGN: the memory cache is a string map from key to rule set guarded by
 * one mutex; discovery runs outside the lock (two threads may discover the
 * same key: the second result is dropped), so sweeps on many threads only
 * serialise on lookups.  The disk cache is read once, lazily, on the first
 * as_rules_get; every new discovered set rewrites the whole file atomically
 * (a few kB; discoveries are rare).  File format (text, version 1):
 *
 *   autoshard-rules-cache 1 FINGERPRINT NENTRIES CHECKSUM
 *   KEY NIN NOUT NRULES [DIMS:COMBINES:HALO]...
 *
 * FINGERPRINT hashes the registry (op names, arities, flags, attribute
 * schemas) and a build id (version, a hash of the executable's bytes); CHECKSUM is
 * FNV-1a 64 over every byte after the header line.  A stale, corrupt or
 * truncated file is reported at verbose level and rebuilt, never trusted.
 * Analytic and replicate-only sets are cheap and kept in memory only.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rules.h"

#define RC_VERSION 1
#define RC_MAGIC "autoshard-rules-cache"
#define RC_ALGO "shardcombine-2" /* bump when discovery changes its answers (2: small dims, strides) */

/* A rule set with its storage. */
typedef struct rc_set {
    as_rule_set pub;           /**< first: as_rule_set pointers are rc_set pointers */
    char *key, *why;
    AS_VEC(int8_t) dims;       /**< nrules * nin */
    AS_VEC(as_combine) combs;  /**< nrules * nout */
    AS_VEC(int) halo;          /**< nrules */
    as_shard_rule *rules;      /**< built by finish */
} rc_set;

static pthread_mutex_t rc_lock = PTHREAD_MUTEX_INITIALIZER;
static as_strmap rc_map;        /* key -> index in rc_sets */
static int rc_map_init;
static AS_VEC(rc_set *) rc_sets;
static as_rules_stats rc_stats;
static char *rc_path;           /* explicit path, "off", or NULL = default */
static char *rc_resolved;       /* path in use, NULL = disabled */
static int rc_resolved_ok;      /* rc_resolved computed */
static int rc_disk_loaded;

/* ---- rule sets ---- */

as_rule_set *
as_rules_i_set_new(const char *key, int nin, int nout, unsigned flags)
{
    rc_set *s = as_xcalloc(1, sizeof *s);

    s->key = as_xstrdup(key != NULL ? key : "");
    s->pub.key = s->key;
    s->pub.nin = nin;
    s->pub.nout = nout;
    s->pub.flags = flags;
    return &s->pub;
}

void
as_rules_i_set_why(as_rule_set *set, const char *why)
{
    rc_set *s = (rc_set *)set;

    free(s->why);
    s->why = as_xstrdup(why);
    s->pub.why = s->why;
    s->pub.flags |= AS_RULES_REPLICATE;
}

void
as_rules_i_set_add(as_rule_set *set, const int8_t *in_dim, const as_combine *out, int halo)
{
    rc_set *s = (rc_set *)set;
    int nin = set->nin, nout = set->nout, r, j;

    for (j = 0; j < nin && in_dim[j] < 0; j++)
        ;
    for (r = 0; r < (int)s->halo.n; r++) /* a rule splitting no input: one per combine */
        if ((nin == 0 || memcmp(s->dims.v + (size_t)r * nin, in_dim, (size_t)nin) == 0) &&
            (j < nin || memcmp(s->combs.v + (size_t)r * nout, out, nout * sizeof *out) == 0))
            return;
    for (j = 0; j < nin; j++)
        AS_VEC_PUSH(&s->dims, in_dim[j]);
    for (j = 0; j < nout; j++)
        AS_VEC_PUSH(&s->combs, out[j]);
    AS_VEC_PUSH(&s->halo, halo);
    set->nrules = (int)s->halo.n;
}

/* Order of rules: by in_dim, -1 after every dim; then by output combine. */
static const rc_set *rc_sort_set;

static int
rc_rule_cmp(const void *pa, const void *pb)
{
    const rc_set *s = rc_sort_set;
    int a = *(const int *)pa, b = *(const int *)pb, j;

    for (j = 0; j < s->pub.nin; j++) {
        int x = s->dims.v[(size_t)a * s->pub.nin + j], y = s->dims.v[(size_t)b * s->pub.nin + j];
        x = x < 0 ? 127 : x;
        y = y < 0 ? 127 : y;
        if (x != y)
            return x - y;
    }
    for (j = 0; j < s->pub.nout; j++) {
        const as_combine *x = &s->combs.v[(size_t)a * s->pub.nout + j];
        const as_combine *y = &s->combs.v[(size_t)b * s->pub.nout + j];
        if (x->kind != y->kind)
            return (int)x->kind - (int)y->kind;
        if (x->dim != y->dim)
            return x->dim - y->dim;
    }
    return a - b;
}

void
as_rules_i_set_finish(as_rule_set *set)
{
    static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;
    rc_set *s = (rc_set *)set;
    int n = (int)s->halo.n, nin = set->nin, nout = set->nout, r;
    int *ord = as_xcalloc((size_t)n + 1, sizeof *ord);
    int8_t *dims = as_xcalloc((size_t)n * nin + 1, 1);
    as_combine *combs = as_xcalloc((size_t)n * nout + 1, sizeof *combs);
    int *halo = as_xcalloc((size_t)n + 1, sizeof *halo);

    for (r = 0; r < n; r++)
        ord[r] = r;
    pthread_mutex_lock(&sort_lock); /* qsort has no context argument in C11 */
    rc_sort_set = s;
    qsort(ord, (size_t)n, sizeof *ord, rc_rule_cmp);
    pthread_mutex_unlock(&sort_lock);
    for (r = 0; r < n; r++) {
        if (nin > 0)
            memcpy(dims + (size_t)r * nin, s->dims.v + (size_t)ord[r] * nin, (size_t)nin);
        if (nout > 0)
            memcpy(combs + (size_t)r * nout, s->combs.v + (size_t)ord[r] * nout,
                   (size_t)nout * sizeof *combs);
        halo[r] = s->halo.v[ord[r]];
    }
    free(s->dims.v);
    free(s->combs.v);
    free(s->halo.v);
    s->dims.v = dims;
    s->combs.v = combs;
    s->halo.v = halo;
    s->dims.cap = (size_t)n * nin + 1;
    s->combs.cap = (size_t)n * nout + 1;
    s->halo.cap = (size_t)n + 1;
    free(ord);
    free(s->rules);
    s->rules = as_xcalloc((size_t)n + 1, sizeof *s->rules);
    for (r = 0; r < n; r++) {
        s->rules[r].id = r;
        s->rules[r].in_dim = dims + (size_t)r * nin;
        s->rules[r].out = combs + (size_t)r * nout;
        s->rules[r].halo = halo[r];
    }
    set->rules = s->rules;
    set->nrules = n;
}

void
as_rules_set_free(as_rule_set *set)
{
    rc_set *s = (rc_set *)set;

    if (s == NULL)
        return;
    free(s->key);
    free(s->why);
    free(s->dims.v);
    free(s->combs.v);
    free(s->halo.v);
    free(s->rules);
    free(s);
}

/* ---- printing ---- */

static const char *const rc_kind_names[AS_COMBINE_COUNT] = {
    "identity", "gather", "block", "sum", "mean", "max", "min", "halo"};

const char *
as_combine_kind_name(as_combine_kind k)
{
    return k < AS_COMBINE_COUNT ? rc_kind_names[k] : "?";
}

const char *
as_combine_str(const as_combine *c, char *buf, size_t n)
{
    if (c->dim >= 0)
        snprintf(buf, n, "%s(%d)", as_combine_kind_name(c->kind), c->dim);
    else
        snprintf(buf, n, "%s", as_combine_kind_name(c->kind));
    return buf;
}

const char *
as_rule_in_str(const as_rule_set *set, const as_shard_rule *rule, char *buf, size_t n)
{
    size_t len = 0;
    int j;

    buf[0] = '\0';
    if (set->nin == 0)
        snprintf(buf, n, "(no inputs)");
    for (j = 0; j < set->nin && len < n; j++) {
        if (rule->in_dim[j] >= 0)
            len += (size_t)snprintf(buf + len, n - len, "%sin%d:%d", j ? " " : "", j,
                                    rule->in_dim[j]);
        else
            len += (size_t)snprintf(buf + len, n - len, "%sin%d:-", j ? " " : "", j);
    }
    return buf;
}

/* ---- fingerprint ---- */

static uint64_t
rc_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t
rc_fnv_str(uint64_t h, const char *s)
{
    return rc_fnv(h, s != NULL ? s : "", strlen(s != NULL ? s : "") + 1);
}

static uint64_t rc_exe_hash_value;

static void
rc_exe_hash_init(void)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    unsigned char buf[65536];
    size_t n;
    FILE *fp = fopen("/proc/self/exe", "rb");

    if (fp == NULL) {
        rc_exe_hash_value = rc_fnv_str(h, __DATE__ " " __TIME__);
        return;
    }
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        h = rc_fnv(h, buf, n);
    if (ferror(fp))
        h = rc_fnv_str(h, __DATE__ " " __TIME__);
    fclose(fp);
    rc_exe_hash_value = h;
}

/* FNV-1a of the running executable's bytes (once per process); of the build date and time
 * when it cannot be read. */
static uint64_t
rc_exe_hash(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, rc_exe_hash_init);
    return rc_exe_hash_value;
}

uint64_t
as_rules_fingerprint(void)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    char build[128];
    int i;

    for (i = 0; i < as_registry_count(); i++) {
        const as_op_def *d = as_registry_get(i);
        int v[5] = {d->min_in, d->max_in, (int)d->flags, (int)d->int_inputs, d->kernel != NULL};
        h = rc_fnv_str(h, d->name);
        h = rc_fnv_str(h, d->attrs);
        h = rc_fnv(h, v, sizeof v);
    }
    /* Build id: a relinked binary may carry different kernels.  Its content, not its
     * mtime: a binary copied, touched or reinstalled unchanged keeps its cache. */
    snprintf(build, sizeof build, "%s %s %016llx", PACKAGE_VERSION, RC_ALGO,
             (unsigned long long)rc_exe_hash());
    return rc_fnv_str(h, build);
}

/* ---- memory cache (callers hold rc_lock) ---- */

static as_rule_set *
rc_find(const char *key)
{
    int64_t idx;

    if (!rc_map_init)
        return NULL;
    return as_strmap_get(&rc_map, key, (size_t)-1, &idx) ? &rc_sets.v[idx]->pub : NULL;
}

/* Insert SET unless KEY is present; returns the set now cached (SET is freed if a duplicate). */
static as_rule_set *
rc_insert(as_rule_set *set)
{
    as_rule_set *old = rc_find(set->key);

    if (old != NULL) {
        as_rules_set_free(set);
        return old;
    }
    if (!rc_map_init) {
        as_strmap_init(&rc_map);
        rc_map_init = 1;
    }
    AS_VEC_PUSH(&rc_sets, (rc_set *)set);
    as_strmap_put(&rc_map, set->key, (int64_t)rc_sets.n - 1);
    return set;
}

void
as_rules_reset(void)
{
    size_t i;

    pthread_mutex_lock(&rc_lock);
    for (i = 0; i < rc_sets.n; i++)
        as_rules_set_free(&rc_sets.v[i]->pub);
    AS_VEC_FREE(&rc_sets);
    if (rc_map_init)
        as_strmap_destroy(&rc_map);
    rc_map_init = 0;
    memset(&rc_stats, 0, sizeof rc_stats);
    rc_disk_loaded = 0;
    free(rc_path);
    free(rc_resolved);
    rc_path = rc_resolved = NULL;
    rc_resolved_ok = 0;
    pthread_mutex_unlock(&rc_lock);
}

void
as_rules_get_stats(as_rules_stats *st)
{
    pthread_mutex_lock(&rc_lock);
    *st = rc_stats;
    pthread_mutex_unlock(&rc_lock);
}

void
as_rules_i_count(long candidates, long kernel_runs)
{
    pthread_mutex_lock(&rc_lock);
    rc_stats.candidates += candidates;
    rc_stats.kernel_runs += kernel_runs;
    pthread_mutex_unlock(&rc_lock);
}

/* ---- cache path ---- */

void
as_rules_set_cache_path(const char *path)
{
    pthread_mutex_lock(&rc_lock);
    free(rc_path);
    free(rc_resolved);
    rc_path = path != NULL ? as_xstrdup(path) : NULL;
    rc_resolved = NULL;
    rc_resolved_ok = 0;
    rc_disk_loaded = 0;
    pthread_mutex_unlock(&rc_lock);
}

/* mkdir -p of the directory part of PATH (for the default location only). */
static void
rc_mkdirs(const char *path)
{
    char *p = as_xstrdup(path), *s;

    for (s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            as_debug("rules: cannot create %s: %s", p, strerror(errno));
        *s = '/';
    }
    free(p);
}

/* Resolve the path in use (rc_lock held). */
static const char *
rc_path_locked(void)
{
    const char *p = rc_path, *env;

    if (rc_resolved_ok)
        return rc_resolved;
    rc_resolved_ok = 1;
    if (p == NULL && (env = getenv("AUTOSHARD_RULES_CACHE")) != NULL && env[0] != '\0')
        p = env;
    if (p != NULL) {
        rc_resolved = strcmp(p, "off") == 0 ? NULL : as_xstrdup(p);
        return rc_resolved;
    }
    if ((env = getenv("XDG_CACHE_HOME")) != NULL && env[0] == '/')
        rc_resolved = as_xasprintf("%s/autoshard/rules.cache", env);
    else if ((env = getenv("HOME")) != NULL && env[0] != '\0')
        rc_resolved = as_xasprintf("%s/.cache/autoshard/rules.cache", env);
    if (rc_resolved != NULL)
        rc_mkdirs(rc_resolved);
    return rc_resolved;
}

const char *
as_rules_cache_path(void)
{
    const char *p;

    pthread_mutex_lock(&rc_lock);
    p = rc_path_locked();
    pthread_mutex_unlock(&rc_lock);
    return p;
}

/* ---- disk format ---- */

static const char rc_kind_chars[AS_COMBINE_COUNT + 1] = "igbsmxnh";

typedef AS_VEC(char) rc_buf;

/* Append the entry line of SET to *BUF. */
static void
rc_format_set(const rc_set *s, rc_buf *out)
{
    char tmp[64];
    int r, j, n;

#define RC_PUTS(str)                                                                               \
    do {                                                                                           \
        const char *rc_s_ = (str);                                                                 \
        size_t rc_l_ = strlen(rc_s_);                                                              \
        AS_VEC_RESERVE(out, out->n + rc_l_ + 1);                                                   \
        memcpy(out->v + out->n, rc_s_, rc_l_);                                                     \
        out->n += rc_l_;                                                                           \
    } while (0)
    RC_PUTS(s->key);
    snprintf(tmp, sizeof tmp, " %d %d %d", s->pub.nin, s->pub.nout, s->pub.nrules);
    RC_PUTS(tmp);
    for (r = 0; r < s->pub.nrules; r++) {
        const as_shard_rule *rule = &s->rules[r];
        RC_PUTS(" ");
        for (j = 0; j < s->pub.nin; j++) {
            snprintf(tmp, sizeof tmp, "%s%d", j ? "," : "", rule->in_dim[j]);
            RC_PUTS(tmp);
        }
        RC_PUTS(s->pub.nin == 0 ? "_:" : ":");
        for (j = 0; j < s->pub.nout; j++) {
            n = snprintf(tmp, sizeof tmp, "%s%c", j ? "," : "", rc_kind_chars[rule->out[j].kind]);
            if (rule->out[j].dim >= 0)
                snprintf(tmp + n, sizeof tmp - (size_t)n, "%d", rule->out[j].dim);
            RC_PUTS(tmp);
        }
        snprintf(tmp, sizeof tmp, ":%d", rule->halo);
        RC_PUTS(tmp);
    }
    RC_PUTS("\n");
#undef RC_PUTS
}

int
as_rules_cache_write(const char *path, uint64_t fp, int *nwritten, as_err *err)
{
    rc_buf body = {0};
    char head[160];
    size_t i;
    int n = 0, hl, rc;
    char *all;
    struct stat st;
    FILE *f = NULL;

    /* Never replace something that is not a rules cache (a mistyped path, a device). */
    if (stat(path, &st) == 0) {
        char magic[sizeof RC_MAGIC] = {0};
        if (!S_ISREG(st.st_mode))
            return as_errf(err, AS_EIO, "rules cache '%s' is not a regular file; not written",
                           path);
        if (st.st_size > 0 && ((f = fopen(path, "rb")) == NULL ||
                               fread(magic, 1, sizeof magic - 1, f) != sizeof magic - 1 ||
                               strcmp(magic, RC_MAGIC) != 0)) {
            if (f != NULL)
                fclose(f);
            return as_errf(err, AS_EIO, "'%s' exists and is not a rules cache; not replaced",
                           path);
        }
        if (st.st_size > 0)
            fclose(f);
    }
    pthread_mutex_lock(&rc_lock);
    for (i = 0; i < rc_sets.n; i++) {
        if (!(rc_sets.v[i]->pub.flags & AS_RULES_DISCOVERED))
            continue;
        rc_format_set(rc_sets.v[i], &body);
        n++;
    }
    pthread_mutex_unlock(&rc_lock);
    hl = snprintf(head, sizeof head, "%s %d %016llx %d %016llx\n", RC_MAGIC, RC_VERSION,
                  (unsigned long long)fp, n,
                  (unsigned long long)rc_fnv(0xcbf29ce484222325ULL, body.v, body.n));
    all = as_xmalloc((size_t)hl + body.n + 1);
    memcpy(all, head, (size_t)hl);
    if (body.n > 0)
        memcpy(all + hl, body.v, body.n);
    rc = as_write_file_atomic(path, all, (size_t)hl + body.n, err);
    free(all);
    AS_VEC_FREE(&body);
    if (rc == AS_OK && nwritten != NULL)
        *nwritten = n;
    return rc;
}

/* Parse one combine token ("g0", "s", "i"); returns the end or NULL. */
static const char *
rc_parse_combine(const char *p, as_combine *c)
{
    const char *k = *p ? strchr(rc_kind_chars, *p) : NULL;
    char *end;
    long d = -1;

    if (k == NULL)
        return NULL;
    c->kind = (as_combine_kind)(k - rc_kind_chars);
    p++;
    if (*p >= '0' && *p <= '9') {
        d = strtol(p, &end, 10);
        if (d > AS_MAX_RANK)
            return NULL;
        p = end;
    }
    c->dim = (int)d;
    return p;
}

/* Parse one entry line [P, EOL) into a new set; NULL if malformed. */
static as_rule_set *
rc_parse_line(const char *p, const char *eol)
{
    char *line = as_xstrndup(p, (size_t)(eol - p)), *save = NULL, *tok;
    int8_t dims[256];
    as_combine comb[AS_MAX_OUTS];
    as_rule_set *set = NULL;
    int nin, nout, nr, r, j, bad = 1;
    char *key = strtok_r(line, " ", &save), *s1 = strtok_r(NULL, " ", &save);
    char *s2 = strtok_r(NULL, " ", &save), *s3 = strtok_r(NULL, " ", &save), *end;

    if (key == NULL || s1 == NULL || s2 == NULL || s3 == NULL)
        goto out;
    nin = (int)strtol(s1, &end, 10);
    if (*end || nin < 0 || nin > 255)
        goto out;
    nout = (int)strtol(s2, &end, 10);
    if (*end || nout < 0 || nout > AS_MAX_OUTS)
        goto out;
    nr = (int)strtol(s3, &end, 10);
    if (*end || nr < 0)
        goto out;
    set = as_rules_i_set_new(key, nin, nout, AS_RULES_DISCOVERED | AS_RULES_FROM_DISK);
    for (r = 0; r < nr; r++) {
        const char *q;
        long halo;
        if ((tok = strtok_r(NULL, " ", &save)) == NULL)
            goto out;
        q = tok;
        if (nin == 0) {
            if (*q++ != '_')
                goto out;
        }
        for (j = 0; j < nin; j++) {
            long d = strtol(q, &end, 10);
            if (end == q || d < -1 || d >= AS_MAX_RANK || *end != (j + 1 < nin ? ',' : ':'))
                goto out;
            dims[j] = (int8_t)d;
            q = end + (j + 1 < nin);
        }
        if (*q++ != ':')
            goto out;
        for (j = 0; j < nout; j++) {
            if ((q = rc_parse_combine(q, &comb[j])) == NULL || *q != (j + 1 < nout ? ',' : ':'))
                goto out;
            q += j + 1 < nout;
        }
        if (*q++ != ':')
            goto out;
        halo = strtol(q, &end, 10);
        if (end == q || *end || halo < 0 || halo > 64)
            goto out;
        as_rules_i_set_add(set, dims, comb, (int)halo);
    }
    if (strtok_r(NULL, " ", &save) != NULL || set->nrules != nr)
        goto out;
    as_rules_i_set_finish(set);
    bad = 0;
out:
    free(line);
    if (bad) {
        as_rules_set_free(set);
        return NULL;
    }
    return set;
}

int
as_rules_cache_read(const char *path, uint64_t fp, int *nloaded, as_err *err)
{
    char *buf = NULL, magic[32];
    const char *body, *p;
    size_t len;
    unsigned long long hfp, hsum;
    int ver, n, i, rc = AS_OK, loaded = 0;
    AS_VEC(as_rule_set *) sets = {0};

    if (nloaded != NULL)
        *nloaded = 0;
    AS_CHECK(as_read_file(path, &buf, &len, err));
    body = memchr(buf, '\n', len);
    if (body == NULL || sscanf(buf, "%31s %d %llx %d %llx", magic, &ver, &hfp, &n, &hsum) != 5 ||
        strcmp(magic, RC_MAGIC) != 0) {
        rc = as_errf(err, AS_EPARSE, "%s: not a rule cache (bad header)", path);
        goto out;
    }
    body++;
    if (ver != RC_VERSION || hfp != fp) {
        rc = as_errf(err, AS_EPARSE, "%s: stale rule cache (%s differs)", path,
                     ver != RC_VERSION ? "format version" : "registry fingerprint");
        goto out;
    }
    if (rc_fnv(0xcbf29ce484222325ULL, body, len - (size_t)(body - buf)) != hsum) {
        rc = as_errf(err, AS_EPARSE, "%s: corrupt rule cache (checksum mismatch)", path);
        goto out;
    }
    for (p = body, i = 0; p < buf + len; i++) {
        const char *eol = memchr(p, '\n', len - (size_t)(p - buf));
        as_rule_set *set;
        if (eol == NULL) {
            rc = as_errf(err, AS_EPARSE, "%s:%d: truncated rule cache", path, i + 2);
            goto out;
        }
        if ((set = rc_parse_line(p, eol)) == NULL) {
            rc = as_errf(err, AS_EPARSE, "%s:%d: corrupt rule cache entry", path, i + 2);
            goto out;
        }
        AS_VEC_PUSH(&sets, set);
        p = eol + 1;
    }
    if (i != n) {
        rc = as_errf(err, AS_EPARSE, "%s: truncated rule cache (%d of %d entries)", path, i, n);
        goto out;
    }
    pthread_mutex_lock(&rc_lock);
    for (i = 0; i < (int)sets.n; i++) {
        if (rc_insert(sets.v[i]) == sets.v[i])
            loaded++;
        sets.v[i] = NULL;
    }
    rc_stats.disk_loaded += loaded;
    pthread_mutex_unlock(&rc_lock);
    if (nloaded != NULL)
        *nloaded = loaded;
out:
    for (i = 0; i < (int)sets.n; i++)
        as_rules_set_free(sets.v[i]);
    AS_VEC_FREE(&sets);
    free(buf);
    return rc;
}

/* Load the disk cache once per configured path. */
static void
rc_disk_load(void)
{
    const char *path;
    char *copy = NULL;
    as_err e;
    int n = 0, rc;

    pthread_mutex_lock(&rc_lock);
    if (!rc_disk_loaded) {
        rc_disk_loaded = 1;
        path = rc_path_locked();
        copy = path != NULL ? as_xstrdup(path) : NULL;
    }
    pthread_mutex_unlock(&rc_lock);
    if (copy == NULL)
        return;
    rc = as_rules_cache_read(copy, as_rules_fingerprint(), &n, &e);
    if (rc == AS_EPARSE)
        as_debug("rules: %s; rebuilding it", e.msg);
    else if (rc == AS_OK)
        as_debug("rules: %d entries from %s", n, copy);
    free(copy);
}

/* Rewrite the disk cache after a discovery. */
static void
rc_disk_save(void)
{
    char *copy = NULL;
    as_err e;

    pthread_mutex_lock(&rc_lock);
    if (rc_path_locked() != NULL)
        copy = as_xstrdup(rc_path_locked());
    pthread_mutex_unlock(&rc_lock);
    if (copy == NULL)
        return;
    if (as_rules_cache_write(copy, as_rules_fingerprint(), NULL, &e) != AS_OK) {
        static int warned; /* once per process: the cache is an optimisation */
        if (!warned++)
            as_warn("rules: %s", e.msg);
    }
    free(copy);
}

/* ---- entry points ---- */

/* INFO with inferred outputs in OUTS (for callers that pass info->out == NULL). */
static int
rc_complete(const as_opinfo *info, as_shape *outs, as_opinfo *full, as_err *err)
{
    int nout = 0;

    *full = *info;
    if (info->out != NULL)
        return AS_OK;
    AS_CHECK(as_op_infer(info->def, info->in, info->nin, info->attr, info->nattr, outs, &nout,
                         err));
    full->out = outs;
    full->nout = nout;
    return AS_OK;
}

/* Small enough to discover on the instance's own shapes? */
static int
rc_small(const as_opinfo *info)
{
    int64_t total = 0;
    int j;

    for (j = 0; j < info->nin; j++)
        total += as_shape_numel(&info->in[j]);
    for (j = 0; j < info->nout; j++)
        total += as_shape_numel(&info->out[j]);
    return total <= (1 << 16);
}

/* Derive the set of FULL without caches: analytic, or shrink and discover. */
static int
rc_derive(const as_opinfo *full, const char *key, as_rule_set **out, int *discovered,
          as_err *err)
{
    as_arena *arena;
    as_opinfo small;
    as_err e;
    char *skey;
    int rc;

    *discovered = 0;
    as_err_clear(&e);
    AS_CHECK(as_rules_i_analytic(full, key, out, err));
    if (*out != NULL)
        return AS_OK;
    arena = as_arena_new();
    if (as_rules_i_shrink(full, arena, &small, &e) != AS_OK && rc_small(full)) {
        small = *full; /* the size mapping broke a relation (conv geometry); run as is */
    } else if (e.code != AS_OK) {
        as_debug("rules: %s", e.msg);
        *out = as_rules_i_set_new(key, full->nin, full->nout, 0);
        as_rules_i_set_why(*out, "shapes cannot be shrunk for discovery");
        as_rules_i_set_finish(*out);
        as_arena_free(arena);
        return AS_OK;
    }
    skey = as_rules_i_key(&small);
    rc = as_rules_i_discover(&small, skey, out, err);
    *discovered = rc == AS_OK;
    free(skey);
    as_arena_free(arena);
    return rc;
}

int
as_rules_compute(const as_opinfo *info, as_rule_set **out, as_err *err)
{
    as_shape outs[AS_MAX_OUTS];
    as_opinfo full;
    char *key;
    int rc, disc;

    AS_CHECK(rc_complete(info, outs, &full, err));
    key = as_rules_i_key(&full);
    rc = rc_derive(&full, key, out, &disc, err);
    free(key);
    return rc;
}

int
as_rules_get(const as_opinfo *info, const as_rule_set **out, as_err *err)
{
    as_shape outs[AS_MAX_OUTS];
    as_opinfo full, small;
    as_rule_set *set = NULL;
    as_arena *arena = NULL;
    char *key = NULL, *skey = NULL;
    int rc = AS_OK, disc = 0;

    AS_CHECK(rc_complete(info, outs, &full, err));
    rc_disk_load();
    key = as_rules_i_key(&full);
    pthread_mutex_lock(&rc_lock);
    set = rc_find(key);
    if (set != NULL)
        rc_stats.mem_hits++;
    pthread_mutex_unlock(&rc_lock);
    if (set != NULL)
        goto done;
    /* Discovered sets are cached under the key of the shrunken instance. */
    if (!(full.def->flags & (AS_OPF_OPAQUE | AS_OPF_COLLECTIVE | AS_OPF_RESHAPE)) &&
        full.def->kernel != NULL && full.nin > 0) {
        arena = as_arena_new();
        if (as_rules_i_shrink(&full, arena, &small, err) == AS_OK) {
            skey = as_rules_i_key(&small);
            pthread_mutex_lock(&rc_lock);
            set = rc_find(skey);
            if (set != NULL)
                rc_stats.mem_hits++;
            pthread_mutex_unlock(&rc_lock);
            if (set != NULL)
                goto done;
        }
    }
    AS_CHECK_GOTO(rc, rc_derive(&full, key, &set, &disc, err), done);
    pthread_mutex_lock(&rc_lock);
    if (disc)
        rc_stats.discovered++;
    else
        rc_stats.analytic++;
    set = rc_insert(set);
    pthread_mutex_unlock(&rc_lock);
    if (disc)
        rc_disk_save();
done:
    free(skey);
    free(key);
    as_arena_free(arena);
    if (rc == AS_OK)
        *out = set;
    return rc;
}
