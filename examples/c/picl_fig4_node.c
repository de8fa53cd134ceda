/* PICL reference manual, Figure 4: fragment of a C node program using
 * high-level PICL routines, typed from seed 003 (the scan cut off the end
 * of the first comment: "from host"). The fragment stops inside its loop:
 * the lines after the marked point are not in the manual (close the loop,
 * close). The #include lines are not in the figure. Compiled with
 * -Wno-implicit-int -Wno-return-type: the figure's main() is K&R C. */
#include <stdlib.h>
#include "picl.h"

main()
{

int p, me, host, top, ord, dir, n;
float *results;

open0(&p, &me, &host);
while (1) {

/* get architectural parameters from host */
setarc0(&p, &top, &ord, &dir);
if (p == 0) break;

/* get problem data from host */
bcast0(&n, sizeof(int), 0, host);

results = (float *)malloc(n*sizeof(float));

/* compute local contribution to results vector */

/* globally sum results across processors and send to host */
gsum0(results, n, 4, 1, host);
/* -- not in the figure: end of the loop, close -- */
free(results);
}
close0();
}
