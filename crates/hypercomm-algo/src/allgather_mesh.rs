//! All-to-all broadcast on a 2-D mesh: along the rows, then along the
//! columns (Kumar's Figure 3.11).
//!
//! The participants form the mesh of [`mesh_dims`]`(p)` rows and columns,
//! numbered row by row, so a row's blocks are contiguous in the Output.
//! Phase 1: every row runs the ring all-to-all broadcast
//! ([`crate::allgather_ring()`], cols−1 steps, one block per step); each
//! node then holds its row's blocks. Phase 2: every column runs the ring
//! all-to-all broadcast on whole rows' blocks (rows−1 steps, cols blocks
//! per message). Every message goes to a mesh neighbour and is received
//! straight into place. Variable counts work (allgatherv). Source: Kumar
//! et al. (seed 001), all-to-all broadcast on a mesh, "rows, then
//! columns": 2·ts·(√p − 1) + tw·m·(p − 1) on a square mesh.
//!
//! cost: ts·(rows + cols − 2) + tw·m·(p − 1) for m bytes per rank

use crate::allgather_ring::allgather_ring;
use crate::entry::{combines_nothing, Entry};
use crate::ring::RingOrder;
use crate::schedule::{displs, Buf, Op, Region, Schedule};
use crate::topology::{mesh_dims, TopologyKind};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()`: Input holds its own block
/// (`counts[rank]` elements), every Output receives all blocks in rank
/// order.
pub fn allgather_mesh(rank: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    assert!(rank < p);
    let (rows, cols) = mesh_dims(p);
    let (r, c) = (rank / cols, rank % cols);
    let d = displs(counts);
    // 1. Along my row: its blocks start at d[r * cols] in the Output.
    let base = d[r * cols];
    let shift = move |g: Region| match g.buf {
        Buf::Output => Region::new(Buf::Output, g.offset + base, g.len),
        _ => g,
    };
    let row = allgather_ring(
        c,
        &counts[r * cols..(r + 1) * cols],
        RingOrder::NATURAL,
        false,
    )
    .map_peers(|q| r * cols + q)
    .map_regions(shift);
    // 2. Along my column, whole rows at a time; my row is in place already,
    //    so the ring's first copy (own block from the Input) goes.
    let row_totals: Vec<usize> = (0..rows).map(|i| d[(i + 1) * cols] - d[i * cols]).collect();
    let mut column =
        allgather_ring(r, &row_totals, RingOrder::NATURAL, false).map_peers(|q| q * cols + c);
    for round in &mut column.rounds {
        round.ops.retain(|op| !matches!(op, Op::Copy { .. }));
    }
    column.rounds.retain(|round| !round.ops.is_empty());
    row.then(column)
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let (rows, cols) = mesh_dims(p);
    (rows + cols).saturating_sub(2) as f64 * ts + tw * m_bytes as f64 * p.saturating_sub(1) as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allgather,
    algorithm: Algorithm::named("mesh"),
    generate: |x| allgather_mesh(x.me, x.counts),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Mesh2D],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allgather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_allgather(&counts, &|r| allgather_mesh(r, &counts))
                    .unwrap_or_else(|e| panic!("counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(16, 10, 1.0, 1.0), 156.0);
    }
}
