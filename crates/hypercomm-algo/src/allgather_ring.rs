//! Ring allgather(v), unidirectional or bidirectional.
//!
//! Unidirectional: in step s every participant passes to its ring successor
//! the block it received in step s-1 (its own in step 0), p-1 steps.
//! Bidirectional: blocks travel both ways at once, ⌈(p-1)/2⌉ steps forward
//! and ⌊(p-1)/2⌋ backward, for links that carry both directions. Blocks are
//! received straight into place. Source: Kumar (seed 001), all-to-all
//! broadcast on a ring; PICL `setarc0` uni- and bidirectional rings, natural
//! or Gray order (seed 003).
//!
//! cost: (p-1)·(ts + tw·m) unidirectional, ⌈(p-1)/2⌉·(ts + tw·m)
//! bidirectional (m bytes per rank)

use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::{copy, displs, input, output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()` (buffers as in
/// [`crate::allgather_recursive_doubling()`]) along `order`.
pub fn allgather_ring(
    rank: usize,
    counts: &[usize],
    order: RingOrder,
    bidirectional: bool,
) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let i = order.position(rank, p);
    let next = order.next(rank, p);
    let prev = order.prev(rank, p);
    let block = |pos: usize| {
        let r = order.rank_at(pos % p, p);
        output(d[r], counts[r])
    };
    let mut s = Schedule::new();
    // 1. Own block into place.
    s.push(vec![copy(
        input(0, counts[rank]),
        output(d[rank], counts[rank]),
    )]);
    let (nf, nb) = if bidirectional {
        (p / 2, (p - 1) / 2)
    } else {
        (p - 1, 0)
    };
    // 2. Step st: forward block i-st to next, receive block i-1-st from prev;
    //    backward block i+st to prev, receive block i+1+st from next.
    for st in 0..nf.max(nb) {
        let mut ops = Vec::new();
        if st < nf {
            ops.push(send(next, block(i + p - st)));
            ops.push(recv(prev, block(i + 2 * p - 1 - st)));
        }
        if st < nb {
            ops.push(send(prev, block(i + st)));
            ops.push(recv(next, block(i + 1 + st)));
        }
        s.push(ops);
    }
    s
}

/// Cost of the unidirectional ring, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    p.saturating_sub(1) as f64 * (ts + tw * m_bytes as f64)
}

/// Cost of the bidirectional ring, m bytes per rank.
pub fn cost_bidirectional(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    (p / 2) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[
    Entry {
        collective: Collective::Allgather,
        algorithm: Algorithm::Ring,
        generate: |x| allgather_ring(x.me, x.counts, x.order, false),
        cost,
        combined: combines_nothing,
        commutative_only: false,
        pipelined: false,
        topologies: &[TopologyKind::Ring],
    },
    Entry {
        collective: Collective::Allgather,
        algorithm: Algorithm::BiRing,
        generate: |x| allgather_ring(x.me, x.counts, x.order, true),
        cost: cost_bidirectional,
        combined: combines_nothing,
        commutative_only: false,
        pipelined: true,
        topologies: &[TopologyKind::BiRing],
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allgather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                for order in [
                    RingOrder::NATURAL,
                    RingOrder {
                        gray: true,
                        forward: false,
                    },
                ] {
                    for bi in [false, true] {
                        check_allgather(&counts, &|r| allgather_ring(r, &counts, order, bi))
                            .unwrap_or_else(|e| panic!("counts={counts:?} bi={bi}: {e}"));
                    }
                }
            }
        }
        assert_eq!(cost(5, 10, 1.0, 1.0), 44.0);
        assert_eq!(cost_bidirectional(5, 10, 1.0, 1.0), 22.0);
        assert_eq!(cost_bidirectional(6, 10, 1.0, 1.0), 33.0);
    }
}
