/* cmd_train.c -- training-step options of `solve` (see cmd_train.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_train.h"

int
as_train_cli_micro(as_train_cli *t, const char *arg)
{
    return as_cmd_count_opt(&as_cmd_solve, "microbatches", arg, &t->micro);
}

int
as_train_cli_recompute(const struct as_cmd *cmd, as_recompute *m, const char *arg)
{
    if (!as_recompute_parse(arg, m))
        return as_cmd_usage(cmd, "--recompute must be none, full, selective or auto, got '%s'",
                            arg);
    return AS_EXIT_OK;
}

int
as_train_apply_recompute(as_recompute m, const char *layers, as_graph **g, as_err *err)
{
    as_graph *r = NULL;
    int n = 0;

    if (m == AS_RECOMPUTE_NONE || (m == AS_RECOMPUTE_AUTO && (layers == NULL || !*layers)))
        return AS_OK;
    AS_CHECK(as_graph_recompute(*g, m, m == AS_RECOMPUTE_AUTO ? layers : NULL, &r, &n, err));
    as_debug("--recompute %s: %d layers, %d ops (was %d)", as_recompute_name(m), n,
             (int)as_graph_nops(r), (int)as_graph_nops(*g));
    as_graph_free(*g);
    *g = r;
    return AS_OK;
}

int
as_train_cli_graph(as_train_cli *t, as_graph **g, as_build_opts *build, as_err *err)
{
    int *mbdim;
    as_graph *m = NULL;
    int rc;

    AS_CHECK(as_train_apply_recompute(t->recompute, t->layers, g, err));
    if (t->micro <= 1)
        return AS_OK;
    mbdim = as_xmalloc(((size_t)as_graph_ntensors(*g) + 1) * sizeof *mbdim);
    rc = as_sim_microbatch_dims(*g, t->micro, mbdim, err);
    if (rc == AS_OK)
        rc = as_graph_microbatch(*g, t->micro, mbdim, &m, err);
    free(mbdim);
    if (rc != AS_OK) {
        as_err_prefix(err, "--microbatches %d: ", t->micro);
        return rc;
    }
    t->full = *g;
    *g = m;
    build->microbatches = t->micro;
    return AS_OK;
}

const as_graph *
as_train_cli_lower_graph(const as_train_cli *t, const as_graph *g)
{
    return t->full != NULL ? t->full : g;
}

void
as_train_cli_lower_opts(const as_train_cli *t, as_lower_opts *lo)
{
    if (t->micro > 1)
        lo->nmicro = t->micro;
}

void
as_train_cli_plan(const as_train_cli *t, as_shard_plan *pl)
{
    size_t i;

    if (t->micro > 1 || t->recompute != AS_RECOMPUTE_NONE) /* the step, for simulate */
        as_shard_plan_set_step(pl, 0, t->micro > 1 ? t->micro : 1, NULL,
                               as_recompute_name(t->recompute), NULL, NULL);
    if (t->recompute == AS_RECOMPUTE_AUTO)
        pl->recompute_layers = as_shard_plan_strdup(pl, t->layers);
    if (t->full == NULL)
        return;
    for (i = 0; i < pl->ntensors; i++) {
        int32_t id = as_graph_find(t->full, pl->tensors[i].name);
        if (id >= 0)
            pl->tensors[i].shape = as_graph_tensor(t->full, id)->shape;
    }
}

int
as_train_plan_recompute(const as_shard_plan *plan, const char *pname, int given,
                        as_recompute *m, const char **layers, as_err *err)
{
    as_recompute pm;

    if (!*plan->recompute || !as_recompute_parse(plan->recompute, &pm)) {
        if (*m == AS_RECOMPUTE_AUTO)
            return as_errf(err, AS_EUSAGE, "--recompute auto: plan '%s' does not record the "
                           "layers it recomputes (solve it with --recompute auto)", pname);
        return AS_OK;
    }
    if (given && pm != *m)
        return as_errf(err, AS_EUSAGE, "plan '%s' was solved for --recompute %s, not %s", pname,
                       plan->recompute, as_recompute_name(*m));
    if (pm == AS_RECOMPUTE_AUTO) {
        if (given && *layers != NULL && strcmp(*layers, plan->recompute_layers) != 0)
            return as_errf(err, AS_EUSAGE, "plan '%s' recomputes layers '%s', not '%s' as the "
                           "plans before it", pname, plan->recompute_layers, *layers);
        *layers = plan->recompute_layers;
    }
    *m = pm;
    return AS_OK;
}

void
as_train_cli_free(as_train_cli *t)
{
    as_graph_free(t->full);
    t->full = NULL;
    free(t->layers);
    t->layers = NULL;
}
