/* engine.c -- the event engine: costs, schedule, critical path.
 *
 * DESIGN.  An event starts when (a) on every device it runs on, the
 * previous event of the same stream has ended (program order per device
 * and stream; with --no-overlap a device has one stream), and (b) every
 * buffer it reads has been produced.  It then runs for its duration and
 * ends at the same time on all its devices.  Nothing else delays an event
 * (streams are the only resources), so start times are the longest-path
 * values of the DAG whose edges are (a) and (b):
 *     start(e) = max(0, max over predecessors p of end(p)),  end = start + dur.
 * The engine builds that DAG in compressed rows (each event's predecessors
 * are at most one per device plus one per read) and evaluates it with
 * Kahn's algorithm: a FIFO of events whose predecessors have all ended,
 * with readiness counters.  Every event and edge is touched a constant
 * number of times, so a run is linear in events + devices + reads.  If the
 * FIFO empties while events remain, those events wait on each other: every
 * one has an unfinished predecessor, so following predecessors must cycle,
 * and the cycle (a deadlock) is reported by source line.
 *
 * Costs: an event without a fixed time is costed through the cost model,
 * once per distinct signature (DistSim): compute by interned op (program.c
 * interns identical ops), collectives through a hash keyed by kind, bytes,
 * group size and link class.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "sim_internal.h"

/* Collective cost cache entry. */
typedef struct coll_key {
    uint64_t bytes; /**< bit pattern of the payload */
    int32_t n;
    uint8_t kind, link, used, pad;
} coll_key;

typedef struct coll_cache {
    coll_key *keys;
    double *vals;
    size_t cap, n;
} coll_cache;

/* Per-run state. */
typedef struct eng {
    const as_sim_prog *p;
    const as_cost_model *cm;
    int dpn;            /**< devices per node */
    int ns;             /**< streams per device */
    double *dur;
    int32_t *spred;     /**< per (event, device slot): previous event on that stream, or -1 */
    int32_t *rowptr;    /**< successor rows, [n + 1] */
    int32_t *succ;
    int32_t *indeg;
    int32_t *cpred;     /**< the predecessor that determined the start, -1 = time 0 */
    size_t hits, misses;
} eng;

void
as_sim_opts_init(as_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->overlap = 1;
}

void
as_sim_result_free(as_sim_result *r)
{
    if (r == NULL)
        return;
    free(r->dev);
    free(r->start);
    free(r->end);
    free(r->crit);
    free(r->crit_why);
    free(r);
}

static uint64_t
coll_hash(const coll_key *k)
{
    uint64_t h = k->bytes * 0x9E3779B97F4A7C15ull;

    h ^= ((uint64_t)(uint32_t)k->n << 16 | (uint64_t)k->kind << 8 | k->link) *
         0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 31);
}

/* Seconds of collective K, costed once per signature. */
static double
coll_cost(eng *g, coll_cache *c, const coll_key *k)
{
    as_comm_group grp;
    size_t i;
    double v, bytes;

    if ((c->n + 1) * 2 > c->cap) {
        coll_key *ok = c->keys;
        double *ov = c->vals;
        size_t oc = c->cap, j;

        c->cap = oc ? oc * 2 : 64;
        c->keys = as_xcalloc(c->cap, sizeof *c->keys);
        c->vals = as_xcalloc(c->cap, sizeof *c->vals);
        for (j = 0; j < oc; j++) {
            if (!ok[j].used)
                continue;
            for (i = coll_hash(&ok[j]) & (c->cap - 1); c->keys[i].used; i = (i + 1) & (c->cap - 1))
                ;
            c->keys[i] = ok[j];
            c->vals[i] = ov[j];
        }
        free(ok);
        free(ov);
    }
    for (i = coll_hash(k) & (c->cap - 1); c->keys[i].used; i = (i + 1) & (c->cap - 1))
        if (c->keys[i].bytes == k->bytes && c->keys[i].n == k->n && c->keys[i].kind == k->kind &&
            c->keys[i].link == k->link) {
            g->hits++;
            return c->vals[i];
        }
    grp.n = k->n;
    grp.link = (as_link)k->link;
    grp.axis = -1;
    memcpy(&bytes, &k->bytes, sizeof bytes);
    v = as_cost_collective_group(g->cm, (as_coll)k->kind, bytes, &grp);
    c->keys[i] = *k;
    c->keys[i].used = 1;
    c->vals[i] = v;
    c->n++;
    g->misses++;
    return v;
}

/* Duration of every event (fixed or costed once per signature). */
static void
eng_costs(eng *g)
{
    const as_sim_prog *p = g->p;
    double *opcost = as_xmalloc((p->ops.n ? p->ops.n : 1) * sizeof *opcost);
    coll_cache cc = {0};
    size_t e;

    for (e = 0; e < p->ops.n; e++)
        opcost[e] = -1;
    for (e = 0; e < p->ev.n; e++) {
        const sim_event *ev = &p->ev.v[e];

        if (ev->time >= 0) {
            g->dur[e] = ev->time;
        } else if (ev->kind == AS_SIM_COMPUTE) {
            if (opcost[ev->op] < 0) {
                opcost[ev->op] = as_cost_compute(g->cm, &p->ops.v[ev->op].info);
                g->misses++;
            } else {
                g->hits++;
            }
            g->dur[e] = opcost[ev->op];
        } else {
            coll_key k;

            memset(&k, 0, sizeof k);
            memcpy(&k.bytes, &ev->bytes, sizeof k.bytes);
            k.n = ev->ndev;
            k.kind = ev->coll;
            k.link = (uint8_t)as_sim_i_group_link(p->devs.v + ev->dev_off, ev->ndev, g->dpn);
            g->dur[e] = coll_cost(g, &cc, &k);
        }
    }
    free(cc.keys);
    free(cc.vals);
    free(opcost);
}

/* Stream of event EV in this run. */
static int
eng_stream(const eng *g, const sim_event *ev)
{
    return g->ns == 1 ? 0 : ev->stream;
}

/* Build the predecessor counts and successor rows. */
static void
eng_graph(eng *g)
{
    const as_sim_prog *p = g->p;
    size_t n = p->ev.n, e, nd = (size_t)p->ndev * (size_t)g->ns;
    int32_t *last = as_xmalloc(nd * sizeof *last), *fill;
    uint32_t k;

    for (e = 0; e < nd; e++)
        last[e] = -1;
    /* per-event arrays on huge pages: their first touches would otherwise cost
     * a page fault per 4 KiB, as much as the scheduling (as_huge_pages) */
    g->rowptr = as_xmalloc_huge(n + 2, sizeof *g->rowptr);
    memset(g->rowptr, 0, (n + 2) * sizeof *g->rowptr);
    g->indeg = as_xmalloc_huge(n ? n : 1, sizeof *g->indeg);
    memset(g->indeg, 0, (n ? n : 1) * sizeof *g->indeg);
    /* pass 1: stream predecessors, in-degrees and out-degree counts */
    for (e = 0; e < n; e++) {
        const sim_event *ev = &p->ev.v[e];
        int s = eng_stream(g, ev);

        for (k = 0; k < ev->ndev; k++) {
            int32_t dv = p->devs.v[ev->dev_off + k], *l;

            if (as_sim_i_rep(p, dv) != dv) { /* a mirror: its representative runs it */
                g->spred[ev->dev_off + k] = -1;
                continue;
            }
            l = &last[(size_t)dv * (size_t)g->ns + (size_t)s];
            g->spred[ev->dev_off + k] = *l;
            if (*l >= 0) {
                g->rowptr[*l + 1]++;
                g->indeg[e]++;
            }
            *l = (int32_t)e;
        }
        for (k = 0; k < ev->nrd; k++) {
            int32_t pr = p->bufs.v[p->rds.v[ev->rd_off + k]].producer;

            if (pr >= 0) {
                g->rowptr[pr + 1]++;
                g->indeg[e]++;
            }
        }
    }
    for (e = 0; e < n; e++)
        g->rowptr[e + 1] += g->rowptr[e];
    g->succ = as_xmalloc_huge((size_t)g->rowptr[n] ? (size_t)g->rowptr[n] : 1, sizeof *g->succ);
    fill = last; /* reuse as a cursor when it is large enough */
    if (nd < n) {
        free(last);
        fill = as_xmalloc_huge(n ? n : 1, sizeof *fill);
    }
    memcpy(fill, g->rowptr, n * sizeof *fill);
    /* pass 2: successor rows */
    for (e = 0; e < n; e++) {
        const sim_event *ev = &p->ev.v[e];

        for (k = 0; k < ev->ndev; k++) {
            int32_t pr = g->spred[ev->dev_off + k];

            if (pr >= 0)
                g->succ[fill[pr]++] = (int32_t)e;
        }
        for (k = 0; k < ev->nrd; k++) {
            int32_t pr = p->bufs.v[p->rds.v[ev->rd_off + k]].producer;

            if (pr >= 0)
                g->succ[fill[pr]++] = (int32_t)e;
        }
    }
    free(fill);
}

/* Kahn's algorithm over the DAG; returns the number of events scheduled. */
static size_t
eng_schedule(eng *g, double *start, double *end)
{
    size_t n = g->p->ev.n, head = 0, tail = 0, e;
    int32_t *queue = as_xmalloc_huge(n ? n : 1, sizeof *queue);

    for (e = 0; e < n; e++) {
        start[e] = 0;
        g->cpred[e] = -1;
        if (g->indeg[e] == 0)
            queue[tail++] = (int32_t)e;
    }
    while (head < tail) {
        int32_t x = queue[head++];
        double t = start[x] + g->dur[x];
        int32_t j;

        end[x] = t;
        for (j = g->rowptr[x]; j < g->rowptr[x + 1]; j++) {
            int32_t s = g->succ[j];

            if (t > start[s] || (g->cpred[s] < 0 && t >= start[s])) {
                start[s] = t;
                g->cpred[s] = x;
            }
            if (--g->indeg[s] == 0)
                queue[tail++] = s;
        }
    }
    free(queue);
    return tail;
}

/* Append "line N 'label'" (or "event #i") for event E to BUF. */
static size_t
eng_name(const as_sim_prog *p, size_t e, char *buf, size_t n)
{
    const sim_event *ev = &p->ev.v[e];
    const char *label = ev->label >= 0 ? p->labels.v + ev->label : NULL;
    int w;

    if (ev->line > 0)
        w = snprintf(buf, n, "line %d%s%s%s", ev->line, label ? " '" : "", label ? label : "",
                     label ? "'" : "");
    else
        w = snprintf(buf, n, "event #%zu%s%s%s", e, label ? " '" : "", label ? label : "",
                     label ? "'" : "");
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
}

/* An unscheduled predecessor of unscheduled event E (one must exist). */
static int32_t
eng_waiting_on(const eng *g, size_t e, const double *end_mark)
{
    const as_sim_prog *p = g->p;
    const sim_event *ev = &p->ev.v[e];
    uint32_t k;

    for (k = 0; k < ev->ndev; k++) {
        int32_t pr = g->spred[ev->dev_off + k];

        if (pr >= 0 && isnan(end_mark[pr]))
            return pr;
    }
    for (k = 0; k < ev->nrd; k++) {
        int32_t pr = p->bufs.v[p->rds.v[ev->rd_off + k]].producer;

        if (pr >= 0 && isnan(end_mark[pr]))
            return pr;
    }
    return -1;
}

/* Report a deadlock: follow waiting links from the first stuck event until one repeats. */
static int
eng_deadlock(const eng *g, size_t done, double *end, as_err *err)
{
    const as_sim_prog *p = g->p;
    size_t n = p->ev.n, e, first = n, len = 0, steps = 0;
    int32_t *seen = as_xcalloc(n, sizeof *seen), x, y;
    char msg[400];
    int rc;

    for (e = 0; e < n; e++)
        if (isnan(end[e]) && first == n)
            first = e;
    /* walk until an event repeats; seen[] holds the step number + 1 */
    for (x = (int32_t)first; x >= 0 && seen[x] == 0; x = eng_waiting_on(g, (size_t)x, end))
        seen[x] = (int32_t)++steps;
    if (x < 0) {
        free(seen);
        return as_errf(err, AS_EINTERNAL, "deadlock without a cycle (bug)");
    }
    /* x starts the cycle: list it in waits-for order */
    len = (size_t)snprintf(msg, sizeof msg, "cycle: ");
    y = x;
    do {
        if (len + 80 >= sizeof msg) {
            len += (size_t)snprintf(msg + len, sizeof msg - len, "...");
            break;
        }
        len += eng_name(p, (size_t)y, msg + len, sizeof msg - len);
        len += (size_t)snprintf(msg + len, sizeof msg - len, " waits for ");
        y = eng_waiting_on(g, (size_t)y, end);
    } while (y >= 0 && y != x);
    if (y == x && len < sizeof msg)
        eng_name(p, (size_t)x, msg + len, sizeof msg - len);
    rc = as_errf(err, AS_EPARSE, "%s%sdeadlock: %zu of %zu events can never start; %s",
                 p->path[0] ? p->path : "", p->path[0] ? ": " : "", n - done, n, msg);
    free(seen);
    return rc;
}

/* Why critical-path event E started when it did, given its predecessor PR. */
static as_sim_why
eng_why(const as_sim_prog *p, int32_t e, int32_t pr)
{
    const sim_event *ev = &p->ev.v[e];
    uint32_t k;

    if (pr < 0)
        return AS_SIM_WHY_START;
    for (k = 0; k < ev->nrd; k++)
        if (p->bufs.v[p->rds.v[ev->rd_off + k]].producer == pr)
            return AS_SIM_WHY_DATA;
    return ev->ndev > 1 ? AS_SIM_WHY_SYNC : AS_SIM_WHY_STREAM;
}

/* Follow the determining predecessors back from the last event to end. */
static void
eng_critical(const eng *g, as_sim_result *r)
{
    size_t n = g->p->ev.n, e, last = 0, len = 0;
    int32_t x;

    if (n == 0)
        return;
    for (e = 1; e < n; e++)
        if (r->end[e] > r->end[last])
            last = e;
    for (x = (int32_t)last; x >= 0; x = g->cpred[x])
        len++;
    r->crit = as_xmalloc(len * sizeof *r->crit);
    r->crit_why = as_xmalloc(len);
    r->ncrit = len;
    for (x = (int32_t)last; x >= 0; x = g->cpred[x]) {
        len--;
        r->crit[len] = x;
        r->crit_why[len] = (uint8_t)eng_why(g->p, x, g->cpred[x]);
    }
}

/* Per-device busy times, idle time and bubble fraction. */
static void
eng_stats(const eng *g, as_sim_result *r)
{
    const as_sim_prog *p = g->p;
    double *busy = as_xcalloc((size_t)p->ndev, sizeof *busy), idle = 0;
    size_t e;
    uint32_t k;
    int d;

    for (e = 0; e < p->ev.n; e++) {
        const sim_event *ev = &p->ev.v[e];
        double t = g->dur[e];

        for (k = 0; k < ev->ndev; k++) {
            int32_t dv = p->devs.v[ev->dev_off + k];

            if (as_sim_i_rep(p, dv) != dv)
                continue;
            if (ev->kind == AS_SIM_COMPUTE)
                r->dev[dv].compute += t;
            else
                r->dev[dv].comm += t;
            if (eng_stream(g, ev) == AS_SIM_STREAM_COMPUTE)
                busy[dv] += t;
        }
    }
    for (d = 0; d < p->ndev; d++) {
        int32_t rp = as_sim_i_rep(p, d);
        if (rp != d) { /* its representative's figures, computed first (rep < d not needed) */
            r->dev[d].compute = r->dev[rp].compute;
            r->dev[d].comm = r->dev[rp].comm;
            busy[d] = busy[rp];
        }
        r->dev[d].idle = r->time - busy[d] > 0 ? r->time - busy[d] : 0;
        idle += r->dev[d].idle;
    }
    r->bubble = r->time > 0 ? idle / ((double)p->ndev * r->time) : 0;
    free(busy);
}

/* Resolve hardware and cost model from the options and the program header. */
static int
eng_model(const as_sim_prog *p, const as_sim_opts *o, as_cost_model **owned, as_mesh **mesh,
          const as_cost_model **cm, as_err *err)
{
    const char *hwname = o->hw ? o->hw : p->hw[0] ? p->hw : "a100-dgx";
    const char *mname = o->cost_model ? o->cost_model : p->model[0] ? p->model : "roofline";
    const as_cost_ops *ops;
    int64_t size;
    as_hw hw;

    if (o->cm != NULL) {
        *cm = o->cm;
        return AS_OK;
    }
    AS_CHECK(as_hw_load(hwname, &hw, err));
    if ((ops = as_cost_model_find(mname, err)) == NULL)
        return err->code;
    /* a one-axis mesh over whole nodes: the model only needs it to exist */
    size = p->ndev;
    if (hw.devices_per_node > 0 && size > hw.devices_per_node && size % hw.devices_per_node)
        size += hw.devices_per_node - size % hw.devices_per_node;
    AS_CHECK(as_mesh_new(1, &size, NULL, mesh, err));
    AS_CHECK(as_cost_model_new(ops, &hw, *mesh, o->params, o->nparams, owned, err));
    *cm = *owned;
    return AS_OK;
}

int
as_sim_run(const as_sim_prog *p, const as_sim_opts *o0, as_sim_result **out, as_err *err)
{
    as_sim_opts o;
    as_cost_model *owned = NULL;
    as_mesh *mesh = NULL;
    as_sim_result *r = NULL;
    double t0 = as_now();
    size_t n = p->ev.n, done, e;
    eng g;
    int rc;

    if (o0 != NULL)
        o = *o0;
    else
        as_sim_opts_init(&o);
#ifdef __GLIBC__
    {
        /* A run allocates ~100 bytes per event and frees them; by default glibc hands
         * such blocks back to the kernel, so every run (sweeps and rankings make
         * thousands) faults its pages in again, which costs more than the simulation
         * (bench_sim: 1.8 -> 9 M events/s).  Keep freed memory for the next run. */
        static int tuned;
        if (!tuned) {
            tuned = 1;
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
        }
    }
#endif
    memset(&g, 0, sizeof g);
    AS_CHECK(as_sim_prog_check(p, err));
    AS_CHECK_GOTO(rc, eng_model(p, &o, &owned, &mesh, &g.cm, err), out);
    g.p = p;
    g.dpn = as_cost_model_hw(g.cm)->devices_per_node;
    g.ns = o.overlap ? 2 : 1;
    g.dur = as_xmalloc_huge(n ? n : 1, sizeof *g.dur);
    g.spred = as_xmalloc_huge(p->devs.n ? p->devs.n : 1, sizeof *g.spred);
    g.cpred = as_xmalloc_huge(n ? n : 1, sizeof *g.cpred);
    r = as_xcalloc(1, sizeof *r);
    r->start = as_xmalloc_huge(n ? n : 1, sizeof *r->start);
    r->end = as_xmalloc_huge(n ? n : 1, sizeof *r->end);
    r->dev = as_xcalloc((size_t)p->ndev, sizeof *r->dev);
    eng_costs(&g);
    eng_graph(&g);
    for (e = 0; e < n; e++)
        r->end[e] = NAN;
    done = eng_schedule(&g, r->start, r->end);
    if (done < n) {
        rc = eng_deadlock(&g, done, r->end, err);
        goto out;
    }
    /* the DAG is done with: the memory model's arrays reuse its memory (fresh pages
     * cost a fault and a zeroing each) */
    free(g.succ);
    free(g.rowptr);
    free(g.indeg);
    free(g.spred);
    g.succ = NULL;
    g.rowptr = NULL;
    g.indeg = NULL;
    g.spred = NULL;
    r->overlap = o.overlap;
    r->ndevices = p->ndev;
    r->nevents = n;
    for (e = 0; e < n; e++)
        if (r->end[e] > r->time)
            r->time = r->end[e];
    r->throughput = p->batch > 0 && r->time > 0 ? p->batch / r->time : 0;
    r->capacity = o.capacity > 0 ? o.capacity : as_hw_usable_memory(as_cost_model_hw(g.cm));
    r->cost_hits = g.hits;
    r->cost_misses = g.misses;
    snprintf(r->hw, sizeof r->hw, "%s", as_cost_model_hw(g.cm)->name);
    snprintf(r->model, sizeof r->model, "%s", as_cost_model_ops(g.cm)->name);
    eng_stats(&g, r);
    as_sim_i_memory(p, r->start, r->end, r->capacity, r->dev, &r->nbuffers);
    for (e = 0; e < (size_t)p->ndev; e++) {
        int32_t rp = as_sim_i_rep(p, (int32_t)e);
        if (rp != (int32_t)e) {
            r->dev[e].resident = r->dev[rp].resident;
            r->dev[e].peak = r->dev[rp].peak;
            r->dev[e].peak_time = r->dev[rp].peak_time;
            r->dev[e].oom = r->dev[rp].oom;
        }
    }
    r->nexplicit = p->nexplicit;
    eng_critical(&g, r);
    r->wall = as_now() - t0;
    *out = r;
    r = NULL;
    rc = AS_OK;
out:
    as_sim_result_free(r);
    free(g.dur);
    free(g.spred);
    free(g.cpred);
    free(g.rowptr);
    free(g.succ);
    free(g.indeg);
    as_cost_model_free(owned);
    as_mesh_free(mesh);
    return rc;
}
