//! The lock-step simulator: every participant's schedule run together with
//! rendezvous semantics (see the module docs of [`crate::check`]).

use crate::schedule::{Buf, Op, Region, Schedule};
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
