//! Ring gather(v): blocks travel along the ring to the root, pipelined.
//!
//! With positions counted from the root along the ring direction, position
//! j sends its own block to j+1, then forwards, one per step, the blocks of
//! positions j-1, …, 1 as they arrive from j-1; the root (reached from
//! position p-1) receives each block straight into place. Source: Kumar
//! (seed 001) ring gather / all-to-all broadcast on a ring; PICL ring
//! topologies (seed 003).
//!
//! cost: (p-1)·(ts + tw·m) for m bytes per rank

use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::{copy, displs, input, output, recv, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()` (buffers as in
/// [`crate::gather_binomial()`]), along `order`.
pub fn gather_ring(rank: usize, root: usize, counts: &[usize], order: RingOrder) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let mut s = Schedule::new();
    let base = order.position(root, p);
    let rank_of = |q: usize| order.rank_at(base + q, p);
    let j = order.distance_from(root, rank, p);
    let next = order.next(rank, p);
    let prev = order.prev(rank, p);
    if j == 0 {
        // 1. Root: blocks of positions p-1, p-2, …, 1 arrive from p-1.
        s.push(vec![copy(
            input(0, counts[rank]),
            output(d[rank], counts[rank]),
        )]);
        for q in (1..p).rev() {
            let r = rank_of(q);
            s.push(vec![recv(prev, output(d[r], counts[r]))]);
        }
        return s;
    }
    // 2. Position j: round k sends S_k (own block, then what arrived in round
    //    k-1) and receives R_k = block of position j-1-k, double-buffered.
    let maxc = counts.iter().copied().max().unwrap_or(0);
    let t = [s.add_temp(maxc), s.add_temp(maxc)];
    let slot = |k: usize, q: usize| temp(t[k % 2], 0, counts[rank_of(q)]);
    for k in 0..j {
        let sk = if k == 0 {
            input(0, counts[rank])
        } else {
            slot(k - 1, j - k)
        };
        let mut ops = vec![send(next, sk)];
        if k + 1 < j {
            ops.push(recv(prev, slot(k, j - 1 - k)));
        }
        s.push(ops);
    }
    s
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    p.saturating_sub(1) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Gather,
    algorithm: Algorithm::Ring,
    generate: |x| gather_ring(x.me, x.root, x.counts, x.order),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Ring, TopologyKind::BiRing],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_gather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                for order in [
                    RingOrder::NATURAL,
                    RingOrder {
                        gray: true,
                        forward: false,
                    },
                ] {
                    check_gather(&counts, root, &|r| gather_ring(r, root, &counts, order))
                        .unwrap_or_else(|e| panic!("root={root} counts={counts:?}: {e}"));
                }
            }
        }
        assert_eq!(cost(3, 10, 1.0, 1.0), 22.0);
    }
}
