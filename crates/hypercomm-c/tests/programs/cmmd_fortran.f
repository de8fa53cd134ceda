C     CMMD from Fortran 77 (the manual's section 1.3): the C names and
C     argument order, INTEGER / REAL / DOUBLE PRECISION for int / float
C     / double. One program is the host and the nodes (the host when
C     CMMD_SELF_ADDRESS() is CMMD_HOST_NODE()). Run on 4 nodes; node r
C     contributes the manual's values 4 9 7 6 (V(r+1)).
      PROGRAM CMMDF
      INTEGER CMMD_SELF_ADDRESS, CMMD_HOST_NODE, CMMD_PARTITION_SIZE
      INTEGER CMMD_REDUCE_INT, CMMD_REDUCE_UINT, CMMD_SCAN_INT
      INTEGER CMMD_REDUCE_TO_HOST_INT, CMMD_REDUCE_FROM_NODES_INT
      INTEGER CMMD_SWAP, CMMD_SEND_AND_RECEIVE, CMMD_MSG_SENDER
      INTEGER CMMD_BYTES_RECEIVED, CMMD_GET_GLOBAL_OR
      DOUBLE PRECISION CMMD_REDUCE_DOUBLE, CMMD_REDUCE_FLOAT
      DOUBLE PRECISION CMMD_SCAN_DOUBLE
      INTEGER ME, N, I, V(4), BC, ELEM, ITEMS(4), ALL(4), ISUM, IMAX
      INTEGER ISCAN, IUMAX, IN, OUT, ISWAP, ISR, LEFT, RIGHT, MINE
      DOUBLE PRECISION DMIN, DSCAN, FSUM
      DATA V /4, 9, 7, 6/
      DATA ITEMS /1, 11, 21, 31/
C
      ME = CMMD_SELF_ADDRESS()
      N = CMMD_PARTITION_SIZE()
      IF (ME .EQ. CMMD_HOST_NODE()) THEN
        CALL CMMD_ENABLE
        BC = 42
        CALL CMMD_BC_FROM_HOST(BC, 4)
        CALL CMMD_DISTRIB_TO_NODES(ITEMS, 4)
        ISUM = CMMD_REDUCE_FROM_NODES_INT(1000, 0)
        CALL CMMD_GATHER_FROM_NODES(ALL, 4)
        CALL CMMD_SYNC_HOST_WITH_NODES
        WRITE (*, 100) ISUM, (ALL(I), I = 1, N)
  100   FORMAT ('host: sum ', I0, ' gathered', 4(1X, I0))
        CALL CMMD_DISABLE
        STOP
      END IF
C
C     Among the nodes: reductions and scans of every operand type
C
      IMAX = CMMD_REDUCE_INT(V(ME+1), 2)
      IUMAX = CMMD_REDUCE_UINT(ME, 3)
      ISCAN = CMMD_SCAN_INT(V(ME+1), 0, 0, 0, 0, 1)
      DMIN = CMMD_REDUCE_DOUBLE(DBLE(V(ME+1)) / 2, 4)
      FSUM = CMMD_REDUCE_FLOAT(REAL(V(ME+1)), 0)
      DSCAN = CMMD_SCAN_DOUBLE(DBLE(V(ME+1)) / 2, 0, 1, 0, 0, 0)
      WRITE (*, 200) ME, IMAX, IUMAX, ISCAN, DMIN, FSUM, DSCAN
  200 FORMAT ('node ', I0, ': max ', I0, ' umax ', I0, ' scan ', I0,
     *        ' min ', F0.1, ' fsum ', F0.1, ' dscan ', F0.1)
C
C     Exchanges: a swap with the partner across bit 0, a ring shift
C
      OUT = 100 + ME
      ISWAP = CMMD_SWAP(IEOR(ME, 1), IN, 4, OUT, 4)
      RIGHT = MOD(ME + 1, N)
      LEFT = MOD(ME + N - 1, N)
      OUT = 10 * ME
      ISR = CMMD_SEND_AND_RECEIVE(LEFT, 5, MINE, 4, RIGHT, 5, OUT, 4)
      WRITE (*, 300) ME, ISWAP, IN, ISR, MINE, CMMD_MSG_SENDER(),
     *               CMMD_BYTES_RECEIVED()
  300 FORMAT ('node ', I0, ': swap ', I0, 1X, I0, ' ring ', I0, 1X,
     *        I0, ' from ', I0, ' bytes ', I0)
C
C     Concatenation and the asynchronous global OR (node 2 raises it)
C
      MINE = ME * ME
      CALL CMMD_CONCAT_WITH_NODES(MINE, ALL, 4)
      IF (ME .EQ. 2) CALL CMMD_SET_GLOBAL_OR(1)
   10 IF (CMMD_GET_GLOBAL_OR() .EQ. 0) GOTO 10
      CALL CMMD_SYNC_WITH_NODES
      WRITE (*, 400) ME, (ALL(I), I = 1, N)
  400 FORMAT ('node ', I0, ': concat', 4(1X, I0), ' or 1')
C
C     With the host: broadcast, distribution, reduction to the host
C     (returned to every node too), gather
C
      CALL CMMD_RECEIVE_BC_FROM_HOST(BC, 4)
      CALL CMMD_RECEIVE_ELEMENT_FROM_HOST(ELEM, 4)
      ISUM = CMMD_REDUCE_TO_HOST_INT(V(ME+1), 0)
      MINE = 2 * ELEM
      CALL CMMD_CONCAT_ELEMENTS_TO_HOST(MINE, 4)
      CALL CMMD_SYNC_WITH_HOST
      WRITE (*, 500) ME, BC, ELEM, ISUM
  500 FORMAT ('node ', I0, ': bc ', I0, ' element ', I0, ' sum ', I0)
      END
