/* program.c -- the event program: builder, checks and canonical writer.
 *
 * The builder appends events in program order into flat arrays (see
 * sim_internal.h).  Every buffer (tensor, device) is written at most once
 * (static single assignment per device, as in DistIR), so the producer of
 * every read is unambiguous; reads may refer forward, and
 * as_sim_prog_check() reports reads nobody produces.  Compute events costed
 * from an op are interned by their canonical text, which is also what the
 * writer prints, so "identical" means "prints the same".
 *
 * The text reader (as_sim_prog_parse, at the end) is a line tokenizer that
 * fills an as_sim_event_spec per line and calls the same builder, so parsed
 * and built programs get the same checks.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RD_ASAN 1
#endif
#endif
#if defined(__SSE2__) && !defined(__SANITIZE_ADDRESS__) && !defined(RD_ASAN)
#include <emmintrin.h>
#define RD_SSE2 1 /* aligned 16-byte loads read past the text's NUL: not under ASan */
#endif

#include "sim_internal.h"

#if defined(__linux__) && !defined(AS_FUZZING)
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define RD_MMAP 1
#endif

#define SIM_MAX_DEVICES 65536

/* Buffers. */

static uint64_t
buf_hash(int64_t key)
{
    uint64_t x = (uint64_t)key * 0x9E3779B97F4A7C15ull;

    return x ^ (x >> 29);
}

static int64_t
buf_key(int32_t t, int dev)
{
    return ((int64_t)t << 17 | (int64_t)dev) + 1;
}

int32_t
as_sim_i_buf_find(const as_sim_prog *p, int32_t t, int dev)
{
    int64_t key;
    size_t i;

    if ((size_t)t < p->trows.n) {
        const sim_trow *r = &p->trows.v[t];

        if (r->row != NULL) {
            uint32_t k = (uint32_t)(dev - r->lo);

            return k < (uint32_t)r->span ? r->row[k] : -1;
        }
        if (!r->hashed)
            return -1;
    } else {
        return -1;
    }
    key = buf_key(t, dev);
    for (i = buf_hash(key) & (p->bcap - 1); p->bkeys[i] != 0; i = (i + 1) & (p->bcap - 1))
        if (p->bkeys[i] == key)
            return p->bvals[i];
    return -1;
}

static void
buf_insert(as_sim_prog *p, int64_t key, int32_t val)
{
    size_t i;

    for (i = buf_hash(key) & (p->bcap - 1); p->bkeys[i] != 0; i = (i + 1) & (p->bcap - 1))
        ;
    p->bkeys[i] = key;
    p->bvals[i] = val;
}

/* Put (T, DEV) -> ID into the hash, growing it at half load. */
static void
buf_hash_put(as_sim_prog *p, int32_t t, int dev, int32_t id)
{
    if ((p->bn + 1) * 2 > p->bcap) {
        int64_t *ok = p->bkeys;
        int32_t *ov = p->bvals;
        size_t oc = p->bcap, i;

        p->bcap = oc ? oc * 2 : 1024;
        p->bkeys = as_xcalloc(p->bcap, sizeof *p->bkeys);
        p->bvals = as_xcalloc(p->bcap, sizeof *p->bvals);
        for (i = 0; i < oc; i++)
            if (ok[i] != 0)
                buf_insert(p, ok[i], ov[i]);
        free(ok);
        free(ov);
    }
    buf_insert(p, buf_key(t, dev), id);
    p->bn++;
}

/*
 * Index buffer ID of (T, DEV) (absent so far).  A tensor's buffers live in a row
 * over the device range they cover (one load per lookup, and the lines of one
 * event on consecutive devices touch consecutive entries); the row grows by
 * doubling while it stays under 64 devices or 8 entries per buffer, else the
 * tensor moves to the hash, so memory stays linear in the buffers.
 */
static void
buf_index(as_sim_prog *p, int32_t t, int dev, int32_t id)
{
    sim_trow *r;
    int32_t lo, hi, *row, k;

    if ((size_t)t >= p->trows.n) {
        size_t n = p->trows.n;

        AS_VEC_RESERVE(&p->trows, (size_t)t + 1);
        memset(p->trows.v + n, 0, ((size_t)t + 1 - n) * sizeof *p->trows.v);
        p->trows.n = (size_t)t + 1;
    }
    r = &p->trows.v[t];
    if (r->hashed) {
        buf_hash_put(p, t, dev, id);
        return;
    }
    if (r->row == NULL) { /* first buffer: a row of up to 8 devices from DEV */
        r->lo = dev;
        r->span = p->ndev - dev < 8 ? p->ndev - dev : 8;
        r->row = as_xmalloc((size_t)r->span * sizeof *r->row);
        for (k = 0; k < r->span; k++)
            r->row[k] = -1;
    } else if (dev < r->lo || dev >= r->lo + r->span) {
        lo = r->lo;
        hi = r->lo + r->span - 1;
        if (dev > hi)
            hi = dev + r->span > p->ndev - 1 ? p->ndev - 1 : dev + r->span;
        else
            lo = dev - r->span < 0 ? 0 : dev - r->span;
        if (hi - lo + 1 > 64 && hi - lo + 1 > 8 * (r->nbuf + 1)) { /* sparse: to the hash */
            for (k = 0; k < r->span; k++)
                if (r->row[k] >= 0)
                    buf_hash_put(p, t, r->lo + k, r->row[k]);
            free(r->row);
            r->row = NULL;
            r->hashed = 1;
            buf_hash_put(p, t, dev, id);
            return;
        }
        row = as_xmalloc((size_t)(hi - lo + 1) * sizeof *row);
        for (k = 0; k < hi - lo + 1; k++)
            row[k] = -1;
        memcpy(row + (r->lo - lo), r->row, (size_t)r->span * sizeof *row);
        free(r->row);
        r->row = row;
        r->lo = lo;
        r->span = hi - lo + 1;
    }
    r->row[dev - r->lo] = id;
    r->nbuf++;
}

/* Buffer id of (T, DEV), created (unproduced, 0 bytes) if absent. */
static int32_t
buf_get(as_sim_prog *p, int32_t t, int dev)
{
    int32_t id = as_sim_i_buf_find(p, t, dev);
    sim_buf b;

    if (id >= 0)
        return id;
    b.tensor = t;
    b.dev = dev;
    b.producer = SIM_NONE;
    b.origin = SIM_BUF_ACT;
    b.bytes = 0;
    id = (int32_t)p->bufs.n;
    AS_VEC_PUSH(&p->bufs, b);
    buf_index(p, t, dev, id);
    return id;
}

/* Create and free. */

int
as_sim_prog_new(const char *name, int ndevices, as_sim_prog **out, as_err *err)
{
    as_sim_prog *p;

    if (ndevices < 1 || ndevices > SIM_MAX_DEVICES)
        return as_errf(err, AS_EUSAGE, "program '%s': %d devices (must be 1 to %d)", name,
                       ndevices, SIM_MAX_DEVICES);
    p = as_xcalloc(1, sizeof *p);
    p->arena = as_arena_new();
    p->name = as_arena_strdup(p->arena, name);
    p->hw = p->model = p->path = (char *)"";
    p->ndev = ndevices;
    p->nexplicit = ndevices;
    as_strmap_init(&p->tmap);
    as_strmap_init(&p->opmap);
    *out = p;
    return AS_OK;
}

void
as_sim_prog_free(as_sim_prog *p)
{
    if (p == NULL)
        return;
    AS_VEC_FREE(&p->ev);
    AS_VEC_FREE(&p->devs);
    AS_VEC_FREE(&p->rds);
    AS_VEC_FREE(&p->wrs);
    AS_VEC_FREE(&p->bufs);
    AS_VEC_FREE(&p->decls);
    AS_VEC_FREE(&p->ops);
    AS_VEC_FREE(&p->tnames);
    AS_VEC_FREE(&p->labels);
    as_strmap_destroy(&p->tmap);
    as_strmap_destroy(&p->opmap);
    for (size_t i = 0; i < p->trows.n; i++)
        free(p->trows.v[i].row);
    AS_VEC_FREE(&p->trows);
    free(p->bkeys);
    free(p->bvals);
    free(p->rep);
    as_arena_free(p->arena);
    free(p);
}

void
as_sim_prog_set_hw(as_sim_prog *p, const char *hw)
{
    p->hw = as_arena_strdup(p->arena, hw != NULL ? hw : "");
}

void
as_sim_prog_set_cost_model(as_sim_prog *p, const char *model)
{
    p->model = as_arena_strdup(p->arena, model != NULL ? model : "");
}

void
as_sim_prog_set_batch(as_sim_prog *p, double batch)
{
    p->batch = batch;
}

void
as_sim_prog_set_path(as_sim_prog *p, const char *path)
{
    p->path = as_arena_strdup(p->arena, path != NULL ? path : "");
}

/* Queries. */

const char *
as_sim_prog_name(const as_sim_prog *p)
{
    return p->name;
}

int
as_sim_prog_ndevices(const as_sim_prog *p)
{
    return p->ndev;
}

const char *
as_sim_prog_hw(const as_sim_prog *p)
{
    return p->hw;
}

const char *
as_sim_prog_cost_model(const as_sim_prog *p)
{
    return p->model;
}

double
as_sim_prog_batch(const as_sim_prog *p)
{
    return p->batch;
}

size_t
as_sim_prog_nevents(const as_sim_prog *p)
{
    return p->ev.n;
}

as_sim_kind
as_sim_event_kind(const as_sim_prog *p, size_t i)
{
    return (as_sim_kind)p->ev.v[i].kind;
}

const char *
as_sim_event_label(const as_sim_prog *p, size_t i)
{
    return p->ev.v[i].label >= 0 ? p->labels.v + p->ev.v[i].label : "";
}

int
as_sim_event_line(const as_sim_prog *p, size_t i)
{
    return p->ev.v[i].line;
}

const int32_t *
as_sim_event_devices(const as_sim_prog *p, size_t i, int *n)
{
    *n = p->ev.v[i].ndev;
    return p->devs.v + p->ev.v[i].dev_off;
}

int
as_sim_event_stream(const as_sim_prog *p, size_t i)
{
    return p->ev.v[i].stream;
}

/* Symmetry. */

int
as_sim_mirror(as_sim_prog *p, const int *devs, int n, int rep, as_err *err)
{
    int i, d;

    if (p->ev.n > 0 || p->bufs.n > 0)
        return as_errf(err, AS_EUSAGE, "mirrors must be given before events and declarations");
    if (rep < 0 || rep >= p->ndev)
        return as_errf(err, AS_EUSAGE, "unknown device %d (program has %d devices, 0-%d)", rep,
                       p->ndev, p->ndev - 1);
    if (p->rep == NULL) {
        p->rep = as_xmalloc((size_t)p->ndev * sizeof *p->rep);
        for (d = 0; d < p->ndev; d++)
            p->rep[d] = d;
    }
    if (p->rep[rep] != rep)
        return as_errf(err, AS_EUSAGE, "device %d mirrors device %d: it cannot be a "
                       "representative", rep, p->rep[rep]);
    for (i = 0; i < n; i++) {
        d = devs[i];
        if (d < 0 || d >= p->ndev)
            return as_errf(err, AS_EUSAGE, "unknown device %d (program has %d devices, 0-%d)", d,
                           p->ndev, p->ndev - 1);
        if (d == rep)
            continue;
        if (p->rep[d] != d)
            return as_errf(err, AS_EUSAGE, "device %d already mirrors device %d", d, p->rep[d]);
        for (int e = 0; e < p->ndev; e++)
            if (p->rep[e] == d && e != d)
                return as_errf(err, AS_EUSAGE, "device %d is the representative of device %d: "
                               "it cannot mirror another", d, e);
        p->rep[d] = rep;
        p->nexplicit--;
    }
    return AS_OK;
}

int
as_sim_prog_nexplicit(const as_sim_prog *p)
{
    return p->nexplicit;
}

int
as_sim_prog_rep(const as_sim_prog *p, int d)
{
    return as_sim_i_rep(p, d);
}

/* Tensors and declarations. */

int32_t
as_sim_tensor(as_sim_prog *p, const char *name)
{
    int64_t id;
    char *s;

    if (as_strmap_get(&p->tmap, name, (size_t)-1, &id))
        return (int32_t)id;
    s = as_arena_strdup(p->arena, name);
    id = (int64_t)p->tnames.n;
    AS_VEC_PUSH(&p->tnames, s);
    as_strmap_put(&p->tmap, s, id);
    return (int32_t)id;
}

const char *
as_sim_tensor_name(const as_sim_prog *p, int32_t t)
{
    return p->tnames.v[t];
}

int
as_sim_declare(as_sim_prog *p, as_sim_decl kind, const int *devs, int ndevs, int32_t t,
               double bytes, as_err *err)
{
    int i;

    for (i = 0; i < ndevs; i++) {
        int32_t b;
        sim_decl d;

        if (devs[i] < 0 || devs[i] >= p->ndev)
            return as_errf(err, AS_EUSAGE, "unknown device %d (program has %d devices)", devs[i],
                           p->ndev);
        if (as_sim_i_rep(p, devs[i]) != devs[i])
            continue; /* a mirror holds what its representative holds */
        b = buf_get(p, t, devs[i]);
        if (p->bufs.v[b].producer != SIM_NONE || p->bufs.v[b].origin != SIM_BUF_ACT)
            return as_errf(err, AS_EUSAGE, "tensor '%s' on device %d is already defined",
                           p->tnames.v[t], devs[i]);
        p->bufs.v[b].origin = kind == AS_SIM_RESIDENT ? SIM_BUF_RESIDENT : SIM_BUF_INPUT;
        p->bufs.v[b].bytes = bytes;
        d.buf = b;
        d.kind = (int32_t)kind;
        AS_VEC_PUSH(&p->decls, d);
    }
    return AS_OK;
}

/* Events. */

void
as_sim_event_spec_init(as_sim_event_spec *s)
{
    memset(s, 0, sizeof *s);
    s->kind = AS_SIM_COMPUTE;
    s->coll = AS_COLL_ALL_REDUCE;
    s->time = -1;
    s->stream = -1;
    s->op_id = -1;
}

/* Error for spec S at column COL: positioned when parsed, named by label when built. */
static int __attribute__((format(printf, 5, 6)))
spec_err(const as_sim_prog *p, const as_sim_event_spec *s, int col, as_err *err,
         const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->line > 0)
        return as_errf(err, AS_EPARSE, "%s:%d:%d: %s", p->path, s->line, col > 0 ? col : 1, msg);
    if (s->label != NULL && s->label[0] != '\0')
        return as_errf(err, AS_EUSAGE, "event '%s': %s", s->label, msg);
    return as_errf(err, AS_EUSAGE, "event %zu: %s", p->ev.n, msg);
}

/* Is byte C one a name may hold ([A-Za-z0-9_./-])? */
static int
name_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '/' || c == '-';
}

/* 1 if S is a valid name for tensors and labels: [A-Za-z0-9_./-]+ (not starting with '-'). */
static int
name_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || s[0] == '-')
        return 0;
    for (i = 0; i < len; i++)
        if (!name_byte((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Append string S: name bytes as they are, any other byte (and a leading '-', '.' or digit,
   which would read as a number) as %XX, so a conv_general's "b01f_01io->b01f" or an opaque op's
   quoted custom-call target reads back (rd_attr decodes it). */
static void
op_text_str(char *buf, size_t n, size_t *off, const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0' && *off < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (name_byte(c) && !(i == 0 && (c == '-' || c == '.' || (c >= '0' && c <= '9'))))
            *off += (size_t)snprintf(buf + *off, n - *off, "%c", c);
        else
            *off += (size_t)snprintf(buf + *off, n - *off, "%%%02X", c);
    }
}

/* Append attribute A to BUF at *OFF as " attr.KEY=VALUE". */
static void
op_text_attr(char *buf, size_t n, size_t *off, const as_attr *a)
{
    char num[40];
    int k;

    if (*off >= n)
        return;
    /* an empty string (an opaque op's custom-call target) has no text: left out, it reads
       back as its default, "" */
    if (a->kind == AS_ATTR_STR && (a->s == NULL || a->s[0] == '\0'))
        return;
    *off += (size_t)snprintf(buf + *off, n - *off, " attr.%s=", a->key);
    if (*off < n && a->kind == AS_ATTR_STR) {
        op_text_str(buf, n, off, a->s);
        return;
    }
    if (*off >= n)
        return;
    switch (a->kind) {
    case AS_ATTR_INT:
        *off += (size_t)snprintf(buf + *off, n - *off, "%lld", (long long)a->i);
        break;
    case AS_ATTR_FLOAT:
        if (isinf(a->f)) { /* a max-pool's init: signed, so it reads as a number */
            *off += (size_t)snprintf(buf + *off, n - *off, "%s", a->f > 0 ? "+inf" : "-inf");
            break;
        }
        as_sim_i_fmt_num(num, sizeof num, a->f);
        /* keep a float a float when read back */
        *off += (size_t)snprintf(buf + *off, n - *off, "%s%s", num,
                                 strpbrk(num, ".eEn") == NULL ? ".0" : "");
        break;
    default:
        *off += (size_t)snprintf(buf + *off, n - *off, "[");
        for (k = 0; k < a->n && *off < n; k++)
            *off += (size_t)snprintf(buf + *off, n - *off, k ? ",%lld" : "%lld",
                                     (long long)a->v[k]);
        if (*off < n)
            *off += (size_t)snprintf(buf + *off, n - *off, "]");
    }
}

/*
 * Intern the op of S: bind attributes, infer outputs, build the canonical
 * text and return the index of the (possibly shared) sim_op in *IDX.
 */
static int
op_intern(as_sim_prog *p, const as_sim_event_spec *s, int32_t *idx, as_err *err)
{
    const as_sim_op *o = s->op;
    as_shape outs[AS_MAX_OUTS], *in;
    as_attr *bound = NULL;
    int nbound = 0, nout = 0, i;
    char text[2048], sh[256];
    size_t off;
    int64_t v;
    sim_op so;
    as_err e2 = {0};

    if (o->def == NULL)
        return spec_err(p, s, s->col, err, "compute op has no type");
    if (o->nin < o->def->min_in || (!(o->def->flags & AS_OPF_VARIADIC) && o->nin > o->def->max_in))
        return spec_err(p, s, s->col, err, "'%s' takes %d to %d inputs, got %d", o->def->name,
                        o->def->min_in, o->def->max_in, o->nin);
    if (as_registry_bind_attrs(o->def, o->attr, o->nattr, p->arena, &bound, &nbound, &e2) != AS_OK)
        return spec_err(p, s, s->col, err, "%s", e2.msg);
    for (i = 0; i < o->nin; i++)
        if (as_shape_validate(&o->in[i], 1, &e2) != AS_OK)
            return spec_err(p, s, s->col, err, "%s", e2.msg);
    if (as_op_infer(o->def, o->in, o->nin, bound, nbound, outs, &nout, &e2) != AS_OK)
        return spec_err(p, s, s->col, err, "%s", e2.msg);
    off = (size_t)snprintf(text, sizeof text, "op=%s%s", o->def->name, o->nin ? " in=" : "");
    for (i = 0; i < o->nin && off < sizeof text; i++)
        off += (size_t)snprintf(text + off, sizeof text - off, "%s%s", i ? "," : "",
                                as_shape_str(&o->in[i], sh, sizeof sh));
    for (i = 0; i < nbound; i++)
        op_text_attr(text, sizeof text, &off, &bound[i]);
    if (off >= sizeof text)
        return spec_err(p, s, s->col, err, "op description too long");
    if (as_strmap_get(&p->opmap, text, (size_t)-1, &v)) {
        *idx = (int32_t)v;
        return AS_OK;
    }
    so.text = as_arena_strdup(p->arena, text);
    so.info.def = o->def;
    so.info.nin = o->nin;
    /* a nullary op (fill, iota) has no input shapes: O->in may be NULL */
    in = as_arena_alloc(p->arena, (size_t)(o->nin ? o->nin : 1) * sizeof *in);
    if (o->nin > 0)
        memcpy(in, o->in, (size_t)o->nin * sizeof *in);
    so.info.in = in;
    so.info.nout = nout;
    so.info.out = as_arena_memdup(p->arena, outs, (size_t)(nout ? nout : 1) * sizeof *outs);
    so.info.nattr = nbound;
    so.info.attr = bound;
    *idx = (int32_t)p->ops.n;
    AS_VEC_PUSH(&p->ops, so);
    as_strmap_put(&p->opmap, so.text, *idx);
    return AS_OK;
}

/* Check the device list of S against its kind. */
static int
spec_check_devs(const as_sim_prog *p, const as_sim_event_spec *s, as_err *err)
{
    int i, j;

    if (s->ndevs < 1)
        return spec_err(p, s, s->col, err, "event has no devices");
    if (s->ndevs > 65535)
        return spec_err(p, s, s->col, err, "event has %d devices (at most 65535)", s->ndevs);
    for (i = 0; i < s->ndevs; i++) {
        if (s->devs[i] < 0 || s->devs[i] >= p->ndev)
            return spec_err(p, s, s->col, err, "unknown device %d (program has %d devices, 0-%d)",
                            s->devs[i], p->ndev, p->ndev - 1);
        if (s->kind != AS_SIM_COMPUTE && s->ndevs <= 64)
            for (j = 0; j < i; j++)
                if (s->devs[j] == s->devs[i])
                    return spec_err(p, s, s->col, err, "device %d listed twice", s->devs[i]);
    }
    if (p->rep != NULL && s->kind != AS_SIM_COLL) {
        for (i = 0; i < s->ndevs; i++)
            if (p->rep[s->devs[i]] != s->devs[i])
                return spec_err(p, s, s->col, err, "device %d mirrors device %d: its events run "
                                "on device %d", s->devs[i], p->rep[s->devs[i]],
                                p->rep[s->devs[i]]);
    }
    if (p->rep != NULL && s->kind == AS_SIM_COLL) {
        for (i = 0; i < s->ndevs && p->rep[s->devs[i]] != s->devs[i]; i++)
            ;
        if (i == s->ndevs)
            return spec_err(p, s, s->col, err, "a collective needs a device that mirrors "
                            "nobody (device %d mirrors device %d)", s->devs[0],
                            p->rep[s->devs[0]]);
    }
    if (s->kind == AS_SIM_SEND && (s->ndevs != 2 || s->devs[0] == s->devs[1]))
        return spec_err(p, s, s->col, err, "a send needs two different devices (SRC->DST)");
    if (s->kind == AS_SIM_SEND && (s->nreads != 1 || s->nwrites != 0))
        return spec_err(p, s, s->col, err, "a send moves exactly one tensor");
    if (s->kind == AS_SIM_COLL && (s->coll == AS_COLL_SEND || (unsigned)s->coll >= AS_COLL_COUNT))
        return spec_err(p, s, s->col, err, "bad collective kind");
    if (s->nreads > 65535 || s->nwrites > 65535)
        return spec_err(p, s, s->col, err, "too many tensors in one event");
    return AS_OK;
}

/* Default bytes per device written by write I of S (docs/sim.md). */
static double
spec_write_bytes(const as_sim_prog *p, const as_sim_event_spec *s, int32_t op, int i)
{
    if (s->wbytes != NULL && s->wbytes[i] >= 0)
        return s->wbytes[i];
    if (s->kind == AS_SIM_COMPUTE) {
        const sim_op *o = op >= 0 ? &p->ops.v[op] : NULL;

        return o != NULL && i < o->info.nout ? (double)as_shape_bytes(&o->info.out[i]) : 0.0;
    }
    if (s->kind == AS_SIM_COLL && s->coll == AS_COLL_REDUCE_SCATTER)
        return s->bytes / s->ndevs;
    return s->bytes;
}

/* Mark buffer (T, DEV) as written by event E with BYTES; error if written before. */
static int
spec_write(as_sim_prog *p, const as_sim_event_spec *s, int32_t t, int dev, double bytes,
           int32_t e, as_err *err)
{
    int32_t b = buf_get(p, t, dev);
    sim_buf *bf = &p->bufs.v[b];

    if (bf->producer != SIM_NONE) {
        const sim_event *o = &p->ev.v[bf->producer];

        if (o->line > 0)
            return spec_err(p, s, s->col, err,
                            "tensor '%s' on device %d is already written at line %d",
                            p->tnames.v[t], dev, o->line);
        return spec_err(p, s, s->col, err, "tensor '%s' on device %d is already written",
                        p->tnames.v[t], dev);
    }
    if (bf->origin != SIM_BUF_ACT)
        return spec_err(p, s, s->col, err, "tensor '%s' on device %d is declared %s",
                        p->tnames.v[t], dev, bf->origin == SIM_BUF_RESIDENT ? "resident" : "input");
    bf->producer = e;
    bf->bytes = bytes;
    AS_VEC_PUSH(&p->wrs, b);
    return AS_OK;
}

/* Append one event of S on devices DEVS[0..NDEVS) (after all checks but writes). */
static int
add_one(as_sim_prog *p, const as_sim_event_spec *s, const int *devs, int ndevs, int32_t op,
        int32_t label, as_err *err)
{
    sim_event ev;
    int32_t e = (int32_t)p->ev.n;
    int i, j;

    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)s->kind;
    ev.coll = (uint8_t)(s->kind == AS_SIM_SEND ? AS_COLL_SEND : s->coll);
    ev.stream = (uint8_t)(s->stream >= 0 ? s->stream
                          : s->kind == AS_SIM_COMPUTE ? AS_SIM_STREAM_COMPUTE : AS_SIM_STREAM_COMM);
    ev.line = s->line;
    ev.reads_col = s->reads_col;
    ev.label = label;
    ev.op = op;
    ev.time = s->time;
    ev.bytes = s->bytes;
    ev.dev_off = (uint32_t)p->devs.n;
    ev.ndev = (uint16_t)ndevs;
    for (i = 0; i < ndevs; i++)
        AS_VEC_PUSH(&p->devs, devs[i]);
    /* reads: on every device, except a send, which reads on its source only */
    ev.rd_off = (uint32_t)p->rds.n;
    for (i = 0; i < (s->kind == AS_SIM_SEND ? 1 : ndevs); i++)
        for (j = 0; j < s->nreads && as_sim_i_rep(p, devs[i]) == devs[i]; j++)
            AS_VEC_PUSH(&p->rds, buf_get(p, s->reads[j], devs[i]));
    ev.nrd = (uint16_t)(p->rds.n - ev.rd_off);
    ev.wr_off = (uint32_t)p->wrs.n;
    AS_VEC_PUSH(&p->ev, ev);
    if (s->kind == AS_SIM_SEND) {
        AS_CHECK(spec_write(p, s, s->reads[0], devs[1], s->bytes, e, err));
    } else {
        for (i = 0; i < ndevs; i++)
            for (j = 0; j < s->nwrites && as_sim_i_rep(p, devs[i]) == devs[i]; j++)
                AS_CHECK(spec_write(p, s, s->writes[j], devs[i],
                                    spec_write_bytes(p, s, op, j), e, err));
    }
    p->ev.v[e].nwr = (uint16_t)(p->wrs.n - p->ev.v[e].wr_off);
    return AS_OK;
}

int
as_sim_add(as_sim_prog *p, const as_sim_event_spec *s0, as_err *err)
{
    as_sim_event_spec s = *s0;
    int32_t op = SIM_NONE, label = SIM_NONE;
    int i;

    AS_CHECK(spec_check_devs(p, &s, err));
    if (s.label != NULL && s.label[0] != '\0') {
        size_t ll = strlen(s.label) + 1;
        /* the lines of one op on its devices share a label: checked and stored once */
        if (p->lastlab > 0 && (size_t)(p->labels.n - (size_t)(p->lastlab - 1)) == ll &&
            memcmp(p->labels.v + p->lastlab - 1, s.label, ll) == 0) {
            label = p->lastlab - 1;
        } else {
            if (!name_ok(s.label, ll - 1))
                return spec_err(p, &s, s.col, err, "bad label '%s'", s.label);
            label = (int32_t)p->labels.n;
            AS_VEC_RESERVE(&p->labels, p->labels.n + ll);
            memcpy(p->labels.v + p->labels.n, s.label, ll);
            p->labels.n += ll;
            p->lastlab = label + 1;
        }
    }
    /* Bounds keep sums over millions of events finite (1e9 s is 31 years, 1e18 B an EB). */
    if (!(s.time < 0) && (!isfinite(s.time) || s.time > AS_SIM_MAX_TIME))
        return spec_err(p, &s, s.col, err, "time must be a number of seconds <= %g",
                        AS_SIM_MAX_TIME);
    if (s.bytes > AS_SIM_MAX_BYTES)
        return spec_err(p, &s, s.col, err, "bytes must be <= %g", AS_SIM_MAX_BYTES);
    for (int w = 0; s.wbytes != NULL && w < s.nwrites; w++)
        if (s.wbytes[w] > AS_SIM_MAX_BYTES)
            return spec_err(p, &s, s.col, err, "bytes of '%s' must be <= %g",
                            p->tnames.v[s.writes[w]], AS_SIM_MAX_BYTES);
    if (s.kind == AS_SIM_COMPUTE && s.time < 0) {
        if (s.op_id >= 0 && (size_t)s.op_id < p->ops.n)
            op = s.op_id;
        else if (s.op_id >= 0)
            return spec_err(p, &s, s.col, err, "unknown op id %d", (int)s.op_id);
        else if (s.op == NULL)
            return spec_err(p, &s, s.col, err, "compute needs time= or op=");
        else
            AS_CHECK(op_intern(p, &s, &op, err));
    }
    if (s.kind == AS_SIM_SEND && s.bytes < 0) {
        int32_t b = as_sim_i_buf_find(p, s.reads[0], s.devs[0]);

        if (b < 0 || (p->bufs.v[b].producer == SIM_NONE && p->bufs.v[b].origin == SIM_BUF_ACT))
            return spec_err(p, &s, s.col, err,
                            "send of '%s' needs bytes= (its size on device %d is not known yet)",
                            p->tnames.v[s.reads[0]], s.devs[0]);
        s.bytes = p->bufs.v[b].bytes;
    }
    if (s.kind != AS_SIM_COMPUTE && (s.bytes < 0 || !isfinite(s.bytes)))
        return spec_err(p, &s, s.col, err, "bytes must be a finite number >= 0");
    if (s.kind == AS_SIM_COMPUTE) {
        for (i = 0; i < s.ndevs; i++)
            AS_CHECK(add_one(p, &s, &s.devs[i], 1, op, label, err));
        return AS_OK;
    }
    return add_one(p, &s, s.devs, s.ndevs, op, label, err);
}

int
as_sim_intern_op(as_sim_prog *p, const as_sim_op *op, int32_t *id, as_err *err)
{
    as_sim_event_spec s;

    as_sim_event_spec_init(&s);
    s.op = op;
    s.label = op->def != NULL ? op->def->name : "op";
    return op_intern(p, &s, id, err);
}

int
as_sim_add_compute(as_sim_prog *p, int dev, double time, const int32_t *reads, int nreads,
                   const int32_t *writes, const double *wbytes, int nwrites, const char *label,
                   as_err *err)
{
    as_sim_event_spec s;

    as_sim_event_spec_init(&s);
    s.devs = &dev;
    s.ndevs = 1;
    s.time = time;
    s.reads = reads;
    s.nreads = nreads;
    s.writes = writes;
    s.wbytes = wbytes;
    s.nwrites = nwrites;
    s.label = label;
    return as_sim_add(p, &s, err);
}

int
as_sim_add_collective(as_sim_prog *p, as_coll kind, const int *group, int n, double bytes,
                      double time, const int32_t *reads, int nreads, const int32_t *writes,
                      const double *wbytes, int nwrites, const char *label, as_err *err)
{
    as_sim_event_spec s;

    as_sim_event_spec_init(&s);
    s.kind = AS_SIM_COLL;
    s.coll = kind;
    s.devs = group;
    s.ndevs = n;
    s.bytes = bytes;
    s.time = time;
    s.reads = reads;
    s.nreads = nreads;
    s.writes = writes;
    s.wbytes = wbytes;
    s.nwrites = nwrites;
    s.label = label;
    return as_sim_add(p, &s, err);
}

int
as_sim_add_send(as_sim_prog *p, int src, int dst, int32_t t, double bytes, double time,
                const char *label, as_err *err)
{
    as_sim_event_spec s;
    int devs[2];

    devs[0] = src;
    devs[1] = dst;
    as_sim_event_spec_init(&s);
    s.kind = AS_SIM_SEND;
    s.devs = devs;
    s.ndevs = 2;
    s.bytes = bytes;
    s.time = time;
    s.reads = &t;
    s.nreads = 1;
    s.label = label;
    return as_sim_add(p, &s, err);
}

int
as_sim_prog_check(const as_sim_prog *p, as_err *err)
{
    size_t e;
    uint32_t k;

    for (e = 0; e < p->ev.n; e++) {
        const sim_event *ev = &p->ev.v[e];

        for (k = 0; k < ev->nrd; k++) {
            const sim_buf *b = &p->bufs.v[p->rds.v[ev->rd_off + k]];

            if (b->producer != SIM_NONE || b->origin != SIM_BUF_ACT)
                continue;
            if (ev->line > 0)
                return as_errf(err, AS_EPARSE,
                               "%s:%d:%d: tensor '%s' on device %d is never produced "
                               "(no event writes it and it is not declared)",
                               p->path, ev->line, ev->reads_col > 0 ? ev->reads_col : 1,
                               p->tnames.v[b->tensor], b->dev);
            return as_errf(err, AS_EUSAGE, "event %zu%s%s%s: tensor '%s' on device %d is never "
                           "produced", e, ev->label >= 0 ? " '" : "",
                           ev->label >= 0 ? p->labels.v + ev->label : "",
                           ev->label >= 0 ? "'" : "", p->tnames.v[b->tensor], b->dev);
        }
    }
    return AS_OK;
}

/* Writer. */

void
as_sim_i_fmt_num(char *buf, size_t n, double x)
{
    snprintf(buf, n, "%.15g", x);
    if (strtod(buf, NULL) != x)
        snprintf(buf, n, "%.17g", x);
}

as_link
as_sim_i_group_link(const int32_t *devs, int n, int devices_per_node)
{
    int i;

    if (devices_per_node < 1)
        return AS_LINK_INTRA;
    for (i = 1; i < n; i++)
        if (devs[i] / devices_per_node != devs[0] / devices_per_node)
            return AS_LINK_INTER;
    return AS_LINK_INTRA;
}

/* Print a device list compressed into ranges: "0-3,8". */
static void
write_devs(FILE *fp, const int32_t *d, int n)
{
    int i = 0, j;

    while (i < n) {
        for (j = i; j + 1 < n && d[j + 1] == d[j] + 1; j++)
            ;
        fprintf(fp, "%s%d", i ? "," : "", d[i]);
        if (j > i)
            fprintf(fp, "-%d", d[j]);
        i = j + 1;
    }
}

/* Text name of an event kind ("compute", "all-reduce", "send"). */
static const char *
event_kind_name(const sim_event *ev)
{
    return ev->kind == AS_SIM_COMPUTE ? "compute" : as_coll_name((as_coll)ev->coll);
}

static void
write_event(const as_sim_prog *p, const sim_event *ev, FILE *fp)
{
    const int32_t *d = p->devs.v + ev->dev_off;
    char num[40];
    uint32_t k, nper, nrep;

    if (ev->label >= 0)
        fprintf(fp, "%s: ", p->labels.v + ev->label);
    fputs(event_kind_name(ev), fp);
    if (ev->kind == AS_SIM_SEND) {
        fprintf(fp, " dev=%d->%d tensor=%s", d[0], d[1],
                p->tnames.v[p->bufs.v[p->rds.v[ev->rd_off]].tensor]);
    } else {
        fputs(ev->kind == AS_SIM_COMPUTE ? " dev=" : " group=", fp);
        write_devs(fp, d, ev->ndev);
    }
    if (ev->kind != AS_SIM_COMPUTE) {
        as_sim_i_fmt_num(num, sizeof num, ev->bytes);
        fprintf(fp, " bytes=%s", num);
    }
    if (ev->time >= 0) {
        as_sim_i_fmt_num(num, sizeof num, ev->time);
        fprintf(fp, " time=%s", num);
    }
    if (ev->op >= 0)
        fprintf(fp, " %s", p->ops.v[ev->op].text);
    if (ev->stream != (ev->kind == AS_SIM_COMPUTE ? AS_SIM_STREAM_COMPUTE : AS_SIM_STREAM_COMM))
        fprintf(fp, " stream=%s", ev->stream == AS_SIM_STREAM_COMPUTE ? "compute" : "comm");
    if (ev->kind == AS_SIM_SEND)
        return;
    /* reads and writes are stored per device (mirrors have none); print the first's */
    for (k = 0, nrep = 0; k < ev->ndev; k++)
        nrep += as_sim_i_rep(p, d[k]) == d[k];
    nper = nrep ? ev->nrd / nrep : 0;
    for (k = 0; k < nper; k++)
        fprintf(fp, "%s%s", k ? "," : " reads=",
                p->tnames.v[p->bufs.v[p->rds.v[ev->rd_off + k]].tensor]);
    nper = nrep ? ev->nwr / nrep : 0;
    for (k = 0; k < nper; k++) {
        const sim_buf *b = &p->bufs.v[p->wrs.v[ev->wr_off + k]];

        as_sim_i_fmt_num(num, sizeof num, b->bytes);
        fprintf(fp, "%s%s:%s", k ? "," : " writes=", p->tnames.v[b->tensor], num);
    }
}

int
as_sim_prog_write(const as_sim_prog *p, FILE *fp, as_err *err)
{
    char num[40];
    size_t i;

    for (i = 0; i < p->tnames.n; i++)
        if (!name_ok(p->tnames.v[i], strlen(p->tnames.v[i])))
            return as_errf(err, AS_EPARSE, "tensor name '%s' cannot be written", p->tnames.v[i]);
    fprintf(fp, "program %s devices=%d", name_ok(p->name, strlen(p->name)) ? p->name : "prog",
            p->ndev);
    if (p->hw[0] != '\0')
        fprintf(fp, " hw=%s", p->hw);
    if (p->model[0] != '\0')
        fprintf(fp, " cost=%s", p->model);
    if (p->batch > 0) {
        as_sim_i_fmt_num(num, sizeof num, p->batch);
        fprintf(fp, " batch=%s", num);
    }
    fputc('\n', fp);
    if (p->rep != NULL) {
        /* "mirror DEVICES as REP", representatives in order: a counting sort by REP */
        int32_t *cnt = as_xcalloc((size_t)p->ndev + 1, sizeof *cnt);
        int32_t *ord = as_xmalloc((size_t)p->ndev * sizeof *ord);
        int d;

        for (d = 0; d < p->ndev; d++)
            if (p->rep[d] != d)
                cnt[p->rep[d] + 1]++;
        for (d = 0; d < p->ndev; d++)
            cnt[d + 1] += cnt[d];
        for (d = 0; d < p->ndev; d++)
            if (p->rep[d] != d)
                ord[cnt[p->rep[d]]++] = d;
        for (d = p->ndev; d > 0; d--)
            cnt[d] = cnt[d - 1];
        cnt[0] = 0;
        for (d = 0; d < p->ndev; d++)
            if (cnt[d + 1] > cnt[d]) {
                fputs("mirror ", fp);
                write_devs(fp, ord + cnt[d], cnt[d + 1] - cnt[d]);
                fprintf(fp, " as %d\n", d);
            }
        free(cnt);
        free(ord);
    }
    for (i = 0; i < p->decls.n; i++) {
        const sim_buf *b = &p->bufs.v[p->decls.v[i].buf];

        as_sim_i_fmt_num(num, sizeof num, b->bytes);
        fprintf(fp, "%s %d %s %s\n", p->decls.v[i].kind == AS_SIM_RESIDENT ? "resident" : "input",
                b->dev, p->tnames.v[b->tensor], num);
    }
    for (i = 0; i < p->ev.n; i++) {
        write_event(p, &p->ev.v[i], fp);
        fputc('\n', fp);
    }
    if (fflush(fp) != 0 || ferror(fp))
        return as_errf(err, AS_EIO, "cannot write program: %s", strerror(errno));
    return AS_OK;
}

/* Reader: one statement per line, "#" starts a comment (docs/sim.md). */

#define RD_MAX_TOKENS 64

typedef struct rd_tok {
    const char *s;
    size_t len;
    int col;             /**< 1-based column of the token */
} rd_tok;

typedef struct rd_state {
    const char *path;
    as_sim_prog *p;      /**< NULL until the header */
    int line;
    size_t nlines;       /**< lines of the text (arrays are sized for them) */
    as_arena *scratch;   /**< per-parse strings (attribute values) */
    AS_VEC(int) devs;
    AS_VEC(int32_t) reads, writes;
    AS_VEC(double) wbytes;
    AS_VEC(as_shape) shapes;
    AS_VEC(as_attr) attrs;
    as_strmap opcache;   /**< op tokens (op=, in=, attr.*) -> interned op id */
    /* the last reads=/tensor= and writes= values parsed and their results: a lowered
     * program repeats them on the lines of one op's devices (pointers into the text) */
    const char *crd_s, *cwr_s;
    size_t crd_len, cwr_len;
    AS_VEC(int32_t) crd, cwr;
    AS_VEC(double) cwb;
    /* the last label token checked ("NAME:") */
    const char *clab_s;
    size_t clab_len;
    /* the last declared tensor name and its id */
    const char *cdecl_s;
    size_t cdecl_len;
    int32_t cdecl_id;
    /* the last op key (op=, in=, attr.* tokens) and its interned op id */
    char cop[1024];
    size_t cop_len;
    int32_t cop_id;
} rd_state;

static int __attribute__((format(printf, 4, 5)))
rd_err(const rd_state *r, int col, as_err *err, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(err, AS_EPARSE, "%s:%d:%d: %s", r->path, r->line, col, msg);
}

/* Parse a number >= 0 from S[0..LEN) for KEY. */
static int
rd_num(const rd_state *r, const char *s, size_t len, int col, const char *key, double *out,
       as_err *err)
{
    char buf[64], *end;
    double v;

    if (len == 0)
        return rd_err(r, col, err, "missing value for '%s'", key);
    if (len <= 15) { /* plain integers (byte counts) are exact doubles: no strtod */
        uint64_t u = 0;
        size_t i;
        for (i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            u = u * 10 + (uint64_t)(s[i] - '0');
        if (i == len) {
            *out = (double)u;
            return AS_OK;
        }
    }
    if (len >= sizeof buf)
        return rd_err(r, col, err, "bad number '%.*s' for '%s'", (int)len, s, key);
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &end);
    if (*end != '\0' || end == buf || !isfinite(v) ||
        (buf[0] != '.' && (buf[0] < '0' || buf[0] > '9')))
        return rd_err(r, col, err, "bad number '%s' for '%s'", buf, key);
    *out = v;
    return AS_OK;
}

/* Parse a non-negative decimal integer at *S (advancing it) below LIMIT. */
static int
rd_int(const char **s, const char *end, long *out)
{
    long v = 0;
    const char *q = *s;

    if (q == end || *q < '0' || *q > '9')
        return 0;
    while (q < end && *q >= '0' && *q <= '9') {
        v = v * 10 + (*q - '0');
        if (v > 1000000000L)
            return 0;
        q++;
    }
    *s = q;
    *out = v;
    return 1;
}

/* Parse a device list "0,2-5" into r->devs; devices are checked by the builder. */
static int
rd_devs(rd_state *r, const char *s, size_t len, int col, const char *key, as_err *err)
{
    const char *q = s, *end = s + len;
    long a, b, d;

    r->devs.n = 0;
    if (len == 0)
        return rd_err(r, col, err, "missing value for '%s'", key);
    if (len <= 5 && r->p != NULL) { /* one device (every compute line of a lowered program) */
        for (d = 0; q < end && *q >= '0' && *q <= '9'; q++)
            d = d * 10 + (*q - '0');
        if (q == end && d < r->p->ndev) {
            AS_VEC_PUSH(&r->devs, (int)d);
            return AS_OK;
        }
        q = s;
    }
    while (q < end) {
        if (!rd_int(&q, end, &a))
            return rd_err(r, col + (int)(q - s), err, "bad device list '%.*s' for '%s'",
                          (int)len, s, key);
        b = a;
        if (q < end && *q == '-') {
            q++;
            if (!rd_int(&q, end, &b) || b < a)
                return rd_err(r, col, err, "bad device range in '%.*s'", (int)len, s);
        }
        if (b - a > SIM_MAX_DEVICES || (long)r->devs.n + (b - a) > SIM_MAX_DEVICES)
            return rd_err(r, col, err, "too many devices in '%.*s'", (int)len, s);
        for (d = a; d <= b; d++) {
            if (r->p != NULL && d >= r->p->ndev)
                return rd_err(r, col, err, "unknown device %ld (program has %d devices, 0-%d)",
                              d, r->p->ndev, r->p->ndev - 1);
            AS_VEC_PUSH(&r->devs, (int)d);
        }
        if (q < end && *q != ',')
            return rd_err(r, col + (int)(q - s), err, "bad device list '%.*s' for '%s'",
                          (int)len, s, key);
        if (q < end && q + 1 == end)
            return rd_err(r, col + (int)(q - s), err, "device list '%.*s' ends with ','",
                          (int)len, s);
        if (q < end)
            q++;
    }
    return AS_OK;
}

/* Id of tensor NAME[0..LEN) (interned), without copying the name when it is known. */
static int32_t
rd_tensor_id(as_sim_prog *p, const char *name, size_t len)
{
    int64_t id;
    char *s;

    if (as_strmap_get(&p->tmap, name, len, &id))
        return (int32_t)id;
    s = as_arena_strndup(p->arena, name, len);
    id = (int64_t)p->tnames.n;
    AS_VEC_PUSH(&p->tnames, s);
    as_strmap_put(&p->tmap, s, id);
    return (int32_t)id;
}

/* Parse "a,b:123,c" into tensor ids (and bytes for writes: -1 = default). */
static int
rd_tensors(rd_state *r, const char *s, size_t len, int col, int with_bytes, const char *key,
           as_err *err)
{
    const char *q = s, *end = s + len;

    if (len == 0)
        return rd_err(r, col, err, "missing value for '%s'", key);
    while (q <= end) {
        size_t n = 0, nb;
        const char *c;
        double bytes = -1;

        while (q + n < end && q[n] != ',')
            n++;
        c = memchr(q, ':', n);
        nb = c != NULL ? (size_t)(c - q) : n;
        if (!name_ok(q, nb) || nb >= 256)
            return rd_err(r, col + (int)(q - s), err, "bad tensor name '%.*s' in '%s'", (int)nb,
                          q, key);
        if (c != NULL) {
            if (!with_bytes)
                return rd_err(r, col + (int)(c - s), err, "'%s' takes names only", key);
            AS_CHECK(rd_num(r, c + 1, n - nb - 1, col + (int)(c + 1 - s), key, &bytes, err));
        }
        if (with_bytes) {
            AS_VEC_PUSH(&r->writes, rd_tensor_id(r->p, q, nb));
            AS_VEC_PUSH(&r->wbytes, bytes);
        } else {
            AS_VEC_PUSH(&r->reads, rd_tensor_id(r->p, q, nb));
        }
        q += n + 1;
    }
    return AS_OK;
}

/* rd_tensors, reusing the result of the last value of the same kind when the text is the same. */
static int
rd_tensors_cached(rd_state *r, const char *s, size_t len, int col, int with_bytes,
                  const char *key, as_err *err)
{
    if (!with_bytes) {
        if (r->crd_s != NULL && len == r->crd_len && memcmp(s, r->crd_s, len) == 0) {
            AS_VEC_RESERVE(&r->reads, r->reads.n + r->crd.n);
            memcpy(r->reads.v + r->reads.n, r->crd.v, r->crd.n * sizeof *r->crd.v);
            r->reads.n += r->crd.n;
            return AS_OK;
        }
        size_t n0 = r->reads.n;
        r->crd_s = NULL;
        AS_CHECK(rd_tensors(r, s, len, col, 0, key, err));
        r->crd.n = 0;
        AS_VEC_RESERVE(&r->crd, r->reads.n - n0);
        memcpy(r->crd.v, r->reads.v + n0, (r->reads.n - n0) * sizeof *r->crd.v);
        r->crd.n = r->reads.n - n0;
        r->crd_s = s;
        r->crd_len = len;
        return AS_OK;
    }
    if (r->cwr_s != NULL && len == r->cwr_len && memcmp(s, r->cwr_s, len) == 0) {
        AS_VEC_RESERVE(&r->writes, r->writes.n + r->cwr.n);
        AS_VEC_RESERVE(&r->wbytes, r->wbytes.n + r->cwb.n);
        memcpy(r->writes.v + r->writes.n, r->cwr.v, r->cwr.n * sizeof *r->cwr.v);
        memcpy(r->wbytes.v + r->wbytes.n, r->cwb.v, r->cwb.n * sizeof *r->cwb.v);
        r->writes.n += r->cwr.n;
        r->wbytes.n += r->cwb.n;
        return AS_OK;
    }
    size_t n0 = r->writes.n;
    r->cwr_s = NULL;
    AS_CHECK(rd_tensors(r, s, len, col, 1, key, err));
    r->cwr.n = r->cwb.n = 0;
    AS_VEC_RESERVE(&r->cwr, r->writes.n - n0);
    AS_VEC_RESERVE(&r->cwb, r->writes.n - n0);
    memcpy(r->cwr.v, r->writes.v + n0, (r->writes.n - n0) * sizeof *r->cwr.v);
    memcpy(r->cwb.v, r->wbytes.v + n0, (r->writes.n - n0) * sizeof *r->cwb.v);
    r->cwr.n = r->cwb.n = r->writes.n - n0;
    r->cwr_s = s;
    r->cwr_len = len;
    return AS_OK;
}

/* Parse "f32[8,16],f32[16]" into r->shapes. */
static int
rd_shapes(rd_state *r, const char *s, size_t len, int col, as_err *err)
{
    const char *q = s, *end = s + len;

    r->shapes.n = 0;
    if (len == 0)
        return rd_err(r, col, err, "missing value for 'in'");
    while (q < end) {
        const char *lb = memchr(q, '[', (size_t)(end - q));
        as_shape sh;
        long v;

        memset(&sh, 0, sizeof sh);
        if (lb == NULL || !as_dtype_parse(q, (size_t)(lb - q), &sh.dtype))
            return rd_err(r, col + (int)(q - s), err, "bad shape '%.*s' (expected like f32[8,16])",
                          (int)(end - q), q);
        q = lb + 1;
        while (q < end && *q != ']') {
            if (sh.rank == AS_MAX_RANK || !rd_int(&q, end, &v) || v < 1)
                return rd_err(r, col + (int)(q - s), err, "bad dimension in shape '%.*s'",
                              (int)len, s);
            sh.dim[sh.rank++] = v;
            if (q < end && *q == ',')
                q++;
            else if (q < end && *q != ']')
                return rd_err(r, col + (int)(q - s), err, "bad shape '%.*s'", (int)len, s);
        }
        if (q == end)
            return rd_err(r, col + (int)(q - s), err, "shape '%.*s' lacks ']'", (int)len, s);
        q++;
        AS_VEC_PUSH(&r->shapes, sh);
        if (q < end && *q++ != ',')
            return rd_err(r, col + (int)(q - 1 - s), err, "expected ',' between shapes");
    }
    return AS_OK;
}

/* Parse attribute VALUE of key K ("attr.K=V"): int, float, [ints] or a name. */
static int
rd_attr(rd_state *r, const rd_tok *t, size_t klen, as_err *err)
{
    const char *v = t->s + klen + 1, *end = t->s + t->len;
    size_t vlen = (size_t)(end - v);
    char buf[64], *e;
    as_attr a;

    memset(&a, 0, sizeof a);
    a.key = as_arena_strndup(r->scratch, t->s + 5, klen - 5);
    if (vlen == 0)
        return rd_err(r, t->col, err, "missing value for '%.*s'", (int)klen, t->s);
    if (v[0] == '[') {
        int64_t *vals = as_arena_alloc(r->scratch, vlen * sizeof *vals);
        const char *q = v + 1;
        long x;
        int neg;

        if (end[-1] != ']')
            return rd_err(r, t->col, err, "bad list for '%.*s'", (int)klen, t->s);
        while (q < end - 1) {
            neg = *q == '-';
            q += neg;
            if (!rd_int(&q, end - 1, &x) || (q < end - 1 && *q != ','))
                return rd_err(r, t->col, err, "bad list for '%.*s'", (int)klen, t->s);
            vals[a.n++] = neg ? -x : x;
            q += q < end - 1;
        }
        a.kind = AS_ATTR_INTS;
        a.v = vals;
    } else if (vlen < sizeof buf &&
               (isdigit((unsigned char)v[0]) || v[0] == '-' || v[0] == '+' || v[0] == '.')) {
        memcpy(buf, v, vlen);
        buf[vlen] = '\0';
        a.i = strtoll(buf, &e, 10);
        if (*e == '\0') {
            a.kind = AS_ATTR_INT;
            a.f = (double)a.i;
        } else {
            a.f = strtod(buf, &e);
            /* +inf and -inf as written (a max-pool's init), no overflow to them, no NaN */
            int inf_ok = vlen == 4 && (v[0] == '-' || v[0] == '+') && strcmp(buf + 1, "inf") == 0;
            if (*e != '\0' || isnan(a.f) || (isinf(a.f) && !inf_ok))
                return rd_err(r, t->col, err, "bad number '%s' for '%.*s'", buf, (int)klen, t->s);
            a.kind = AS_ATTR_FLOAT;
        }
    } else {
        /* a name, with %XX for any other byte (op_text_str) */
        char *d = as_arena_alloc(r->scratch, vlen + 1);
        size_t i, o = 0;
        for (i = 0; i < vlen; i++) {
            if (v[i] == '%' && i + 2 < vlen && isxdigit((unsigned char)v[i + 1]) &&
                isxdigit((unsigned char)v[i + 2]) && (v[i + 1] != '0' || v[i + 2] != '0')) {
                char hx[3] = {v[i + 1], v[i + 2], '\0'};
                d[o++] = (char)strtol(hx, NULL, 16);
                i += 2;
            } else if (v[i] != '%' && name_byte((unsigned char)v[i])) {
                d[o++] = v[i];
            } else {
                return rd_err(r, t->col, err, "bad value for '%.*s'", (int)klen, t->s);
            }
        }
        d[o] = '\0';
        a.kind = AS_ATTR_STR;
        a.s = d;
    }
    AS_VEC_PUSH(&r->attrs, a);
    return AS_OK;
}


/* "program NAME devices=N [hw=H] [cost=M] [batch=B]" */
static int
rd_header(rd_state *r, const rd_tok *t, int nt, as_sim_prog **out, as_err *err)
{
    double ndev = -1, batch = 0;
    const char *hw = NULL, *cost = NULL;
    char name[128], val[128];
    int i;

    if (nt < 2 || memchr(t[1].s, '=', t[1].len) != NULL)
        return rd_err(r, t[0].col + (int)t[0].len, err, "expected 'program NAME devices=N'");
    if (!name_ok(t[1].s, t[1].len) || t[1].len >= sizeof name)
        return rd_err(r, t[1].col, err, "bad program name '%.*s'", (int)t[1].len, t[1].s);
    memcpy(name, t[1].s, t[1].len);
    name[t[1].len] = '\0';
    for (i = 2; i < nt; i++) {
        const char *eq = memchr(t[i].s, '=', t[i].len);
        size_t kl = eq != NULL ? (size_t)(eq - t[i].s) : t[i].len, vl = t[i].len - kl - 1;

        if (eq == NULL)
            return rd_err(r, t[i].col, err, "expected KEY=VALUE, got '%.*s'", (int)t[i].len,
                          t[i].s);
        if (kl == 7 && memcmp(t[i].s, "devices", 7) == 0) {
            AS_CHECK(rd_num(r, eq + 1, vl, t[i].col + 8, "devices", &ndev, err));
            if (ndev < 1 || ndev > SIM_MAX_DEVICES || ndev != floor(ndev))
                return rd_err(r, t[i].col + 8, err, "devices must be an integer from 1 to %d",
                              SIM_MAX_DEVICES);
        } else if (kl == 5 && memcmp(t[i].s, "batch", 5) == 0) {
            AS_CHECK(rd_num(r, eq + 1, vl, t[i].col + 6, "batch", &batch, err));
        } else if ((kl == 2 && memcmp(t[i].s, "hw", 2) == 0) ||
                   (kl == 4 && memcmp(t[i].s, "cost", 4) == 0)) {
            if (vl == 0 || vl >= sizeof val || !name_ok(eq + 1, vl))
                return rd_err(r, t[i].col + (int)kl + 1, err, "bad value for '%.*s'", (int)kl,
                              t[i].s);
            if (kl == 2)
                hw = eq + 1;
            else
                cost = eq + 1;
        } else {
            return rd_err(r, t[i].col, err, "unknown header key '%.*s' (known: devices, hw, "
                          "cost, batch)", (int)kl, t[i].s);
        }
    }
    if (ndev < 0)
        return rd_err(r, t[0].col, err, "program header needs devices=N");
    AS_CHECK(as_sim_prog_new(name, (int)ndev, out, err));
    /* at most one event per line; most events have one device, one read, one write */
    AS_VEC_RESERVE(&(*out)->ev, r->nlines);
    AS_VEC_RESERVE(&(*out)->devs, r->nlines);
    AS_VEC_RESERVE(&(*out)->rds, r->nlines);
    AS_VEC_RESERVE(&(*out)->wrs, r->nlines);
    AS_VEC_RESERVE(&(*out)->bufs, r->nlines);
    as_huge_pages((*out)->ev.v, (*out)->ev.cap * sizeof *(*out)->ev.v);
    as_huge_pages((*out)->devs.v, (*out)->devs.cap * sizeof *(*out)->devs.v);
    as_huge_pages((*out)->rds.v, (*out)->rds.cap * sizeof *(*out)->rds.v);
    as_huge_pages((*out)->wrs.v, (*out)->wrs.cap * sizeof *(*out)->wrs.v);
    as_huge_pages((*out)->bufs.v, (*out)->bufs.cap * sizeof *(*out)->bufs.v);
    as_sim_prog_set_path(*out, r->path);
    as_sim_prog_set_batch(*out, batch);
    if (hw != NULL) {
        memcpy(val, hw, strcspn(hw, " \t\r\n#"));
        val[strcspn(hw, " \t\r\n#")] = '\0';
        as_sim_prog_set_hw(*out, val);
    }
    if (cost != NULL) {
        memcpy(val, cost, strcspn(cost, " \t\r\n#"));
        val[strcspn(cost, " \t\r\n#")] = '\0';
        as_sim_prog_set_cost_model(*out, val);
    }
    return AS_OK;
}

/* "resident DEVS NAME BYTES" / "input DEVS NAME BYTES" */
static int
rd_decl(rd_state *r, const rd_tok *t, int nt, as_err *err)
{
    as_sim_decl kind = t[0].len == 5 ? AS_SIM_INPUT : AS_SIM_RESIDENT;
    double bytes;
    as_err e2; /* written on failure only (no 500-byte clear per line) */

    if (nt != 4)
        return rd_err(r, nt < 4 ? t[nt - 1].col + (int)t[nt - 1].len : t[4].col, err,
                      "expected '%.*s DEVICES NAME BYTES'", (int)t[0].len, t[0].s);
    AS_CHECK(rd_devs(r, t[1].s, t[1].len, t[1].col, "devices", err));
    /* a lowered program declares one tensor on its devices on consecutive lines */
    if (r->cdecl_s == NULL || t[2].len != r->cdecl_len || memcmp(t[2].s, r->cdecl_s, t[2].len)) {
        if (!name_ok(t[2].s, t[2].len) || t[2].len >= 256)
            return rd_err(r, t[2].col, err, "bad tensor name '%.*s'", (int)t[2].len, t[2].s);
        r->cdecl_id = rd_tensor_id(r->p, t[2].s, t[2].len);
        r->cdecl_s = t[2].s;
        r->cdecl_len = t[2].len;
    }
    AS_CHECK(rd_num(r, t[3].s, t[3].len, t[3].col, "bytes", &bytes, err));
    if (as_sim_declare(r->p, kind, r->devs.v, (int)r->devs.n, r->cdecl_id, bytes, &e2) != AS_OK)
        return rd_err(r, t[2].col, err, "%s", e2.msg);
    return AS_OK;
}

/* "mirror DEVICES as REP" */
static int
rd_mirror(rd_state *r, const rd_tok *t, int nt, as_err *err)
{
    const char *q;
    long rep;
    as_err e2 = {0};

    if (nt != 4 || t[2].len != 2 || memcmp(t[2].s, "as", 2) != 0)
        return rd_err(r, nt >= 1 ? t[0].col : 1, err, "expected 'mirror DEVICES as DEVICE'");
    AS_CHECK(rd_devs(r, t[1].s, t[1].len, t[1].col, "mirror", err));
    q = t[3].s;
    if (!rd_int(&q, t[3].s + t[3].len, &rep) || q != t[3].s + t[3].len)
        return rd_err(r, t[3].col, err, "bad device '%.*s'", (int)t[3].len, t[3].s);
    if (as_sim_mirror(r->p, r->devs.v, (int)r->devs.n, (int)rep, &e2) != AS_OK)
        return rd_err(r, t[0].col, err, "%s", e2.msg);
    return AS_OK;
}

/* Event kind from its name; 0 if unknown. */
static int
rd_kind(const rd_tok *t, as_sim_event_spec *s)
{
    static const struct {
        const char *name;
        as_sim_kind kind;
        as_coll coll;
    } kinds[] = {
        {"compute", AS_SIM_COMPUTE, AS_COLL_ALL_REDUCE},
        {"send", AS_SIM_SEND, AS_COLL_SEND},
        {"all-reduce", AS_SIM_COLL, AS_COLL_ALL_REDUCE},
        {"allreduce", AS_SIM_COLL, AS_COLL_ALL_REDUCE},
        {"all-gather", AS_SIM_COLL, AS_COLL_ALL_GATHER},
        {"allgather", AS_SIM_COLL, AS_COLL_ALL_GATHER},
        {"reduce-scatter", AS_SIM_COLL, AS_COLL_REDUCE_SCATTER},
        {"reducescatter", AS_SIM_COLL, AS_COLL_REDUCE_SCATTER},
        {"all-to-all", AS_SIM_COLL, AS_COLL_ALL_TO_ALL},
        {"alltoall", AS_SIM_COLL, AS_COLL_ALL_TO_ALL},
    };
    size_t i;

    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].name) == t->len && memcmp(kinds[i].name, t->s, t->len) == 0) {
            s->kind = kinds[i].kind;
            s->coll = kinds[i].coll;
            return 1;
        }
    return 0;
}

/* Parse "dev=A->B" of a send into r->devs. */
static int
rd_send_devs(rd_state *r, const char *v, size_t vl, int col, as_err *err)
{
    const char *arrow = NULL, *q;
    size_t i;
    long a, b;

    for (i = 0; i + 1 < vl; i++)
        if (v[i] == '-' && v[i + 1] == '>')
            arrow = v + i;
    q = v;
    if (arrow == NULL || !rd_int(&q, arrow, &a) || q != arrow)
        return rd_err(r, col, err, "a send needs dev=SRC->DST, got '%.*s'", (int)vl, v);
    q = arrow + 2;
    if (!rd_int(&q, v + vl, &b) || q != v + vl)
        return rd_err(r, col, err, "a send needs dev=SRC->DST, got '%.*s'", (int)vl, v);
    if (a >= r->p->ndev || b >= r->p->ndev)
        return rd_err(r, col, err, "unknown device %ld (program has %d devices, 0-%d)",
                      a >= r->p->ndev ? a : b, r->p->ndev, r->p->ndev - 1);
    r->devs.n = 0;
    AS_VEC_PUSH(&r->devs, (int)a);
    AS_VEC_PUSH(&r->devs, (int)b);
    return AS_OK;
}

/* One key=value of an event line. */
static int
rd_event_key(rd_state *r, const rd_tok *t, as_sim_event_spec *s, const as_op_def **def,
             unsigned *seen, as_err *err)
{
    static const char *const keys[] = {"dev", "group", "time", "bytes", "op", "in",
                                       "reads", "writes", "tensor", "stream"};
    const char *eq = memchr(t->s, '=', t->len);
    size_t kl = eq != NULL ? (size_t)(eq - t->s) : t->len, vl = eq ? t->len - kl - 1 : 0;
    const char *v = eq != NULL ? eq + 1 : NULL;
    int vc = t->col + (int)kl + 1, k;
    const char *key;

    if (eq == NULL)
        return rd_err(r, t->col, err, "expected KEY=VALUE, got '%.*s'", (int)t->len, t->s);
    if (kl > 5 && memcmp(t->s, "attr.", 5) == 0)
        return rd_attr(r, t, kl, err);
    /* by length, then fixed-size compares (inlined): no loop of library calls per key */
    k = (int)(sizeof keys / sizeof keys[0]);
    switch (kl) {
    case 2:
        k = memcmp(t->s, "op", 2) == 0 ? 4 : memcmp(t->s, "in", 2) == 0 ? 5 : k;
        break;
    case 3:
        k = memcmp(t->s, "dev", 3) == 0 ? 0 : k;
        break;
    case 4:
        k = memcmp(t->s, "time", 4) == 0 ? 2 : k;
        break;
    case 5:
        k = memcmp(t->s, "group", 5) == 0   ? 1
            : memcmp(t->s, "bytes", 5) == 0 ? 3
            : memcmp(t->s, "reads", 5) == 0 ? 6
                                            : k;
        break;
    case 6:
        k = memcmp(t->s, "writes", 6) == 0   ? 7
            : memcmp(t->s, "tensor", 6) == 0 ? 8
            : memcmp(t->s, "stream", 6) == 0 ? 9
                                             : k;
        break;
    default:
        break;
    }
    if (k == (int)(sizeof keys / sizeof keys[0]))
        return rd_err(r, t->col, err, "unknown key '%.*s' (known: dev, group, time, bytes, op, "
                      "in, attr.NAME, reads, writes, tensor, stream)", (int)kl, t->s);
    if (*seen & (1u << k))
        return rd_err(r, t->col, err, "'%s' given twice", keys[k]);
    *seen |= 1u << k;
    key = keys[k];
    if (vl == 0)
        return rd_err(r, vc, err, "missing value for '%s'", key);
    switch (k) {
    case 0: /* dev */
        if (s->kind == AS_SIM_COLL)
            return rd_err(r, t->col, err, "a collective takes group=, not dev=");
        if (s->kind == AS_SIM_SEND)
            return rd_send_devs(r, v, vl, vc, err);
        return rd_devs(r, v, vl, vc, key, err);
    case 1: /* group */
        if (s->kind != AS_SIM_COLL)
            return rd_err(r, t->col, err, "only collectives take group=");
        return rd_devs(r, v, vl, vc, key, err);
    case 2:
        return rd_num(r, v, vl, vc, key, &s->time, err);
    case 3:
        if (s->kind == AS_SIM_COMPUTE)
            return rd_err(r, t->col, err, "compute takes no bytes= (give writes=NAME:BYTES)");
        return rd_num(r, v, vl, vc, key, &s->bytes, err);
    case 4:
        if (s->kind != AS_SIM_COMPUTE)
            return rd_err(r, t->col, err, "only compute takes op=");
        if ((*def = as_registry_find(v, vl)) == NULL)
            return rd_err(r, vc, err, "unknown op type '%.*s'", (int)vl, v);
        return AS_OK;
    case 5:
        return rd_shapes(r, v, vl, vc, err);
    case 6:
        if (s->kind == AS_SIM_SEND)
            return rd_err(r, t->col, err, "a send takes tensor=, not reads=");
        s->reads_col = vc;
        return rd_tensors_cached(r, v, vl, vc, 0, key, err);
    case 7:
        if (s->kind == AS_SIM_SEND)
            return rd_err(r, t->col, err, "a send writes its tensor on the destination");
        return rd_tensors_cached(r, v, vl, vc, 1, key, err);
    case 8:
        if (s->kind != AS_SIM_SEND)
            return rd_err(r, t->col, err, "only a send takes tensor=");
        s->reads_col = vc;
        AS_CHECK(rd_tensors_cached(r, v, vl, vc, 0, key, err));
        return r->reads.n == 1 ? AS_OK : rd_err(r, vc, err, "a send moves exactly one tensor");
    default:
        if (vl == 7 && memcmp(v, "compute", 7) == 0)
            s->stream = AS_SIM_STREAM_COMPUTE;
        else if (vl == 4 && memcmp(v, "comm", 4) == 0)
            s->stream = AS_SIM_STREAM_COMM;
        else
            return rd_err(r, vc, err, "stream must be compute or comm, got '%.*s'", (int)vl, v);
        return AS_OK;
    }
}

/* "[LABEL:] KIND key=value ..." */
static int
rd_event(rd_state *r, const rd_tok *t, int nt, as_err *err)
{
    as_sim_event_spec s;
    const as_op_def *def = NULL;
    as_sim_op op;
    char label[256], okey[1024];
    unsigned seen = 0;
    size_t i, klen = 0;
    uint64_t opt = 0;
    int64_t cached;
    int k = 0;

    as_sim_event_spec_init(&s);
    label[0] = '\0';
    if (t[0].s[t[0].len - 1] == ':') {
        /* the lines of one op on its devices repeat the label: checked once */
        if ((t[0].len != r->clab_len || memcmp(t[0].s, r->clab_s, t[0].len) != 0) &&
            (!name_ok(t[0].s, t[0].len - 1) || t[0].len > sizeof label))
            return rd_err(r, t[0].col, err, "bad label '%.*s'", (int)t[0].len - 1, t[0].s);
        r->clab_s = t[0].s;
        r->clab_len = t[0].len;
        memcpy(label, t[0].s, t[0].len - 1);
        label[t[0].len - 1] = '\0';
        if (nt == 1)
            return rd_err(r, t[0].col + (int)t[0].len, err, "expected an event kind after '%s:'",
                          label);
        k = 1;
    }
    if (!rd_kind(&t[k], &s))
        return rd_err(r, t[k].col, err, "unknown statement '%.*s' (expected program, resident, "
                      "input, compute, send, all-reduce, all-gather, reduce-scatter, all-to-all)",
                      (int)t[k].len, t[k].s);
    r->devs.n = r->reads.n = r->writes.n = r->wbytes.n = r->shapes.n = r->attrs.n = 0;
    s.bytes = -1; /* not given */
    s.line = r->line;
    s.col = t[k].col;
    /* the op's tokens (op=, in=, attr.*) as one key: a line repeating an op seen before
     * reuses its interned id, skipping shapes, attributes and inference */
    if (s.kind == AS_SIM_COMPUTE) {
        for (i = (size_t)k + 1; i < (size_t)nt && klen + t[i].len + 1 < sizeof okey; i++)
            if ((t[i].len > 3 && (memcmp(t[i].s, "op=", 3) == 0 || memcmp(t[i].s, "in=", 3) == 0)) ||
                (t[i].len > 5 && memcmp(t[i].s, "attr.", 5) == 0)) {
                memcpy(okey + klen, t[i].s, t[i].len);
                klen += t[i].len;
                okey[klen++] = '\001';
                opt |= (uint64_t)1 << i;
            }
        if (i < (size_t)nt)
            klen = 0; /* too long to cache */
        if (klen > 0 && klen == r->cop_len && memcmp(okey, r->cop, klen) == 0) {
            s.op_id = r->cop_id;
            def = r->p->ops.v[s.op_id].info.def;
        } else if (klen > 0 && as_strmap_get(&r->opcache, okey, klen, &cached)) {
            s.op_id = (int32_t)cached;
            def = r->p->ops.v[cached].info.def;
            memcpy(r->cop, okey, klen);
            r->cop_len = klen;
            r->cop_id = s.op_id;
        }
    }
    for (i = (size_t)k + 1; i < (size_t)nt; i++)
        if (s.op_id < 0 || !(opt & ((uint64_t)1 << i)))
            AS_CHECK(rd_event_key(r, &t[i], &s, &def, &seen, err));
    if (r->devs.n == 0)
        return rd_err(r, t[nt - 1].col + (int)t[nt - 1].len, err, "%.*s needs %s", (int)t[k].len,
                      t[k].s, s.kind == AS_SIM_COLL ? "group=DEVICES" : s.kind == AS_SIM_SEND ?
                      "dev=SRC->DST" : "dev=DEVICES");
    if (s.kind == AS_SIM_SEND && r->reads.n != 1)
        return rd_err(r, t[nt - 1].col + (int)t[nt - 1].len, err, "send needs tensor=NAME");
    if (s.kind == AS_SIM_COMPUTE && s.time < 0 && def == NULL)
        return rd_err(r, t[nt - 1].col + (int)t[nt - 1].len, err, "compute needs time= or op=");
    if (s.kind == AS_SIM_COLL && s.bytes < 0 && s.time >= 0)
        s.bytes = 0; /* a fixed time needs no payload */
    if (s.kind == AS_SIM_COLL && s.bytes < 0)
        return rd_err(r, t[nt - 1].col + (int)t[nt - 1].len, err, "%.*s needs bytes=",
                      (int)t[k].len, t[k].s);
    if (def != NULL && s.time >= 0)
        return rd_err(r, t[k].col, err, "give either time= or op=, not both");
    if (def == NULL && (r->shapes.n > 0 || r->attrs.n > 0))
        return rd_err(r, t[k].col, err, "in= and attr.* need op=");
    if (def != NULL && s.op_id < 0 && r->shapes.n == 0 && def->min_in > 0)
        return rd_err(r, t[k].col, err, "op=%s needs in=SHAPES", def->name);
    s.devs = r->devs.v;
    s.ndevs = (int)r->devs.n;
    s.reads = r->reads.v;
    s.nreads = (int)r->reads.n;
    s.writes = r->writes.v;
    s.nwrites = (int)r->writes.n;
    s.label = label;
    if (def != NULL && s.op_id < 0) {
        op.def = def;
        op.in = r->shapes.v;
        op.nin = (int)r->shapes.n;
        op.attr = r->attrs.v;
        op.nattr = (int)r->attrs.n;
        s.op = &op;
    }
    s.wbytes = r->wbytes.v;
    AS_CHECK(as_sim_add(r->p, &s, err));
    if (def != NULL && s.op_id < 0 && klen > 0 && s.time < 0) {
        okey[klen] = '\0';
        as_strmap_put(&r->opcache, as_arena_memdup(r->scratch, okey, klen + 1),
                      r->p->ev.v[r->p->ev.n - 1].op);
    }
    return AS_OK;
}

/* Byte classes of the tokenizer: part of a token, blank, '#', end of line, control, end. */
enum { RC_TOK = 0, RC_BLANK, RC_HASH, RC_NL, RC_CTRL, RC_END };
static const unsigned char rd_cls[256] = {
    RC_END,  RC_CTRL, RC_CTRL, RC_CTRL,  RC_CTRL, RC_CTRL, RC_CTRL, RC_CTRL,
    RC_CTRL, RC_BLANK, RC_NL,  RC_CTRL,  RC_CTRL, RC_BLANK, RC_CTRL, RC_CTRL,
    RC_CTRL, RC_CTRL, RC_CTRL, RC_CTRL,  RC_CTRL, RC_CTRL, RC_CTRL, RC_CTRL,
    RC_CTRL, RC_CTRL, RC_CTRL, RC_CTRL,  RC_CTRL, RC_CTRL, RC_CTRL, RC_CTRL,
    RC_BLANK, RC_TOK, RC_TOK, RC_HASH, /* ' ', '!', '"', '#'; the rest (0) are token bytes */
};

/* First byte at or after P that ends a token: a blank, control, NUL or '#' (<= ' ' or '#'). */
static inline const unsigned char *
rd_tok_end(const unsigned char *p)
{
#ifdef RD_SSE2
    /* 16 bytes at a time from aligned blocks (an aligned block never crosses a page,
     * so the block holding the text's NUL is readable) */
    const __m128i sp = _mm_set1_epi8(0x20), hash = _mm_set1_epi8('#');
    uintptr_t off = (uintptr_t)p & 15;
    const __m128i *blk = (const __m128i *)(const void *)(p - off);
    unsigned m;

    for (;;) {
        __m128i x = _mm_load_si128(blk);

        m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, sp), x),
                                                     _mm_cmpeq_epi8(x, hash))) >> off;
        if (m != 0)
            return (const unsigned char *)blk + off + __builtin_ctz(m);
        blk++;
        off = 0;
    }
#else
    while (rd_cls[*p] == RC_TOK)
        p++;
    return p;
#endif
}

/*
 * One pass over the line at *Q: split it into tokens T (blanks: space, tab, CR),
 * stop at '#' (the rest of the line is a comment), reject control characters
 * before it, and leave *Q at the next line.  Returns the token count, or an error.
 */
static int
rd_scan(rd_state *r, const char **q, rd_tok *t, int *nt, as_err *err)
{
    const unsigned char *line = (const unsigned char *)*q, *p = line;
    int n = 0, over = 0, c;

    for (;;) {
        const unsigned char *b;

        while ((c = rd_cls[*p]) == RC_BLANK)
            p++;
        if (c != RC_TOK)
            break;
        b = p;
        p = rd_tok_end(p + 1);
        if (n == RD_MAX_TOKENS) {
            over = 1;
            continue;
        }
        t[n].s = (const char *)b;
        t[n].len = (size_t)(p - b);
        t[n].col = (int)(b - line) + 1;
        n++;
    }
    if (c == RC_CTRL)
        return rd_err(r, (int)(p - line) + 1, err, "unexpected control character");
    if (c == RC_HASH) {
        const char *nl = strchr((const char *)p, '\n');

        p = nl != NULL ? (const unsigned char *)nl : p + strlen((const char *)p);
        c = *p == '\n' ? RC_NL : RC_END;
    }
    *q = (const char *)(c == RC_NL ? p + 1 : p);
    if (over)
        return rd_err(r, 1, err, "too many fields on one line (at most %d)", RD_MAX_TOKENS);
    *nt = n;
    return AS_OK;
}

static int
rd_line(rd_state *r, const rd_tok *t, int nt, as_err *err)
{
    if (nt == 0)
        return AS_OK;
    if (t[0].len == 7 && memcmp(t[0].s, "program", 7) == 0) {
        if (r->p != NULL)
            return rd_err(r, t[0].col, err, "second program header");
        return rd_header(r, t, nt, &r->p, err);
    }
    if (r->p == NULL)
        return rd_err(r, t[0].col, err, "expected 'program NAME devices=N' first, got '%.*s'",
                      (int)t[0].len, t[0].s);
    if (t[0].len == 6 && memcmp(t[0].s, "mirror", 6) == 0)
        return rd_mirror(r, t, nt, err);
    if ((t[0].len == 8 && memcmp(t[0].s, "resident", 8) == 0) ||
        (t[0].len == 5 && memcmp(t[0].s, "input", 5) == 0))
        return rd_decl(r, t, nt, err);
    return rd_event(r, t, nt, err);
}

/*
 * Newlines in TEXT[0..LEN) (one pass, 16 bytes at a time with SSE2; no byte
 * outside the range is read); *NUL gets 1 if a NUL byte is among them.
 */
static size_t
rd_count_lines(const char *text, size_t len, int *nul)
{
    size_t i = 0, n = 0;
    unsigned z = 0;

#ifdef RD_SSE2
    const __m128i nlv = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    __m128i acc = zero, zs = zero;
    int rounds = 0;

    /* per-byte newline counts in ACC (cmpeq gives -1), summed every 255 blocks */
    for (; i + 16 <= len; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(text + i));

        acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(x, nlv));
        zs = _mm_or_si128(zs, _mm_cmpeq_epi8(x, zero));
        if (++rounds == 255 || i + 32 > len) {
            __m128i sad = _mm_sad_epu8(acc, zero);
            n += (size_t)_mm_cvtsi128_si32(sad) + (size_t)_mm_cvtsi128_si32(_mm_srli_si128(sad, 8));
            acc = zero;
            rounds = 0;
        }
    }
    z = (unsigned)_mm_movemask_epi8(zs);
#endif
    for (; i < len; i++) {
        n += text[i] == '\n';
        z |= text[i] == '\0';
    }
    *nul = z != 0;
    return n;
}

/* Parse TEXT of LEN bytes (TEXT[LEN] is NUL); a NUL byte before LEN is an error. */
static int
rd_parse(const char *path, const char *text, size_t len, as_sim_prog **out, as_err *err)
{
    rd_state r;
    rd_tok t[RD_MAX_TOKENS];
    const char *q = text;
    int rc = AS_OK, nt, nul;

    /* lines, to size the program's arrays once (no copies as they grow); an event
     * line has at least 20 bytes, so blank lines reserve nothing beyond that */
    size_t nlines = rd_count_lines(text, len, &nul);
    const char *lastnl = nlines > 0 ? memrchr(text, '\n', len) : NULL;
    size_t upto = lastnl != NULL ? (size_t)(lastnl + 1 - text) : 0;

    if (nul)
        return as_err_nul(err, path, text, "not a program text");
    memset(&r, 0, sizeof r);
    r.path = path;
    r.scratch = as_arena_new();
    as_strmap_init(&r.opcache);
    r.nlines = nlines;
    if (r.nlines > upto / 20)
        r.nlines = upto / 20;
    q = text;
    while (*q != '\0') {
        r.line++;
        if ((rc = rd_scan(&r, &q, t, &nt, err)) != AS_OK || (rc = rd_line(&r, t, nt, err)) != AS_OK)
            goto out;
    }
    if (r.p == NULL) {
        rc = as_errf(err, AS_EPARSE, "%s:%d:1: empty program (expected 'program NAME devices=N')",
                     path, r.line > 0 ? r.line : 1);
        goto out;
    }
    if ((rc = as_sim_prog_check(r.p, err)) != AS_OK)
        goto out;
    *out = r.p;
    r.p = NULL;
out:
    as_sim_prog_free(r.p);
    as_strmap_destroy(&r.opcache);
    as_arena_free(r.scratch);
    AS_VEC_FREE(&r.devs);
    AS_VEC_FREE(&r.reads);
    AS_VEC_FREE(&r.writes);
    AS_VEC_FREE(&r.wbytes);
    AS_VEC_FREE(&r.shapes);
    AS_VEC_FREE(&r.attrs);
    AS_VEC_FREE(&r.crd);
    AS_VEC_FREE(&r.cwr);
    AS_VEC_FREE(&r.cwb);
    return rc;
}

int
as_sim_prog_parse(const char *path, const char *text, as_sim_prog **out, as_err *err)
{
    return rd_parse(path, text, strlen(text), out, err);
}

#ifdef RD_MMAP
/*
 * Map regular file PATH read-only, NUL-terminated: the file's pages come from the
 * page cache (no copy, no fresh zeroed memory: for a lowered program of 200 MB
 * the copy and the zeroing of its buffer cost as much as parsing it).  The
 * mapping is one page longer than the file when the file fills its last page,
 * so TEXT[LEN] is a readable 0 either way (the kernel zeroes the rest of a
 * file's last page).  *TEXT = NULL when the file is not regular, empty, small
 * or cannot be mapped: the caller reads it.  *MAPLEN gets the mapping's size.
 */
static void
rd_map_file(const char *path, char **text, size_t *len, size_t *maplen)
{
    struct stat st;
    long pg = sysconf(_SC_PAGESIZE);
    int fd;
    size_t n, m;
    char *base;

    *text = NULL;
    if (strcmp(path, "-") == 0 || pg <= 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < ((off_t)1 << 20) ||
        (uintmax_t)st.st_size > (uintmax_t)SIZE_MAX / 2) {
        close(fd);
        return;
    }
    n = (size_t)st.st_size;
    m = (n / (size_t)pg + 1) * (size_t)pg; /* at least one byte past the file */
    base = mmap(NULL, m, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED &&
        mmap(base, n, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
        munmap(base, m);
        base = MAP_FAILED;
    }
    close(fd);
    if (base == MAP_FAILED)
        return;
    *text = base;
    *len = n;
    *maplen = m;
}

/* What the SIGBUS handler writes: a mapped file that another process truncates
   while it is parsed faults on the pages it lost. */
static char rd_bus_msg[512];
static size_t rd_bus_len;

static void
rd_on_bus(int sig)
{
    ssize_t w = write(STDERR_FILENO, rd_bus_msg, rd_bus_len);

    (void)sig;
    (void)w;
    _exit(1);
}
#endif

int
as_sim_prog_read(const char *path, as_sim_prog **out, as_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;
#ifdef RD_MMAP
    size_t maplen = 0;

    rd_map_file(path, &buf, &len, &maplen);
#endif
    if (buf == NULL)
        AS_CHECK(as_read_file(path, &buf, &len, err));
#ifdef RD_MMAP
    struct sigaction sa, old;
    if (maplen > 0) {
        int k = snprintf(rd_bus_msg, sizeof rd_bus_msg,
                         "autoshard: %s: the file was truncated while it was read\n", path);
        rd_bus_len = k > 0 && (size_t)k < sizeof rd_bus_msg ? (size_t)k : sizeof rd_bus_msg - 1;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = rd_on_bus;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &old);
    }
#endif
    rc = rd_parse(path, buf, len, out, err); /* a NUL byte in the file is an error */
#ifdef RD_MMAP
    if (maplen > 0) {
        sigaction(SIGBUS, &old, NULL);
        munmap(buf, maplen);
        buf = NULL;
    }
#endif
    free(buf);
    return rc;
}
