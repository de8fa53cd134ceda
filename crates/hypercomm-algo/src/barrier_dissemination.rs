//! Dissemination barrier (Hensgen, Finkel, Manber 1988).
//!
//! In round k every participant sends an empty message to `rank + 2^k` and
//! receives one from `rank - 2^k` (mod p). After ⌈log2 p⌉ rounds each rank
//! has heard, directly or transitively, from every other rank; works for any
//! p. Source: the classic paper (gloo and MPICH use it); PICL `sync0` /
//! `barrier0` and CMMD `sync_with_nodes` are the seeds' barriers.
//!
//! cost: ts·⌈log2 p⌉

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{ceil_log2, output, recv, send, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`. Messages are zero-length regions of Output.
pub fn barrier_dissemination(rank: usize, p: usize) -> Schedule {
    let mut s = Schedule::new();
    // 1. For each distance 1, 2, 4, … < p: send to rank+d, receive from rank-d.
    let mut d = 1;
    while d < p {
        s.push(vec![
            send((rank + d) % p, output(0, 0)),
            recv((rank + p - d) % p, output(0, 0)),
        ]);
        d *= 2;
    }
    s
}

/// Cost in the seed-001 model (message length is zero).
pub fn cost(p: usize, _m_bytes: usize, ts: f64, _tw: f64) -> f64 {
    ts * f64::from(ceil_log2(p))
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Barrier,
    algorithm: Algorithm::Dissemination,
    generate: |x| barrier_dissemination(x.me, x.p),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &TopologyKind::ALL,
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_barrier;

    #[test]
    fn all_sizes() {
        for p in 1..=33 {
            check_barrier(p, &|r| barrier_dissemination(r, p)).unwrap();
        }
        assert_eq!(cost(8, 0, 2.0, 1.0), 6.0);
        assert_eq!(cost(9, 0, 1.0, 1.0), 4.0);
    }
}
