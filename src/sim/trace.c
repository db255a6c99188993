/* trace.c -- Chrome trace JSON of a simulated timeline (chrome://tracing,
 * Perfetto): one process per simulated device (mirrors share their
 * representative's), one thread per stream (compute, comm; a single
 * "stream" thread without overlap), one complete event ("ph":"X") per event
 * and device, a flow arrow from each send's source to its destination, and
 * a "memory" counter track per device (bytes in use over time, resident
 * included).  Times are whole nanoseconds written as microseconds with
 * three decimals: start and end are rounded, the duration is their
 * difference, so events of one thread that follow each other in the
 * simulation never overlap in the trace.  Labels carry the microbatch
 * ("h.0.mlp/m3", "F1.3").  The file is built in memory and written
 * atomically.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

typedef AS_VEC(char) trace_buf;

static void __attribute__((format(printf, 2, 3)))
trace_printf(trace_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    AS_VEC_RESERVE(b, b->n + 256);
    va_start(ap, fmt);
    n = vsnprintf(b->v + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= b->cap - b->n) {
        AS_VEC_RESERVE(b, b->n + (size_t)n + 1);
        va_start(ap, fmt);
        n = vsnprintf(b->v + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
    }
    if (n > 0)
        b->n += (size_t)n;
}

/* Whole nanoseconds of T seconds. */
static long long
trace_ns(double t)
{
    return llround(t * 1e9);
}

/* Append NS nanoseconds as microseconds with three decimals. */
static void
trace_us(trace_buf *b, const char *key, long long ns)
{
    trace_printf(b, ",\"%s\":%lld.%03lld", key, ns / 1000, ns % 1000);
}

typedef struct trace_mem {
    trace_buf *b;
    const as_sim_prog *p;
} trace_mem;

/* Memory counter: one "C" sample per change (the last one at a time wins in viewers). */
static void
trace_mem_cb(void *ud, int dev, double t, double bytes)
{
    trace_mem *m = ud;
    long long ns = trace_ns(t);

    if (as_sim_i_rep(m->p, dev) != dev)
        return;
    trace_printf(m->b, ",\n{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d", dev);
    trace_us(m->b, "ts", ns);
    trace_printf(m->b, ",\"args\":{\"bytes\":%.17g}}", bytes);
}

int
as_sim_trace_write(const as_sim_prog *p, const as_sim_result *r, const char *path, as_err *err)
{
    static const char *const tnames[] = {"compute", "comm"};
    trace_buf b = {0};
    trace_mem tm;
    as_sim_dev_stats *dev;
    size_t e, nb;
    uint32_t k;
    int d, s, rc, first = 1, *nmir = as_xcalloc((size_t)r->ndevices + 1, sizeof *nmir);

    trace_printf(&b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    for (d = 0; d < r->ndevices; d++)
        if (as_sim_i_rep(p, d) != d)
            nmir[as_sim_i_rep(p, d)]++;
    for (d = 0; d < r->ndevices; d++) {
        if (as_sim_i_rep(p, d) != d)
            continue; /* a mirror's timeline is its representative's */
        if (nmir[d] > 0)
            trace_printf(&b, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                             "\"args\":{\"name\":\"device %d (and %d mirrors)\"}}",
                         first ? "" : ",\n", d, d, nmir[d]);
        else
            trace_printf(&b, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                             "\"args\":{\"name\":\"device %d\"}}",
                         first ? "" : ",\n", d, d);
        first = 0;
        for (s = 0; s < (r->overlap ? 2 : 1); s++)
            trace_printf(&b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                             "\"args\":{\"name\":\"%s\"}}",
                         d, s, r->overlap ? tnames[s] : "stream");
    }
    for (e = 0; e < p->ev.n; e++) {
        const sim_event *ev = &p->ev.v[e];
        const char *kind = ev->kind == AS_SIM_COMPUTE ? "compute" : as_coll_name((as_coll)ev->coll);
        const char *name = ev->label >= 0 ? p->labels.v + ev->label : kind;
        long long t0 = trace_ns(r->start[e]), t1 = trace_ns(r->end[e]);
        int tid = r->overlap ? ev->stream : 0;

        for (k = 0; k < ev->ndev; k++) {
            int dv = p->devs.v[ev->dev_off + k];
            if (as_sim_i_rep(p, dv) != dv)
                continue;
            trace_printf(&b, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,"
                             "\"tid\":%d", name, kind, dv, tid);
            trace_us(&b, "ts", t0);
            trace_us(&b, "dur", t1 - t0);
            trace_printf(&b, ",\"args\":{\"event\":%zu,\"line\":%d}}", e, ev->line);
        }
        if (ev->kind == AS_SIM_SEND) { /* a flow arrow from the source to the destination */
            int src = p->devs.v[ev->dev_off], dst = p->devs.v[ev->dev_off + 1];
            trace_printf(&b, ",\n{\"name\":\"%s\",\"cat\":\"send\",\"ph\":\"s\",\"id\":%zu,"
                             "\"pid\":%d,\"tid\":%d", name, e, src, tid);
            trace_us(&b, "ts", t0);
            trace_printf(&b, "},\n{\"name\":\"%s\",\"cat\":\"send\",\"ph\":\"f\",\"bp\":\"e\","
                             "\"id\":%zu,\"pid\":%d,\"tid\":%d", name, e, dst, tid);
            trace_us(&b, "ts", t0);
            trace_printf(&b, "}");
        }
    }
    /* memory over time: the memory model again, reporting every change */
    dev = as_xcalloc((size_t)r->ndevices + 1, sizeof *dev);
    memset(&tm, 0, sizeof tm);
    tm.b = &b;
    tm.p = p;
    as_sim_i_memory_cb(p, r->start, r->end, r->capacity, dev, &nb, trace_mem_cb, &tm);
    free(dev);
    free(nmir);
    trace_printf(&b, "\n]}\n");
    rc = as_write_file_atomic(path, b.v, b.n, err);
    AS_VEC_FREE(&b);
    return rc;
}
