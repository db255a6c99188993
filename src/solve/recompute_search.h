/* recompute_search.h -- which layers `solve --recompute auto` recomputes
 * (docs/solve.md "--recompute auto", docs/ilp.md "Recomputation as a
 * choice").
 *
 * The choice is one binary per layer (recompute it fully, or keep its
 * activations): the recompute time goes into the objective and the freed
 * activations out of the memory rows.  The search branches on those
 * binaries first and solves each leaf -- a setting of them -- as the ILP of
 * the step with exactly those layers recomputed, so that every plan it
 * returns is a plan of the step lower and simulate replay.
 *
 * Layers fall into classes of identical layers (as_recompute_classes: the
 * same ops and shapes, and the same residue of tying, whose layers share
 * one set of variables).  Inside a class the earliest layers are
 * recomputed first: a layer's kept activations live from its forward to
 * its backward, and those intervals nest (an earlier layer's contains a
 * later one's), so at every point of the step recomputing the c earliest
 * layers of a class frees at least the bytes any c layers of it free, at
 * the same recompute time.  A setting is thus a count per class (with one
 * class: the first k layers in program order, the search of before).
 *
 * Exact bounds, for the model in which each recomputed op leaves its
 * outputs in the layouts its original leaves them in (Megatron's
 * recomputed forward runs the same code) and the layers of a class share
 * their strategies: a plan of a setting, copies left out, is then a plan of
 * the step with nothing recomputed at the same cost, so it costs at least
 * LB (that step's optimum with no budget) plus the least time of its
 * copies.  The settings are solved without those restrictions (each as its
 * own step, tied as that step ties, copies free), so a solved setting may
 * only do better than the model: the plan returned costs at most the
 * model's optimum over every setting, within the gap.  Settings are solved
 * cheapest bound first, after the settings the search of before tried
 * (nothing; every layer; bisection on the first k for the fewest that
 * fit), and the search stops when the next bound is not below the best
 * plan (within the gap).  A setting with fewer layers per class than one
 * that does not fit does not fit either (recomputing fewer layers holds
 * more memory) and is not solved.
 *
 * The search does not build or solve anything itself: the caller evaluates
 * a setting (rewrites the step, builds and solves its ILP, checks the
 * plan's memory by the simulator) through callbacks, so this layer stays
 * below the command line and the simulator.
 */
#ifndef AS_RECOMPUTE_SEARCH_H
#define AS_RECOMPUTE_SEARCH_H

#include "autoshard.h"
#include "formulate/build.h"
#include "graph/graph.h"

/** Most settings (product over classes of layers + 1) searched; beyond it every layer
    is put in one class (the first k layers in program order). */
#define AS_RECOMP_MAX_SETTINGS 65536

/** The layers and their classes. */
typedef struct as_recomp_space {
    int nl;             /**< layers, in forward order */
    int ncls;           /**< classes */
    const int *cls;     /**< [nl] class of each layer, 0..ncls-1 */
    const double *cost; /**< [nl] least time its copies add to any plan, s (>= 0); NULL: 0 */
    double gap;         /**< relative: a setting whose bound is within it of the best plan
                             is not solved */
} as_recomp_space;

/** Callbacks of the search; UD is passed through. */
typedef struct as_recomp_ops {
    /**
     * Solve the step with layer j recomputed when ON[j] (j < nl): *FITS 1 (a plan that
     * fits: *OBJECTIVE, and *BOUND a lower bound on the setting's optimum, -HUGE_VAL
     * unknown), 0 (no plan fits) or -1 (stopped without a plan: unknown).  The setting
     * stays pending until keep or drop.  An error ends the search (once the time limit
     * has passed: the search stops with the best plan before it).
     */
    int (*try_set)(void *ud, const int *on, int *fits, double *objective, double *bound,
                   as_err *err);
    /** The pending setting becomes the best one (the previous best is dropped). */
    void (*keep)(void *ud);
    /** The pending setting is dropped. */
    void (*drop)(void *ud);
    /** *LB: a lower bound on every setting's objective less its copies' time (the
        LB above); -HUGE_VAL when unknown (no pruning by bound). */
    int (*base_bound)(void *ud, double *lb, as_err *err);
} as_recomp_ops;

typedef struct as_recomp_result {
    int *best;     /**< [nl] ON of the plan kept (malloc'd), NULL when no setting fits */
    int nbest;     /**< layers it recomputes */
    int tried;     /**< settings solved */
    int pruned;    /**< settings not solved: their bound, or below one that does not fit */
    int nsettings; /**< settings in all */
    int timed_out; /**< the time limit stopped the search (best: the best before it) */
    double bound;  /**< lower bound on every setting's objective (-HUGE_VAL unknown) */
    char *log;     /**< "0: no fit, 24: 0.95 s, 12: 0.93 s, 5+4: 0.909 s" as tried (malloc'd) */
} as_recomp_result;

/**
 * Search the settings of SP as described above.  TIME_LIMIT_S > 0 (seconds since T0):
 * no setting is started after it, and a setting that fails once it has passed ends the
 * search instead of failing it, when a setting fitted before.  Returns AS_OK (OUT->best
 * NULL: nothing fits), or the error of a setting.  Free OUT with as_recomp_result_free.
 */
int as_recompute_search(const as_recomp_space *sp, const as_recomp_ops *ops, void *ud,
                        double time_limit_s, double t0, as_recomp_result *out, as_err *err);
void as_recomp_result_free(as_recomp_result *r);

/**
 * The classes of the NL layers KEYS (comma-separated "h.0,h.1,...", forward order) of
 * G: layers whose forward ops have the same types and operand shapes, in order, are
 * identical; among identical layers the i-th goes to residue i mod PERIOD (the tying of
 * formulate/group.h; 1 = none).  CLS[j] (NL entries) gets layer j's class, numbered in
 * order of first layer; returns the number of classes.
 */
int as_recompute_classes(const as_graph *g, const char *keys, int nl, int period, int *cls);

/**
 * COST[j] (NL entries): the least time the copies of layer KEYS[j] add to a plan, the
 * sum over its recomputed ops ("rc.X" in RC, the step with every layer recomputed) of
 * the least compute plus communication time of X's node in GP (a copy runs the op X
 * runs: same strategies, same costs).  Copies whose original GP lacks count 0.
 */
void as_recompute_costs(const as_graph_problem *gp, const as_graph *rc, const char *const *keys,
                        int nl, double *cost);

#endif
