/* report.c -- what a simulation found, for people (text) and programs (JSON).
 *
 * Text: iteration time, throughput, bubble fraction, one row per device
 * (compute, communication and idle seconds, peak memory with its OOM flag)
 * and the critical path: the chain of events, from the start to the
 * last-finishing event, each of which started when its predecessor in the
 * chain ended (same stream, an input's producer, or the last participant
 * of a collective to arrive).  JSON carries the same fields with SI units
 * in a stable key order.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sim_internal.h"

#define REPORT_PATH_SHOWN 20  /* critical-path rows in the text report unless verbose */
#define REPORT_PATH_JSON 1000 /* critical-path entries in JSON */

static const char *const why_names[] = {"start", "stream", "data", "sync"};

/* "compute", "all-reduce", ... */
static const char *
report_kind(const as_sim_prog *p, size_t e)
{
    const sim_event *ev = &p->ev.v[e];

    return ev->kind == AS_SIM_COMPUTE ? "compute" : as_coll_name((as_coll)ev->coll);
}

/* Seconds of the critical path spent in compute and in communication. */
static void
report_path_split(const as_sim_prog *p, const as_sim_result *r, double *comp, double *comm)
{
    size_t i;

    *comp = *comm = 0;
    for (i = 0; i < r->ncrit; i++) {
        int32_t e = r->crit[i];
        double d = r->end[e] - r->start[e];

        if (p->ev.v[e].kind == AS_SIM_COMPUTE)
            *comp += d;
        else
            *comm += d;
    }
}

void
as_sim_report_text(const as_sim_prog *p, const as_sim_result *r, int verbose, FILE *fp)
{
    char b1[32], b2[32];
    double comp, comm;
    size_t i, shown;
    int d, noom = 0;

    fprintf(fp, "program %s: %zu events on %d devices (hw %s, cost model %s, overlap %s)\n",
            p->name, r->nevents, r->ndevices, r->hw, r->model, r->overlap ? "on" : "off");
    if (r->nexplicit < r->ndevices)
        fprintf(fp, "symmetry         %d of %d devices simulated explicitly, the others mirror "
                "them\n", r->nexplicit, r->ndevices);
    fprintf(fp, "iteration time   %.6g s\n", r->time);
    if (r->throughput > 0)
        fprintf(fp, "throughput       %.6g samples/s\n", r->throughput);
    fprintf(fp, "bubble fraction  %.6g\n", r->bubble);
    fprintf(fp, "capacity         %s per device\n", as_fmt_bytes(r->capacity, b1, sizeof b1));
    fprintf(fp, "\n%6s %12s %12s %12s %12s %12s %s\n", "device", "compute_s", "comm_s", "idle_s",
            "resident", "peak", "");
    for (d = 0; d < r->ndevices; d++) {
        const as_sim_dev_stats *s = &r->dev[d];

        fprintf(fp, "%6d %12.6g %12.6g %12.6g %12s %12s%s\n", d, s->compute, s->comm, s->idle,
                as_fmt_bytes(s->resident, b1, sizeof b1), as_fmt_bytes(s->peak, b2, sizeof b2),
                s->oom ? " OOM" : "");
        noom += s->oom;
    }
    if (noom > 0)
        fprintf(fp, "out of memory on %d of %d devices\n", noom, r->ndevices);
    report_path_split(p, r, &comp, &comm);
    fprintf(fp, "\ncritical path: %zu events, %.6g s compute, %.6g s communication\n", r->ncrit,
            comp, comm);
    shown = verbose || r->ncrit <= REPORT_PATH_SHOWN ? r->ncrit : REPORT_PATH_SHOWN;
    for (i = r->ncrit - shown; i < r->ncrit; i++) {
        int32_t e = r->crit[i];
        const sim_event *ev = &p->ev.v[e];

        fprintf(fp, "  %12.6g %12.6g  %-14s %-16s dev %d%s  line %d  (%s)\n", r->start[e],
                r->end[e], report_kind(p, (size_t)e),
                ev->label >= 0 ? p->labels.v + ev->label : "-", p->devs.v[ev->dev_off],
                ev->ndev > 1 ? "+" : "", ev->line, why_names[r->crit_why[i]]);
    }
    if (shown < r->ncrit)
        fprintf(fp, "  (%zu earlier events not shown; -v shows all)\n", r->ncrit - shown);
    if (verbose)
        fprintf(fp, "\ncost cache: %zu hits, %zu distinct signatures costed; %zu buffers; "
                    "simulated in %.3g s\n",
                r->cost_hits, r->cost_misses, r->nbuffers, r->wall);
}

/* The critical path as a JSON array (at most REPORT_PATH_JSON, the last ones). */
static json_t *
report_json_path(const as_sim_prog *p, const as_sim_result *r)
{
    json_t *a = json_array();
    size_t i = r->ncrit > REPORT_PATH_JSON ? r->ncrit - REPORT_PATH_JSON : 0;

    for (; i < r->ncrit; i++) {
        int32_t e = r->crit[i];
        const sim_event *ev = &p->ev.v[e];
        json_t *o = json_object(), *devs = json_array();
        uint32_t k;

        for (k = 0; k < ev->ndev; k++)
            json_array_append_new(devs, json_integer(p->devs.v[ev->dev_off + k]));
        json_object_set_new(o, "event", json_integer(e));
        json_object_set_new(o, "line", json_integer(ev->line));
        json_object_set_new(o, "label", json_string(ev->label >= 0 ? p->labels.v + ev->label : ""));
        json_object_set_new(o, "kind", json_string(report_kind(p, (size_t)e)));
        json_object_set_new(o, "devices", devs);
        json_object_set_new(o, "start", json_real(r->start[e]));
        json_object_set_new(o, "end", json_real(r->end[e]));
        json_object_set_new(o, "why", json_string(why_names[r->crit_why[i]]));
        json_array_append_new(a, o);
    }
    return a;
}

int
as_sim_report_json(const as_sim_prog *p, const as_sim_result *r, FILE *fp, as_err *err)
{
    json_t *root = json_object(), *devs = json_array(), *cp = json_object(), *cache;
    double comp, comm;
    char *s;
    int d;

    json_object_set_new(root, "program", json_string(p->name));
    json_object_set_new(root, "devices", json_integer(r->ndevices));
    json_object_set_new(root, "events", json_integer((json_int_t)r->nevents));
    json_object_set_new(root, "explicit_devices", json_integer(r->nexplicit));
    json_object_set_new(root, "hw", json_string(r->hw));
    json_object_set_new(root, "cost_model", json_string(r->model));
    json_object_set_new(root, "overlap", json_boolean(r->overlap));
    json_object_set_new(root, "time", json_real(r->time));
    json_object_set_new(root, "throughput", json_real(r->throughput));
    json_object_set_new(root, "bubble", json_real(r->bubble));
    json_object_set_new(root, "capacity", json_real(r->capacity));
    for (d = 0; d < r->ndevices; d++) {
        json_t *o = json_object();

        json_object_set_new(o, "device", json_integer(d));
        json_object_set_new(o, "compute", json_real(r->dev[d].compute));
        json_object_set_new(o, "comm", json_real(r->dev[d].comm));
        json_object_set_new(o, "idle", json_real(r->dev[d].idle));
        json_object_set_new(o, "resident", json_real(r->dev[d].resident));
        json_object_set_new(o, "peak_memory", json_real(r->dev[d].peak));
        json_object_set_new(o, "peak_time", json_real(r->dev[d].peak_time));
        json_object_set_new(o, "oom", json_boolean(r->dev[d].oom));
        json_array_append_new(devs, o);
    }
    json_object_set_new(root, "per_device", devs);
    report_path_split(p, r, &comp, &comm);
    json_object_set_new(cp, "events", json_integer((json_int_t)r->ncrit));
    json_object_set_new(cp, "compute", json_real(comp));
    json_object_set_new(cp, "comm", json_real(comm));
    json_object_set_new(cp, "path", report_json_path(p, r));
    json_object_set_new(root, "critical_path", cp);
    cache = json_object();
    json_object_set_new(cache, "hits", json_integer((json_int_t)r->cost_hits));
    json_object_set_new(cache, "misses", json_integer((json_int_t)r->cost_misses));
    json_object_set_new(root, "cost_cache", cache);
    s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(root);
    if (s == NULL)
        return as_errf(err, AS_EINTERNAL, "cannot encode the report as JSON");
    fprintf(fp, "%s\n", s);
    free(s);
    if (fflush(fp) != 0 || ferror(fp))
        return as_errf(err, AS_EIO, "cannot write the report");
    return AS_OK;
}
