/* progress.h -- one progress line on stderr for long phases (building the
 * problem, reductions, solving, re-solves), only when stderr is a terminal
 * and as_progress_enable() was called: a phase shows up after one second
 * and is refreshed at most five times a second; the line is erased when the
 * phase ends, so logs and pipes never see it.
 */
#ifndef AS_PROGRESS_H
#define AS_PROGRESS_H

typedef struct as_progress {
    const char *phase; /**< "building", "reducing", ... (borrowed) */
    double t0, last;   /**< start, last refresh (as_now) */
    int shown;         /**< the line is on the terminal */
} as_progress;

/** Show progress lines from now on when stderr is a terminal (the command line calls it). */
void as_progress_enable(int on);
void as_progress_start(as_progress *pg, const char *phase);
/**
 * DONE of TOTAL units (TOTAL 0: unknown); INCUMBENT and BOUND are printed
 * when finite (seconds of objective).
 */
void as_progress_update(as_progress *pg, double done, double total, double incumbent,
                        double bound);
void as_progress_end(as_progress *pg);

#endif /* AS_PROGRESS_H */
