/* shardcombine.c -- discovery of sharding rules by running the registry's
 * reference kernels (MetaDist's ShardCombine), plus the size mapping that
 * shrinks an op instance to small test shapes and the rule cache key.
 *
 * DESIGN: discovery works on shrunken shapes (every distinct dim size >= 2
 * becomes 6, 12, 18, ... in increasing order, so equal dims stay equal and
 * a batch of 2-5 splits like any other; size 1 is kept for broadcasting,
 * kernel windows are kept, strided dims become multiples of 6 x stride so
 * shards stay aligned with the stride, and a backward op's dy is derived
 * through its forward op).  Rules thus depend on rank and attributes, not
 * on sizes.  Four trials are prepared up front: fresh random inputs and the
 * global result, two trials cut into 2 shards and two into 3.  A candidate
 * group picks one dim (or none) per input, all of one size, at least one
 * split.  Each trial runs the kernel on every shard's local inputs (local
 * output shapes from the op's infer function, with size-carrying
 * attributes scaled to the shard) and keeps, per output, the set of
 * combine functions that reproduce the global result; a candidate is a
 * rule when every output keeps at least one after all four trials.  A
 * one-input candidate that fails is retried with overlapping shards
 * (halo 1..4), which is how convolution and pooling windows split.
 * An op with inputs whose size-carrying attributes make an output dim
 * (broadcast's new dims, the reduced dims a mean's gradient spreads over)
 * also gets "made locally" candidates: no input split, every attribute
 * entry of that size cut to the shard; a rule when every shard's identical
 * result gathers into the global one (the output is constant along that
 * dim), recorded as identity(d) like the ops without inputs.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#define SC_TRIALS 4
#define SC_MAX_CAND 4096  /* candidate groups per op instance */
#define SC_MAX_HALO 4     /* widest overlap tried */
#define SC_TOL 1e-9       /* relative tolerance of a recombined result */
#define SC_MAX_SHARDS 3
#define SC_MAX_IN AS_RULES_DISCOVER_MAX_IN
#define SC_MAX_NUMEL (1 << 18) /* largest shrunken input with stride alignment (elements) */

static const int sc_nshards[SC_TRIALS] = {2, 2, 3, 3};

/* Combine kinds tracked per output (bit = 1 << as_combine_kind). */
#define SC_PLAIN_MASK                                                                              \
    ((1u << AS_COMBINE_IDENTITY) | (1u << AS_COMBINE_GATHER) | (1u << AS_COMBINE_BLOCK) |          \
     (1u << AS_COMBINE_SUM) | (1u << AS_COMBINE_MEAN) | (1u << AS_COMBINE_MAX) |                   \
     (1u << AS_COMBINE_MIN))

/* Inputs and global result of one trial. */
typedef struct sc_trial {
    double **in;     /**< [nin] global inputs */
    double **out;    /**< [nout] global outputs */
    double *scale;   /**< [nout] largest finite |value| of each global output */
} sc_trial;

/* State of one discovery. */
typedef struct sc_ctx {
    const as_opinfo *info; /**< shrunken instance, outputs inferred */
    sc_trial trial[SC_TRIALS];
    as_arena *scratch;     /**< localised attribute copies */
    long runs;             /**< kernel executions */
    long cands;            /**< candidate groups tried */
    int64_t osize;         /**< no input split: the output size whose attributes are cut */
} sc_ctx;

/* One shard's local instance and results. */
typedef struct sc_local {
    as_shape in[SC_MAX_IN];
    as_shape out[AS_MAX_OUTS];
    int nout;
    double *inbuf[SC_MAX_IN];
    double *outbuf[AS_MAX_OUTS];
} sc_local;

/* ---- size mapping ---- */

static const char *const sc_size_keys[] = {"shape", "depth", "vocab", "input_shape",
                                           "weight_shape", "slice_sizes", "sizes", NULL};

int
as_rules_i_size_attr(const char *opname, const char *key)
{
    int i;

    if (strcmp(opname, "split") == 0 || strcmp(opname, "opaque") == 0)
        return 0; /* split sizes must keep their sum; opaque is never run */
    for (i = 0; sc_size_keys[i] != NULL; i++)
        if (strcmp(sc_size_keys[i], key) == 0)
            return 1;
    return 0;
}

/*
 * Geometry of the window ops, for the size mapping: the dims of a kernel
 * window are kept (their size is the op's meaning), the strided spatial
 * dims map to multiples of 6 x stride (so 2 and 3 shards stay aligned with
 * the stride), and the gradient input dy of a backward op is not mapped but
 * derived from the mapped shapes through the forward op (its size follows
 * H' = (H + 2p - k) / s + 1, which an independent mapping would break).
 */
typedef struct sc_geom {
    const char *op;
    int win_in;           /**< input whose dims 2, 3 are a kernel window, -1 */
    const char *win_attr; /**< size attribute whose entries 2, 3 are a kernel window */
    int str_in;           /**< input whose trailing dims are strided, -1 */
    const char *str_attr; /**< size attribute whose trailing entries are strided */
    int dy_in;            /**< input holding the gradient of the forward output, -1 */
    const char *fwd;      /**< forward op that gives dy's shape */
} sc_geom;

static const sc_geom sc_geoms[] = {
    {"avgpool2d", -1, NULL, 0, NULL, -1, NULL},
    {"avgpool2d_grad", -1, NULL, -1, "input_shape", 0, "avgpool2d"},
    {"conv2d", 1, NULL, 0, NULL, -1, NULL},
    {"conv2d_grad_input", 1, NULL, -1, "input_shape", 0, "conv2d"},
    {"conv2d_grad_weight", -1, "weight_shape", 1, NULL, 0, "conv2d"},
    {"conv_general", 1, NULL, 0, NULL, -1, NULL}, /* dims from dim_labels */
    {"maxpool2d", -1, NULL, 0, NULL, -1, NULL},
    {"maxpool2d_grad", -1, NULL, 1, NULL, 0, "maxpool2d"},
    {"reduce_window", -1, NULL, 0, NULL, -1, NULL},
};

static const sc_geom *
sc_geom_find(const char *op)
{
    size_t i;

    for (i = 0; i < sizeof sc_geoms / sizeof sc_geoms[0]; i++)
        if (strcmp(sc_geoms[i].op, op) == 0)
            return &sc_geoms[i];
    return NULL;
}

/* One size to map: its value and the factor its image must be a multiple of (besides 6). */
typedef struct sc_size {
    int64_t v, need;
} sc_size;
typedef AS_VEC(sc_size) sc_sizes;

static int
sc_cmp_size(const void *a, const void *b)
{
    int64_t x = ((const sc_size *)a)->v, y = ((const sc_size *)b)->v;

    return x < y ? -1 : x > y;
}

static int64_t
sc_gcd(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* lcm(A, B), capped at 64 (a wider stride only loses the alignment, not correctness). */
static int64_t
sc_lcm(int64_t a, int64_t b)
{
    int64_t l;

    if (a <= 0 || b <= 0)
        return a > 0 ? a : b > 0 ? b : 1;
    l = a / sc_gcd(a, b) * b;
    return l > 64 ? a : l;
}

/* Mapped value of size S given the sorted distinct sizes FROM[0..N) and their images TO. */
static int64_t
sc_map(int64_t s, const int64_t *from, const int64_t *to, int n)
{
    int lo = 0, hi = n - 1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (from[mid] == s)
            return to[mid];
        if (from[mid] < s)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return s; /* kept (0, 1, a window dim) */
}

/* Stride of trailing spatial dim T of N (pools: the kernel when no stride is given), or 1. */
static int64_t
sc_stride(const as_opinfo *info, int t, int n)
{
    const int64_t *v = NULL;
    int k = as_attr_ints(info->attr, info->nattr, "stride", &v);

    if (k <= 0)
        k = as_attr_ints(info->attr, info->nattr, "kernel", &v);
    if (k <= 0 || v == NULL)
        return 1;
    t -= n - k; /* align the stride list with the trailing dims */
    return t >= 0 && t < k && v[t] > 0 ? v[t] : 1;
}

/*
 * The stride factor of a strided dim of size V: the stride S when V can be
 * split in two stride-aligned halves (V divisible by 2S); 0 (keep V as it
 * is) when it cannot and V is small: a global 7x7 pool keeps its 7x7, which
 * never splits, so the window still fits; else 1.
 */
static int64_t
sc_need(int64_t v, int64_t s)
{
    if (v % (2 * s) == 0)
        return s;
    return v <= 64 ? 0 : 1;
}

/*
 * Role of dim I of input J (of rank R) in the size mapping: 0 when it is
 * kept (a kernel window), else 1 with *NEED its stride factor (sc_need).
 * conv2d and pools are NCHW (window and strides on dims 2, 3); conv_general
 * reads its dim_labels ("b01f_01io->b01f": digits are spatial dims).
 */
static int
sc_role(const as_opinfo *info, const sc_geom *geo, int j, int i, int r, int64_t *need)
{
    const as_attr *lab;

    *need = 1;
    if (geo == NULL || (j != geo->win_in && j != geo->str_in))
        return 1;
    if (strcmp(geo->op, "conv_general") == 0) {
        const char *l, *us;
        int sp;
        lab = as_attr_find(info->attr, info->nattr, "dim_labels");
        if (lab == NULL || lab->s == NULL || (us = strchr(lab->s, '_')) == NULL)
            return 1;
        l = j == 0 ? lab->s : us + 1;
        if ((j == 0 ? us - l : (long)strcspn(l, "-")) != r || l[i] < '0' || l[i] > '9')
            return 1;
        if (j == geo->win_in)
            return 0;
        sp = l[i] - '0';
        {
            const int64_t *st = NULL;
            int k = as_attr_ints(info->attr, info->nattr, "stride", &st);
            *need = sc_need(info->in[j].dim[i], sp < k && st[sp] > 0 ? st[sp] : 1);
        }
        return 1;
    }
    if (r != 4 || i < 2)
        return 1;
    if (j == geo->win_in)
        return 0;
    *need = sc_need(info->in[j].dim[i], sc_stride(info, i, r));
    return 1;
}

/* Record size V (if it is mapped: >= 2) with stride factor NEED. */
static void
sc_push(sc_sizes *sz, int64_t v, int64_t need)
{
    sc_size e;

    if (v < 2)
        return;
    e.v = v;
    e.need = need;
    AS_VEC_PUSH(sz, e);
}

/* Whether entry I of an N-entry size attribute (an NCHW / OIHW shape) is a kernel window dim. */
static int
sc_is_window(int i, int n)
{
    return n == 4 && i >= 2;
}

/* The shape of size attribute KEY of AT (n entries) with dtype DT; 0 if absent. */
static int
sc_attr_shape(const as_attr *at, int nattr, const char *key, as_dtype dt, as_shape *out)
{
    const int64_t *v = NULL;
    int n = key != NULL ? as_attr_ints(at, nattr, key, &v) : 0, i;

    if (n <= 0 || n > AS_MAX_RANK || v == NULL)
        return 0;
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    out->rank = n;
    for (i = 0; i < n; i++)
        out->dim[i] = v[i];
    return 1;
}

int
as_rules_i_shrink(const as_opinfo *info, as_arena *arena, as_opinfo *out, as_err *err)
{
    sc_sizes sz = {0};
    const sc_geom *geo = sc_geom_find(info->def->name);
    as_shape *in = as_arena_calloc(arena, (size_t)(info->nin ? info->nin : 1), sizeof *in);
    as_shape *os = as_arena_calloc(arena, AS_MAX_OUTS, sizeof *os);
    as_attr *at = as_arena_calloc(arena, (size_t)(info->nattr ? info->nattr : 1), sizeof *at);
    int64_t *from, *to, *img, need;
    int i, j, n = 0, nout = 0, rc, pass;

    /* Collect every mapped size with the stride its image must respect. */
    for (j = 0; j < info->nin; j++) {
        int r = info->in[j].rank;
        if (geo != NULL && j == geo->dy_in)
            continue; /* derived below */
        for (i = 0; i < r; i++) {
            if (!sc_role(info, geo, j, i, r, &need))
                continue; /* a kernel window: kept */
            sc_push(&sz, info->in[j].dim[i], need);
        }
    }
    for (i = 0; i < info->nattr; i++) {
        const as_attr *a = &info->attr[i];
        if (!as_rules_i_size_attr(info->def->name, a->key))
            continue;
        if (a->kind == AS_ATTR_INT) {
            sc_push(&sz, a->i, 1);
        } else if (a->kind == AS_ATTR_INTS) {
            for (j = 0; j < a->n; j++) {
                need = 1;
                if (geo != NULL && geo->win_attr != NULL && strcmp(a->key, geo->win_attr) == 0 &&
                    sc_is_window(j, a->n))
                    continue;
                if (geo != NULL && geo->str_attr != NULL && strcmp(a->key, geo->str_attr) == 0 &&
                    j >= (a->n == 4 ? 2 : 0))
                    need = sc_need(a->v[j], sc_stride(info, j, a->n));
                sc_push(&sz, a->v[j], need);
            }
        }
    }
    /* Distinct sizes in increasing order; images 6k (times the stride), increasing too. */
    if (sz.n > 0)
        qsort(sz.v, sz.n, sizeof sz.v[0], sc_cmp_size);
    from = as_arena_alloc(arena, (sz.n + 1) * sizeof *from);
    to = as_arena_alloc(arena, (sz.n + 1) * sizeof *to);
    img = as_arena_alloc(arena, (sz.n + 1) * sizeof *img);
    for (i = 0; i < (int)sz.n; i++) {
        if (n > 0 && from[n - 1] == sz.v[i].v) {
            /* factor so far; 0 (kept) wins */
            to[n - 1] = to[n - 1] == 0 || sz.v[i].need == 0 ? 0 : sc_lcm(to[n - 1], sz.v[i].need);
            continue;
        }
        from[n] = sz.v[i].v;
        to[n++] = sz.v[i].need;
    }
    for (pass = 0; pass < 2; pass++) {
        int64_t big = 0, prev = 0;
        for (i = 0; i < n; i++) {
            int64_t unit = 6 * (pass == 0 ? to[i] : 1);
            if (to[i] == 0) {
                img[i] = from[i]; /* kept */
                continue;
            }
            img[i] = (prev / unit + 1) * unit; /* smallest multiple of the unit above the last */
            prev = img[i];
        }
        for (j = 0; j < info->nin; j++) {
            int64_t numel = 1;
            for (i = 0; i < info->in[j].rank; i++)
                numel *= sc_map(info->in[j].dim[i], from, img, n);
            big = numel > big ? numel : big;
        }
        if (big <= SC_MAX_NUMEL)
            break; /* else: drop the stride alignment rather than run huge kernels */
    }
    to = img;
    AS_VEC_FREE(&sz);
    for (j = 0; j < info->nin; j++) {
        in[j] = info->in[j];
        for (i = 0; i < in[j].rank; i++)
            if (sc_role(info, geo, j, i, in[j].rank, &need))
                in[j].dim[i] = sc_map(in[j].dim[i], from, to, n);
    }
    for (i = 0; i < info->nattr; i++) {
        at[i] = info->attr[i];
        if (!as_rules_i_size_attr(info->def->name, at[i].key))
            continue;
        if (at[i].kind == AS_ATTR_INT) {
            at[i].i = sc_map(at[i].i, from, to, n);
            at[i].f = (double)at[i].i;
        } else if (at[i].kind == AS_ATTR_INTS && at[i].n > 0) {
            int64_t *v = as_arena_alloc(arena, (size_t)at[i].n * sizeof *v);
            int win = geo != NULL && geo->win_attr != NULL && strcmp(at[i].key, geo->win_attr) == 0;
            for (j = 0; j < at[i].n; j++)
                v[j] = win && sc_is_window(j, at[i].n) ? at[i].v[j]
                                                       : sc_map(at[i].v[j], from, to, n);
            at[i].v = v;
        }
    }
    /* dy of a backward op: the forward op's output on the mapped shapes. */
    if (geo != NULL && geo->dy_in >= 0 && geo->dy_in < info->nin) {
        const as_op_def *fdef = as_registry_find(geo->fwd, (size_t)-1);
        as_shape fin[2], fout[AS_MAX_OUTS];
        as_dtype dt = info->in[geo->dy_in].dtype;
        int nf = 1, fn = 0;
        as_err fe;

        if (geo->str_in >= 0)
            fin[0] = in[geo->str_in];
        else if (!sc_attr_shape(at, info->nattr, geo->str_attr, dt, &fin[0]))
            fdef = NULL;
        if (geo->win_in >= 0)
            fin[nf++] = in[geo->win_in];
        else if (sc_attr_shape(at, info->nattr, geo->win_attr, dt, &fin[1]))
            nf++;
        if (fdef != NULL &&
            as_op_infer(fdef, fin, nf, at, info->nattr, fout, &fn, &fe) == AS_OK && fn == 1) {
            fout[0].dtype = dt;
            in[geo->dy_in] = fout[0];
        } else {
            for (i = 0; i < in[geo->dy_in].rank; i++)
                in[geo->dy_in].dim[i] = sc_map(in[geo->dy_in].dim[i], from, to, n);
        }
    }
    rc = as_op_infer(info->def, in, info->nin, at, info->nattr, os, &nout, err);
    if (rc != AS_OK) {
        as_err_prefix(err, "cannot shrink for rule discovery: ");
        return AS_EPARSE;
    }
    out->def = info->def;
    out->nin = info->nin;
    out->in = in;
    out->nout = nout;
    out->out = os;
    out->nattr = info->nattr;
    out->attr = at;
    return AS_OK;
}

/* ---- cache key ---- */

/* Append the separator character C to *BUF. */
static void
sc_key_sep(char **buf, size_t *len, size_t *cap, char c)
{
    if (*len + 2 >= *cap) {
        *cap *= 2;
        *buf = as_xrealloc(*buf, *cap);
    }
    (*buf)[(*len)++] = c;
    (*buf)[*len] = '\0';
}

/* Append S to *BUF, escaping bytes that would break the key's syntax. */
static void
sc_key_str(char **buf, size_t *len, size_t *cap, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (*len + 4 >= *cap) {
            *cap *= 2;
            *buf = as_xrealloc(*buf, *cap);
        }
        if (c <= 0x20 || c >= 0x7f || c == '%' || c == '|' || c == ';' || c == ',')
            *len += (size_t)snprintf(*buf + *len, *cap - *len, "%%%02X", c);
        else
            (*buf)[(*len)++] = (char)c;
    }
    (*buf)[*len] = '\0';
}

char *
as_rules_i_key(const as_opinfo *info)
{
    size_t len = 0, cap = 128;
    char *buf = as_xmalloc(cap), tmp[64];
    int i, j;

    buf[0] = '\0';
    sc_key_str(&buf, &len, &cap, info->def->name);
    sc_key_sep(&buf, &len, &cap, '|');
    for (i = 0; i < info->nattr; i++) {
        const as_attr *a = &info->attr[i];
        if (i > 0) {
            sc_key_sep(&buf, &len, &cap, ';');
        }
        sc_key_str(&buf, &len, &cap, a->key);
        sc_key_str(&buf, &len, &cap, "=");
        switch (a->kind) {
        case AS_ATTR_INT:
            snprintf(tmp, sizeof tmp, "%lld", (long long)a->i);
            sc_key_str(&buf, &len, &cap, tmp);
            break;
        case AS_ATTR_FLOAT:
            snprintf(tmp, sizeof tmp, "%.17g", a->f);
            sc_key_str(&buf, &len, &cap, tmp);
            break;
        case AS_ATTR_STR:
            sc_key_str(&buf, &len, &cap, a->s != NULL ? a->s : "");
            break;
        default:
            sc_key_str(&buf, &len, &cap, "[");
            for (j = 0; j < a->n; j++) {
                snprintf(tmp, sizeof tmp, "%s%lld", j ? ":" : "", (long long)a->v[j]);
                sc_key_str(&buf, &len, &cap, tmp);
            }
            sc_key_str(&buf, &len, &cap, "]");
        }
    }
    sc_key_sep(&buf, &len, &cap, '|');
    for (j = 0; j < info->nin; j++) {
        sc_key_str(&buf, &len, &cap, j ? "/" : "");
        sc_key_str(&buf, &len, &cap, as_dtype_name(info->in[j].dtype));
        sc_key_str(&buf, &len, &cap, "[");
        for (i = 0; i < info->in[j].rank; i++) {
            snprintf(tmp, sizeof tmp, "%s%lld", i ? ":" : "", (long long)info->in[j].dim[i]);
            sc_key_str(&buf, &len, &cap, tmp);
        }
        sc_key_str(&buf, &len, &cap, "]");
    }
    return buf;
}

/* ---- trials ---- */

/* Valid integer range of input J. */
static void
sc_int_range(const as_opinfo *info, int j, int64_t *lo, int64_t *hi)
{
    as_dtype t = info->in[j].dtype;

    if (info->def->irange != NULL && (info->def->int_inputs >> (j < 32 ? j : 31) & 1u)) {
        info->def->irange(info, j, lo, hi);
        return;
    }
    if (t == AS_DT_PRED) {
        *lo = 0;
        *hi = 1;
    } else if (t == AS_DT_U8 || t == AS_DT_U16 || t == AS_DT_U32 || t == AS_DT_U64) {
        *lo = 0;
        *hi = 8;
    } else {
        *lo = -4;
        *hi = 4;
    }
}

static int
sc_is_int_input(const as_opinfo *info, int j)
{
    return !as_dtype_is_float(info->in[j].dtype) ||
           (j < 32 && (info->def->int_inputs >> j & 1u) != 0);
}

static const as_attr *sc_local_attrs(sc_ctx *c, int64_t full, int64_t local);

/*
 * Integer range of input J for the trials: the op's range on the whole
 * instance, narrowed to what stays valid when any one splittable dim is cut
 * into 3 shards (an id into a split table must stay valid locally, or the
 * shard could not run at all).
 */
static void
sc_trial_range(sc_ctx *c, int j, int64_t *lo, int64_t *hi)
{
    const as_opinfo *info = c->info;
    as_shape lin[SC_MAX_IN], lout[AS_MAX_OUTS];
    as_opinfo li;
    as_err e;
    int64_t l2, h2;
    int i, d, nout;

    sc_int_range(info, j, lo, hi);
    if (info->def->irange == NULL)
        return;
    for (i = 0; i < info->nin; i++) {
        for (d = 0; d < info->in[i].rank; d++) {
            int64_t full = info->in[i].dim[d];
            if (full < 6 || full % 6 != 0)
                continue;
            memcpy(lin, info->in, (size_t)info->nin * sizeof *lin);
            lin[i].dim[d] = full / SC_MAX_SHARDS;
            li = *info;
            li.in = lin;
            li.attr = sc_local_attrs(c, full, full / SC_MAX_SHARDS);
            if (as_op_infer(info->def, lin, info->nin, li.attr, info->nattr, lout, &nout, &e) !=
                AS_OK)
                continue;
            li.out = lout;
            li.nout = nout;
            sc_int_range(&li, j, &l2, &h2);
            if (l2 <= h2 && l2 >= *lo && h2 <= *hi) {
                *lo = l2;
                *hi = h2;
            }
        }
    }
}

/* Fill the inputs of trial T with fresh random values and run the op globally. */
static void
sc_trial_init(sc_ctx *c, int t, as_rng *rng)
{
    const as_opinfo *info = c->info;
    sc_trial *tr = &c->trial[t];
    int j, k;

    tr->in = as_xcalloc((size_t)info->nin + 1, sizeof *tr->in);
    tr->out = as_xcalloc((size_t)info->nout + 1, sizeof *tr->out);
    tr->scale = as_xcalloc((size_t)info->nout + 1, sizeof *tr->scale);
    for (j = 0; j < info->nin; j++) {
        int64_t n = as_shape_numel(&info->in[j]), lo = 0, hi = 0, i;
        int isint = sc_is_int_input(info, j);
        tr->in[j] = as_xmalloc((size_t)(n ? n : 1) * sizeof(double));
        if (isint)
            sc_trial_range(c, j, &lo, &hi);
        for (i = 0; i < n; i++)
            tr->in[j][i] = isint ? (double)as_rng_range(rng, lo, hi < lo ? lo : hi)
                                 : 2.0 * as_rng_uniform(rng) - 1.0;
    }
    for (k = 0; k < info->nout; k++) {
        int64_t n = as_shape_numel(&info->out[k]);
        tr->out[k] = as_xcalloc((size_t)(n ? n : 1), sizeof(double));
    }
    info->def->kernel(info, (const double *const *)tr->in, tr->out);
    c->runs++;
    for (k = 0; k < info->nout; k++) {
        int64_t n = as_shape_numel(&info->out[k]), i;
        for (i = 0; i < n; i++)
            if (isfinite(tr->out[k][i]) && fabs(tr->out[k][i]) > tr->scale[k])
                tr->scale[k] = fabs(tr->out[k][i]);
    }
}

static void
sc_trial_free(sc_ctx *c, int t)
{
    sc_trial *tr = &c->trial[t];
    int j;

    if (tr->in != NULL)
        for (j = 0; j < c->info->nin; j++)
            free(tr->in[j]);
    if (tr->out != NULL)
        for (j = 0; j < c->info->nout; j++)
            free(tr->out[j]);
    free(tr->in);
    free(tr->out);
    free(tr->scale);
}

/* ---- local runs ---- */

/* Extent [*b, *e) of shard S of N along a dim of size D, with HALO trailing overlap. */
static void
sc_extent(int64_t d, int s, int n, int halo, int64_t *b, int64_t *e)
{
    int64_t c = d / n;

    *b = (int64_t)s * c;
    *e = s == n - 1 ? d : *b + c + halo;
    if (*e > d)
        *e = d;
}

/* Copy the sub-block [B, E) along DIM of X (shape S) into DST. */
static void
sc_extract(const double *x, const as_shape *s, int dim, int64_t b, int64_t e, double *dst)
{
    int64_t outer = 1, inner = 1, o, len = e - b;
    int i;

    for (i = 0; i < dim; i++)
        outer *= s->dim[i];
    for (i = dim + 1; i < s->rank; i++)
        inner *= s->dim[i];
    for (o = 0; o < outer; o++)
        memcpy(dst + o * len * inner, x + (o * s->dim[dim] + b) * inner,
               (size_t)(len * inner) * sizeof(double));
}

/* Attributes of shard instance: size-carrying entries equal to FULL become LOCAL. */
static const as_attr *
sc_local_attrs(sc_ctx *c, int64_t full, int64_t local)
{
    const as_opinfo *info = c->info;
    as_attr *at;
    int i, j;

    if (info->nattr == 0)
        return info->attr;
    at = as_arena_memdup(c->scratch, info->attr, (size_t)info->nattr * sizeof *at);
    for (i = 0; i < info->nattr; i++) {
        if (!as_rules_i_size_attr(info->def->name, at[i].key))
            continue;
        if (at[i].kind == AS_ATTR_INT && at[i].i == full) {
            at[i].i = local;
            at[i].f = (double)local;
        } else if (at[i].kind == AS_ATTR_INTS && at[i].n > 0) {
            int64_t *v = as_arena_memdup(c->scratch, at[i].v, (size_t)at[i].n * sizeof *v);
            for (j = 0; j < at[i].n; j++)
                if (v[j] == full)
                    v[j] = local;
            at[i].v = v;
        }
    }
    return at;
}

static void
sc_local_free(sc_local *l, int nin)
{
    int j;

    for (j = 0; j < nin; j++)
        free(l->inbuf[j]);
    for (j = 0; j < l->nout; j++)
        free(l->outbuf[j]);
    memset(l->inbuf, 0, sizeof l->inbuf);
    memset(l->outbuf, 0, sizeof l->outbuf);
    l->nout = 0;
}

/*
 * Run shard S of N of trial TR with group G (HALO overlap): fill L.
 * Returns 0 when the shard cannot run (inference fails, integer inputs out
 * of the local range, a different output count).
 */
static int
sc_run_shard(sc_ctx *c, const sc_trial *tr, const int8_t *g, int s, int n, int halo, sc_local *l)
{
    const as_opinfo *info = c->info;
    as_opinfo li;
    const as_attr *lat;
    as_err e;
    int64_t full = 0, b = 0, en = 0;
    int j, k, nout = 0;

    if (c->osize > 0) { /* made locally: no input split, the attributes of that size cut */
        full = c->osize;
        sc_extent(full, s, n, 0, &b, &en);
    }
    for (j = 0; j < info->nin; j++) {
        l->in[j] = info->in[j];
        if (g[j] >= 0) {
            full = info->in[j].dim[g[j]];
            sc_extent(full, s, n, halo, &b, &en);
            l->in[j].dim[g[j]] = en - b;
        }
    }
    lat = sc_local_attrs(c, full, en - b);
    if (as_op_infer(info->def, l->in, info->nin, lat, info->nattr, l->out, &nout, &e) != AS_OK ||
        nout != info->nout)
        return 0;
    li = *info;
    li.in = l->in;
    li.out = l->out;
    li.attr = lat;
    for (j = 0; j < info->nin; j++) {
        int64_t numel = as_shape_numel(&l->in[j]), i, lo, hi;
        l->inbuf[j] = as_xmalloc((size_t)(numel ? numel : 1) * sizeof(double));
        if (g[j] >= 0) {
            sc_extent(info->in[j].dim[g[j]], s, n, halo, &b, &en);
            sc_extract(tr->in[j], &info->in[j], g[j], b, en, l->inbuf[j]);
        } else {
            memcpy(l->inbuf[j], tr->in[j], (size_t)numel * sizeof(double));
        }
        if (info->def->irange == NULL || !sc_is_int_input(info, j))
            continue;
        /* The kernel may index with these values: they must be valid locally. */
        sc_int_range(&li, j, &lo, &hi);
        for (i = 0; i < numel; i++)
            if (l->inbuf[j][i] < (double)lo || l->inbuf[j][i] > (double)hi)
                return 0;
    }
    l->nout = nout;
    for (k = 0; k < nout; k++) {
        int64_t numel = as_shape_numel(&l->out[k]);
        l->outbuf[k] = as_xcalloc((size_t)(numel ? numel : 1), sizeof(double));
    }
    info->def->kernel(&li, (const double *const *)l->inbuf, l->outbuf);
    c->runs++;
    return 1;
}

/* ---- combine checks ---- */

static int
sc_close(double got, double want, double scale)
{
    if (got == want || (isnan(got) && isnan(want)))
        return 1;
    return fabs(got - want) <= SC_TOL * (fabs(want) + scale);
}

/* Compare LOCAL[.., LOFF:LOFF+LEN, ..] with GLOBAL[.., GOFF:GOFF+LEN, ..] along DIM. */
static int
sc_cmp_block(const double *global, const as_shape *gs, const double *local, const as_shape *ls,
             int dim, int64_t goff, int64_t loff, int64_t len, double scale)
{
    int64_t outer = 1, inner = 1, o, i;
    int r;

    for (r = 0; r < dim; r++)
        outer *= gs->dim[r];
    for (r = dim + 1; r < gs->rank; r++)
        inner *= gs->dim[r];
    for (o = 0; o < outer; o++) {
        const double *gp = global + (o * gs->dim[dim] + goff) * inner;
        const double *lp = local + (o * ls->dim[dim] + loff) * inner;
        for (i = 0; i < len * inner; i++)
            if (!sc_close(lp[i], gp[i], scale))
                return 0;
    }
    return 1;
}

/*
 * The single dim along which the local shapes of output K differ from the
 * global shape (other dims equal), -1 if none or several, -2 if ranks differ.
 */
static int
sc_split_dim(const as_shape *gs, sc_local *loc, int n, int k)
{
    int s, d, found = -1;

    for (s = 0; s < n; s++) {
        const as_shape *ls = &loc[s].out[k];
        if (ls->rank != gs->rank)
            return -2;
        for (d = 0; d < gs->rank; d++) {
            if (ls->dim[d] == gs->dim[d])
                continue;
            if (found >= 0 && found != d)
                return -2;
            found = d;
        }
    }
    return found;
}

/* Elementwise reduction of the local results of output K (from the first shard). */
static int
sc_check_reduce(as_combine_kind kind, const double *global, int64_t numel, sc_local *loc, int n,
                int k, double scale)
{
    int64_t i;
    int s;

    for (i = 0; i < numel; i++) {
        double acc = loc[0].outbuf[k][i];
        for (s = 1; s < n; s++) {
            double x = loc[s].outbuf[k][i];
            if (kind == AS_COMBINE_SUM || kind == AS_COMBINE_MEAN)
                acc += x;
            else if (kind == AS_COMBINE_MAX)
                acc = x > acc ? x : acc;
            else
                acc = x < acc ? x : acc;
        }
        if (kind == AS_COMBINE_MEAN)
            acc /= n;
        if (!sc_close(acc, global[i], scale))
            return 0;
    }
    return 1;
}

/* Gather (K == 1) or block gather (K blocks) of output OK along DIM; shards may differ in size. */
static int
sc_check_gather(const double *global, const as_shape *gs, sc_local *loc, int n, int ok, int dim,
                int nblk, double scale)
{
    int64_t total = 0, goff = 0, blk, b;
    int s;

    for (s = 0; s < n; s++)
        total += loc[s].out[ok].dim[dim];
    if (total != gs->dim[dim])
        return 0;
    if (nblk == 1) {
        for (s = 0; s < n; s++) {
            int64_t len = loc[s].out[ok].dim[dim];
            if (!sc_cmp_block(global, gs, loc[s].outbuf[ok], &loc[s].out[ok], dim, goff, 0, len,
                              scale))
                return 0;
            goff += len;
        }
        return 1;
    }
    blk = loc[0].out[ok].dim[dim] / nblk;
    for (s = 0; s < n; s++)
        if (loc[s].out[ok].dim[dim] != blk * nblk)
            return 0;
    for (b = 0; b < nblk; b++)
        for (s = 0; s < n; s++)
            if (!sc_cmp_block(global, gs, loc[s].outbuf[ok], &loc[s].out[ok], dim,
                              b * blk * n + s * blk, b * blk, blk, scale))
                return 0;
    return 1;
}

/* Narrow ALIVE[k] (bits of as_combine_kind) and GDIM[k] for trial T; 0 when some output dies. */
static int
sc_check_outputs(sc_ctx *c, const sc_trial *tr, sc_local *loc, int n, int nsplit, int halo,
                 unsigned *alive, int *gdim)
{
    const as_opinfo *info = c->info;
    int k, s;

    for (k = 0; k < info->nout; k++) {
        const as_shape *gs = &info->out[k];
        int64_t numel = as_shape_numel(gs);
        int d = sc_split_dim(gs, loc, n, k);
        unsigned m = alive[k], keep = 0;
        if (d >= 0 && gdim[k] == -1)
            gdim[k] = d;
        if (d >= 0 && d != gdim[k])
            return 0;
        if (d == -1) { /* local shapes equal the global one */
            if (m & (1u << AS_COMBINE_IDENTITY)) {
                int same = 1;
                for (s = 0; s < n && same; s++)
                    same = sc_cmp_block(tr->out[k], gs, loc[s].outbuf[k], gs, 0, 0, 0,
                                        gs->rank ? gs->dim[0] : 1, tr->scale[k]);
                keep |= same ? 1u << AS_COMBINE_IDENTITY : 0;
            }
            for (s = AS_COMBINE_SUM; s <= AS_COMBINE_MIN; s++)
                if ((m & (1u << s)) &&
                    sc_check_reduce((as_combine_kind)s, tr->out[k], numel, loc, n, k, tr->scale[k]))
                    keep |= 1u << s;
        } else if (d >= 0) {
            if (halo > 0 && (m & (1u << AS_COMBINE_HALO)) &&
                sc_check_gather(tr->out[k], gs, loc, n, k, d, 1, tr->scale[k]))
                keep |= 1u << AS_COMBINE_HALO;
            if (halo == 0 && (m & (1u << AS_COMBINE_GATHER)) &&
                sc_check_gather(tr->out[k], gs, loc, n, k, d, 1, tr->scale[k]))
                keep |= 1u << AS_COMBINE_GATHER;
            if (halo == 0 && nsplit >= 2 && (m & (1u << AS_COMBINE_BLOCK)) &&
                sc_check_gather(tr->out[k], gs, loc, n, k, d, nsplit, tr->scale[k]))
                keep |= 1u << AS_COMBINE_BLOCK;
        }
        alive[k] = keep;
        if (keep == 0)
            return 0;
    }
    return 1;
}

/* Try group G with overlap HALO on every trial; on success fill COMB[0..nout). */
static int
sc_try(sc_ctx *c, const int8_t *g, int halo, as_combine *comb)
{
    const as_opinfo *info = c->info;
    unsigned alive[AS_MAX_OUTS];
    int gdim[AS_MAX_OUTS], t, k, s, nsplit = 0, good = 1;
    sc_local *loc = as_xcalloc(SC_MAX_SHARDS, sizeof *loc);

    for (k = 0; k < info->nin; k++)
        nsplit += g[k] >= 0;
    for (k = 0; k < info->nout; k++) {
        alive[k] = halo > 0 ? 1u << AS_COMBINE_HALO : SC_PLAIN_MASK;
        gdim[k] = -1;
    }
    for (t = 0; t < SC_TRIALS && good; t++) {
        int n = sc_nshards[t];
        for (s = 0; s < n && good; s++)
            good = sc_run_shard(c, &c->trial[t], g, s, n, halo, &loc[s]);
        if (good)
            good = sc_check_outputs(c, &c->trial[t], loc, n, nsplit, halo, alive, gdim);
        for (s = 0; s < n; s++)
            sc_local_free(&loc[s], info->nin);
    }
    free(loc);
    if (!good)
        return 0;
    for (k = 0; k < info->nout; k++) {
        as_combine_kind kind = AS_COMBINE_IDENTITY;
        while (!(alive[k] & (1u << kind)))
            kind++;
        comb[k].kind = kind;
        comb[k].dim = kind == AS_COMBINE_GATHER || kind == AS_COMBINE_BLOCK ||
                              kind == AS_COMBINE_HALO
                          ? gdim[k]
                          : -1;
    }
    return 1;
}

/* Try candidate G (plain, then with overlaps when one input is split) and record a rule. */
static void
sc_candidate(sc_ctx *c, const int8_t *g, int64_t size, as_rule_set *set)
{
    as_combine comb[AS_MAX_OUTS];
    int j, nsplit = 0, h;

    c->cands++;
    if (sc_try(c, g, 0, comb)) {
        as_rules_i_set_add(set, g, comb, 0);
        return;
    }
    for (j = 0; j < c->info->nin; j++)
        nsplit += g[j] >= 0;
    if (nsplit != 1)
        return;
    for (h = 1; h <= SC_MAX_HALO && h < size / SC_MAX_SHARDS; h++)
        if (sc_try(c, g, h, comb)) {
            as_rules_i_set_add(set, g, comb, h);
            return;
        }
}

/* Enumerate groups: input J onwards, split size SIZE (0 = none chosen yet). */
static void
sc_enum(sc_ctx *c, int8_t *g, int j, int64_t size, as_rule_set *set)
{
    const as_opinfo *info = c->info;
    int d;

    if (c->cands >= SC_MAX_CAND)
        return;
    if (j == info->nin) {
        if (size > 0)
            sc_candidate(c, g, size, set);
        return;
    }
    g[j] = -1;
    sc_enum(c, g, j + 1, size, set);
    for (d = 0; d < info->in[j].rank; d++) {
        int64_t s = info->in[j].dim[d];
        if (s < 6 || s % 6 != 0 || (size > 0 && s != size))
            continue;
        g[j] = (int8_t)d;
        sc_enum(c, g, j + 1, s, set);
    }
    g[j] = -1;
}

/* Does some size-carrying attribute entry of the instance equal SIZE? */
static int
sc_attr_has(const as_opinfo *info, int64_t size)
{
    int i, j;

    for (i = 0; i < info->nattr; i++) {
        const as_attr *at = &info->attr[i];
        if (!as_rules_i_size_attr(info->def->name, at->key))
            continue;
        if (at->kind == AS_ATTR_INT && at->i == size)
            return 1;
        for (j = 0; at->kind == AS_ATTR_INTS && j < at->n; j++)
            if (at->v[j] == size)
                return 1;
    }
    return 0;
}

/*
 * Made-locally candidates (ops with inputs): per distinct size of an output dim that a
 * size-carrying attribute gives, no input split and those entries cut to the shard.  A rule
 * when every output is gathered along one dim or stays whole; the gathered outputs are
 * recorded as identity(d) (each device makes its slice).
 */
static void
sc_enum_local(sc_ctx *c, int8_t *g, as_rule_set *set)
{
    const as_opinfo *info = c->info;
    as_combine comb[AS_MAX_OUTS];
    int64_t tried[AS_MAX_RANK];
    int ntried = 0, d, k, t, split;

    if (info->nin == 0 || info->nout < 1)
        return;
    memset(g, -1, (size_t)info->nin);
    for (d = 0; d < info->out[0].rank && c->cands < SC_MAX_CAND; d++) {
        int64_t s = info->out[0].dim[d];
        if (s < 6 || s % 6 != 0 || !sc_attr_has(info, s))
            continue;
        for (t = 0; t < ntried && tried[t] != s; t++)
            ;
        if (t < ntried)
            continue;
        tried[ntried++] = s;
        c->cands++;
        c->osize = s;
        if (sc_try(c, g, 0, comb)) {
            split = 0;
            for (k = 0; k < info->nout && comb[k].kind != AS_COMBINE_BLOCK &&
                        (comb[k].kind == AS_COMBINE_GATHER || comb[k].kind == AS_COMBINE_IDENTITY);
                 k++)
                if (comb[k].kind == AS_COMBINE_GATHER) {
                    comb[k].kind = AS_COMBINE_IDENTITY;
                    split = 1;
                }
            if (k == info->nout && split)
                as_rules_i_set_add(set, g, comb, 0);
        }
        c->osize = 0;
    }
}

int
as_rules_i_discover(const as_opinfo *info, const char *key, as_rule_set **out, as_err *err)
{
    sc_ctx c;
    as_rng rng;
    int8_t g[SC_MAX_IN];
    as_rule_set *set;
    int t;

    if (info->nin > SC_MAX_IN)
        return as_errf(err, AS_EUSAGE, "%s: more than %d inputs, rule discovery skipped",
                       info->def->name, SC_MAX_IN);
    memset(&c, 0, sizeof c);
    c.info = info;
    c.scratch = as_arena_new();
    as_rng_seed(&rng, 0x5eed5c0deULL);
    for (t = 0; t < SC_TRIALS; t++)
        sc_trial_init(&c, t, &rng);
    set = as_rules_i_set_new(key, info->nin, info->nout, AS_RULES_DISCOVERED);
    sc_enum(&c, g, 0, 0, set);
    sc_enum_local(&c, g, set);
    if (c.cands >= SC_MAX_CAND)
        as_debug("rules: %s: candidate limit %d reached", info->def->name, SC_MAX_CAND);
    as_rules_i_set_finish(set);
    for (t = 0; t < SC_TRIALS; t++)
        sc_trial_free(&c, t);
    as_arena_free(c.scratch);
    as_rules_i_count(c.cands, c.runs);
    *out = set;
    return AS_OK;
}
