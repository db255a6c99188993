/* cmd_pipeline.c -- `solve --pipeline P`: wiring between the stage split
 * (formulate/pipeline.h), the per-stage problems (formulate/build.h), the
 * solver and the simulator's memory count (sim/lower.h).  See docs/solve.md
 * "Pipelines".
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_train.h"
#include "formulate/pipeline.h"

/* Re-solves of a stage whose simulated peak exceeds the budget (as solve_fit). */
#define PIPE_FIT_ROUNDS 8

int
as_train_cli_pipeline(as_train_cli *t, const char *opt, const char *arg)
{
    as_sim_sched s;

    if (strcmp(opt, "pipeline") == 0)
        return as_cmd_count_opt(&as_cmd_solve, "pipeline", arg, &t->pipeline);
    if (strcmp(opt, "stages") == 0) {
        t->stages = arg;
        return AS_EXIT_OK;
    }
    if (!as_sim_sched_parse(arg, &s))
        return as_cmd_usage(&as_cmd_solve, "--schedule must be gpipe or 1f1b, got '%s'", arg);
    t->schedule = arg;
    return AS_EXIT_OK;
}

typedef struct pipe_state {
    as_train_cli *t;
    const as_pipe_cli *c;
    as_graph *g;             /* the whole step (recomputation applied) */
    as_graph *m;             /* one microbatch's (== g when K = 1) */
    int np, k, nunits;
    as_sim_sched sched;
    int *unit, *tunit, *count, *stage, *tstage, *mbdim;
    as_graph_problem *gp;    /* [np] */
    as_solve_result *res;    /* [np] */
    double *budget, *rb;     /* [np] the stage's budget, its rows' budget */
    double *rows, *peak;     /* [np] ILP rows' peak, simulated peak per device */
    as_sim_result *sim;
    as_shard_plan *plan;
} pipe_state;

/* Name of unit U ("h.3"): the layer key of its first forward op with one. */
static void
unit_name(const pipe_state *S, int u, char *buf, size_t n)
{
    int32_t o;

    snprintf(buf, n, "#%d", u);
    for (o = 0; o < as_graph_nops(S->g); o++) {
        const char *name = as_graph_op(S->g, o)->name, *p = name;
        if (S->unit[o] != u || as_pipe_role(S->g, o) != AS_PIPE_FWD)
            continue;
        /* the first "SEG.N." */
        while ((p = strchr(p, '.')) != NULL) {
            const char *q = p + 1;
            while (*q >= '0' && *q <= '9')
                q++;
            if (q > p + 1 && *q == '.' && p > name) {
                const char *seg = p;
                while (seg > name && seg[-1] != '.')
                    seg--;
                snprintf(buf, n, "%.*s", (int)(q - seg), seg);
                return;
            }
            p++;
        }
    }
}

/* Microbatches whose activations stage S holds at once: 1F1B min(K, P - s), GPipe K. */
static int
pipe_inflight(const pipe_state *S, int s)
{
    return as_pipe_inflight(S->np, S->k, s, S->sched == AS_SIM_GPIPE);
}

/* Solve stage S's problem with its rows' budget; AS_EXIT_* (message printed). */
static int
pipe_solve_stage(pipe_state *S, int s)
{
    as_solve_opts o = *S->c->o;
    as_err err = {0};
    char b1[32], b2[32];

    if (o.lim.time_limit_s > 0) {
        o.lim.time_limit_s -= as_now() - S->c->t_start;
        if (o.lim.time_limit_s <= 0) {
            fprintf(stderr, "autoshard: time limit (%g s) reached before stage %d was solved\n",
                    S->c->o->lim.time_limit_s, s);
            return AS_EXIT_RUNTIME;
        }
    }
    o.top = 1;
    as_solve_result_free(&S->res[s]);
    as_problem_set_memory(S->gp[s].p, S->rb[s]);
    if (as_solve_problem(S->gp[s].p, &o, &S->res[s], &err) != AS_OK)
        return as_cmd_fail(&err);
    as_problem_set_memory(S->gp[s].p, S->budget[s]);
    if (S->res[s].nplans == 0) {
        if (S->res[s].outcome == AS_OUTCOME_INFEASIBLE)
            fprintf(stderr, "autoshard: stage %d: no plan fits in %s per device (the ILP's rows "
                    "at %s, %d microbatches in flight)\n", s,
                    as_fmt_bytes(S->budget[s], b1, sizeof b1), as_fmt_bytes(S->rb[s], b2,
                                                                               sizeof b2),
                    pipe_inflight(S, s));
        else
            fprintf(stderr, "autoshard: stage %d: the solver found no plan in time\n", s);
        return S->res[s].outcome == AS_OUTCOME_INFEASIBLE ? AS_EXIT_INFEAS : AS_EXIT_RUNTIME;
    }
    S->rows[s] = S->res[s].plans[0].peak;
    return AS_EXIT_OK;
}

/* Merge the stage plans and simulate the whole pipeline: S->plan, S->sim, S->peak. */
static int
pipe_merge_sim(pipe_state *S, as_err *err)
{
    as_shard_plan **sp = as_xcalloc((size_t)S->np, sizeof *sp);
    double *tt = as_xcalloc((size_t)S->np, sizeof *tt);
    int s, rc = AS_OK;

    for (s = 0; s < S->np && rc == AS_OK; s++) {
        const as_plan *pl = &S->res[s].plans[0];
        as_plan_source src = {S->c->o->solver, as_outcome_name(pl->status), pl->objective,
                              pl->bound, pl->peak};
        rc = as_plan_from_choice(S->gp[s].map, pl->choice, &src, &sp[s], err);
        tt[s] = pl->objective;
    }
    if (rc == AS_OK)
        rc = as_sim_pipeline_plan(S->g, S->stage, S->tstage, sp, tt, S->np, S->k, S->sched,
                                  as_recompute_name(S->t->recompute), S->count,
                                  S->c->setup->hw, &S->plan, &S->sim, S->peak, NULL, err);
    for (s = 0; s < S->np; s++)
        as_shard_plan_free(sp[s]);
    free(sp);
    free(tt);
    return rc;
}

/* Split, build and solve every stage, then fit the simulated peaks; AS_EXIT_*. */
static int
pipe_run(pipe_state *S)
{
    const as_pipe_cli *c = S->c;
    FILE *fp = c->fp;
    as_err err = {0};
    double *cost;
    int s, u, round, rc;
    int32_t o;
    char b1[32], b2[32], b3[32], n1[64], n2[64];

    S->unit = as_xmalloc(((size_t)as_graph_nops(S->g) + 1) * sizeof *S->unit);
    S->tunit = as_xmalloc(((size_t)as_graph_ntensors(S->g) + 1) * sizeof *S->tunit);
    S->stage = as_xmalloc(((size_t)as_graph_nops(S->g) + 1) * sizeof *S->stage);
    S->tstage = as_xmalloc(((size_t)as_graph_ntensors(S->g) + 1) * sizeof *S->tstage);
    S->mbdim = as_xmalloc(((size_t)as_graph_ntensors(S->g) + 1) * sizeof *S->mbdim);
    S->count = as_xcalloc((size_t)S->np + 1, sizeof *S->count);
    as_pipe_units(S->g, 1, S->unit, S->tunit, &S->nunits);
    if (S->nunits == 0) {
        fprintf(stderr, "autoshard: --pipeline %d: graph '%s' has no layers (ops named SEG.N..., "
                "e.g. h.3.mlp.fc1) to cut into stages\n", S->np, as_graph_name(S->g));
        return AS_EXIT_USAGE;
    }
    if (S->np > S->nunits) {
        fprintf(stderr, "autoshard: --pipeline %d: graph '%s' has only %d layers (a stage needs "
                "at least one)\n", S->np, as_graph_name(S->g), S->nunits);
        return AS_EXIT_USAGE;
    }
    if (S->t->stages != NULL) {
        if (as_pipe_parse_stages(S->t->stages, S->np, S->nunits, S->count, &err) != AS_OK)
            return as_cmd_fail(&err);
    } else {
        cost = as_xcalloc((size_t)S->nunits, sizeof *cost);
        as_pipe_unit_flops(S->g, S->unit, S->nunits, cost);
        as_pipe_balance(cost, S->nunits, S->np, S->count);
        free(cost);
    }
    as_pipe_stages(S->g, S->unit, S->tunit, S->np, S->count, S->stage, S->tstage);
    /* microbatch shapes, by the lowering's rule */
    if (as_sim_microbatch_dims(S->g, S->k, S->mbdim, &err) != AS_OK) {
        as_err_prefix(&err, "--microbatches %d: ", S->k);
        return as_cmd_fail(&err);
    }
    if (S->k > 1) {
        if (as_graph_microbatch(S->g, S->k, S->mbdim, &S->m, &err) != AS_OK) {
            as_err_prefix(&err, "--microbatches %d: ", S->k);
            return as_cmd_fail(&err);
        }
    }
    fprintf(fp, "%-13s%s (%s): %d ops, %d tensors, %d layers\n", "graph", as_graph_name(S->g),
            c->path, as_graph_nops(S->g), as_graph_ntensors(S->g), S->nunits);
    fprintf(fp, "%-13s%d stages x mesh %s, %d microbatches, %s, recompute %s\n", "pipeline",
            S->np, c->setup->mesh, S->k, as_sim_sched_name(S->sched),
            as_recompute_name(S->t->recompute));
    fprintf(fp, "%-13s", "split");
    for (s = 0, u = 0; s < S->np; s++) {
        unit_name(S, u, n1, sizeof n1);
        unit_name(S, u + S->count[s] - 1, n2, sizeof n2);
        fprintf(fp, "%s%s..%s (%d)", s ? " | " : "", n1, n2, S->count[s]);
        u += S->count[s];
    }
    fprintf(fp, "%s\n", S->t->stages != NULL ? " (--stages)" : " (balanced by FLOPs)");
    fflush(fp);
    /* one problem per stage */
    S->gp = as_xcalloc((size_t)S->np, sizeof *S->gp);
    S->res = as_xcalloc((size_t)S->np, sizeof *S->res);
    S->budget = as_xcalloc((size_t)S->np, sizeof *S->budget);
    S->rb = as_xcalloc((size_t)S->np, sizeof *S->rb);
    S->rows = as_xcalloc((size_t)S->np, sizeof *S->rows);
    S->peak = as_xcalloc((size_t)S->np, sizeof *S->peak);
    for (s = 0; s < S->np; s++) {
        if (as_pipe_stage_problem(S->m != NULL ? S->m : S->g, S->stage, s, S->mbdim, c->setup,
                                  S->k, pipe_inflight(S, s), &S->gp[s], &err) != AS_OK)
            return as_cmd_fail(&err);
        S->budget[s] = S->rb[s] = as_problem_memory(S->gp[s].p);
        if ((rc = pipe_solve_stage(S, s)) != AS_EXIT_OK)
            return rc;
    }
    /* the simulator counts each stage's in-flight microbatches: tighten the rows of a stage
     * whose simulated peak exceeds its budget and solve it again */
    for (round = 0;; round++) {
        int over = 0;
        if (pipe_merge_sim(S, &err) != AS_OK)
            return as_cmd_fail(&err);
        for (s = 0; s < S->np; s++)
            if (S->budget[s] > 0 && S->peak[s] > S->budget[s] * (1 + 1e-9))
                over++;
        if (over == 0)
            break;
        for (s = 0; s < S->np; s++) {
            if (S->budget[s] <= 0 || S->peak[s] <= S->budget[s] * (1 + 1e-9))
                continue;
            S->rb[s] = as_pipe_refit_budget(S->rb[s], S->peak[s], S->budget[s]);
            if (round + 1 >= PIPE_FIT_ROUNDS || S->rb[s] <= 0) {
                fprintf(stderr, "autoshard: stage %d: no plan found that fits in %s per device: "
                        "with %d microbatches in flight the best plan needs %s (rows %s, "
                        "tightened to %s)\n", s, as_fmt_bytes(S->budget[s], b1, sizeof b1),
                        pipe_inflight(S, s),
                        as_fmt_bytes(S->peak[s], b2, sizeof b2),
                        as_fmt_bytes(S->rows[s], b3, sizeof b3),
                        as_fmt_bytes(S->rb[s] > 0 ? S->rb[s] : 0, b1, sizeof b1));
                return AS_EXIT_INFEAS;
            }
            fprintf(fp, "%-13sstage %d needs %s per device (rows %s); solving it again with "
                    "the rows' budget at %s\n", "refit", s,
                    as_fmt_bytes(S->peak[s], b1, sizeof b1), as_fmt_bytes(S->rows[s], b2,
                                                                          sizeof b2),
                    as_fmt_bytes(S->rb[s], b3, sizeof b3));
            if ((rc = pipe_solve_stage(S, s)) != AS_EXIT_OK)
                return rc;
        }
    }
    for (s = 0; s < S->np; s++) {
        const as_plan *pl = &S->res[s].plans[0];
        int nops = 0;
        for (o = 0; o < as_graph_nops(S->g); o++)
            nops += S->stage[o] == s;
        fprintf(fp, "stage %-7d%d layers, %d ops, devices %d..%d: %.6g s for %d microbatches "
                "(%s), peak %s per device (ILP rows %s, %d in flight)\n", s, S->count[s], nops,
                s * as_mesh_ndevices(S->gp[s].mesh), (s + 1) * as_mesh_ndevices(S->gp[s].mesh) - 1,
                pl->objective, S->k, as_outcome_name(pl->status),
                as_fmt_bytes(S->peak[s], b1, sizeof b1), as_fmt_bytes(S->rows[s], b2, sizeof b2),
                pipe_inflight(S, s));
    }
    {
        double *tt = as_xcalloc((size_t)S->np, sizeof *tt), bubble, est;
        for (s = 0; s < S->np; s++)
            tt[s] = S->res[s].plans[0].objective;
        est = as_pipe_estimate(tt, S->np, S->k, &bubble);
        free(tt);
        fprintf(fp, "%-13s%.6g s per iteration (estimate: sum of stage times / K + (K-1)/K x "
                "the slowest), bubble %.3f\n", "objective", est, bubble);
    }
    fprintf(fp, "%-13s%.6g s per iteration, bubble %.3f, peak %s per device (%s)\n",
            "simulated", S->sim->time, S->sim->bubble, as_fmt_bytes(S->plan->peak, b1, sizeof b1),
            S->sim->capacity > 0 && S->plan->peak > S->sim->capacity ? "OOM" : "fits");
    fflush(fp);
    if (c->out != NULL && as_shard_plan_write(S->plan, c->out, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (c->emit != NULL && as_shard_plan_emit(S->plan, c->emit, stdout, &err) != AS_OK)
        return as_cmd_fail(&err);
    return AS_EXIT_OK;
}

int
as_train_pipeline_solve(as_train_cli *t, as_graph *g, const as_pipe_cli *c)
{
    pipe_state S;
    as_err err = {0};
    int rc, s;

    memset(&S, 0, sizeof S);
    S.t = t;
    S.c = c;
    S.np = t->pipeline;
    S.k = t->micro > 1 ? t->micro : 1;
    S.sched = AS_SIM_1F1B;
    if (t->schedule != NULL)
        as_sim_sched_parse(t->schedule, &S.sched);
    if (as_train_apply_recompute(t->recompute, NULL, &g, &err) != AS_OK) {
        as_graph_free(g);
        return as_cmd_fail(&err);
    }
    S.g = g;
    rc = pipe_run(&S);
    for (s = 0; S.gp != NULL && s < S.np; s++) {
        as_solve_result_free(&S.res[s]);
        as_graph_problem_free(&S.gp[s]);
    }
    free(S.gp);
    free(S.res);
    free(S.budget);
    free(S.rb);
    free(S.rows);
    free(S.peak);
    free(S.unit);
    free(S.tunit);
    free(S.count);
    free(S.stage);
    free(S.tstage);
    free(S.mbdim);
    as_sim_result_free(S.sim);
    as_shard_plan_free(S.plan);
    as_graph_free(S.m);
    as_graph_free(S.g);
    return rc;
}
