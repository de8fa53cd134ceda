/* PICL reference manual, Figure 2: example C node program using low-level
 * PICL routines, typed from seed 003. OCR slips fixed as SPEC.md section 11
 * says: the left neighbour is (me+P-1) % P (the figure's (me-1) % P is -1,
 * "all nodes", on node 0); the first comment's closing delimiter, which
 * the scan moved below the loop, is back on its line. The #include lines
 * are not in the figure. Compiled with -Wno-implicit-int -Wno-return-type:
 * the figure's main() is K&R C. */
#include <stdio.h>
#include <stdlib.h>
#include "picl.h"

main() {
int P, me, host, M, left, j;
float *data, *results, rightnum;
double btime, etime, clock0();
char buf[80];

/* open communication channel */
open0(&P, &me, &host);

/* receive problem parameter from host */
recv0(&M, sizeof(int), 0);

/* allocate space for data and results */
data = (float *)malloc(M*sizeof(float));
results = (float *)malloc(M*sizeof(float));

/* receive problem data from host */
recv0(data, M*sizeof(float), 1);

/* synchronize and begin timing the computational kernel*/
btime= clock0();
sync0();

/* communicate with other processors and add */
/* successive numbers together */
left = (me+P-1) % P;
send0(&data[0], sizeof(float), 2, left);
for (j=0; j<M-1; j++) results[j] = data[j] + data[j+1];
recv0(&rightnum, sizeof(float), 2);
results[M-1] = data[j-1] + rightnum;

/* finish timing and send result to standard output */
etime = clock0();
sprintf(buf, "node %d took %lf seconds to finish", me, etime-btime);
message0(buf);
sync0();

/* send results to host, and close communication channel */
send0(results, M*sizeof(float), 3, host);
close0();
}
