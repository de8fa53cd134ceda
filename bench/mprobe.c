/*
 * What keeping a too-long message costs inside MPI itself: an 8-byte
 * ping-pong whose receives are MPI_Recv (MODE 0), MPI_Mprobe +
 * MPI_Get_count + MPI_Mrecv (1), or a loop of MPI_Improbe + MPI_Mrecv (2);
 * and MPI_Irecv with a loop of MPI_Test (3), the receive a wait that also
 * watches for other events (an abort, a deadline) would make.
 * A matched probe learns the length before anything is received, which is
 * what a receive that leaves a message it cannot hold in place needs
 * (BENCHMARKS.md, "MPI: what a matched probe costs").
 *
 * usage: mpicc -O2 -o mprobe bench/mprobe.c && mpirun -n 2 ./mprobe MODE ITERS
 * prints: mode <MODE> latency <µs> us   (one way)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void rx(char *buf, int cap, int src, int mode) {
    if (mode == 0) {
        MPI_Recv(buf, cap, MPI_CHAR, src, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    if (mode == 3) {
        MPI_Request r;
        int done = 0;
        MPI_Irecv(buf, cap, MPI_CHAR, src, 1, MPI_COMM_WORLD, &r);
        while (!done) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        return;
    }
    MPI_Message m;
    MPI_Status st;
    int n;
    if (mode == 1) {
        MPI_Mprobe(src, 1, MPI_COMM_WORLD, &m, &st);
    } else {
        int found = 0;
        while (!found) MPI_Improbe(src, 1, MPI_COMM_WORLD, &found, &m, &st);
    }
    MPI_Get_count(&st, MPI_CHAR, &n);
    if (n > cap) {
        fprintf(stderr, "a message of %d bytes for a buffer of %d\n", n, cap);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Mrecv(buf, n, MPI_CHAR, &m, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    int me, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mode = argc > 1 ? atoi(argv[1]) : -1;
    long iters = argc > 2 ? atol(argv[2]) : 0, warm = iters / 10;
    if (size != 2 || mode < 0 || mode > 3 || iters < 10) {
        if (me == 0) fprintf(stderr, "usage: mpirun -n 2 ./mprobe MODE(0|1|2|3) ITERS(>=10)\n");
        MPI_Finalize();
        return 2;
    }
    char buf[8] = {0};
    double t0 = 0;
    for (long i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (me == 0) {
            MPI_Send(buf, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            rx(buf, 8, 1, mode);
        } else {
            rx(buf, 8, 0, mode);
            MPI_Send(buf, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    double t = (MPI_Wtime() - t0) / (2.0 * iters) * 1e6;
    if (me == 0) printf("mode %d latency %.3f us\n", mode, t);
    MPI_Finalize();
    return 0;
}
