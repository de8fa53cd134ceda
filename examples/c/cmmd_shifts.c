/* The CMMD Reference Manual's shifts (seed 004, section 4.3.2, Figure 3
 * and note 3): a circular shift with CMMD_send_and_receive on every node,
 * then an end-off shift mixing CMMD_send, CMMD_send_and_receive and
 * CMMD_receive. Node r holds 10r+1, 10r+2, 10r+3; each node prints what
 * it holds after each shift (0 0 0 when an end-off shift leaves it
 * nothing). */
#include <stdio.h>
#include "cmmd.h"

int main(void)
{
    int me = CMMD_self_address();
    int n = CMMD_partition_size();
    int mine[3], got[3] = {0, 0, 0}, i;
    int right = (me + 1) % n, left = (me + n - 1) % n;

    for (i = 0; i < 3; i++)
        mine[i] = 10 * me + i + 1;
    if (!CMMD_send_and_receive(left, DEFAULT_MSG_TAG, got, sizeof got,
                               right, DEFAULT_MSG_TAG, mine, sizeof mine))
        return 1;
    printf("node %d: circular %d %d %d\n", me, got[0], got[1], got[2]);
    got[0] = got[1] = got[2] = 0;
    if (n > 1) {
        if (me == 0)
            CMMD_send(1, 5, mine, sizeof mine);
        else if (me == n - 1)
            CMMD_receive(me - 1, 5, got, sizeof got);
        else
            CMMD_send_and_receive(me - 1, 5, got, sizeof got, me + 1, 5,
                                  mine, sizeof mine);
    }
    printf("node %d: end-off %d %d %d\n", me, got[0], got[1], got[2]);
    return 0;
}
