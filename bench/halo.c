/*
 * The halo exchange of `hypercomm bench halo`, written against MPI, so that
 * Open MPI can be measured the same way on the same machine
 * (bench/compare.sh): the same grid (SIDE points per axis in blocks over
 * MPI_Dims_create's process grid, not periodic), the same halo of WIDTH,
 * NF f64 fields, corners filled by exchanging axis after axis with the
 * faces of later axes spanning the halos already received, one message
 * per neighbour and direction carrying every field (MPI_Cart_create,
 * subarray datatypes joined by a struct type, Isend/Irecv, Waitall).
 *
 * Timing as `hypercomm bench`: warm-up, a barrier, ITERS exchanges back to
 * back, each rank's average, the maximum over ranks; the median of 3 runs.
 *
 * usage: mpirun -n N ./halo haloDd-wW-fF SIDE ITERS
 * prints: op<TAB>n<TAB>side<TAB>value<TAB>us
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPEAT 3

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A struct type: the same subarray of every field, addressed absolutely. */
static MPI_Datatype slab(int dim, const int *ext, const int *sub, const int *start,
                         double **fields, int nf) {
    MPI_Datatype one, all;
    MPI_Type_create_subarray(dim, ext, sub, start, MPI_ORDER_FORTRAN, MPI_DOUBLE, &one);
    int *lens = malloc(nf * sizeof(int));
    MPI_Aint *at = malloc(nf * sizeof(MPI_Aint));
    MPI_Datatype *types = malloc(nf * sizeof(MPI_Datatype));
    for (int f = 0; f < nf; f++) {
        lens[f] = 1;
        MPI_Get_address(fields[f], &at[f]);
        types[f] = one;
    }
    MPI_Type_create_struct(nf, lens, at, types, &all);
    MPI_Type_commit(&all);
    MPI_Type_free(&one);
    free(lens); free(at); free(types);
    return all;
}

static double run(int dim, long side, int w, int nf, long iters, int n) {
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3] = {0, 0, 0}, me;
    MPI_Dims_create(n, dim, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, dim, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &me);
    MPI_Cart_coords(cart, me, dim, coords);
    int len[3], ext[3];
    long count = 1;
    for (int a = 0; a < dim; a++) {
        /* The block distribution: the first side % dims parts get one more. */
        long base = side / dims[a], extra = side % dims[a];
        len[a] = (int)(base + (coords[a] < extra));
        ext[a] = len[a] + 2 * w;
        count *= ext[a];
    }
    double **fields = malloc(nf * sizeof(double *));
    for (int f = 0; f < nf; f++) {
        fields[f] = malloc(count * sizeof(double));
        for (long i = 0; i < count; i++) fields[f][i] = (double)(i + f);
    }
    /* Per axis: neighbours and the four slabs (send lo/hi, receive lo/hi). */
    int lo[3], hi[3];
    MPI_Datatype send_lo[3], send_hi[3], recv_lo[3], recv_hi[3];
    for (int a = 0; a < dim; a++) {
        MPI_Cart_shift(cart, a, 1, &lo[a], &hi[a]);
        int sub[3], start[3];
        for (int b = 0; b < dim; b++) {
            if (b < a) { sub[b] = ext[b]; start[b] = 0; }   /* halos received already */
            else { sub[b] = len[b]; start[b] = w; }
        }
        sub[a] = w;
        start[a] = w;            send_lo[a] = slab(dim, ext, sub, start, fields, nf);
        start[a] = len[a];       send_hi[a] = slab(dim, ext, sub, start, fields, nf);
        start[a] = 0;            recv_lo[a] = slab(dim, ext, sub, start, fields, nf);
        start[a] = len[a] + w;   recv_hi[a] = slab(dim, ext, sub, start, fields, nf);
    }
    long warm = iters / 10 < 3 ? 3 : iters / 10;
    double t0 = 0;
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm) { MPI_Barrier(cart); t0 = MPI_Wtime(); }
        for (int a = 0; a < dim; a++) {
            MPI_Request r[4];
            MPI_Irecv(MPI_BOTTOM, 1, recv_lo[a], lo[a], 2 * a, cart, &r[0]);
            MPI_Irecv(MPI_BOTTOM, 1, recv_hi[a], hi[a], 2 * a + 1, cart, &r[1]);
            MPI_Isend(MPI_BOTTOM, 1, send_hi[a], hi[a], 2 * a, cart, &r[2]);
            MPI_Isend(MPI_BOTTOM, 1, send_lo[a], lo[a], 2 * a + 1, cart, &r[3]);
            MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        }
    }
    double mine = (MPI_Wtime() - t0) / iters * 1e6, worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, cart);
    for (int a = 0; a < dim; a++) {
        MPI_Type_free(&send_lo[a]); MPI_Type_free(&send_hi[a]);
        MPI_Type_free(&recv_lo[a]); MPI_Type_free(&recv_hi[a]);
    }
    for (int f = 0; f < nf; f++) free(fields[f]);
    free(fields);
    MPI_Comm_free(&cart);
    return worst;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n, dim, w, nf;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4 || sscanf(argv[1], "halo%dd-w%d-f%d", &dim, &w, &nf) != 3 || dim < 2 || dim > 3) {
        if (me == 0) fprintf(stderr, "usage: %s haloDd-wW-fF SIDE ITERS\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long side = atol(argv[2]), base = atol(argv[3]);
    /* As hypercomm bench halo: about 2^26 halo bytes per run. */
    long face = 8L * w * nf;
    for (int a = 1; a < dim; a++) face *= side;
    long iters = (1L << 26) / face;
    if (iters > base) iters = base;
    if (iters < 20) iters = 20;
    double r[REPEAT];
    for (int k = 0; k < REPEAT; k++) r[k] = run(dim, side, w, nf, iters, n);
    qsort(r, REPEAT, sizeof r[0], cmp_double);
    if (me == 0) printf("%s\t%d\t%ld\t%.3f\tus\n", argv[1], n, side, r[REPEAT / 2]);
    MPI_Finalize();
    return 0;
}
