//! The executor: runs a [`Schedule`] over the p2p engine, blocking or
//! non-blocking.
//!
//! A schedule is a list of rounds. For each round the executor posts every
//! receive and send (non-blocking, on the communicator's collective context
//! with the call's own tag), waits for all of them, then applies the round's
//! local reduce and copy operations. [`Exec`] is a state machine:
//! [`Exec::advance`] does as much as it can without blocking, so the same
//! code serves blocking calls (advance inside the engine's wait loop) and
//! non-blocking ones (advanced by every wait of the rank, so several
//! outstanding collectives all progress).
//!
//! Buffers: the caller's input (read only), output (read and write), and
//! scratch buffers owned by the executor. Regions are checked against the
//! buffers when the executor is built; the schedule generators guarantee
//! that a round's received regions overlap nothing else in the round
//! (checked by the algorithm crate's lock-step simulator).
//!
//! Not done yet: no "receive from any source" op (the multicast does its
//! own receives); scratch buffers are allocated per call, not pooled.

use super::ops::{combine_slices, Element, Operator};
use crate::engine::{Engine, Group, Layout, Match, ReqId, Task};
use crate::error::{Error, Result};
use hypercomm_algo::{Buf, Op, Region, Schedule};
use std::rc::Rc;
use std::sync::Arc;

thread_local! {
    /// Scratch buffers of finished executors, reused by the next ones so a
    /// collective allocates (and faults in) no memory in the steady state.
    static SCRATCH: std::cell::RefCell<Vec<Vec<u128>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Scratch storage of at least `bytes` bytes, 16-byte aligned. Its content
/// is unspecified (schedules write a temp region before reading it).
fn scratch_take(bytes: usize) -> Vec<u128> {
    let words = bytes.div_ceil(16);
    let reused = SCRATCH.with(|p| {
        let mut p = p.borrow_mut();
        let i = (0..p.len())
            .filter(|&i| p[i].capacity() >= words)
            .min_by_key(|&i| p[i].capacity())?;
        Some(p.swap_remove(i))
    });
    let mut v = reused.unwrap_or_default();
    v.resize(words, 0);
    v
}

/// Give scratch storage back to this thread's pool (at most 16 buffers).
fn scratch_give(v: Vec<u128>) {
    if v.capacity() == 0 {
        return;
    }
    SCRATCH.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 16 {
            p.push(v);
        }
    });
}

/// One schedule in execution.
pub(crate) struct Exec<T: Element, O: Operator<T>> {
    /// Shared with the communicator's memo of recent schedules.
    sched: Rc<Schedule>,
    /// Endpoint of each participant.
    eps: Arc<[u32]>,
    ctx: u64,
    tag: u32,
    group: Arc<Group>,
    input: *const T,
    input_len: usize,
    output: *mut T,
    output_len: usize,
    /// Scratch buffers (16-byte aligned storage from a per-thread pool) and
    /// their lengths in elements of `T`.
    temps: Vec<(Vec<u128>, usize)>,
    op: Option<O>,
    round: usize,
    posted: bool,
    /// Requests of the current round, with the byte length a receive must have.
    pending: Vec<(ReqId, Option<usize>)>,
    result: Option<Result<()>>,
    what: &'static str,
}

impl<T: Element, O: Operator<T>> Exec<T, O> {
    /// Build an executor.
    ///
    /// # Safety
    /// `input` (`input_len` elements) and `output` (`output_len` elements)
    /// must stay valid, and `output` unaliased, until the executor is finished
    /// or withdrawn.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn new(
        sched: Rc<Schedule>,
        eps: Arc<[u32]>,
        ctx: u64,
        tag: u32,
        group: Arc<Group>,
        input: *const T,
        input_len: usize,
        output: *mut T,
        output_len: usize,
        op: Option<O>,
        what: &'static str,
    ) -> Result<Self> {
        const {
            assert!(
                std::mem::align_of::<T>() <= 16,
                "element types are at most 16-byte aligned"
            )
        };
        let temps: Vec<(Vec<u128>, usize)> = sched
            .temps
            .iter()
            .map(|&n| (scratch_take(n * std::mem::size_of::<T>()), n))
            .collect();
        let e = Exec {
            sched,
            eps,
            ctx,
            tag,
            group,
            input,
            input_len,
            output,
            output_len,
            temps,
            op,
            round: 0,
            posted: false,
            pending: Vec::new(),
            result: None,
            what,
        };
        e.validate()?;
        Ok(e)
    }

    fn len_of(&self, b: Buf) -> usize {
        match b {
            Buf::Input => self.input_len,
            Buf::Output => self.output_len,
            Buf::Temp(i) => self.temps.get(i as usize).map_or(0, |t| t.1),
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |msg: String| Error::Protocol(format!("internal: {} schedule: {msg}", self.what));
        for (ri, r) in self.sched.rounds.iter().enumerate() {
            for op in &r.ops {
                let regions: &[(Region, bool)] = &match *op {
                    Op::Send { to, region } => {
                        if to >= self.eps.len() {
                            return Err(bad(format!(
                                "round {ri} sends to participant {to} of {}",
                                self.eps.len()
                            )));
                        }
                        [(region, false), (region, false)]
                    }
                    Op::Recv { from, region } => {
                        if from >= self.eps.len() {
                            return Err(bad(format!(
                                "round {ri} receives from participant {from} of {}",
                                self.eps.len()
                            )));
                        }
                        [(region, true), (region, true)]
                    }
                    Op::Reduce { src, dst, .. } | Op::Copy { src, dst } => {
                        if src.len != dst.len {
                            return Err(bad(format!(
                                "round {ri}: local op lengths {} and {}",
                                src.len, dst.len
                            )));
                        }
                        [(src, false), (dst, true)]
                    }
                };
                for &(reg, writes) in regions {
                    if writes && reg.buf == Buf::Input && reg.len > 0 {
                        return Err(bad(format!("round {ri} writes the input buffer")));
                    }
                    if reg
                        .offset
                        .checked_add(reg.len)
                        .is_none_or(|end| end > self.len_of(reg.buf))
                    {
                        return Err(bad(format!(
                            "round {ri}: region {:?}[{}..+{}] exceeds its buffer of {}",
                            reg.buf,
                            reg.offset,
                            reg.len,
                            self.len_of(reg.buf)
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn ptr(&mut self, r: Region) -> *mut T {
        match r.buf {
            Buf::Input => self.input as *mut T,
            Buf::Output => self.output,
            Buf::Temp(i) => self.temps[i as usize].0.as_mut_ptr() as *mut T,
        }
        .wrapping_add(r.offset)
    }

    fn post_round(&mut self, e: &Engine) -> Result<()> {
        let sched = self.sched.clone();
        let ops = &sched.rounds[self.round].ops;
        let mut result = Ok(());
        for op in ops {
            match *op {
                Op::Recv { from, region } => {
                    let p = self.ptr(region) as *mut u8;
                    let bytes = region.len * std::mem::size_of::<T>();
                    // SAFETY: the region was bounds-checked in `validate`; the
                    // buffer outlives the executor (contract of `new`), and
                    // no other op of this round touches a received region.
                    let dst = unsafe { std::slice::from_raw_parts_mut(p, bytes) };
                    let m = Match {
                        ctx: self.ctx,
                        src: Some(self.eps[from]),
                        tag: Some(self.tag),
                    };
                    // SAFETY: as above; the request is completed or withdrawn
                    // before the executor is dropped.
                    match unsafe { e.post_recv(&self.group, m, dst, Layout::Contiguous) } {
                        Ok(id) => self.pending.push((id, Some(bytes))),
                        Err(err) => {
                            result = Err(err);
                            break;
                        }
                    }
                }
                Op::Send { to, region } => {
                    let p = self.ptr(region) as *const u8;
                    let bytes = region.len * std::mem::size_of::<T>();
                    // SAFETY: bounds-checked region of a live buffer, not
                    // written during this round.
                    let src = unsafe { std::slice::from_raw_parts(p, bytes) };
                    // SAFETY: the send request is completed or withdrawn before
                    // the buffer can change or go away.
                    match unsafe {
                        e.start_send(&self.group, self.eps[to], self.ctx, self.tag, src, false)
                    } {
                        Ok(Some(id)) => self.pending.push((id, None)),
                        Ok(None) => {}
                        Err(err) => {
                            result = Err(err);
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        result
    }

    fn local_ops(&mut self) {
        let sched = self.sched.clone();
        for op in &sched.rounds[self.round].ops {
            match *op {
                Op::Reduce {
                    src,
                    dst,
                    src_first,
                } => {
                    if src.len == 0 {
                        continue;
                    }
                    let s = self.ptr(src) as *const T;
                    let d = self.ptr(dst);
                    // SAFETY: bounds-checked regions; src and dst are distinct
                    // regions (generators never reduce a region into itself),
                    // and all communication of the round has completed.
                    let (s, d) = unsafe {
                        (
                            std::slice::from_raw_parts(s, src.len),
                            std::slice::from_raw_parts_mut(d, dst.len),
                        )
                    };
                    if let Some(op) = &self.op {
                        combine_slices(op, s, d, src_first);
                    }
                }
                Op::Copy { src, dst } => {
                    if src.len == 0 {
                        continue;
                    }
                    let s = self.ptr(src) as *const T;
                    let d = self.ptr(dst);
                    // SAFETY: bounds-checked, non-overlapping regions
                    // (`copy` semantics), communication complete.
                    unsafe { std::ptr::copy(s, d, src.len) };
                }
                _ => {}
            }
        }
    }

    fn step(&mut self, e: &Engine) -> Option<Result<()>> {
        loop {
            if !self.posted {
                if self.round >= self.sched.rounds.len() {
                    return Some(Ok(()));
                }
                if let Err(err) = self.post_round(e) {
                    return Some(Err(err));
                }
                self.posted = true;
            }
            while let Some(&(id, want)) = self.pending.last() {
                match e.test_step(id) {
                    None => return None,
                    Some(Err(err)) => return Some(Err(err)),
                    Some(Ok(st)) => {
                        self.pending.pop();
                        if let Some(w) = want {
                            if st.len != w {
                                return Some(Err(Error::CollectiveMismatch(format!(
                                    "{}: {} sent {} bytes where {} were expected (counts differ between ranks)",
                                    self.what,
                                    self.group.rank(st.src),
                                    st.len,
                                    w
                                ))));
                            }
                        }
                    }
                }
            }
            self.local_ops();
            self.round += 1;
            self.posted = false;
        }
    }
}

impl<T: Element, O: Operator<T>> Drop for Exec<T, O> {
    fn drop(&mut self) {
        for (v, _) in self.temps.drain(..) {
            scratch_give(v);
        }
    }
}

impl<T: Element, O: Operator<T>> Task for Exec<T, O> {
    fn advance(&mut self, e: &Engine) -> bool {
        if self.result.is_some() {
            return true;
        }
        match self.step(e) {
            None => false,
            Some(r) => {
                if r.is_err() {
                    self.withdraw(e);
                }
                self.result = Some(r);
                true
            }
        }
    }
    fn take_result(&mut self) -> Option<Result<()>> {
        self.result.take()
    }
    fn group(&self) -> &Arc<Group> {
        &self.group
    }
    fn describe(&self) -> String {
        format!(
            "{} (collective tag {}) at round {} of {}",
            self.what,
            self.tag,
            self.round + 1,
            self.sched.rounds.len()
        )
    }
    fn withdraw(&mut self, e: &Engine) {
        for (id, _) in self.pending.drain(..) {
            e.withdraw(id);
        }
    }
}
