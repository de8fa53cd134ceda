/* The CMMD Reference Manual's vector messages (seed 004, section 4.2.1):
 * the 4 x 6 byte matrix A holding 0 … 23. Node 0 sends its top row
 * (CMMD_send, 6 bytes), its first column (CMMD_send_v: 4 elements of one
 * byte, stride 6) and then every row as a sequential message, which node 1
 * receives "as a six-element vector with a stride of 4", transposing A.
 * Node 1 prints what it received. Run on 2 nodes. */
#include <stdio.h>
#include "cmmd.h"

int main(void)
{
    unsigned char A[4][6], row[6], col[4], T[6][4];
    int i, j;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 6; j++)
            A[i][j] = (unsigned char)(6 * i + j);
    if (CMMD_self_address() == 0) {
        CMMD_send(1, DEFAULT_MSG_TAG, &A, 6);
        CMMD_send_v(1, DEFAULT_MSG_TAG, &A, 1, 6, 4);
        for (i = 0; i < 4; i++)
            CMMD_send(1, DEFAULT_MSG_TAG, A[i], 6);
    } else if (CMMD_self_address() == 1) {
        CMMD_receive(0, DEFAULT_MSG_TAG, row, 6);
        CMMD_receive_v(0, DEFAULT_MSG_TAG, col, 1, 1, 4);
        for (i = 0; i < 4; i++)
            CMMD_receive_v(0, DEFAULT_MSG_TAG, &T[0][i], 1, 4, 6);
        printf("row:");
        for (j = 0; j < 6; j++)
            printf(" %d", row[j]);
        printf("\ncolumn:");
        for (i = 0; i < 4; i++)
            printf(" %d", col[i]);
        printf("\ntranspose:");
        for (j = 0; j < 6; j++)
            for (i = 0; i < 4; i++)
                printf(" %d", T[j][i]);
        printf("\n");
    }
    return 0;
}
