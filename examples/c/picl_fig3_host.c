/* PICL reference manual, Figure 3: example C host program using
 * high-level PICL routines (the speedup sweep), typed from seed 003. The
 * figure is a skeleton that stops inside its loop: the lines after the
 * marked point are not in the manual (close the loop, release the nodes
 * with setarc0 of 0 processors as the manual's setarc0 page says, close).
 * The #include lines are not in the figure. Compiled with
 * -Wno-implicit-int -Wno-return-type: the figure's main() is K&R C. */
#include <stdlib.h>
#include "picl.h"

main()
{
int nprocs, me, host, p, top, ord, dir, n;
float *results;

n = 100;
results = (float *)malloc(n*sizeof(float));

nprocs = 64;
open0(&nprocs, &me, &host);
load0("node", -1);

ord = 1;
dir = 1;
for (p=1 ; p<=nprocs ; p*=2) {

top = 1;

/* set architectural parameters */
setarc0(&p, &top, &ord, &dir);

/* broadcast problem data to all processors in use */
bcast0(&n, sizeof(int), 0, host);

/* collect global sum of results from all processors in use */
gsum0(results, n, 4, 1, host);
}
/* -- not in the figure: release the nodes and close -- */
p = 0;
setarc0(&p, &top, &ord, &dir);
close0(1);
}
