/* Linked into the manual's Figure 1 host program with
 * -Wl,--wrap=recv0,--wrap=close0 so that a test sees what the figure
 * computes but does not print: the result blocks (message type 3) the
 * host receives from the nodes, summarised when the host closes. */
#include <stdio.h>
#include "picl.h"

void __real_recv0(void *buf, int bytes, int type);
void __real_close0(int release);

#define MAXNODES 1024
static int blocks, from[MAXNODES];
static double lo = 1e300, hi = -1e300, total;
static long values;

void __wrap_recv0(void *buf, int bytes, int type)
{
    int b, t, node, k;
    __real_recv0(buf, bytes, type);
    if (type != 3)
        return;
    recvinfo0(&b, &t, &node);
    blocks++;
    if (node >= 0 && node < MAXNODES)
        from[node]++;
    for (k = 0; k < b / (int)sizeof(float); k++) {
        double v = ((const float *)buf)[k];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        total += v;
        values++;
    }
}

void __wrap_close0(int release)
{
    int k, once = 0;
    for (k = 0; k < MAXNODES; k++)
        once += from[k] == 1;
    printf("\nresults: %d blocks from %d nodes once each, %ld values, "
           "min %g max %g sum %g\n", blocks, once, values, lo, hi, total);
    __real_close0(release);
}
