/* The CMMD Reference Manual's reduction and scan examples (seed 004,
 * sections 9.1 and 9.4), on four nodes: values 4 9 7 6, segment bits
 * 1 0 1 0; unsigned values 4 1 5 2 with bits 0 0 1 0. Each node prints
 * its results on one line. */
#include <stdio.h>
#include "cmmd.h"

int main(void)
{
    static const int value[4] = {4, 9, 7, 6};
    static const int sbit[4] = {1, 0, 1, 0};
    static const unsigned uvalue[4] = {4, 1, 5, 2};
    static const int ubit[4] = {0, 0, 1, 0};
    int me = CMMD_self_address();
    int sum, up_ex, down_in, seg_in;
    unsigned by_segment, by_start;

    if (CMMD_partition_size() != 4) {
        fprintf(stderr, "run on 4 nodes\n");
        return 1;
    }
    sum = CMMD_reduce_int(value[me], CMMD_combiner_add);
    up_ex = CMMD_scan_int(value[me], CMMD_combiner_add, CMMD_upward,
                          CMMD_none, 0, CMMD_exclusive);
    down_in = CMMD_scan_int(value[me], CMMD_combiner_add, CMMD_downward,
                            CMMD_none, 0, CMMD_inclusive);
    seg_in = CMMD_scan_int(value[me], CMMD_combiner_add, CMMD_upward,
                           CMMD_segment_bit, sbit[me], CMMD_inclusive);
    by_segment = CMMD_scan_uint(uvalue[me], CMMD_combiner_umax, CMMD_upward,
                                CMMD_segment_bit, ubit[me], CMMD_exclusive);
    by_start = CMMD_scan_uint(uvalue[me], CMMD_combiner_umax, CMMD_upward,
                              CMMD_start_bit, ubit[me], CMMD_exclusive);
    printf("node %d: reduce %d upward-exclusive %d downward-inclusive %d "
           "segmented-inclusive %d umax-segment-bit %u umax-start-bit %u\n",
           me, sum, up_ex, down_in, seg_in, by_segment, by_start);
    return 0;
}
