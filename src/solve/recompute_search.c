/* recompute_search.c -- the search of `solve --recompute auto` (see recompute_search.h). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "solve/recompute_search.h"

/* Evaluate candidate K: log it, keep it when it is the best so far (ties: fewer layers,
 * which come first unless the scan runs down, hence the explicit k compare). */
static int
rs_try(const as_recomp_ops *ops, void *ud, int k, FILE *log, as_recomp_result *out,
       double *best_obj, int *fits, as_err *err)
{
    double obj = HUGE_VAL;
    int rc;

    *fits = 0;
    rc = ops->try_k(ud, k, fits, &obj, err);
    if (rc != AS_OK) {
        ops->drop(ud);
        return rc;
    }
    out->tried++;
    if (*fits)
        fprintf(log, "%s%d: %.6g s", out->tried > 1 ? ", " : "", k, obj);
    else
        fprintf(log, "%s%d: no fit", out->tried > 1 ? ", " : "", k);
    if (*fits && (out->best < 0 || obj < *best_obj ||
                  (obj <= *best_obj && k < out->best))) {
        ops->keep(ud);
        out->best = k;
        *best_obj = obj;
    } else {
        ops->drop(ud);
    }
    return AS_OK;
}

int
as_recompute_search(int nl, const as_recomp_ops *ops, void *ud, double time_limit_s,
                    double t0, as_recomp_result *out, as_err *err)
{
    double best_obj = HUGE_VAL;
    size_t len = 0;
    FILE *log;
    int k, fits, rc, unbound = 0;

    out->best = -1;
    out->tried = 0;
    out->timed_out = 0;
    out->log = NULL;
    if ((log = open_memstream(&out->log, &len)) == NULL)
        return as_errf(err, AS_EIO, "--recompute auto: cannot open a memory stream");
    rc = rs_try(ops, ud, 0, log, out, &best_obj, &fits, err);
    if (rc == AS_OK && fits) {
        rc = ops->unbound(ud, &unbound, err);
        if (rc == AS_OK && unbound)
            fprintf(log, " (the budget does not bind)");
    }
    if (rc == AS_OK && !fits) {
        /* nothing recomputed does not fit: bisect for the fewest layers that fit */
        int lo = 0, hi = nl;
        k = nl;
        rc = rs_try(ops, ud, k, log, out, &best_obj, &fits, err);
        while (rc == AS_OK && fits && hi - lo > 1) {
            k = lo + (hi - lo) / 2;
            rc = rs_try(ops, ud, k, log, out, &best_obj, &fits, err);
            if (rc != AS_OK)
                break;
            if (fits)
                hi = k;
            else
                lo = k;
            fits = 1;
        }
    } else {
        /* it fits but the budget binds: recomputing may buy faster layouts; try every k */
        for (k = nl; rc == AS_OK && !unbound && k >= 1; k--) {
            rc = rs_try(ops, ud, k, log, out, &best_obj, &fits, err);
            if (rc == AS_OK && !fits)
                break; /* fewer layers recomputed hold more: none below fits either */
        }
    }
    if (rc != AS_OK && out->best >= 0 && time_limit_s > 0 && as_now() - t0 >= time_limit_s) {
        fprintf(log, "%s%d: stopped at the time limit", out->tried > 0 ? ", " : "", k);
        out->timed_out = 1;
        rc = AS_OK;
    }
    fclose(log);
    return rc;
}
