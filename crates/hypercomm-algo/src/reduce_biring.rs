//! Single-node accumulation on a bidirectional ring: two chains meet at
//! the root (Kumar's single-node accumulation on a ring, the dual of the
//! one-to-all broadcast of Figure 3.2).
//!
//! The ⌈p/2⌉ participants after the root in the ring order form one chain
//! that carries its fold backwards to the root; the p−1−⌈p/2⌉ before it
//! form another that carries its fold forwards, round the ring, to the
//! root. The far end of each chain starts at once, every other node
//! combines what it receives with its own contribution and passes it on;
//! the chains differ in length (by one for even p, by two for odd p), so
//! the root, which receives one message at a time, never has two arriving
//! together. The fold follows the ring order from the root (own value, the
//! chain after it, then the chain before it): rank order for root 0 in the
//! natural order, otherwise it needs a commutative operator. Source: Kumar
//! et al. (seed 001), single-node accumulation "by reversing the direction
//! and sequence of communication" of the one-to-all broadcast on a ring
//! with store-and-forward routing; PICL bidirectional ring (seed 003).
//!
//! cost: (ts + tw·m)·⌈p/2⌉

use crate::entry::{combines_per_step, Entry};
use crate::ring::RingOrder;
use crate::schedule::{copy, input, output, recv, reduce, send, temp, Region, Schedule};
use crate::{Algorithm, Collective};

/// Append to `s` the ring accumulation of the participant at position
/// `pos` (0 = the root) of a ring of `len`, whose position q is
/// participant `at(q)`: `own` is its contribution (`count` elements); the
/// root's fold lands in `result`. Others write only scratch buffers.
pub(crate) fn ring_reduce(
    s: &mut Schedule,
    pos: usize,
    len: usize,
    at: &dyn Fn(usize) -> usize,
    own: Region,
    result: Region,
) {
    let count = own.len;
    if len <= 1 {
        s.push_local(copy(own, result));
        return;
    }
    // Positions 1..=fwd carry their fold back to the root; fwd+1..len-1
    // forward, round the ring.
    let fwd = len.div_ceil(2);
    if pos == 0 {
        // 1. Root: both chains' folds, then own ⊕ after ⊕ before.
        let after = temp(s.add_temp(count), 0, count);
        let mut ops = vec![recv(at(1), after)];
        let before = (fwd + 1 < len).then(|| temp(s.add_temp(count), 0, count));
        if let Some(b) = before {
            ops.push(recv(at(len - 1), b));
        }
        ops.push(copy(own, result));
        ops.push(reduce(after, result, false));
        if let Some(b) = before {
            ops.push(reduce(b, result, false));
        }
        s.push(ops);
        return;
    }
    // 2. A chain node: `from` is the neighbour further from the root on my
    //    chain (none at the far end), `to` the nearer one; on the chain
    //    after the root the received fold comes later in the ring order.
    let (from, to, later) = if pos <= fwd {
        ((pos < fwd).then(|| at(pos + 1)), at(pos - 1), true)
    } else {
        (
            (pos > fwd + 1).then(|| at(pos - 1)),
            at((pos + 1) % len),
            false,
        )
    };
    match from {
        None => s.push(vec![send(to, own)]),
        Some(from) => {
            let acc = temp(s.add_temp(count), 0, count);
            let tmp = temp(s.add_temp(count), 0, count);
            s.push(vec![
                recv(from, tmp),
                copy(own, acc),
                reduce(tmp, acc, !later),
            ]);
            s.push(vec![send(to, acc)]);
        }
    }
}

/// Schedule for `rank` of `p`: Input has `count` elements on every rank;
/// the root's Output receives the fold in ring `order` from the root.
pub fn reduce_biring(
    rank: usize,
    p: usize,
    root: usize,
    count: usize,
    order: RingOrder,
) -> Schedule {
    assert!(rank < p && root < p);
    let pos = order.distance_from(root, rank, p);
    let base = order.position(root, p);
    let mut s = Schedule::new();
    ring_reduce(
        &mut s,
        pos,
        p,
        &|q| order.rank_at(base + q, p),
        input(0, count),
        output(0, count),
    );
    s
}

/// Cost in the seed-001 model for an m-byte vector.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    p.div_ceil(2) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Reduce,
    algorithm: Algorithm::BiRing,
    generate: |x| reduce_biring(x.me, x.p, x.root, x.count, x.order),
    cost,
    combined: combines_per_step,
    commutative_only: true,
    pipelined: false,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for order in [RingOrder::NATURAL, RingOrder::GRAY] {
                check_reduce(p, root, count, Order::Commutative, &|r| {
                    reduce_biring(r, p, root, count, order)
                })
                .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
            }
        }
    }

    /// Root 0 in the natural order folds in rank order.
    #[test]
    fn root_zero_keeps_rank_order() {
        for p in 1..=20 {
            for count in [0, 3] {
                check_reduce(p, 0, count, Order::Exact, &|r| {
                    reduce_biring(r, p, 0, count, RingOrder::NATURAL)
                })
                .unwrap_or_else(|e| panic!("p={p}: {e}"));
            }
        }
    }

    #[test]
    fn cost_hand_values() {
        assert_eq!(cost(8, 10, 1.0, 1.0), 44.0);
        assert_eq!(cost(7, 10, 1.0, 1.0), 44.0);
        assert_eq!(cost(1, 10, 1.0, 1.0), 0.0);
    }
}
