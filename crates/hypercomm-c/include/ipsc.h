/* ipsc.h -- the iPSC communication utilities (Moler and Scott, Intel
 * 1986), C versions, over hypercomm. The Fortran versions take the same
 * arguments by reference (GSENDW(CI, TYPE, BUF, LEN, DIM) …) and need no
 * header. Errors are written on standard error ("syslogged") and the
 * routine returns. Checked against the library's Rust signatures by
 * crates/hypercomm-c/tests/headers.rs. */
#ifndef HYPERCOMM_IPSC_H
#define HYPERCOMM_IPSC_H

#ifdef __cplusplus
extern "C" {
#endif

#define IPSC_HOST (-32768)

/* Basic calls (the host's SENDMSG is Fortran only: in C, sendmsg is the C
 * library's socket call; sendw works on the host too) */
int mynode(void);
int numnodes(void);
int cubedim(void);
int mypid(void);
int copen(int pid);
void sendw(int ci, int type, const void *buf, int len, int node, int pid);
void recvw(int ci, int type, void *buf, int len, int *cnt, int *node,
           int *pid);

/* Utilities */
void gsendw(int ci, int type, const void *buf, int len, int dim);
void grecvw(int ci, int type, void *buf, int len, int *cnt, int dim);
void gop(int ci, int type, double *x, int n, char op, int root, int dim,
         double *work);
void gcat(int ci, int type, void *buf, int buflen, int msglen, int *cnt,
          int root, int dim);
void mesh(int me, int dim, const int *lindim, const int *perbc, int *coords,
          int *pred, int *succ, int *work);
void lsendw(int ci, int type, const void *buf, int len4, int node, int pid);
void lsendmsg(int ci, int type, const void *buf, int len4, int node,
              int pid);
void lrecvw(int ci, int type, void *buf, int len4, int *cnt4, int *node,
            int *pid);
void spgsnw(int ci, int type, const void *buf, int len, int *list,
            int number);
void spgrcw(int ci, int type, void *buf, int len, int *cnt);

/* Internal subroutines, documented in the seed */
int between(int i, int j, int k);
int gray(int i);
int ginv(int i);
void split(int number, int *list, int *first);
int ipsc_xor(int i, int j);

#ifdef __cplusplus
}
#endif

#endif /* HYPERCOMM_IPSC_H */
