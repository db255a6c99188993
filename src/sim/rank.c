/* rank.c -- validate and re-rank solver plans with the simulator.
 *
 * Each plan is lowered and simulated; the table lists the plans in the
 * solver's order (objective) beside the simulator's order (iteration time,
 * plans that fit in memory before those that do not), marks OOM plans,
 * and gives Spearman's rho and Kendall's tau-b between objective and
 * simulated time, and how much faster the simulator's best plan is than
 * the solver's best.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lower.h"

/* Average ranks (1-based) of X[0..N) into R. */
static void
rank_avg(const double *x, size_t n, double *r)
{
    size_t *idx = as_xmalloc((n ? n : 1) * sizeof *idx), i, j, k;

    for (i = 0; i < n; i++)
        idx[i] = i;
    for (i = 1; i < n; i++) { /* insertion sort: K is small */
        size_t v = idx[i];
        for (j = i; j > 0 && x[idx[j - 1]] > x[v]; j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && x[idx[j]] == x[idx[i]]; j++)
            ;
        for (k = i; k < j; k++)
            r[idx[k]] = (double)(i + j + 1) / 2.0;
    }
    free(idx);
}

double
as_rank_spearman(const double *x, const double *y, size_t n)
{
    double *rx, *ry, mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    size_t i;

    if (n < 2)
        return NAN;
    rx = as_xmalloc(n * sizeof *rx);
    ry = as_xmalloc(n * sizeof *ry);
    rank_avg(x, n, rx);
    rank_avg(y, n, ry);
    for (i = 0; i < n; i++) {
        mx += rx[i];
        my += ry[i];
    }
    mx /= (double)n;
    my /= (double)n;
    for (i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx);
    free(ry);
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN; /* an order of all ties */
}

double
as_rank_kendall(const double *x, const double *y, size_t n)
{
    double conc = 0, disc = 0, tx = 0, ty = 0, n0;
    size_t i, j;

    if (n < 2)
        return NAN;
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n; j++) {
            double a = x[i] - x[j], b = y[i] - y[j];
            if (a == 0 && b == 0)
                continue;
            if (a == 0)
                tx++;
            else if (b == 0)
                ty++;
            else if ((a > 0) == (b > 0))
                conc++;
            else
                disc++;
        }
    n0 = conc + disc;
    if (n0 + tx <= 0 || n0 + ty <= 0) /* an order of all ties */
        return NAN;
    return (conc - disc) / sqrt((n0 + tx) * (n0 + ty));
}

void
as_rank_result_free(as_rank_result *r)
{
    if (r == NULL)
        return;
    free(r->e);
    r->e = NULL;
    r->n = 0;
}

/* Order of plans by simulated time, fitting plans first. */
static int
rank_sim_less(const as_rank_entry *a, const as_rank_entry *b)
{
    if (a->oom != b->oom)
        return a->oom < b->oom;
    return a->time < b->time;
}

void
as_rank_print(const as_rank_result *r, FILE *out)
{
    size_t *so = as_xmalloc((r->n ? r->n : 1) * sizeof *so), *ss = as_xmalloc((r->n ? r->n : 1) *
                                                                            sizeof *ss), i;

    for (i = 0; i < r->n; i++) {
        so[r->e[i].solver_rank - 1] = i;
        ss[r->e[i].sim_rank - 1] = i;
    }
    fprintf(out, "%-4s  %-24s %12s %12s %10s    %-24s %12s %10s %4s\n", "rank", "solver order",
            "objective", "sim time", "peak GiB", "simulator order", "sim time", "peak GiB", "");
    for (i = 0; i < r->n; i++) {
        const as_rank_entry *a = &r->e[so[i]], *b = &r->e[ss[i]];
        fprintf(out, "%-4zu  %-24.24s %12.6g %12.6g %10.3f%s   %-24.24s %12.6g %10.3f %s\n",
                i + 1, a->name, a->objective, a->time, a->peak / 1073741824.0, a->oom ? "!" : " ",
                b->name, b->time, b->peak / 1073741824.0, b->oom ? "OOM" : "");
    }
    {
        char rho[32] = "undefined", tau[32] = "undefined"; /* an order of all ties */
        if (isfinite(r->spearman))
            snprintf(rho, sizeof rho, "%.4f", r->spearman);
        if (isfinite(r->kendall))
            snprintf(tau, sizeof tau, "%.4f", r->kendall);
        fprintf(out, "spearman rho %s, kendall tau %s over %zu plans\n", rho, tau, r->n);
    }
    if (r->best_sim < 0)
        fprintf(out, "no plan fits in memory\n");
    else if (r->best_sim == r->best_solver)
        fprintf(out, "the solver's best plan '%s' is also the simulator's best (%.6g s)\n",
                r->e[r->best_sim].name, r->e[r->best_sim].time);
    else
        fprintf(out, "the simulator's best '%s' (%.6g s) beats the solver's best '%s' (%.6g s%s) "
                "by %.1f%%\n", r->e[r->best_sim].name, r->e[r->best_sim].time,
                r->e[r->best_solver].name, r->e[r->best_solver].time,
                r->e[r->best_solver].oom ? ", OOM" : "", 100.0 * r->gain);
    free(so);
    free(ss);
}

int
as_sim_rank_plans(const as_graph *g, const as_shard_plan *const *plans,
                  const char *const *names, const double *objectives, size_t k,
                  const as_lower_opts *lo, const as_sim_opts *so, FILE *out,
                  as_rank_result *res, as_err *err)
{
    as_rank_result r;
    as_lower_opts o;
    double *x, *y;
    size_t i, j;
    int rc = AS_OK, d;

    memset(&r, 0, sizeof r);
    if (k == 0)
        return as_errf(err, AS_EUSAGE, "no plans to rank");
    if (lo != NULL)
        o = *lo;
    else
        as_lower_opts_init(&o);
    r.n = k;
    r.e = as_xcalloc(k, sizeof *r.e);
    for (i = 0; i < k && rc == AS_OK; i++) {
        as_sim_result *sr = NULL;
        as_rank_entry *e = &r.e[i];

        e->name = names ? names[i] : plans[i]->graph;
        e->objective = objectives ? objectives[i] : plans[i]->objective;
        o.plan_name = e->name;
        if ((rc = as_sim_plan(g, plans[i], &o, so, &sr, NULL, err)) != AS_OK)
            break;
        e->time = sr->time;
        for (d = 0; d < sr->ndevices; d++) {
            if (sr->dev[d].peak > e->peak)
                e->peak = sr->dev[d].peak;
            e->oom |= sr->dev[d].oom;
        }
        as_sim_result_free(sr);
    }
    if (rc != AS_OK) {
        free(r.e);
        return rc;
    }
    for (i = 0; i < k; i++) {
        r.e[i].solver_rank = 1;
        r.e[i].sim_rank = 1;
        for (j = 0; j < k; j++) {
            if (j == i)
                continue;
            if (r.e[j].objective < r.e[i].objective ||
                (r.e[j].objective == r.e[i].objective && j < i))
                r.e[i].solver_rank++;
            if (rank_sim_less(&r.e[j], &r.e[i]) ||
                (!rank_sim_less(&r.e[i], &r.e[j]) && j < i))
                r.e[i].sim_rank++;
        }
        if (r.e[i].solver_rank == 1)
            r.best_solver = (int)i;
    }
    r.best_sim = -1;
    for (i = 0; i < k; i++)
        if (r.e[i].sim_rank == 1 && !r.e[i].oom)
            r.best_sim = (int)i;
    x = as_xmalloc(k * sizeof *x);
    y = as_xmalloc(k * sizeof *y);
    for (i = 0; i < k; i++) {
        x[i] = r.e[i].objective;
        y[i] = r.e[i].time;
    }
    r.spearman = as_rank_spearman(x, y, k);
    r.kendall = as_rank_kendall(x, y, k);
    free(x);
    free(y);
    if (r.best_sim >= 0 && r.best_sim != r.best_solver && r.e[r.best_sim].time > 0)
        r.gain = r.e[r.best_solver].time / r.e[r.best_sim].time - 1;
    if (out != NULL)
        as_rank_print(&r, out);
    if (res != NULL)
        *res = r;
    else
        free(r.e);
    return AS_OK;
}

static json_t *
num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *
as_rank_json(const as_rank_result *r)
{
    json_t *o = json_object(), *a = json_array();
    size_t i;

    for (i = 0; i < r->n; i++) {
        const as_rank_entry *e = &r->e[i];
        json_array_append_new(a, json_pack("{s:s,s:o,s:o,s:o,s:b,s:i,s:i}", "name", e->name,
                                           "objective", num_or_null(e->objective), "time",
                                           num_or_null(e->time), "peak", num_or_null(e->peak),
                                           "oom", e->oom, "solver_rank", e->solver_rank,
                                           "sim_rank", e->sim_rank));
    }
    json_object_set_new(o, "plans", a);
    json_object_set_new(o, "spearman", num_or_null(r->spearman));
    json_object_set_new(o, "kendall", num_or_null(r->kendall));
    json_object_set_new(o, "solver_best", json_string(r->e[r->best_solver].name));
    json_object_set_new(o, "simulator_best", r->best_sim >= 0 ? json_string(r->e[r->best_sim].name)
                                                              : json_null());
    json_object_set_new(o, "gain", r->best_sim >= 0 ? json_real(r->gain) : json_null());
    return o;
}
