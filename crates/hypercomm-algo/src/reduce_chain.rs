//! Pipelined chain reduce (long vectors): two chains meet at the root.
//!
//! The vector is cut into segments of `segment` elements. The nodes below
//! the root form a chain 0 → 1 → … → root−1 that carries the partial fold
//! x0 ⊕ … ⊕ xi upward; the nodes above it a chain p−1 → … → root+1 that
//! carries xi ⊕ … ⊕ x(p−1) downward. Every node combines segment j with
//! its own contribution and forwards it while it receives segment j+1, so
//! both chains fill like pipelines; the root folds left ⊕ own ⊕ right.
//! Every combine keeps rank order, so any associative operator works
//! (commutative or not). Source: Kumar (seed 001), single-node accumulation
//! on a ring with message splitting (the dual of the pipelined one-to-all
//! broadcast, [`crate::bcast_chain()`]).
//!
//! cost: (h + k − 1)·(ts + tw·m/k) for k segments and the longer chain of
//! h = max(root, p−1−root) hops; [`cost`] takes the worst root (h = p−1)
//! and the best k, as [`crate::bcast_chain::cost`] does.
//!
//! Buffers: a non-root folds into a scratch buffer (its Output is left
//! untouched, as the reduce convention says), the root into its Output.

use crate::bcast_chain::segments;
use crate::registry::Entry;
use crate::schedule::{copy, input, recv, reduce, send, Buf, Region, Schedule};
use crate::{Algorithm, Collective};

/// A region of buffer `buf` at the place of Output region `r`.
fn at(buf: Buf, r: Region) -> Region {
    Region::new(buf, r.offset, r.len)
}

/// Schedule for `rank` of `p`: the fold of every Input[0..count] into the
/// Output[0..count] of `root`, in segments of `segment` elements.
pub fn reduce_chain(rank: usize, p: usize, root: usize, count: usize, segment: usize) -> Schedule {
    assert!(rank < p && root < p);
    let segs = segments(count, segment);
    let mut s = Schedule::new();
    if p == 1 {
        s.push_local(copy(input(0, count), at(Buf::Output, input(0, count))));
        return s;
    }
    if rank == root {
        // 1. Root: own contribution first, then fold each segment with what
        //    the left chain brings (earlier ranks, on the left of ⊕) and the
        //    right chain (later ranks, on the right).
        let left = (root > 0).then(|| s.add_temp(count));
        let right = (root + 1 < p).then(|| s.add_temp(count));
        s.push_local(copy(input(0, count), at(Buf::Output, input(0, count))));
        for g in &segs {
            let mut ops = Vec::new();
            if let Some(t) = left {
                ops.push(recv(root - 1, at(Buf::Temp(t), *g)));
            }
            if let Some(t) = right {
                ops.push(recv(root + 1, at(Buf::Temp(t), *g)));
            }
            if let Some(t) = left {
                ops.push(reduce(at(Buf::Temp(t), *g), at(Buf::Output, *g), true));
            }
            if let Some(t) = right {
                ops.push(reduce(at(Buf::Temp(t), *g), at(Buf::Output, *g), false));
            }
            s.push(ops);
        }
        return s;
    }
    // 2. A chain node: below the root it passes toward higher ranks and the
    //    incoming partial fold comes from earlier ranks (left operand);
    //    above the root the reverse.
    let below = rank < root;
    let (from, to) = if below {
        (rank.checked_sub(1), rank + 1)
    } else {
        ((rank + 1 < p).then_some(rank + 1), rank - 1)
    };
    let acc = s.add_temp(count);
    s.push_local(copy(input(0, count), at(Buf::Temp(acc), input(0, count))));
    let Some(from) = from else {
        // 3. The end of a chain: send its own contribution, segment by segment.
        for g in &segs {
            s.push(vec![send(to, at(Buf::Temp(acc), *g))]);
        }
        return s;
    };
    // 4. The middle: receive segment j (and fold it in) while sending j−1.
    let got = s.add_temp(count);
    for (j, g) in segs.iter().enumerate() {
        let mut ops = vec![recv(from, at(Buf::Temp(got), *g))];
        if j > 0 {
            ops.push(send(to, at(Buf::Temp(acc), segs[j - 1])));
        }
        ops.push(reduce(
            at(Buf::Temp(got), *g),
            at(Buf::Temp(acc), *g),
            below,
        ));
        s.push(ops);
    }
    let last = segs[segs.len() - 1];
    s.push(vec![send(to, at(Buf::Temp(acc), last))]);
    s
}

/// Cost with the best segment count and the longest chain (root at an end).
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    // With the root at an end the chain has p − 1 hops, as the broadcast
    // chain from an end does: the same formula.
    crate::bcast_chain::cost(p, m_bytes, ts, tw)
}

/// Every rank combines the whole vector once.
fn combined(p: usize, m: usize) -> f64 {
    if p <= 1 {
        0.0
    } else {
        m as f64
    }
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Reduce,
    algorithm: Algorithm::Chain,
    generate: |x| reduce_chain(x.me, x.p, x.root, x.count, x.segment),
    cost,
    combined,
    commutative_only: false,
    pipelined: true,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce, standard_cases, Order};

    #[test]
    fn all_cases_keep_rank_order() {
        for (p, root, count) in standard_cases(true) {
            for seg in [1, 3, 1000] {
                check_reduce(p, root, count, Order::Exact, &|r| {
                    reduce_chain(r, p, root, count, seg)
                })
                .unwrap_or_else(|e| panic!("p={p} root={root} count={count} seg={seg}: {e}"));
            }
        }
    }

    #[test]
    fn cost_hand_values() {
        // p = 3, root at an end, one segment (ts = 0 makes one best): two
        // hops of tw·m... and with ts = 1, tw = 0, one segment: 2 ts.
        assert_eq!(cost(3, 100, 1.0, 0.0), 2.0);
        // p = 4, two segments: (2 + 4 − 2)(ts + tw·m/2).
        assert_eq!(
            crate::bcast_chain::cost_segments(4, 100, 1.0, 1.0, 2),
            4.0 * 51.0
        );
        assert_eq!(cost(1, 100, 1.0, 1.0), 0.0);
    }
}
