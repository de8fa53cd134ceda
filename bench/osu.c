/*
 * The measurements of `hypercomm bench`, written against MPI, so that a
 * mature C MPI can be measured the same way on the same machine
 * (bench/compare.sh). OSU micro-benchmark methodology: warm-up, iteration
 * counts that fall with the size, a barrier before timing, and for
 * collectives each call timed alone with an untimed barrier after it, and
 * the maximum over ranks of each rank's average.
 *
 * usage: mpirun -n N ./osu OP SIZES ITERS
 *   OP     latency | bw | bibw | allreduce | reduce | bcast | allgather | alltoall | barrier
 *   SIZES  comma-separated byte counts
 *   ITERS  timed iterations for small messages
 * prints: op<TAB>n<TAB>bytes<TAB>value<TAB>unit   (unit us or MB/s)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

static void iters_for(long size, long base, long *iters, long *warm) {
    long it = size <= 8192 ? base : base * 8192 / size;
    if (it < 20) it = 20;
    *iters = it;
    *warm = it / 10 < 5 ? 5 : it / 10;
}

/* `bytes` bytes (at least one) filled with `v`, as `hypercomm bench` fills
 * what it sends and as OSU fills its buffers: memory from calloc that is
 * never written maps the kernel's one zero page, so a send or a reduction
 * that reads it reads a single cached page, not `bytes` of memory. */
static void *filled(long bytes, int v) {
    void *p = malloc(bytes ? bytes : 1);
    memset(p, v, bytes ? bytes : 1);
    return p;
}

static double latency(long size, long iters, long warm, int me) {
    char *buf = calloc(size ? size : 1, 1);
    double t0 = 0;
    for (long i = 0; i < iters + warm; i++) {
        if (i == warm) t0 = MPI_Wtime();
        if (me == 0) {
            MPI_Send(buf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (me == 1) {
            MPI_Recv(buf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    double t = (MPI_Wtime() - t0) / (2.0 * iters) * 1e6;
    free(buf);
    return t;
}

static double bandwidth(long size, long iters, long warm, int me, int bidir) {
    char *sbuf = filled(size, 7);
    char *rbuf = calloc((size ? size : 1) * WINDOW, 1);
    MPI_Request req[2 * WINDOW];
    char ack = 0;
    double t0 = 0;
    for (long i = 0; i < iters + warm; i++) {
        if (i == warm) t0 = MPI_Wtime();
        if (me < 2) {
            int peer = 1 - me, k = 0;
            if (me == 0 || bidir)
                for (int w = 0; w < WINDOW; w++) MPI_Isend(sbuf, size, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[k++]);
            if (me == 1 || bidir)
                for (int w = 0; w < WINDOW; w++) MPI_Irecv(rbuf + w * size, size, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[k++]);
            MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
            if (me == 0) MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
    }
    double secs = MPI_Wtime() - t0;
    free(sbuf);
    free(rbuf);
    return (double)size * WINDOW * iters * (bidir ? 2 : 1) / secs / 1e6;
}

static double collective(const char *op, long size, long iters, long warm, int me, int n) {
    long elems = size / 8 > 0 ? size / 8 : (size ? 1 : 0);
    double *in = calloc(elems ? elems : 1, sizeof(double));
    for (long i = 0; i < elems; i++) in[i] = 1.0;
    double *out = calloc(elems ? elems : 1, sizeof(double));
    char *bin = filled(size * n, 1);
    char *bout = calloc(size ? size * n : 1, 1);
    for (long i = 0; i < iters + warm; i++) {
        if (i == warm) MPI_Barrier(MPI_COMM_WORLD);
        if (i == warm) { /* timing starts below */ }
        if (!strcmp(op, "allreduce")) MPI_Allreduce(in, out, elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce")) MPI_Reduce(in, out, elems, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "bcast")) MPI_Bcast(bin, size, MPI_CHAR, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "allgather")) MPI_Allgather(bin, size, MPI_CHAR, bout, size, MPI_CHAR, MPI_COMM_WORLD);
        else if (!strcmp(op, "alltoall")) MPI_Alltoall(bin, size, MPI_CHAR, bout, size, MPI_CHAR, MPI_COMM_WORLD);
        else if (!strcmp(op, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double timed = 0;
    int is_barrier = !strcmp(op, "barrier");
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        /* As OSU: each call timed alone, then an untimed barrier. */
        double t = MPI_Wtime();
        if (!strcmp(op, "allreduce")) MPI_Allreduce(in, out, elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce")) MPI_Reduce(in, out, elems, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "bcast")) MPI_Bcast(bin, size, MPI_CHAR, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "allgather")) MPI_Allgather(bin, size, MPI_CHAR, bout, size, MPI_CHAR, MPI_COMM_WORLD);
        else if (!strcmp(op, "alltoall")) MPI_Alltoall(bin, size, MPI_CHAR, bout, size, MPI_CHAR, MPI_COMM_WORLD);
        else if (is_barrier) MPI_Barrier(MPI_COMM_WORLD);
        if (!is_barrier) {
            timed += MPI_Wtime() - t;
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    if (is_barrier) timed = MPI_Wtime() - t0;
    double mine = timed / iters * 1e6, worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    free(in); free(out); free(bin); free(bout);
    return worst;
}

#define REPEAT 3

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4) {
        if (me == 0) fprintf(stderr, "usage: %s OP SIZES ITERS\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const char *op = argv[1];
    long base = atol(argv[3]);
    char *sizes = strdup(argv[2]);
    for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
        long size = atol(tok), iters, warm;
        double v, r[REPEAT];
        const char *unit = "us";
        /* The median of REPEAT measurements, as `hypercomm bench --repeat`. */
        for (int k = 0; k < REPEAT; k++) {
            if (!strcmp(op, "latency")) { iters_for(size, base, &iters, &warm); r[k] = latency(size, iters, warm, me); }
            else if (!strcmp(op, "bw") || !strcmp(op, "bibw")) {
                iters_for(size, base / 50 + 1, &iters, &warm);
                if (iters < 5) iters = 5;
                r[k] = bandwidth(size, iters, warm, me, !strcmp(op, "bibw"));
                unit = "MB/s";
            } else {
                iters_for(size * n, base / 10 + 1, &iters, &warm);
                if (iters < 10) iters = 10;
                r[k] = collective(op, size, iters, warm, me, n);
            }
        }
        qsort(r, REPEAT, sizeof r[0], cmp_double);
        v = r[REPEAT / 2];
        if (me == 0) { printf("%s\t%d\t%ld\t%.3f\t%s\n", op, n, size, v, unit); fflush(stdout); }
    }
    free(sizes);
    MPI_Finalize();
    return 0;
}
