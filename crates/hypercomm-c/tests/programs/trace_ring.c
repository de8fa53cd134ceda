/* A traced PICL program (host and nodes in one file): the host enables
 * tracing into the file named on its command line, every processor sets
 * the levels and starts tracing (tracehost / tracenode), the nodes pass a
 * token around a ring, mark and sum; close0 brings the records to the
 * host, which writes the file. */
#include <stdio.h>
#include "picl.h"

int main(int argc, char **argv)
{
    int p, me, host, token = 0, sum;
    open0(&p, &me, &host);
    if (me == host) {
        if (argc < 2)
            return 2;
        traceenable(argv[1], 1);
        tracelevel(3, 3, 3);
        tracehost(100000, 0);
        tracemark(1);
        tracemark(-7);
        close0(1);
        return 0;
    }
    tracelevel(3, 3, 3);
    tracenode(100000, 0, 1);
    tracemark(2);
    if (me == 0) {
        send0(&token, sizeof token, 7, (me + 1) % p);
        recv0(&token, sizeof token, 7);
    } else {
        recv0(&token, sizeof token, 7);
        token += me;
        send0(&token, sizeof token, 7, (me + 1) % p);
    }
    sum = me;
    gsum0(&sum, 1, 2, 8, 0);
    tracemsg("ring done");
    close0(0);
    return 0;
}
