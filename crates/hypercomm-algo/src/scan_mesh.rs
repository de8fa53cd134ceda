//! Prefix sums on a 2-D mesh: an all-to-all pass along the rows, then one
//! along the columns, with messages of fixed length (Kumar's prefix sums,
//! done the way of the mesh all-to-all broadcast, Figure 3.11).
//!
//! Participants are numbered in traversal order (rank for upward scans,
//! p−1−rank for downward ones) and form the mesh of [`mesh_dims`]`(p)` rows
//! and columns, row by row; the reversed numbering is the same mesh turned
//! round, so neighbours stay neighbours. Phase 1, cols−1 steps: every node
//! passes to its right-hand neighbour (with wrap-around) the value it
//! received in the step before (its own first) and receives one from the
//! left, which comes from the column s places to its left in step s. It
//! folds those from columns left of it into its row prefix and those from
//! its right into the rest of the row, so it ends with its row's total as
//! well. Phase 2, rows−1 steps: the same along the columns with the row
//! totals; a node folds the totals of the rows above it into its offset.
//! Result: offset ⊕ row prefix (⊕ own value when inclusive). Every message
//! has the length of the vector and goes to a mesh neighbour; every fold
//! keeps the traversal order, so any associative operator works. Source:
//! Kumar et al. (seed 001), prefix sums (Program 3.7 on the hypercube; on
//! the mesh as its all-to-all broadcast with accumulation instead of
//! concatenation): 2·(ts + tw·m)·(√p − 1) on a square mesh.
//!
//! cost: (ts + tw·m)·(rows + cols − 2)

use crate::entry::{Entry, Params};
use crate::scan_recursive_doubling::vidx;
use crate::schedule::{copy, input, output, recv, reduce, send, temp, Region, Schedule};
use crate::topology::{mesh_dims, TopologyKind};
use crate::{Algorithm, Collective, Direction, Inclusion};

/// A fold being built from pieces that arrive in order, each to be put on
/// the left of what is there (`acc = piece ⊕ acc`).
struct Prepend {
    acc: Region,
    started: bool,
}

impl Prepend {
    fn new(s: &mut Schedule, count: usize) -> Prepend {
        Prepend {
            acc: temp(s.add_temp(count), 0, count),
            started: false,
        }
    }

    /// The local op that puts `piece` on the left.
    fn put(&mut self, piece: Region) -> crate::Op {
        if std::mem::replace(&mut self.started, true) {
            reduce(piece, self.acc, true)
        } else {
            copy(piece, self.acc)
        }
    }
}

/// One ring pass of `steps` steps: send to `next(v)`, receive from
/// `prev(v)`; `first` is what goes out in step 1; `keep(s, got)` gives the
/// local ops for the value received in step s (1-based).
fn pass(
    s: &mut Schedule,
    steps: usize,
    first: Region,
    to: usize,
    from: usize,
    keep: &mut dyn FnMut(usize, Region) -> Vec<crate::Op>,
) {
    let count = first.len;
    let bufs = [
        temp(s.add_temp(count), 0, count),
        temp(s.add_temp(count), 0, count),
    ];
    let mut out = first;
    for st in 1..=steps {
        let got = bufs[st % 2];
        let mut ops = vec![send(to, out), recv(from, got)];
        ops.extend(keep(st, got));
        s.push(ops);
        out = got;
    }
}

/// Schedule for `rank` of `p`: Input and Output have `count` elements. For
/// an exclusive scan the first participant in traversal order does not
/// touch Output.
pub fn scan_mesh(
    rank: usize,
    p: usize,
    count: usize,
    dir: Direction,
    inclusion: Inclusion,
) -> Schedule {
    assert!(rank < p);
    let (rows, cols) = mesh_dims(p);
    let v = vidx(rank, p, dir);
    let (r, c) = (v / cols, v % cols);
    let real = |vr: usize, vc: usize| vidx(vr * cols + vc, p, dir);
    let own = input(0, count);
    let mut s = Schedule::new();
    // 1. Along the row: the prefix of the columns left of me, and the
    //    fold of those right of me (they arrive from the far right inwards).
    let mut left = Prepend::new(&mut s, count);
    let mut right = Prepend::new(&mut s, count);
    pass(
        &mut s,
        cols - 1,
        own,
        real(r, (c + 1) % cols),
        real(r, (c + cols - 1) % cols),
        &mut |st, got| {
            if st <= c {
                vec![left.put(got)]
            } else {
                vec![right.put(got)]
            }
        },
    );
    // The row total: left ⊕ own ⊕ right.
    let total = temp(s.add_temp(count), 0, count);
    let mut ops = vec![copy(own, total)];
    if left.started {
        ops.push(reduce(left.acc, total, true));
    }
    if right.started {
        ops.push(reduce(right.acc, total, false));
    }
    s.push(ops);
    // 2. Along the column with the row totals: the offset of the rows above.
    let mut above = Prepend::new(&mut s, count);
    pass(
        &mut s,
        rows - 1,
        total,
        real((r + 1) % rows, c),
        real((r + rows - 1) % rows, c),
        &mut |st, got| {
            if st <= r {
                vec![above.put(got)]
            } else {
                vec![]
            }
        },
    );
    // 3. Result: above ⊕ left (⊕ own).
    let out = output(0, count);
    let mut parts: Vec<Region> = Vec::new();
    if above.started {
        parts.push(above.acc);
    }
    if left.started {
        parts.push(left.acc);
    }
    if inclusion == Inclusion::Inclusive {
        parts.push(own);
    }
    if let Some((&last, rest)) = parts.split_last() {
        let mut ops = vec![copy(last, out)];
        ops.extend(rest.iter().rev().map(|&g| reduce(g, out, true)));
        s.push(ops);
    }
    s
}

/// Cost in the seed-001 model for an m-byte vector.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    let (rows, cols) = mesh_dims(p);
    (rows + cols).saturating_sub(2) as f64 * (ts + tw * m_bytes as f64)
}

fn generate(x: &Params<'_>) -> Schedule {
    scan_mesh(x.me, x.p, x.count, x.direction, x.inclusion)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Scan,
    algorithm: Algorithm::named("mesh"),
    generate,
    cost,
    // Each participant combines the vector once per step.
    combined: |p, m| {
        let (rows, cols) = mesh_dims(p);
        m as f64 * (rows + cols).saturating_sub(2) as f64
    },
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Mesh2D],
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
                    check_scan(p, count, dir, inc, &|r| scan_mesh(r, p, count, dir, inc))
                        .unwrap_or_else(|e| panic!("p={p} count={count} {dir:?} {inc:?}: {e}"));
                }
            }
        }
        assert_eq!(cost(16, 10, 1.0, 1.0), 66.0);
    }
}
