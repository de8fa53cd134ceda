//! Bidirectional ring broadcast (pipelined).
//!
//! The root sends every segment both ways round the ring; the participants
//! at distance 1..=⌈(p-1)/2⌉ forward it along the ring direction, the others
//! against it, each as a pipelined chain (see [`crate::bcast_chain()`]). Source:
//! PICL `setarc0` bidirectional ring topology (seed 003); Kumar (seed 001),
//! ring broadcast. The unidirectional ring is [`crate::bcast_chain()`].
//!
//! cost: (k + ⌈(p-1)/2⌉ - 1)·(ts + tw·m/k) for k segments; [`cost`] takes the best k.

use crate::bcast_chain::{chain, segments};
use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::{send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`: broadcast Output[0..count] from `root` both
/// ways round the ring `order`, in segments of `segment` elements.
pub fn bcast_ring_bidirectional(
    rank: usize,
    p: usize,
    root: usize,
    count: usize,
    segment: usize,
    order: RingOrder,
) -> Schedule {
    assert!(rank < p && root < p);
    let d = order.distance_from(root, rank, p);
    let fwd_len = 1 + p / 2; // root + positions 1..=⌈(p-1)/2⌉
    let bwd_len = p - fwd_len + 1; // root + positions p-1 down to fwd_len
    let next = order.next(rank, p);
    let prev = order.prev(rank, p);
    if d == 0 {
        // 1. Root: each segment goes both ways in one round.
        let mut s = Schedule::new();
        for g in segments(count, segment) {
            let mut ops = vec![];
            if fwd_len > 1 {
                ops.push(send(next, g));
            }
            if bwd_len > 1 {
                ops.push(send(prev, g));
            }
            s.push(ops);
        }
        s
    } else if d < fwd_len {
        // 2. Forward half: a chain in the ring direction.
        chain(d, fwd_len, prev, next, count, segment)
    } else {
        // 3. Backward half: a chain against it.
        chain(p - d, bwd_len, next, prev, count, segment)
    }
}

/// Cost with `k` segments (links are bidirectional, one send per direction).
pub fn cost_segments(p: usize, m_bytes: usize, ts: f64, tw: f64, k: usize) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let k = k.max(1);
    let h = p / 2; // ⌈(p-1)/2⌉
    (k + h - 1) as f64 * (ts + tw * m_bytes as f64 / k as f64)
}

/// Cost with the best segment count.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let h = p / 2;
    let k = if ts > 0.0 {
        // At most a segment per byte (and no overflow when tw dwarfs ts).
        (((h - 1) as f64 * tw * m_bytes as f64 / ts).sqrt().round() as usize)
            .clamp(1, m_bytes.max(1))
    } else {
        m_bytes.max(1)
    };
    cost_segments(p, m_bytes, ts, tw, k)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Bcast,
    algorithm: Algorithm::BiRing,
    generate: |x| bcast_ring_bidirectional(x.me, x.p, x.root, x.count, x.segment, x.order),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: true,
    topologies: &[TopologyKind::BiRing],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for seg in [2, 5000] {
                for order in [RingOrder::NATURAL, RingOrder::GRAY] {
                    check_bcast(p, root, count, &|r| {
                        bcast_ring_bidirectional(r, p, root, count, seg, order)
                    })
                    .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
                }
            }
        }
    }

    #[test]
    fn cost_hand_values() {
        // p = 5, one segment: 2 steps of (ts + tw m)
        assert_eq!(cost_segments(5, 10, 1.0, 1.0, 1), 22.0);
        assert_eq!(cost_segments(2, 10, 1.0, 1.0, 1), 11.0);
    }
}
