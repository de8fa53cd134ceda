C     CMMD's named constants from Fortran 77 through cmmd_fort.h: no
C     declaration of the functions' types, no literal combiner numbers.
C     Node r contributes the manual's values 4 9 7 6 (V(r+1)); run on 4.
      PROGRAM CMMDINC
      INCLUDE 'cmmd_fort.h'
      INTEGER ME, V(4), IMAX, IOR, IEXC
      DOUBLE PRECISION DMIN
      DATA V /4, 9, 7, 6/
      ME = CMMD_SELF_ADDRESS()
      IMAX = CMMD_REDUCE_INT(V(ME+1), CMMD_COMBINER_MAX)
      IOR = CMMD_REDUCE_INT(V(ME+1), CMMD_COMBINER_IOR)
      IEXC = CMMD_SCAN_INT(V(ME+1), CMMD_COMBINER_ADD, CMMD_UPWARD,
     &  CMMD_NONE, 0, CMMD_EXCLUSIVE)
      DMIN = CMMD_REDUCE_DOUBLE(DBLE(V(ME+1)) / 2, CMMD_COMBINER_MIN)
      WRITE (*, 100) ME, IMAX, IOR, IEXC, DMIN, ANY_NODE
  100 FORMAT ('node ', I0, ': max ', I0, ' or ', I0, ' exscan ', I0,
     &  ' min ', F3.1, ' any ', I0)
      END
