//! Recursive-doubling scan (inclusive or exclusive, upward or downward).
//!
//! Participants are numbered in traversal order (rank for upward, p-1-rank
//! for downward). In step k each exchanges its partial (the combination of
//! its aligned group of 2^k) with partner `v ^ 2^k` when it exists; a
//! participant adds a partial received from a *lower* partner on the left
//! of both its partial and its result, one from a higher partner only to
//! its partial. Works for any p and any associative operator; for downward
//! scans the combine order is the traversal order, x(p-1) ⊕ … ⊕ x(n).
//! Source: Hillis & Steele 1986 / MPICH `scan_intra_recursive_doubling.c`
//! and `exscan_intra_recursive_doubling.c`; Kumar (seed 001) prefix sums on
//! a hypercube; CMMD scans (seed 004).
//!
//! cost: (ts + tw·m)·⌈log2 p⌉

use crate::entry::{combines_per_step, Entry};
use crate::schedule::{ceil_log2, copy, input, output, recv, reduce, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};
use crate::{Direction, Inclusion};

/// Traversal index of `rank` (and back: the map is an involution).
pub(crate) fn vidx(rank: usize, p: usize, dir: Direction) -> usize {
    match dir {
        Direction::Upward => rank,
        Direction::Downward => p - 1 - rank,
    }
}

/// Schedule for `rank` of `p`: Input and Output have `count` elements. For
/// an exclusive scan the first participant in traversal order does not
/// touch Output.
pub fn scan_recursive_doubling(
    rank: usize,
    p: usize,
    count: usize,
    dir: Direction,
    inclusion: Inclusion,
) -> Schedule {
    let mut s = Schedule::new();
    let v = vidx(rank, p, dir);
    let all_in = input(0, count);
    let out = output(0, count);
    let partial = temp(s.add_temp(count), 0, count);
    let tmp = temp(s.add_temp(count), 0, count);
    // 1. partial = own value; an inclusive result starts from it too.
    let mut have_out = inclusion == Inclusion::Inclusive;
    let mut ops = vec![copy(all_in, partial)];
    if have_out {
        ops.push(copy(all_in, out));
    }
    s.push(ops);
    // 2. Exchange partials with v ^ 2^k.
    let mut mask = 1;
    while mask < p {
        let dv = v ^ mask;
        if dv < p {
            let dst = vidx(dv, p, dir);
            let mut ops = vec![send(dst, partial), recv(dst, tmp)];
            if dv < v {
                ops.push(reduce(tmp, partial, true));
                if have_out {
                    ops.push(reduce(tmp, out, true));
                } else {
                    ops.push(copy(tmp, out));
                    have_out = true;
                }
            } else {
                ops.push(reduce(tmp, partial, false));
            }
            s.push(ops);
        }
        mask <<= 1;
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    (ts + tw * m_bytes as f64) * f64::from(ceil_log2(p))
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Scan,
    algorithm: Algorithm::RecursiveDoubling,
    generate: |x| scan_recursive_doubling(x.me, x.p, x.count, x.direction, x.inclusion),
    cost,
    combined: combines_per_step,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Hypercube, TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_scan, standard_cases};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for dir in [Direction::Upward, Direction::Downward] {
                for inc in [Inclusion::Inclusive, Inclusion::Exclusive] {
                    check_scan(p, count, dir, inc, &|r| {
                        scan_recursive_doubling(r, p, count, dir, inc)
                    })
                    .unwrap_or_else(|e| panic!("p={p} count={count} {dir:?} {inc:?}: {e}"));
                }
            }
        }
        assert_eq!(cost(5, 10, 1.0, 1.0), 33.0);
    }
}
