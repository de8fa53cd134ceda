//! Binomial-tree gather(v) in rank order, any root.
//!
//! Blocks climb the canonical interval tree ([`crate::tree`]): every subtree
//! is a contiguous interval of ranks, so a representative receives the
//! adjacent interval's blocks straight into the right place of a buffer laid
//! out like the final concatenation, and forwards its whole interval as one
//! message. The root assembles the result directly in Output. Source: seed
//! 000 GCAT (spanning-tree concatenation; we always use rank order, see
//! SPEC.md section 11); CMMD `gather_from_nodes` (seed 004).
//!
//! cost: ts·⌈log2 p⌉ + tw·m·(p-1) for m bytes per rank

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, copy, displs, input, output, recv, send, Region, Schedule};
use crate::topology::TopologyKind;
use crate::tree::path;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()`: Input = my block (`counts[rank]`
/// elements), root's Output = all blocks in rank order. Non-roots do not
/// touch Output.
pub fn gather_binomial(rank: usize, root: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let levels = path(rank, p, root);
    let mut s = Schedule::new();
    let own = input(0, counts[rank]);
    let receives = rank == root || levels.last().is_some_and(|lv| lv.rep == rank);
    // 1. My accumulation buffer covers the top interval I represent.
    let (buf, base) = if rank == root {
        (crate::Buf::Output, 0)
    } else if receives {
        let top = levels
            .iter()
            .find(|lv| lv.my_rep == rank && lv.rep != rank)
            .expect("non-root sends once");
        let t = s.add_temp(d[top.my_hi] - d[top.my_lo]);
        (crate::Buf::Temp(t), d[top.my_lo])
    } else {
        (crate::Buf::Input, 0)
    };
    let range = |lo: usize, hi: usize| Region::new(buf, d[lo] - base, d[hi] - d[lo]);
    let mut first = true;
    // 2. Bottom-up: receive the other half while I represent the interval,
    //    then send my interval up.
    for lv in levels.iter().rev() {
        if lv.rep == rank {
            let mut ops = vec![recv(lv.other_rep, range(lv.other_lo, lv.other_hi))];
            if first {
                ops.push(copy(own, range(rank, rank + 1)));
                first = false;
            }
            s.push(ops);
        } else {
            let src = if receives {
                range(lv.my_lo, lv.my_hi)
            } else {
                own
            };
            s.push(vec![send(lv.rep, src)]);
            break;
        }
    }
    // 3. p == 1.
    if rank == root && first {
        s.push(vec![copy(own, output(0, counts[rank]))]);
    }
    s
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    ts * f64::from(ceil_log2(p)) + tw * (m_bytes * p.saturating_sub(1)) as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Gather,
    algorithm: Algorithm::Binomial,
    generate: |x| gather_binomial(x.me, x.root, x.counts),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Hypercube, TopologyKind::Mesh2D],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_gather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_gather(&counts, root, &|r| gather_binomial(r, root, &counts))
                    .unwrap_or_else(|e| panic!("root={root} counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(8, 10, 1.0, 1.0), 73.0);
    }
}
