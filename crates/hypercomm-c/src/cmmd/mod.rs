//! CMMD (seed 004): the node and host routines of the CM-5 message-passing
//! library (`cmmd.h`), over hypercomm.
//!
//! There is no open call: the first CMMD routine a process calls joins the
//! job (`hypercomm run -n N [--host HOST --] NODE`). Sends are CMMD's
//! rendezvous (synchronous) sends, so both sides learn the negotiated
//! length. A combiner not allowed for a type, or any other misuse, is
//! CMMD's "fatal error": a message naming the routine and the node, and
//! the job stops.
//!
//! This file: joining, queries and point-to-point; `collective.rs`:
//! broadcasts, synchronisation, reductions, scans and concatenation.

use crate::reduce::{self, OpCode, To, Ty};
use crate::state::{self, bytes, bytes_mut, err, guard, with, CResult, MsgInfo, HOST};
use hypercomm::collective::{Direction, Inclusion, Scan, Segmentation};
use hypercomm::{Comm, Partial, Rank, Source, Tag};
use std::ffi::{c_int, c_uint, c_void};

const LIB: &str = "CMMD";

/// `ANY_NODE` and `ANY_TAG` of `cmmd.h`.
const ANY: c_int = -1;

fn world() -> CResult<Comm> {
    with(|st| state::world(st, true))
}

fn node(n: c_int) -> CResult<Rank> {
    match n {
        HOST => Ok(Rank::Host),
        n if n >= 0 => Ok(Rank::Node(n as usize)),
        n => Err(format!("{n} is not a node")),
    }
}

fn src(n: c_int) -> CResult<Source> {
    if n == ANY {
        Ok(Source::Any)
    } else {
        node(n).map(Source::Rank)
    }
}

fn tag(t: c_int) -> CResult<Tag> {
    if t == ANY {
        Ok(Tag::Any)
    } else {
        u32::try_from(t)
            .map(Tag::Is)
            .map_err(|_| format!("tag {t} is negative"))
    }
}

fn send_tag(t: c_int) -> CResult<u32> {
    u32::try_from(t).map_err(|_| format!("tag {t} is negative"))
}

fn received(p: &Partial, sent: Option<i32>) {
    with(|st| {
        st.cmmd.bytes_received = p.received as i32;
        st.cmmd.sender = p.status.source.to_picl();
        st.cmmd.tag = p.status.tag as i32;
        if let Some(s) = sent {
            st.cmmd.bytes_sent = s;
        }
    })
}

fn info() -> MsgInfo {
    with(|st| st.cmmd)
}

// ------------------------------------------------------ initialisation

/// CMMD_enable: join the job (host).
#[no_mangle]
pub extern "C" fn CMMD_enable() {
    guard(LIB, "CMMD_enable", || {
        world()?;
        with(|st| st.enabled = true);
        Ok(())
    })
}

/// CMMD_is_enabled: TRUE when enabled and not suspended.
#[no_mangle]
pub extern "C" fn CMMD_is_enabled() -> c_int {
    with(|st| (st.enabled && !st.suspended) as c_int)
}

/// CMMD_disable: leave the job (host; every node leaves when its program
/// ends).
#[no_mangle]
pub extern "C" fn CMMD_disable() {
    guard(LIB, "CMMD_disable", || {
        let w = with(|st| -> CResult<Comm> {
            if !st.enabled || st.suspended {
                return Err("CMMD is not enabled (or is suspended)".into());
            }
            st.enabled = false;
            st.short = None;
            st.aux = None;
            st.closed = true;
            st.world.take().ok_or_else(|| "not enabled".to_string())
        })?;
        hypercomm::finalize(w).map_err(err)
    })
}

/// CMMD_suspend: suspend message passing (a state flag here: there is no
/// data-parallel mode to return to).
#[no_mangle]
pub extern "C" fn CMMD_suspend() {
    guard(LIB, "CMMD_suspend", || {
        with(|st| {
            if !st.enabled || st.suspended {
                return Err("CMMD is not enabled, or already suspended".into());
            }
            st.suspended = true;
            Ok(())
        })
    })
}

/// CMMD_is_suspended: TRUE when suspended.
#[no_mangle]
pub extern "C" fn CMMD_is_suspended() -> c_int {
    with(|st| st.suspended as c_int)
}

/// CMMD_resume: resume after CMMD_suspend.
#[no_mangle]
pub extern "C" fn CMMD_resume() {
    guard(LIB, "CMMD_resume", || {
        with(|st| {
            if !st.suspended {
                return Err("CMMD is not suspended".into());
            }
            st.suspended = false;
            Ok(())
        })
    })
}

/// CMMD_enable_short_messages: allow CMMD_send_short (host and nodes).
#[no_mangle]
pub extern "C" fn CMMD_enable_short_messages() {
    guard(LIB, "CMMD_enable_short_messages", || {
        let w = world()?;
        with(|st| {
            if st.short.is_some() {
                return Err("short messages are already enabled".into());
            }
            st.short = Some(w.short_sends());
            Ok(())
        })
    })
}

/// CMMD_disable_short_messages: wait until this processor's short messages
/// have been received, then disallow them.
#[no_mangle]
pub extern "C" fn CMMD_disable_short_messages() {
    guard(LIB, "CMMD_disable_short_messages", || {
        let s = with(|st| st.short.take());
        let mut s = s.ok_or("short messages are not enabled")?;
        s.wait_all().map_err(err)
    })
}

// ------------------------------------------------------------ queries

/// CMMD_self_address: this node's number (the host's on the host).
#[no_mangle]
pub extern "C" fn CMMD_self_address() -> c_int {
    guard(LIB, "CMMD_self_address", || Ok(world()?.me().to_picl()))
}

/// CMMD_host_node: the host's number (−32768, outside the partition).
#[no_mangle]
pub extern "C" fn CMMD_host_node() -> c_int {
    HOST
}

/// CMMD_partition_size: the number of nodes.
#[no_mangle]
pub extern "C" fn CMMD_partition_size() -> c_int {
    guard(LIB, "CMMD_partition_size", || Ok(world()?.size() as c_int))
}

/// CMMD_bytes_received: bytes of the last message received.
#[no_mangle]
pub extern "C" fn CMMD_bytes_received() -> c_int {
    info().bytes_received
}

/// CMMD_bytes_sent: bytes the last send actually sent.
#[no_mangle]
pub extern "C" fn CMMD_bytes_sent() -> c_int {
    info().bytes_sent
}

/// CMMD_msg_sender: the sender of the last message received, or of the
/// pending message after a TRUE CMMD_msg_pending.
#[no_mangle]
pub extern "C" fn CMMD_msg_sender() -> c_int {
    info().sender
}

/// CMMD_msg_tag: the tag of the last message received, or of the pending
/// one.
#[no_mangle]
pub extern "C" fn CMMD_msg_tag() -> c_int {
    info().tag
}

/// CMMD_msg_pending: TRUE when a message from `node` (ANY_NODE) with `tag`
/// (ANY_TAG) is waiting.
#[no_mangle]
pub extern "C" fn CMMD_msg_pending(node: c_int, tag: c_int) -> c_int {
    guard(LIB, "CMMD_msg_pending", || {
        let w = world()?;
        match w.iprobe(src(node)?, self::tag(tag)?).map_err(err)? {
            Some(s) => {
                with(|st| {
                    st.cmmd.sender = s.source.to_picl();
                    st.cmmd.tag = s.tag as i32;
                });
                Ok(1)
            }
            None => Ok(0),
        }
    })
}

// ------------------------------------------------------ point to point

/// CMMD_send: rendezvous send of `len` bytes; 0 if all were taken, 1 if
/// the receiver took fewer (CMMD_bytes_sent says how many).
///
/// # Safety
/// `buffer` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_send(
    destination: c_int,
    tag: c_int,
    buffer: *const c_void,
    len: c_int,
) -> c_int {
    guard(LIB, "CMMD_send", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buffer, len as i64) }?;
        let w = world()?;
        let n = w
            .ssend(b, node(destination)?, send_tag(tag)?)
            .map_err(err)?;
        with(|st| st.cmmd.bytes_sent = n as i32);
        Ok((n < b.len()) as c_int)
    })
}

/// CMMD_send_v: rendezvous send of `elem_cnt` elements of `elem_len` bytes
/// taken every `stride` bytes; 0 if all were taken, else 1.
///
/// # Safety
/// `buffer` spans the elements.
#[no_mangle]
pub unsafe extern "C" fn CMMD_send_v(
    destination: c_int,
    tag: c_int,
    buffer: *const c_void,
    elem_len: c_int,
    stride: c_int,
    elem_cnt: c_int,
) -> c_int {
    guard(LIB, "CMMD_send_v", || {
        let (e, s, c) = geometry(elem_len, stride, elem_cnt)?;
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buffer, extent(e, s, c)) }?;
        let packed = hypercomm::p2p::pack_strided(b, e, s, c).map_err(err)?;
        let w = world()?;
        let n = w
            .ssend(&packed, node(destination)?, send_tag(tag)?)
            .map_err(err)?;
        with(|st| st.cmmd.bytes_sent = n as i32);
        Ok((n < packed.len()) as c_int)
    })
}

fn geometry(e: c_int, s: c_int, c: c_int) -> CResult<(usize, usize, usize)> {
    if e < 0 || s < 0 || c < 0 {
        return Err(format!(
            "element length {e}, stride {s}, count {c}: none may be negative"
        ));
    }
    Ok((e as usize, s as usize, c as usize))
}

fn extent(e: usize, s: usize, c: usize) -> i64 {
    if c == 0 || e == 0 {
        0
    } else {
        ((c - 1) * s + e) as i64
    }
}

/// CMMD_receive: receive from `source` (ANY_NODE) with `tag` (ANY_TAG)
/// into `len` bytes, taking at most `len`; 0 if exactly `len` bytes came,
/// else 1.
///
/// # Safety
/// `buffer` is valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_receive(
    source: c_int,
    tag: c_int,
    buffer: *mut c_void,
    len: c_int,
) -> c_int {
    guard(LIB, "CMMD_receive", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, len as i64) }?;
        let w = world()?;
        let p = w
            .recv_partial(b, src(source)?, self::tag(tag)?)
            .map_err(err)?;
        received(&p, None);
        Ok((p.received != len as usize) as c_int)
    })
}

/// CMMD_receive_v: receive into `elem_cnt` elements of `elem_len` bytes
/// every `stride` bytes (the smaller of the two lengths is transferred);
/// 0 if the elements were filled exactly, else 1.
///
/// # Safety
/// `buffer` spans the elements.
#[no_mangle]
pub unsafe extern "C" fn CMMD_receive_v(
    source: c_int,
    tag: c_int,
    buffer: *mut c_void,
    elem_len: c_int,
    stride: c_int,
    elem_cnt: c_int,
) -> c_int {
    guard(LIB, "CMMD_receive_v", || {
        let (e, s, c) = geometry(elem_len, stride, elem_cnt)?;
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, extent(e, s, c)) }?;
        let w = world()?;
        let p = w
            .recv_strided_partial(b, e, s, c, src(source)?, self::tag(tag)?)
            .map_err(err)?;
        received(&p, None);
        Ok((p.received != e * c) as c_int)
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn exchange(
    routine: &str,
    source: c_int,
    source_tag: c_int,
    inbuffer: *mut c_void,
    ing: (c_int, c_int, c_int),
    destination: c_int,
    dest_tag: c_int,
    outbuffer: *const c_void,
    outg: (c_int, c_int, c_int),
) -> c_int {
    guard(LIB, routine, || {
        let outg = geometry(outg.0, outg.1, outg.2)?;
        let ing = geometry(ing.0, ing.1, ing.2)?;
        // The buffers may overlap: the outgoing bytes are copied first.
        // SAFETY: the caller's contract; the shared slice ends here.
        let out = unsafe { bytes(outbuffer, extent(outg.0, outg.1, outg.2)) }?.to_vec();
        // SAFETY: the caller's contract.
        let inb = unsafe { bytes_mut(inbuffer, extent(ing.0, ing.1, ing.2)) }?;
        let w = world()?;
        // The send is synchronous: how many bytes the destination took
        // decides the result as much as how many arrived.
        let (p, sent) = w
            .send_recv_strided_sync(
                &out,
                outg,
                node(destination)?,
                send_tag(dest_tag)?,
                inb,
                ing,
                src(source)?,
                tag(source_tag)?,
            )
            .map_err(err)?;
        received(&p, Some(sent as i32));
        Ok((p.received == ing.0 * ing.2 && sent == outg.0 * outg.2) as c_int)
    })
}

/// CMMD_send_and_receive: send `outlen` bytes to `destination` while
/// receiving at most `inlen` from `source`; TRUE if both lengths were met.
///
/// # Safety
/// The buffers are valid for their lengths (they may overlap).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn CMMD_send_and_receive(
    source: c_int,
    source_tag: c_int,
    inbuffer: *mut c_void,
    inlen: c_int,
    destination: c_int,
    dest_tag: c_int,
    outbuffer: *const c_void,
    outlen: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        exchange(
            "CMMD_send_and_receive",
            source,
            source_tag,
            inbuffer,
            (inlen, inlen, 1),
            destination,
            dest_tag,
            outbuffer,
            (outlen, outlen, 1),
        )
    }
}

/// CMMD_send_and_receive_v: the vector form (geometries independent).
///
/// # Safety
/// The buffers span their elements.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn CMMD_send_and_receive_v(
    source: c_int,
    source_tag: c_int,
    inbuffer: *mut c_void,
    in_elem_len: c_int,
    in_stride: c_int,
    in_elem_count: c_int,
    destination: c_int,
    dest_tag: c_int,
    outbuffer: *const c_void,
    out_elem_len: c_int,
    out_stride: c_int,
    out_elem_count: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        exchange(
            "CMMD_send_and_receive_v",
            source,
            source_tag,
            inbuffer,
            (in_elem_len, in_stride, in_elem_count),
            destination,
            dest_tag,
            outbuffer,
            (out_elem_len, out_stride, out_elem_count),
        )
    }
}

/// CMMD_swap: send_and_receive with `processor` as source and destination
/// (tag DEFAULT_MSG_TAG both ways).
///
/// # Safety
/// The buffers are valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn CMMD_swap(
    processor: c_int,
    inbuffer: *mut c_void,
    inlen: c_int,
    outbuffer: *const c_void,
    outlen: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        exchange(
            "CMMD_swap",
            processor,
            0,
            inbuffer,
            (inlen, inlen, 1),
            processor,
            0,
            outbuffer,
            (outlen, outlen, 1),
        )
    }
}

/// CMMD_swap_v: the vector form of CMMD_swap.
///
/// # Safety
/// The buffers span their elements.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn CMMD_swap_v(
    processor: c_int,
    inbuffer: *mut c_void,
    in_elem_len: c_int,
    in_stride: c_int,
    in_elem_count: c_int,
    outbuffer: *const c_void,
    out_elem_len: c_int,
    out_stride: c_int,
    out_elem_cnt: c_int,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        exchange(
            "CMMD_swap_v",
            processor,
            0,
            inbuffer,
            (in_elem_len, in_stride, in_elem_count),
            processor,
            0,
            outbuffer,
            (out_elem_len, out_stride, out_elem_cnt),
        )
    }
}

/// CMMD_send_short: send at most 16 bytes without waiting for the
/// receiver, unless the previous short message to `destination` is still
/// outstanding.
///
/// # Safety
/// `buffer` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_send_short(
    destination: c_int,
    tag: c_int,
    buffer: *const c_void,
    len: c_int,
) {
    guard(LIB, "CMMD_send_short", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buffer, len as i64) }?;
        let (d, t) = (node(destination)?, send_tag(tag)?);
        let mut s = with(|st| st.short.take()).ok_or("short messages are not enabled")?;
        let r = s.send(d, t, b).map_err(err);
        with(|st| st.short = Some(s));
        r
    })
}

/// CMMD_wait_for_send: wait until the outstanding short message to
/// `destination` (to any, for ANY_NODE) has been received.
#[no_mangle]
pub extern "C" fn CMMD_wait_for_send(destination: c_int) {
    guard(LIB, "CMMD_wait_for_send", || {
        let d = src(destination)?;
        let mut s = with(|st| st.short.take()).ok_or("short messages are not enabled")?;
        let r = s.wait_for(d).map_err(err);
        with(|st| st.short = Some(s));
        r
    })
}

mod collective;
pub use collective::*;
