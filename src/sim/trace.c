/* trace.c -- Chrome trace JSON of a simulated timeline (chrome://tracing,
 * Perfetto): one process per device, one thread per stream (compute,
 * comm; a single "stream" thread without overlap), one complete event
 * ("ph":"X", microseconds) per event and device.  A multi-device event
 * appears on every participant with the same start and end.  The file is
 * built in memory and written atomically.
 */
#include "config.h"

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

int
as_sim_trace_write(const as_sim_prog *p, const as_sim_result *r, const char *path, as_err *err)
{
    static const char *const tnames[] = {"compute", "comm"};
    trace_buf b = {0};
    size_t e;
    uint32_t k;
    int d, s, rc, first = 1;

    trace_printf(&b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    for (d = 0; d < r->ndevices; d++) {
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

        for (k = 0; k < ev->ndev; k++)
            trace_printf(&b, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,"
                             "\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,\"args\":{\"event\":%zu,"
                             "\"line\":%d}}",
                         name, kind, p->devs.v[ev->dev_off + k], r->overlap ? ev->stream : 0,
                         r->start[e] * 1e6, (r->end[e] - r->start[e]) * 1e6, e, ev->line);
    }
    trace_printf(&b, "\n]}\n");
    rc = as_write_file_atomic(path, b.v, b.n, err);
    AS_VEC_FREE(&b);
    return rc;
}
