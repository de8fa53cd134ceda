//! Fortran 77 entry points (gfortran's convention: the name in lower case
//! with a trailing underscore, every argument by reference, the length of
//! a CHARACTER argument appended by value). Each calls the C entry point.
//!
//! The iPSC utilities as the seed documents them in Fortran, and every CMMD
//! routine in the Fortran 77 form of the manual's section 1.3 (same names
//! and argument order as in C; INTEGER for int, unsigned and the CMMD
//! enumerations, REAL for float, DOUBLE PRECISION for double; the float
//! reductions return DOUBLE PRECISION, as their C forms return double).

use crate::state::get;
use std::ffi::{c_char, c_int, c_uint, c_void};

macro_rules! by_ref {
    ($($f:ident => $($c:ident)::+ ( $($a:ident),* ) $(-> $r:ty)?;)*) => {$(
        #[doc = concat!("Fortran form of `", stringify!($($c)::+), "`.")]
        ///
        /// # Safety
        /// As the C routine; every scalar argument is a valid `INTEGER`.
        #[no_mangle]
        pub unsafe extern "C" fn $f($($a: *mut c_int),*) $(-> $r)? {
            // SAFETY: the caller's contract.
            unsafe { $($c)::+($(get($a)),*) }
        }
    )*};
}

#[allow(unused_unsafe)]
mod scalar {
    use super::{c_int, get};
    by_ref! {
        copen_ => crate::ipsc::copen(pid) -> c_int;
        gray_ => crate::ipsc::gray(i) -> c_int;
        ginv_ => crate::ipsc::ginv(i) -> c_int;
        xor_ => crate::ipsc::ipsc_xor(i, j) -> c_int;
        between_ => crate::ipsc::between(i, j, k) -> c_int;
    }
}
pub use scalar::*;

/// Fortran MYNODE().
#[no_mangle]
pub extern "C" fn mynode_() -> c_int {
    crate::ipsc::mynode()
}
/// Fortran NUMNODES().
#[no_mangle]
pub extern "C" fn numnodes_() -> c_int {
    crate::ipsc::numnodes()
}
/// Fortran MYPID().
#[no_mangle]
pub extern "C" fn mypid_() -> c_int {
    crate::ipsc::mypid()
}
/// Fortran CUBEDIM().
#[no_mangle]
pub extern "C" fn cubedim_() -> c_int {
    crate::ipsc::cubedim()
}

/// Fortran GSENDW(CI, TYPE, BUF, LEN, DIM).
///
/// # Safety
/// As [`crate::ipsc::gsendw`].
#[no_mangle]
pub unsafe extern "C" fn gsendw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *const c_void,
    len: *mut c_int,
    dim: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::gsendw(get(ci), get(t), buf, get(len), get(dim)) }
}

/// Fortran GRECVW(CI, TYPE, BUF, LEN, CNT, DIM).
///
/// # Safety
/// As [`crate::ipsc::grecvw`].
#[no_mangle]
pub unsafe extern "C" fn grecvw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *mut c_void,
    len: *mut c_int,
    cnt: *mut c_int,
    dim: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::grecvw(get(ci), get(t), buf, get(len), cnt, get(dim)) }
}

/// Fortran GOP(CI, TYPE, X, N, OP, ROOT, DIM, WORK).
///
/// # Safety
/// As [`crate::ipsc::gop`]; `op` points to at least one character.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gop_(
    ci: *mut c_int,
    t: *mut c_int,
    x: *mut f64,
    n: *mut c_int,
    op: *const c_char,
    root: *mut c_int,
    dim: *mut c_int,
    work: *mut f64,
    _op_len: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::gop(get(ci), get(t), x, get(n), *op, get(root), get(dim), work) }
}

/// Fortran GCAT(CI, TYPE, BUF, BUFLEN, MSGLEN, CNT, ROOT, DIM).
///
/// # Safety
/// As [`crate::ipsc::gcat`].
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gcat_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *mut c_void,
    buflen: *mut c_int,
    msglen: *mut c_int,
    cnt: *mut c_int,
    root: *mut c_int,
    dim: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        crate::ipsc::gcat(
            get(ci),
            get(t),
            buf,
            get(buflen),
            get(msglen),
            cnt,
            get(root),
            get(dim),
        )
    }
}

/// Fortran SENDW / LSENDW / LSENDMSG(CI, TYPE, BUF, LEN, NODE, PID).
///
/// # Safety
/// As [`crate::ipsc::sendw`].
#[no_mangle]
pub unsafe extern "C" fn sendw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *const c_void,
    len: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::sendw(get(ci), get(t), buf, get(len), get(node), get(pid)) }
}

/// Fortran LSENDW.
///
/// # Safety
/// As [`sendw_`].
#[no_mangle]
pub unsafe extern "C" fn lsendw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *const c_void,
    len: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    // SAFETY: forwarded.
    unsafe { sendw_(ci, t, buf, len, node, pid) }
}

/// Fortran LSENDMSG (from the host).
///
/// # Safety
/// As [`sendw_`].
#[no_mangle]
pub unsafe extern "C" fn lsendmsg_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *const c_void,
    len: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    // SAFETY: forwarded.
    unsafe { sendw_(ci, t, buf, len, node, pid) }
}

/// Fortran RECVW / LRECVW(CI, TYPE, BUF, LEN, CNT, NODE, PID).
///
/// # Safety
/// As [`crate::ipsc::recvw`].
#[no_mangle]
pub unsafe extern "C" fn recvw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *mut c_void,
    len: *mut c_int,
    cnt: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::recvw(get(ci), get(t), buf, get(len), cnt, node, pid) }
}

/// Fortran LRECVW.
///
/// # Safety
/// As [`recvw_`].
#[no_mangle]
pub unsafe extern "C" fn lrecvw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *mut c_void,
    len: *mut c_int,
    cnt: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    // SAFETY: forwarded.
    unsafe { recvw_(ci, t, buf, len, cnt, node, pid) }
}

/// Fortran SPGSNW(CI, TYPE, BUF, LEN, LIST, NUMBER).
///
/// # Safety
/// As [`crate::ipsc::spgsnw`].
#[no_mangle]
pub unsafe extern "C" fn spgsnw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *const c_void,
    len: *mut c_int,
    list: *mut c_int,
    number: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::spgsnw(get(ci), get(t), buf, get(len), list, get(number)) }
}

/// Fortran SPGRCW(CI, TYPE, BUF, LEN, CNT).
///
/// # Safety
/// As [`crate::ipsc::spgrcw`].
#[no_mangle]
pub unsafe extern "C" fn spgrcw_(
    ci: *mut c_int,
    t: *mut c_int,
    buf: *mut c_void,
    len: *mut c_int,
    cnt: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::spgrcw(get(ci), get(t), buf, get(len), cnt) }
}

/// Fortran SPLIT(NUMBER, LIST, FIRST).
///
/// # Safety
/// As [`crate::ipsc::split`].
#[no_mangle]
pub unsafe extern "C" fn split_(number: *mut c_int, list: *mut c_int, first: *mut c_int) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::split(get(number), list, first) }
}

/// Fortran MESH(ME, DIM, LINDIM, PERBC, COORDS, PRED, SUCC, WORK).
///
/// # Safety
/// As [`crate::ipsc::mesh`].
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mesh_(
    me: *mut c_int,
    dim: *mut c_int,
    lindim: *const c_int,
    perbc: *const c_int,
    coords: *mut c_int,
    pred: *mut c_int,
    succ: *mut c_int,
    work: *mut c_int,
) {
    // SAFETY: the caller's contract.
    unsafe { crate::ipsc::mesh(get(me), get(dim), lindim, perbc, coords, pred, succ, work) }
}

/// The Fortran 77 type behind an argument kind: `i` INTEGER (and the
/// CMMD enumerations), `u` INTEGER read as unsigned, `f` REAL, `d` DOUBLE
/// PRECISION, all by reference; `p` a buffer, passed through.
macro_rules! fty {
    (i) => { *mut c_int };
    (u) => { *mut c_uint };
    (f) => { *mut f32 };
    (d) => { *mut f64 };
    (p) => { *mut c_void };
}

/// The value the C routine takes for an argument of kind `k`.
macro_rules! fval {
    (p, $a:ident) => {
        $a
    };
    ($k:ident, $a:ident) => {
        value($a)
    };
}

/// The value behind a by-reference scalar (0 for a null pointer, which
/// gfortran never passes; the C routine then reports the bad argument).
///
/// # Safety
/// `p` is null or valid for reading.
unsafe fn value<T: Copy + Default>(p: *mut T) -> T {
    if p.is_null() {
        T::default()
    } else {
        // SAFETY: the caller's contract.
        unsafe { p.read() }
    }
}

macro_rules! cmmd_fortran {
    ($($f:ident => $c:ident ( $($a:ident : $k:ident),* ) $(-> $r:ty)?;)*) => {$(
        #[doc = concat!(
            "Fortran 77 form of [`crate::cmmd::", stringify!($c),
            "`] (the manual's section 1.3): the same name, in lower case, \
             and arguments, by reference."
        )]
        ///
        /// # Safety
        /// As the C routine; every scalar argument points to a valid value
        /// of its Fortran type.
        #[no_mangle]
        #[allow(clippy::too_many_arguments, unused_unsafe)]
        pub unsafe extern "C" fn $f($($a: fty!($k)),*) $(-> $r)? {
            // SAFETY: the caller's contract.
            unsafe { crate::cmmd::$c($(fval!($k, $a)),*) }
        }
    )*};
}

cmmd_fortran! {
    cmmd_enable_ => CMMD_enable();
    cmmd_is_enabled_ => CMMD_is_enabled() -> c_int;
    cmmd_disable_ => CMMD_disable();
    cmmd_suspend_ => CMMD_suspend();
    cmmd_is_suspended_ => CMMD_is_suspended() -> c_int;
    cmmd_resume_ => CMMD_resume();
    cmmd_enable_short_messages_ => CMMD_enable_short_messages();
    cmmd_disable_short_messages_ => CMMD_disable_short_messages();
    cmmd_self_address_ => CMMD_self_address() -> c_int;
    cmmd_host_node_ => CMMD_host_node() -> c_int;
    cmmd_partition_size_ => CMMD_partition_size() -> c_int;
    cmmd_msg_pending_ => CMMD_msg_pending(node: i, tag: i) -> c_int;
    cmmd_bytes_received_ => CMMD_bytes_received() -> c_int;
    cmmd_bytes_sent_ => CMMD_bytes_sent() -> c_int;
    cmmd_msg_sender_ => CMMD_msg_sender() -> c_int;
    cmmd_msg_tag_ => CMMD_msg_tag() -> c_int;
    cmmd_send_ => CMMD_send(destination: i, tag: i, buffer: p, len: i) -> c_int;
    cmmd_send_v_ => CMMD_send_v(destination: i, tag: i, buffer: p, elem_len: i, stride: i, elem_cnt: i) -> c_int;
    cmmd_receive_ => CMMD_receive(source: i, tag: i, buffer: p, len: i) -> c_int;
    cmmd_receive_v_ => CMMD_receive_v(source: i, tag: i, buffer: p, elem_len: i, stride: i, elem_cnt: i) -> c_int;
    cmmd_send_and_receive_ => CMMD_send_and_receive(
        source: i, source_tag: i, inbuffer: p, inlen: i,
        destination: i, dest_tag: i, outbuffer: p, outlen: i
    ) -> c_int;
    cmmd_send_and_receive_v_ => CMMD_send_and_receive_v(
        source: i, source_tag: i, inbuffer: p, in_elem_len: i, in_stride: i, in_elem_count: i,
        destination: i, dest_tag: i, outbuffer: p, out_elem_len: i, out_stride: i, out_elem_count: i
    ) -> c_int;
    cmmd_swap_ => CMMD_swap(processor: i, inbuffer: p, inlen: i, outbuffer: p, outlen: i) -> c_int;
    cmmd_swap_v_ => CMMD_swap_v(
        processor: i, inbuffer: p, in_elem_len: i, in_stride: i, in_elem_count: i,
        outbuffer: p, out_elem_len: i, out_stride: i, out_elem_cnt: i
    ) -> c_int;
    cmmd_send_short_ => CMMD_send_short(destination: i, tag: i, buffer: p, len: i);
    cmmd_wait_for_send_ => CMMD_wait_for_send(destination: i);
    cmmd_bc_from_host_ => CMMD_bc_from_host(buffer: p, len: i);
    cmmd_receive_bc_from_host_ => CMMD_receive_bc_from_host(buffer: p, len: i);
    cmmd_distrib_to_nodes_ => CMMD_distrib_to_nodes(buffer: p, elem_length: i);
    cmmd_receive_element_from_host_ => CMMD_receive_element_from_host(buffer: p, length: i);
    cmmd_sync_host_with_nodes_ => CMMD_sync_host_with_nodes();
    cmmd_sync_with_host_ => CMMD_sync_with_host();
    cmmd_sync_with_nodes_ => CMMD_sync_with_nodes();
    cmmd_set_global_or_ => CMMD_set_global_or(value: i);
    cmmd_get_global_or_ => CMMD_get_global_or() -> c_int;
    cmmd_reduce_int_ => CMMD_reduce_int(value: i, combiner: i) -> c_int;
    cmmd_reduce_uint_ => CMMD_reduce_uint(value: u, combiner: i) -> c_uint;
    cmmd_reduce_float_ => CMMD_reduce_float(value: f, combiner: i) -> f64;
    cmmd_reduce_double_ => CMMD_reduce_double(value: d, combiner: i) -> f64;
    cmmd_reduce_from_nodes_int_ => CMMD_reduce_from_nodes_int(value: i, combiner: i) -> c_int;
    cmmd_reduce_from_nodes_uint_ => CMMD_reduce_from_nodes_uint(value: u, combiner: i) -> c_uint;
    cmmd_reduce_from_nodes_float_ => CMMD_reduce_from_nodes_float(value: f, combiner: i) -> f64;
    cmmd_reduce_from_nodes_double_ => CMMD_reduce_from_nodes_double(value: d, combiner: i) -> f64;
    cmmd_reduce_to_host_int_ => CMMD_reduce_to_host_int(value: i, combiner: i) -> c_int;
    cmmd_reduce_to_host_uint_ => CMMD_reduce_to_host_uint(value: u, combiner: i) -> c_uint;
    cmmd_reduce_to_host_float_ => CMMD_reduce_to_host_float(value: f, combiner: i) -> f64;
    cmmd_reduce_to_host_double_ => CMMD_reduce_to_host_double(value: d, combiner: i) -> f64;
    cmmd_scan_int_ => CMMD_scan_int(value: i, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> c_int;
    cmmd_scan_uint_ => CMMD_scan_uint(value: u, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> c_uint;
    cmmd_scan_float_ => CMMD_scan_float(value: f, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> f64;
    cmmd_scan_double_ => CMMD_scan_double(value: d, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> f64;
    cmmd_concat_with_nodes_ => CMMD_concat_with_nodes(element: p, buffer: p, elem_length: i);
    cmmd_gather_from_nodes_ => CMMD_gather_from_nodes(buffer: p, elem_length: i);
    cmmd_concat_elements_to_host_ => CMMD_concat_elements_to_host(element: p, elem_length: i);
}
