//! PICL (seed 003): the low-level primitives, the high-level routines and
//! the tracing routines, with PICL's argument conventions (`picl.h`).
//!
//! Node numbers are PICL's: nodes `0..P`, the host −32768; a message
//! `type` of −1 in a receive or probe accepts any type. Errors are PICL's:
//! a message naming the routine and the node, then the program stops
//! (the job is aborted and the launcher reports it).

use crate::reduce::{self, OpCode, To, Ty};
use crate::state::{
    self, bytes_mut, err, get, guard, put, send_on_its_way, string, with, CResult, HOST,
};
use hypercomm::collective::{RingOrder, Topology};
use hypercomm::trace::{self, Config, Output, Policy};
use hypercomm::{Comm, Rank, Source, Tag};
use std::ffi::{c_char, c_int, c_void};

const LIB: &str = "PICL";

fn rank(id: i32) -> CResult<Rank> {
    match id {
        HOST => Ok(Rank::Host),
        r if r >= 0 => Ok(Rank::Node(r as usize)),
        r => Err(format!(
            "{r} is neither a node number nor the host (-32768)"
        )),
    }
}

fn tag(t: i32) -> CResult<Tag> {
    match t {
        -1 => Ok(Tag::Any),
        t if t >= 0 => Ok(Tag::Is(t as u32)),
        t => Err(format!("message type {t} is negative")),
    }
}

fn send_tag(t: i32) -> CResult<u32> {
    u32::try_from(t).map_err(|_| format!("message type {t} is negative"))
}

/// The communicator of the high-level routines: the nodes in use (and
/// the host) after setarc0, all of them before.
fn high(st: &mut state::State) -> CResult<Comm> {
    let w = state::world(st, false)?;
    Ok(st.in_use.clone().unwrap_or(w))
}

fn topology(top: i32, ord: i32, dir: i32) -> CResult<Topology> {
    let o = RingOrder {
        gray: ord == 1,
        forward: dir != -1,
    };
    Ok(match top {
        1 => Topology::Hypercube,
        2 => Topology::Full,
        3 => Topology::Ring(o),
        4 => Topology::BiRing(o),
        t => {
            return Err(format!(
                "top {t} is not 1 (hypercube), 2 (full), 3 (ring) or 4 (bidirectional ring)"
            ))
        }
    })
}

fn arch_of(p: usize, t: Topology) -> [i32; 4] {
    let (top, o) = match t {
        Topology::Auto | Topology::Hypercube => (1, RingOrder::NATURAL),
        Topology::Full => (2, RingOrder::NATURAL),
        Topology::Ring(o) => (3, o),
        Topology::BiRing(o) => (4, o),
        // Not settable through setarc0 (PICL has no mesh); a communicator
        // given Kumar's mesh collectives from Rust reports it as 5.
        Topology::Mesh2D => (5, RingOrder::NATURAL),
    };
    [p as i32, top, o.gray as i32, if o.forward { 1 } else { -1 }]
}

// ------------------------------------------------------------ low level

/// open0: enable communication. On the host, `*numproc` > 0 is the number
/// of nodes wanted (under the launcher it must be the job's), ≤ 0 the
/// current allocation; a host started by hand waits for load0 to start
/// them. Outputs the number of nodes, this processor's id and the host's.
///
/// # Safety
/// The pointers are null or valid `int`s.
#[no_mangle]
pub unsafe extern "C" fn open0(numproc: *mut c_int, me: *mut c_int, host: *mut c_int) {
    // SAFETY: the caller's contract.
    let want = unsafe { get(numproc) };
    let (n, id) = guard(LIB, "open0", || {
        with(|st| {
            if st.world.is_some() || st.requested.is_some() {
                return Err("communication is already open".into());
            }
            if st.closed {
                return Err("communication was closed; it cannot be opened again".into());
            }
            if !hypercomm::launch::is_launched() {
                // A host started by hand: load0 starts the nodes.
                if want <= 0 {
                    return Err(format!(
                        "numproc is {want}: a host started by hand must ask for a positive number of nodes"
                    ));
                }
                st.requested = Some(want);
                return Ok((want, HOST));
            }
            let w = state::world(st, true)?;
            let n = w.size() as i32;
            if w.is_host() && want > 0 && want != n {
                return Err(format!(
                    "{want} node processors requested, but the job has {n} (hypercomm run -n {want})"
                ));
            }
            Ok((n, w.me().to_picl()))
        })
    });
    // SAFETY: the caller's contract.
    unsafe {
        put(numproc, n);
        put(me, id);
        put(host, HOST);
    }
}

/// load0: start the node program `file` on every node (`node` = −1). Under
/// the launcher the nodes are already running and this only checks the
/// call; a host started by hand spawns them (TCP on loopback).
///
/// # Safety
/// `file` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn load0(file: *const c_char, node: c_int) {
    // SAFETY: the caller's contract.
    let file = unsafe { string(file) };
    guard(LIB, "load0", || {
        with(|st| {
            if node != -1 {
                return Err(format!(
                    "loading node {node} alone is not supported: load every node with -1"
                ));
            }
            if let Some(w) = &st.world {
                return if w.is_host() {
                    Ok(())
                } else {
                    Err("load0 is a host routine".into())
                };
            }
            let n = st
                .requested
                .take()
                .ok_or("communication is not open (call open0 first)")?;
            // PICL names the node program's file: one in the current
            // directory is taken from there, not searched for on PATH.
            let file = if !file.contains('/') && std::path::Path::new(&file).is_file() {
                format!("./{file}")
            } else {
                file
            };
            let w = hypercomm::spawn(n as usize, &file, &[] as &[&str]).map_err(err)?;
            st.aux = Some(w.dup());
            st.world = Some(w);
            Ok(())
        })
    })
}

/// close0: end communication (the parameter `release` is ignored). Every
/// processor calls it; traced ranks hand their records to the host, which
/// writes traceenable's file.
#[no_mangle]
pub extern "C" fn close0(release: c_int) {
    let _ = release;
    guard(LIB, "close0", || {
        let (w, aux, file) = with(|st| -> CResult<_> {
            let w = state::world(st, false)?;
            let aux = st.aux.take().ok_or("communication is not open")?;
            st.world = None;
            st.in_use = None;
            st.closed = true;
            Ok((w, aux, st.trace.file.clone()))
        })?;
        crate::tracing::collect(&aux, file)?;
        drop(aux);
        hypercomm::finalize(w).map_err(err)
    })
}

/// who0: the number of nodes, this processor's id and the host's.
///
/// # Safety
/// The pointers are null or valid `int`s.
#[no_mangle]
pub unsafe extern "C" fn who0(numproc: *mut c_int, me: *mut c_int, host: *mut c_int) {
    let (n, id) = guard(LIB, "who0", || {
        with(|st| {
            if let Some(n) = st.requested {
                return Ok((n, HOST));
            }
            let w = state::world(st, false)?;
            Ok((w.size() as i32, w.me().to_picl()))
        })
    });
    // SAFETY: the caller's contract.
    unsafe {
        put(numproc, n);
        put(me, id);
        put(host, HOST);
    }
}

/// send0: send `bytes` bytes of `buf` with `type` to `dest` (a node, the
/// host −32768, or −1: every node but this one). Returns when `buf` may be
/// reused, without waiting for the receiver (the manual's "blocking and
/// asynchronous" send: a long message is copied).
///
/// # Safety
/// `buf` is valid for `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn send0(buf: *const c_void, bytes: c_int, r#type: c_int, dest: c_int) {
    guard(LIB, "send0", || {
        // SAFETY: the caller's contract.
        let data = unsafe { state::bytes(buf, bytes as i64) }?;
        let t = send_tag(r#type)?;
        // In the state's borrow (no clone of the communicator per message).
        with(|st| {
            let w = st.world.as_ref().ok_or_else(|| state::not_open(st))?;
            if dest == -1 {
                let me = w.me();
                for r in (0..w.size()).map(Rank::Node).filter(|&r| r != me) {
                    send_on_its_way(w, data, r, t).map_err(err)?;
                }
                return Ok(());
            }
            send_on_its_way(w, data, rank(dest)?, t).map_err(err)
        })
    })
}

/// recv0: receive a message of `type` (−1: any) from any processor into
/// `buf` of `bytes` bytes. A longer message is an error (it is kept, not
/// truncated).
///
/// # Safety
/// `buf` is valid for writes of `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn recv0(buf: *mut c_void, bytes: c_int, r#type: c_int) {
    guard(LIB, "recv0", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, bytes as i64) }?;
        let t = tag(r#type)?;
        with(|st| {
            let w = st.world.as_ref().ok_or_else(|| state::not_open(st))?;
            let s = w.recv_into(b, Source::Any, t).map_err(err)?;
            st.last = [s.len as i32, s.tag as i32, s.source.to_picl()];
            Ok(())
        })
    })
}

/// recvinfo0: length, type and source of the last message received or
/// successfully probed for.
///
/// # Safety
/// The pointers are null or valid `int`s.
#[no_mangle]
pub unsafe extern "C" fn recvinfo0(bytes: *mut c_int, r#type: *mut c_int, source: *mut c_int) {
    let l = guard(LIB, "recvinfo0", || {
        with(|st| state::world(st, false).map(|_| st.last))
    });
    // SAFETY: the caller's contract.
    unsafe {
        put(bytes, l[0]);
        put(r#type, l[1]);
        put(source, l[2]);
    }
}

/// probe0: 1 if a message of `type` (−1: any) has arrived, else 0.
#[no_mangle]
pub extern "C" fn probe0(r#type: c_int) -> c_int {
    guard(LIB, "probe0", || {
        let w = with(|st| state::world(st, false))?;
        match w.iprobe(Source::Any, tag(r#type)?).map_err(err)? {
            Some(s) => {
                with(|st| st.last = [s.len as i32, s.tag as i32, s.source.to_picl()]);
                Ok(1)
            }
            None => Ok(0),
        }
    })
}

/// message0: print the first 80 characters of `message` on the standard
/// output (which the launcher shows, prefixed with the rank).
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn message0(message: *const c_char) {
    // SAFETY: the caller's contract.
    let m = unsafe { string(message) };
    guard(LIB, "message0", || {
        let w = with(|st| state::world(st, !st.closed && st.requested.is_some()).ok());
        match w {
            Some(w) => w.message(&m).map_err(err),
            None => {
                println!(
                    "{}",
                    m.chars().take(hypercomm::MESSAGE_CHARS).collect::<String>()
                );
                Ok(())
            }
        }
    })
}

/// sync0: synchronise all nodes (node only).
#[no_mangle]
pub extern "C" fn sync0() {
    guard(LIB, "sync0", || {
        let w = with(|st| state::world(st, false))?;
        if w.is_host() {
            return Err("sync0 is a node routine".into());
        }
        w.sync().map_err(err)
    })
}

/// check0: parameter checking on (1) or off (anything else): the
/// collectives' check mode.
#[no_mangle]
pub extern "C" fn check0(checking: c_int) {
    guard(LIB, "check0", || {
        let w = with(|st| state::world(st, false))?;
        w.set_check(checking == 1);
        Ok(())
    })
}

/// clock0: the clock in seconds (valid before open0 and after close0).
#[no_mangle]
pub extern "C" fn clock0() -> f64 {
    hypercomm::clock()
}

// ----------------------------------------------------------- high level

/// setarc0: on the host, declare the nodes in use and their topology
/// (inputs; `*nprocs` = 0 releases the nodes); on a node, wait for the
/// declaration that includes it (outputs).
///
/// # Safety
/// The pointers are valid `int`s.
#[no_mangle]
pub unsafe extern "C" fn setarc0(
    nprocs: *mut c_int,
    top: *mut c_int,
    ord: *mut c_int,
    dir: *mut c_int,
) {
    // SAFETY: the caller's contract.
    let input = unsafe { [get(nprocs), get(top), get(ord), get(dir)] };
    let a = guard(LIB, "setarc0", || {
        let w = with(|st| state::world(st, false))?;
        if w.is_host() {
            if input[0] < 0 {
                return Err(format!("nprocs is {}", input[0]));
            }
            let t = topology(input[1], input[2], input[3])?;
            let sub = w.announce_arch(input[0] as usize, t).map_err(err)?;
            with(|st| {
                st.in_use = sub;
                st.arch = input;
            });
            return Ok(input);
        }
        let (p, t, sub) = w.await_arch().map_err(err)?;
        let a = arch_of(p, t);
        with(|st| {
            st.in_use = sub;
            st.arch = a;
        });
        Ok(a)
    });
    // SAFETY: the caller's contract.
    unsafe {
        put(nprocs, a[0]);
        put(top, a[1]);
        put(ord, a[2]);
        put(dir, a[3]);
    }
}

/// getarc0: the parameters of the last setarc0.
///
/// # Safety
/// The pointers are null or valid `int`s.
#[no_mangle]
pub unsafe extern "C" fn getarc0(
    nprocs: *mut c_int,
    top: *mut c_int,
    ord: *mut c_int,
    dir: *mut c_int,
) {
    let a = with(|st| st.arch);
    // SAFETY: the caller's contract.
    unsafe {
        put(nprocs, a[0]);
        put(top, a[1]);
        put(ord, a[2]);
        put(dir, a[3]);
    }
}

/// barrier0: synchronise the nodes in use (node only).
#[no_mangle]
pub extern "C" fn barrier0() {
    guard(LIB, "barrier0", || {
        let c = with(high)?;
        if c.is_host() {
            return Err("barrier0 is a node routine".into());
        }
        c.barrier().map_err(err)
    })
}

unsafe fn bcast_impl(
    routine: &str,
    buf: *mut c_void,
    bytes: c_int,
    r#type: c_int,
    root: c_int,
    receive: bool,
) {
    guard(LIB, routine, || {
        let c = with(high)?;
        let t = send_tag(r#type)?;
        let root = rank(root)?;
        // SAFETY: the caller's contract (valid for `bytes`).
        let b = unsafe { bytes_mut(buf, bytes as i64) }?;
        if c.is_host() && root != Rank::Host {
            return Err("the host takes part only in a broadcast from the host".into());
        }
        if receive {
            // bcast0: a collective of the nodes in use (and the host when
            // it is the root), on the library's own context, so that no
            // recv0(-1) can take its messages (the manual's warning) and
            // check mode compares the roots and lengths.
            return c.bcast_varcount(b, root).map(|_| ()).map_err(err);
        }
        // bcast1: the node received the data with recv0 (on the world's
        // context, with this type), so the data goes on along the tree of
        // the nodes in use, on that same context.
        let children = c.bcast_children(root).map_err(err)?;
        with(|st| {
            let w = st.world.as_ref().ok_or_else(|| state::not_open(st))?;
            children
                .into_iter()
                .try_for_each(|ch| send_on_its_way(w, b, ch, t).map_err(err))
        })
    })
}

/// bcast0: broadcast `bytes` bytes from `root` (a node in use or the host)
/// to every node in use, with messages of `type`; a receiver's buffer may
/// be longer than the message.
///
/// # Safety
/// `buf` is valid for `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn bcast0(buf: *mut c_void, bytes: c_int, r#type: c_int, root: c_int) {
    // SAFETY: forwarded.
    unsafe { bcast_impl("bcast0", buf, bytes, r#type, root, true) }
}

/// bcast1: the sending half of a broadcast: forward `bytes` bytes of `buf`
/// (received with recv0 of `type`, or the root's data) to this processor's
/// children in the broadcast tree.
///
/// # Safety
/// `buf` is valid for `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn bcast1(buf: *mut c_void, bytes: c_int, r#type: c_int, root: c_int) {
    // SAFETY: forwarded.
    unsafe { bcast_impl("bcast1", buf, bytes, r#type, root, false) }
}

unsafe fn combine(
    routine: &str,
    buf: *mut c_void,
    items: c_int,
    datatype: c_int,
    root: c_int,
    op: OpCode,
) {
    guard(LIB, routine, || {
        let ty = Ty::picl(datatype)?;
        let to = To::Root(rank(root)?);
        // SAFETY: the caller's contract (items of the datatype).
        let b = unsafe { bytes_mut(buf, items as i64 * ty.size() as i64) }?;
        with(|st| {
            let c = st
                .in_use
                .as_ref()
                .or(st.world.as_ref())
                .ok_or_else(|| state::not_open(st))?;
            host_only_as_root(c, to)?;
            reduce::reduce(c, b, ty, op, to)
        })
    })
}

/// PICL's g*0 on the host: "it never makes sense to call g-0 on the host
/// with root set to a node processor ID number" (seed 003: the host owns
/// no vector; it takes part only to receive the result).
fn host_only_as_root(c: &Comm, to: To) -> CResult<()> {
    match to {
        To::Root(Rank::Node(r)) if c.is_host() => Err(format!(
            "on the host the root must be the host (-32768): root {r} is a node, and the host owns no vector to combine"
        )),
        _ => Ok(()),
    }
}

macro_rules! gops {
    ($($name:ident $op:ident $what:literal;)*) => {$(
        #[doc = concat!($what, " of the nodes' vectors, element by element, to `root` (a node in use or the host); `datatype` 0 char … 5 double; `msgtype` is accepted and not needed (the library's own context keeps the messages apart).")]
        ///
        /// # Safety
        /// `buf` holds `items` elements of `datatype`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(buf: *mut c_void, items: c_int, datatype: c_int, msgtype: c_int, root: c_int) {
            let _ = msgtype;
            // SAFETY: forwarded.
            unsafe { combine(stringify!($name), buf, items, datatype, root, OpCode::$op) }
        }
    )*};
}

gops! {
    gsum0 Sum "gsum0: the sum";
    gprod0 Prod "gprod0: the product";
    gmax0 Max "gmax0: the maximum";
    gmin0 Min "gmin0: the minimum";
    gand0 And "gand0: the bitwise and (integer types 0 … 3)";
    gor0 Or "gor0: the bitwise or (integer types 0 … 3)";
    gxor0 Xor "gxor0: the bitwise exclusive or (integer types 0 … 3)";
}

/// gcomb0: combine the nodes' vectors with the user's `comb(p1, p2, items,
/// datatype)` (which overwrites `p1`; associative and commutative), to
/// `root`.
///
/// # Safety
/// `buf` holds `items` elements of `datatype`; `comb` is a valid function.
#[no_mangle]
pub unsafe extern "C" fn gcomb0(
    buf: *mut c_void,
    items: c_int,
    datatype: c_int,
    msgtype: c_int,
    root: c_int,
    comb: Option<extern "C" fn(*mut u8, *const u8, c_int, c_int)>,
) {
    let _ = msgtype;
    guard(LIB, "gcomb0", || {
        let comb = comb.ok_or("the combining function is null")?;
        let ty = Ty::picl(datatype)?;
        let c = with(high)?;
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, items as i64 * ty.size() as i64) }?;
        let root = rank(root)?;
        host_only_as_root(&c, To::Root(root))?;
        reduce::reduce_user(&c, b, ty, comb, datatype, root)
    })
}

/// gray0: the binary reflected Gray code of `i`.
#[no_mangle]
pub extern "C" fn gray0(i: c_int) -> c_int {
    // The 32 bits as unsigned: a logical shift, so that every int (a
    // negative one too) has one code and `ginv0` inverts it.
    let u = i as u32;
    (u ^ (u >> 1)) as c_int
}

/// ginv0: the inverse Gray code: `j` such that `gray0(j) == i`.
#[no_mangle]
pub extern "C" fn ginv0(i: c_int) -> c_int {
    // Unsigned, as in `gray0`: the shifts reach 0 for a negative `i` too.
    let (mut g, mut t) = (i as u32, i as u32);
    loop {
        t >>= 1;
        if t == 0 {
            return g as c_int;
        }
        g ^= t;
    }
}

/// datasize0: the bytes of one element of `datatype` (0 char … 5 double),
/// "an undocumented internal routine of PICL" that the manual's combiners
/// (Figure 5) call; 0 for an unknown type.
#[no_mangle]
pub extern "C" fn datasize0(datatype: c_int) -> c_int {
    Ty::picl(datatype).map_or(0, |t| t.size() as c_int)
}

// -------------------------------------------------------------- tracing

/// traceenable: the host's trace file and format (verbose when 1).
///
/// # Safety
/// `tracefile` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn traceenable(tracefile: *const c_char, verbose: c_int) {
    // SAFETY: the caller's contract.
    let f = unsafe { string(tracefile) };
    guard(LIB, "traceenable", || {
        if f.is_empty() {
            return Err("the trace file name is empty".into());
        }
        with(|st| st.trace.file = Some((f.into(), verbose == 1)));
        Ok(())
    })
}

fn begin(size: c_int, flush: c_int, host: bool) -> CResult<()> {
    let w = with(|st| state::world(st, false))?;
    let mut cfg = Config::new("", Output::PiclVerbose);
    cfg.buffer = (size.max(0) as usize / 64).max(16);
    cfg.policy = if flush == 1 {
        Policy::Flush
    } else {
        Policy::Stop
    };
    trace::begin_rank(&cfg, w.me().to_picl(), w.size(), host);
    Ok(())
}

/// tracehost: start tracing on the host (after traceenable), with a buffer
/// of `tracesize` bytes, flushed when full if `flush` is 1.
#[no_mangle]
pub extern "C" fn tracehost(tracesize: c_int, flush: c_int) {
    guard(LIB, "tracehost", || {
        if with(|st| st.trace.file.is_none()) {
            return Ok(()); // PICL: nothing without traceenable
        }
        begin(tracesize, flush, true)
    })
}

/// tracenode: start tracing on this node; with `sync` 1 the nodes
/// synchronise first (every node must pass the same `sync`).
#[no_mangle]
pub extern "C" fn tracenode(tracesize: c_int, flush: c_int, sync: c_int) {
    guard(LIB, "tracenode", || {
        let w = with(|st| state::world(st, false))?;
        if w.is_host() {
            return Err("tracenode is a node routine (the host calls tracehost)".into());
        }
        if sync == 1 {
            w.sync().map_err(err)?;
        }
        begin(tracesize, flush, false)
    })
}

/// tracelevel: the event, compstats and commstats levels (0 … 3).
#[no_mangle]
pub extern "C" fn tracelevel(event: c_int, compstats: c_int, commstats: c_int) {
    trace::level(event, compstats, commstats);
}

/// traceinfo: records that still fit, and the levels.
///
/// # Safety
/// The pointers are null or valid `int`s.
#[no_mangle]
pub unsafe extern "C" fn traceinfo(
    remaining: *mut c_int,
    event: *mut c_int,
    compstats: *mut c_int,
    commstats: *mut c_int,
) {
    let i = trace::info();
    // SAFETY: the caller's contract.
    unsafe {
        put(remaining, i.remaining.min(i32::MAX as usize) as i32);
        put(event, i.levels.event);
        put(compstats, i.levels.compstats);
        put(commstats, i.levels.commstats);
    }
}

/// tracemark: a user mark of `marktype`.
#[no_mangle]
pub extern "C" fn tracemark(marktype: c_int) {
    trace::mark(marktype);
}

/// tracemsg: a line of text (80 characters at most) in the trace.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tracemsg(message: *const c_char) {
    // SAFETY: the caller's contract.
    trace::message(&unsafe { string(message) });
}

/// traceflush: hand the buffered records on (they reach the file at
/// close0).
#[no_mangle]
pub extern "C" fn traceflush() {
    trace::flush();
}

/// traceexit: stop tracing on this processor.
#[no_mangle]
pub extern "C" fn traceexit() {
    trace::exit();
}
