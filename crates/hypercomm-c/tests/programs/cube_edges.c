/* The iPSC utilities and CMMD on node counts and lengths the manuals'
 * machines never had. argv[1] picks one; each line printed is checked by
 * the test against values it computes itself.
 * "bcast": GSENDW/GRECVW from every root in turn over the smallest cube
 *   holding the nodes; every node prints what it got from each root.
 * "gcat": GCAT at every root; the root prints the concatenation.
 * "lrecvw": node 1 receives node 0's 16 bytes into 8 (syslogged).
 * "gray": GINV(GRAY(i)) for negative and positive i.
 * "gop": GOP with root -1 (syslogged, not node 0's sum).
 * "sar": node 0 sends 16 bytes with CMMD_send_and_receive, node 1 takes 8
 *   of them with CMMD_receive and sends 4 back.
 * "partials": GOP ('+' on two doubles, 'M' on one) and GCAT at every root;
 *   every node prints what X, BUF and CNT hold after each.
 * "badroots": GOP and GCAT where every node names itself the root, then
 *   GCAT into 2-byte buffers (too short at node 0). */
#include <stdio.h>
#include <string.h>
#include "cmmd.h"
#include "ipsc.h"

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    int me = mynode(), n = numnodes(), dim = cubedim();
    if (strcmp(what, "bcast") == 0) {
        for (int root = 0; root < n; root++) {
            char buf[16];
            int cnt = -1;
            if (me == root) {
                snprintf(buf, sizeof buf, "from %d", root);
                gsendw(1, 40 + root, buf, (int)strlen(buf) + 1, dim);
            } else {
                memset(buf, 0, sizeof buf);
                grecvw(1, 40 + root, buf, sizeof buf, &cnt, dim);
                printf("root %d: '%s' cnt %d\n", root, buf, cnt);
            }
        }
    } else if (strcmp(what, "gcat") == 0) {
        for (int root = 0; root < n; root++) {
            char buf[64];
            int len = me % 2 + 1, cnt = -1;
            memset(buf, 'a' + me, len);
            gcat(1, 7, buf, sizeof buf, len, &cnt, root, dim);
            if (me == root)
                printf("gcat root %d: '%.*s' cnt %d\n", root, cnt, buf, cnt);
        }
    } else if (strcmp(what, "lrecvw") == 0) {
        char buf[16] = "0123456789abcde";
        int cnt = -1, from = -1, pid = -1;
        if (me == 0)
            lsendw(1, 9, buf, 16, 1, 0);
        else if (me == 1) {
            lrecvw(1, 9, buf, 8, &cnt, &from, &pid);
            printf("lrecvw cnt %d from %d kept '%.8s'\n", cnt, from, buf);
        }
    } else if (strcmp(what, "gray") == 0) {
        int v[] = {-2147483647 - 1, -5, -1, 0, 1, 6, 2147483647};
        for (unsigned k = 0; k < sizeof v / sizeof v[0]; k++)
            printf("ginv(gray(%d)) = %d\n", v[k], ginv(gray(v[k])));
    } else if (strcmp(what, "gop") == 0) {
        double x = me + 1;
        gop(1, 5, &x, 1, '+', -1, dim, 0);
        printf("gop x %g\n", x);
    } else if (strcmp(what, "partials") == 0) {
        for (int root = 0; root < n; root++) {
            double x[2] = {me + 1, me * me}, y = (me * 5) % 7, work[2];
            gop(1, 5, x, 2, '+', root, dim, work);
            printf("gop + root %d: %g %g\n", root, x[0], x[1]);
            gop(1, 6, &y, 1, 'M', root, dim, work);
            printf("gop M root %d: %g\n", root, y);
            char buf[64];
            int len = me % 2 + 1, cnt = -1;
            memset(buf, 'a' + me, len);
            gcat(1, 7, buf, sizeof buf, len, &cnt, root, dim);
            printf("gcat root %d: '%.*s' cnt %d\n", root, cnt, buf, cnt);
        }
    } else if (strcmp(what, "badroots") == 0) {
        double x = me + 1, work;
        char buf[2] = {'a' + me, 0};
        int cnt = -1;
        gop(1, 5, &x, 1, '+', me, dim, &work);
        gcat(1, 7, buf, 2, 1, &cnt, me, dim);
        printf("gop x %g gcat cnt %d\n", x, cnt);
        gcat(1, 7, buf, 2, 1, &cnt, 0, dim);
        printf("gcat root 0: '%.*s' cnt %d\n", cnt, buf, cnt);
    } else if (strcmp(what, "sar") == 0) {
        char out[16] = "ABCDEFGHIJKLMNO", in[16];
        if (me == 0) {
            int r = CMMD_send_and_receive(1, 3, in, 16, 1, 2, out, 16);
            printf("sar r %d sent %d received %d\n", r, CMMD_bytes_sent(),
                   CMMD_bytes_received());
        } else if (me == 1) {
            int r = CMMD_receive(0, 2, in, 8);
            CMMD_send(0, 3, out, 4);
            printf("receive r %d got '%.8s'\n", r, in);
        }
    }
    return 0;
}
