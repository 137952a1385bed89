/*
 * bench/bench_util.h -- the clocks, the page-fault count, the peak RSS and the median the
 * bench programs use.
 * Header-only (each bench program is its own executable); include it first
 * (it sets _POSIX_C_SOURCE for clock_gettime).
 */
#ifndef HS_BENCH_UTIL_H
#define HS_BENCH_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* Monotonic time in seconds. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (every thread) in seconds: on a shared
 * machine a steadier measure of the work than the wall clock. */
static inline double bench_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Minor page faults of the process so far (first touches of fresh memory). */
static inline long bench_minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

/* Peak resident set of the process so far, MiB. */
static inline double bench_peak_rss_mib(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss / 1024.0 : 0.0;
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
