/* memory.c -- per-device memory from the simulated timeline.
 *
 * A buffer produced by an event is allocated when that event starts and
 * freed when the last event reading it on that device ends (or when its
 * producer ends, if nothing reads it).  An input buffer is allocated at
 * time 0 and freed after its last use.  Resident buffers (parameters,
 * gradients, optimizer state) are counted for the whole iteration.
 *
 * DESIGN.  Every live range becomes two records (+bytes at the start of
 * its producer, -bytes at the end of its last reader).  Records are put in
 * buckets per (device, stream of the event, free/alloc) while walking the
 * events in program order; a stream runs its events one after another, so
 * each bucket is already in time order, and a 4-way merge per device
 * (frees before allocations at equal times) finds the peak.  Linear in
 * events + reads; no sort (a bucket found out of order would be sorted).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

typedef struct mem_rec {
    double t;     /**< time */
    double delta; /**< +bytes allocated or -bytes freed */
} mem_rec;

/* A vector of records; OWNED = 0: V is a slice of the run's pool (not freed alone). */
typedef struct mem_bucket {
    mem_rec *v;
    size_t n, cap;
    int owned;
} mem_bucket;

static int
mem_cmp(const void *a, const void *b)
{
    double x = ((const mem_rec *)a)->t, y = ((const mem_rec *)b)->t;

    return x < y ? -1 : x > y;
}

/* Bucket of a record: device, stream of its event, 0 free / 1 allocation. */
#define MEM_BUCKET(dev, stream, alloc) ((size_t)(dev) * 4 + (size_t)(stream) * 2 + (size_t)(alloc))

static int
mem_counted(const sim_buf *b)
{
    return !(b->origin == SIM_BUF_RESIDENT || b->bytes <= 0 ||
             (b->origin == SIM_BUF_ACT && b->producer < 0));
}

/* Bytes of buffer BF the memory model counts over time (0: resident, empty or never made). */
static inline double
mem_bytes(const sim_buf *bf)
{
    return mem_counted(bf) ? bf->bytes : 0;
}

/* Append a record to bucket BK. */
static inline void
mem_push(mem_bucket *bk, double t, double delta)
{
    if (bk->n == bk->cap) {
        size_t nc = bk->cap ? bk->cap * 2 : 256;
        if (bk->owned) {
            bk->v = as_xreallocarray(bk->v, nc, sizeof *bk->v);
        } else { /* outgrew its slice of the pool */
            mem_rec *nv = as_xreallocarray(NULL, nc, sizeof *nv);
            if (bk->n > 0)
                memcpy(nv, bk->v, bk->n * sizeof *nv);
            bk->v = nv;
            bk->owned = 1;
        }
        bk->cap = nc;
    }
    bk->v[bk->n].t = t > 0 ? t : 0;
    bk->v[bk->n++].delta = delta;
}

/* Merge time-ordered X and Y into OUT (X first at equal times). */
static void
mem_merge2(const mem_bucket *x, const mem_bucket *y, mem_bucket *out)
{
    size_t i = 0, j = 0, n = 0;

    AS_VEC_RESERVE(out, x->n + y->n + 1);
    while (i < x->n && j < y->n)
        out->v[n++] = y->v[j].t < x->v[i].t ? y->v[j++] : x->v[i++];
    while (i < x->n)
        out->v[n++] = x->v[i++];
    while (j < y->n)
        out->v[n++] = y->v[j++];
    out->n = n;
}

/*
 * Peak of a device from its four time-ordered buckets (stream 0 frees,
 * stream 0 allocations, stream 1 frees, stream 1 allocations): frees are
 * applied before allocations at equal times.  TMP holds three scratch vectors.
 */
static void
mem_peak(const mem_bucket *bk, double base, mem_bucket *tmp, as_sim_dev_stats *dev,
         as_sim_i_mem_cb cb, void *ud, int d)
{
    const mem_bucket *fr = &tmp[0], *al = &tmp[1];
    size_t i = 0, j = 0;
    double cur = base;

    mem_merge2(&bk[0], &bk[2], &tmp[0]);
    mem_merge2(&bk[1], &bk[3], &tmp[1]);
    dev->peak = cur;
    if (cb != NULL)
        cb(ud, d, 0, cur + dev->resident);
    while (i < fr->n || j < al->n) {
        const mem_rec *r = j == al->n || (i < fr->n && fr->v[i].t <= al->v[j].t) ? &fr->v[i++]
                                                                                 : &al->v[j++];
        cur += r->delta;
        if (cb != NULL)
            cb(ud, d, r->t, cur + dev->resident);
        if (cur > dev->peak) {
            dev->peak = cur;
            dev->peak_time = r->t;
        }
    }
}

void
as_sim_i_memory(const as_sim_prog *p, const double *start, const double *end, double capacity,
                as_sim_dev_stats *dev, size_t *nbuf)
{
    as_sim_i_memory_cb(p, start, end, capacity, dev, nbuf, NULL, NULL);
}

void
as_sim_i_memory_cb(const as_sim_prog *p, const double *start, const double *end, double capacity,
                   as_sim_dev_stats *dev, size_t *nbuf, as_sim_i_mem_cb cb, void *ud)
{
    size_t nb = p->bufs.n, i, nbk = (size_t)p->ndev * 4;
    int32_t *lastev = as_xmalloc_huge(nb ? nb : 1, sizeof *lastev);
    double *lastend = as_xmalloc_huge(nb ? nb : 1, sizeof *lastend);
    mem_bucket *bk = as_xcalloc(nbk, sizeof *bk), tmp[2] = {{0}};
    mem_rec *pool;
    size_t *cnt = as_xcalloc(nbk ? nbk : 1, sizeof *cnt), tot = 0;
    double *base = as_xcalloc((size_t)p->ndev, sizeof *base);
    uint32_t k;
    int d;

    /* Per-buffer state; the facts (device, producer, bytes) are read from the program's
     * buffers, which are in memory already (copies of them were 30 MB of fresh pages
     * on gpt3-175b/64, whose first touches cost more than the loops gained). */
    for (d = 0; d < p->ndev; d++) {
        dev[d].resident = 0;
        dev[d].peak = 0;
        dev[d].peak_time = 0;
    }
    for (i = 0; i < nb; i++) {
        const sim_buf *bf = &p->bufs.v[i];
        lastev[i] = bf->producer;
        lastend[i] = bf->producer >= 0 ? end[bf->producer] : -1;
        if (bf->origin == SIM_BUF_RESIDENT)
            dev[bf->dev].resident += bf->bytes;
    }
    /* The event after whose end each buffer is freed: its last reader, else its producer. */
    for (i = 0; i < p->ev.n; i++) {
        const sim_event *ev = &p->ev.v[i];
        const int32_t *rd = ev->nrd > 0 ? p->rds.v + ev->rd_off : NULL; /* rds.v may be NULL */
        for (k = 0; k < ev->nrd; k++)
            if (end[i] >= lastend[rd[k]]) {
                lastend[rd[k]] = end[i];
                lastev[rd[k]] = (int32_t)i;
            }
    }
    /*
     * Room for every bucket's records in one pool on huge pages: a counted buffer
     * has one allocation record (at its producer) and one free record (at its
     * last reader, else its producer), in the bucket of that event's stream.
     * The counts size the slices only; a bucket that outgrows its slice moves.
     */
    for (i = 0; i < nb; i++) {
        const sim_buf *bf = &p->bufs.v[i];
        if (mem_bytes(bf) <= 0)
            continue;
        if (bf->producer >= 0)
            cnt[MEM_BUCKET(bf->dev, p->ev.v[bf->producer].stream & 1, 1)]++;
        if (lastev[i] >= 0)
            cnt[MEM_BUCKET(bf->dev, p->ev.v[lastev[i]].stream & 1, 0)]++;
    }
    for (i = 0; i < nbk; i++)
        tot += cnt[i] + 1;
    pool = as_xmalloc_huge(tot ? tot : 1, sizeof *pool);
    for (i = 0, tot = 0; i < nbk; i++) {
        bk[i].v = pool + tot;
        bk[i].cap = cnt[i] + 1;
        tot += cnt[i] + 1;
    }
    for (i = 0; i < nb; i++)
        if (p->bufs.v[i].origin == SIM_BUF_INPUT && p->bufs.v[i].bytes > 0 && lastev[i] >= 0)
            base[p->bufs.v[i].dev] += p->bufs.v[i].bytes; /* inputs: allocated at time 0 */
    /*
     * Records per (device, stream, free/alloc) bucket, generated in program
     * order: a stream runs its events one after another, so every bucket is
     * already in time order and a 4-way merge per device replaces a sort.
     * A buffer's free record is emitted once: lastev is cleared after it.
     */
    for (i = 0; i < p->ev.n; i++) {
        const sim_event *ev = &p->ev.v[i];
        const int32_t *rd = ev->nrd > 0 ? p->rds.v + ev->rd_off : NULL;
        const int32_t *wr = ev->nwr > 0 ? p->wrs.v + ev->wr_off : NULL;
        int st = ev->stream & 1;
        for (k = 0; k < ev->nwr; k++) {
            const sim_buf *bf = &p->bufs.v[wr[k]];
            double by = mem_bytes(bf);
            if (by > 0 && bf->producer == (int32_t)i)
                mem_push(&bk[MEM_BUCKET(bf->dev, st, 1)], start[i], by);
        }
        for (k = 0; k < ev->nrd; k++) {
            int32_t b = rd[k];
            if (lastev[b] == (int32_t)i) {
                const sim_buf *bf = &p->bufs.v[b];
                double by = mem_bytes(bf);
                lastev[b] = -2;
                if (by > 0)
                    mem_push(&bk[MEM_BUCKET(bf->dev, st, 0)], end[i], -by);
            }
        }
        for (k = 0; k < ev->nwr; k++) {
            int32_t b = wr[k];
            if (lastev[b] == (int32_t)i) {
                const sim_buf *bf = &p->bufs.v[b];
                double by = mem_bytes(bf);
                lastev[b] = -2;
                if (by > 0)
                    mem_push(&bk[MEM_BUCKET(bf->dev, st, 0)], end[i], -by);
            }
        }
    }
    /* a bucket out of order (it cannot happen with per-stream program order): sort it */
    for (i = 0; i < nbk; i++) {
        size_t j;
        for (j = 1; j < bk[i].n; j++)
            if (bk[i].v[j].t < bk[i].v[j - 1].t)
                break;
        if (j < bk[i].n)
            qsort(bk[i].v, bk[i].n, sizeof *bk[i].v, mem_cmp);
    }
    for (d = 0; d < p->ndev; d++) {
        mem_peak(&bk[(size_t)d * 4], base[d], tmp, &dev[d], cb, ud, d);
        dev[d].peak += dev[d].resident;
        dev[d].oom = capacity > 0 && dev[d].peak > capacity;
    }
    *nbuf = nb;
    for (i = 0; i < nbk; i++)
        if (bk[i].owned)
            free(bk[i].v);
    free(pool);
    free(cnt);
    free(tmp[0].v);
    free(tmp[1].v);
    free(bk);
    free(base);
    free(lastend);
    free(lastev);
}
