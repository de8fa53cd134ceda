/* Misuse that the manuals call errors: argv[1] picks one. "recv0": node 1
 * receives an 8-byte message into a 4-byte buffer. "combiner": a bitwise
 * combiner on float operands (CMMD: "a fatal error"). "gcat": GCAT with a
 * contribution longer than the buffer (iPSC: syslogged, GCAT returns).
 * "hostgop": the host calls GOP and GCAT (iPSC: not a participant).
 * "hostgsum": the host calls gsum0 with node 0 as the root (PICL: it
 *   "never makes sense"). */
#include <stdio.h>
#include <string.h>
#include "picl.h"
#include "cmmd.h"
#include "ipsc.h"

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "recv0") == 0) {
        int p, me, host;
        double d = 1.0;
        float f;
        open0(&p, &me, &host);
        if (me == 0)
            send0(&d, sizeof d, 5, 1);
        else if (me == 1)
            recv0(&f, sizeof f, 5);
        close0(0);
    } else if (strcmp(what, "combiner") == 0) {
        double r = CMMD_reduce_float(1.0f, CMMD_combiner_xor);
        printf("unreachable %f\n", r);
    } else if (strcmp(what, "gcat") == 0) {
        char buf[4] = "abc";
        int cnt = -1;
        gcat(1, 3, buf, 4, 8, &cnt, 0, 0);
        printf("gcat returned on node %d\n", mynode());
    } else if (strcmp(what, "hostgsum") == 0) {
        int p, me, host;
        double x = 1.0;
        open0(&p, &me, &host);
        if (me == host)
            gsum0(&x, 1, 5, 3, 0);
        close0(0);
    } else if (strcmp(what, "hostgop") == 0 && mynode() == -32768) {
        double x = 1.0;
        char buf[4] = "abc";
        int cnt = -1;
        gop(1, 5, &x, 1, '+', -32768, 0, 0);
        gcat(1, 3, buf, 4, 1, &cnt, -32768, 0);
        printf("gop and gcat returned on the host\n");
    }
    return 0;
}
