/* cmd_solve.c -- `autoshard solve`: solve a cost graph with a backend (or
 * read an external solver's solution), print a summary, write the plan.
 *
 *   autoshard solve --costgraph FILE [--solver glpk|cbc|brute] [--memory BYTES]
 *                   [--time-limit S] [--gap G] [--threads N] [--top K] [--no-reduce]
 *                   [--set SOLVER/KEY=VALUE]... [--solution SOLFILE] [-o plan.json]
 *
 * Exit 3 when no plan fits the memory budget; the message gives the peak of
 * the cheapest plan without the budget (found by solving again without it)
 * and the lower bound no plan can beat.
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "solve/solver.h"

enum { OPT_CG = 256, OPT_MEM, OPT_TIME, OPT_GAP, OPT_THREADS, OPT_TOP, OPT_NORED, OPT_SET,
       OPT_SOL };

#define SOLVE_MAX_PARAMS 32

typedef struct solve_cli {
    const char *costgraph, *out, *solution;
    double memory;                       /**< bytes, < 0 = the file's */
    as_solve_opts o;
    const char *params[SOLVE_MAX_PARAMS];
} solve_cli;

static int solve_exec(int argc, char **argv);

const struct as_cmd as_cmd_solve = {
    .name = "solve",
    .args = "--costgraph FILE [--solver NAME] [--memory BYTES] [--time-limit S] [--top K] "
            "[-o PLAN]",
    .summary = "choose one strategy per op: solve the ILP of a cost graph",
    .help = "Options:\n"
            "  --costgraph FILE     cost graph to solve (JSON, docs/costgraph.md)\n"
            "  -s, --solver NAME    glpk (default), cbc, brute\n"
            "  --memory BYTES       per-device budget (suffixes K M G T, Ki Mi Gi Ti);\n"
            "                       overrides the file's; 0 = none\n"
            "  --time-limit S       seconds (total, over all --top plans)\n"
            "  --gap G              stop at relative gap G (e.g. 0.01)\n"
            "  --threads N          solver threads (cbc)\n"
            "  --top K              the K best distinct plans (no-good cuts; docs/ilp.md)\n"
            "  --no-reduce          solve the plain ILP: no follow merging, no elimination\n"
            "  --set S/KEY=VALUE    backend parameter, e.g. glpk/presolve=0\n"
            "  --solution FILE      read an external solver's solution for the model that\n"
            "                       `autoshard export` wrote (CBC, glpsol -w/-o, Gurobi, HiGHS)\n"
            "  -o FILE              write the plan as JSON ('-' = stdout; summary to stderr)\n"
            "\nSolvers: glpk (linked, default), cbc (when built with CBC), brute (exhaustive,\n"
            "at most 1e7 plans).  Formulation and reductions: docs/ilp.md.\n",
    .exec = solve_exec,
};

/* Parse a byte count with an optional K/M/G/T (1000) or Ki/Mi/Gi/Ti (1024) suffix. */
static int
parse_bytes(const char *s, double *out)
{
    static const char *const suf[] = {"K", "M", "G", "T"};
    char *end;
    double x = strtod(s, &end), mul = 1;
    int i;

    if (end == s || !isfinite(x) || x < 0)
        return 0;
    for (i = 0; *end != '\0' && i < 4; i++) {
        double step = pow(1000, i + 1), bstep = pow(1024, i + 1);
        if (strcmp(end, suf[i]) == 0 || (end[0] == suf[i][0] && strcmp(end + 1, "B") == 0))
            mul = step;
        else if (end[0] == suf[i][0] && (strcmp(end + 1, "i") == 0 || strcmp(end + 1, "iB") == 0))
            mul = bstep;
    }
    if (*end != '\0' && mul == 1 && strcmp(end, "B") != 0)
        return 0;
    *out = x * mul;
    return 1;
}

static int
parse_num(const char *opt, const char *s, double lo, double *out)
{
    char *end;
    double x = strtod(s, &end);

    if (end == s || *end != '\0' || !isfinite(x) || x < lo)
        return as_cmd_usage(&as_cmd_solve, "%s must be a number >= %g, got '%s'", opt, lo, s);
    *out = x;
    return AS_EXIT_OK;
}

static int
solve_opt(solve_cli *c, int opt)
{
    double x;

    switch (opt) {
    case OPT_CG:
        c->costgraph = optarg;
        return AS_EXIT_OK;
    case 's':
        c->o.solver = optarg;
        return AS_EXIT_OK;
    case 'o':
        c->out = optarg;
        return AS_EXIT_OK;
    case OPT_SOL:
        c->solution = optarg;
        return AS_EXIT_OK;
    case OPT_MEM:
        if (!parse_bytes(optarg, &c->memory))
            return as_cmd_usage(&as_cmd_solve, "--memory: bad byte count '%s'", optarg);
        return AS_EXIT_OK;
    case OPT_TIME:
        return parse_num("--time-limit", optarg, 0, &c->o.lim.time_limit_s);
    case OPT_GAP:
        return parse_num("--gap", optarg, 0, &c->o.lim.gap);
    case OPT_THREADS:
        if (parse_num("--threads", optarg, 1, &x) != AS_EXIT_OK || x > 1024 || x != floor(x))
            return as_cmd_usage(&as_cmd_solve, "--threads must be an integer in 1..1024");
        c->o.lim.threads = (int)x;
        return AS_EXIT_OK;
    case OPT_TOP:
        if (parse_num("--top", optarg, 1, &x) != AS_EXIT_OK || x > 10000 || x != floor(x))
            return as_cmd_usage(&as_cmd_solve, "--top must be an integer in 1..10000");
        c->o.top = (size_t)x;
        return AS_EXIT_OK;
    case OPT_NORED:
        c->o.reduce = 0;
        return AS_EXIT_OK;
    case OPT_SET:
        if (c->o.nparams == SOLVE_MAX_PARAMS)
            return as_cmd_usage(&as_cmd_solve, "too many --set options");
        c->params[c->o.nparams++] = optarg;
        return AS_EXIT_OK;
    default:
        return as_cmd_usage(&as_cmd_solve, "unknown option");
    }
}

static int
solve_parse(int argc, char **argv, solve_cli *c)
{
    static const struct option opts[] = {
        {"costgraph", required_argument, NULL, OPT_CG}, {"solver", required_argument, NULL, 's'},
        {"memory", required_argument, NULL, OPT_MEM}, {"time-limit", required_argument, NULL, OPT_TIME},
        {"gap", required_argument, NULL, OPT_GAP}, {"threads", required_argument, NULL, OPT_THREADS},
        {"top", required_argument, NULL, OPT_TOP}, {"no-reduce", no_argument, NULL, OPT_NORED},
        {"set", required_argument, NULL, OPT_SET}, {"solution", required_argument, NULL, OPT_SOL},
        {"output", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0}};
    int opt, rc;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "s:o:", opts, NULL)) != -1) {
        if (opt == '?' || opt == ':')
            return as_cmd_usage(&as_cmd_solve, "bad or incomplete option '%s'",
                                argv[optind - 1]);
        if ((rc = solve_opt(c, opt)) != AS_EXIT_OK)
            return rc;
    }
    if (optind < argc)
        return as_cmd_usage(&as_cmd_solve, "solving graph '%s' needs --mesh, not available "
                            "yet; give a cost graph with --costgraph", argv[optind]);
    if (c->costgraph == NULL)
        return as_cmd_usage(&as_cmd_solve, "missing --costgraph FILE");
    c->o.params = c->params;
    return AS_EXIT_OK;
}

/* ---- output ---- */

static void
print_sizes(FILE *fp, const char *what, const as_ilp_stats *st)
{
    fprintf(fp, "%-13s%zu variables (%zu binary), %zu rows, %zu non-zeros\n", what, st->cols,
            st->int_cols, st->rows, st->nnz);
}

static void
print_plan(FILE *fp, const as_problem *p, const as_plan *pl, const char *solver, size_t idx)
{
    char b1[32], b2[32], sb[32];
    size_t v;

    fprintf(fp, "%-13s%s\n", "solver", solver);
    fprintf(fp, "%-13s%s\n", "status", as_outcome_name(pl->status));
    fprintf(fp, "%-13s%.9g s\n", "objective", pl->objective);
    if (isfinite(pl->bound))
        fprintf(fp, "%-13s%.9g s\n%-13s%.3g%%\n", "bound", pl->bound, "gap",
                100 * fmax(0, (pl->objective - pl->bound) / fmax(fabs(pl->objective), 1e-300)));
    else
        fprintf(fp, "%-13s(none)\n", "bound");
    fprintf(fp, "%-13s%.3f s", "time", pl->time_s);
    if (pl->nodes >= 0)
        fprintf(fp, ", %ld nodes", pl->nodes);
    fputc('\n', fp);
    if (as_problem_nlive(p) > 0)
        fprintf(fp, "%-13s%s per device (budget %s)\n", "peak memory",
                as_fmt_bytes(pl->peak, b1, sizeof b1),
                as_problem_memory(p) > 0 ? as_fmt_bytes(as_problem_memory(p), b2, sizeof b2)
                                         : "none");
    if (idx > 0)
        return;
    fprintf(fp, "strategies:\n");
    for (v = 0; v < as_problem_nnodes(p); v++)
        fprintf(fp, "  %-24s %s\n", as_problem_node(p, v)->name,
                as_problem_strategy_name(p, v, pl->choice[v], sb, sizeof sb));
}

static json_t *
plan_json(const as_problem *p, const as_plan *pl)
{
    json_t *o = json_object(), *nodes = json_array();
    char sb[32];
    size_t v;

    json_object_set_new(o, "status", json_string(as_outcome_name(pl->status)));
    json_object_set_new(o, "objective", json_real(pl->objective));
    json_object_set_new(o, "bound", isfinite(pl->bound) ? json_real(pl->bound) : json_null());
    json_object_set_new(o, "gap", isfinite(pl->bound) ? json_real(fmax(0, (pl->objective -
                        pl->bound) / fmax(fabs(pl->objective), 1e-300))) : json_null());
    json_object_set_new(o, "time", json_real(pl->time_s));
    json_object_set_new(o, "peak_memory", json_real(pl->peak));
    for (v = 0; v < as_problem_nnodes(p); v++)
        json_array_append_new(nodes, json_pack("{s:s,s:I,s:s}", "name",
                                               as_problem_node(p, v)->name, "strategy",
                                               (json_int_t)pl->choice[v], "strategy_name",
                                               as_problem_strategy_name(p, v, pl->choice[v], sb,
                                                                        sizeof sb)));
    json_object_set_new(o, "nodes", nodes);
    return o;
}

static int
write_plans(const char *path, const as_problem *p, const as_plan *plans, size_t n,
            const char *solver, as_err *err)
{
    json_t *root = plan_json(p, &plans[0]), *arr = json_array();
    char *s;
    size_t i;
    int rc;

    json_object_set_new(root, "solver", json_string(solver));
    json_object_set_new(root, "memory_budget", json_real(as_problem_memory(p)));
    for (i = 0; n > 1 && i < n; i++)
        json_array_append_new(arr, plan_json(p, &plans[i]));
    if (n > 1)
        json_object_set_new(root, "plans", arr);
    else
        json_decref(arr);
    s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    rc = as_write_file_atomic(path, s, strlen(s), err);
    if (rc == AS_OK && path != NULL && strcmp(path, "-") == 0)
        putchar('\n');
    free(s);
    return rc;
}

/* No plan fits: find what the cheapest plan needs without the budget. */
static int
solve_infeasible(as_problem *p, const solve_cli *c)
{
    as_solve_opts o = c->o;
    as_solve_result res;
    as_err err = {0};
    char b1[32], b2[32], b3[32];
    double budget = as_problem_memory(p);

    as_problem_set_memory(p, 0);
    o.top = 1;
    if (as_solve_problem(p, &o, &res, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (res.nplans == 0) {
        as_solve_result_free(&res);
        fprintf(stderr, "autoshard: no plan satisfies the alias constraints, whatever the "
                "memory budget\n");
        return AS_EXIT_INFEAS;
    }
    fprintf(stderr, "autoshard: no plan fits in %s per device; the cheapest plan without a "
            "memory limit needs %s per device (solved again without the limit), and no plan "
            "can need less than %s\n", as_fmt_bytes(budget, b1, sizeof b1),
            as_fmt_bytes(res.plans[0].peak, b2, sizeof b2),
            as_fmt_bytes(as_problem_peak_lower_bound(p), b3, sizeof b3));
    as_solve_result_free(&res);
    return AS_EXIT_INFEAS;
}

static int
solve_external(as_problem *p, const solve_cli *c, FILE *fp)
{
    as_plan plan;
    as_sol_status st;
    as_err err = {0};
    int rc;

    if (as_solve_from_values(p, c->o.reduce, c->solution, &plan, &st, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (plan.choice == NULL) {
        fprintf(stderr, "autoshard: %s: the solver found %s\n", c->solution,
                st == AS_SOL_INFEASIBLE ? "the model infeasible (no plan fits the limits)"
                                        : "no solution");
        return st == AS_SOL_INFEASIBLE ? AS_EXIT_INFEAS : AS_EXIT_RUNTIME;
    }
    print_plan(fp, p, &plan, "external", 0);
    rc = c->out ? write_plans(c->out, p, &plan, 1, "external", &err) : AS_OK;
    as_plan_free(&plan);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

static void
print_summary(FILE *fp, const as_problem *p, const solve_cli *c, const as_solve_result *r)
{
    const as_reduce_stats *s = &r->red;

    fprintf(fp, "%-13s%s: %zu nodes, %zu edges, %zu liveness points, %zu aliases\n",
            "cost graph", c->costgraph, as_problem_nnodes(p), as_problem_nedges(p),
            as_problem_nlive(p), as_problem_naliases(p));
    if (c->o.reduce)
        fprintf(fp, "%-13s%zu followers merged, %zu constant and %zu parallel edges, "
                "eliminated %zu/%zu/%zu of degree 0/1/2; %zu nodes, %zu edges left\n",
                "reductions", s->followers, s->const_edges, s->merged_edges, s->elim[0],
                s->elim[1], s->elim[2], s->nodes, s->edges);
    print_sizes(fp, "ILP before", &r->before);
    print_sizes(fp, "ILP after", &r->after);
    fprintf(fp, "%-13s%.3f s\n", "build", r->build_s);
}

static int
solve_run(as_problem *p, solve_cli *c)
{
    FILE *fp = c->out != NULL && strcmp(c->out, "-") == 0 ? stderr : stdout;
    as_solve_result res;
    as_err err = {0};
    size_t i;
    int rc;

    if (c->solution != NULL)
        return solve_external(p, c, fp);
    if (as_solve_problem(p, &c->o, &res, &err) != AS_OK)
        return as_cmd_fail(&err);
    print_summary(fp, p, c, &res);
    if (res.outcome == AS_OUTCOME_INFEASIBLE) {
        as_solve_result_free(&res);
        return solve_infeasible(p, c);
    }
    if (res.nplans == 0) {
        as_solve_result_free(&res);
        fprintf(stderr, "autoshard: solver '%s' stopped at the time limit (%g s) without a "
                "feasible plan\n", c->o.solver, c->o.lim.time_limit_s);
        return AS_EXIT_RUNTIME;
    }
    print_plan(fp, p, &res.plans[0], c->o.solver, 0);
    for (i = 1; i < res.nplans; i++)
        fprintf(fp, "plan %-8zu%.9g s (%s)\n", i + 1, res.plans[i].objective,
                as_outcome_name(res.plans[i].status));
    if (c->o.top > 1 && res.nplans < c->o.top)
        fprintf(fp, "(only %zu distinct plans within the limits)\n", res.nplans);
    rc = c->out ? write_plans(c->out, p, res.plans, res.nplans, c->o.solver, &err) : AS_OK;
    as_solve_result_free(&res);
    return rc == AS_OK ? AS_EXIT_OK : as_cmd_fail(&err);
}

static int
solve_exec(int argc, char **argv)
{
    solve_cli c = {0};
    as_problem *p = NULL;
    as_err err = {0};
    int rc;

    as_solve_opts_init(&c.o);
    c.memory = -1;
    c.o.lim.verbosity = as_verbosity;
    if ((rc = solve_parse(argc, argv, &c)) != AS_EXIT_OK)
        return rc;
    if (as_solver_find(c.o.solver, &err) == NULL)
        return as_cmd_usage(&as_cmd_solve, "%s", err.msg);
    if (as_problem_read(c.costgraph, &p, &err) != AS_OK)
        return as_cmd_fail(&err);
    if (c.memory >= 0)
        as_problem_set_memory(p, c.memory);
    rc = solve_run(p, &c);
    as_problem_free(p);
    return rc;
}
