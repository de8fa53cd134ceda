//! The iPSC utilities' spanning trees (seed 000, sections 3 and 4): GOP
//! combines towards the root highest bit first, GCAT concatenates lowest
//! bit first, and every node ends with its subtree's partial result, as
//! the seed's routines leave it. They run on a full subcube, on a
//! communicator of their own for each call (`ipsc.rs` falls back to the
//! library's collectives short of a full subcube).

use crate::reduce::OpCode;
use crate::state::{err, CResult};
use hypercomm::collective::{Max, Min, Operator, Prod, Sum};
use hypercomm::Comm;
use std::ffi::c_int;

/// Tag of the spanning trees' messages on a call's own subcube
/// communicator (a new context for every call: nothing else uses it).
const TREE: u32 = 0;

/// Whether subcube `c` holds all 2^`dim` nodes of its cube, as the seed's
/// spanning trees assume (an iPSC cube is always full). Short of that,
/// GOP and GCAT run the library's collectives: the root's result is the
/// same, and the other nodes keep their input.
pub(crate) fn full(c: &Comm, dim: c_int) -> bool {
    c.size() == 1usize << dim
}

/// In check mode, every node of `c` must state the same `fields` (root,
/// operation), or every node fails naming the first that differs: the
/// seed's trees would otherwise wait for ever.
pub(crate) fn agree(c: &Comm, fields: &[(&str, i64)]) -> CResult<()> {
    if !c.check_mode() {
        return Ok(());
    }
    let k = fields.len();
    let mut v: Vec<i64> = fields.iter().map(|f| f.1).collect();
    v.extend(fields.iter().map(|f| -f.1));
    let m = c.allreduce(&v, hypercomm::collective::Max).map_err(err)?;
    match fields.iter().enumerate().find(|&(i, _)| m[i] != -m[i + k]) {
        Some((i, (name, _))) => Err(format!(
            "the {name} differs between the nodes ({} and {})",
            -m[i + k],
            m[i]
        )),
        None => Ok(()),
    }
}

/// The seed's GOP on a full subcube `c`, root `r`: node `rel` (its number
/// exclusive-or the root's) takes the partial results of its children
/// `rel ^ bit` for `bit` = P/2, P/4, … above `rel`, combining each into
/// `x` (so every node ends with the result of its subtree, the root with
/// the whole), and sends `x` to its parent, `rel` without its highest
/// bit. A child's message of another length is the seed's "LONG MESSAGE"
/// or "SHORT MESSAGE" (syslogged), and the computation goes on with what
/// both have.
pub(crate) fn gop_tree(c: &Comm, x: &mut [u8], op: OpCode, r: usize) -> CResult<()> {
    let rel = c.rank() ^ r;
    // The library's operators, so that a full subcube combines exactly as
    // the collective that serves the others does (NaN included).
    let combine: fn(f64, f64) -> f64 = match op {
        OpCode::Sum => |a, b| Sum.combine(a, b),
        OpCode::Prod => |a, b| Prod.combine(a, b),
        OpCode::Max => |a, b| Max.combine(a, b),
        _ => |a, b| Min.combine(a, b),
    };
    let mut work = vec![0u8; x.len()];
    let mut bit = c.size() / 2;
    while bit > rel {
        let p = c
            .recv_partial(&mut work, (rel ^ bit) ^ r, TREE)
            .map_err(err)?;
        match p.status.len.cmp(&x.len()) {
            std::cmp::Ordering::Greater => eprintln!("GOP: LONG MESSAGE"),
            std::cmp::Ordering::Less => eprintln!("GOP: SHORT MESSAGE"),
            std::cmp::Ordering::Equal => {}
        }
        let f = |b: &[u8]| f64::from_ne_bytes(b.try_into().expect("8 bytes"));
        for (a, w) in x[..p.received]
            .chunks_exact_mut(8)
            .zip(work.chunks_exact(8))
        {
            a.copy_from_slice(&combine(f(a), f(w)).to_ne_bytes());
        }
        bit /= 2;
    }
    if bit != 0 {
        c.send(&*x, (rel ^ bit) ^ r, TREE).map_err(err)?;
    }
    Ok(())
}

/// The seed's GCAT on a full subcube `c`, root `r`, this node's
/// contribution the first `len` bytes of `buf`: node `rel` (its number
/// exclusive-or the root's) appends the partial results of its children
/// `rel + 1`, `rel + 2`, `rel + 4`, … below its lowest set bit, in that
/// order (so every node ends with its subtree's blocks in ascending
/// order of `rel`, the root with all of them), and sends them to its
/// parent, `rel` without its lowest bit. Returns the bytes held and
/// whether everything fitted: what does not fit is dropped (the seed's
/// "BUFFER LENGTH EXCEEDED"), and what fits still goes on, so that no
/// node waits for ever.
pub(crate) fn gcat_tree(c: &Comm, buf: &mut [u8], len: usize, r: usize) -> CResult<(usize, bool)> {
    let rel = c.rank() ^ r;
    let (mut cur, mut fits, mut bit) = (len, true, 1usize);
    while bit < c.size() && rel.is_multiple_of(2 * bit) {
        let p = c
            .recv_partial(&mut buf[cur..], (rel ^ bit) ^ r, TREE)
            .map_err(err)?;
        fits &= p.received == p.status.len;
        cur += p.received;
        bit *= 2;
    }
    if bit < c.size() {
        c.send(&buf[..cur], (rel ^ bit) ^ r, TREE).map_err(err)?;
    }
    Ok((cur, fits))
}
