//! Star barrier: every participant reports to participant 0, which then
//! releases everyone (PICL's full-connectivity setting applied to
//! `barrier0`; the fan-in/fan-out of shared-memory barriers in MPI
//! libraries).
//!
//! Round 1: each rank r > 0 sends an empty message to 0, and 0 receives
//! one from each. Round 2: 0 sends one to each, and each receives it.
//! Participant 0 handles 2(p-1) messages, the others two. It loses to the
//! dissemination barrier when every rank has a core, and wins when ranks
//! outnumber cores: a rank must be scheduled once per round to move on, so
//! with two rounds each rank runs about twice per barrier instead of once
//! per each of the ⌈log2 p⌉ rounds (16 thread ranks on 2 cores: about 33 µs
//! against 50 µs).
//!
//! cost: 2(p-1)·ts (the root's messages, one after another)

use crate::entry::{combines_nothing, Entry};
use crate::schedule::{output, recv, send, Schedule};
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`. Messages are zero-length regions of Output.
pub fn barrier_star(rank: usize, p: usize) -> Schedule {
    let mut s = Schedule::new();
    if p < 2 {
        return s;
    }
    if rank == 0 {
        // 1. Hear from everyone; 2. release everyone.
        s.push((1..p).map(|q| recv(q, output(0, 0))).collect());
        s.push((1..p).map(|q| send(q, output(0, 0))).collect());
    } else {
        s.push(vec![send(0, output(0, 0))]);
        s.push(vec![recv(0, output(0, 0))]);
    }
    s
}

/// Cost in the seed-001 model (message length is zero).
pub fn cost(p: usize, _m_bytes: usize, ts: f64, _tw: f64) -> f64 {
    ts * 2.0 * p.saturating_sub(1) as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Barrier,
    algorithm: Algorithm::Star,
    generate: |x| barrier_star(x.me, x.p),
    cost,
    combined: combines_nothing,
    commutative_only: false,
    pipelined: false,
    topologies: &[],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_barrier;

    #[test]
    fn all_sizes() {
        for p in 1..=33 {
            check_barrier(p, &|r| barrier_star(r, p)).unwrap();
        }
        assert_eq!(cost(8, 0, 2.0, 1.0), 28.0);
        assert_eq!(cost(1, 0, 2.0, 1.0), 0.0);
    }

    #[test]
    fn root_does_all_the_talking() {
        let s = barrier_star(0, 5);
        assert_eq!(s.rounds.len(), 2);
        assert!(s.rounds.iter().all(|r| r.ops.len() == 4));
        let s = barrier_star(3, 5);
        assert!(s.rounds.iter().all(|r| r.ops.len() == 1));
    }
}
