C     The iPSC communication utilities' example problem (seed 000,
C     section 10): normalize a distributed vector with GOP, GSENDW /
C     GRECVW and GCAT, typed from the seed. The seed gives a code
C     fragment: the lines before and after the marked part are not in
C     it (declarations of M, N and DPSIZE as integers, the data
C     X(I) = MOD(37*J, 11) - 5 for the global index J = MYNODE()*M+I-1,
C     and node 0 printing the result). Run on 4 nodes.
      PROGRAM NORMAL
      INTEGER M, N, DPSIZE, J, MYPID
C     -- the seed's fragment --------------------------------------
      INTEGER I, CI, GOTYPE, GSTYPE, GCTYPE, CUBEDIM, COPEN, MYNODE,
     *        CNT, ROOT
      PARAMETER (M = 3, N = 12)
      DOUBLE PRECISION X(M), Y(N), DOT, NORM, DUMMY
      PARAMETER (DPSIZE = 8)
      DATA GOTYPE /100/, GSTYPE /200/, GCTYPE /300/
C
      CI = COPEN(MYPID())
C
C Assume that X, M, and N have been
C   initialized
C
C     -- not in the seed: the data ---------------------------------
      DO 5 I = 1, M
        J = MYNODE()*M + I - 1
        X(I) = DBLE(MOD(37*J, 11) - 5)
    5 CONTINUE
C     -- the seed's fragment --------------------------------------
      ROOT = 0
C
C Compute the local dot product
C
      DOT = 0
      DO 1 I = 1, M
        DOT = DOT + X(I)*X(I)
    1 CONTINUE
C
C Sum local contributions in ROOT
C
      CALL GOP (CI, GOTYPE, DOT, 1, '+', ROOT, CUBEDIM(), DUMMY)
C
C Distribute norm to all the processors
C
      IF (MYNODE() .EQ. ROOT) THEN
        NORM = DSQRT (DOT)
        CALL GSENDW (CI, GSTYPE, NORM, DPSIZE, CUBEDIM())
      ELSE
        CALL GRECVW (CI, GSTYPE, NORM, DPSIZE, CNT, CUBEDIM())
      ENDIF
C
C Do the local normalization
C
      DO 2 I = 1, M
        X(I) = X(I)/NORM
    2 CONTINUE
C
C Copy X to the concatenation buffer
C
      DO 3 I = 1,M
        Y(I) = X(I)
    3 CONTINUE
C
C Concatenate the vector in ROOT
C
      CALL GCAT(CI, GCTYPE, Y, N*DPSIZE, M*DPSIZE, CNT, ROOT, CUBEDIM())
C     -- not in the seed: node 0 prints the result -----------------
      IF (MYNODE() .EQ. ROOT) THEN
        WRITE (*, '(A, ES24.16)') 'norm ', NORM
        WRITE (*, '(A, I4)') 'count ', CNT
        DO 4 I = 1, N
          WRITE (*, '(A, I3, ES24.16)') 'y ', I, Y(I)
    4   CONTINUE
      ENDIF
      END
