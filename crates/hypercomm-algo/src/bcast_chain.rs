//! Pipelined chain broadcast (long messages), along a ring order.
//!
//! The message is cut into segments of `segment` elements; the root sends
//! them one after another to the next participant on the ring, and every
//! participant forwards segment j while receiving segment j+1, so the chain
//! fills like a pipeline. Source: Kumar (seed 001), one-to-all broadcast on
//! a ring and the remarks on message splitting; PICL `setarc0`
//! unidirectional ring (seed 003). The order of the chain is a
//! [`RingOrder`] (natural or Gray, forward or backward).
//!
//! cost: (k + p - 2)·(ts + tw·m/k) for k = ⌈m/segment⌉ segments and p ≥ 2;
//! [`cost`] uses the best k, ≈ (√((p-2)·ts) + √(tw·m))².

use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::{output, recv, send, Region, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Segment `j` of a `count`-element Output split into `seg`-element pieces
/// (count 0: one empty segment).
pub(crate) fn segments(count: usize, seg: usize) -> Vec<Region> {
    let seg = seg.max(1);
    if count == 0 {
        return vec![output(0, 0)];
    }
    (0..count.div_ceil(seg))
        .map(|j| output(j * seg, seg.min(count - j * seg)))
        .collect()
}

/// Pipelined broadcast along a path of participants: `me` is my index on the
/// path (0 = root), `prev`/`next` my neighbours on it.
pub(crate) fn chain(
    me: usize,
    len: usize,
    prev: usize,
    next: usize,
    count: usize,
    segment: usize,
) -> Schedule {
    let segs = segments(count, segment);
    let mut s = Schedule::new();
    if len <= 1 {
        return s;
    }
    if me == 0 {
        // 1. Root: send the segments in order.
        for g in &segs {
            s.push(vec![send(next, *g)]);
        }
    } else if me == len - 1 {
        // 2. Tail: receive them in order.
        for g in &segs {
            s.push(vec![recv(prev, *g)]);
        }
    } else {
        // 3. Middle: receive segment j while forwarding segment j-1.
        s.push(vec![recv(prev, segs[0])]);
        for j in 1..segs.len() {
            s.push(vec![recv(prev, segs[j]), send(next, segs[j - 1])]);
        }
        s.push(vec![send(next, segs[segs.len() - 1])]);
    }
    s
}

/// Schedule for `rank` of `p`: pipelined broadcast of Output[0..count] from
/// `root` along `order`, in segments of `segment` elements (0 is taken as 1).
pub fn bcast_chain(
    rank: usize,
    p: usize,
    root: usize,
    count: usize,
    segment: usize,
    order: RingOrder,
) -> Schedule {
    assert!(rank < p && root < p);
    let me = order.distance_from(root, rank, p);
    chain(
        me,
        p,
        order.prev(rank, p),
        order.next(rank, p),
        count,
        segment,
    )
}

/// Cost with `k` segments.
pub fn cost_segments(p: usize, m_bytes: usize, ts: f64, tw: f64, k: usize) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let k = k.max(1);
    (k + p - 2) as f64 * (ts + tw * m_bytes as f64 / k as f64)
}

/// Cost with the best segment count.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let k = if ts > 0.0 {
        // At most a segment per byte (and no overflow when tw dwarfs ts).
        (((p - 2) as f64 * tw * m_bytes as f64 / ts).sqrt().round() as usize)
            .clamp(1, m_bytes.max(1))
    } else {
        m_bytes.max(1)
    };
    cost_segments(p, m_bytes, ts, tw, k)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Bcast,
    algorithm: Algorithm::Chain,
    generate: |x| bcast_chain(x.me, x.p, x.root, x.count, x.segment, x.order),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: true,
    topologies: &[TopologyKind::Ring],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for seg in [1, 3, 1000] {
                for order in [
                    RingOrder::NATURAL,
                    RingOrder {
                        gray: true,
                        forward: false,
                    },
                ] {
                    check_bcast(p, root, count, &|r| {
                        bcast_chain(r, p, root, count, seg, order)
                    })
                    .unwrap_or_else(|e| panic!("p={p} root={root} count={count} seg={seg}: {e}"));
                }
            }
        }
    }

    #[test]
    fn cost_hand_values() {
        // p = 4, 2 segments: (2 + 2)(ts + tw m/2) = 4 (1 + 50) = 204
        assert_eq!(cost_segments(4, 100, 1.0, 1.0, 2), 204.0);
        // p = 2 unsegmented = ts + tw m
        assert_eq!(cost_segments(2, 100, 1.0, 1.0, 1), 101.0);
        assert!(cost(64, 1 << 20, 10.0, 0.01) < cost_segments(64, 1 << 20, 10.0, 0.01, 1));
    }
}
