/*
 * The floor of a one-way message between two processes on this machine:
 * each process writes a counter into its own cache line and spins on the
 * other's, so a round trip is two cache-line transfers and nothing else.
 * Any message-passing library's one-way latency on the same two cores is
 * this plus its own instructions (BENCHMARKS.md, "How low 8-byte latency
 * can go").
 *
 * usage: gcc -O2 -o floor bench/floor.c && ./floor [ROUND_TRIPS]
 * prints: one-way <µs> us
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct line {
    _Atomic uint64_t seq;
    uint64_t pad[7];
} __attribute__((aligned(64)));

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void await(struct line *l, uint64_t v) {
    while (atomic_load_explicit(&l->seq, memory_order_acquire) != v) __builtin_ia32_pause();
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000000, warm = iters / 10;
    struct line *l = mmap(0, 2 * sizeof *l, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (l == MAP_FAILED || iters < 10) return 1;
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
            await(&l[0], i);
            atomic_store_explicit(&l[1].seq, i, memory_order_release);
        }
        _exit(0);
    }
    double t0 = 0;
    for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
        if ((long)i == warm + 1) t0 = now();
        atomic_store_explicit(&l[0].seq, i, memory_order_release);
        await(&l[1], i);
    }
    double t = now() - t0;
    waitpid(child, 0, 0);
    printf("one-way %.3f us\n", t / (iters - warm) / 2 * 1e6);
    return 0;
}
