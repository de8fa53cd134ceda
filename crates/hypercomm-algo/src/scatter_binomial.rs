//! Binomial-tree scatter(v), any root: the gather tree run downwards.
//!
//! The root sends each other half of the canonical interval tree
//! ([`crate::tree`]) the contiguous range of blocks that half needs; every
//! representative does the same within its interval. Source: CMMD
//! `distrib_to_nodes` (seed 004); the tree is seed 000's GCAT tree reversed.
//!
//! cost: ts·⌈log2 p⌉ + tw·m·(p-1) for m bytes per rank

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, copy, displs, output, recv, send, Buf, Region, Schedule};
use crate::topology::TopologyKind;
use crate::tree::path;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()`: root's Input = all blocks in rank
/// order, every Output = own block (`counts[rank]` elements). Non-roots do
/// not touch Input.
pub fn scatter_binomial(rank: usize, root: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let levels = path(rank, p, root);
    let mut s = Schedule::new();
    let mine = output(0, counts[rank]);
    // 1. Where my interval's blocks live: root's Input, or scratch (or my
    //    Output directly when my interval is just me).
    let recv_level = levels.iter().find(|lv| lv.my_rep == rank && lv.rep != rank);
    let (buf, base) = match recv_level {
        None => (Buf::Input, 0),
        Some(lv) if lv.my_hi - lv.my_lo == 1 => (Buf::Output, d[rank]),
        Some(lv) => (
            Buf::Temp(s.add_temp(d[lv.my_hi] - d[lv.my_lo])),
            d[lv.my_lo],
        ),
    };
    let range = |lo: usize, hi: usize| Region::new(buf, d[lo] - base, d[hi] - d[lo]);
    // 2. Top-down: receive my interval once, then hand each other half its part.
    for lv in &levels {
        if lv.rep == rank {
            s.push(vec![send(lv.other_rep, range(lv.other_lo, lv.other_hi))]);
        } else if lv.my_rep == rank {
            s.push(vec![recv(lv.rep, range(lv.my_lo, lv.my_hi))]);
        }
    }
    // 3. Own block to Output.
    if buf != Buf::Output {
        s.push_local(copy(range(rank, rank + 1), mine));
    }
    s
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    ts * f64::from(ceil_log2(p)) + tw * (m_bytes * p.saturating_sub(1)) as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Scatter,
    algorithm: Algorithm::Binomial,
    generate: |x| scatter_binomial(x.me, x.root, x.counts),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[
        TopologyKind::Hypercube,
        TopologyKind::Ring,
        TopologyKind::BiRing,
        TopologyKind::Mesh2D,
    ],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_scatter, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_scatter(&counts, root, &|r| scatter_binomial(r, root, &counts))
                    .unwrap_or_else(|e| panic!("root={root} counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(4, 10, 1.0, 1.0), 32.0);
    }
}
