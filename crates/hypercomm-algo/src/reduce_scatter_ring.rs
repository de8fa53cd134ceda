//! Ring reduce-scatter (variable block sizes).
//!
//! Each participant copies its input vector to scratch; in p-1 steps it
//! passes a partial block to its ring successor and adds its own
//! contribution to the block arriving from its predecessor, so that after
//! the last step it holds its own block fully reduced. **Requires a
//! commutative operator.** Source: Patarasuk & Yuan 2009 (bandwidth-optimal
//! ring), MPI practice; ring orders from PICL `setarc0` (seed 003).
//!
//! cost: (p-1)·ts + ((p-1)/p)·tw·m, m = the whole vector

use crate::entry::{combines_share, Entry};
use crate::ring::{reduce_scatter_phase, RingOrder};
use crate::schedule::{copy, displs, input, output, temp, Buf, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()`: Input = the full vector (sum of
/// `counts`), Output = this rank's block (`counts[rank]` elements) of the
/// elementwise reduction. Commutative operators only.
pub fn reduce_scatter_ring(rank: usize, counts: &[usize], order: RingOrder) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let total = d[p];
    let mut s = Schedule::new();
    let full = s.add_temp(total);
    let tmp = s.add_temp(counts.iter().copied().max().unwrap_or(0));
    // 1. Scratch = my contribution.
    s.push(vec![copy(input(0, total), temp(full, 0, total))]);
    // 2. Ring reduce-scatter; position q owns the block of rank_at(q).
    let block = |q: usize| {
        let r = order.rank_at(q, p);
        temp(full, d[r], counts[r])
    };
    reduce_scatter_phase(&mut s, rank, p, order, &block, Buf::Temp(tmp));
    // 3. My block to Output.
    s.push_local(copy(
        temp(full, d[rank], counts[rank]),
        output(0, counts[rank]),
    ));
    s
}

/// Cost in the seed-001 model (m = bytes of the whole vector).
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let f = (p - 1) as f64;
    f * ts + f / p as f64 * tw * m_bytes as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::ReduceScatter,
    algorithm: Algorithm::Ring,
    generate: |x| reduce_scatter_ring(x.me, x.counts, x.order),
    cost,
    combined: combines_share,
    commutative_only: true,
    pipelined: false,
    topologies: &[TopologyKind::Ring, TopologyKind::BiRing],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce_scatter, standard_cases, varied_counts, Order};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                for order in [
                    RingOrder::NATURAL,
                    RingOrder {
                        gray: true,
                        forward: false,
                    },
                ] {
                    check_reduce_scatter(&counts, Order::Commutative, &|r| {
                        reduce_scatter_ring(r, &counts, order)
                    })
                    .unwrap_or_else(|e| panic!("counts={counts:?}: {e}"));
                }
            }
        }
        assert_eq!(cost(4, 400, 1.0, 1.0), 3.0 + 300.0);
    }
}
