/* sweep.c -- `autoshard sweep` (sweep.h, docs/sweep.md). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>

#include <jansson.h>
#ifdef HAVE_MPI
#include <mpi.h>
#include <time.h>
#endif

#include "formulate/build.h"
#include "formulate/ilp.h"
#include "formulate/pipeline.h"
#include "formulate/problem.h"
#include "graph/check.h"
#include "sim/lower.h"
#include "solve/solver.h"
#include "spmd/hw.h"
#include "spmd/strategy.h"
#include "sweep/sweep.h"

/* Re-solves of a stage whose simulated peak exceeds the budget (as cmd_pipeline.c). */
#define SWEEP_FIT_ROUNDS 8

void
as_sweep_opts_init(as_sweep_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_axes = 3;
    o->top = 10;
}

int
as_sweep_set_roles(as_sweep_opts *o, const char *text, as_err *err)
{
    int64_t ones[AS_MESH_MAX_AXES] = {1, 1, 1, 1};
    uint8_t role[AS_MESH_MAX_AXES];
    as_mesh *m = NULL;
    const char *c;
    int n = 1, rc;

    for (c = text; *c; c++)
        n += *c == ',';
    if (strchr(text, '=') != NULL || n > 3)
        return as_errf(err, AS_EUSAGE, "--role '%s': give one role per mesh axis in order, at "
                       "most 3 (e.g. data,tensor)", text);
    /* checked on a mesh of that many axes */
    if ((rc = as_mesh_new(n, ones, NULL, &m, err)) == AS_OK)
        rc = as_mesh_parse_roles(m, text, role, err);
    as_mesh_free(m);
    if (rc != AS_OK)
        return rc;
    o->roles = text;
    o->nroles = n;
    return AS_OK;
}

/* ---- enumeration ---- */

typedef struct meshes {
    char (*m)[64];
    size_t n, cap;
} meshes;

/* 1 if axis I of ROLES ("data,tensor") has the role data. */
static int
axis_is_data(const char *roles, int i)
{
    const char *r = roles;

    for (; r != NULL && i > 0; i--) {
        r = strchr(r, ',');
        if (r != NULL)
            r++;
    }
    return r != NULL && strncmp(r, "data", 4) == 0 && (r[4] == ',' || r[4] == '\0');
}

/*
 * Ordered factorisations of REM into at most LEFT more factors >= 2, each <=
 * TPMAX; with EXACT, into exactly LEFT more factors >= 1.  AXIS is the index
 * of the next factor; a factor on a data axis of ROLES has no TPMAX (--tp-max
 * bounds the tensor and auto axes).
 */
static void
factor_rec(meshes *ms, int rem, int left, int tpmax, const char *roles, int axis, char *prefix,
           size_t len, int exact)
{
    int f;

    if (rem == 1 && (!exact || left == 0)) {
        if (ms->n == ms->cap) {
            ms->cap = ms->cap ? 2 * ms->cap : 16;
            ms->m = as_xreallocarray(ms->m, ms->cap, sizeof *ms->m);
        }
        snprintf(ms->m[ms->n++], sizeof ms->m[0], "%.*s", (int)len, prefix);
        return;
    }
    if (left == 0)
        return;
    for (f = exact ? 1 : 2; f <= rem; f++) {
        int w;
        if (rem % f != 0 || (tpmax > 0 && f > tpmax && !axis_is_data(roles, axis)))
            continue;
        w = snprintf(prefix + len, 64 - len, "%s%d", len ? "x" : "", f);
        if (w < 0 || (size_t)w >= 64 - len)
            continue;
        factor_rec(ms, rem / f, left - 1, tpmax, roles, axis + 1, prefix, len + (size_t)w, exact);
    }
}

/* Axes of MESH ("2x4": 2). */
static int
mesh_axes(const char *mesh)
{
    int n = 1;

    for (; *mesh != '\0'; mesh++)
        n += *mesh == 'x';
    return n;
}

/* Meshes of M devices: up to MAX_AXES factors >= 2, or (NROLES > 0) exactly NROLES >= 1. */
static void
stage_meshes(int m, int max_axes, int tpmax, const char *roles, int nroles, meshes *ms)
{
    char prefix[64];
    size_t i;

    ms->n = 0;
    if (nroles > 0) {
        factor_rec(ms, m, nroles, tpmax, roles, 0, prefix, 0, 1);
        return;
    }
    if (m == 1) {
        factor_rec(ms, 1, 0, 0, NULL, 0, prefix, 0, 0);
        snprintf(ms->m[0], sizeof ms->m[0], "1");
        return;
    }
    factor_rec(ms, m, max_axes, tpmax, NULL, 0, prefix, 0, 0);
    /* fewer axes first (stable): a plan on 2x8 is a start for 2x2x4 (sibling_start), whose
       larger problem the solver may not finish within a time limit */
    for (i = 1; i < ms->n; i++) {
        char t[64];
        size_t j = i;
        memcpy(t, ms->m[i], sizeof t);
        while (j > 0 && mesh_axes(ms->m[j - 1]) > mesh_axes(t)) {
            memcpy(ms->m[j], ms->m[j - 1], sizeof t);
            j--;
        }
        memcpy(ms->m[j], t, sizeof t);
    }
}

static void
add_cfg(as_sweep_cfg **cfg, size_t *n, size_t *cap, int devices, const char *prefix, int p, int k,
        const char *mesh, as_recompute r, const char *solver, int zero, int zkey, const char *cost,
        int ckey)
{
    as_sweep_cfg *c;
    int w = 0;

    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        *cfg = as_xreallocarray(*cfg, *cap, sizeof **cfg);
    }
    c = &(*cfg)[(*n)++];
    memset(c, 0, sizeof *c);
    c->n = devices;
    c->p = p;
    c->k = k;
    snprintf(c->mesh, sizeof c->mesh, "%s", mesh);
    c->recompute = r;
    c->solver = solver;
    c->zero = zero;
    c->cost = cost;
    w = snprintf(c->key, sizeof c->key, "%s", prefix);
    snprintf(c->key + w, sizeof c->key - (size_t)w, "p=%d,k=%d,mesh=%s,recompute=%s,solver=%s",
             p, k, mesh, as_recompute_name(r), solver);
    if (zkey) {
        w = (int)strlen(c->key);
        snprintf(c->key + w, sizeof c->key - (size_t)w, ",zero=%d", zero);
    }
    if (ckey) {
        w = (int)strlen(c->key);
        snprintf(c->key + w, sizeof c->key - (size_t)w, ",cost=%s", cost);
    }
}

/*
 * Devices on the data axes of MESH ("2x4") under ROLES ("data,tensor"): the
 * product of the factors whose role is data (1 without roles).
 */
static int
data_degree(const char *roles, const char *mesh)
{
    const char *r = roles, *m = mesh;
    int d = 1;

    while (r != NULL && *r != '\0' && *m != '\0') {
        char *end;
        long f = strtol(m, &end, 10);
        if (strncmp(r, "data", 4) == 0 && (r[4] == ',' || r[4] == '\0'))
            d *= (int)f;
        m = *end == 'x' ? end + 1 : end;
        r = strchr(r, ',');
        if (r != NULL)
            r++;
    }
    return d;
}

/* The configurations of O on DEVICES devices, appended to *CFG. */
static int
enumerate_n(const as_sweep_opts *o, int devices, int prefix, int nlayers, int64_t batch,
            as_sweep_cfg **cfg, size_t *n, size_t *cap, as_err *err)
{
    int ps[AS_SWEEP_MAX_LIST], np = 0, i, j, a, b;
    size_t mi;
    meshes ms = {0};
    as_recompute none = AS_RECOMPUTE_NONE;
    const as_recompute *rl = o->nrecompute ? o->recompute : &none;
    int nr = o->nrecompute ? o->nrecompute : 1;
    const char *glpk = "glpk";
    const char *const *sl = o->nsolver ? o->solver : &glpk;
    int ns = o->nsolver ? o->nsolver : 1;
    int zl[4] = {o->zero}, nz = o->nzero > 1 ? o->nzero : 1, z, zero0 = 0;
    const char *const *cl = o->ncost > 1 ? o->costs : &o->cost;
    int nc = o->ncost > 1 ? o->ncost : 1, e;
    char pre[64];

    for (z = 0; z < nz && o->nzero > 1; z++) {
        zl[z] = o->zeros[z];
        zero0 |= zl[z] == 0;
    }
    pre[0] = '\0';
    if (o->nbatches > 1)
        snprintf(pre, sizeof pre, "b=%lld,", (long long)batch);
    if (prefix)
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), "n=%d,", devices);
    if (devices < 1)
        return as_errf(err, AS_EUSAGE, "--devices must be at least 1, got %d", devices);
    if (o->npipeline > 0) {
        for (i = 0; i < o->npipeline; i++) {
            if (o->pipeline[i] < 1 || devices % o->pipeline[i] != 0) {
                if (prefix) /* a list of device counts: P applies where it divides */
                    continue;
                return as_errf(err, AS_EUSAGE, "--pipeline %d does not divide --devices %d",
                               o->pipeline[i], devices);
            }
            if (o->pipeline[i] > 1 && o->pipeline[i] > nlayers)
                return as_errf(err, AS_EUSAGE, "--pipeline %d: the graph has %d layers (a stage "
                               "needs at least one)", o->pipeline[i], nlayers);
            ps[np++] = o->pipeline[i];
        }
    } else {
        for (i = 1; i <= devices && np < AS_SWEEP_MAX_LIST; i++)
            if (devices % i == 0 && (i == 1 || i <= nlayers))
                ps[np++] = i;
    }
    for (i = 0; i < np; i++) {
        int p = ps[i], ks[AS_SWEEP_MAX_LIST], nk = 0;
        if (o->nmbsize > 0) {
            /* K per mesh: batch / (D x b) for each microbatch size b (below) */
        } else if (o->nmicro == 0 || (p == 1 && !o->accumulate)) {
            int k = 1;
            if (p > 1)
                k = batch % (2 * p) == 0 ? 2 * p : batch % p == 0 ? p : (int)batch;
            if (batch % k != 0)
                continue;
            ks[nk++] = k;
        } else {
            for (j = 0; j < o->nmicro; j++)
                ks[nk++] = o->micro[j];
        }
        stage_meshes(devices / p, o->max_axes, o->tp_max, o->roles, o->roles ? o->nroles : 0, &ms);
        for (mi = 0; mi < ms.n && o->nmbsize > 0; mi++)
            for (j = 0; j < o->nmbsize; j++) {
                /* microbatch size b: each data replica runs K = batch / D / b microbatches */
                int64_t db = (int64_t)data_degree(o->roles, ms.m[mi]) * o->mbsize[j];
                if (batch % db != 0)
                    continue;
                for (a = 0; a < nr; a++)
                    for (b = 0; b < ns; b++)
                        for (z = 0; z < nz; z++)
                            /* ZeRO over a data degree of 1 is ZeRO 0 (listed: left out) */
                            for (e = 0; e < nc; e++)
                                if (zl[z] == 0 || !zero0 || data_degree(o->roles, ms.m[mi]) > 1)
                                    add_cfg(cfg, n, cap, devices, pre, p, (int)(batch / db),
                                            ms.m[mi], rl[a], sl[b], zl[z], o->nzero > 1, cl[e],
                                            o->ncost > 1);
            }
        for (j = 0; j < nk; j++)
            for (mi = 0; mi < ms.n; mi++) {
                /* every data replica needs a sample of each microbatch: batch / D / K >= 1 */
                if (o->roles != NULL && batch < (int64_t)ks[j] * data_degree(o->roles, ms.m[mi]))
                    continue;
                for (a = 0; a < nr; a++)
                    for (b = 0; b < ns; b++)
                        for (z = 0; z < nz; z++)
                            for (e = 0; e < nc; e++)
                                if (zl[z] == 0 || !zero0 || data_degree(o->roles, ms.m[mi]) > 1)
                                    add_cfg(cfg, n, cap, devices, pre, p, ks[j], ms.m[mi],
                                            rl[a], sl[b], zl[z], o->nzero > 1, cl[e],
                                            o->ncost > 1);
            }
    }
    free(ms.m);
    return AS_OK;
}

int
as_sweep_enumerate(const as_sweep_opts *o, int nlayers, int64_t batch, as_sweep_cfg **cfg,
                   size_t *n, as_err *err)
{
    size_t cap = 0;
    int i, nd = o->ndevs > 0 ? o->ndevs : 1;

    *cfg = NULL;
    *n = 0;
    for (i = 0; i < o->nmicro; i++)
        if (o->micro[i] < 1 || batch % o->micro[i] != 0)
            return as_errf(err, AS_EUSAGE, "--microbatches %d does not divide the batch %lld",
                           o->micro[i], (long long)batch);
    for (i = 0; i < nd; i++) {
        int rc = enumerate_n(o, o->ndevs > 0 ? o->devs[i] : o->devices, o->ndevs > 1, nlayers,
                             batch, cfg, n, &cap, err);
        if (rc != AS_OK) {
            free(*cfg);
            *cfg = NULL;
            *n = 0;
            return rc;
        }
    }
    if (*n == 0) {
        free(*cfg);
        *cfg = NULL;
        return as_errf(err, AS_EUSAGE, "no configuration: nothing factors %d devices within "
                       "the options (--pipeline, --max-axes, --tp-max)", o->devices);
    }
    return AS_OK;
}

/* Layers of G (the units `solve --pipeline` cuts at; 0 = none). */
static int
graph_layers(const as_graph *g)
{
    int *unit = as_xmalloc(((size_t)as_graph_nops(g) + 1) * sizeof *unit);
    int *tunit = as_xmalloc(((size_t)as_graph_ntensors(g) + 1) * sizeof *tunit), n;

    as_pipe_units(g, 1, unit, tunit, &n);
    free(unit);
    free(tunit);
    return n;
}

int
as_sweep_list(const as_graph *g, const as_sweep_opts *o, FILE *fp, as_err *err)
{
    as_sweep_cfg *cfg;
    size_t n, i;

    AS_CHECK(as_sweep_enumerate(o, graph_layers(g), o->batch, &cfg, &n, err));
    for (i = 0; i < n; i++)
        fprintf(fp, "%s\n", cfg[i].key);
    free(cfg);
    return AS_OK;
}

/* ---- evaluation of one configuration ---- */

typedef struct record {
    char key[AS_SWEEP_KEY_MAX];
    char status[16];   /* ok, oom, pruned, infeasible, error */
    double throughput, peak, time, objective;
    double lb;         /* pruned: the memory lower bound */
    int zero;          /* ZeRO stage (lines without the field: the header's single one) */
} record;

typedef struct sweep_ctx {
    const as_graph *g;
    const as_sweep_opts *o;
    as_graph *rg[4];           /* per recompute mode, built once (NULL for none) */
    int nunits;
    double flops;              /* model FLOPs of one step (no recomputation) */
    as_dtype dtype;
    double peak_flops;         /* the profile's peak for DTYPE (0 = unknown), loaded once */
    double sim_rate;           /* the largest seconds per microbatch and op of the
                                  simulations in this process so far (0: none yet), for
                                  the time a configuration keeps for its simulation */
    struct kept_plan *kept;    /* stage plans of this process's configurations (sibling_start) */
    size_t nkept;
} sweep_ctx;

static const as_graph *
ctx_graph(sweep_ctx *x, as_recompute r, as_err *err)
{
    if (r == AS_RECOMPUTE_NONE)
        return x->g;
    if (x->rg[r] == NULL && as_graph_recompute(x->g, r, NULL, &x->rg[r], NULL, err) != AS_OK)
        return NULL;
    return x->rg[r];
}

typedef struct eval {
    as_graph_problem *gp;
    as_solve_result *res;
    double *budget, *rb, *peak;
    int *count, *stage, *tstage, *mbdim, *unit, *tunit;
    as_graph *m;
    as_sim_result *sim;
    as_shard_plan *plan;
    double solve_s, sim_s, lb, budget_max;
    const char *status;        /* NULL = ok / oom / limit */
    char limit[512];           /* "": the refits ended in time; else why they stopped */
    int copied;                /* stages given an equal, tighter stage's plan (solve_stages) */
    int nsolves;               /* solve_share calls (AUTOSHARD_SWEEP_SOLVES) */
    int axes;                  /* of the configuration's mesh */
    sweep_ctx *x;
    size_t **start;            /* per stage: a sibling configuration's plan (sibling_start) or NULL */
    double *start_obj;         /* its objective */
    char start_mesh[64];       /* the sibling's mesh ("" = no start) */
    int started;               /* stages whose answer is the sibling's plan */
} eval;

/* ---- a start from a sibling configuration's plan ---- */

/*
 * The plan of one stage of a configuration this process ran, as strategy names: a start
 * for a configuration that differs only by its mesh, when that mesh splits the plan's
 * axes.  A plan on 2x8 is a plan on 2x2x4 with the axis of 8 read as the two axes (y,z):
 * both meshes number their devices row-major, so every device group of the plan is the
 * same.  Only meshes without axis roles (--role fixes the axes of every mesh).
 */
typedef struct kept_plan {
    int n, p, k, zero, stage;
    as_recompute r;
    char mesh[64];
    size_t nn;
    char **names;              /* nn strategy names, owned */
} kept_plan;

/* Kept plans at most (the oldest go first): a sweep's siblings are close together. */
#define SWEEP_KEPT_MAX 64

/* The factors of MESH ("2x4") into F (at most 3): their number (0: not a mesh of factors). */
static int
mesh_factors(const char *mesh, int *f)
{
    int n = 0;
    char *end;

    while (*mesh != '\0' && n < 3) {
        long v = strtol(mesh, &end, 10);
        if (end == mesh || v < 1)
            return 0;
        f[n++] = (int)v;
        if (*end == '\0')
            return n;
        if (*end != 'x')
            return 0;
        mesh = end + 1;
    }
    return *mesh == '\0' ? n : 0;
}

/*
 * 1 if the NS axes S are the NT axes T grouped in order (each axis of S the product of a
 * run of consecutive axes of T; NS < NT): axis i of S is T's axes FIRST[i]..FIRST[i+1]-1.
 */
static int
mesh_groups(const int *t, int nt, const int *s, int ns, int *first)
{
    int i = 0, j = 0;

    if (ns >= nt)
        return 0;
    for (i = 0; i < ns; i++) {
        long prod = 1;
        first[i] = j;
        while (j < nt && prod < s[i])
            prod *= t[j++];
        if (prod != s[i])
            return 0;
    }
    first[ns] = j;
    return j == nt;
}

/*
 * NAME of a strategy on the sibling's mesh (axes x, y, z) as named on this mesh: every
 * axis name standing alone (not part of a longer word) becomes the run of this mesh's
 * axes it groups: "S(in0:1@y)" -> "S(in0:1@y,z)", and a dim of a layout outside
 * parentheses gets them, "[None,y]" -> "[None,(y,z)]" (docs/strategies.md).  0 if OUT
 * is too short.
 */
static int
map_name(const char *name, const int *first, int ns, char *out, size_t n)
{
    static const char ax[] = "xyz";
    size_t len = 0;
    const char *c;
    int depth = 0;

    for (c = name; *c != '\0'; c++) {
        const char *a = strchr(ax, *c);
        int word = (c > name && (isalnum((unsigned char)c[-1]) || c[-1] == '_')) ||
                   isalnum((unsigned char)c[1]) || c[1] == '_';
        depth += (*c == '(') - (*c == ')');
        if (a != NULL && !word && (int)(a - ax) < ns) {
            int i = (int)(a - ax), q, wrap = depth == 0 && first[i + 1] - first[i] > 1;
            if (len + 2 * (size_t)(first[i + 1] - first[i]) + 3 >= n)
                return 0;
            if (wrap)
                out[len++] = '(';
            for (q = first[i]; q < first[i + 1]; q++) {
                if (q > first[i])
                    out[len++] = ',';
                out[len++] = ax[q];
            }
            if (wrap)
                out[len++] = ')';
            continue;
        }
        if (len + 2 >= n)
            return 0;
        out[len++] = *c;
    }
    out[len] = '\0';
    return 1;
}

/* The plan of stage S of C (E->res[s]) kept for its siblings. */
static void
kept_add(sweep_ctx *x, const as_sweep_cfg *c, const eval *E, int s)
{
    const as_problem *p = E->gp[s].p;
    size_t v, nn = as_problem_nnodes(p);
    int f[3];
    kept_plan *k;
    char buf[64];

    /* a start is only taken under a time limit */
    if (x->o->roles != NULL || x->o->time_limit <= 0 || mesh_factors(c->mesh, f) >= 3 ||
        E->res[s].nplans == 0)
        return;
    if (x->nkept == SWEEP_KEPT_MAX) { /* the oldest goes */
        for (v = 0; v < x->kept[0].nn; v++)
            free(x->kept[0].names[v]);
        free(x->kept[0].names);
        memmove(x->kept, x->kept + 1, (SWEEP_KEPT_MAX - 1) * sizeof *x->kept);
        x->nkept--;
    }
    if (x->kept == NULL)
        x->kept = as_xcalloc(SWEEP_KEPT_MAX, sizeof *x->kept);
    k = &x->kept[x->nkept++];
    memset(k, 0, sizeof *k);
    k->n = c->n;
    k->p = c->p;
    k->k = c->k;
    k->zero = c->zero;
    k->r = c->recompute;
    k->stage = s;
    snprintf(k->mesh, sizeof k->mesh, "%s", c->mesh);
    k->nn = nn;
    k->names = as_xcalloc(nn + 1, sizeof *k->names);
    for (v = 0; v < nn; v++)
        k->names[v] = as_xstrdup(as_problem_strategy_name(p, v, E->res[s].plans[0].choice[v],
                                                          buf, sizeof buf));
}

static void
kept_free(sweep_ctx *x)
{
    size_t i, v;

    for (i = 0; i < x->nkept; i++) {
        for (v = 0; v < x->kept[i].nn; v++)
            free(x->kept[i].names[v]);
        free(x->kept[i].names);
    }
    free(x->kept);
    x->kept = NULL;
    x->nkept = 0;
}

/*
 * The cheapest plan of stage S of C (its problem under its current memory rows) that a
 * kept sibling's plan becomes on C's mesh: E->start[s] and E->start_obj[s] (NULL when no
 * sibling's plan maps onto every node or passes the rows).
 */
static void
sibling_start(const as_sweep_cfg *c, eval *E, int s)
{
    const sweep_ctx *x = E->x;
    const as_problem *p = E->gp[s].p;
    size_t nn = as_problem_nnodes(p), i, v, q, *choice;
    int t[3], nt = mesh_factors(c->mesh, t);
    double best = HUGE_VAL;

    if (x->o->roles != NULL || nt < 2 || x->nkept == 0)
        return;
    choice = as_xcalloc(nn + 1, sizeof *choice);
    for (i = 0; i < x->nkept; i++) {
        const kept_plan *k = &x->kept[i];
        int f[3], nf = mesh_factors(k->mesh, f), first[4];
        char name[256], buf[64];
        double obj;
        as_err e = {0};
        if (k->n != c->n || k->p != c->p || k->k != c->k || k->zero != c->zero ||
            k->r != c->recompute || k->stage != s || k->nn != nn ||
            !mesh_groups(t, nt, f, nf, first))
            continue;
        for (v = 0; v < nn; v++) {
            size_t kk = as_problem_node(p, v)->k;
            if (!map_name(k->names[v], first, nf, name, sizeof name))
                break;
            for (q = 0; q < kk; q++)
                if (strcmp(as_problem_strategy_name(p, v, q, buf, sizeof buf), name) == 0)
                    break;
            if (q == kk)
                break;
            choice[v] = q;
        }
        if (getenv("AS_DEBUG_SWEEP") != NULL)
            fprintf(stderr, "sweep: %s stage %d from %s: %s\n", c->key, s, k->mesh,
                    v < nn ? "no strategy" : "mapped");
        if (getenv("AS_DEBUG_SWEEP") != NULL && v < nn)
            fprintf(stderr, "  node %s: %s -> %s\n", as_problem_node(p, v)->name, k->names[v],
                    name);
        if (v < nn || as_problem_check(p, choice, &obj, NULL, &e) != AS_OK || !(obj < best))
            continue;
        best = obj;
        if (E->start[s] == NULL)
            E->start[s] = as_xcalloc(nn + 1, sizeof *E->start[s]);
        memcpy(E->start[s], choice, nn * sizeof *choice);
        E->start_obj[s] = obj;
        snprintf(E->start_mesh, sizeof E->start_mesh, "%s", k->mesh);
    }
    free(choice);
}

/* Stage S's answer is CHOICE (a plan of its problem) with BOUND and STATUS. */
static void
set_plan(eval *E, int s, const size_t *choice, double bound, as_outcome status)
{
    const as_problem *p = E->gp[s].p;
    size_t n = as_problem_nnodes(p);
    as_plan *pl;

    as_solve_result_free(&E->res[s]);
    memset(&E->res[s], 0, sizeof E->res[s]);
    pl = E->res[s].plans = as_xcalloc(1, sizeof *pl);
    E->res[s].nplans = 1;
    pl->choice = as_xmalloc((n + 1) * sizeof *pl->choice);
    memcpy(pl->choice, choice, n * sizeof *pl->choice);
    pl->objective = as_problem_eval(p, pl->choice);
    pl->peak = as_problem_peak(p, pl->choice);
    pl->bound = fmin(bound, pl->objective);
    pl->gap = isfinite(pl->bound) ? as_rel_gap(pl->objective, pl->bound) : HUGE_VAL;
    pl->nodes = 0;
    pl->status = status;
    E->res[s].outcome = status;
}

/*
 * Solve stage S of C within SHARE seconds (0 = no limit): E->res[s].  Under a
 * --time-limit every stage gets its share of what is left, so each one ends
 * with the best plan found in it (a quick beam plan under a budget, see
 * solve_loop) rather than the first stages using it all.
 */
static int
stage_solve(const as_sweep_cfg *c, eval *E, int s, double share, as_err *err)
{
    as_solve_opts so;
    as_solve_result r;
    const size_t *start = NULL;
    int rc;

    as_solve_opts_init(&so);
    so.solver = c->solver;
    so.lim.gap = AS_DEFAULT_GAP;
    so.lim.time_limit_s = share;
    so.lim.verbosity = 0; /* a solver's remarks (which heuristic plan won) are one line per
                             stage solve: the sweep's progress and table speak for it */
    so.count_before = 0; /* the unreduced ILP's sizes: no line reports them */
    memset(&r, 0, sizeof r);
    as_problem_set_memory(E->gp[s].p, E->rb[s]);
    {
        double t = as_now();
        as_err e = {0};
        if (E->start != NULL && E->res[s].nplans == 0 && share > 0) /* a first solve */
            sibling_start(c, E, s); /* (without a time limit the solver's plan is the answer) */
        /* under the rows of this solve (a refit's are tighter).  The solver does not get it
           as its incumbent: with one, the reductions' first bound round runs its Lagrangian
           whatever the time (gpt3-1.3b, 16 devices, P = 2, 2x2x2: 5.0 s on a 0.9 s share);
           the sweep keeps it as the answer when the solver has none or a dearer one */
        if (E->start != NULL && E->start[s] != NULL &&
            as_problem_check(E->gp[s].p, E->start[s], NULL, NULL, &e) == AS_OK)
            start = E->start[s];
        /* but the reductions know there is one: out of time, they give up rather than run
           past the share for a dearer plan (the same line: 3.5 s on a 1 s share) */
        if (start != NULL && share > 0 && E->status == NULL) {
            so.own_plan = 1;
            so.own_obj = E->start_obj[s];
        }
        rc = as_solve_problem(E->gp[s].p, &so, &r, err);
        if (getenv("AS_DEBUG_SWEEP") != NULL)
            fprintf(stderr, "sweep: %s stage %d: share %.3f s, took %.3f s, rc %d, %zu plans, "
                    "start %s\n", c->key, s, share, as_now() - t, rc, r.nplans,
                    start != NULL ? "yes" : "no");
        E->solve_s += as_now() - t;
        as_problem_set_memory(E->gp[s].p, E->budget[s]);
    }
    if (start != NULL && share > 0 && E->status == NULL &&
        (rc == AS_ESOLVER || (r.nplans == 0 && r.outcome != AS_OUTCOME_INFEASIBLE) ||
         (r.nplans > 0 && r.plans[0].objective > E->start_obj[s] * (1 + 1e-12)))) {
        /* out of time without a plan (or with a dearer one): the sibling's plan is one; the
           solver's bound stays when it has one */
        double bound = rc == AS_OK && r.nplans > 0 ? r.plans[0].bound : -HUGE_VAL;
        if (rc != AS_OK)
            memset(err, 0, sizeof *err);
        as_solve_result_free(&r);
        set_plan(E, s, start, bound,
                 isfinite(bound) && as_rel_gap(E->start_obj[s], bound) <= AS_DEFAULT_GAP
                     ? AS_OUTCOME_OPTIMAL : AS_OUTCOME_FEASIBLE);
        E->started++;
        return AS_OK;
    }
    if (rc != AS_OK) {
        as_solve_result_free(&r);
        return rc;
    }
    if (r.nplans > 0) { /* else a refit's previous plan stays */
        as_solve_result_free(&E->res[s]);
        E->res[s] = r;
        return AS_OK;
    }
    as_solve_result_free(&r);
    if (r.outcome == AS_OUTCOME_INFEASIBLE) {
        E->status = "infeasible";
        return as_errf(err, AS_ESOLVER, "stage %d: no plan fits the memory budget", s);
    }
    if (share > 0)
        return as_errf(err, AS_ESOLVER, "stage %d: no plan within its %.3g s of the time limit",
                       s, share);
    return as_errf(err, AS_ESOLVER, "stage %d: the solver found no plan", s);
}

/*
 * Seconds for the next of N solves of E before DEADLINE (0 = no limit; < 0 =
 * none left).  AUTOSHARD_SWEEP_SOLVES=M (tests) ends the time after M solves
 * of a configuration, as a clock that ran out would; M@A only on meshes of at
 * least A axes.
 */
static double
solve_share(eval *E, double deadline, int n)
{
    const char *stop = getenv("AUTOSHARD_SWEEP_SOLVES");
    double left;

    if (stop != NULL && (strchr(stop, '@') == NULL || E->axes >= atoi(strchr(stop, '@') + 1)) &&
        E->nsolves++ >= atoi(stop))
        return -1;
    if (deadline <= 0)
        return 0;
    left = deadline - as_now();
    return left > 0.01 ? left / n : -1;
}

/* ---- stages that differ only in their microbatches in flight ---- */

static double
at(const double *v, size_t i)
{
    return v != NULL ? v[i] : 0;
}

/*
 * 1 if A and B are the same choice problem but for memory (node strategies by
 * name and cost, edges, aliases, liveness points and their entries, offset)
 * and every memory figure of A is at least B's (A holds more microbatches in
 * flight): under equal budgets every plan of A is a plan of B of the same
 * objective, and every bound of B is a bound of A.
 */
static int
problem_dominates(const as_problem *a, const as_problem *b)
{
    size_t n = as_problem_nnodes(a), v, j, t, i, q;
    char ba[64], bb[64];

    if (n != as_problem_nnodes(b) || as_problem_nedges(a) != as_problem_nedges(b) ||
        as_problem_nlive(a) != as_problem_nlive(b) ||
        as_problem_naliases(a) != as_problem_naliases(b) || as_problem_nnogoods(a) != 0 ||
        as_problem_nnogoods(b) != 0 || as_problem_offset(a) != as_problem_offset(b))
        return 0;
    for (v = 0; v < n; v++) {
        const as_pnode *x = as_problem_node(a, v), *y = as_problem_node(b, v);
        if (x->k != y->k || x->follow != y->follow)
            return 0;
        for (q = 0; q < x->k; q++)
            if (at(x->c, q) != at(y->c, q) || at(x->d, q) != at(y->d, q) ||
                at(x->m, q) < at(y->m, q) ||
                strcmp(as_problem_strategy_name(a, v, q, ba, sizeof ba),
                       as_problem_strategy_name(b, v, q, bb, sizeof bb)) != 0)
                return 0;
    }
    for (j = 0; j < as_problem_nedges(a); j++) {
        const as_pedge *x = as_problem_edge(a, j), *y = as_problem_edge(b, j);
        size_t kk;
        if (x->u != y->u || x->v != y->v)
            return 0;
        kk = as_problem_node(a, x->u)->k * as_problem_node(a, x->v)->k;
        if (x->r != y->r)
            for (q = 0; q < kk; q++)
                if (x->r[q] != y->r[q])
                    return 0;
    }
    for (i = 0; i < as_problem_naliases(a); i++) {
        const as_palias *x = as_problem_alias(a, i), *y = as_problem_alias(b, i);
        if (x->a != y->a || x->b != y->b ||
            memcmp(x->bad, y->bad, as_problem_node(a, x->a)->k * as_problem_node(a, x->b)->k) !=
                0)
            return 0;
    }
    if (as_problem_nsegs(a) != as_problem_nsegs(b))
        return 0;
    /* points, then liveness segments (shared entries, formulate/problem.h): the same
       structure, A's bytes at least B's entry by entry */
    for (t = 0; t < as_problem_nlive(a) + as_problem_nsegs(a); t++) {
        int seg = t >= as_problem_nlive(a);
        size_t jj = seg ? t - as_problem_nlive(a) : t;
        const as_plive *x = seg ? as_problem_live_seg(a, jj) : as_problem_live(a, jj);
        const as_plive *y = seg ? as_problem_live_seg(b, jj) : as_problem_live(b, jj);
        if (x->n != y->n || x->resident < y->resident || x->seg != y->seg ||
            memcmp(x->more, y->more, sizeof x->more) != 0)
            return 0;
        for (i = 0; i < x->n; i++) {
            if (x->nodes[i] != y->nodes[i])
                return 0;
            for (q = 0; q < as_problem_node(a, x->nodes[i])->k; q++)
                if (at(x->m[i], q) < at(y->m[i], q))
                    return 0;
        }
    }
    return 1;
}

/* Stage S gets stage FROM's plan (a plan of S by dominance) with BOUND and STATUS. */
static void
copy_plan(eval *E, int from, int s, double bound, as_outcome status)
{
    set_plan(E, s, E->res[from].plans[0].choice, bound, status);
}

typedef struct stage_run {
    eval *E;
    const int *m;              /* the chain of one class: stages, tightest first */
    double deadline;           /* 0 = no limit */
    int *unsolved;             /* stages of every class without a plan yet */
    int copied;                /* stages given a tighter stage's plan */
} stage_run;

/*
 * The chain's members strictly between I and J (both with plans): when I's plan
 * is within the gap of J's bound, every one of them takes I's plan (it is a
 * plan of theirs, and J's bound bounds them); else the middle one is solved
 * and both halves are filled.  Out of time, they take I's plan as feasible.
 */
static int
fill(stage_run *S, const as_sweep_cfg *c, int i, int j, as_err *err)
{
    eval *E = S->E;
    const as_plan *lo = &E->res[S->m[i]].plans[0], *hi = &E->res[S->m[j]].plans[0];
    double o = lo->objective, b = hi->bound, share;
    int k, mid;

    if (j - i <= 1)
        return AS_OK;
    if (isfinite(b) && o - b <= AS_DEFAULT_GAP * fabs(o) + 1e-12 * fabs(o)) {
        for (k = i + 1; k < j; k++)
            copy_plan(E, S->m[i], S->m[k], b, AS_OUTCOME_OPTIMAL);
        S->copied += j - i - 1;
        *S->unsolved -= j - i - 1;
        return AS_OK;
    }
    mid = (i + j) / 2;
    share = solve_share(E, S->deadline, *S->unsolved);
    if (share < 0 || stage_solve(c, E, S->m[mid], share, err) != AS_OK) {
        if (E->status != NULL)
            return err->code;
        memset(err, 0, sizeof *err);
        for (k = i + 1; k < j; k++)
            copy_plan(E, S->m[i], S->m[k], b, AS_OUTCOME_FEASIBLE);
        S->copied += j - i - 1;
        *S->unsolved -= j - i - 1;
        return AS_OK;
    }
    --*S->unsolved;
    AS_CHECK(fill(S, c, i, mid, err));
    return fill(S, c, mid, j, err);
}

/* The first stage of class Q. */
static int
first_of(const int *cls, int n, int q)
{
    int s;

    for (s = 0; s < n && cls[s] != q; s++)
        ;
    return s;
}

/*
 * The first solve of every stage.  Stages whose problems differ only by the
 * microbatches they hold (the middle stages of a uniform model under 1F1B)
 * form chains, tightest first; only the ends of a chain are solved outright,
 * the members between them by fill().  Under a time limit the first solves
 * share what is left of it after SIM_S seconds kept for the simulation (at
 * least 10 % of the limit) and, for a pipeline, one solve's share kept for
 * a memory refit round (the simulated peak can exceed what the ILP's memory rows held: a
 * stage is then re-solved under a tighter budget, eval_run).
 */
static int
solve_stages(const sweep_ctx *x, const as_sweep_cfg *c, eval *E, double t0, double sim_s,
             as_err *err)
{
    int P = c->p, *cls = as_xcalloc((size_t)P, sizeof *cls), *last = as_xcalloc((size_t)P,
        sizeof *last), *m = as_xcalloc((size_t)P, sizeof *m), ncls = 0, s, q, unsolved = P;
    int ends = 0;
    int rc = AS_OK;
    stage_run S;

    for (s = 0; s < P; s++) {
        for (q = 0; q < ncls; q++)
            if (E->rb[last[q]] == E->rb[s] && problem_dominates(E->gp[last[q]].p, E->gp[s].p))
                break;
        if (q == ncls)
            ncls++;
        cls[s] = q;
        last[q] = s;
    }
    memset(&S, 0, sizeof S);
    S.E = E;
    S.unsolved = &unsolved;
    /* the ends of every chain first: the tight ends (a class of one: its only stage), then
       the loose ends, which can do without a solve of their own (the tight end's plan is one
       of theirs) */
    for (q = 0; q < ncls; q++)
        ends += last[q] != first_of(cls, P, q) ? 2 : 1;
    if (x->o->time_limit > 0) {
        double tl = x->o->time_limit, now = as_now();
        double avail = t0 + tl - fmax(0.1 * tl, sim_s) - now;
        /* the first solves: ENDS shares of AVAIL, a pipeline's refit round one more (its
           stages' memory rows hold the microbatches in flight as the ILP sees them, the
           simulation holds them as 1F1B runs them) */
        int keep = P > 1;
        S.deadline = avail > 0 ? now + avail * ends / (ends + keep) : now;
    }
    for (q = 0; q < 2 * ncls && rc == AS_OK; q++) {
        int tight = first_of(cls, P, q % ncls), st = q < ncls ? tight : last[q % ncls];
        double share;
        if (q >= ncls && st == tight)
            continue;
        share = solve_share(E, S.deadline, ends--);
        if (share >= 0 && (rc = stage_solve(c, E, st, share, err)) == AS_OK) {
            unsolved--;
        } else if (q >= ncls && E->status == NULL && (share < 0 || x->o->time_limit > 0)) {
            /* the loose end got no plan in time: the tight end's plan is one */
            memset(err, 0, sizeof *err);
            copy_plan(E, tight, st, -HUGE_VAL, AS_OUTCOME_FEASIBLE);
            S.copied++;
            unsolved--;
            rc = AS_OK;
        } else if (share < 0 && E->res[st].nplans == 0 && (sibling_start(c, E, st),
                                                             E->start[st] != NULL)) {
            /* no time left for this stage: a sibling configuration's plan is one */
            set_plan(E, st, E->start[st], -HUGE_VAL, AS_OUTCOME_FEASIBLE);
            E->started++;
            unsolved--;
        } else if (share < 0) {
            rc = as_errf(err, AS_ESOLVER, "time limit (%g s) reached before stage %d was "
                         "solved", x->o->time_limit, st);
        }
    }
    for (q = 0; q < ncls && rc == AS_OK; q++) {
        int n = 0;
        for (s = 0; s < P; s++)
            if (cls[s] == q)
                m[n++] = s;
        S.m = m;
        rc = fill(&S, c, 0, n - 1, err);
    }
    E->copied = S.copied;
    free(cls);
    free(last);
    free(m);
    return rc;
}

/* Merge the stage plans and simulate the pipeline: E->plan, E->sim, E->peak. */
static int
merge_sim(const sweep_ctx *x, const as_sweep_cfg *c, const as_graph *g, eval *E, as_err *err)
{
    as_shard_plan **sp = as_xcalloc((size_t)c->p, sizeof *sp);
    double *tt = as_xcalloc((size_t)c->p, sizeof *tt);
    int s, rc = AS_OK;

    for (s = 0; s < c->p && rc == AS_OK; s++) {
        const as_plan *pl = &E->res[s].plans[0];
        as_plan_source src = {c->solver, as_outcome_name(pl->status), pl->objective, pl->bound,
                              pl->peak};
        rc = as_plan_from_choice(E->gp[s].map, pl->choice, &src, &sp[s], err);
        tt[s] = pl->objective;
    }
    if (rc == AS_OK)
        rc = as_sim_pipeline_plan(g, E->stage, E->tstage, sp, tt, c->p, c->k, AS_SIM_1F1B,
                                  as_recompute_name(c->recompute), E->count, x->o->hw, &E->plan,
                                  &E->sim, E->peak, &E->sim_s, err);
    for (s = 0; s < c->p; s++)
        as_shard_plan_free(sp[s]);
    free(sp);
    free(tt);
    return rc;
}

/* Build, prune, solve, fit and simulate configuration C; AS_OK or the error (E->status). */
static int
eval_run(sweep_ctx *x, const as_sweep_cfg *c, eval *E, as_err *err)
{
    const as_graph *g;
    double t0 = as_now(), *cost, sim_est, sim_last;
    int s, round, nunits;
    size_t nops, nt;

    if ((g = ctx_graph(x, c->recompute, err)) == NULL)
        return err->code;
    nops = (size_t)as_graph_nops(g) + 1;
    nt = (size_t)as_graph_ntensors(g) + 1;
    E->unit = as_xmalloc(nops * sizeof *E->unit);
    E->tunit = as_xmalloc(nt * sizeof *E->tunit);
    E->stage = as_xmalloc(nops * sizeof *E->stage);
    E->tstage = as_xmalloc(nt * sizeof *E->tstage);
    E->mbdim = as_xmalloc(nt * sizeof *E->mbdim);
    E->count = as_xcalloc((size_t)c->p + 1, sizeof *E->count);
    as_pipe_units(g, 1, E->unit, E->tunit, &nunits);
    if (c->p > 1 && c->p > nunits)
        return as_errf(err, AS_EUSAGE, "the graph has %d layers, fewer than %d stages", nunits,
                       c->p);
    if (nunits == 0) { /* no layers: one stage of every op */
        as_pipe_units(g, 0, E->unit, E->tunit, &nunits);
        if (nunits == 0)
            return as_errf(err, AS_EUSAGE, "the graph has no forward ops");
    }
    cost = as_xcalloc((size_t)nunits, sizeof *cost);
    as_pipe_unit_flops(g, E->unit, nunits, cost);
    as_pipe_balance(cost, nunits, c->p, E->count);
    free(cost);
    as_pipe_stages(g, E->unit, E->tunit, c->p, E->count, E->stage, E->tstage);
    if (as_sim_microbatch_dims(g, c->k, E->mbdim, err) != AS_OK)
        return err->code;
    if (c->k > 1 && as_graph_microbatch(g, c->k, E->mbdim, &E->m, err) != AS_OK)
        return err->code;
    E->gp = as_xcalloc((size_t)c->p, sizeof *E->gp);
    E->res = as_xcalloc((size_t)c->p, sizeof *E->res);
    E->x = x;
    E->axes = mesh_axes(c->mesh);
    E->start = as_xcalloc((size_t)c->p, sizeof *E->start);
    E->start_obj = as_xcalloc((size_t)c->p, sizeof *E->start_obj);
    E->budget = as_xcalloc((size_t)c->p, sizeof *E->budget);
    E->rb = as_xcalloc((size_t)c->p, sizeof *E->rb);
    E->peak = as_xcalloc((size_t)c->p, sizeof *E->peak);
    /* build every stage and prune by the memory lower bound before any solve (at the
       first stage whose bound exceeds its memory) */
    for (s = 0; s < c->p; s++) {
        as_graph_setup st;
        double lb;
        memset(&st, 0, sizeof st);
        st.mesh = c->mesh;
        st.hw = x->o->hw;
        st.cost = c->cost;
        st.tie = 1;
        as_build_opts_init(&st.build);
        st.build.memory = -1; /* the profile's device memory */
        st.build.roles = x->o->roles;
        st.build.zero = c->zero;
        if (x->o->time_limit > 0)
            st.build.deadline = t0 + x->o->time_limit;
        if (as_pipe_stage_problem(E->m != NULL ? E->m : g, E->stage, s, E->mbdim, &st, c->k,
                                  as_pipe_inflight(c->p, c->k, s, 0), &E->gp[s], err) != AS_OK)
            return err->code;
        E->budget[s] = E->rb[s] = as_problem_memory(E->gp[s].p);
        E->budget_max = fmax(E->budget_max, E->budget[s]);
        lb = as_problem_peak_lower_bound(E->gp[s].p);
        E->lb = fmax(E->lb, lb);
        if (E->budget[s] > 0 && lb > E->budget[s] * (1 + 1e-9)) {
            E->status = "pruned";
            break; /* one stage that cannot fit is enough: the others are not built */
        }
    }
    if (E->status != NULL)
        return AS_OK;
    /* the simulation's seconds as the largest rate of this process's simulations so far
       predicts them (0: none yet; solve_stages keeps 10 % of the limit at least) */
    sim_est = x->sim_rate * c->k * (double)nops;
    if (solve_stages(x, c, E, t0, sim_est, err) != AS_OK)
        return err->code;
    for (round = 0;; round++) {
        int over = 0, left = 0;
        double s0 = E->sim_s;
        if (merge_sim(x, c, g, E, err) != AS_OK)
            return err->code;
        sim_last = E->sim_s - s0;
        x->sim_rate = fmax(x->sim_rate, sim_last / (c->k * (double)nops));
        if (E->limit[0] != '\0')
            break; /* no time for another refit: the plans as they are (their peak simulated) */
        for (s = 0; s < c->p; s++)
            left += E->budget[s] > 0 && E->peak[s] > E->budget[s] * (1 + 1e-9);
        for (s = 0; s < c->p; s++) {
            double share, ts;
            if (E->budget[s] <= 0 || E->peak[s] <= E->budget[s] * (1 + 1e-9))
                continue;
            over++;
            E->rb[s] = as_pipe_refit_budget(E->rb[s], E->peak[s], E->budget[s]);
            if (round + 1 >= SWEEP_FIT_ROUNDS || E->rb[s] <= 0) {
                E->status = "infeasible";
                return as_errf(err, AS_ESOLVER, "stage %d: no plan found that fits in the "
                               "device memory with %d microbatches in flight", s,
                               as_pipe_inflight(c->p, c->k, s, 0));
            }
            /* what is left of the limit but the next simulation's time (this one's) */
            share = solve_share(E, x->o->time_limit > 0 ? t0 + x->o->time_limit - sim_last : 0,
                                left - over + 1);
            if (share < 0) {
                /* the simulated peak of the current plans exceeds the memory: the line says
                   so (oom) with the round that ran out of time */
                snprintf(E->limit, sizeof E->limit, "time limit (%g s) reached in memory "
                         "refit round %d before stage %d was re-solved under %.4g GiB",
                         x->o->time_limit, round + 1, s, E->rb[s] / (1 << 30));
                break;
            }
            ts = as_now();
            if (stage_solve(c, E, s, share, err) != AS_OK) {
                if (E->status == NULL && x->o->time_limit > 0 &&
                    (as_now() - t0 >= 0.99 * x->o->time_limit ||
                     as_now() - ts >= 0.99 * share)) {
                    /* the re-solve found nothing in time: the previous plan stays */
                    snprintf(E->limit, sizeof E->limit, "time limit (%g s) reached in memory "
                             "refit round %d: %.300s", x->o->time_limit, round + 1, err->msg);
                    memset(err, 0, sizeof *err);
                    break;
                }
                return err->code;
            }
        }
        if (over == 0)
            break;
    }
    return AS_OK;
}

static void
eval_free(const as_sweep_cfg *c, eval *E)
{
    int s;

    for (s = 0; E->gp != NULL && s < c->p; s++) {
        as_solve_result_free(&E->res[s]);
        as_graph_problem_free(&E->gp[s]);
    }
    for (s = 0; E->start != NULL && s < c->p; s++)
        free(E->start[s]);
    free(E->start);
    free(E->start_obj);
    free(E->gp);
    free(E->res);
    free(E->budget);
    free(E->rb);
    free(E->peak);
    free(E->unit);
    free(E->tunit);
    free(E->count);
    free(E->stage);
    free(E->tstage);
    free(E->mbdim);
    as_sim_result_free(E->sim);
    as_shard_plan_free(E->plan);
    as_graph_free(E->m);
}

static json_t *
num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The configuration's fields of its line. */
static void
cfg_json(json_t *j, const as_sweep_cfg *c)
{
    json_object_set_new(j, "config", json_string(c->key));
    json_object_set_new(j, "devices", json_integer(c->n));
    json_object_set_new(j, "pipeline", json_integer(c->p));
    json_object_set_new(j, "microbatches", json_integer(c->k));
    json_object_set_new(j, "mesh", json_string(c->mesh));
    json_object_set_new(j, "recompute", json_string(as_recompute_name(c->recompute)));
    json_object_set_new(j, "solver", json_string(c->solver));
    json_object_set_new(j, "zero", json_integer(c->zero));
    json_object_set_new(j, "cost_model", json_string(c->cost != NULL ? c->cost : "roofline"));
}

/* DIR/p-2_k-4_mesh-2x2_recompute-none_solver-glpk.json: the plan file of KEY. */
static void
plan_path(const char *dir, const char *key, char *buf, size_t n)
{
    size_t len, i;

    snprintf(buf, n, "%s/", dir);
    len = strlen(buf);
    for (i = 0; key[i] != '\0' && len + 6 < n; i++)
        buf[len++] = key[i] == ',' ? '_' : key[i] == '=' ? '-' : key[i];
    snprintf(buf + len, n - len, ".json");
}

/* Solve and simulate C into a JSON line (new reference) and *R. */
static json_t *
eval_config(sweep_ctx *x, const as_sweep_cfg *c, record *r)
{
    eval E;
    as_err err = {0};
    json_t *j = json_object();
    double t0 = as_now();
    int rc;

    memset(&E, 0, sizeof E);
    rc = eval_run(x, c, &E, &err);
    memset(r, 0, sizeof *r);
    snprintf(r->key, sizeof r->key, "%s", c->key);
    r->zero = c->zero;
    r->throughput = r->peak = r->time = r->objective = NAN;
    cfg_json(j, c);
    if (rc == AS_OK && E.status == NULL) {
        int s;
        for (s = 0; s < c->p; s++)
            if (E.res[s].plans[0].objective >= AS_STRAT_INFINITY_COST) {
                /* a plan stopped at the time limit (a quick beam start) can hold a
                   strategy the filters forbid (the axis roles; its cost is their
                   infinity): not an answer to the question asked */
                rc = as_errf(&err, AS_ESOLVER, "stage %d: its plan (objective %.3g s) holds "
                             "a forbidden strategy (--role)", s,
                             E.res[s].plans[0].objective);
                break;
            }
    }
    if (rc == AS_OK && E.status == NULL) {
        double total = 0, bound = 0, tf, gap = 0;
        as_err e3 = {0};
        const as_solver_ops *ops = as_solver_find(c->solver, &e3);
        int exact = ops != NULL && (ops->flags & AS_SOLVER_EXACT);
        int s, oom, limit = E.limit[0] != '\0';
        for (s = 0; s < c->p; s++) {
            const as_plan *pl = &E.res[s].plans[0];
            total += pl->objective;
            bound = isfinite(bound) && isfinite(pl->bound) ? bound + pl->bound : -HUGE_VAL;
            /* a stage the solver left feasible (not proved within the gap) stopped at its
               share of the time limit */
            limit |= exact && pl->status != AS_OUTCOME_OPTIMAL;
            gap = fmax(gap, isfinite(pl->bound) ? as_rel_gap(pl->objective, pl->bound)
                                                : HUGE_VAL);
        }
        oom = E.sim->capacity > 0 && E.plan->peak > E.sim->capacity * (1 + 1e-9);
        snprintf(r->status, sizeof r->status, "%s", oom ? "oom" : limit ? "limit" : "ok");
        r->throughput = E.sim->throughput;
        r->peak = E.plan->peak;
        r->time = E.sim->time;
        r->objective = E.plan->objective;
        json_object_set_new(j, "status", json_string(r->status));
        json_object_set_new(j, "solver_status",
                            json_string(as_outcome_name(E.res[c->p - 1].plans[0].status)));
        for (s = 0; s < c->p; s++)
            if (E.res[s].plans[0].status != AS_OUTCOME_OPTIMAL)
                json_object_set_new(j, "solver_status",
                                    json_string(as_outcome_name(E.res[s].plans[0].status)));
        /* the largest relative gap of a stage's plan to its bound (null: no bound) */
        json_object_set_new(j, "gap", num_or_null(gap));
        if (E.limit[0] != '\0')
            json_object_set_new(j, "limit", json_string(E.limit));
        json_object_set_new(j, "objective", json_real(E.plan->objective));
        json_object_set_new(j, "stage_objective_sum", json_real(total));
        json_object_set_new(j, "bound", c->p == 1 ? num_or_null(bound) : json_null());
        json_object_set_new(j, "time", json_real(E.sim->time));
        json_object_set_new(j, "throughput", json_real(E.sim->throughput));
        tf = E.sim->time > 0 ? x->flops / E.sim->time / E.sim->ndevices / 1e12 : 0;
        json_object_set_new(j, "tflops_per_device", json_real(tf));
        json_object_set_new(j, "mfu", x->peak_flops > 0 ? json_real(tf * 1e12 / x->peak_flops)
                                                        : json_null());
        json_object_set_new(j, "peak_memory", json_real(E.plan->peak));
        /* the stages' memory lower bound (as_problem_peak_lower_bound): no plan below it */
        json_object_set_new(j, "lower_bound", json_real(E.lb));
        json_object_set_new(j, "capacity", json_real(E.sim->capacity));
        json_object_set_new(j, "oom", json_boolean(oom));
        json_object_set_new(j, "bubble", json_real(E.sim->bubble));
        json_object_set_new(j, "stages_copied", json_integer(E.copied));
        if (E.started > 0) {
            /* so many stages took the plan of the configuration on START_MESH (its axes
               split): the solver found none, or a dearer one, in its time */
            double so = 0;
            for (s = 0; s < c->p && E.start[s] != NULL; s++)
                so += E.start_obj[s];
            json_object_set_new(j, "start_mesh", json_string(E.start_mesh));
            json_object_set_new(j, "start_objective", s == c->p ? json_real(so) : json_null());
            json_object_set_new(j, "stages_started", json_integer(E.started));
        }
        for (s = 0; s < c->p; s++)
            kept_add(x, c, &E, s);
        if (x->o->plans != NULL) {
            char path[4096];
            as_err e2 = {0};
            plan_path(x->o->plans, c->key, path, sizeof path);
            /* written (atomically) before the line: a line's plan file exists */
            if (as_shard_plan_write(E.plan, path, &e2) == AS_OK) {
                json_object_set_new(j, "plan", json_string(path));
            } else {
                char line[512];
                as_one_line(line, sizeof line, e2.msg);
                snprintf(r->status, sizeof r->status, "error");
                json_object_set_new(j, "status", json_string("error"));
                json_object_set_new(j, "error", json_string(line));
            }
        }
    } else {
        const char *st = E.status != NULL ? E.status : "error";
        snprintf(r->status, sizeof r->status, "%s", st);
        json_object_set_new(j, "status", json_string(st));
        if (strcmp(st, "pruned") == 0) {
            json_object_set_new(j, "lower_bound", json_real(E.lb));
            json_object_set_new(j, "capacity", json_real(E.budget_max));
        } else {
            char line[512];
            as_one_line(line, sizeof line, err.msg);
            json_object_set_new(j, "error", json_string(line));
        }
    }
    json_object_set_new(j, "solve_s", json_real(E.solve_s));
    json_object_set_new(j, "simulate_s", json_real(E.sim_s));
    json_object_set_new(j, "wall_s", json_real(as_now() - t0));
    eval_free(c, &E);
    return j;
}

/* ---- the JSONL ---- */

static json_t *
header_json(const as_sweep_opts *o)
{
    json_t *j = json_pack("{s:{s:s,s:i,s:s,s:I}}", "sweep", "graph", o->source, "devices",
                          o->devices, "hw", o->hw != NULL ? o->hw : "a100-dgx", "batch",
                          (json_int_t)o->batch);

    if (o->nbatches > 1) { /* one header for the sweeps of every batch */
        json_t *a = json_array();
        int i;
        for (i = 0; i < o->nbatches; i++)
            json_array_append_new(a, json_integer(o->batches[i]));
        json_object_set_new(json_object_get(j, "sweep"), "batch", a);
    }

    /* only when given: the header of a sweep without them stays as it was */
    if (o->roles != NULL)
        json_object_set_new(json_object_get(j, "sweep"), "roles", json_string(o->roles));
    if (o->nzero > 1) { /* ZeRO as a dimension */
        json_t *a = json_array();
        int i;
        for (i = 0; i < o->nzero; i++)
            json_array_append_new(a, json_integer(o->zeros[i]));
        json_object_set_new(json_object_get(j, "sweep"), "zero", a);
    } else if (o->zero > 0) {
        json_object_set_new(json_object_get(j, "sweep"), "zero", json_integer(o->zero));
    }
    if (o->ncost > 1) { /* the cost model as a dimension */
        json_t *a = json_array();
        int i;
        for (i = 0; i < o->ncost; i++)
            json_array_append_new(a, json_string(o->costs[i]));
        json_object_set_new(json_object_get(j, "sweep"), "cost_model", a);
    } else if (o->cost != NULL) {
        json_object_set_new(json_object_get(j, "sweep"), "cost_model", json_string(o->cost));
    }
    if (o->ndevs > 1) {
        json_t *a = json_array();
        int i;
        for (i = 0; i < o->ndevs; i++)
            json_array_append_new(a, json_integer(o->devs[i]));
        json_object_set_new(json_object_get(j, "sweep"), "devices_list", a);
    }
    return j;
}

static void
record_from_json(json_t *j, record *r, int zero)
{
    json_t *v;

    memset(r, 0, sizeof *r);
    r->zero = (v = json_object_get(j, "zero")) != NULL ? (int)json_integer_value(v) : zero;
    snprintf(r->key, sizeof r->key, "%s", json_string_value(json_object_get(j, "config")));
    snprintf(r->status, sizeof r->status, "%s",
             json_string_value(json_object_get(j, "status")) ? json_string_value(json_object_get(
                                                                     j, "status")) : "error");
    r->throughput = (v = json_object_get(j, "throughput")) ? json_number_value(v) : NAN;
    r->peak = (v = json_object_get(j, "peak_memory")) ? json_number_value(v) : NAN;
    r->time = (v = json_object_get(j, "time")) ? json_number_value(v) : NAN;
    r->objective = (v = json_object_get(j, "objective")) ? json_number_value(v) : NAN;
    r->lb = (v = json_object_get(j, "lower_bound")) ? json_number_value(v) : NAN;
}

static char *
line_text(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));

    if (s == NULL)
        as_oom(0, "a sweep line");
    return s;
}

/* One write() of the line S and its newline (O_APPEND): a kill leaves a whole line or a cut last one. */
static int
append_text(int fd, const char *s, const char *path, as_err *err)
{
    size_t len = strlen(s);
    char *b = as_xmalloc(len + 1);
    ssize_t w;

    memcpy(b, s, len);
    b[len++] = '\n';
    w = write(fd, b, len);
    free(b);
    if (w < 0 || (size_t)w != len)
        return as_errf(err, AS_EIO, "%s: %s", path, w < 0 ? strerror(errno) : "short write");
    return AS_OK;
}

static int
append_line(int fd, json_t *j, const char *path, as_err *err)
{
    char *s = line_text(j);
    int rc = append_text(fd, s, path, err);

    free(s);
    return rc;
}

/*
 * Read the existing JSONL: check its header against O, collect the records
 * of whole lines (a cut last line is dropped: the file is truncated to the
 * last newline).  *FD gets the file open for appending (header written
 * when new).
 */
static int
jsonl_open(const as_sweep_opts *o, record **recs, size_t *nrec, int *fd, as_err *err)
{
    char *buf = NULL, *line, *nl;
    size_t len = 0, cap = 0, keep = 0;
    json_t *hdr = header_json(o);
    int rc = AS_OK, first = 1;
    struct stat sb;

    *recs = NULL;
    *nrec = 0;
    *fd = -1;
    if (stat(o->out, &sb) == 0 && as_read_file(o->out, &buf, &len, err) != AS_OK) {
        json_decref(hdr);
        return err->code;
    }
    for (line = buf; buf != NULL && line < buf + len && (nl = memchr(line, '\n', (size_t)(buf +
         len - line))) != NULL; line = nl + 1) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)(nl - line), 0, &je);
        if (first) {
            if (j == NULL || !json_equal(j, hdr)) {
                rc = as_errf(err, AS_EUSAGE, "%s: written by another sweep (graph, devices, hw, "
                             "batch, roles, zero or cost model differ); give another -o or "
                             "remove it", o->out);
                json_decref(j);
                break;
            }
            first = 0;
        } else if (j != NULL && json_is_string(json_object_get(j, "config"))) {
            if (*nrec == cap) {
                cap = cap ? 2 * cap : 64;
                *recs = as_xreallocarray(*recs, cap, sizeof **recs);
            }
            record_from_json(j, &(*recs)[(*nrec)++], o->zero);
        }
        json_decref(j);
        keep = (size_t)(nl + 1 - buf);
    }
    if (rc == AS_OK && buf != NULL && first && len > 0)
        rc = as_errf(err, AS_EUSAGE, "%s: not a sweep's JSONL (no header line)", o->out);
    free(buf);
    if (rc == AS_OK) {
        *fd = open(o->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
        if (*fd < 0)
            rc = as_errf(err, AS_EIO, "%s: %s", o->out, strerror(errno));
        else if (ftruncate(*fd, (off_t)keep) != 0)
            rc = as_errf(err, AS_EIO, "%s: %s", o->out, strerror(errno));
        else if (keep == 0)
            rc = append_line(*fd, hdr, o->out, err);
    }
    json_decref(hdr);
    if (rc != AS_OK) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        free(*recs);
        *recs = NULL;
        *nrec = 0;
    }
    return rc;
}

/* ---- output ---- */

/* Ranked: a plan that fits, proved (ok) or the best at the time limit (limit). */
static int
fits(const record *r)
{
    return strcmp(r->status, "ok") == 0 || strcmp(r->status, "limit") == 0;
}

static int
rec_cmp(const void *a, const void *b)
{
    const record *x = a, *y = b;
    int fx = fits(x), fy = fits(y);

    if (fx != fy)
        return fy - fx;
    if (x->throughput != y->throughput)
        return x->throughput > y->throughput ? -1 : 1;
    return strcmp(x->key, y->key);
}

static void
print_table(FILE *fp, record *r, size_t n, int top)
{
    size_t i;
    char b[32];
    int w = 48; /* the config column: wider for keys prefixed by b=B,n=N, */

    qsort(r, n, sizeof *r, rec_cmp);
    for (i = 0; i < n && i < (size_t)top; i++)
        if (strlen(r[i].key) > (size_t)w)
            w = (int)strlen(r[i].key);
    fprintf(fp, "%-4s %-*s %12s %11s %12s %12s %s\n", "rank", w, "config", "samples/s",
            "peak/dev", "time (s)", "objective", "status");
    for (i = 0; i < n && i < (size_t)top; i++) {
        if (!fits(&r[i]) && strcmp(r[i].status, "oom") != 0)
            break;
        fprintf(fp, "%-4zu %-*s %12.4g %11s %12.6g %12.6g %s\n", i + 1, w, r[i].key,
                r[i].throughput, as_fmt_bytes(r[i].peak, b, sizeof b), r[i].time,
                r[i].objective, r[i].status);
    }
}

/*
 * The CSV of records R of the sweep of batch O->batch.  With a --batch list,
 * the first batch's sweep starts the file and the others append their rows:
 * one file, the batch column telling them apart.
 */
static int
write_csv(const char *path, const as_sweep_opts *o, const record *r, size_t n, as_err *err)
{
    size_t i, len = 0, cap = 256;
    char *s = NULL;
    int rc;

    if (o->batch_index > 0) { /* a later batch of the list: after the rows written before */
        AS_CHECK(as_read_file(path, &s, &len, err));
        cap = len + 256;
        s = as_xrealloc(s, cap);
    } else {
        s = as_xmalloc(cap);
        len = (size_t)snprintf(s, cap, "batch,config,status,throughput,peak_memory,time,"
                               "objective,zero\n");
    }
    for (i = 0; i < n; i++) {
        int w;
        for (;;) {
            w = snprintf(s + len, cap - len, "%lld,\"%s\",%s,%.17g,%.17g,%.17g,%.17g,%d\n",
                         (long long)o->batch, r[i].key, r[i].status, r[i].throughput, r[i].peak,
                         r[i].time, r[i].objective, r[i].zero);
            if (w >= 0 && (size_t)w < cap - len)
                break;
            cap *= 2;
            s = as_xrealloc(s, cap);
        }
        len += (size_t)w;
    }
    rc = as_write_file_atomic(path, s, len, err);
    free(s);
    return rc;
}

/*
 * The chart's file for the sweep of O: PATH itself, or with a --batch list
 * PATH with "-bB" before its extension (pareto.svg -> pareto-b256.svg), one
 * chart per batch (their throughputs are not on one scale).
 */
static void
svg_path(const char *path, const as_sweep_opts *o, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');

    if (o->nbatches <= 1) {
        snprintf(buf, n, "%s", path);
        return;
    }
    if (dot == NULL || (slash != NULL && dot < slash) || dot == (slash ? slash + 1 : path))
        dot = path + strlen(path);
    snprintf(buf, n, "%.*s-b%lld%s", (int)(dot - path), path, (long long)o->batch, dot);
}

/* ---- the Pareto chart ---- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static void
sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        int w;
        va_start(ap, fmt);
        w = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (w < 0)
            return;
        if ((size_t)w < b->cap - b->len) {
            b->len += (size_t)w;
            return;
        }
        b->cap = 2 * b->cap + (size_t)w + 1;
        b->s = as_xrealloc(b->s, b->cap);
    }
}

/* A tick step of about RANGE / 5: 1, 2 or 5 times a power of ten. */
static double
nice_step(double range)
{
    double raw = range / 5, p = pow(10, floor(log10(raw))), f = raw / p;

    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static int
pareto_cmp(const void *a, const void *b)
{
    const record *x = *(const record *const *)a, *y = *(const record *const *)b;

    if (x->peak != y->peak)
        return x->peak < y->peak ? -1 : 1;
    if (x->throughput != y->throughput)
        return x->throughput > y->throughput ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int
plotted(const record *r)
{
    return (fits(r) || strcmp(r->status, "oom") == 0) && isfinite(r->peak) &&
           isfinite(r->throughput);
}

/*
 * Peak memory per device (x) against throughput (y): configurations that fit
 * (status ok) as blue dots, those that do not (oom: red dots; pruned: red
 * crosses on the x axis at their memory lower bound), the Pareto front of the
 * fitting ones (no other has less memory and more throughput) joined by a line.
 */
static int
write_svg(const char *path, const as_sweep_opts *o, const record *r, size_t n, as_err *err)
{
    enum { W = 760, H = 520, L = 90, RM = 30, TOP = 70, BOT = 70 };
    const double pw = W - L - RM, ph = H - TOP - BOT;
    sbuf b = {as_xmalloc(4096), 0, 4096};
    const record **f = as_xcalloc(n + 1, sizeof *f);
    double xmax = 0, ymax = 0, unit, xs, ys, v, best = -HUGE_VAL;
    const char *uname;
    size_t i, nf = 0, nfront = 0;
    int rc;

    for (i = 0; i < n; i++) {
        if (plotted(&r[i])) {
            xmax = fmax(xmax, r[i].peak);
            ymax = fmax(ymax, r[i].throughput);
        } else if (strcmp(r[i].status, "pruned") == 0 && isfinite(r[i].lb)) {
            xmax = fmax(xmax, r[i].lb);
        }
        if (plotted(&r[i]) && fits(&r[i]))
            f[nf++] = &r[i];
    }
    unit = xmax >= (double)(1 << 30) ? (double)(1 << 30) : (double)(1 << 20);
    uname = unit > (double)(1 << 20) ? "GiB" : "MiB";
    xmax = xmax > 0 ? xmax * 1.05 / unit : 1;
    ymax = ymax > 0 ? ymax * 1.05 : 1;
    xs = nice_step(xmax);
    ys = nice_step(ymax);
    xmax = ceil(xmax / xs) * xs;
    ymax = ceil(ymax / ys) * ys;
#define PX(m) (L + (m) / unit / xmax * pw)
#define PY(t) (TOP + ph - (t) / ymax * ph)
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
              "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
              "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
    sb_printf(&b, "<text x=\"%d\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">sweep: %d "
              "devices, batch %lld, %zu configurations</text>\n", W / 2, o->devices,
              (long long)o->batch, n);
    /* axes, ticks and grid */
    sb_printf(&b, "<g class=\"axes\" stroke=\"black\" fill=\"none\">\n"
              "<line x1=\"%d\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/>\n"
              "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%g\"/>\n</g>\n", L, TOP + ph, L + pw,
              TOP + ph, L, TOP, L, TOP + ph);
    for (v = 0; v <= xmax * (1 + 1e-9); v += xs) {
        double x = L + v / xmax * pw;
        sb_printf(&b, "<line class=\"xtick\" x1=\"%.2f\" y1=\"%g\" x2=\"%.2f\" y2=\"%g\" "
                  "stroke=\"black\"/><line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%g\" "
                  "stroke=\"#ddd\"/><text x=\"%.2f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n",
                  x, TOP + ph, x, TOP + ph + 5, x, TOP, x, TOP + ph, x, TOP + ph + 20, v);
    }
    for (v = 0; v <= ymax * (1 + 1e-9); v += ys) {
        double y = TOP + ph - v / ymax * ph;
        sb_printf(&b, "<line class=\"ytick\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
                  "stroke=\"black\"/><line x1=\"%d\" y1=\"%.2f\" x2=\"%g\" y2=\"%.2f\" "
                  "stroke=\"#ddd\"/><text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%g</text>\n",
                  L - 5, y, L, y, L, y, L + pw, y, L - 8, y + 4, v);
    }
    sb_printf(&b, "<text x=\"%g\" y=\"%d\" text-anchor=\"middle\">peak memory per device "
              "(%s)</text>\n", L + pw / 2, H - 22, uname);
    sb_printf(&b, "<text x=\"22\" y=\"%g\" text-anchor=\"middle\" transform=\"rotate(-90 22 %g)\">"
              "throughput (samples/s)</text>\n", TOP + ph / 2, TOP + ph / 2);
    /* the Pareto front of the configurations that fit */
    qsort(f, nf, sizeof *f, pareto_cmp);
    sb_printf(&b, "<polyline class=\"front\" fill=\"none\" stroke=\"#2a7\" stroke-width=\"2\" "
              "points=\"");
    for (i = 0; i < nf; i++)
        if (f[i]->throughput > best) {
            best = f[i]->throughput;
            sb_printf(&b, "%s%.2f,%.2f", nfront++ ? " " : "", PX(f[i]->peak),
                      PY(f[i]->throughput));
        }
    sb_printf(&b, "\"/>\n");
    for (i = 0; i < n; i++) {
        int fit = fits(&r[i]);
        char mb[32];
        if (plotted(&r[i]))
            sb_printf(&b, "<circle class=\"%s\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"%s\">"
                      "<title>%s: %.4g samples/s, %s</title></circle>\n", fit ? "fit" : "nofit",
                      PX(r[i].peak), PY(r[i].throughput), fit ? "#1f5fbf" : "#d62728",
                      r[i].key, r[i].throughput, as_fmt_bytes(r[i].peak, mb, sizeof mb));
        else if (strcmp(r[i].status, "pruned") == 0 && isfinite(r[i].lb))
            sb_printf(&b, "<path class=\"nofit\" d=\"M%.2f %.2fl8 8m0 -8l-8 8\" stroke=\"#d62728\" "
                      "stroke-width=\"2\"><title>%s: pruned, lower bound %s</title></path>\n",
                      PX(r[i].lb) - 4, PY(0) - 4, r[i].key,
                      as_fmt_bytes(r[i].lb, mb, sizeof mb));
    }
#undef PX
#undef PY
    /* legend, between the title and the plot */
    sb_printf(&b, "<g class=\"legend\" transform=\"translate(%d,46)\">\n"
              "<circle cx=\"0\" cy=\"0\" r=\"4\" fill=\"#1f5fbf\"/><text x=\"10\" y=\"4\">fits"
              "</text>\n<circle cx=\"70\" cy=\"0\" r=\"4\" fill=\"#d62728\"/><text x=\"80\" "
              "y=\"4\">does not fit (x: pruned, at its memory lower bound)</text>\n"
              "<line x1=\"394\" y1=\"0\" x2=\"406\" y2=\"0\" stroke=\"#2a7\" stroke-width=\"2\"/>"
              "<text x=\"412\" y=\"4\">Pareto front (%zu configurations)</text>\n</g>\n</svg>\n",
              L, nfront);
    rc = as_write_file_atomic(path, b.s, b.len, err);
    free(b.s);
    free(f);
    return rc;
}

static int
key_done(const record *r, size_t n, const char *key)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(r[i].key, key) == 0)
            return 1;
    return 0;
}

/* ---- running the configurations: in this process (--jobs 1) or in forked workers ---- */

typedef struct run {
    sweep_ctx *x;
    const as_sweep_opts *o;
    const as_sweep_cfg *cfg;
    size_t *queue, nqueue;       /* indices into cfg of the configurations to run, in order */
    char **line;               /* per queue entry: its JSON line once received */
    size_t got, written;       /* lines received; lines appended (a prefix of queue) */
    size_t total;              /* configurations of the sweep */
    record *recs;
    size_t nrec;
    int fd;                    /* the JSONL (-1: none) */
    int tty;
    double t0, best;
    char bestkey[AS_SWEEP_KEY_MAX];
    int running;
    int jobs;                  /* configurations evaluated at once (1: this process) */
    size_t nsolved;            /* lines received that were not pruned */
    double solved_s;           /* their wall_s, summed */
} run;

/* The line of queue entry T (owned text): record it, append every line now in order. */
static int
run_got(run *R, size_t t, char *text, as_err *err)
{
    json_t *j = json_loads(text, 0, NULL);
    record *rec = &R->recs[R->nrec];

    if (j == NULL || !json_is_object(j)) { /* a worker's line is ours: cannot happen */
        json_decref(j);
        free(text);
        return as_errf(err, AS_EINTERNAL, "a sweep worker sent a bad line");
    }
    record_from_json(j, rec, R->o->zero);
    if (strcmp(rec->status, "pruned") != 0) {
        json_t *w = json_object_get(j, "wall_s");
        R->nsolved++;
        R->solved_s += w != NULL ? json_number_value(w) : 0;
    }
    json_decref(j);
    R->nrec++;
    R->line[t] = text;
    R->got++;
    if (fits(rec) && !(rec->throughput <= R->best)) {
        R->best = rec->throughput;
        snprintf(R->bestkey, sizeof R->bestkey, "%s", rec->key);
    }
    /* in enumeration order, so --jobs N writes the file --jobs 1 writes */
    while (R->written < R->nqueue && R->line[R->written] != NULL) {
        if (R->fd >= 0 && append_text(R->fd, R->line[R->written], R->o->out, err) != AS_OK)
            return err->code;
        free(R->line[R->written]);
        R->line[R->written] = NULL;
        R->written++;
    }
    return AS_OK;
}

double
as_sweep_eta(size_t left, size_t nsolved, double solved_s, size_t got, double elapsed, int jobs,
             double time_limit)
{
    double each;

    if (left == 0)
        return 0;
    if (nsolved > 0)
        each = solved_s / (double)nsolved; /* a configuration that is solved, on average */
    else if (time_limit > 0)
        each = time_limit;                 /* only pruned lines so far: the limit bounds one */
    else if (got > 0)
        return elapsed / (double)got * (double)left;
    else
        return NAN;
    return each * (double)left / (jobs > 1 ? jobs : 1);
}

static void
run_progress(const run *R, const char *running)
{
    double el = as_now() - R->t0;
    size_t done = R->nrec;
    char eta[32] = "-";

    if (!R->tty)
        return;
    if (R->got > 0) {
        double left = as_sweep_eta(R->nqueue - R->got, R->nsolved, R->solved_s, R->got, el,
                                   R->jobs, R->o->time_limit);
        if (!isnan(left))
            snprintf(eta, sizeof eta, "%.0f s", left);
    }
    fprintf(stderr, "\rsweep: %zu/%zu done, %d running, best %s (%.4g samples/s), ETA %s%s%s"
            "\033[K", done, R->total, R->running,
            R->bestkey[0] ? R->bestkey : "-", isnan(R->best) ? 0.0 : R->best, eta,
            running != NULL ? "; running " : "", running != NULL ? running : "");
}

/* A line for configuration C that could not be evaluated (its worker died). */
static char *
failed_text(const as_sweep_cfg *c, const char *why, double wall)
{
    json_t *j = json_object();
    char *s;

    cfg_json(j, c);
    json_object_set_new(j, "status", json_string("error"));
    json_object_set_new(j, "error", json_string(why));
    json_object_set_new(j, "solve_s", json_real(0));
    json_object_set_new(j, "simulate_s", json_real(0));
    json_object_set_new(j, "wall_s", json_real(wall));
    s = line_text(j);
    json_decref(j);
    return s;
}

static int
run_serial(run *R, as_err *err)
{
    size_t t;

    for (t = 0; t < R->nqueue; t++) {
        const as_sweep_cfg *c = &R->cfg[R->queue[t]];
        record rec;
        json_t *j;
        R->running = 1;
        run_progress(R, c->key);
        j = eval_config(R->x, c, &rec);
        R->running = 0;
        if (run_got(R, t, line_text(j), err) != AS_OK) {
            json_decref(j);
            return err->code;
        }
        json_decref(j);
    }
    return AS_OK;
}

typedef struct worker {
    pid_t pid;                 /* 0: none */
    int task, result;          /* our ends: configuration indices out, lines in */
    long busy;                 /* queue entry running, -1 idle */
    double started;
    int timed_out;
} worker;

static int
write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

static int
read_full(int fd, void *buf, size_t n)
{
    char *p = buf;

    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

/* A worker: read configuration indices, answer each with its line (length, text); EOF ends. */
_Noreturn static void
worker_main(run *R, int task, int result)
{
    const char *crash = getenv("AUTOSHARD_SWEEP_CRASH"); /* tests: a worker that dies */
    uint64_t i;

    while (read_full(task, &i, sizeof i)) {
        const as_sweep_cfg *c = &R->cfg[i];
        record rec;
        json_t *j;
        char *s;
        uint64_t len;
        if (crash != NULL && strcmp(crash, c->key) == 0)
            raise(SIGKILL);
        j = eval_config(R->x, c, &rec);
        s = line_text(j);
        json_decref(j);
        len = strlen(s);
        if (!write_full(result, &len, sizeof len) || !write_full(result, s, len))
            _exit(1);
        free(s);
    }
    _exit(0);
}

static int
worker_start(run *R, worker *w, worker *all, int n, as_err *err)
{
    int tp[2], rp[2], k;
    pid_t pid;

    if (pipe(tp) != 0)
        return as_errf(err, AS_EIO, "sweep --jobs: pipe: %s", strerror(errno));
    if (pipe(rp) != 0) {
        close(tp[0]);
        close(tp[1]);
        return as_errf(err, AS_EIO, "sweep --jobs: pipe: %s", strerror(errno));
    }
    fflush(NULL);
    if ((pid = fork()) < 0) {
        close(tp[0]);
        close(tp[1]);
        close(rp[0]);
        close(rp[1]);
        return as_errf(err, AS_EIO, "sweep --jobs: fork: %s", strerror(errno));
    }
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the sweep was killed: stop too */
        if (getppid() == 1)
            _exit(1);
#endif
        signal(SIGPIPE, SIG_DFL);
        for (k = 0; k < n; k++) /* the other workers' pipes: their EOF must be theirs */
            if (all[k].pid > 0) {
                close(all[k].task);
                close(all[k].result);
            }
        if (R->fd >= 0)
            close(R->fd);
        close(tp[1]);
        close(rp[0]);
        worker_main(R, tp[0], rp[1]);
    }
    close(tp[0]);
    close(rp[1]);
    w->pid = pid;
    w->task = tp[1];
    w->result = rp[0];
    w->busy = -1;
    w->timed_out = 0;
    return AS_OK;
}

/* Reap W (closing its pipes); *WHY: how it ended. */
static void
worker_end(worker *w, int kill_it, char *why, size_t n)
{
    int st = 0;

    close(w->task);
    close(w->result);
    if (kill_it && w->pid > 0)
        kill(w->pid, SIGKILL);
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (why != NULL) {
        if (w->timed_out)
            snprintf(why, n, "the worker was killed: over the time limit");
        else if (WIFSIGNALED(st))
            snprintf(why, n, "the worker died: %s", strsignal(WTERMSIG(st)));
        else
            snprintf(why, n, "the worker exited with status %d", WEXITSTATUS(st));
    }
    w->pid = 0;
    w->busy = -1;
}

static int
run_parallel(run *R, int jobs, as_err *err)
{
    worker *w = as_xcalloc((size_t)jobs, sizeof *w);
    struct pollfd *pf = as_xcalloc((size_t)jobs, sizeof *pf);
    int *who = as_xcalloc((size_t)jobs, sizeof *who);
    size_t next = 0;
    int k, rc = AS_OK;
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    /* a worker far past its --time-limit (the solve's own limit failed) is killed; the
       simulation after the solves is outside the limit (gpt3-175b on 1024 devices with 384
       microbatches: 35-50 s), so the margin is wide: --jobs N gives -j 1's lines */
    double hard = R->o->time_limit > 0 ? 4 * R->o->time_limit + 120 : 0;

    for (k = 0; k < jobs; k++)
        w[k].busy = -1;

    while (rc == AS_OK && R->got < R->nqueue) {
        int np = 0;
        const char *shown = NULL;
        for (k = 0; k < jobs && rc == AS_OK; k++) {
            uint64_t i;
            if (w[k].busy >= 0 || next >= R->nqueue)
                continue;
            if (w[k].pid == 0 && (rc = worker_start(R, &w[k], w, jobs, err)) != AS_OK)
                break;
            i = R->queue[next];
            if (!write_full(w[k].task, &i, sizeof i)) { /* died idle: start another */
                worker_end(&w[k], 1, NULL, 0);
                k--;
                continue;
            }
            w[k].busy = (long)next++;
            w[k].started = as_now();
            R->running++;
        }
        if (rc != AS_OK)
            break;
        for (k = 0; k < jobs; k++)
            if (w[k].busy >= 0) {
                pf[np].fd = w[k].result;
                pf[np].events = POLLIN;
                pf[np].revents = 0;
                who[np++] = k;
                if (shown == NULL)
                    shown = R->cfg[R->queue[w[k].busy]].key;
            }
        run_progress(R, R->running == 1 ? shown : NULL);
        if (poll(pf, (nfds_t)np, 250) < 0 && errno != EINTR) {
            rc = as_errf(err, AS_EIO, "sweep --jobs: poll: %s", strerror(errno));
            break;
        }
        for (k = 0; k < np && rc == AS_OK; k++) {
            worker *x = &w[who[k]];
            size_t t = (size_t)x->busy;
            uint64_t len;
            char *text = NULL;
            if (pf[k].revents == 0) {
                if (hard > 0 && as_now() - x->started > hard && x->pid > 0) {
                    x->timed_out = 1;
                    kill(x->pid, SIGKILL);
                }
                continue;
            }
            if (read_full(x->result, &len, sizeof len) && len < ((uint64_t)1 << 32)) {
                text = as_xmalloc((size_t)len + 1);
                if (!read_full(x->result, text, (size_t)len)) {
                    free(text);
                    text = NULL;
                } else {
                    text[len] = '\0';
                }
            }
            if (text == NULL) { /* the worker died with the configuration */
                char why[128];
                double wall = as_now() - x->started;
                worker_end(x, 1, why, sizeof why);
                text = failed_text(&R->cfg[R->queue[t]], why, wall);
            } else {
                x->busy = -1;
            }
            R->running--;
            rc = run_got(R, t, text, err);
        }
    }
    for (k = 0; k < jobs; k++)
        if (w[k].pid > 0)
            worker_end(&w[k], rc != AS_OK, NULL, 0);
    signal(SIGPIPE, old_pipe);
    free(w);
    free(pf);
    free(who);
    return rc;
}

#ifdef HAVE_MPI
/* ---- distributed: `mpirun -n R autoshard sweep ...` (built --with-mpi) ----
 *
 * Every rank runs the same command line, so every rank enumerates the same
 * configurations.  Rank 0 reads the JSONL, deals the indices of the
 * configurations not done to ranks 1..R-1 one at a time (as run_parallel
 * deals them to forked workers), receives each line's text and appends the
 * lines in enumeration order (run_got): the file --jobs 1 writes.  Ranks > 0
 * evaluate and send; they never touch the JSONL.  Waiting is Iprobe and a
 * short sleep, not a blocking probe: Open MPI spins in those, and an
 * oversubscribed rank 0 would take a core from the ranks that solve.
 */
enum { TAG_TASK = 1, TAG_LINE, TAG_STOP };

static void
mpi_nap(long us)
{
    struct timespec ts = {0, us * 1000};

    nanosleep(&ts, NULL);
}

/* Ranks in the job when mpirun started this process with more than one, else 1 (no MPI). */
static int
mpi_launched(void)
{
    const char *s = getenv("OMPI_COMM_WORLD_SIZE");

    return s != NULL && atoi(s) > 1 ? atoi(s) : 1;
}

/* At exit: MPI ends once per process, after every sweep it ran (a --batch list runs several). */
static void
mpi_end(void)
{
    int done = 0;

    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

/* Rank > 0: evaluate the configurations rank 0 sends until it says stop. */
static int
mpi_worker(run *R, int rank, int size, as_err *err)
{
    size_t done = 0;

    for (;;) {
        MPI_Status st;
        int flag = 0;
        uint64_t i;
        record rec;
        json_t *j;
        char *s;

        MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
            mpi_nap(1000);
            continue;
        }
        if (st.MPI_TAG == TAG_STOP) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!R->o->quiet)
                as_info("sweep: rank %d of %d evaluated %zu configurations in %.3f s\n", rank,
                        size, done, as_now() - R->t0);
            return AS_OK;
        }
        MPI_Recv(&i, 1, MPI_UINT64_T, 0, TAG_TASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (i >= R->total)
            return as_errf(err, AS_EINTERNAL, "sweep: rank 0 sent configuration %llu of %zu",
                           (unsigned long long)i, R->total);
        j = eval_config(R->x, &R->cfg[i], &rec);
        s = line_text(j);
        json_decref(j);
        MPI_Send(s, (int)strlen(s), MPI_CHAR, 0, TAG_LINE, MPI_COMM_WORLD);
        free(s);
        done++;
    }
}

/* Rank 0 of SIZE: deal the queue to ranks 1..SIZE-1, write the lines; then stop them all. */
static int
mpi_coordinator(run *R, int size, as_err *err)
{
    long *busy = as_xcalloc((size_t)size, sizeof *busy);
    size_t next = 0, pending = 0;
    int k, rc = AS_OK;
    double shown = 0;

    for (k = 1; k < size; k++) {
        busy[k] = -1;
        if (next < R->nqueue) {
            uint64_t i = R->queue[next];
            MPI_Send(&i, 1, MPI_UINT64_T, k, TAG_TASK, MPI_COMM_WORLD);
            busy[k] = (long)next++;
            R->running++;
            pending++;
        }
    }
    /* after an error, the lines still on their way are received and dropped */
    while (pending > 0) {
        MPI_Status st;
        int flag = 0, n = 0, src;
        char *text;

        MPI_Iprobe(MPI_ANY_SOURCE, TAG_LINE, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
            if (as_now() - shown > 0.25) {
                run_progress(R, NULL);
                shown = as_now();
            }
            mpi_nap(2000);
            continue;
        }
        src = st.MPI_SOURCE;
        MPI_Get_count(&st, MPI_CHAR, &n);
        text = as_xmalloc((size_t)n + 1);
        MPI_Recv(text, n, MPI_CHAR, src, TAG_LINE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        text[n] = '\0';
        pending--;
        R->running--;
        if (src <= 0 || src >= size || busy[src] < 0) {
            free(text);
            if (rc == AS_OK)
                rc = as_errf(err, AS_EINTERNAL, "sweep: rank %d sent a line unasked", src);
            continue;
        }
        if (rc != AS_OK) {
            free(text);
            busy[src] = -1;
            continue;
        }
        rc = run_got(R, (size_t)busy[src], text, err);
        busy[src] = -1;
        if (rc == AS_OK && next < R->nqueue) {
            uint64_t i = R->queue[next];
            MPI_Send(&i, 1, MPI_UINT64_T, src, TAG_TASK, MPI_COMM_WORLD);
            busy[src] = (long)next++;
            R->running++;
            pending++;
        }
    }
    free(busy);
    return rc;
}

/* Rank 0: tell ranks 1..SIZE-1 there is nothing (more) to do. */
static void
mpi_stop(int size)
{
    int k;

    for (k = 1; k < size; k++)
        MPI_Send(NULL, 0, MPI_BYTE, k, TAG_STOP, MPI_COMM_WORLD);
}
#endif /* HAVE_MPI */

int
as_sweep_rank(void)
{
#ifdef HAVE_MPI
    const char *s = getenv("OMPI_COMM_WORLD_RANK");

    return mpi_launched() > 1 && s != NULL ? atoi(s) : 0;
#else
    return 0;
#endif
}

/* --plans DIR: made when missing; AS_EUSAGE when it is not a directory. */
static int
plans_dir(const char *dir, as_err *err)
{
    struct stat sb;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return as_errf(err, AS_EUSAGE, "--plans %s: %s", dir, strerror(errno));
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return as_errf(err, AS_EUSAGE, "--plans %s: not a directory", dir);
    return AS_OK;
}

int
as_sweep_run(const as_graph *g, const as_sweep_opts *o, FILE *table, as_sweep_summary *sum,
             as_err *err)
{
    sweep_ctx x;
    as_sweep_cfg *cfg = NULL;
    size_t ncfg = 0, i, nprev;
    run R;
    int rc;
    int32_t op;
#ifdef HAVE_MPI
    int mpi_size = mpi_launched(), mpi_rank = 0, mpi_stopped = 0;

    if (mpi_size > 1) {
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            MPI_Init(NULL, NULL);
            atexit(mpi_end);
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
#ifdef __linux__
        /* as the --jobs workers: mpirun (or its daemon) killed, the ranks stop too, so no
           orphan rank 0 goes on appending to the JSONL of the run started again */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            raise(SIGKILL);
#endif
    }
#endif

    memset(sum, 0, sizeof *sum);
    memset(&x, 0, sizeof x);
    memset(&R, 0, sizeof R);
    R.fd = -1;
    R.t0 = as_now();
    R.best = NAN;
    R.tty = !o->quiet && isatty(2);
    R.x = &x;
    R.o = o;
    x.g = g;
    x.o = o;
    x.nunits = graph_layers(g);
    for (op = 0; op < as_graph_nops(g); op++)
        x.flops += as_graph_op_flops(g, op);
    x.dtype = AS_DT_F32;
    for (op = 0; op < as_graph_ntensors(g); op++)
        if (as_graph_tensor(g, op)->kind == AS_TK_PARAM) {
            x.dtype = as_graph_tensor(g, op)->shape.dtype;
            break;
        }
    {
        as_hw hw;
        as_err e2 = {0};
        if (as_hw_load(o->hw != NULL ? o->hw : "a100-dgx", &hw, &e2) == AS_OK)
            x.peak_flops = as_hw_peak_flops(&hw, x.dtype);
    }
    rc = as_sweep_enumerate(o, x.nunits, o->batch, &cfg, &ncfg, err);
#ifdef HAVE_MPI
    if (mpi_size > 1 && mpi_rank > 0) {
        /* every rank enumerates alike: an error is rank 0's to report */
        sum->rank = mpi_rank;
        R.cfg = cfg;
        R.total = ncfg;
        rc = rc == AS_OK ? mpi_worker(&R, mpi_rank, mpi_size, err) : AS_OK;
        goto out;
    }
#endif
    if (rc == AS_OK && o->plans != NULL)
        rc = plans_dir(o->plans, err);
    if (rc == AS_OK && o->out != NULL)
        rc = jsonl_open(o, &R.recs, &R.nrec, &R.fd, err);
    if (rc != AS_OK)
        goto out;
    R.cfg = cfg;
    /* records of other configurations (another option list) stay in the file, not the table */
    nprev = R.nrec;
    {
        record *keep = as_xcalloc(ncfg + 1, sizeof *keep);
        size_t nk = 0;
        for (i = 0; i < ncfg; i++) {
            size_t q;
            for (q = 0; q < nprev; q++)
                if (strcmp(R.recs[q].key, cfg[i].key) == 0) {
                    keep[nk++] = R.recs[q];
                    break;
                }
        }
        free(R.recs);
        R.recs = keep;
        R.nrec = nk;
    }
    sum->total = R.total = ncfg;
    sum->skipped = R.nrec;
    for (i = 0; i < R.nrec; i++)
        if (fits(&R.recs[i]) && !(R.recs[i].throughput <= R.best)) {
            R.best = R.recs[i].throughput;
            snprintf(R.bestkey, sizeof R.bestkey, "%s", R.recs[i].key);
        }
    R.queue = as_xcalloc(ncfg + 1, sizeof *R.queue);
    for (i = 0; i < ncfg; i++)
        if (!key_done(R.recs, R.nrec, cfg[i].key))
            R.queue[R.nqueue++] = i;
    R.line = as_xcalloc(R.nqueue + 1, sizeof *R.line);
    R.jobs = o->jobs > 1 && R.nqueue > 1 ? (o->jobs < (int)R.nqueue ? o->jobs : (int)R.nqueue)
                                         : 1;
#ifdef HAVE_MPI
    if (mpi_size > 1) {
        R.jobs = mpi_size - 1;
        rc = mpi_coordinator(&R, mpi_size, err);
        mpi_stop(mpi_size);
        mpi_stopped = 1;
    } else
#endif
    if (R.jobs > 1)
        rc = run_parallel(&R, R.jobs, err);
    else
        rc = run_serial(&R, err);
    if (R.tty)
        fprintf(stderr, "\r\033[K");
    if (rc != AS_OK)
        goto out;
    sum->done = R.got;
    for (i = 0; i < R.nrec; i++) {
        sum->pruned += strcmp(R.recs[i].status, "pruned") == 0;
        sum->oom += strcmp(R.recs[i].status, "oom") == 0;
        sum->limit += strcmp(R.recs[i].status, "limit") == 0;
        sum->infeasible += strcmp(R.recs[i].status, "infeasible") == 0;
        sum->failed += strcmp(R.recs[i].status, "error") == 0;
    }
    sum->wall = as_now() - R.t0;
    if (o->csv != NULL && (rc = write_csv(o->csv, o, R.recs, R.nrec, err)) != AS_OK)
        goto out;
    if (o->svg != NULL) {
        char path[4096];
        svg_path(o->svg, o, path, sizeof path);
        if ((rc = write_svg(path, o, R.recs, R.nrec, err)) != AS_OK)
            goto out;
    }
    if (table != NULL)
        print_table(table, R.recs, R.nrec, o->top);
out:
#ifdef HAVE_MPI
    if (mpi_size > 1 && mpi_rank == 0 && cfg != NULL && !mpi_stopped)
        mpi_stop(mpi_size); /* rank 0 failed before dealing (the JSONL, --plans) */
#endif
    if (R.fd >= 0)
        close(R.fd);
    for (i = 0; i < 4; i++)
        as_graph_free(x.rg[i]);
    kept_free(&x);
    for (i = 0; R.line != NULL && i < R.nqueue; i++)
        free(R.line[i]);
    free(R.line);
    free(R.queue);
    free(cfg);
    free(R.recs);
    return rc;
}
