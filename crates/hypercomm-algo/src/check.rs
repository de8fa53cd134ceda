//! Test support: a lock-step simulator for schedules, symbolic data, and
//! per-collective checkers that compare a generator's result with a serial
//! computation.
//!
//! [`simulate`] runs all `p` schedules together with **rendezvous**
//! semantics: a rank posts every Send and Recv of its current round; a Send
//! and a Recv match when they are the k-th Send from `a` to `b` and the k-th
//! Recv at `b` from `a` (FIFO per ordered pair) and have equal lengths; a
//! rank's round completes when all its posted ops matched, then its local
//! ops run and it posts its next round. If no rank can make progress while
//! some rank is unfinished, that is a deadlock; messages left unmatched at
//! the end are an error too. Data moves at match time; since a round never
//! writes what it sends, this equals "data as of the start of the round".
//!
//! The symbolic element type [`Sym`] is a list of `(rank, index)`
//! contributions and the operator is list concatenation: associative but not
//! commutative, so a result equals the serial fold in the required order
//! exactly or the check fails. Reading or sending an element never written
//! (`None`) is reported as an error, so schedules cannot rely on garbage.
//!
//! Not done yet: the simulator does not model time; that is the job of the
//! library's simulator transport, which runs the same schedules.

use crate::schedule::{displs, Buf, Op, Region, Schedule};
use crate::{Direction, Inclusion};
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;

/// Initial `(input, output)` buffers of every rank; `None` = unwritten.
pub type Init<T> = Vec<(Vec<Option<T>>, Vec<Option<T>>)>;

/// Final (or initial) buffers of one rank. `None` marks an element that was
/// never written.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffers<T> {
    /// The input buffer.
    pub input: Vec<Option<T>>,
    /// The output buffer.
    pub output: Vec<Option<T>>,
    /// Scratch buffers, sized from the schedule.
    pub temps: Vec<Vec<Option<T>>>,
    /// `heard_from[q]`: rank `q` had started the collective before this rank
    /// finished, as witnessed by a chain of messages (used to check barriers).
    pub heard_from: Vec<bool>,
}

/// Why a simulation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// A schedule is malformed (bad peer, region out of bounds, overlap,
    /// write to the input, length mismatch of a local op).
    Invalid {
        /// The rank whose schedule is wrong.
        rank: usize,
        /// Its round index.
        round: usize,
        /// What is wrong.
        msg: String,
    },
    /// A matched Send and Recv disagree in length.
    LengthMismatch {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
        /// Length sent.
        send_len: usize,
        /// Length expected.
        recv_len: usize,
    },
    /// An element that was never written was read.
    Uninitialized {
        /// The rank that read it.
        rank: usize,
        /// Its round.
        round: usize,
        /// Which op.
        msg: String,
    },
    /// No progress possible: what every unfinished rank waits for.
    Deadlock(String),
    /// Messages posted but never matched at the end.
    Leftover(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

struct Posted {
    rank: usize,
    region: Region,
}

fn buf_mut<T>(b: &mut Buffers<T>, buf: Buf) -> &mut Vec<Option<T>> {
    match buf {
        Buf::Input => &mut b.input,
        Buf::Output => &mut b.output,
        Buf::Temp(i) => &mut b.temps[i as usize],
    }
}
fn buf_ref<T>(b: &Buffers<T>, buf: Buf) -> &Vec<Option<T>> {
    match buf {
        Buf::Input => &b.input,
        Buf::Output => &b.output,
        Buf::Temp(i) => &b.temps[i as usize],
    }
}

fn validate_round<T>(
    rank: usize,
    ri: usize,
    p: usize,
    s: &Schedule,
    b: &Buffers<T>,
) -> Result<(), SimError> {
    let inv = |msg: String| SimError::Invalid {
        rank,
        round: ri,
        msg,
    };
    let in_bounds = |r: &Region| -> Result<(), SimError> {
        let len = match r.buf {
            Buf::Input => b.input.len(),
            Buf::Output => b.output.len(),
            Buf::Temp(i) => *s
                .temps
                .get(i as usize)
                .ok_or_else(|| inv(format!("no temp {i}")))?,
        };
        if r.end() > len {
            return Err(inv(format!("{r:?} out of bounds (buffer length {len})")));
        }
        Ok(())
    };
    let round = &s.rounds[ri];
    let mut comm: Vec<(bool, Region)> = Vec::new();
    for op in &round.ops {
        match op {
            Op::Send { to, region } => {
                if *to >= p || *to == rank {
                    return Err(inv(format!("bad destination {to}")));
                }
                in_bounds(region)?;
                comm.push((false, *region));
            }
            Op::Recv { from, region } => {
                if *from >= p || *from == rank {
                    return Err(inv(format!("bad source {from}")));
                }
                in_bounds(region)?;
                if region.buf == Buf::Input && region.len > 0 {
                    return Err(inv("receive into Input".into()));
                }
                comm.push((true, *region));
            }
            Op::Reduce { src, dst, .. } | Op::Copy { src, dst } => {
                in_bounds(src)?;
                in_bounds(dst)?;
                if src.len != dst.len {
                    return Err(inv(format!("local op length mismatch {src:?} {dst:?}")));
                }
                if dst.buf == Buf::Input && dst.len > 0 {
                    return Err(inv("local op writes Input".into()));
                }
                if src.overlaps(dst) {
                    return Err(inv(format!("local op src/dst overlap {src:?} {dst:?}")));
                }
            }
        }
    }
    for (i, (wi, ri_)) in comm.iter().enumerate() {
        for (j, (wj, rj)) in comm.iter().enumerate() {
            if i < j && (*wi || *wj) && ri_.overlaps(rj) {
                return Err(inv(format!(
                    "communication regions overlap in one round: {ri_:?} {rj:?}"
                )));
            }
        }
    }
    Ok(())
}

/// Run all schedules in lock step (see the module doc). `init[r]` gives rank
/// `r`'s initial input and output buffers; temps start unwritten. `combine(a,
/// b)` is the operator `a ⊕ b`.
pub fn simulate<T: Clone + Debug>(
    schedules: &[Schedule],
    init: Init<T>,
    combine: &dyn Fn(&T, &T) -> T,
) -> Result<Vec<Buffers<T>>, SimError> {
    let p = schedules.len();
    assert_eq!(init.len(), p);
    let mut bufs: Vec<Buffers<T>> = init
        .into_iter()
        .zip(schedules)
        .enumerate()
        .map(|(r, ((input, output), s))| {
            let mut heard = vec![false; p];
            heard[r] = true;
            Buffers {
                input,
                output,
                temps: s.temps.iter().map(|&n| vec![None; n]).collect(),
                heard_from: heard,
            }
        })
        .collect();
    let mut round = vec![0usize; p];
    let mut posted = vec![false; p];
    let mut pending = vec![0usize; p];
    let mut learned: Vec<Vec<bool>> = bufs.iter().map(|b| b.heard_from.clone()).collect();
    // (from, to) -> (sends, recvs); a send carries the sender's knowledge.
    type Queues = (VecDeque<(Posted, Vec<bool>)>, VecDeque<Posted>);
    let mut queues: HashMap<(usize, usize), Queues> = HashMap::new();
    loop {
        let mut progress = false;
        // 1. Post rounds.
        for r in 0..p {
            if posted[r] || round[r] >= schedules[r].rounds.len() {
                continue;
            }
            validate_round(r, round[r], p, &schedules[r], &bufs[r])?;
            let mut n = 0;
            for op in &schedules[r].rounds[round[r]].ops {
                match op {
                    Op::Send { to, region } => {
                        let q = queues.entry((r, *to)).or_default();
                        q.0.push_back((
                            Posted {
                                rank: r,
                                region: *region,
                            },
                            bufs[r].heard_from.clone(),
                        ));
                        n += 1;
                    }
                    Op::Recv { from, region } => {
                        let q = queues.entry((*from, r)).or_default();
                        q.1.push_back(Posted {
                            rank: r,
                            region: *region,
                        });
                        n += 1;
                    }
                    _ => {}
                }
            }
            posted[r] = true;
            pending[r] = n;
            progress = true;
        }
        // 2. Match.
        let mut keys: Vec<(usize, usize)> = queues.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let q = queues.get_mut(&key).expect("key");
            while !q.0.is_empty() && !q.1.is_empty() {
                let (s, know) = q.0.pop_front().expect("send");
                let rv = q.1.pop_front().expect("recv");
                if s.region.len != rv.region.len {
                    return Err(SimError::LengthMismatch {
                        from: key.0,
                        to: key.1,
                        send_len: s.region.len,
                        recv_len: rv.region.len,
                    });
                }
                let src = buf_ref(&bufs[s.rank], s.region.buf);
                let data: Vec<Option<T>> = src[s.region.offset..s.region.end()].to_vec();
                if data.iter().any(|x| x.is_none()) {
                    return Err(SimError::Uninitialized {
                        rank: s.rank,
                        round: round[s.rank],
                        msg: format!("send of unwritten data {:?} to {}", s.region, key.1),
                    });
                }
                let dst = buf_mut(&mut bufs[rv.rank], rv.region.buf);
                dst[rv.region.offset..rv.region.end()].clone_from_slice(&data);
                for (k, h) in know.iter().enumerate() {
                    if *h {
                        learned[rv.rank][k] = true;
                    }
                }
                pending[s.rank] -= 1;
                pending[rv.rank] -= 1;
                progress = true;
            }
        }
        // 3. Complete rounds.
        for r in 0..p {
            if !posted[r] || pending[r] > 0 {
                continue;
            }
            let ri = round[r];
            for op in &schedules[r].rounds[ri].ops {
                match op {
                    Op::Copy { src, dst } => {
                        let data: Vec<Option<T>> =
                            buf_ref(&bufs[r], src.buf)[src.offset..src.end()].to_vec();
                        if data.iter().any(|x| x.is_none()) {
                            return Err(SimError::Uninitialized {
                                rank: r,
                                round: ri,
                                msg: format!("copy of unwritten {src:?}"),
                            });
                        }
                        buf_mut(&mut bufs[r], dst.buf)[dst.offset..dst.end()]
                            .clone_from_slice(&data);
                    }
                    Op::Reduce {
                        src,
                        dst,
                        src_first,
                    } => {
                        let sdata: Vec<Option<T>> =
                            buf_ref(&bufs[r], src.buf)[src.offset..src.end()].to_vec();
                        let d = &mut buf_mut(&mut bufs[r], dst.buf)[dst.offset..dst.end()];
                        for (x, y) in sdata.iter().zip(d.iter_mut()) {
                            match (x, y.as_ref()) {
                                (Some(a), Some(b)) => {
                                    *y = Some(if *src_first {
                                        combine(a, b)
                                    } else {
                                        combine(b, a)
                                    });
                                }
                                _ => {
                                    return Err(SimError::Uninitialized {
                                        rank: r,
                                        round: ri,
                                        msg: format!("reduce of unwritten {src:?} -> {dst:?}"),
                                    })
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            bufs[r].heard_from = learned[r].clone();
            posted[r] = false;
            round[r] += 1;
            progress = true;
        }
        if (0..p).all(|r| round[r] >= schedules[r].rounds.len()) {
            break;
        }
        if !progress {
            let mut d = String::new();
            for r in 0..p {
                if round[r] < schedules[r].rounds.len() {
                    d += &format!(
                        "rank {r} stuck in round {} of {}: {:?}\n",
                        round[r],
                        schedules[r].rounds.len(),
                        schedules[r].rounds[round[r]].ops
                    );
                }
            }
            return Err(SimError::Deadlock(d));
        }
    }
    let mut left = String::new();
    for ((a, b), (s, r)) in &queues {
        if !s.is_empty() || !r.is_empty() {
            left += &format!("{a}->{b}: {} sends, {} recvs unmatched; ", s.len(), r.len());
        }
    }
    if !left.is_empty() {
        return Err(SimError::Leftover(left));
    }
    Ok(bufs)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{output, recv, send};

    fn sched(rounds: Vec<Vec<Op>>) -> Schedule {
        let mut s = Schedule::new();
        for r in rounds {
            s.push(r);
        }
        s
    }
    fn init(p: usize, n: usize) -> Init<Sym> {
        (0..p)
            .map(|r| (vec![], (0..n).map(|i| sym(r, i)).collect()))
            .collect()
    }

    #[test]
    fn send_before_recv_on_both_sides_deadlocks_under_rendezvous() {
        let a = sched(vec![
            vec![send(1, output(0, 1))],
            vec![recv(1, output(1, 1))],
        ]);
        let b = sched(vec![
            vec![send(0, output(0, 1))],
            vec![recv(0, output(1, 1))],
        ]);
        let e = simulate(&[a, b], init(2, 2), &concat).unwrap_err();
        assert!(matches!(e, SimError::Deadlock(_)), "{e:?}");
    }

    #[test]
    fn exchange_in_one_round_works() {
        let a = sched(vec![vec![send(1, output(0, 1)), recv(1, output(1, 1))]]);
        let b = sched(vec![vec![send(0, output(0, 1)), recv(0, output(1, 1))]]);
        let out = simulate(&[a, b], init(2, 2), &concat).unwrap();
        assert_eq!(out[0].output[1], sym(1, 0));
        assert_eq!(out[1].output[1], sym(0, 0));
    }

    #[test]
    fn errors_are_detected() {
        let a = sched(vec![vec![send(1, output(0, 2))]]);
        let b = sched(vec![vec![recv(0, output(0, 1))]]);
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::LengthMismatch { .. })
        ));
        let a = sched(vec![vec![send(1, output(0, 1))]]);
        let b = Schedule::new();
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::Deadlock(_))
        ));
        let a = sched(vec![vec![send(1, output(0, 1)), recv(1, output(0, 1))]]);
        let b = sched(vec![vec![send(0, output(0, 1)), recv(0, output(1, 1))]]);
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::Invalid { .. })
        ));
        let a = sched(vec![vec![send(1, output(5, 1))]]);
        let b = sched(vec![vec![recv(0, output(0, 1))]]);
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::Invalid { .. })
        ));
    }

    #[test]
    fn unwritten_data_is_an_error() {
        let a = sched(vec![vec![send(1, output(0, 1))]]);
        let b = sched(vec![vec![recv(0, output(0, 1))]]);
        let init = vec![(vec![], vec![None]), (vec![], vec![None])];
        assert!(matches!(
            simulate(&[a, b], init, &concat),
            Err(SimError::Uninitialized { .. })
        ));
    }
}
