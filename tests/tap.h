/* tap.h -- a minimal TAP producer for unit tests (automake's tap-driver.sh).
 *
 *   plan_lazy();  ok(x == 1, "x is one");  is_int(a, b, "...");
 *   is_double(a, b, 1e-9, "..."); return done_testing();
 */
#ifndef AS_TAP_H
#define AS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_fail;

static inline void
plan_lazy(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline int __attribute__((format(printf, 2, 3)))
ok(int cond, const char *fmt, ...)
{
    va_list ap;

    printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond)
        tap_fail++;
    return cond;
}

static inline void __attribute__((format(printf, 1, 2)))
diag(const char *fmt, ...)
{
    va_list ap;

    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);                           \
        if (!ok(tap_g_ == tap_w_, __VA_ARGS__))                                                    \
            diag("  got %lld, want %lld", tap_g_, tap_w_);                                         \
    } while (0)

/* Relative tolerance REL (absolute near zero). */
#define is_double(got, want, rel, ...)                                                             \
    do {                                                                                           \
        double tap_g_ = (got), tap_w_ = (want);                                                    \
        double tap_s_ = fabs(tap_w_) > 1.0 ? fabs(tap_w_) : 1.0;                                   \
        if (!ok(fabs(tap_g_ - tap_w_) <= (rel) * tap_s_, __VA_ARGS__))                             \
            diag("  got %.17g, want %.17g", tap_g_, tap_w_);                                       \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *tap_g_ = (got), *tap_w_ = (want);                                              \
        int tap_ok_ = tap_g_ != NULL && tap_w_ != NULL && strcmp(tap_g_, tap_w_) == 0;             \
        if (!ok(tap_ok_, __VA_ARGS__))                                                             \
            diag("  got '%s', want '%s'", tap_g_ ? tap_g_ : "(null)", tap_w_ ? tap_w_ : "(null)"); \
    } while (0)

static inline int
done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_fail ? 1 : 0;
}

#endif /* AS_TAP_H */
