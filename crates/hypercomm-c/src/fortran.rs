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

/// Fortran SYSLOG(PID, MESSAGE): the message (its trailing blanks cut) on
/// standard error, where the utilities' own errors go (seed 000, section
/// 8). Fortran only: a C `syslog` would take the place of the C library's.
///
/// # Safety
/// `message` points to `len` characters.
#[no_mangle]
pub unsafe extern "C" fn syslog_(pid: *mut c_int, message: *const c_char, len: usize) {
    let _ = pid;
    let text = if message.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller's contract (gfortran passes the length).
        unsafe { std::slice::from_raw_parts(message.cast::<u8>(), len) }
    };
    let text = String::from_utf8_lossy(text);
    eprintln!("{}", text.trim_end_matches(' '));
}

/// The Fortran 77 type behind an argument kind: `i` INTEGER (and the
/// CMMD enumerations), `u` INTEGER read as unsigned, `f` REAL, `d` DOUBLE
/// PRECISION, all by reference; `p` a buffer and `o` an INTEGER output or
/// array, passed through.
macro_rules! fty {
    (i) => { *mut c_int };
    (u) => { *mut c_uint };
    (f) => { *mut f32 };
    (d) => { *mut f64 };
    (p) => { *mut c_void };
    (o) => { *mut c_int };
}

/// The value the C routine takes for an argument of kind `k`.
macro_rules! fval {
    (p, $a:ident) => {
        $a
    };
    (o, $a:ident) => {
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

/// Fortran 77 forms `$f` of the C routines `$m::$c`: kinds as in
/// [`fty!`].
macro_rules! fortran_forms {
    ($($f:ident => $m:ident::$c:ident ( $($a:ident : $k:ident),* ) $(-> $r:ty)?;)*) => {$(
        #[doc = concat!(
            "Fortran 77 form of [`crate::", stringify!($m), "::", stringify!($c),
            "`]: the same name, in lower case, and arguments, by reference."
        )]
        ///
        /// # Safety
        /// As the C routine; every scalar argument points to a valid value
        /// of its Fortran type.
        #[no_mangle]
        #[allow(clippy::too_many_arguments, unused_unsafe)]
        pub unsafe extern "C" fn $f($($a: fty!($k)),*) $(-> $r)? {
            // SAFETY: the caller's contract.
            unsafe { crate::$m::$c($(fval!($k, $a)),*) }
        }
    )*};
}

fortran_forms! {
    cmmd_enable_ => cmmd::CMMD_enable();
    cmmd_is_enabled_ => cmmd::CMMD_is_enabled() -> c_int;
    cmmd_disable_ => cmmd::CMMD_disable();
    cmmd_suspend_ => cmmd::CMMD_suspend();
    cmmd_is_suspended_ => cmmd::CMMD_is_suspended() -> c_int;
    cmmd_resume_ => cmmd::CMMD_resume();
    cmmd_enable_short_messages_ => cmmd::CMMD_enable_short_messages();
    cmmd_disable_short_messages_ => cmmd::CMMD_disable_short_messages();
    cmmd_self_address_ => cmmd::CMMD_self_address() -> c_int;
    cmmd_host_node_ => cmmd::CMMD_host_node() -> c_int;
    cmmd_partition_size_ => cmmd::CMMD_partition_size() -> c_int;
    cmmd_msg_pending_ => cmmd::CMMD_msg_pending(node: i, tag: i) -> c_int;
    cmmd_bytes_received_ => cmmd::CMMD_bytes_received() -> c_int;
    cmmd_bytes_sent_ => cmmd::CMMD_bytes_sent() -> c_int;
    cmmd_msg_sender_ => cmmd::CMMD_msg_sender() -> c_int;
    cmmd_msg_tag_ => cmmd::CMMD_msg_tag() -> c_int;
    cmmd_send_ => cmmd::CMMD_send(destination: i, tag: i, buffer: p, len: i) -> c_int;
    cmmd_send_v_ => cmmd::CMMD_send_v(destination: i, tag: i, buffer: p, elem_len: i, stride: i, elem_cnt: i) -> c_int;
    cmmd_receive_ => cmmd::CMMD_receive(source: i, tag: i, buffer: p, len: i) -> c_int;
    cmmd_receive_v_ => cmmd::CMMD_receive_v(source: i, tag: i, buffer: p, elem_len: i, stride: i, elem_cnt: i) -> c_int;
    cmmd_send_and_receive_ => cmmd::CMMD_send_and_receive(
        source: i, source_tag: i, inbuffer: p, inlen: i,
        destination: i, dest_tag: i, outbuffer: p, outlen: i
    ) -> c_int;
    cmmd_send_and_receive_v_ => cmmd::CMMD_send_and_receive_v(
        source: i, source_tag: i, inbuffer: p, in_elem_len: i, in_stride: i, in_elem_count: i,
        destination: i, dest_tag: i, outbuffer: p, out_elem_len: i, out_stride: i, out_elem_count: i
    ) -> c_int;
    cmmd_swap_ => cmmd::CMMD_swap(processor: i, inbuffer: p, inlen: i, outbuffer: p, outlen: i) -> c_int;
    cmmd_swap_v_ => cmmd::CMMD_swap_v(
        processor: i, inbuffer: p, in_elem_len: i, in_stride: i, in_elem_count: i,
        outbuffer: p, out_elem_len: i, out_stride: i, out_elem_cnt: i
    ) -> c_int;
    cmmd_send_short_ => cmmd::CMMD_send_short(destination: i, tag: i, buffer: p, len: i);
    cmmd_wait_for_send_ => cmmd::CMMD_wait_for_send(destination: i);
    cmmd_bc_from_host_ => cmmd::CMMD_bc_from_host(buffer: p, len: i);
    cmmd_receive_bc_from_host_ => cmmd::CMMD_receive_bc_from_host(buffer: p, len: i);
    cmmd_distrib_to_nodes_ => cmmd::CMMD_distrib_to_nodes(buffer: p, elem_length: i);
    cmmd_receive_element_from_host_ => cmmd::CMMD_receive_element_from_host(buffer: p, length: i);
    cmmd_sync_host_with_nodes_ => cmmd::CMMD_sync_host_with_nodes();
    cmmd_sync_with_host_ => cmmd::CMMD_sync_with_host();
    cmmd_sync_with_nodes_ => cmmd::CMMD_sync_with_nodes();
    cmmd_set_global_or_ => cmmd::CMMD_set_global_or(value: i);
    cmmd_get_global_or_ => cmmd::CMMD_get_global_or() -> c_int;
    cmmd_reduce_int_ => cmmd::CMMD_reduce_int(value: i, combiner: i) -> c_int;
    cmmd_reduce_uint_ => cmmd::CMMD_reduce_uint(value: u, combiner: i) -> c_uint;
    cmmd_reduce_float_ => cmmd::CMMD_reduce_float(value: f, combiner: i) -> f64;
    cmmd_reduce_double_ => cmmd::CMMD_reduce_double(value: d, combiner: i) -> f64;
    cmmd_reduce_from_nodes_int_ => cmmd::CMMD_reduce_from_nodes_int(value: i, combiner: i) -> c_int;
    cmmd_reduce_from_nodes_uint_ => cmmd::CMMD_reduce_from_nodes_uint(value: u, combiner: i) -> c_uint;
    cmmd_reduce_from_nodes_float_ => cmmd::CMMD_reduce_from_nodes_float(value: f, combiner: i) -> f64;
    cmmd_reduce_from_nodes_double_ => cmmd::CMMD_reduce_from_nodes_double(value: d, combiner: i) -> f64;
    cmmd_reduce_to_host_int_ => cmmd::CMMD_reduce_to_host_int(value: i, combiner: i) -> c_int;
    cmmd_reduce_to_host_uint_ => cmmd::CMMD_reduce_to_host_uint(value: u, combiner: i) -> c_uint;
    cmmd_reduce_to_host_float_ => cmmd::CMMD_reduce_to_host_float(value: f, combiner: i) -> f64;
    cmmd_reduce_to_host_double_ => cmmd::CMMD_reduce_to_host_double(value: d, combiner: i) -> f64;
    cmmd_scan_int_ => cmmd::CMMD_scan_int(value: i, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> c_int;
    cmmd_scan_uint_ => cmmd::CMMD_scan_uint(value: u, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> c_uint;
    cmmd_scan_float_ => cmmd::CMMD_scan_float(value: f, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> f64;
    cmmd_scan_double_ => cmmd::CMMD_scan_double(value: d, combiner: i, direction: i, smode: i, sbit: i, inclusion: i) -> f64;
    cmmd_concat_with_nodes_ => cmmd::CMMD_concat_with_nodes(element: p, buffer: p, elem_length: i);
    cmmd_gather_from_nodes_ => cmmd::CMMD_gather_from_nodes(buffer: p, elem_length: i);
    cmmd_concat_elements_to_host_ => cmmd::CMMD_concat_elements_to_host(element: p, elem_length: i);
}

fortran_forms! {
    gsendw_ => ipsc::gsendw(ci: i, r#type: i, buf: p, len: i, dim: i);
    grecvw_ => ipsc::grecvw(ci: i, r#type: i, buf: p, len: i, cnt: o, dim: i);
    gcat_ => ipsc::gcat(ci: i, r#type: i, buf: p, buflen: i, msglen: i, cnt: o, root: i, dim: i);
    mesh_ => ipsc::mesh(me: i, dim: i, lindim: o, perbc: o, coords: o, pred: o, succ: o, work: o);
    sendw_ => ipsc::sendw(ci: i, r#type: i, buf: p, len: i, node: i, pid: i);
    sendmsg_ => ipsc::sendmsg(ci: i, r#type: i, buf: p, len: i, node: i, pid: i);
    lsendw_ => ipsc::lsendw(ci: i, r#type: i, buf: p, len4: i, node: i, pid: i);
    lsendmsg_ => ipsc::lsendmsg(ci: i, r#type: i, buf: p, len4: i, node: i, pid: i);
    recvw_ => ipsc::recvw(ci: i, r#type: i, buf: p, len: i, cnt: o, node: o, pid: o);
    lrecvw_ => ipsc::lrecvw(ci: i, r#type: i, buf: p, len4: i, cnt4: o, node: o, pid: o);
    spgsnw_ => ipsc::spgsnw(ci: i, r#type: i, buf: p, len: i, list: o, number: i);
    spgrcw_ => ipsc::spgrcw(ci: i, r#type: i, buf: p, len: i, cnt: o);
    split_ => ipsc::split(number: i, list: o, first: o);
    copen_ => ipsc::copen(pid: i) -> c_int;
    mynode_ => ipsc::mynode() -> c_int;
    numnodes_ => ipsc::numnodes() -> c_int;
    mypid_ => ipsc::mypid() -> c_int;
    cubedim_ => ipsc::cubedim() -> c_int;
    gray_ => ipsc::gray(i: i) -> c_int;
    ginv_ => ipsc::ginv(i: i) -> c_int;
    xor_ => ipsc::ipsc_xor(i: i, j: i) -> c_int;
    between_ => ipsc::between(i: i, j: i, k: i) -> c_int;
}
