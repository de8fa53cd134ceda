//! Single-node accumulation on a 2-D mesh: along every row to the root's
//! column, then along that column to the root (the dual of
//! [`crate::bcast_mesh()`]).
//!
//! The participants form the mesh of [`mesh_dims`]`(p)` rows and columns,
//! numbered row by row. Phase 1: every row accumulates its contributions
//! at the node of the root's column, as on a ring with wrap-around
//! ([`crate::reduce_biring()`]: two chains meet there). Phase 2: those
//! nodes accumulate the row results at the root the same way along the
//! root's column. Each message goes to a mesh neighbour. For root 0 the
//! fold is in rank order (rows in order, each row in order); for other
//! roots the ring wraps round and the operator must commute. Source:
//! Kumar et al. (seed 001), single-node accumulation, the dual of the
//! one-to-all broadcast on a mesh.
//!
//! cost: (ts + tw·m)·(⌈cols/2⌉ + ⌈rows/2⌉), 2·(ts + tw·m)·⌈√p/2⌉ on a
//! square mesh

use crate::entry::{combines_per_step, Entry};
use crate::reduce_biring::ring_reduce;
use crate::schedule::{input, output, temp, Schedule};
use crate::topology::{mesh_dims, TopologyKind};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`: Input has `count` elements on every rank;
/// the root's Output receives the fold. Non-roots do not touch Output.
pub fn reduce_mesh(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    assert!(rank < p && root < p);
    let (rows, cols) = mesh_dims(p);
    let (r, c) = (rank / cols, rank % cols);
    let (r0, c0) = (root / cols, root % cols);
    let mut s = Schedule::new();
    // 1. Along my row to the root's column: the row's fold lands in a
    //    scratch buffer there.
    let row_sum = temp(s.add_temp(count), 0, count);
    ring_reduce(
        &mut s,
        (c + cols - c0) % cols,
        cols,
        &|q| r * cols + (c0 + q) % cols,
        input(0, count),
        row_sum,
    );
    if c != c0 {
        return s;
    }
    // 2. Along the root's column to the root.
    ring_reduce(
        &mut s,
        (r + rows - r0) % rows,
        rows,
        &|q| ((r0 + q) % rows) * cols + c0,
        row_sum,
        output(0, if rank == root { count } else { 0 }),
    );
    s
}

/// Cost in the seed-001 model for an m-byte vector.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    crate::bcast_mesh::cost(p, m_bytes, ts, tw)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Reduce,
    algorithm: Algorithm::named("mesh"),
    generate: |x| reduce_mesh(x.me, x.p, x.root, x.count),
    cost,
    combined: combines_per_step,
    commutative_only: true,
    pipelined: false,
    topologies: &[TopologyKind::Mesh2D],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_reduce(p, root, count, Order::Commutative, &|r| {
                reduce_mesh(r, p, root, count)
            })
            .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
    }

    #[test]
    fn root_zero_keeps_rank_order() {
        for p in 1..=30 {
            check_reduce(p, 0, 2, Order::Exact, &|r| reduce_mesh(r, p, 0, 2))
                .unwrap_or_else(|e| panic!("p={p}: {e}"));
        }
    }
}
