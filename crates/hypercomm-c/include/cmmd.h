/* cmmd.h -- the CMMD message-passing library (Thinking Machines, CMMD
 * Reference Manual 1.1), over hypercomm.
 *
 * The first CMMD call joins the job. Nodes 0..CMMD_partition_size()-1;
 * CMMD_host_node() is -32768. Sends are rendezvous sends; the smaller of
 * the sender's and the receiver's lengths is transferred. A fatal error
 * prints a message naming the routine and the node and stops the job.
 * Checked against the library's Rust signatures by
 * crates/hypercomm-c/tests/headers.rs. */
#ifndef HYPERCOMM_CMMD_H
#define HYPERCOMM_CMMD_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

#define ANY_NODE (-1)
#define ANY_TAG (-1)
#define DEFAULT_MSG_TAG 0
#define CMMD_SHORT_MESSAGE_BYTES 16

typedef int CMMD_combiner_t;
#define CMMD_combiner_add 0
#define CMMD_combiner_uadd 1
#define CMMD_combiner_max 2
#define CMMD_combiner_umax 3
#define CMMD_combiner_min 4
#define CMMD_combiner_umin 5
#define CMMD_combiner_ior 6
#define CMMD_combiner_xor 7
#define CMMD_combiner_and 8

typedef int CMMD_scan_direction_t;
#define CMMD_upward 0
#define CMMD_downward 1

typedef int CMMD_segment_mode_t;
#define CMMD_none 0
#define CMMD_segment_bit 1
#define CMMD_start_bit 2

typedef int CMMD_scan_inclusion_t;
#define CMMD_inclusive 0
#define CMMD_exclusive 1

/* Initialisation (host) and the short message facility (host and nodes) */
void CMMD_enable(void);
int CMMD_is_enabled(void);
void CMMD_disable(void);
void CMMD_suspend(void);
int CMMD_is_suspended(void);
void CMMD_resume(void);
void CMMD_enable_short_messages(void);
void CMMD_disable_short_messages(void);

/* Processor information, polling, message information */
int CMMD_self_address(void);
int CMMD_host_node(void);
int CMMD_partition_size(void);
int CMMD_msg_pending(int node, int tag);
int CMMD_bytes_received(void);
int CMMD_bytes_sent(void);
int CMMD_msg_sender(void);
int CMMD_msg_tag(void);

/* Two-node functions */
int CMMD_send(int destination, int tag, const void *buffer, int len);
int CMMD_send_v(int destination, int tag, const void *buffer, int elem_len,
                int stride, int elem_cnt);
int CMMD_receive(int source, int tag, void *buffer, int len);
int CMMD_receive_v(int source, int tag, void *buffer, int elem_len,
                   int stride, int elem_cnt);
int CMMD_send_and_receive(int source, int source_tag, void *inbuffer,
                          int inlen, int destination, int dest_tag,
                          const void *outbuffer, int outlen);
int CMMD_send_and_receive_v(int source, int source_tag, void *inbuffer,
                            int in_elem_len, int in_stride,
                            int in_elem_count, int destination, int dest_tag,
                            const void *outbuffer, int out_elem_len,
                            int out_stride, int out_elem_count);
int CMMD_swap(int processor, void *inbuffer, int inlen,
              const void *outbuffer, int outlen);
int CMMD_swap_v(int processor, void *inbuffer, int in_elem_len,
                int in_stride, int in_elem_count, const void *outbuffer,
                int out_elem_len, int out_stride, int out_elem_cnt);
void CMMD_send_short(int destination, int tag, const void *buffer, int len);
void CMMD_wait_for_send(int destination);

/* Broadcasts and distribution from the host */
void CMMD_bc_from_host(void *buffer, int len);
void CMMD_receive_bc_from_host(void *buffer, int len);
void CMMD_distrib_to_nodes(void *buffer, int elem_length);
void CMMD_receive_element_from_host(void *buffer, int length);

/* Global synchronisation and the asynchronous global OR */
void CMMD_sync_host_with_nodes(void);
void CMMD_sync_with_host(void);
void CMMD_sync_with_nodes(void);
void CMMD_set_global_or(int value);
int CMMD_get_global_or(void);

/* Reductions (float operands give double results) */
int CMMD_reduce_int(int value, CMMD_combiner_t combiner);
unsigned CMMD_reduce_uint(unsigned value, CMMD_combiner_t combiner);
double CMMD_reduce_float(float value, CMMD_combiner_t combiner);
double CMMD_reduce_double(double value, CMMD_combiner_t combiner);
int CMMD_reduce_from_nodes_int(int value, CMMD_combiner_t combiner);
unsigned CMMD_reduce_from_nodes_uint(unsigned value, CMMD_combiner_t combiner);
double CMMD_reduce_from_nodes_float(float value, CMMD_combiner_t combiner);
double CMMD_reduce_from_nodes_double(double value, CMMD_combiner_t combiner);
int CMMD_reduce_to_host_int(int value, CMMD_combiner_t combiner);
unsigned CMMD_reduce_to_host_uint(unsigned value, CMMD_combiner_t combiner);
double CMMD_reduce_to_host_float(float value, CMMD_combiner_t combiner);
double CMMD_reduce_to_host_double(double value, CMMD_combiner_t combiner);

/* Scans */
int CMMD_scan_int(int value, CMMD_combiner_t combiner,
                  CMMD_scan_direction_t direction, CMMD_segment_mode_t smode,
                  int sbit, CMMD_scan_inclusion_t inclusion);
unsigned CMMD_scan_uint(unsigned value, CMMD_combiner_t combiner,
                        CMMD_scan_direction_t direction,
                        CMMD_segment_mode_t smode, int sbit,
                        CMMD_scan_inclusion_t inclusion);
double CMMD_scan_float(float value, CMMD_combiner_t combiner,
                       CMMD_scan_direction_t direction,
                       CMMD_segment_mode_t smode, int sbit,
                       CMMD_scan_inclusion_t inclusion);
double CMMD_scan_double(double value, CMMD_combiner_t combiner,
                        CMMD_scan_direction_t direction,
                        CMMD_segment_mode_t smode, int sbit,
                        CMMD_scan_inclusion_t inclusion);

/* Concatenation */
void CMMD_concat_with_nodes(const void *element, void *buffer,
                            int elem_length);
void CMMD_gather_from_nodes(void *buffer, int elem_length);
void CMMD_concat_elements_to_host(const void *element, int elem_length);

#ifdef __cplusplus
}
#endif

#endif /* HYPERCOMM_CMMD_H */
