/* memory.c -- per-device memory from the simulated timeline.
 *
 * A buffer produced by an event is allocated when that event starts and
 * freed when the last event reading it on that device ends (or when its
 * producer ends, if nothing reads it).  An input buffer is allocated at
 * time 0 and freed after its last use.  Resident buffers (parameters,
 * gradients, optimizer state) are counted for the whole iteration.
 *
 * DESIGN.  Every live range becomes two records (+bytes at the start,
 * -bytes at the end).  The records are sorted by time with a stable LSD
 * radix sort (16-bit digits) on the bit patterns of the (non-negative) times, with all
 * frees listed before all allocations, so at equal times memory is
 * released before it is taken again; a stable counting pass then groups
 * them by device and one sweep per device finds the peak.  Linear in the
 * number of buffers (4 radix passes).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define MEM_RADIX_BITS 16
#define MEM_RADIX (1u << MEM_RADIX_BITS)

typedef struct mem_rec {
    uint64_t key;  /**< bit pattern of the time (>= 0 sorts like the number) */
    int32_t buf;   /**< buffer id */
    int32_t alloc; /**< 1 allocation, 0 release */
} mem_rec;

/* Stable LSD radix sort of A[0..N) by key (4 passes of 16 bits); TMP has N slots. */
static void
mem_sort(mem_rec *a, mem_rec *tmp, size_t n)
{
    mem_rec *src = a, *dst = tmp, *t;
    size_t *cnt = as_xmalloc(MEM_RADIX * sizeof *cnt), i;
    int shift;

    for (shift = 0; shift < 64; shift += MEM_RADIX_BITS) {
        size_t sum = 0;

        memset(cnt, 0, MEM_RADIX * sizeof *cnt);
        for (i = 0; i < n; i++)
            cnt[(src[i].key >> shift) & (MEM_RADIX - 1)]++;
        if (cnt[(src[0].key >> shift) & (MEM_RADIX - 1)] == n)
            continue; /* every key has the same digit: the pass is the identity */
        for (i = 0; i < MEM_RADIX; i++) {
            size_t c = cnt[i];

            cnt[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            dst[cnt[(src[i].key >> shift) & (MEM_RADIX - 1)]++] = src[i];
        t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(cnt);
}

static uint64_t
mem_key(double t)
{
    uint64_t k;

    if (!(t > 0))
        return 0;
    memcpy(&k, &t, sizeof k);
    return k;
}

void
as_sim_i_memory(const as_sim_prog *p, const double *start, const double *end, double capacity,
                as_sim_dev_stats *dev, size_t *nbuf)
{
    size_t nb = p->bufs.n, i, n = 0, *cnt;
    double *last = as_xmalloc((nb ? nb : 1) * sizeof *last), *cur;
    mem_rec *rec, *tmp;
    uint32_t k;
    int d;

    /* last use of every buffer */
    for (i = 0; i < nb; i++) {
        const sim_buf *b = &p->bufs.v[i];

        last[i] = b->producer >= 0 ? end[b->producer] : 0;
    }
    for (i = 0; i < p->ev.n; i++) {
        const sim_event *ev = &p->ev.v[i];

        for (k = 0; k < ev->nrd; k++) {
            int32_t b = p->rds.v[ev->rd_off + k];

            if (end[i] > last[b])
                last[b] = end[i];
        }
    }
    rec = as_xmalloc((2 * nb + 1) * sizeof *rec);
    tmp = as_xmalloc((2 * nb + 1) * sizeof *tmp);
    /* frees first, then allocations, so the stable sort puts frees first at equal times */
    for (d = 0; d < 2; d++)
        for (i = 0; i < nb; i++) {
            const sim_buf *b = &p->bufs.v[i];

            if (b->origin == SIM_BUF_RESIDENT || b->bytes <= 0 ||
                (b->origin == SIM_BUF_ACT && b->producer < 0))
                continue;
            rec[n].buf = (int32_t)i;
            rec[n].alloc = d;
            if (d == 0)
                rec[n].key = mem_key(last[i]);
            else
                rec[n].key = b->origin == SIM_BUF_INPUT ? 0 : mem_key(start[b->producer]);
            n++;
        }
    if (n > 0)
        mem_sort(rec, tmp, n);
    /* group by device, keeping time order */
    cnt = as_xcalloc((size_t)p->ndev + 1, sizeof *cnt);
    for (i = 0; i < n; i++)
        cnt[p->bufs.v[rec[i].buf].dev + 1]++;
    for (d = 0; d < p->ndev; d++)
        cnt[d + 1] += cnt[d];
    for (i = 0; i < n; i++)
        tmp[cnt[p->bufs.v[rec[i].buf].dev]++] = rec[i];
    /* sweep */
    cur = as_xcalloc((size_t)p->ndev, sizeof *cur);
    for (d = 0; d < p->ndev; d++) {
        dev[d].resident = 0;
        dev[d].peak = 0;
        dev[d].peak_time = 0;
    }
    for (i = 0; i < nb; i++)
        if (p->bufs.v[i].origin == SIM_BUF_RESIDENT)
            dev[p->bufs.v[i].dev].resident += p->bufs.v[i].bytes;
    for (i = 0; i < n; i++) {
        const mem_rec *m = &tmp[i];
        const sim_buf *b = &p->bufs.v[m->buf];
        double t;

        cur[b->dev] += m->alloc ? b->bytes : -b->bytes;
        if (cur[b->dev] > dev[b->dev].peak) {
            dev[b->dev].peak = cur[b->dev];
            memcpy(&t, &m->key, sizeof t);
            dev[b->dev].peak_time = t;
        }
    }
    for (d = 0; d < p->ndev; d++) {
        dev[d].peak += dev[d].resident;
        dev[d].oom = capacity > 0 && dev[d].peak > capacity;
    }
    *nbuf = nb;
    free(cur);
    free(cnt);
    free(tmp);
    free(rec);
    free(last);
}
