/*
 * bench/bench_util.h -- the clock and the median every bench program uses.
 * Header-only (each bench program is its own executable); include it first
 * (it sets _POSIX_C_SOURCE for clock_gettime).
 */
#ifndef HS_BENCH_UTIL_H
#define HS_BENCH_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

/* Monotonic time in seconds. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v (n > 0 values; v is sorted in place). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
