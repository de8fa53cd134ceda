#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &p);
    double x = me, y = 0;
    double t0 = MPI_Wtime();
    if (argc > 1 && strcmp(argv[1], "allreduce") == 0)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (me == 0) printf("%s p=%d simulated time %g s\n", argc > 1 ? argv[1] : "bcast", p, t1 - t0);
    MPI_Finalize();
    return 0;
}
