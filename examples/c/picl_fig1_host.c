/* PICL reference manual, Figure 1: example C host program using low-level
 * PICL routines, typed from seed 003. OCR slips fixed as SPEC.md section 11
 * says: block j is sent from &data[M*j] (the figure prints P*j). The
 * #include lines are not in the figure. Compiled with
 * -Wno-implicit-int -Wno-return-type: the figure's main() is K&R C. */
#include <stdio.h>
#include <stdlib.h>
#include "picl.h"

main(){
int P, me, host, N, M, j, k, bytes, type, node;
float *data, *results, *block;
double btime, etime, clock0();

/* start timing */
btime = clock0();

/* allocate processors and open communication channel */
P = 32;
open0(&P, &me, &host);

/* allocate space for data and results, and create data */
N = 1024;
M = N/P;
data = (float *)malloc(N*sizeof(float));
results = (float *)malloc(N*sizeof(float));
block = (float *)malloc(M*sizeof(float));
for (j=0; j<N; j++) data[j] = 1.0;

/* load node program */
load0("nodeprogram", -1);

/* send data to processors */
for (j=0; j<P; j++) send0(&M, sizeof(int), 0, j);
for (j=0; j<P; j++) send0(&data[M*j], M*sizeof(float), 1, j);

/* receive results */
for (j=0; j<P; j++) {
recv0(block, M*sizeof(float), 3);
recvinfo0(&bytes, &type, &node);
for (k=0; k<M; k++) results[M*node + k] = block[k];
}

/* finish timing and send message to the standard output */
etime = clock0();
printf("host took %lf seconds to finish", etime-btime);

/* release allocated processors and close communication channel */
close0(1);
}
