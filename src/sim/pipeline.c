/* pipeline.c -- pipeline schedules (GPipe, 1F1B) as event programs, and the
 * balanced contiguous split of a cost sequence into stages.
 *
 * A stage runs, per microbatch, one forward and one backward pass on its
 * device set (its own sub-mesh: tensor parallelism stays inside a stage).
 * The schedule fixes each stage's order of passes:
 *   gpipe  F0 F1 .. F(K-1)  B0 B1 .. B(K-1)
 *   1f1b   w = min(P-1-s, K) warm-up forwards, then alternate F(w+i), B(i),
 *          then the remaining backwards (PipeDream-flush / DAPPLE)
 * Activations go forward and their gradients backward between consecutive
 * stages as sends.  With dp > 1 replicas the whole pipeline is repeated on
 * shifted devices and each stage's gradients are all-reduced over the
 * replicas after its last backward (DistSim: tensor inside a stage, pipeline
 * across stages, data across replicas).
 *
 * DESIGN.  The simulator runs each device's events in program order, so
 * the order in which passes and sends are appended matters: two devices
 * that list their shared sends in different orders deadlock.  The
 * generator therefore list-schedules the passes once with their nominal
 * costs (no communication) and appends them, each followed by its sends,
 * in order of that nominal start time; the result is a topological order
 * of the data dependencies, so every device sees its sends in one global
 * order and the program cannot deadlock.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* One pass of one stage in the schedule. */
typedef struct pipe_pass {
    int micro;
    int backward;
} pipe_pass;

int
as_sim_sched_parse(const char *s, as_sim_sched *out)
{
    if (strcmp(s, "gpipe") == 0)
        *out = AS_SIM_GPIPE;
    else if (strcmp(s, "1f1b") == 0)
        *out = AS_SIM_1F1B;
    else
        return 0;
    return 1;
}

const char *
as_sim_sched_name(as_sim_sched s)
{
    return s == AS_SIM_1F1B ? "1f1b" : "gpipe";
}

void
as_sim_pipe_opts_init(as_sim_pipe_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sched = AS_SIM_GPIPE;
    o->nmicro = 1;
    o->dp = 1;
    o->send_time = -1;
    o->ar_time = -1;
}

/* Fill ORDER[0..2K) with stage S's passes under SCHED. */
static void
pipe_order(as_sim_sched sched, int s, int p, int k, pipe_pass *order)
{
    int i, n = 0, w;

    if (sched == AS_SIM_GPIPE) {
        for (i = 0; i < k; i++)
            order[n++] = (pipe_pass){i, 0};
        for (i = 0; i < k; i++)
            order[n++] = (pipe_pass){i, 1};
        return;
    }
    w = p - 1 - s < k ? p - 1 - s : k;
    for (i = 0; i < w; i++)
        order[n++] = (pipe_pass){i, 0};
    for (i = 0; i < k - w; i++) {
        order[n++] = (pipe_pass){w + i, 0};
        order[n++] = (pipe_pass){i, 1};
    }
    for (i = k - w; i < k; i++)
        order[n++] = (pipe_pass){i, 1};
}

/*
 * Tensor id "<c><stage>.<micro>" (or "<c><stage>" when MICRO < 0).  Replicas
 * run on other devices, and a tensor names one buffer per device, so the
 * replicas share names.
 */
static int32_t
pipe_tensor(as_sim_prog *p, char c, int stage, int micro)
{
    char name[64];

    if (micro >= 0)
        snprintf(name, sizeof name, "pipe/%c%d.%d", c, stage, micro);
    else
        snprintf(name, sizeof name, "pipe/%c%d", c, stage);
    return as_sim_tensor(p, name);
}

/* The default pass: one compute event per device of the stage. */
static int
pipe_default_emit(as_sim_prog *p, const as_sim_pipe_ctx *c, const as_sim_stage *st,
                  double out_bytes, as_err *err)
{
    int32_t reads[2], writes[2];
    double wb[2];
    as_sim_event_spec s;
    char label[64];
    int nr = 0, nw = 0;

    if (c->in >= 0)
        reads[nr++] = c->in;
    if (c->backward)
        reads[nr++] = c->stash;
    if (c->out >= 0) {
        writes[nw] = c->out;
        wb[nw++] = out_bytes;
    }
    if (!c->backward) {
        writes[nw] = c->stash;
        wb[nw++] = st->stash_bytes;
    } else if (c->grad >= 0) {
        writes[nw] = c->grad;
        wb[nw++] = 0;
    }
    if (c->replica > 0)
        snprintf(label, sizeof label, "r%d.%c%d.%d", c->replica, c->backward ? 'B' : 'F',
                 c->stage, c->micro);
    else
        snprintf(label, sizeof label, "%c%d.%d", c->backward ? 'B' : 'F', c->stage, c->micro);
    as_sim_event_spec_init(&s);
    s.devs = c->devs;
    s.ndevs = c->ndevs;
    s.time = c->backward ? st->bwd : st->fwd;
    s.reads = reads;
    s.nreads = nr;
    s.writes = writes;
    s.wbytes = wb;
    s.nwrites = nw;
    s.label = label;
    return as_sim_add(p, &s, err);
}

/* Send tensor T from the devices of stage A to those of stage B (device j of B from j mod |A|). */
static int
pipe_sends(as_sim_prog *p, const int *a, int na, const int *b, int nb, int32_t t, double bytes,
           double time, const char *label, as_err *err)
{
    int j;

    for (j = 0; j < nb; j++)
        AS_CHECK(as_sim_add_send(p, a[j % na], b[j], t, bytes, time, label, err));
    return AS_OK;
}

/* Check sizes; fill DEVS[r][s] offsets by the replica stride. */
static int
pipe_check(const as_sim_prog *prog, const as_sim_stage *st, int np, const as_sim_pipe_opts *o,
           int *stride, as_err *err)
{
    int s, i, total = 0;

    if (np < 1 || o->nmicro < 1 || o->dp < 1)
        return as_errf(err, AS_EUSAGE, "pipeline needs P >= 1 stages, K >= 1 microbatches and "
                       "dp >= 1 (got P=%d, K=%d, dp=%d)", np, o->nmicro, o->dp);
    for (s = 0; s < np; s++) {
        if (st[s].ndevs < 1)
            return as_errf(err, AS_EUSAGE, "pipeline stage %d has no devices", s);
        if (!(st[s].fwd >= 0) || !(st[s].bwd >= 0) || !(st[s].act_bytes >= 0) ||
            !(st[s].stash_bytes >= 0) || !(st[s].param_bytes >= 0) || !(st[s].grad_bytes >= 0))
            return as_errf(err, AS_EUSAGE, "pipeline stage %d: times and sizes must be >= 0", s);
        total += st[s].ndevs;
    }
    *stride = o->dp_stride > 0 ? o->dp_stride : total;
    for (s = 0; s < np; s++)
        for (i = 0; i < st[s].ndevs; i++)
            if (st[s].devs[i] < 0 ||
                st[s].devs[i] + (o->dp - 1) * *stride >= as_sim_prog_ndevices(prog))
                return as_errf(err, AS_EUSAGE, "pipeline stage %d: device %d (replica %d) is "
                               "outside the program's %d devices", s,
                               st[s].devs[i] + (o->dp - 1) * *stride, o->dp - 1,
                               as_sim_prog_ndevices(prog));
    return AS_OK;
}

/*
 * List-schedule the passes with nominal costs; OUT[0..2PK) gets (stage,
 * index in that stage's order) pairs in order of nominal start, TIMES the
 * same pairs' (start, end).
 */
static int
pipe_global_order(const as_sim_stage *st, int np, int k, pipe_pass *const *order, int *out,
                  double *times, as_err *err)
{
    size_t cells = (size_t)np * (size_t)k;
    double *fend = as_xmalloc(cells * sizeof *fend), *bend = as_xmalloc(cells * sizeof *bend);
    double *free_at = as_xcalloc((size_t)np, sizeof *free_at);
    int *next = as_xcalloc((size_t)np, sizeof *next), n = 0, total = 2 * np * k, s;
    int rc = AS_OK;
    size_t c;

    for (c = 0; c < cells; c++)
        fend[c] = bend[c] = -1; /* -1 = not scheduled yet */
    while (n < total) {
        int best = -1;
        double bt = INFINITY, dep;

        for (s = 0; s < np; s++) {
            const pipe_pass *ps;

            if (next[s] == 2 * k)
                continue;
            ps = &order[s][next[s]];
            if (!ps->backward)
                dep = s > 0 ? fend[(size_t)(s - 1) * k + ps->micro] : 0;
            else
                dep = s < np - 1 ? bend[(size_t)(s + 1) * k + ps->micro] : 0;
            if (dep < 0)
                continue; /* its input is not scheduled yet */
            if (free_at[s] > dep)
                dep = free_at[s];
            if (dep < bt) {
                bt = dep;
                best = s;
            }
        }
        if (best < 0) {
            rc = as_errf(err, AS_EINTERNAL, "pipeline schedule cannot proceed (bug)");
            break;
        }
        {
            const pipe_pass *ps = &order[best][next[best]];
            double e = bt + (ps->backward ? st[best].bwd : st[best].fwd);

            if (ps->backward)
                bend[(size_t)best * k + ps->micro] = e;
            else
                fend[(size_t)best * k + ps->micro] = e;
            free_at[best] = e;
            times[2 * n] = bt;
            times[2 * n + 1] = e;
            out[2 * n] = best;
            out[2 * n + 1] = next[best]++;
            n++;
        }
    }
    free(next);
    free(free_at);
    free(bend);
    free(fend);
    return rc;
}

/* Devices of stage S in replica R, written to BUF (STRIDE apart per replica). */
static const int *
pipe_devs(const as_sim_stage *st, int r, int stride, int *buf)
{
    int i;

    for (i = 0; i < st->ndevs; i++)
        buf[i] = st->devs[i] + r * stride;
    return buf;
}

/* What an item of the program order appends. */
enum { PIPE_PASS = 0, PIPE_SENDS, PIPE_TAIL };

/*
 * Append, for pass (S, ORDER[S][IDX]) of replica R, the pass itself
 * (WHAT = PIPE_PASS), the sends of its output (PIPE_SENDS), or what follows
 * the stage's last backward (PIPE_TAIL).
 */
static int
pipe_emit_pass(as_sim_prog *prog, const as_sim_stage *st, int np, const as_sim_pipe_opts *o,
               pipe_pass *const *order, int s, int idx, int r, int stride, int **db, int what,
               as_err *err)
{
    const pipe_pass *ps = &order[s][idx];
    const int *d = pipe_devs(&st[s], r, stride, db[0]);
    as_sim_pipe_ctx c;
    char label[64];
    int m = ps->micro;

    memset(&c, 0, sizeof c);
    c.stage = s;
    c.micro = m;
    c.replica = r;
    c.backward = ps->backward;
    c.devs = d;
    c.ndevs = st[s].ndevs;
    c.stash = pipe_tensor(prog, 's', s, m);
    c.grad = -1;
    if (!ps->backward) {
        c.in = s > 0 ? pipe_tensor(prog, 'a', s, m) : -1;
        c.out = s < np - 1 ? pipe_tensor(prog, 'a', s + 1, m) : -1;
    } else {
        c.in = s < np - 1 ? pipe_tensor(prog, 'g', s + 1, m) : -1;
        c.out = s > 0 ? pipe_tensor(prog, 'g', s, m) : -1;
        if (idx == 2 * o->nmicro - 1)
            c.grad = pipe_tensor(prog, 'w', s, -1);
    }
    if (what == PIPE_PASS) {
        if (o->emit != NULL)
            return o->emit(prog, &c, o->ud, err);
        return pipe_default_emit(prog, &c, &st[s],
                                 ps->backward ? (s > 0 ? st[s - 1].act_bytes : 0)
                                              : st[s].act_bytes, err);
    }
    if (what == PIPE_TAIL) {
        c.tail = 1;
        c.in = c.out = c.stash = c.grad = -1;
        return o->emit(prog, &c, o->ud, err);
    }
    if (c.out >= 0 && !ps->backward) {
        snprintf(label, sizeof label, "%ssendF%d.%d", r ? "r" : "", s, m);
        AS_CHECK(pipe_sends(prog, d, st[s].ndevs, pipe_devs(&st[s + 1], r, stride, db[1]),
                            st[s + 1].ndevs, c.out, st[s].act_bytes, o->send_time, label, err));
    } else if (c.out >= 0) {
        snprintf(label, sizeof label, "%ssendB%d.%d", r ? "r" : "", s, m);
        AS_CHECK(pipe_sends(prog, d, st[s].ndevs, pipe_devs(&st[s - 1], r, stride, db[1]),
                            st[s - 1].ndevs, c.out, st[s - 1].act_bytes, o->send_time, label,
                            err));
    }
    return AS_OK;
}

/* An item of the program order: a pass, its sends or a stage's tail, at its nominal time. */
typedef struct pipe_item {
    double t;
    int seq;  /* generation order: ties keep it */
    int pass; /* index into the global order */
    int what; /* PIPE_* */
} pipe_item;

static int
pipe_item_cmp(const void *a, const void *b)
{
    const pipe_item *x = a, *y = b;

    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Resident parameters of every stage device, and the data-parallel all-reduces. */
static int
pipe_resident(as_sim_prog *prog, const as_sim_stage *st, int np, const as_sim_pipe_opts *o,
              int stride, int *buf, as_err *err)
{
    int s, r;

    for (s = 0; s < np; s++)
        for (r = 0; r < o->dp; r++)
            if (st[s].param_bytes > 0)
                AS_CHECK(as_sim_declare(prog, AS_SIM_RESIDENT, pipe_devs(&st[s], r, stride, buf),
                                        st[s].ndevs, pipe_tensor(prog, 'p', s, -1),
                                        st[s].param_bytes, err));
    return AS_OK;
}

static int
pipe_allreduce(as_sim_prog *prog, const as_sim_stage *st, int np, const as_sim_pipe_opts *o,
               int stride, int *group, as_err *err)
{
    char label[64];
    int s, i, r;

    for (s = 0; s < np; s++) {
        for (i = 0; i < st[s].ndevs; i++) {
            as_sim_event_spec e;
            int32_t rd, wr;

            for (r = 0; r < o->dp; r++)
                group[r] = st[s].devs[i] + r * stride;
            rd = pipe_tensor(prog, 'w', s, -1);
            wr = pipe_tensor(prog, 'W', s, -1);
            snprintf(label, sizeof label, "dp-allreduce%d.%d", s, i);
            as_sim_event_spec_init(&e);
            e.kind = AS_SIM_COLL;
            e.coll = AS_COLL_ALL_REDUCE;
            e.devs = group;
            e.ndevs = o->dp;
            e.bytes = st[s].grad_bytes;
            e.time = o->ar_time;
            e.reads = &rd;
            e.nreads = 1;
            e.writes = &wr;
            e.nwrites = 1;
            e.label = label;
            AS_CHECK(as_sim_add(prog, &e, err));
        }
    }
    return AS_OK;
}

int
as_sim_pipeline(as_sim_prog *prog, const as_sim_stage *st, int np, const as_sim_pipe_opts *o,
                as_err *err)
{
    pipe_pass **order = NULL;
    int *gorder = NULL, *db[2] = {NULL, NULL}, stride = 0, s, i, r, maxd = 1, npass, nitems = 0;
    double *times = NULL;
    pipe_item *items = NULL;
    int rc;

    AS_CHECK(pipe_check(prog, st, np, o, &stride, err));
    for (s = 0; s < np; s++)
        maxd = st[s].ndevs > maxd ? st[s].ndevs : maxd;
    maxd = o->dp > maxd ? o->dp : maxd;
    db[0] = as_xmalloc((size_t)maxd * sizeof *db[0]);
    db[1] = as_xmalloc((size_t)maxd * sizeof *db[1]);
    order = as_xcalloc((size_t)np, sizeof *order);
    for (s = 0; s < np; s++) {
        order[s] = as_xmalloc(2 * (size_t)o->nmicro * sizeof *order[s]);
        pipe_order(o->sched, s, np, o->nmicro, order[s]);
    }
    npass = 2 * np * o->nmicro;
    gorder = as_xmalloc(2 * (size_t)npass * sizeof *gorder);
    times = as_xmalloc(2 * (size_t)npass * sizeof *times);
    items = as_xmalloc(3 * (size_t)npass * sizeof *items);
    AS_CHECK_GOTO(rc, pipe_global_order(st, np, o->nmicro, order, gorder, times, err), out);
    AS_CHECK_GOTO(rc, pipe_resident(prog, st, np, o, stride, db[0], err), out);
    /* passes at their nominal start, their sends (and a stage's tail after its last
     * backward) when their output is ready: a device's sends and receives then come in
     * the order the data arrives, as in Megatron's schedule */
    for (i = 0; i < npass; i++) {
        items[nitems] = (pipe_item){times[2 * i], nitems, i, PIPE_PASS};
        nitems++;
        items[nitems] = (pipe_item){times[2 * i + 1], nitems, i, PIPE_SENDS};
        nitems++;
        if (gorder[2 * i + 1] == 2 * o->nmicro - 1 && o->emit != NULL) {
            items[nitems] = (pipe_item){times[2 * i + 1], nitems, i, PIPE_TAIL};
            nitems++;
        }
    }
    qsort(items, (size_t)nitems, sizeof *items, pipe_item_cmp);
    for (i = 0; i < nitems; i++)
        for (r = 0; r < o->dp; r++)
            AS_CHECK_GOTO(rc, pipe_emit_pass(prog, st, np, o, order, gorder[2 * items[i].pass],
                                             gorder[2 * items[i].pass + 1], r, stride, db,
                                             items[i].what, err), out);
    if (o->dp > 1)
        AS_CHECK_GOTO(rc, pipe_allreduce(prog, st, np, o, stride, db[0], err), out);
out:
    free(items);
    free(times);
    free(gorder);
    for (s = 0; order != NULL && s < np; s++)
        free(order[s]);
    free(order);
    free(db[1]);
    free(db[0]);
    return rc;
}

/* Balanced split. */

/* Greedy: fewest parts whose running sums stay <= T; *MAXSUM gets their largest sum. */
static int
split_greedy(const double *cost, size_t n, double t, size_t *bounds, int maxparts,
             double *maxsum)
{
    double seg = 0, mx = 0;
    int parts = 1;
    size_t i;

    if (bounds != NULL)
        bounds[0] = 0;
    for (i = 0; i < n; i++) {
        if (i > 0 && seg + cost[i] > t) {
            if (seg > mx)
                mx = seg;
            if (++parts > maxparts)
                return parts;
            if (bounds != NULL)
                bounds[parts - 1] = i;
            seg = 0;
        }
        seg += cost[i];
    }
    if (seg > mx)
        mx = seg;
    if (maxsum != NULL)
        *maxsum = mx;
    return parts;
}

int
as_sim_balanced_split(const double *cost, size_t n, int p, size_t *bounds, double *maxcost,
                      as_err *err)
{
    double lo = 0, hi = 0, best;
    uint64_t a, b;
    size_t i;
    int parts, j;

    if (p < 1 || (size_t)p > n)
        return as_errf(err, AS_EUSAGE, "cannot split %zu costs into %d non-empty stages", n, p);
    for (i = 0; i < n; i++) {
        if (!isfinite(cost[i]) || cost[i] < 0)
            return as_errf(err, AS_EUSAGE, "cost %zu is negative or not finite", i);
        if (cost[i] > lo)
            lo = cost[i];
        hi += cost[i];
    }
    /* smallest threshold (as ordered bit patterns of doubles >= 0) that the greedy meets */
    memcpy(&a, &lo, sizeof a);
    memcpy(&b, &hi, sizeof b);
    if (b < a)
        b = a;
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        double t;

        memcpy(&t, &mid, sizeof t);
        if (split_greedy(cost, n, t, NULL, p, NULL) <= p)
            b = mid;
        else
            a = mid + 1;
    }
    memcpy(&best, &a, sizeof best);
    parts = split_greedy(cost, n, best, bounds, p, maxcost);
    /* fewer parts than P: split off single items from the end; the maximum cannot grow */
    while (parts < p) {
        for (j = parts; j >= 1; j--) {
            size_t lo_i = bounds[j - 1], hi_i = j == parts ? n : bounds[j];

            if (hi_i - lo_i >= 2) {
                memmove(&bounds[j + 1], &bounds[j], (size_t)(parts - j) * sizeof *bounds);
                bounds[j] = hi_i - 1;
                break;
            }
        }
        parts++;
    }
    bounds[p] = n;
    return AS_OK;
}
