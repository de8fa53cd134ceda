/* The C API's cost against the Rust API's (BENCHMARKS.md): an 8-byte
 * ping-pong between nodes 0 and 1 (send0/recv0) and gsum0 of one double
 * over all nodes to node 0. Prints one line per measurement: the median
 * over 5 repetitions of the mean time per iteration, in microseconds.
 * Usage: hypercomm run -n N ./c_api [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include "picl.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int p, me, host, i, r, iters = argc > 1 ? atoi(argv[1]) : 100000;
    double msg = 0, t[5], x;
    open0(&p, &me, &host);
    for (r = 0; r < 5; r++) {
        sync0();
        t[r] = clock0();
        for (i = 0; i < iters; i++) {
            if (me == 0) {
                send0(&msg, 8, 1, 1);
                recv0(&msg, 8, 1);
            } else if (me == 1) {
                recv0(&msg, 8, 1);
                send0(&msg, 8, 1, 0);
            }
        }
        t[r] = (clock0() - t[r]) / iters * 1e6 / 2;
    }
    qsort(t, 5, sizeof t[0], cmp);
    if (me == 0)
        printf("c pingpong-8B %.3f us one-way\n", t[2]);
    for (r = 0; r < 5; r++) {
        sync0();
        t[r] = clock0();
        for (i = 0; i < iters / 10; i++) {
            x = me;
            gsum0(&x, 1, 5, 2, 0);
        }
        t[r] = (clock0() - t[r]) / (iters / 10) * 1e6;
    }
    qsort(t, 5, sizeof t[0], cmp);
    if (me == 0)
        printf("c gsum0-1double %.3f us\n", t[2]);
    close0(0);
    return 0;
}
