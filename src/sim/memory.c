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
    double t;      /**< time */
    int32_t buf;   /**< buffer id */
} mem_rec;

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

void
as_sim_i_memory(const as_sim_prog *p, const double *start, const double *end, double capacity,
                as_sim_dev_stats *dev, size_t *nbuf)
{
    size_t nb = p->bufs.n, i, nbk = (size_t)p->ndev * 4, *off, *fill;
    int32_t *lastev = as_xmalloc((nb ? nb : 1) * sizeof *lastev);
    uint8_t *done = as_xcalloc(nb ? nb : 1, 1);
    double *cur;
    mem_rec *rec;
    uint32_t k;
    int d, pass;

    /* the event after whose end each buffer is freed: its last reader, else its producer */
    for (i = 0; i < nb; i++)
        lastev[i] = p->bufs.v[i].producer;
    for (i = 0; i < p->ev.n; i++) {
        const sim_event *ev = &p->ev.v[i];

        for (k = 0; k < ev->nrd; k++) {
            int32_t b = p->rds.v[ev->rd_off + k];

            if (lastev[b] < 0 || end[i] >= end[lastev[b]])
                lastev[b] = (int32_t)i;
        }
    }
    /*
     * Records per (device, stream, free/alloc) bucket, generated in program
     * order: a stream runs its events one after another, so every bucket is
     * already in time order and a 4-way merge per device replaces a sort.
     * Pass 0 counts, pass 1 fills.
     */
    off = as_xcalloc(nbk + 1, sizeof *off);
    fill = as_xcalloc(nbk + 1, sizeof *fill);
    rec = NULL;
    for (pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (i = 0; i < nbk; i++)
                off[i + 1] += off[i];
            memcpy(fill, off, (nbk + 1) * sizeof *off);
            rec = as_xmalloc((off[nbk] + 1) * sizeof *rec);
            memset(done, 0, nb ? nb : 1);
        }
        for (i = 0; i < p->ev.n; i++) {
            const sim_event *ev = &p->ev.v[i];
            int st = ev->stream & 1;

            for (k = 0; k < ev->nwr; k++) {
                int32_t b = p->wrs.v[ev->wr_off + k];
                const sim_buf *bf = &p->bufs.v[b];
                size_t bk;

                if (!mem_counted(bf) || bf->producer != (int32_t)i)
                    continue;
                bk = MEM_BUCKET(bf->dev, st, 1);
                if (pass == 0) {
                    off[bk + 1]++;
                } else {
                    rec[fill[bk]].t = start[i] > 0 ? start[i] : 0;
                    rec[fill[bk]++].buf = b;
                }
            }
            for (k = 0; k < (uint32_t)ev->nrd + ev->nwr; k++) {
                int32_t b = k < ev->nrd ? p->rds.v[ev->rd_off + k] : p->wrs.v[ev->wr_off + k -
                                                                                ev->nrd];
                const sim_buf *bf = &p->bufs.v[b];
                size_t bk;

                if (lastev[b] != (int32_t)i || done[b] || !mem_counted(bf))
                    continue;
                done[b] = 1;
                bk = MEM_BUCKET(bf->dev, st, 0);
                if (pass == 0) {
                    off[bk + 1]++;
                } else {
                    rec[fill[bk]].t = end[i] > 0 ? end[i] : 0;
                    rec[fill[bk]++].buf = b;
                }
            }
        }
    }
    /* a bucket out of order (it cannot happen with per-stream program order): sort it */
    for (i = 0; i < nbk; i++) {
        size_t j;

        for (j = off[i] + 1; j < off[i + 1]; j++)
            if (rec[j].t < rec[j - 1].t)
                break;
        if (j < off[i + 1])
            qsort(rec + off[i], off[i + 1] - off[i], sizeof *rec, mem_cmp);
    }
    cur = as_xcalloc((size_t)p->ndev, sizeof *cur);
    for (d = 0; d < p->ndev; d++) {
        dev[d].resident = 0;
        dev[d].peak = 0;
        dev[d].peak_time = 0;
    }
    for (i = 0; i < nb; i++) {
        const sim_buf *bf = &p->bufs.v[i];

        if (bf->origin == SIM_BUF_RESIDENT)
            dev[bf->dev].resident += bf->bytes;
        else if (bf->origin == SIM_BUF_INPUT && bf->bytes > 0 && lastev[i] >= 0)
            cur[bf->dev] += bf->bytes; /* inputs: allocated at time 0 */
    }
    for (d = 0; d < p->ndev; d++) {
        size_t h[4], e[4];
        int q;

        for (q = 0; q < 4; q++) {
            h[q] = off[(size_t)d * 4 + (size_t)q];
            e[q] = off[(size_t)d * 4 + (size_t)q + 1];
        }
        dev[d].peak = cur[d];
        /* merge: smallest time first; at equal times frees (buckets 0, 2) before allocations */
        for (;;) {
            int best = -1;
            double bt = 0;
            const sim_buf *bf;

            for (q = 0; q < 4; q++) {
                if (h[q] == e[q])
                    continue;
                if (best < 0 || rec[h[q]].t < bt ||
                    (rec[h[q]].t == bt && (q & 1) == 0 && (best & 1) == 1)) {
                    best = q;
                    bt = rec[h[q]].t;
                }
            }
            if (best < 0)
                break;
            bf = &p->bufs.v[rec[h[best]++].buf];
            cur[d] += (best & 1) ? bf->bytes : -bf->bytes;
            if (cur[d] > dev[d].peak) {
                dev[d].peak = cur[d];
                dev[d].peak_time = bt;
            }
        }
    }
    for (d = 0; d < p->ndev; d++) {
        dev[d].peak += dev[d].resident;
        dev[d].oom = capacity > 0 && dev[d].peak > capacity;
    }
    *nbuf = nb;
    free(cur);
    free(rec);
    free(off);
    free(fill);
    free(done);
    free(lastev);
}
