//! Bruck allgather(v): ⌈log2 p⌉ steps for any p.
//!
//! Work in a scratch buffer where position j holds the block of rank
//! `rank + j` (mod p). In step k each participant sends its first
//! min(2^k, p-2^k) blocks to `rank - 2^k` and receives as many from
//! `rank + 2^k` into positions 2^k…; the blocks concerned are contiguous in
//! the rotated layout, so each step is one message even with variable
//! counts. A final rotation (two copies) puts the blocks in rank order.
//! Source: Bruck, Ho, Kipnis, Upfal, Weathersby 1997; MPICH
//! `allgather_intra_brucks.c`.
//!
//! cost: ts·⌈log2 p⌉ + tw·m·(p-1) (m bytes per rank)

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, copy, displs, input, output, recv, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `counts.len()` (buffers as in
/// [`crate::allgather_recursive_doubling()`]).
pub fn allgather_bruck(rank: usize, counts: &[usize]) -> Schedule {
    let p = counts.len();
    let d = displs(counts);
    let total = d[p];
    let mut s = Schedule::new();
    // Offsets of the rotated layout.
    let mut roff = vec![0usize];
    for j in 0..p {
        roff.push(roff[j] + counts[(rank + j) % p]);
    }
    let t = s.add_temp(total);
    let rot = |a: usize, b: usize| temp(t, roff[a], roff[b] - roff[a]);
    // 1. Own block at position 0.
    s.push(vec![copy(input(0, counts[rank]), rot(0, 1))]);
    // 2. Doubling steps.
    let mut dist = 1;
    while dist < p {
        let n = dist.min(p - dist);
        s.push(vec![
            send((rank + p - dist) % p, rot(0, n)),
            recv((rank + dist) % p, rot(dist, dist + n)),
        ]);
        dist *= 2;
    }
    // 3. Rotate back: positions 0..p-rank are ranks rank..p, the rest 0..rank.
    s.push_local(copy(rot(0, p - rank), output(d[rank], total - d[rank])));
    s.push_local(copy(rot(p - rank, p), output(0, d[rank])));
    s
}

/// Cost in the seed-001 model, m bytes per rank.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    ts * f64::from(ceil_log2(p)) + tw * (m_bytes * p.saturating_sub(1)) as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allgather,
    algorithm: Algorithm::Bruck,
    generate: |x| allgather_bruck(x.me, x.counts),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allgather, standard_cases, varied_counts};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for counts in [vec![count; p], varied_counts(p, count)] {
                check_allgather(&counts, &|r| allgather_bruck(r, &counts))
                    .unwrap_or_else(|e| panic!("counts={counts:?}: {e}"));
            }
        }
        assert_eq!(cost(5, 10, 1.0, 1.0), 43.0);
    }
}
