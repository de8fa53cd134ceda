//! Bruck all-to-all (fixed count): ⌈log2 p⌉ steps, for short blocks.
//!
//! 1. Rotate: scratch position j holds the block for `rank + j`.
//! 2. For each bit k: pack the blocks whose position has bit k set, send
//!    them to `rank + 2^k`, receive the same positions from `rank - 2^k`,
//!    unpack. A block at position j thus moves j ranks in total and arrives
//!    at its destination, where position j holds the block from `rank - j`.
//! 3. Output block i = scratch position `rank - i`.
//!
//! Source: Bruck et al. 1997; MPICH `alltoall_intra_brucks.c`.
//!
//! cost: ⌈log2 p⌉·(ts + tw·m·⌈p/2⌉), m bytes per block (upper bound: a step
//! moves at most ⌈p/2⌉ blocks)

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, copy, input, output, recv, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`: Input = p blocks of `count` (block q goes to
/// q), Output = p blocks of `count` (block q comes from q).
pub fn alltoall_bruck(rank: usize, p: usize, count: usize) -> Schedule {
    let mut s = Schedule::new();
    let t = s.add_temp(p * count);
    let half = p.div_ceil(2);
    let pack = s.add_temp(half * count);
    let unpack = s.add_temp(half * count);
    let blk = |j: usize| temp(t, j * count, count);
    // 1. Rotation.
    let mut ops = Vec::new();
    for j in 0..p {
        ops.push(copy(input(((rank + j) % p) * count, count), blk(j)));
    }
    s.push(ops);
    // 2. One exchange per bit.
    let mut dist = 1;
    while dist < p {
        let js: Vec<usize> = (0..p).filter(|j| j & dist != 0).collect();
        for (x, &j) in js.iter().enumerate() {
            s.push_local(copy(blk(j), temp(pack, x * count, count)));
        }
        let n = js.len() * count;
        let mut ops = vec![
            send((rank + dist) % p, temp(pack, 0, n)),
            recv((rank + p - dist) % p, temp(unpack, 0, n)),
        ];
        for (x, &j) in js.iter().enumerate() {
            ops.push(copy(temp(unpack, x * count, count), blk(j)));
        }
        s.push(ops);
        dist *= 2;
    }
    // 3. Inverse rotation.
    for i in 0..p {
        s.push_local(copy(blk((rank + p - i) % p), output(i * count, count)));
    }
    s
}

/// Cost in the seed-001 model, m bytes per block.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    f64::from(ceil_log2(p)) * (ts + tw * (m_bytes * p.div_ceil(2)) as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Alltoall,
    algorithm: Algorithm::Bruck,
    generate: |x| alltoall_bruck(x.me, x.p, x.count),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Hypercube, TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_alltoall, standard_cases};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            if count > 64 {
                continue;
            }
            let fixed = vec![vec![count; p]; p];
            check_alltoall(&fixed, &|r| alltoall_bruck(r, p, count))
                .unwrap_or_else(|e| panic!("p={p} count={count}: {e}"));
        }
        assert_eq!(cost(8, 10, 1.0, 1.0), 3.0 * 41.0);
    }
}
