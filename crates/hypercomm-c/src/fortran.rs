//! Fortran 77 entry points (gfortran's convention: the name in lower case
//! with a trailing underscore, every argument by reference, the length of
//! a CHARACTER argument appended by value). Each calls the C entry point.
//!
//! The iPSC utilities as the seed documents them in Fortran, and the CMMD
//! routines of the manual's section 1.3 that take and return integers and
//! buffers (same names and argument order as in C).

use crate::state::get;
use std::ffi::{c_char, c_int, c_void};

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
        cmmd_partition_size_ => crate::cmmd::CMMD_partition_size() -> c_int;
        cmmd_self_address_ => crate::cmmd::CMMD_self_address() -> c_int;
        cmmd_host_node_ => crate::cmmd::CMMD_host_node() -> c_int;
        cmmd_bytes_received_ => crate::cmmd::CMMD_bytes_received() -> c_int;
        cmmd_bytes_sent_ => crate::cmmd::CMMD_bytes_sent() -> c_int;
        cmmd_msg_sender_ => crate::cmmd::CMMD_msg_sender() -> c_int;
        cmmd_msg_tag_ => crate::cmmd::CMMD_msg_tag() -> c_int;
        cmmd_msg_pending_ => crate::cmmd::CMMD_msg_pending(node, tag) -> c_int;
        cmmd_sync_with_nodes_ => crate::cmmd::CMMD_sync_with_nodes();
        cmmd_sync_with_host_ => crate::cmmd::CMMD_sync_with_host();
        cmmd_sync_host_with_nodes_ => crate::cmmd::CMMD_sync_host_with_nodes();
        cmmd_reduce_int_ => crate::cmmd::CMMD_reduce_int(value, combiner) -> c_int;
        cmmd_scan_int_ => crate::cmmd::CMMD_scan_int(value, combiner, direction, smode, sbit, inclusion) -> c_int;
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

/// Fortran CMMD_SEND(DESTINATION, TAG, BUFFER, LEN).
///
/// # Safety
/// As [`crate::cmmd::CMMD_send`].
#[no_mangle]
pub unsafe extern "C" fn cmmd_send_(
    d: *mut c_int,
    t: *mut c_int,
    b: *const c_void,
    l: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { crate::cmmd::CMMD_send(get(d), get(t), b, get(l)) }
}

/// Fortran CMMD_RECEIVE(SOURCE, TAG, BUFFER, LEN).
///
/// # Safety
/// As [`crate::cmmd::CMMD_receive`].
#[no_mangle]
pub unsafe extern "C" fn cmmd_receive_(
    s: *mut c_int,
    t: *mut c_int,
    b: *mut c_void,
    l: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { crate::cmmd::CMMD_receive(get(s), get(t), b, get(l)) }
}

/// Fortran CMMD_REDUCE_DOUBLE(VALUE, COMBINER).
///
/// # Safety
/// The arguments are valid.
#[no_mangle]
pub unsafe extern "C" fn cmmd_reduce_double_(v: *const f64, c: *mut c_int) -> f64 {
    // SAFETY: the caller's contract.
    unsafe { crate::cmmd::CMMD_reduce_double(*v, get(c)) }
}
