//! # hypercomm-c: PICL, CMMD and the iPSC utilities for C and Fortran 77
//!
//! A C ABI over the [`hypercomm`] library so that programs written for
//! PICL (seed 003), CMMD (seed 004) and the iPSC communication utilities
//! (seed 000) compile unchanged against `include/picl.h`, `cmmd.h` and
//! `ipsc.h` and run under the `hypercomm run` launcher:
//!
//! ```sh
//! cargo build --release -p hypercomm-c -p hypercomm-cli
//! cc -Wall -Werror -I crates/hypercomm-c/include prog.c \
//!    target/release/libhypercomm_c.a -lpthread -ldl -lm -o prog
//! gfortran -Wall prog.f target/release/libhypercomm_c.a -lpthread -ldl -lm -o prog
//! target/release/hypercomm run -n 4 --host ./host -- ./node
//! ```
//!
//! ## The rules of the C interface
//!
//! * **One communicator per process, owned by one thread.** PICL's open0,
//!   or the first CMMD or iPSC call, joins the job; the world communicator
//!   is kept by the thread that made it, and every later call must come
//!   from that thread (another thread finds communication not open).
//! * **Errors.** PICL and CMMD: a misuse or a failure prints
//!   `PICL error in recv0 on node 3: …` (or `CMMD error in …`, naming the
//!   routine and the node) on standard error, aborts the job (every other
//!   rank fails at its next call, the launcher reports it) and exits with
//!   status 1, as the manuals' "the routine stops processing" / "fatal
//!   error". Return codes are the manuals': CMMD_send/receive 0 or 1,
//!   send_and_receive TRUE/FALSE, probe0 and msg_pending 1/0. The iPSC
//!   utilities "syslog" their errors (a line on standard error beginning
//!   with the routine's name, in capitals: `GCAT: BUFFER LENGTH EXCEEDED`)
//!   and return.
//! * **No Rust panic crosses the boundary**: every entry point runs under
//!   `catch_unwind`; a panic becomes the abort above.
//! * **Buffers** are used only during the call (every routine here is
//!   blocking, apart from CMMD_send_short, which copies its ≤ 16 bytes).
//! * **Pointers** passed to the library must be valid for the lengths
//!   given, as the manuals require; lengths and counts are checked for
//!   sign, and null buffers with a non-zero length are errors.
//! * Node numbers: nodes `0..P`, the host −32768 (PICL, iPSC, and
//!   CMMD_host_node).
//!
//! ## Routines left out, and why
//!
//! * PICL `load0` of one node at a time (`node` ≥ 0): a host started by
//!   hand spawns all nodes with one program (`load0(file, -1)`); under the
//!   launcher the nodes are already running and load0 only checks.
//! * PICL: opening again after close0 (one job per process).
//! * CMMD `CMMD_send_packet` / `CMMD_receive_packet`: the CM-5 data
//!   network's raw 20-byte packets, outside the message protocol.
//! * CMMD `CMMD_barrier_sync`: it waits for the CM-5 nodes to return to
//!   their dispatch loop; node programs here are ordinary programs that
//!   call CMMD_sync_with_host instead.
//! * The iPSC host-side receive of long messages (the seed has none
//!   either).
//! * iPSC `SYSLOG` and `SENDMSG` from C: they would take the place of the
//!   C library's `syslog(3)` and `sendmsg(2)` in every program linked with
//!   us; Fortran programs have them (`CALL SYSLOG(PID, 'MESSAGE')` on
//!   standard error, `CALL SENDMSG(…)` as SENDW), C programs use `sendw`
//!   on the host. A test checks that no C name clashes with the C
//!   library's.
//! * PICL routines of later PICL versions that this manual (seed 003) does
//!   not name, such as `recv1` and `tracefiles`.
//! * PICL from Fortran: the manual (seed 003) has no Fortran interface
//!   ("we will not support FORTRAN language calls to PICL routines until
//!   PICL has been implemented in FORTRAN"); its FORTRAN-to-C interface
//!   routines were not part of the manual, so none are provided.
//!
//! CMMD from Fortran 77 (section 1.3) has every routine of the C interface
//! under the same name in lower case (`CALL CMMD_SYNC_WITH_NODES`,
//! `N = CMMD_REDUCE_INT(X, CMMD_COMBINER_ADD)`), arguments by reference,
//! in [`fortran`]; `include/cmmd_fort.h` declares the constants of
//! `cmmd.h` as PARAMETERs and the functions' result types.
//!
//! Differences: buffer arguments are `void *` (the manuals wrote `char *`
//! for compilers that did not check); PICL's `close0` is declared without
//! a prototype in C so that the manual's `close0()` on a node compiles;
//! PICL's message types of the high-level routines are accepted but the
//! reductions and bcast0 run on the library's own context (so a recv0 of
//! type −1 never takes their messages, and check mode compares bcast0's
//! roots); bcast1 sends with its type on the context recv0 receives on, as
//! the manual's split-phase protocol needs; send0 and the iPSC's SENDW
//! never wait for the receiver (a long message is copied); getarc0 on a node reports
//! order 0 and direction 1 for the fully connected topology (the
//! announcement carries the ring order only for rings).

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod cmmd;
pub mod fortran;
pub mod ipsc;
pub mod picl;
mod reduce;
mod spanning;
mod state;
mod tracing;
