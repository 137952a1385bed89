/*
 * common/pool.c -- the library's one worker pool (common.h): helper pthreads
 * that sleep on a condition variable, a parallel-for whose jobs are handed
 * out in index order, ordered sections for sums across jobs, and one FIFO
 * lane on worker 1 for work that overlaps the caller's (the backward's
 * weight gradients).
 *
 * Why pthreads and not OpenMP: the backward's lane is a pipeline (the caller
 * submits a weight-gradient product, goes on with the input-gradient chain,
 * and waits for that one ticket only before it overwrites what the product
 * reads), which OpenMP expresses only as tasks inside one parallel region
 * spanning the whole backward; libgomp's default waiting policy spins, which
 * on a 2-core machine shared with other work takes a core from the caller;
 * and every job here is coarse (a forward on 32 sentences, a sgemm), so the
 * hand-out under one mutex costs nothing measurable (circuit 0.69 s before
 * and after, bench_train step time unchanged).
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
/* the pthread/OpenMP builds' shutdown of their helper threads (also run at
 * fork); weak: a serial OpenBLAS has none */
int blas_thread_shutdown_(void) __attribute__((weak));
char *openblas_get_corename(void);

/* OpenBLAS at one thread per call. Only when it is not already: any
 * openblas_set_num_threads call starts its helper threads again (pthread
 * build, goto_set_num_threads), undoing hs_blas_one_thread. */
static void blas_one_per_call(void)
{
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

void hs_blas_one_thread(void)
{
    blas_one_per_call();
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

void hs_blas_threads(int n)
{
    if (n <= 1) {
        hs_blas_one_thread();
        return;
    }
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

#define LANE_QUEUE 64

typedef struct {
    void (*fn)(void *arg);
    union {
        max_align_t align;
        unsigned char bytes[HS_POOL_ARG];
    } arg;
} lane_job;

struct hs_pool {
    int n; /* workers, the caller's thread included */
    pthread_t *th;
    int n_started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    int stop;
    /* the lane */
    lane_job lane[LANE_QUEUE];
    long submitted, done;
    /* the current hs_pool_for */
    int for_active;
    hs_pool_job fn;
    void *ctx;
    int n_jobs, next, active;
    int failed;      /* lowest failed job, or -1 */
    hs_error ferr;   /* its error */
    int turn;        /* the ordered key whose turn it is */
    int *cur_job;    /* (n) job each worker runs */
    hs_error *werr;  /* (n) per-worker errors */
    /* progress (hs_pool_set_progress) */
    pthread_mutex_t progress_mu;
    hs_progress_fn progress;
    void *progress_ctx;
};

int hs_pool_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)(n > 1024 ? 1024 : n) : 1;
}

int hs_pool_threads(const hs_pool *p)
{
    return p ? p->n : 1;
}

/* Runs one job of the current hs_pool_for on worker w; called with mu held,
 * returns with it held. 0 when there was no job to take. */
static int take_for_job(hs_pool *p, int w)
{
    if (!p->for_active || p->next >= p->n_jobs || p->failed >= 0) return 0;
    const int j = p->next++;
    p->active++;
    p->cur_job[w] = j;
    pthread_mutex_unlock(&p->mu);
    hs_status st = p->fn(p->ctx, j, w, &p->werr[w]);
    pthread_mutex_lock(&p->mu);
    if (st != HS_OK && (p->failed < 0 || j < p->failed)) {
        p->failed = j;
        p->ferr = p->werr[w];
        if (p->ferr.status == HS_OK) p->ferr.status = st;
    }
    p->active--;
    pthread_cond_broadcast(&p->cv_done);
    return 1;
}

typedef struct {
    hs_pool *p;
    int w;
} helper_arg;

static void *helper_main(void *arg)
{
    helper_arg a = *(helper_arg *)arg;
    free(arg);
    hs_pool *p = a.p;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (a.w == 1 && p->done < p->submitted) {
            lane_job j = p->lane[p->done % LANE_QUEUE];
            pthread_mutex_unlock(&p->mu);
            j.fn(j.arg.bytes);
            pthread_mutex_lock(&p->mu);
            p->done++;
            pthread_cond_broadcast(&p->cv_done);
            continue;
        }
        if (take_for_job(p, a.w)) continue;
        if (p->stop) break;
        pthread_cond_wait(&p->cv_work, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

const char *hs_blas_core(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

const char *hs_blas_core_advice(void)
{
    if (getenv("OPENBLAS_CORETYPE") != NULL) return NULL;
    /* the cores OpenBLAS falls back to or picks for pre-AVX2 Intel CPUs (a
     * build without DYNAMIC_ARCH names its one core in capitals, and
     * OPENBLAS_CORETYPE cannot change it: compared without case, and only a
     * core named here is replaced) */
    static const char *const SLOW[] = {"Prescott", "Core2",  "Penryn",     "Dunnington",
                                       "Nehalem",  "Sandybridge", "Atom", "Katmai",
                                       "Coppermine", "Northwood", "Banias", "Unknown"};
    const char *core = hs_blas_core();
    int slow = 0;
    for (size_t i = 0; i < sizeof SLOW / sizeof SLOW[0]; i++) slow |= strcasecmp(core, SLOW[i]) == 0;
    if (!slow) return NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return NULL;
}

hs_status hs_pool_create(int threads, hs_pool **out, hs_error *err)
{
    *out = NULL;
    if (threads < 0 || threads > 1024)
        return hs_fail(err, HS_ERR_INPUT, "threads must be in [0, 1024] (0 = all %d CPUs), got %d",
                       hs_pool_cpus(), threads);
    if (threads == 0) threads = hs_pool_cpus();
    hs_blas_one_thread();
    hs_pool *p = calloc(1, sizeof *p);
    if (p == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory for the worker pool");
    p->n = threads;
    p->th = calloc((size_t)threads, sizeof *p->th);
    p->cur_job = calloc((size_t)threads, sizeof *p->cur_job);
    p->werr = calloc((size_t)threads, sizeof *p->werr);
    if (!p->th || !p->cur_job || !p->werr) {
        free(p->th);
        free(p->cur_job);
        free(p->werr);
        free(p);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for the worker pool");
    }
    p->failed = -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->progress_mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    for (int i = 1; i < threads; i++) {
        helper_arg *a = malloc(sizeof *a);
        if (a) *a = (helper_arg){p, i};
        if (a == NULL || pthread_create(&p->th[i], NULL, helper_main, a) != 0) {
            free(a);
            hs_pool_destroy(p);
            return hs_fail(err, HS_ERR_NOMEM, "cannot start worker thread %d of %d", i, threads);
        }
        p->n_started = i;
    }
    *out = p;
    return HS_OK;
}

void hs_pool_destroy(hs_pool *p)
{
    if (p == NULL) return;
    hs_pool_wait_all(p);
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i <= p->n_started; i++) pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->progress_mu);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    free(p->th);
    free(p->cur_job);
    free(p->werr);
    free(p);
}

hs_status hs_pool_for(hs_pool *p, int n_jobs, hs_pool_job fn, void *ctx, hs_error *err)
{
    if (n_jobs <= 0) return HS_OK;
    if (p == NULL || p->n == 1) {
        for (int j = 0; j < n_jobs; j++) {
            hs_status st = fn(ctx, j, 0, err);
            if (st != HS_OK) return st;
        }
        return HS_OK;
    }
    pthread_mutex_lock(&p->mu);
    HS_ASSERT(!p->for_active); /* not reentrant */
    p->for_active = 1;
    p->fn = fn;
    p->ctx = ctx;
    p->n_jobs = n_jobs;
    p->next = 0;
    p->active = 0;
    p->failed = -1;
    p->turn = 0;
    pthread_cond_broadcast(&p->cv_work);
    while (take_for_job(p, 0)) {
    }
    while (p->active > 0) pthread_cond_wait(&p->cv_done, &p->mu);
    p->for_active = 0;
    const int failed = p->failed;
    const hs_error ferr = p->ferr;
    pthread_mutex_unlock(&p->mu);
    if (failed >= 0) {
        if (err) *err = ferr;
        return ferr.status;
    }
    return HS_OK;
}

hs_status hs_pool_ordered_begin(hs_pool *p, int worker, int key, hs_error *err)
{
    if (p == NULL || p->n == 1) return HS_OK;
    pthread_mutex_lock(&p->mu);
    /* every job before this one was handed out before it, so it ends its
     * section or fails; only a failure there can stall this one */
    const int me = p->cur_job[worker];
    while (p->turn != key && !(p->failed >= 0 && p->failed < me)) pthread_cond_wait(&p->cv_done, &p->mu);
    const int ok = p->turn == key;
    pthread_mutex_unlock(&p->mu);
    if (!ok) return hs_fail(err, HS_ERR_INPUT, "a job before ordered section %d failed", key);
    return HS_OK;
}

void hs_pool_ordered_end(hs_pool *p)
{
    if (p == NULL || p->n == 1) return;
    pthread_mutex_lock(&p->mu);
    p->turn++;
    pthread_cond_broadcast(&p->cv_done);
    pthread_mutex_unlock(&p->mu);
}

long hs_pool_async(hs_pool *p, void (*fn)(void *arg), const void *arg, size_t size)
{
    HS_ASSERT(size <= HS_POOL_ARG);
    if (p == NULL || p->n < 2) {
        lane_job j;
        memcpy(j.arg.bytes, arg, size);
        fn(j.arg.bytes);
        return 0;
    }
    pthread_mutex_lock(&p->mu);
    while (p->submitted - p->done >= LANE_QUEUE) pthread_cond_wait(&p->cv_done, &p->mu);
    lane_job *j = &p->lane[p->submitted % LANE_QUEUE];
    j->fn = fn;
    memcpy(j->arg.bytes, arg, size);
    const long ticket = ++p->submitted;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    return ticket;
}

void hs_pool_wait(hs_pool *p, long ticket)
{
    if (p == NULL || ticket <= 0) return;
    pthread_mutex_lock(&p->mu);
    while (p->done < ticket) pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int hs_pool_done(hs_pool *p, long ticket)
{
    if (p == NULL || ticket <= 0) return 1;
    pthread_mutex_lock(&p->mu);
    const int done = p->done >= ticket;
    pthread_mutex_unlock(&p->mu);
    return done;
}

void hs_pool_wait_all(hs_pool *p)
{
    if (p == NULL) return;
    pthread_mutex_lock(&p->mu);
    const long t = p->submitted;
    pthread_mutex_unlock(&p->mu);
    hs_pool_wait(p, t);
}

void hs_pool_set_progress(hs_pool *p, hs_progress_fn fn, void *ctx)
{
    if (p == NULL) return;
    p->progress = fn;
    p->progress_ctx = ctx;
}

int hs_pool_has_progress(const hs_pool *p)
{
    return p != NULL && p->progress != NULL;
}

void hs_pool_count_step(hs_pool_count *c)
{
    hs_pool *p = c->pool;
    if (p == NULL || p->progress == NULL) return;
    pthread_mutex_lock(&p->progress_mu);
    p->progress(p->progress_ctx, c->what, ++c->done, c->total);
    pthread_mutex_unlock(&p->progress_mu);
}

void hs_pool_progress(hs_pool *p, const char *what, long done, long total)
{
    if (p == NULL || p->progress == NULL) return;
    pthread_mutex_lock(&p->progress_mu);
    p->progress(p->progress_ctx, what, done, total);
    pthread_mutex_unlock(&p->progress_mu);
}
