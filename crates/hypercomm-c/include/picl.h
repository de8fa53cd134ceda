/* picl.h -- PICL, the Portable Instrumented Communication Library
 * (Geist, Heath, Peyton, Worley, ORNL), over hypercomm.
 *
 * Node numbers 0..P-1, the host -32768; a message type of -1 in recv0 and
 * probe0 accepts any type. Data types of the g*0 routines: 0 char,
 * 1 short, 2 int, 3 long, 4 float, 5 double. setarc0 topologies: 1
 * hypercube, 2 full, 3 unidirectional ring, 4 bidirectional ring; ord 0
 * natural, 1 Gray; dir 1 forward, -1 backward.
 *
 * Buffers are void * (the manual's char * predates prototypes). Errors
 * print a message naming the routine and the node and stop the job.
 * Checked against the library's Rust signatures by
 * crates/hypercomm-c/tests/headers.rs. */
#ifndef HYPERCOMM_PICL_H
#define HYPERCOMM_PICL_H

#ifdef __cplusplus
extern "C" {
#endif

#define PICL_HOST (-32768)

/* Low-level primitives */
void open0(int *numproc, int *me, int *host);
#ifdef __cplusplus
void close0(int release);
#else
/* No prototype: the manual's node programs call close0() without the
 * argument, which only the host uses. */
void close0();
#endif
void who0(int *numproc, int *me, int *host);
void send0(const void *buf, int bytes, int type, int dest);
void recv0(void *buf, int bytes, int type);
void recvinfo0(int *bytes, int *type, int *source);
int probe0(int type);
void message0(const char *message);
void load0(const char *file, int node);
void sync0(void);
void check0(int checking);
double clock0(void);

/* High-level communication routines */
void setarc0(int *nprocs, int *top, int *ord, int *dir);
void getarc0(int *nprocs, int *top, int *ord, int *dir);
void barrier0(void);
void bcast0(void *buf, int bytes, int type, int root);
void bcast1(void *buf, int bytes, int type, int root);
void gand0(void *buf, int items, int datatype, int msgtype, int root);
void gmax0(void *buf, int items, int datatype, int msgtype, int root);
void gmin0(void *buf, int items, int datatype, int msgtype, int root);
void gor0(void *buf, int items, int datatype, int msgtype, int root);
void gprod0(void *buf, int items, int datatype, int msgtype, int root);
void gsum0(void *buf, int items, int datatype, int msgtype, int root);
void gxor0(void *buf, int items, int datatype, int msgtype, int root);
#ifdef __cplusplus
void gcomb0(void *buf, int items, int datatype, int msgtype, int root,
            void (*comb)(void *p1, const void *p2, int items, int datatype));
#else
/* comb(p1, p2, items, datatype) overwrites p1; unprototyped as in the
 * manual, so K&R-style combiners such as its or0 are accepted. */
void gcomb0(void *buf, int items, int datatype, int msgtype, int root,
            void (*comb)());
#endif
int gray0(int i);
int ginv0(int i);
/* The bytes of one element of a datatype (the manual's combiners use it). */
int datasize0(int datatype);

/* Execution tracing */
void traceenable(const char *tracefile, int verbose);
void tracehost(int tracesize, int flush);
void tracenode(int tracesize, int flush, int sync);
void tracelevel(int event, int compstats, int commstats);
void traceinfo(int *remaining, int *event, int *compstats, int *commstats);
void tracemark(int marktype);
void tracemsg(const char *message);
void traceflush(void);
void traceexit(void);

#ifdef __cplusplus
}
#endif

#endif /* HYPERCOMM_PICL_H */
