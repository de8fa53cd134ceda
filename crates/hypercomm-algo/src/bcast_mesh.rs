//! One-to-all broadcast on a 2-D mesh: along the root's row, then down
//! every column (Kumar's Figure 3.4).
//!
//! The participants form the mesh of [`mesh_dims`]`(p)` rows and columns,
//! numbered row by row. Phase 1: the root broadcasts along its row as on a
//! ring with wrap-around ([`crate::bcast_ring_bidirectional()`] with one
//! segment: the root sends to the next node, then the previous, and each
//! node passes the message on away from the root). Phase 2: every node of
//! the root's row broadcasts the same way along its column. Each message
//! goes to a mesh neighbour. Source: Kumar et al. (seed 001), one-to-all
//! broadcast on a mesh, "1. broadcast in the row, 2. in the columns in
//! parallel", t = 2·(ts + tw·m)·⌈√p/2⌉ with store-and-forward routing.
//!
//! cost: (ts + tw·m)·(⌈rows/2⌉ + ⌈cols/2⌉), 2·(ts + tw·m)·⌈√p/2⌉ on a
//! square mesh

use crate::bcast_ring::bcast_ring_bidirectional;
use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::Schedule;
use crate::topology::{mesh_dims, TopologyKind};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`; the root's data is in Output[0..count], every
/// rank's Output[0..count] receives it.
pub fn bcast_mesh(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    assert!(rank < p && root < p);
    let (rows, cols) = mesh_dims(p);
    let (r, c) = (rank / cols, rank % cols);
    let (r0, c0) = (root / cols, root % cols);
    let seg = count.max(1);
    let ring =
        |me, len, from| bcast_ring_bidirectional(me, len, from, count, seg, RingOrder::NATURAL);
    // 2. Down my column from the root's row.
    let column = ring(r, rows, r0).map_peers(|q| q * cols + c);
    if r != r0 {
        return column;
    }
    // 1. Along the root's row first.
    ring(c, cols, c0).map_peers(|q| r0 * cols + q).then(column)
}

/// Cost in the seed-001 model for an m-byte message.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let (rows, cols) = mesh_dims(p);
    let steps = |n: usize| if n <= 1 { 0 } else { n.div_ceil(2) };
    (steps(rows) + steps(cols)) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Bcast,
    algorithm: Algorithm::named("mesh"),
    generate: |x| bcast_mesh(x.me, x.p, x.root, x.count),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Mesh2D],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_bcast, standard_cases};
    use crate::Op;

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_bcast(p, root, count, &|r| bcast_mesh(r, p, root, count))
                .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
    }

    /// Every message goes to a mesh neighbour (with wrap-around).
    #[test]
    fn neighbours_only() {
        for p in [4, 6, 9, 12, 16, 25] {
            let (_, cols) = mesh_dims(p);
            let rows = p / cols;
            for root in 0..p {
                for me in 0..p {
                    for op in bcast_mesh(me, p, root, 3).ops() {
                        if let Op::Send { to, .. } = op {
                            let (dr, dc) = (
                                (me / cols + rows - to / cols) % rows,
                                (me % cols + cols - to % cols) % cols,
                            );
                            let near = |d: usize, n: usize| d == 1 || d + 1 == n;
                            assert!(
                                (dr == 0 && near(dc, cols)) || (dc == 0 && near(dr, rows)),
                                "p={p} root={root}: {me} → {to}"
                            );
                        }
                    }
                }
            }
        }
        assert_eq!(cost(16, 10, 1.0, 1.0), 44.0);
        assert_eq!(cost(9, 10, 1.0, 1.0), 44.0);
    }
}
