//! The iPSC communication utilities (seed 000) with their Fortran calling
//! sequences (gfortran's names: lower case with a trailing underscore, every
//! argument by reference, a CHARACTER argument's length appended) and C
//! equivalents by value (`ipsc.h`), and the basic calls they need.
//!
//! The first call joins the job. Channels (`CI`) and process ids (`PID`)
//! are accepted and not needed: one process per node. Message types
//! (`TYPE`) of GSENDW/GRECVW, LSENDW/LRECVW and SENDW/RECVW are the user's
//! tags, as on the iPSC; GOP, GCAT and SPGSNW/SPGRCW run on the library's
//! contexts (GOP and GCAT on a new subcube communicator per call, with
//! the seed's spanning trees), so their types are not needed. Errors are the
//! seed's "syslog" messages (section 8), written on standard error, and
//! the routine returns.

use crate::reduce::{self, OpCode, To, Ty};
use crate::spanning::{agree, full, gcat_tree, gop_tree};
use crate::state::{
    self, bytes, bytes_mut, err, get, put, send_on_its_way, syslog_guard, with, CResult, HOST,
};
use hypercomm::collective::ConcatOrder;
use hypercomm::topology::{self, Mesh};
use hypercomm::{Comm, Rank, Source};
use std::ffi::{c_char, c_int, c_void};

fn world() -> CResult<Comm> {
    with(|st| state::world(st, true))
}

/// The subcube of dimension `dim` containing this node. The host takes
/// part in none: the seed's "CALLED BY NON PARTICIPANT".
fn cube(w: &Comm, dim: c_int) -> CResult<Comm> {
    if w.is_host() {
        return Err("called by non participant (the host belongs to no subcube)".into());
    }
    if !(0..31).contains(&dim) {
        return Err(format!("dimension {dim} is out of range"));
    }
    w.subcube(dim as u32).map_err(err)
}

/// Node number of this process (the host's −32768 on the host).
#[no_mangle]
pub extern "C" fn mynode() -> c_int {
    syslog_guard("MYNODE", -1, || Ok(world()?.me().to_picl()))
}

/// Number of nodes.
#[no_mangle]
pub extern "C" fn numnodes() -> c_int {
    syslog_guard("NUMNODES", 0, || Ok(world()?.size() as c_int))
}

/// Dimension of the smallest cube holding the nodes.
#[no_mangle]
pub extern "C" fn cubedim() -> c_int {
    syslog_guard("CUBEDIM", 0, || {
        let n = world()?.size();
        Ok(n.next_power_of_two().trailing_zeros() as c_int)
    })
}

/// Process id (one process per node: always 0).
#[no_mangle]
pub extern "C" fn mypid() -> c_int {
    0
}

/// Open a channel for `pid`: joins the job; the channel number is 1.
#[no_mangle]
pub extern "C" fn copen(pid: c_int) -> c_int {
    let _ = pid;
    syslog_guard("COPEN", -1, || world().map(|_| 1))
}

/// A blocking send of `len` bytes with `type` to `node` (−32768: the
/// host), errors syslogged under `routine`: returns once `buf` may be
/// reused, without waiting for the receiver.
///
/// # Safety
/// `buf` is valid for `len` bytes.
unsafe fn send_as(routine: &str, r#type: c_int, buf: *const c_void, len: c_int, node: c_int) {
    syslog_guard(routine, (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buf, len as i64) }?;
        send_on_its_way(&world()?, b, to_rank(node)?, tag(r#type)?).map_err(err)
    })
}

/// SENDW: blocking send of `len` bytes with `type` to `node` (−32768: the
/// host).
///
/// # Safety
/// `buf` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn sendw(
    ci: c_int,
    r#type: c_int,
    buf: *const c_void,
    len: c_int,
    node: c_int,
    pid: c_int,
) {
    let _ = (ci, pid);
    // SAFETY: forwarded.
    unsafe { send_as("SENDW", r#type, buf, len, node) }
}

/// SENDMSG: the host's send, as SENDW (the seed's broadcast from the host:
/// the host "just uses SENDMSG to send the message to any one of the
/// receiving processes", which call GRECVW). Fortran only (`sendmsg_`):
/// in C the name is the C library's socket call, so C programs use
/// [`sendw`], which works on the host too.
///
/// # Safety
/// `buf` is valid for `len` bytes.
pub unsafe fn sendmsg(
    ci: c_int,
    r#type: c_int,
    buf: *const c_void,
    len: c_int,
    node: c_int,
    pid: c_int,
) {
    let _ = (ci, pid);
    // SAFETY: forwarded.
    unsafe { send_as("SENDMSG", r#type, buf, len, node) }
}

/// RECVW: blocking receive of `type` from any node into `len` bytes;
/// outputs the count, the sender and its pid. A longer message is cut to
/// `len` (its full length is the count).
///
/// # Safety
/// `buf` is valid for `len` bytes; the outputs are valid `int`s or null.
#[no_mangle]
pub unsafe extern "C" fn recvw(
    ci: c_int,
    r#type: c_int,
    buf: *mut c_void,
    len: c_int,
    cnt: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    let _ = ci;
    let (c, n) = syslog_guard("RECVW", (0, -1), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, len as i64) }?;
        let p = world()?
            .recv_partial(b, Source::Any, tag(r#type)?)
            .map_err(err)?;
        Ok((p.status.len as c_int, p.status.source.to_picl()))
    });
    // SAFETY: the caller's contract.
    unsafe {
        put(cnt, c);
        put(node, n);
        put(pid, 0);
    }
}

fn to_rank(n: c_int) -> CResult<Rank> {
    match n {
        HOST => Ok(Rank::Host),
        n if n >= 0 => Ok(Rank::Node(n as usize)),
        n => Err(format!("node {n} does not exist")),
    }
}

fn tag(t: c_int) -> CResult<u32> {
    u32::try_from(t).map_err(|_| format!("message type {t} is negative"))
}

/// The world node of relative position `rel` in this node's subcube.
fn cube_node(w: &Comm, dim: c_int, rel: usize) -> Option<usize> {
    let base = (w.rank() >> dim) << dim;
    let n = base + rel;
    (n < w.size()).then_some(n)
}

/// Send to the neighbours of relative node `rel` across bits `bit`, `2 bit`,
/// … of the subcube of dimension `dim` (the seed's broadcast tree). A
/// neighbour that does not exist (fewer nodes than the cube holds) is
/// stood in for: its own neighbours across the higher bits are sent to
/// directly, and they, seeing the highest bit in which they differ from
/// the sender, carry on as if it had sent. Every node then gets the
/// message once, whatever the number of nodes.
fn forward(
    w: &Comm,
    dim: c_int,
    rel: usize,
    mut bit: usize,
    send: &mut dyn FnMut(usize) -> CResult<()>,
) -> CResult<()> {
    while bit < (1usize << dim) {
        let to = rel ^ bit;
        match cube_node(w, dim, to) {
            Some(n) => send(n)?,
            // Its lowest-numbered descendant exists: stand in for it.
            None if cube_node(w, dim, to & (2 * bit - 1)).is_some() => {
                forward(w, dim, to, 2 * bit, send)?
            }
            None => {}
        }
        bit *= 2;
    }
    Ok(())
}

/// GSENDW: the root's half of a global broadcast over the subcube of
/// dimension `dim`: the message goes to every neighbour, and the receivers
/// (GRECVW) forward it by the seed's rule, without knowing the root.
///
/// # Safety
/// `buf` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn gsendw(
    ci: c_int,
    r#type: c_int,
    buf: *const c_void,
    len: c_int,
    dim: c_int,
) {
    let _ = ci;
    syslog_guard("GSENDW", (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buf, len as i64) }?;
        let w = world()?;
        cube(&w, dim)?;
        let t = tag(r#type)?;
        let rel = w.rank() & ((1usize << dim) - 1);
        forward(&w, dim, rel, 1, &mut |n| w.send(b, n, t).map_err(err))
    })
}

/// GRECVW: receive a global broadcast (from any node, or the host) into
/// `len` bytes, forward it to the neighbours after the one it came from,
/// and output its length. A longer message is an error (syslogged): `len`
/// bytes are kept and forwarded.
///
/// # Safety
/// `buf` is valid for `len` bytes; `cnt` is a valid `int` or null.
#[no_mangle]
pub unsafe extern "C" fn grecvw(
    ci: c_int,
    r#type: c_int,
    buf: *mut c_void,
    len: c_int,
    cnt: *mut c_int,
    dim: c_int,
) {
    let _ = ci;
    let mut count = 0;
    syslog_guard("GRECVW", (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, len as i64) }?;
        let w = world()?;
        cube(&w, dim)?;
        let t = tag(r#type)?;
        let p = w.recv_partial(b, Source::Any, t).map_err(err)?;
        count = p.status.len as c_int;
        let me = w.rank();
        // 1. Received from the host: send to every neighbour; from node
        //    NODE: to the neighbours after bit ME xor NODE (its highest bit
        //    when NODE stood in for a node that does not exist).
        let bit = match p.status.source {
            Rank::Host => 1,
            Rank::Node(from) => (me ^ from).checked_ilog2().map_or(usize::MAX, |b| 2 << b),
        };
        let rel = me & ((1usize << dim) - 1);
        let fwd = &b[..p.received];
        forward(&w, dim, rel, bit, &mut |n| w.send(fwd, n, t).map_err(err))?;
        if p.status.len > p.received {
            return Err("message truncated".into());
        }
        Ok(())
    });
    // SAFETY: the caller's contract.
    unsafe { put(cnt, count) };
}

/// The rank in subcube `c` of `root` (a node number, or −32768 for the
/// host: the subcube's lowest node); a node outside the subcube, or a
/// negative number other than the host's, is an error.
fn subcube_root(w: &Comm, c: &Comm, root: c_int) -> CResult<usize> {
    if root == HOST {
        return Ok(0);
    }
    let base = w.rank() - c.rank();
    usize::try_from(root)
        .ok()
        .and_then(|r| r.checked_sub(base))
        .filter(|&r| r < c.size())
        .ok_or_else(|| format!("root {root} is not a node of this subcube"))
}

/// GOP: element-wise commutative operation `op` ('+', '*', 'M' max, 'm'
/// min) on the `n` doubles of `x` over the subcube of dimension `dim`; the
/// result in `x` at `root` (a node, or −32768: the subcube's lowest node
/// computes it and sends it to the host with `type`). On a full subcube
/// every other node's `x` holds, as the seed says, the partial result
/// for its subtree of the seed's spanning tree (`spanning.rs`); short of a
/// full subcube, the other nodes keep their input. `work` is not needed.
///
/// # Safety
/// `x` holds `n` doubles.
#[no_mangle]
pub unsafe extern "C" fn gop(
    ci: c_int,
    r#type: c_int,
    x: *mut f64,
    n: c_int,
    op: c_char,
    root: c_int,
    dim: c_int,
    work: *mut f64,
) {
    let _ = (ci, work);
    syslog_guard("GOP", (), || {
        let op = match op as u8 {
            b'+' => OpCode::Sum,
            b'*' => OpCode::Prod,
            b'M' => OpCode::Max,
            b'm' => OpCode::Min,
            o => return Err(format!("operation {:?} is not + * M m", o as char)),
        };
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(x.cast(), n as i64 * 8) }?;
        let w = world()?;
        let c = cube(&w, dim)?;
        let r = subcube_root(&w, &c, root)?;
        if full(&c, dim) {
            agree(&c, &[("root", r as i64), ("operation", op as i64)])?;
            gop_tree(&c, b, op, r)?;
        } else {
            reduce::reduce(&c, b, Ty::F64, op, To::Root(Rank::Node(r)))?;
        }
        if root == HOST && c.rank() == 0 {
            w.send(&*b, Rank::Host, tag(r#type)?).map_err(err)?;
        }
        Ok(())
    })
}

/// GCAT: concatenate every node's first `msglen` bytes of `buf` at `root`
/// over the subcube of dimension `dim`, in the exclusive-or order of the
/// seed (rank order when the root is the subcube's first node; −32768:
/// the lowest node gathers and sends the result to the host with `type`);
/// `cnt` is the number of meaningful bytes in `buf`. On a full subcube
/// every other node holds, as the seed says, the partial result for its
/// subtree of the seed's spanning tree (`spanning.rs`); short of a full
/// subcube, only the root's `buf` changes (elsewhere `cnt` is `msglen`).
///
/// # Safety
/// `buf` is valid for `buflen` bytes; `cnt` is a valid `int` or null.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gcat(
    ci: c_int,
    r#type: c_int,
    buf: *mut c_void,
    buflen: c_int,
    msglen: c_int,
    cnt: *mut c_int,
    root: c_int,
    dim: c_int,
) {
    let _ = ci;
    let mut count = msglen;
    syslog_guard("GCAT", (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, buflen as i64) }?;
        if msglen < 0 || msglen > buflen {
            return Err("buffer length exceeded".into());
        }
        let w = world()?;
        let c = cube(&w, dim)?;
        let r = subcube_root(&w, &c, root)?;
        if full(&c, dim) {
            agree(&c, &[("root", r as i64)])?;
            let (cnt, fits) = gcat_tree(&c, b, msglen as usize, r)?;
            count = cnt as c_int;
            if root == HOST && c.rank() == 0 {
                w.send(&b[..cnt], Rank::Host, tag(r#type)?).map_err(err)?;
            }
            return if fits {
                Ok(())
            } else {
                Err("buffer length exceeded".into())
            };
        }
        let mine = b[..msglen as usize].to_vec();
        if let Some((all, _)) = c
            .gatherv_ordered(&mine, r, ConcatOrder::XorRoot)
            .map_err(err)?
        {
            if all.len() > b.len() {
                return Err("buffer length exceeded".into());
            }
            b[..all.len()].copy_from_slice(&all);
            count = all.len() as c_int;
            if root == HOST {
                w.send(&all, Rank::Host, tag(r#type)?).map_err(err)?;
            }
        }
        Ok(())
    });
    // SAFETY: the caller's contract.
    unsafe { put(cnt, count) };
}

/// LSENDW / LSENDMSG: a long message (no size limit here: one message).
///
/// # Safety
/// `buf` is valid for `len4` bytes.
#[no_mangle]
pub unsafe extern "C" fn lsendw(
    ci: c_int,
    r#type: c_int,
    buf: *const c_void,
    len4: c_int,
    node: c_int,
    pid: c_int,
) {
    let _ = (ci, pid);
    // SAFETY: forwarded.
    unsafe { send_as("LSENDW", r#type, buf, len4, node) }
}

/// LSENDMSG: a long message from the host (one message).
///
/// # Safety
/// `buf` is valid for `len4` bytes.
#[no_mangle]
pub unsafe extern "C" fn lsendmsg(
    ci: c_int,
    r#type: c_int,
    buf: *const c_void,
    len4: c_int,
    node: c_int,
    pid: c_int,
) {
    let _ = (ci, pid);
    // SAFETY: forwarded.
    unsafe { send_as("LSENDMSG", r#type, buf, len4, node) }
}

/// LRECVW: receive a long message into `len4` bytes; outputs its length,
/// sender and pid. A longer message is the seed's "LRECVW: TRUNCATED
/// MESSAGE" (syslogged): `len4` bytes are kept, the count is its length.
///
/// # Safety
/// As [`recvw`].
#[no_mangle]
pub unsafe extern "C" fn lrecvw(
    ci: c_int,
    r#type: c_int,
    buf: *mut c_void,
    len4: c_int,
    cnt4: *mut c_int,
    node: *mut c_int,
    pid: *mut c_int,
) {
    let _ = ci;
    let (mut c, mut n) = (0, -1);
    syslog_guard("LRECVW", (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, len4 as i64) }?;
        let p = world()?
            .recv_partial(b, Source::Any, tag(r#type)?)
            .map_err(err)?;
        (c, n) = (p.status.len as c_int, p.status.source.to_picl());
        if p.status.len > p.received {
            return Err("truncated message".into());
        }
        Ok(())
    });
    // SAFETY: the caller's contract.
    unsafe {
        put(cnt4, c);
        put(node, n);
        put(pid, 0);
    }
}

/// SPGSNW: send `len` bytes to the `number` nodes of `list` over the
/// fan-out tree of SPLIT/BETWEEN; each target calls SPGRCW.
///
/// # Safety
/// `buf` is valid for `len` bytes, `list` for `number` ints.
#[no_mangle]
pub unsafe extern "C" fn spgsnw(
    ci: c_int,
    r#type: c_int,
    buf: *const c_void,
    len: c_int,
    list: *mut c_int,
    number: c_int,
) {
    let _ = (ci, r#type);
    syslog_guard("SPGSNW", (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buf, len as i64) }?;
        // SAFETY: the caller's contract.
        let l = unsafe { bytes(list.cast(), number as i64 * 4) }?;
        let targets = reduce::elems::<i32>(l)
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                usize::try_from(t)
                    .map_err(|_| format!("target {t} (list entry {}) is not a node", i + 1))
            })
            .collect::<CResult<Vec<usize>>>()?;
        world()?.multicast(b, &targets).map_err(err)
    })
}

/// SPGRCW: receive a sparse global send into `len` bytes and forward it;
/// outputs its length.
///
/// # Safety
/// `buf` is valid for `len` bytes; `cnt` is a valid `int` or null.
#[no_mangle]
pub unsafe extern "C" fn spgrcw(
    ci: c_int,
    r#type: c_int,
    buf: *mut c_void,
    len: c_int,
    cnt: *mut c_int,
) {
    let _ = (ci, r#type);
    let mut count = 0;
    syslog_guard("SPGRCW", (), || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buf, len as i64) }?;
        let (data, _) = world()?.multicast_recv::<u8>().map_err(err)?;
        count = data.len() as c_int;
        // As the seed's RECVW does: the buffer keeps what fits.
        let fits = data.len().min(b.len());
        b[..fits].copy_from_slice(&data[..fits]);
        if fits < data.len() {
            return Err("truncated message".into());
        }
        Ok(())
    });
    // SAFETY: the caller's contract.
    unsafe { put(cnt, count) };
}

/// GRAY: the i-th binary reflected Gray code.
#[no_mangle]
pub extern "C" fn gray(i: c_int) -> c_int {
    crate::picl::gray0(i)
}

/// GINV: the inverse of GRAY.
#[no_mangle]
pub extern "C" fn ginv(i: c_int) -> c_int {
    crate::picl::ginv0(i)
}

/// XOR: bitwise exclusive or.
#[no_mangle]
pub extern "C" fn ipsc_xor(i: c_int, j: c_int) -> c_int {
    i ^ j
}

/// BETWEEN: whether node `j` lies on a shortest hypercube path from `i`
/// to `k` (1 or 0).
#[no_mangle]
pub extern "C" fn between(i: c_int, j: c_int, k: c_int) -> c_int {
    ((i ^ k) == (i ^ j) + (j ^ k)) as c_int
}

/// SPLIT, as the seed lists it: find a child of this node among the
/// `number` targets of `list` (none between this node and it), put its
/// descendants first, the child next, the rest after; `first` is the
/// number of descendants.
///
/// # Safety
/// `list` is valid for `number` ints; `first` is a valid `int` or null.
#[no_mangle]
pub unsafe extern "C" fn split(number: c_int, list: *mut c_int, first: *mut c_int) {
    let me = mynode();
    let n = number.max(0) as usize;
    if n == 0 {
        return;
    }
    // SAFETY: the caller's contract.
    let l = unsafe { std::slice::from_raw_parts_mut(list, n) };
    let f = split_list(me, l);
    // SAFETY: the caller's contract.
    unsafe { put(first, f) };
}

/// The seed's SPLIT on a slice (1-based indices of the listing shifted).
pub(crate) fn split_list(me: i32, list: &mut [i32]) -> i32 {
    let number = list.len();
    let mut key = 0;
    for test in 1..number {
        if between(me, list[test], list[key]) != 0 {
            key = test;
        }
    }
    let child = list[key];
    list[key] = list[0];
    let (mut lo, mut hi) = (1usize, number - 1);
    loop {
        // move lo upward
        while lo <= hi && hi < number && between(me, child, list[lo]) != 0 {
            lo += 1;
        }
        if lo > hi || hi >= number {
            break;
        }
        // move hi downward
        while lo < hi && between(me, child, list[hi]) == 0 {
            hi -= 1;
        }
        if lo >= hi {
            break;
        }
        list.swap(lo, hi);
        lo += 1;
        hi -= 1;
    }
    let first = lo - 1;
    list[0] = list[first];
    list[first] = child;
    first as i32
}

/// MESH: embed a mesh of `dim` dimensions with `lindim[i]` nodes along
/// dimension i (periodic where `perbc[i]` is 1) into the hypercube so that
/// mesh neighbours are cube neighbours (the library's
/// [`hypercomm::topology::Mesh`]): node `me`'s coordinates and its
/// predecessor and successor along each dimension (−1 for none, and every
/// output −1 when `me` is not in the mesh). `work` gets each `lindim`
/// rounded up to a power of two. A mesh larger than the job is reported
/// (syslog) and the numbers are still returned, as the seed says; bad
/// lengths are syslogged and every output is −1.
///
/// # Safety
/// The arrays hold `dim` ints.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mesh(
    me: c_int,
    dim: c_int,
    lindim: *const c_int,
    perbc: *const c_int,
    coords: *mut c_int,
    pred: *mut c_int,
    succ: *mut c_int,
    work: *mut c_int,
) {
    let d = dim.max(0) as usize;
    let arr = |p: *const c_int| -> Vec<i32> {
        // SAFETY: the caller's contract (d ints).
        (0..d).map(|i| unsafe { get(p.add(i)) }).collect()
    };
    let (lin, per) = (arr(lindim), arr(perbc));
    let none = vec![-1; d];
    let (c, p, s, w) = syslog_guard(
        "MESH",
        (none.clone(), none.clone(), none.clone(), none),
        || {
            if dim <= 0 {
                return Err(format!("dimension {dim}: give at least one"));
            }
            if let Some(i) = lin.iter().position(|&l| l < 1) {
                return Err(format!("lindim({}) is {}", i + 1, lin[i]));
            }
            let lens: Vec<usize> = lin.iter().map(|&l| l as usize).collect();
            let periodic: Vec<bool> = per.iter().map(|&b| b == 1).collect();
            let m = Mesh::new(&lens, &periodic).map_err(err)?;
            let work: Vec<i32> = lens.iter().map(|&l| 1 << topology::cube_dim(l)).collect();
            let nodes = with(|st| st.world.as_ref().map(|w| w.size()));
            if nodes.is_some_and(|n| m.cube_nodes() > n.next_power_of_two()) {
                eprintln!("MESH: TOO LARGE");
            }
            let at = |n: Option<usize>| n.map_or(-1, |n| n as i32);
            Ok(match usize::try_from(me).ok().and_then(|me| m.place(me)) {
                Some(pl) => (
                    pl.coords.iter().map(|&c| c as i32).collect(),
                    pl.pred.into_iter().map(at).collect(),
                    pl.succ.into_iter().map(at).collect(),
                    work,
                ),
                None => (vec![-1; d], vec![-1; d], vec![-1; d], work),
            })
        },
    );
    for i in 0..d {
        // SAFETY: the caller's contract.
        unsafe {
            put(coords.add(i), c[i]);
            put(pred.add(i), p[i]);
            put(succ.add(i), s[i]);
            put(work.add(i), w[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MESH through its C entry point for node `me`: (coords, pred, succ,
    /// work).
    fn call(me: i32, lin: &[i32], per: &[i32]) -> [Vec<i32>; 4] {
        let d = lin.len();
        let mut out = [vec![0; d], vec![0; d], vec![0; d], vec![0; d]];
        let [c, p, s, w] = &mut out;
        // SAFETY: every array holds d ints.
        unsafe {
            mesh(
                me,
                d as i32,
                lin.as_ptr(),
                per.as_ptr(),
                c.as_mut_ptr(),
                p.as_mut_ptr(),
                s.as_mut_ptr(),
                w.as_mut_ptr(),
            )
        };
        out
    }

    /// Every mesh position appears once; neighbours along a dimension are
    /// each other's predecessor and successor and differ in one bit (cube
    /// neighbours), except the wrap of a periodic dimension whose length
    /// is not a power of two; WORK is LINDIM rounded up to a power of two.
    #[test]
    fn mesh_neighbours_are_cube_neighbours_and_consistent() {
        for (lin, per) in [
            (vec![8], vec![1]),
            (vec![5], vec![0]),
            (vec![4, 4], vec![1, 0]),
            (vec![3, 5], vec![1, 1]),
            (vec![2, 3, 4], vec![0, 1, 1]),
        ] {
            let rounded: Vec<i32> = lin
                .iter()
                .map(|&l: &i32| (l as u32).next_power_of_two() as i32)
                .collect();
            let size: i32 = rounded.iter().product();
            let mut seen = std::collections::HashSet::new();
            for me in 0..size {
                let [c, p, s, w] = call(me, &lin, &per);
                assert_eq!(w, rounded);
                if c[0] < 0 {
                    assert!(c.iter().chain(&p).chain(&s).all(|&x| x == -1));
                    continue;
                }
                assert!(seen.insert(c.clone()), "{lin:?}: coordinates twice");
                for i in 0..lin.len() {
                    let l = lin[i];
                    for (n, forward) in [(s[i], true), (p[i], false)] {
                        let at_edge = if forward { c[i] == l - 1 } else { c[i] == 0 };
                        if n < 0 {
                            assert!(per[i] == 0 && at_edge, "{lin:?}: {me} dim {i}");
                            continue;
                        }
                        let [_, op, os, _] = call(n, &lin, &per);
                        let back = if forward { op[i] } else { os[i] };
                        assert_eq!(back, me, "{lin:?} dim {i}: {me} <-> {n}");
                        if !at_edge || l.count_ones() == 1 {
                            assert_eq!((me ^ n).count_ones(), 1, "{lin:?}: {me} {n}");
                        }
                    }
                }
            }
            assert_eq!(seen.len() as i32, lin.iter().product::<i32>());
        }
    }

    /// The seed's one-dimensional case: the ring of GRAY order.
    #[test]
    fn one_dimension_is_the_gray_code_ring() {
        let [c, p, s, _] = call(gray(3), &[8], &[1]);
        assert_eq!(c, vec![3]);
        assert_eq!((p[0], s[0]), (gray(2), gray(4)));
        assert_eq!(call(9, &[8], &[0])[0], vec![-1]);
        assert_eq!(call(gray(7), &[8], &[0])[2], vec![-1]);
        assert_eq!(call(0, &[8], &[1])[1], vec![gray(7)]);
        assert_eq!(call(0, &[5], &[0])[3], vec![8]);
    }

    /// A length below 1 is syslogged and every output is −1.
    #[test]
    fn a_bad_length_gives_minus_one_everywhere() {
        assert_eq!(
            call(0, &[4, 0], &[0, 0]),
            [vec![-1, -1], vec![-1, -1], vec![-1, -1], vec![-1, -1]]
        );
    }
}
