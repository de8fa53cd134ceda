//! Shared ring reduce-scatter step used by the ring allreduce and the ring
//! reduce-scatter (internal).

use crate::ring::RingOrder;
use crate::schedule::{recv, reduce, send, Buf, Region, Schedule};

/// In-place ring reduce-scatter on buffer `buf` (already holding this rank's
/// contribution): `block(q)` is the region of the block finally owned by
/// ring position `q`; `tmp` is a scratch buffer at least as long as the
/// largest block. After p-1 steps position i holds the full reduction of
/// `block(i)` (contributions combined in ring order starting after i; a
/// commutative operator is required).
pub(crate) fn ring_reduce_scatter(
    s: &mut Schedule,
    rank: usize,
    p: usize,
    order: RingOrder,
    block: &dyn Fn(usize) -> Region,
    tmp: Buf,
) {
    let i = order.position(rank, p);
    let next = order.next(rank, p);
    let prev = order.prev(rank, p);
    for st in 0..p.saturating_sub(1) {
        // Step st: send the partial of block i-st-1, receive that of block
        // i-st-2 and add my contribution to it.
        let sb = block((i + 2 * p - st - 1) % p);
        let rb = block((i + 2 * p - st - 2) % p);
        let t = Region::new(tmp, 0, rb.len);
        s.push(vec![send(next, sb), recv(prev, t), reduce(t, rb, true)]);
    }
}
