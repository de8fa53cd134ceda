//! Linear (chain) scan, pipelined in segments: the prefix flows from the
//! first participant to the last.
//!
//! Participant v (traversal order) receives the inclusive prefix of v-1,
//! combines its own value on the right and passes the new prefix to v+1;
//! with several segments, segment j+1 is received while segment j is passed
//! on. Source: Kumar (seed 001), prefix sums on a ring/linear array; CMMD
//! scans (seed 004) move "from processor to processor, in processor
//! identifier order".
//!
//! cost: (k + p - 2)·(ts + tw·m/k) for k segments (p ≥ 2)

use crate::bcast_chain::segments;
use crate::entry::Entry;
use crate::scan_recursive_doubling::vidx;
use crate::schedule::{copy, recv, reduce, send, Buf, Op, Region, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective, Direction, Inclusion};

/// Schedule for `rank` of `p` (buffers as in
/// [`crate::scan_recursive_doubling()`]), in segments of `segment` elements
/// (0 is taken as 1).
pub fn scan_chain(
    rank: usize,
    p: usize,
    count: usize,
    dir: Direction,
    inclusion: Inclusion,
    segment: usize,
) -> Schedule {
    let mut s = Schedule::new();
    let v = vidx(rank, p, dir);
    let segs = segments(count, segment);
    let first = v == 0;
    let last = v + 1 == p;
    let prev = if first { 0 } else { vidx(v - 1, p, dir) };
    let next = if last { 0 } else { vidx(v + 1, p, dir) };
    let at = |b: Buf, g: &Region| Region::new(b, g.offset, g.len);
    let excl = inclusion == Inclusion::Exclusive;
    // The prefix I pass on lives in Output (inclusive) or in scratch (exclusive).
    let fwd = if excl && !first && !last {
        Buf::Temp(s.add_temp(count))
    } else if excl && first {
        Buf::Input
    } else {
        Buf::Output
    };
    let incoming = if excl {
        Buf::Output
    } else {
        Buf::Temp(s.add_temp(count))
    };
    // Local work once segment g has arrived (or at once on the first).
    let finish = |g: &Region| -> Vec<Op> {
        match (excl, first) {
            (false, true) => vec![copy(at(Buf::Input, g), at(Buf::Output, g))],
            (false, false) => vec![
                copy(at(Buf::Input, g), at(Buf::Output, g)),
                reduce(at(incoming, g), at(Buf::Output, g), true),
            ],
            (true, true) => vec![],
            (true, false) if last => vec![],
            (true, false) => vec![
                copy(at(Buf::Output, g), at(fwd, g)),
                reduce(at(Buf::Input, g), at(fwd, g), false),
            ],
        }
    };
    // 1. Round j: receive segment j, pass on segment j-1.
    let n = segs.len();
    for j in 0..=n {
        let mut ops = Vec::new();
        if j < n && !first {
            ops.push(recv(prev, at(incoming, &segs[j])));
        }
        if j > 0 && !last {
            ops.push(send(next, at(fwd, &segs[j - 1])));
        }
        if j < n {
            ops.extend(finish(&segs[j]));
        }
        s.push(ops);
    }
    s
}

/// Cost with `k` segments.
pub fn cost_segments(p: usize, m_bytes: usize, ts: f64, tw: f64, k: usize) -> f64 {
    crate::bcast_chain::cost_segments(p, m_bytes, ts, tw, k)
}

/// Cost with the best segment count.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    crate::bcast_chain::cost(p, m_bytes, ts, tw)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Scan,
    algorithm: Algorithm::Chain,
    generate: |x| scan_chain(x.me, x.p, x.count, x.direction, x.inclusion, x.segment),
    cost,
    // Each participant combines the vector once.
    combined: |_, m| m as f64,
    commutative_only: false,
    pipelined: true,
    topologies: &[TopologyKind::Ring, TopologyKind::BiRing],
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
                    for seg in [1, 3, 100000] {
                        check_scan(p, count, dir, inc, &|r| {
                            scan_chain(r, p, count, dir, inc, seg)
                        })
                        .unwrap_or_else(|e| {
                            panic!("p={p} count={count} {dir:?} {inc:?} seg={seg}: {e}")
                        });
                    }
                }
            }
        }
        assert_eq!(cost_segments(3, 10, 1.0, 1.0, 1), 22.0);
    }
}
