/* CMMD's host and node routines in one program (host when
 * CMMD_self_address() is the host): broadcast and distribution from the
 * host, the reduction to the host that returns to every node too, the
 * gather to the host, and the host+nodes synchronisation. Node r
 * contributes 4 9 7 6 (the manual's values) and element 10 r + 1. */
#include <stdio.h>
#include "cmmd.h"

int main(void)
{
    static const int value[4] = {4, 9, 7, 6};
    int me, n, i, bc = 0, elem = 0, sum, all[4], mine;
    me = CMMD_self_address();
    n = CMMD_partition_size();
    if (me == CMMD_host_node()) {
        int items[4] = {1, 11, 21, 31};
        CMMD_enable();
        bc = 42;
        CMMD_bc_from_host(&bc, sizeof bc);
        CMMD_distrib_to_nodes(items, sizeof(int));
        sum = CMMD_reduce_from_nodes_int(1000, CMMD_combiner_add);
        CMMD_gather_from_nodes(all, sizeof(int));
        CMMD_sync_host_with_nodes();
        printf("host: sum %d gathered", sum);
        for (i = 0; i < n; i++)
            printf(" %d", all[i]);
        printf("\n");
        CMMD_disable();
        return 0;
    }
    CMMD_receive_bc_from_host(&bc, sizeof bc);
    CMMD_receive_element_from_host(&elem, sizeof elem);
    sum = CMMD_reduce_to_host_int(value[me], CMMD_combiner_add);
    mine = 2 * elem;
    CMMD_concat_elements_to_host(&mine, sizeof mine);
    CMMD_sync_with_host();
    printf("node %d: bc %d element %d sum %d\n", me, bc, elem, sum);
    return 0;
}
