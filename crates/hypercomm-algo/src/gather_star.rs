//! Star gather(v) (linear): every participant sends its block straight to
//! the root, which posts all receives at once into place in Output.
//!
//! Source: PICL "full connectivity" (seed 003); CMMD `gather_from_nodes`
//! (seed 004); MPI linear gather.
//!
//! cost: (p-1)·(ts + tw·m) for m bytes per rank

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{copy, displs, input, output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()` (buffers as in
/// [`crate::gather_binomial()`]).
pub fn gather_star(rank: usize, root: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let mut s = Schedule::new();
    if rank != root {
        // 1. Non-root: one send.
        s.push(vec![send(root, input(0, counts[rank]))]);
        return s;
    }
    // 2. Root: receive everyone into place, copy own block.
    let mut ops: Vec<_> = (0..p)
        .filter(|&q| q != root)
        .map(|q| recv(q, output(d[q], counts[q])))
        .collect();
    ops.push(copy(input(0, counts[root]), output(d[root], counts[root])));
    s.push(ops);
    s
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    p.saturating_sub(1) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Gather,
    algorithm: Algorithm::Star,
    generate: |x| gather_star(x.me, x.root, x.counts),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_gather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_gather(&counts, root, &|r| gather_star(r, root, &counts))
                    .unwrap_or_else(|e| panic!("root={root} counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(3, 10, 1.0, 1.0), 22.0);
    }
}
