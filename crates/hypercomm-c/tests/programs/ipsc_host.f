C     The iPSC utilities with a host (seed 000): a broadcast from the
C     host, which "just uses SENDMSG to send the message to any one of
C     the receiving processes" (here node 2) while the nodes call GRECVW
C     with a buffer longer than the message; GOP with the host as root;
C     the nodes' counts and sums back with SENDW / RECVW; SYSLOG. One
C     program is the host and the nodes (the host when MYNODE() is
C     -32768). Run on 4 nodes.
      PROGRAM IPSCH
      INTEGER CI, COPEN, MYPID, MYNODE, NUMNODES, CUBEDIM
      INTEGER ME, I, J, CNT, NODE, PID, MSG(10), BUF(16), SUM
      INTEGER RES(2), GOT(2, 4)
      DOUBLE PRECISION X(2), WORK(2)
C     The buffers of one routine have one type (gfortran checks): the
C     host receives the doubles through an INTEGER view.
      INTEGER IX(4)
      EQUIVALENCE (X, IX)
      CI = COPEN(MYPID())
      ME = MYNODE()
      IF (ME .EQ. -32768) THEN
        DO 1 I = 1, 10
          MSG(I) = I * I
    1   CONTINUE
        CALL SENDMSG(CI, 7, MSG, 40, 2, 0)
        CALL RECVW(CI, 8, IX, 16, CNT, NODE, PID)
        WRITE (*, 100) X(1), X(2), NODE, CNT
  100   FORMAT ('host: gop ', F0.1, 1X, F0.1, ' from ', I0, ' bytes ',
     *          I0)
        DO 2 I = 1, NUMNODES()
          CALL RECVW(CI, 9, RES, 8, CNT, NODE, PID)
          GOT(1, NODE + 1) = RES(1)
          GOT(2, NODE + 1) = RES(2)
    2   CONTINUE
        WRITE (*, 200) ((GOT(J, I), J = 1, 2), I = 1, NUMNODES())
  200   FORMAT ('host: got', 8(1X, I0))
        CALL SYSLOG(MYPID(), 'HOST: DONE')
        STOP
      END IF
      CALL GRECVW(CI, 7, BUF, 64, CNT, CUBEDIM())
      SUM = 0
      DO 3 I = 1, CNT / 4
        SUM = SUM + BUF(I)
    3 CONTINUE
      X(1) = ME + 1
      X(2) = SUM
      CALL GOP(CI, 8, X, 2, '+', -32768, CUBEDIM(), WORK)
      RES(1) = CNT
      RES(2) = SUM
      CALL SENDW(CI, 9, RES, 8, -32768, 0)
      END
