/* The least a 2 x 2 halo exchange with corners can cost between 4 threads:
 * its synchronisation alone, with no data. Each thread raises a flag for
 * its neighbour along axis 0 and waits for the neighbour's, then the same
 * along axis 1 (after which, through the corners, every thread has heard
 * from every other, as an exchange that fills corners needs). Waiting
 * spins SPIN times between sched_yield calls, the cheapest wait when there
 * are more threads than cores. Beside it, memcpy of the 8 KiB that a rank
 * of a 1024^2 f64 width-1 exchange receives, in cache, for scale.
 * Build: cc -O2 -pthread [-DSPIN=1000] bench/halo_sync_bound.c -o halo_sync_bound
 * Usage: ./halo_sync_bound [EXCHANGES] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef SPIN
#define SPIN 1000
#endif
#define N 4

static _Atomic long flag[N][2][8]; /* a cache line per flag */
static long iters;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void wait_for(_Atomic long *f, long v)
{
    int spins = 0;
    while (atomic_load_explicit(f, memory_order_acquire) < v)
        if (++spins > SPIN) {
            sched_yield();
            spins = 0;
        }
}

static void *rank(void *arg)
{
    long me = (long)arg;
    for (long i = 1; i <= iters; i++)
        for (int a = 0; a < 2; a++) {
            atomic_store_explicit(&flag[me][a][0], i, memory_order_release);
            wait_for(&flag[me ^ (1 << a)][a][0], i);
        }
    return 0;
}

int main(int argc, char **argv)
{
    static char src[8192], dst[8192];
    pthread_t t[N];
    iters = argc > 1 ? atol(argv[1]) : 200000;
    for (int r = 0; r < 3; r++) {
        memset(flag, 0, sizeof flag);
        double t0 = now();
        for (long i = 0; i < N; i++)
            pthread_create(&t[i], 0, rank, (void *)i);
        for (int i = 0; i < N; i++)
            pthread_join(t[i], 0);
        printf("2x2 exchange, synchronisation only, 4 threads: %.3f us\n",
               (now() - t0) / iters * 1e6);
    }
    double t0 = now();
    for (long i = 0; i < 1000000; i++) {
        memcpy(dst, src, sizeof dst);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    printf("memcpy of 8 KiB: %.3f us\n", (now() - t0) / 1000000 * 1e6);
    return 0;
}
