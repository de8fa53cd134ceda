//! Symbolic data (lists of contributions, concatenation as the operator)
//! and one checker per collective that runs a generator's schedules
//! through [`super::simulate`](fn@super::simulate) and compares with a serial computation.

use super::simulate::{simulate, Buffers, Init};
use crate::schedule::{displs, Schedule};
use crate::{Direction, Inclusion};
use std::fmt::Debug;

/// Symbolic element: the ordered list of `(rank, index)` contributions.
pub type Sym = Vec<(u32, u32)>;

/// The symbolic input element `index` of `rank`.
pub fn sym(rank: usize, index: usize) -> Option<Sym> {
    Some(vec![(rank as u32, index as u32)])
}

/// The symbolic operator: concatenation (associative, not commutative).
pub fn concat(a: &Sym, b: &Sym) -> Sym {
    let mut v = Vec::with_capacity(a.len() + b.len());
    v.extend_from_slice(a);
    v.extend_from_slice(b);
    v
}

/// How a reduction result is compared with the serial fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Exactly the fold in the collective's order (any associative operator).
    Exact,
    /// The same contributions in any order (algorithm requires a commutative
    /// operator).
    Commutative,
}

fn same(order: Order, got: &Option<Sym>, want: &Option<Sym>) -> bool {
    match (order, got, want) {
        (Order::Exact, g, w) => g == w,
        (Order::Commutative, Some(g), Some(w)) => {
            let mut g = g.clone();
            let mut w = w.clone();
            g.sort_unstable();
            w.sort_unstable();
            g == w
        }
        (_, g, w) => g == w,
    }
}

fn compare(
    what: &str,
    order: Order,
    got: &[Buffers<Sym>],
    want: &[Vec<Option<Sym>>],
) -> Result<(), String> {
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        if g.output.len() != w.len() {
            return Err(format!(
                "{what}: rank {r}: output length {} != {}",
                g.output.len(),
                w.len()
            ));
        }
        for (i, (x, y)) in g.output.iter().zip(w).enumerate() {
            if !same(order, x, y) {
                return Err(format!(
                    "{what}: rank {r} output[{i}] = {x:?}, expected {y:?}"
                ));
            }
        }
    }
    Ok(())
}

fn run(
    what: &str,
    p: usize,
    gen: &dyn Fn(usize) -> Schedule,
    init: Init<Sym>,
) -> Result<Vec<Buffers<Sym>>, String> {
    let schedules: Vec<Schedule> = (0..p).map(gen).collect();
    simulate(&schedules, init, &concat).map_err(|e| format!("{what}: {e}"))
}

fn fold(ranks: impl Iterator<Item = usize>, index: usize) -> Option<Sym> {
    let v: Sym = ranks.map(|r| (r as u32, index as u32)).collect();
    Some(v)
}

/// Barrier: terminates, and every rank has heard from every rank.
pub fn check_barrier(p: usize, gen: &dyn Fn(usize) -> Schedule) -> Result<(), String> {
    let init = (0..p).map(|_| (vec![], vec![])).collect();
    let out = run("barrier", p, gen, init)?;
    for (r, b) in out.iter().enumerate() {
        if let Some(q) = b.heard_from.iter().position(|h| !h) {
            return Err(format!(
                "barrier: rank {r} finished without hearing from {q}"
            ));
        }
    }
    Ok(())
}

/// Broadcast: root's Output (count elements) ends up in every Output.
pub fn check_bcast(
    p: usize,
    root: usize,
    count: usize,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let init = (0..p)
        .map(|r| {
            let out = (0..count)
                .map(|i| if r == root { sym(root, i) } else { None })
                .collect();
            (vec![], out)
        })
        .collect();
    let out = run("bcast", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|_| (0..count).map(|i| sym(root, i)).collect())
        .collect();
    compare("bcast", Order::Exact, &out, &want)
}

fn reduce_inputs(p: usize, count: usize) -> Vec<Vec<Option<Sym>>> {
    (0..p)
        .map(|r| (0..count).map(|i| sym(r, i)).collect())
        .collect()
}

/// Reduce to `root`: root's Output = x0 ⊕ x1 ⊕ … ⊕ x(p-1) elementwise.
/// Non-roots get an Output of length 0 (they must not touch it).
pub fn check_reduce(
    p: usize,
    root: usize,
    count: usize,
    order: Order,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let init = reduce_inputs(p, count)
        .into_iter()
        .enumerate()
        .map(|(r, x)| (x, vec![None; if r == root { count } else { 0 }]))
        .collect();
    let out = run("reduce", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|r| {
            if r == root {
                (0..count).map(|i| fold(0..p, i)).collect()
            } else {
                vec![]
            }
        })
        .collect();
    compare("reduce", order, &out, &want)
}

/// Allreduce: every Output = x0 ⊕ … ⊕ x(p-1).
pub fn check_allreduce(
    p: usize,
    count: usize,
    order: Order,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let init = reduce_inputs(p, count)
        .into_iter()
        .map(|x| (x, vec![None; count]))
        .collect();
    let out = run("allreduce", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|_| (0..count).map(|i| fold(0..p, i)).collect())
        .collect();
    compare("allreduce", order, &out, &want)
}

/// Reduce-scatter: Input = full vector (sum of counts), rank r's Output =
/// its block (`counts[r]` elements) of the elementwise reduction.
pub fn check_reduce_scatter(
    counts: &[usize],
    order: Order,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let p = counts.len();
    let d = displs(counts);
    let total = d[p];
    let init = reduce_inputs(p, total)
        .into_iter()
        .enumerate()
        .map(|(r, x)| (x, vec![None; counts[r]]))
        .collect();
    let out = run("reduce_scatter", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|r| (d[r]..d[r + 1]).map(|i| fold(0..p, i)).collect())
        .collect();
    compare("reduce_scatter", order, &out, &want)
}

/// Gather(v) to `root`: root's Output = concatenation of the Inputs in rank
/// order; non-roots have an Output of length 0.
pub fn check_gather(
    counts: &[usize],
    root: usize,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let p = counts.len();
    let d = displs(counts);
    let init = (0..p)
        .map(|r| {
            let x = (0..counts[r]).map(|i| sym(r, i)).collect();
            (x, vec![None; if r == root { d[p] } else { 0 }])
        })
        .collect();
    let out = run("gather", p, gen, init)?;
    let all: Vec<Option<Sym>> = (0..p)
        .flat_map(|r| (0..counts[r]).map(move |i| sym(r, i)))
        .collect();
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|r| if r == root { all.clone() } else { vec![] })
        .collect();
    compare("gather", Order::Exact, &out, &want)
}

/// Allgather(v): every Output = concatenation of the Inputs in rank order.
pub fn check_allgather(counts: &[usize], gen: &dyn Fn(usize) -> Schedule) -> Result<(), String> {
    let p = counts.len();
    let d = displs(counts);
    let init = (0..p)
        .map(|r| {
            let x = (0..counts[r]).map(|i| sym(r, i)).collect();
            (x, vec![None; d[p]])
        })
        .collect();
    let out = run("allgather", p, gen, init)?;
    let all: Vec<Option<Sym>> = (0..p)
        .flat_map(|r| (0..counts[r]).map(move |i| sym(r, i)))
        .collect();
    let want: Vec<Vec<Option<Sym>>> = (0..p).map(|_| all.clone()).collect();
    compare("allgather", Order::Exact, &out, &want)
}

/// Scatter(v) from `root`: root's Input = concatenation of all blocks; rank
/// r's Output = block r. Non-roots have an Input of length 0.
pub fn check_scatter(
    counts: &[usize],
    root: usize,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let p = counts.len();
    let d = displs(counts);
    let init = (0..p)
        .map(|r| {
            let x = if r == root {
                (0..d[p]).map(|i| sym(root, i)).collect()
            } else {
                vec![]
            };
            (x, vec![None; counts[r]])
        })
        .collect();
    let out = run("scatter", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|r| (d[r]..d[r + 1]).map(|i| sym(root, i)).collect())
        .collect();
    compare("scatter", Order::Exact, &out, &want)
}

/// All-to-all(v): `m[s][d]` elements go from `s` to `d`. Rank s's Input is
/// the blocks for d = 0..p in order; rank d's Output is the blocks from
/// s = 0..p in order.
pub fn check_alltoall(m: &[Vec<usize>], gen: &dyn Fn(usize) -> Schedule) -> Result<(), String> {
    let p = m.len();
    let init = (0..p)
        .map(|s| {
            let n: usize = m[s].iter().sum();
            let rin: usize = (0..p).map(|q| m[q][s]).sum();
            ((0..n).map(|i| sym(s, i)).collect(), vec![None; rin])
        })
        .collect();
    let out = run("alltoall", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|d| {
            (0..p)
                .flat_map(|s| {
                    let off: usize = m[s][..d].iter().sum();
                    (0..m[s][d]).map(move |i| sym(s, off + i))
                })
                .collect()
        })
        .collect();
    compare("alltoall", Order::Exact, &out, &want)
}

/// Scan: inclusive or exclusive, upward or downward.
/// The fold is in traversal order (for downward: x(p-1) ⊕ … ⊕ x(n)); the
/// exclusive scan leaves the first participant's Output unwritten.
pub fn check_scan(
    p: usize,
    count: usize,
    dir: Direction,
    inclusion: Inclusion,
    gen: &dyn Fn(usize) -> Schedule,
) -> Result<(), String> {
    let exclusive = inclusion == Inclusion::Exclusive;
    let init = reduce_inputs(p, count)
        .into_iter()
        .map(|x| (x, vec![None; count]))
        .collect();
    let out = run("scan", p, gen, init)?;
    let want: Vec<Vec<Option<Sym>>> = (0..p)
        .map(|r| {
            (0..count)
                .map(|i| {
                    let ranks: Vec<usize> = match (dir, exclusive) {
                        (Direction::Upward, false) => (0..=r).collect(),
                        (Direction::Upward, true) => (0..r).collect(),
                        (Direction::Downward, false) => (r..p).rev().collect(),
                        (Direction::Downward, true) => (r + 1..p).rev().collect(),
                    };
                    if ranks.is_empty() {
                        None
                    } else {
                        fold(ranks.into_iter(), i)
                    }
                })
                .collect()
        })
        .collect();
    compare("scan", Order::Exact, &out, &want)
}

/// The standard test matrix `(p, root, count)`: p in 1..=33 with every root
/// and counts 0, 1, 7; counts 64 for roots 0 and p-1; count 4099 for a few p.
/// With `rooted == false` only root 0 appears.
pub fn standard_cases(rooted: bool) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    for p in 1..=33 {
        let roots: Vec<usize> = if rooted { (0..p).collect() } else { vec![0] };
        for &root in &roots {
            for count in [0, 1, 7] {
                v.push((p, root, count));
            }
        }
        v.push((p, 0, 64));
        if rooted && p > 1 {
            v.push((p, p - 1, 64));
        }
    }
    for p in [1, 2, 5, 8, 13] {
        v.push((p, p / 2, 4099));
    }
    v
}

/// Per-rank counts with zeros and unequal sizes around `count`: rank r gets
/// 0 when r % 3 == 1, else `count + r % 4`.
pub fn varied_counts(p: usize, count: usize) -> Vec<usize> {
    (0..p)
        .map(|r| if r % 3 == 1 { 0 } else { count + r % 4 })
        .collect()
}
