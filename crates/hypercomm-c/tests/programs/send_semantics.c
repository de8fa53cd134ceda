/* Sends and broadcasts used the way the PICL manual (seed 003) and the
 * iPSC utilities (seed 000) show them. argv[1] picks a case; every line
 * printed is checked by the test against values it computes itself.
 * "host" / "node": the host and node programs of a job with a host.
 *   setarc0 declares every node in use; a bcast1 from the host (the nodes
 *   recv0, then bcast1), then one rooted at node 1 (the others recv0,
 *   then bcast1); each node prints what it got.
 * "exchange": every node send0s 1 MiB to the next node before it
 *   receives from the previous one, then 4 MiB to itself; each prints
 *   whether the bytes are right.
 * "wildcard": node 2 sends node 1 a message of type 1, late; node 1 takes
 *   it with recv0 of type -1 just before a bcast0 from node 0 of type 7,
 *   which must not be the message it gets; every node prints what bcast0
 *   gave.
 * "sendw": as "exchange" with the iPSC's SENDW and LSENDW.
 * "spgrcw": node 1 receives node 0's sparse global send of 16 bytes into
 *   8 (syslogged) and prints what it kept; then node 0 names target -1
 *   (syslogged: no such node).
 * "unlaunched": a node program run by hand: open0 for 4 processors makes
 *   it the host, and its recv0 must say that the nodes are not running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ipsc.h"
#include "picl.h"

static unsigned char pattern(int from, long i) { return (unsigned char)(from * 31 + i * 7); }

static int check(const unsigned char *b, long n, int from)
{
    for (long i = 0; i < n; i++)
        if (b[i] != pattern(from, i)) return 0;
    return 1;
}

static void fill(unsigned char *b, long n, int from)
{
    for (long i = 0; i < n; i++) b[i] = pattern(from, i);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    int p = 0, me, host, np, top = 1, ord = 0, dir = 1;
    if (strcmp(what, "host") == 0) {
        char buf[16] = "from the host";
        open0(&p, &me, &host);
        np = p;
        setarc0(&np, &top, &ord, &dir);
        bcast1(buf, sizeof buf, 7, host);
        np = 0;
        setarc0(&np, &top, &ord, &dir);
        close0(1);
    } else if (strcmp(what, "node") == 0) {
        char buf[16];
        open0(&p, &me, &host);
        setarc0(&np, &top, &ord, &dir);
        recv0(buf, sizeof buf, 7);
        printf("from host: '%s'\n", buf);
        bcast1(buf, sizeof buf, 7, host);
        if (me == 1)
            snprintf(buf, sizeof buf, "from node 1");
        else
            recv0(buf, sizeof buf, 8);
        bcast1(buf, sizeof buf, 8, 1);
        printf("from node 1: '%s'\n", buf);
        setarc0(&np, &top, &ord, &dir);
        close0(0);
    } else if (strcmp(what, "exchange") == 0 || strcmp(what, "sendw") == 0) {
        int ipsc = what[0] == 's', n, cnt = -1, node = -1, pid = -1;
        long len = 1 << 20, self = 4 << 20;
        unsigned char *out = malloc(self), *in = malloc(self);
        if (ipsc) {
            copen(mypid());
            me = mynode();
            n = numnodes();
        } else {
            open0(&n, &me, &host);
        }
        fill(out, len, me);
        if (ipsc) {
            sendw(1, 3, out, (int)len, (me + 1) % n, 0);
            recvw(1, 3, in, (int)len, &cnt, &node, &pid);
        } else {
            send0(out, (int)len, 3, (me + 1) % n);
            recv0(in, (int)len, 3);
        }
        printf("next: %s\n", check(in, len, (me + n - 1) % n) ? "right" : "wrong");
        fill(out, self, me);
        if (ipsc) {
            lsendw(1, 4, out, (int)self, me, 0);
            lrecvw(1, 4, in, (int)self, &cnt, &node, &pid);
        } else {
            send0(out, (int)self, 4, me);
            recv0(in, (int)self, 4);
        }
        printf("self: %s\n", check(in, self, me) ? "right" : "wrong");
        if (!ipsc) close0(0);
    } else if (strcmp(what, "wildcard") == 0) {
        int v = 0, x = 0, bytes, type, src;
        open0(&p, &me, &host);
        if (me == 0) v = 4242;
        if (me == 2) {
            x = 99;
            usleep(200000);
            send0(&x, sizeof x, 1, 1);
        }
        if (me == 1) {
            recv0(&x, sizeof x, -1);
            recvinfo0(&bytes, &type, &src);
            printf("recv0(-1): %d of type %d from %d\n", x, type, src);
        }
        bcast0(&v, sizeof v, 7, 0);
        printf("bcast0: %d\n", v);
        close0(0);
    } else if (strcmp(what, "unlaunched") == 0) {
        int x;
        p = 4;
        open0(&p, &me, &host);
        recv0(&x, sizeof x, 0);
        printf("recv0 returned\n");
    } else if (strcmp(what, "spgrcw") == 0) {
        int cnt = -1, list[1] = {1};
        char b[16] = "0123456789abcde", c[17] = "................";
        copen(mypid());
        if (mynode() == 0) {
            int bad[1] = {-1};
            spgsnw(1, 3, b, 16, list, 1);
            spgsnw(1, 5, b, 16, bad, 1);
        } else if (mynode() == 1) {
            spgrcw(1, 3, c, 8, &cnt);
            printf("spgrcw cnt %d kept '%s'\n", cnt, c);
        }
    }
    return 0;
}
