//! Star broadcast (PICL "full connectivity").
//!
//! The root sends the whole message to every other participant, one after
//! another, in ring order starting after itself (forward or backward, as
//! PICL's `dir` chooses "front to back or back to front through the list of
//! sends"). Source: PICL `setarc0` with top = 2 and `bcast0` (seed 003).
//!
//! cost: (p - 1)·(ts + tw·m)

use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::{output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`: broadcast Output[0..count] from `root`.
pub fn bcast_star(rank: usize, p: usize, root: usize, count: usize, order: RingOrder) -> Schedule {
    assert!(rank < p && root < p);
    let mut s = Schedule::new();
    if rank == root {
        // 1. Root: one send per round, in ring order after the root.
        let base = order.position(root, p);
        for k in 1..p {
            s.push(vec![send(order.rank_at(base + k, p), output(0, count))]);
        }
    } else {
        // 2. Others: one receive.
        s.push(vec![recv(root, output(0, count))]);
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    (p.saturating_sub(1)) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Bcast,
    algorithm: Algorithm::Star,
    generate: |x| bcast_star(x.me, x.p, x.root, x.count, x.order),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for order in [
                RingOrder::NATURAL,
                RingOrder {
                    gray: true,
                    forward: false,
                },
            ] {
                check_bcast(p, root, count, &|r| bcast_star(r, p, root, count, order))
                    .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
            }
        }
        assert_eq!(cost(4, 10, 1.0, 2.0), 63.0);
    }
}
