/* progress.c -- progress lines on a terminal (progress.h). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "autoshard.h"
#include "formulate/progress.h"

static int enabled;

void
as_progress_enable(int on)
{
    enabled = on && isatty(2);
}

void
as_progress_start(as_progress *pg, const char *phase)
{
    pg->phase = phase;
    pg->t0 = pg->last = as_now();
    pg->shown = 0;
}

void
as_progress_update(as_progress *pg, double done, double total, double incumbent, double bound)
{
    double now;
    char line[160];
    int n;

    if (!enabled)
        return;
    now = as_now();
    if (now - pg->t0 < 1.0 || (pg->shown && now - pg->last < 0.2))
        return;
    pg->last = now;
    n = snprintf(line, sizeof line, "%s %.0f s", pg->phase, now - pg->t0);
    if (total > 0 && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, ", %.0f/%.0f", done, total);
    if (isfinite(incumbent) && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, ", plan %.6g s", incumbent);
    if (isfinite(bound) && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, ", bound %.6g s", bound);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    pg->shown = 1;
}

void
as_progress_end(as_progress *pg)
{
    if (pg->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    pg->shown = 0;
}
