/* The MPI transport's C shim: the few MPI calls the transport makes, with
 * plain C types at the boundary, so that the Rust side needs no bindings
 * generated from mpi.h (no libclang) and works against any MPI's ABI
 * (Open MPI's handles are pointers, MPICH's are integers).
 *
 * Handles (communicators, requests) live in storage the Rust side
 * allocates; hc_handle_sizes says how large it must be. Datatypes and
 * operators are small integer codes mapped here. Every function returns an
 * MPI error code (MPI_SUCCESS = 0) unless it says otherwise; errors on our
 * communicators are returned, not fatal (MPI_ERRORS_RETURN).
 */
#include <mpi.h>
#include <string.h>

void hc_handle_sizes(int *comm, int *request) {
    *comm = (int)sizeof(MPI_Comm);
    *request = (int)sizeof(MPI_Request);
}

/* MPI_Init_thread with `want` (0 single, 1 funneled, 2 serialized, 3
 * multiple) unless MPI is already initialised (by the program itself);
 * *ours says whether we did it (and so must finalise). */
int hc_init(int want, int *provided, int *ours) {
    int done = 0;
    int levels[4] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                     MPI_THREAD_MULTIPLE};
    int err = MPI_Initialized(&done);
    if (err != MPI_SUCCESS) return err;
    *ours = !done;
    int got = MPI_THREAD_SINGLE;
    if (!done) {
        err = MPI_Init_thread(NULL, NULL, levels[want < 0 ? 0 : want > 3 ? 3 : want], &got);
        if (err != MPI_SUCCESS) return err;
    } else {
        MPI_Query_thread(&got);
    }
    *provided = got == MPI_THREAD_MULTIPLE     ? 3
                : got == MPI_THREAD_SERIALIZED ? 2
                : got == MPI_THREAD_FUNNELED   ? 1
                                               : 0;
    return MPI_SUCCESS;
}

int hc_finalized(void) {
    int f = 0;
    MPI_Finalized(&f);
    return f;
}

int hc_finalize(void) { return MPI_Finalize(); }

/* A private duplicate of MPI_COMM_WORLD for our traffic. */
int hc_world_dup(void *out) {
    MPI_Comm *c = (MPI_Comm *)out;
    int err = MPI_Comm_dup(MPI_COMM_WORLD, c);
    if (err != MPI_SUCCESS) return err;
    return MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
}

/* Another duplicate of `comm` (collective), errors returned. */
int hc_comm_dup(const void *comm, void *out) {
    MPI_Comm *c = (MPI_Comm *)out;
    int err = MPI_Comm_dup(*(const MPI_Comm *)comm, c);
    if (err != MPI_SUCCESS) return err;
    return MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
}

/* The largest tag this MPI takes (MPI_TAG_UB, at least 32767). */
int hc_tag_ub(const void *comm, int *ub) {
    int *v = NULL, flag = 0;
    int err = MPI_Comm_get_attr(*(const MPI_Comm *)comm, MPI_TAG_UB, &v, &flag);
    if (err != MPI_SUCCESS) return err;
    *ub = flag && v ? *v : 32767;
    return MPI_SUCCESS;
}

int hc_comm_rank(const void *comm, int *rank) { return MPI_Comm_rank(*(const MPI_Comm *)comm, rank); }

int hc_comm_size(const void *comm, int *size) { return MPI_Comm_size(*(const MPI_Comm *)comm, size); }

/* The job's shape as collective selection sees it, the same on every rank
 * of `comm` (collective): the most ranks that share one node (memory), and
 * the fewest cores any rank may use (`*cores`: this rank's on entry). */
int hc_job_shape(const void *comm, int *node_max, int *cores) {
    MPI_Comm c = *(const MPI_Comm *)comm, node;
    int size, in[2], out[2];
    int err = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (err != MPI_SUCCESS) return err;
    err = MPI_Comm_size(node, &size);
    MPI_Comm_free(&node);
    if (err != MPI_SUCCESS) return err;
    /* The maximum of the negated cores is the negated minimum. */
    in[0] = size;
    in[1] = -*cores;
    err = MPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, c);
    if (err != MPI_SUCCESS) return err;
    *node_max = out[0];
    *cores = -out[1];
    return MPI_SUCCESS;
}

/* A communicator of the `n` ranks of `comm` listed in `ranks` (in that
 * order); collective over those ranks only (MPI_Comm_create_group). */
int hc_comm_create_group(const void *comm, int n, const int *ranks, int tag, void *out) {
    MPI_Group all, sub;
    MPI_Comm c = *(const MPI_Comm *)comm;
    int err = MPI_Comm_group(c, &all);
    if (err != MPI_SUCCESS) return err;
    err = MPI_Group_incl(all, n, ranks, &sub);
    MPI_Group_free(&all);
    if (err != MPI_SUCCESS) return err;
    err = MPI_Comm_create_group(c, sub, tag, (MPI_Comm *)out);
    MPI_Group_free(&sub);
    if (err != MPI_SUCCESS) return err;
    return MPI_Comm_set_errhandler(*(MPI_Comm *)out, MPI_ERRORS_RETURN);
}

int hc_comm_free(void *comm) { return MPI_Comm_free((MPI_Comm *)comm); }

int hc_isend(const void *buf, int bytes, int dest, int tag, const void *comm, void *req) {
    return MPI_Isend(buf, bytes, MPI_BYTE, dest, tag, *(const MPI_Comm *)comm, (MPI_Request *)req);
}

int hc_send(const void *buf, int bytes, int dest, int tag, const void *comm) {
    return MPI_Send(buf, bytes, MPI_BYTE, dest, tag, *(const MPI_Comm *)comm);
}

/* source < 0: any source. */
/* A persistent receive of up to `bytes` from any source on `tag`; started
 * (and started again after each message) by hc_start. */
int hc_recv_init(void *buf, int bytes, int tag, const void *comm, void *req) {
    return MPI_Recv_init(buf, bytes, MPI_BYTE, MPI_ANY_SOURCE, tag, *(const MPI_Comm *)comm,
                         (MPI_Request *)req);
}

int hc_start(void *req) { return MPI_Start((MPI_Request *)req); }

int hc_recv(void *buf, int bytes, int source, int tag, const void *comm, int *got) {
    MPI_Status st;
    int err = MPI_Recv(buf, bytes, MPI_BYTE, source, tag, *(const MPI_Comm *)comm, &st);
    if (err != MPI_SUCCESS) return err;
    return MPI_Get_count(&st, MPI_BYTE, got);
}

/* *flag: whether the request completed; then its source, tag and byte
 * count. */
int hc_test(void *req, int *flag, int *source, int *tag, int *bytes) {
    MPI_Status st;
    int err = MPI_Test((MPI_Request *)req, flag, &st);
    if (err != MPI_SUCCESS || !*flag) return err;
    *source = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    return MPI_Get_count(&st, MPI_BYTE, bytes);
}

/* A receive of up to `bytes` from `source` (< 0: any) with `tag` (< 0:
 * any). */
int hc_irecv(void *buf, int bytes, int source, int tag, const void *comm, void *req) {
    return MPI_Irecv(buf, bytes, MPI_BYTE, source < 0 ? MPI_ANY_SOURCE : source,
                     tag < 0 ? MPI_ANY_TAG : tag, *(const MPI_Comm *)comm, (MPI_Request *)req);
}

/* Cancel a started receive and wait for it to end; *done: it had received
 * a message after all (then its source, tag and byte count). */
int hc_cancel_recv(void *req, int *done, int *source, int *tag, int *bytes) {
    MPI_Status st;
    MPI_Request *r = (MPI_Request *)req;
    *done = 0;
    if (*r == MPI_REQUEST_NULL) return MPI_SUCCESS;
    int err = MPI_Cancel(r);
    if (err != MPI_SUCCESS) return err;
    err = MPI_Wait(r, &st);
    if (err != MPI_SUCCESS) return err;
    int cancelled = 0;
    err = MPI_Test_cancelled(&st, &cancelled);
    if (err != MPI_SUCCESS || cancelled) return err;
    *done = 1;
    *source = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    return MPI_Get_count(&st, MPI_BYTE, bytes);
}

/* Cancel a started persistent receive, wait for it to end, free it. */
int hc_cancel(void *req) {
    MPI_Request *r = (MPI_Request *)req;
    if (*r == MPI_REQUEST_NULL) return MPI_SUCCESS;
    int err = MPI_Cancel(r);
    if (err != MPI_SUCCESS) return err;
    err = MPI_Wait(r, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS) return err;
    return MPI_Request_free(r);
}

int hc_abort(const void *comm, int code) { return MPI_Abort(*(const MPI_Comm *)comm, code); }

void hc_error_string(int code, char *buf, int len) {
    int n = 0;
    char s[MPI_MAX_ERROR_STRING];
    if (MPI_Error_string(code, s, &n) != MPI_SUCCESS) {
        n = 0;
    }
    if (len <= 0) return;
    if (n >= len) n = len - 1;
    memcpy(buf, s, (size_t)n);
    buf[n] = 0;
}

void hc_library_version(char *buf, int len) {
    int n = 0;
    char s[MPI_MAX_LIBRARY_VERSION_STRING];
    if (MPI_Get_library_version(s, &n) != MPI_SUCCESS) n = 0;
    if (len <= 0) return;
    if (n >= len) n = len - 1;
    memcpy(buf, s, (size_t)n);
    buf[n] = 0;
}

/* ---- the MPI library's own collectives (native collectives) ---- */

static MPI_Datatype dtype(int code) {
    switch (code) {
    case 0: return MPI_UINT8_T;
    case 1: return MPI_INT8_T;
    case 2: return MPI_UINT16_T;
    case 3: return MPI_INT16_T;
    case 4: return MPI_UINT32_T;
    case 5: return MPI_INT32_T;
    case 6: return MPI_UINT64_T;
    case 7: return MPI_INT64_T;
    case 8: return MPI_FLOAT;
    case 9: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op op(int code) {
    switch (code) {
    case 0: return MPI_SUM;
    case 1: return MPI_PROD;
    case 2: return MPI_MIN;
    case 3: return MPI_MAX;
    case 4: return MPI_BAND;
    case 5: return MPI_BOR;
    case 6: return MPI_BXOR;
    case 7: return MPI_LAND;
    case 8: return MPI_LOR;
    case 9: return MPI_LXOR;
    default: return MPI_OP_NULL;
    }
}

#define BAD_CODES(t, o) (dtype(t) == MPI_DATATYPE_NULL || ((o) >= 0 && op(o) == MPI_OP_NULL))

/* send == NULL: in place (the data is in recv). */
int hc_allreduce(const void *send, void *recv, int count, int t, int o, const void *comm) {
    if (BAD_CODES(t, o)) return MPI_ERR_ARG;
    return MPI_Allreduce(send ? send : MPI_IN_PLACE, recv, count, dtype(t), op(o),
                         *(const MPI_Comm *)comm);
}

int hc_reduce(const void *send, void *recv, int count, int t, int o, int root, const void *comm) {
    if (BAD_CODES(t, o)) return MPI_ERR_ARG;
    return MPI_Reduce(send, recv, count, dtype(t), op(o), root, *(const MPI_Comm *)comm);
}

int hc_bcast(void *buf, int count, int t, int root, const void *comm) {
    if (BAD_CODES(t, -1)) return MPI_ERR_ARG;
    return MPI_Bcast(buf, count, dtype(t), root, *(const MPI_Comm *)comm);
}

int hc_barrier(const void *comm) { return MPI_Barrier(*(const MPI_Comm *)comm); }

int hc_allgather(const void *send, void *recv, int count, int t, const void *comm) {
    if (BAD_CODES(t, -1)) return MPI_ERR_ARG;
    return MPI_Allgather(send, count, dtype(t), recv, count, dtype(t), *(const MPI_Comm *)comm);
}

int hc_alltoall(const void *send, void *recv, int count, int t, const void *comm) {
    if (BAD_CODES(t, -1)) return MPI_ERR_ARG;
    return MPI_Alltoall(send, count, dtype(t), recv, count, dtype(t), *(const MPI_Comm *)comm);
}
