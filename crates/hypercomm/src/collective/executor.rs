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
//! outstanding collectives all progress). A blocking call with check mode
//! off and no trace skips the task and its wait loop: [`Exec::run_direct`]
//! runs the rounds on the engine's blocking receive, posted before the
//! round's sends so the message lands in place.
//!
//! Buffers: the input (read only), the output (read and write), each
//! borrowed from the caller for the executor's lifetime `'a` or owned by
//! it ([`Input`], [`Output`]), and scratch buffers from a per-thread pool.
//! Regions are checked against the buffers when the executor is built and
//! again when one is turned into a slice; the schedule generators guarantee
//! that a round's received regions overlap nothing else in the round
//! (checked by the algorithm crate's lock-step simulator).
//!
//! The engine writes a posted receive into its region while the executor
//! goes on with other regions, so the executor holds no reference to a
//! whole buffer: it keeps each as a base pointer that carries the borrow's
//! lifetime (`Store`), and makes a slice of one region at a time, for one
//! receive, one send or one local operation. Those two conversions and the
//! two engine calls that lend a region to a request are the four blocks the
//! compiler cannot check here, each with its argument. A dropped executor
//! withdraws what it still has posted, so no request outlives the borrow.
//!
//! Not done yet: no "receive from any source" op (the multicast does its
//! own receives).

use super::ops::{combine_slices, Element, Operator};
use crate::engine::{map_err, Engine, Group, Layout, Match, RawStatus, ReqId, Task};
use crate::error::{Error, Result};
use hypercomm_algo::{Buf, Op, Region, Schedule};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    /// Scratch buffers of finished executors, reused by the next ones so a
    /// collective allocates (and faults in) no memory in the steady state.
    static SCRATCH: std::cell::RefCell<Vec<Vec<u128>>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    /// Schedules this thread validated lately, with the participants and
    /// the buffer lengths (bytes, and the element size) they were checked
    /// against. Holding the schedule keeps its address from being reused
    /// by another while it is listed.
    #[allow(clippy::type_complexity)]
    static VALID: std::cell::RefCell<Vec<(Rc<Schedule>, (usize, usize, usize, usize))>> =
        const { std::cell::RefCell::new(Vec::new()) };
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

/// The input of a call: the caller's, or one the task made (e.g. lifted
/// scan elements).
pub(crate) enum Input<'a, T> {
    /// Borrowed from the caller for `'a`.
    Borrowed(&'a [T]),
    /// Owned by the executor.
    Owned(Vec<T>),
}

/// The output of a call: the caller's, or a scratch buffer the task owns
/// (a non-root's reduce, a signature exchange, lifted scan elements).
pub(crate) enum Output<'a, T> {
    /// Borrowed from the caller for `'a`.
    Borrowed(&'a mut [T]),
    /// Owned by the executor.
    Owned(Vec<T>),
}

impl<T> Input<'_, T> {
    /// Its elements, borrowed or owned.
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Input::Borrowed(s) => s,
            Input::Owned(v) => v,
        }
    }

    /// Its length in elements.
    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }
}

impl<T> Output<'_, T> {
    /// Its elements, borrowed or owned.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Output::Borrowed(s) => s,
            Output::Owned(v) => v,
        }
    }

    /// Its length in elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Output::Borrowed(s) => s.len(),
            Output::Owned(v) => v.len(),
        }
    }
}

/// One buffer as a base pointer and a length, borrowed for `'a` or owned.
struct Store<'a, T> {
    base: NonNull<T>,
    len: usize,
    /// Keeps an owned buffer alive (its heap block does not move with it).
    _owned: Vec<T>,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T> Store<'a, T> {
    fn input(i: Input<'a, T>) -> Self {
        match i {
            Input::Borrowed(s) => Store {
                base: NonNull::from(s).cast(),
                len: s.len(),
                _owned: Vec::new(),
                _borrow: PhantomData,
            },
            Input::Owned(v) => Store::output(Output::Owned(v)),
        }
    }

    fn output(o: Output<'a, T>) -> Self {
        match o {
            Output::Borrowed(s) => Store {
                len: s.len(),
                base: NonNull::from(s).cast(),
                _owned: Vec::new(),
                _borrow: PhantomData,
            },
            Output::Owned(mut v) => Store {
                base: NonNull::from(v.as_mut_slice()).cast(),
                len: v.len(),
                _owned: v,
                _borrow: PhantomData,
            },
        }
    }
}

/// The buffers of one executor.
struct Bufs<'a, T> {
    input: Store<'a, T>,
    output: Store<'a, T>,
    /// Scratch buffers (16-byte aligned storage from a per-thread pool) and
    /// their lengths in elements of `T`.
    temps: Vec<(Vec<u128>, usize)>,
}

/// Whether two regions share an element.
fn overlap(a: Region, b: Region) -> bool {
    a.overlaps(&b)
}

impl<T: Element> Bufs<'_, T> {
    fn len_of(&self, b: Buf) -> usize {
        match b {
            Buf::Input => self.input.len,
            Buf::Output => self.output.len,
            Buf::Temp(i) => self.temps.get(i as usize).map_or(0, |t| t.1),
        }
    }

    /// A pointer to the first element of `r`, if `r` lies within its buffer.
    fn at(&mut self, r: Region) -> Option<*mut T> {
        let (base, len) = match r.buf {
            Buf::Input => (self.input.base.as_ptr(), self.input.len),
            Buf::Output => (self.output.base.as_ptr(), self.output.len),
            Buf::Temp(i) => {
                let (v, n) = self.temps.get_mut(i as usize)?;
                (v.as_mut_ptr().cast::<T>(), *n)
            }
        };
        (r.offset.checked_add(r.len)? <= len).then(|| base.wrapping_add(r.offset))
    }

    /// The elements of `read`, to read, and of `write`, to write (an absent
    /// region gives an empty slice). `None` when a region lies outside its
    /// buffer, `write` is in the input, or the two overlap.
    ///
    /// The caller must not ask for a region that a request of the executor
    /// still has posted (a round never sends from or reduces into a region
    /// it receives into; local operations run once the round completed).
    fn regions(&mut self, read: Option<Region>, write: Option<Region>) -> Option<(&[T], &mut [T])> {
        if let (Some(r), Some(w)) = (read, write) {
            if overlap(r, w) {
                return None;
            }
        }
        let src: &[T] = match read {
            None => &[],
            Some(r) => {
                let p = self.at(r)?;
                // SAFETY: `p` starts `r.len` elements within one buffer (checked
                // by `at`) that is borrowed for 'a or owned by `self`, so they
                // are live and initialised. While the slice lives (this borrow
                // of `self`) nothing writes them: `write` does not overlap
                // them, the executor holds no other slice, and no receive is
                // posted into them (the caller's side of the contract).
                unsafe { std::slice::from_raw_parts(p, r.len) }
            }
        };
        let dst: &mut [T] = match write {
            None => &mut [],
            Some(w) if w.buf == Buf::Input => return None,
            Some(w) => {
                let p = self.at(w)?;
                // SAFETY: as for `src`; besides, `w` is not in the input (the
                // one buffer that is only shared-borrowed) and does not
                // overlap `read`, so this is the only access to these
                // elements while the slice lives.
                unsafe { std::slice::from_raw_parts_mut(p, w.len) }
            }
        };
        Some((src, dst))
    }
}

/// Where an executor's messages go.
#[derive(Clone)]
pub(crate) struct Route {
    /// Endpoint of each participant.
    pub(crate) eps: Arc<[u32]>,
    /// The communicator's collective context.
    pub(crate) ctx: u64,
    /// The call's tag.
    pub(crate) tag: u32,
    /// The communicator's group (failure detection, messages).
    pub(crate) group: Rc<Group>,
    /// The rank's engine (a dropped executor withdraws its requests there).
    pub(crate) engine: Rc<Engine>,
}

/// One schedule in execution over buffers borrowed for `'a`.
pub(crate) struct Exec<'a, T: Element, O: Operator<T>> {
    /// Shared with the communicator's memo of recent schedules.
    sched: Rc<Schedule>,
    route: Route,
    bufs: Bufs<'a, T>,
    op: Option<O>,
    round: usize,
    posted: bool,
    /// Requests of the current round, with the byte length a receive must have.
    pending: Vec<(ReqId, Option<usize>)>,
    /// The outcome once finished (the error boxed: it is rare, and the
    /// task is moved a few times on its way to the wait loop).
    result: Option<std::result::Result<(), Box<Error>>>,
    what: &'static str,
}

impl<'a, T: Element, O: Operator<T>> Exec<'a, T, O> {
    /// An executor of `sched` over `input` and `output`, its regions checked.
    pub(crate) fn new(
        sched: Rc<Schedule>,
        route: Route,
        input: Input<'a, T>,
        output: Output<'a, T>,
        op: Option<O>,
        what: &'static str,
    ) -> Result<Self> {
        const {
            assert!(
                std::mem::align_of::<T>() <= 16,
                "element types are at most 16-byte aligned"
            )
        };
        let temps: Vec<(Vec<u128>, usize)> = if sched.temps.is_empty() {
            Vec::new()
        } else {
            sched
                .temps
                .iter()
                .map(|&n| (scratch_take(n * std::mem::size_of::<T>()), n))
                .collect()
        };
        let e = Exec {
            sched,
            route,
            bufs: Bufs {
                input: Store::input(input),
                output: Store::output(output),
                temps,
            },
            op,
            round: 0,
            posted: false,
            pending: Vec::new(),
            result: None,
            what,
        };
        // A remembered schedule that comes back with buffers of the same
        // lengths (the common case: a loop of one call) was checked then.
        let key = (
            e.route.eps.len(),
            e.bufs.input.len * std::mem::size_of::<T>(),
            e.bufs.output.len * std::mem::size_of::<T>(),
            std::mem::size_of::<T>(),
        );
        let known = VALID.with(|v| {
            v.borrow()
                .iter()
                .any(|(s, k)| Rc::ptr_eq(s, &e.sched) && *k == key)
        });
        if !known {
            e.validate()?;
            VALID.with(|v| {
                let mut v = v.borrow_mut();
                if v.len() >= 8 {
                    v.remove(0);
                }
                v.push((e.sched.clone(), key));
            });
        }
        Ok(e)
    }

    /// The call's tag.
    pub(crate) fn tag(&self) -> u32 {
        self.route.tag
    }

    fn bad(&self, msg: String) -> Error {
        Error::Protocol(format!("internal: {} schedule: {msg}", self.what))
    }

    fn validate(&self) -> Result<()> {
        let eps = self.route.eps.len();
        for (ri, r) in self.sched.rounds.iter().enumerate() {
            for op in &r.ops {
                let regions: &[(Region, bool)] = &match *op {
                    Op::Send { to, region } => {
                        if to >= eps {
                            return Err(
                                self.bad(format!("round {ri} sends to participant {to} of {eps}"))
                            );
                        }
                        [(region, false), (region, false)]
                    }
                    Op::Recv { from, region } => {
                        if from >= eps {
                            return Err(self.bad(format!(
                                "round {ri} receives from participant {from} of {eps}"
                            )));
                        }
                        [(region, true), (region, true)]
                    }
                    Op::Reduce { src, dst, .. } | Op::Copy { src, dst } => {
                        if src.len != dst.len {
                            return Err(self.bad(format!(
                                "round {ri}: local op lengths {} and {}",
                                src.len, dst.len
                            )));
                        }
                        [(src, false), (dst, true)]
                    }
                };
                for &(reg, writes) in regions {
                    if writes && reg.buf == Buf::Input && reg.len > 0 {
                        return Err(self.bad(format!("round {ri} writes the input buffer")));
                    }
                    let have = self.bufs.len_of(reg.buf);
                    if reg.offset.checked_add(reg.len).is_none_or(|end| end > have) {
                        return Err(self.bad(format!(
                            "round {ri}: region {:?}[{}..+{}] exceeds its buffer of {have}",
                            reg.buf, reg.offset, reg.len,
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The whole output, once no request is posted (empty before).
    pub(crate) fn output(&mut self) -> &mut [T] {
        if !self.pending.is_empty() {
            return &mut [];
        }
        let all = Region::new(Buf::Output, 0, self.bufs.output.len);
        self.bufs
            .regions(None, Some(all))
            .map_or(&mut [], |(_, d)| d)
    }

    /// What a receive from participant `from` matches.
    fn matcher(&self, from: usize) -> Match {
        Match {
            ctx: self.route.ctx,
            src: Some(self.route.eps[from]),
            tag: Some(self.route.tag),
        }
    }

    /// Start the send of `region` to participant `to`; a send that did not
    /// complete at once joins the pending requests.
    fn send_op(&mut self, e: &Engine, to: usize, region: Region) -> Result<()> {
        let Some((src, _)) = self.bufs.regions(Some(region), None) else {
            return Err(self.bad(format!("send from {region:?}")));
        };
        let r = &self.route;
        // SAFETY: `src` is a region of a buffer borrowed for 'a or owned by
        // the executor, which nothing writes during this round (schedule
        // rule); the request is completed or withdrawn before the executor
        // lets go of the buffer: `step` and `run_direct` wait for it, and
        // `withdraw` and `Drop` withdraw it; an executor lives on a blocking
        // call's stack or in a scope, which finishes or withdraws it (leaked
        // or not) before 'a ends.
        let id = unsafe {
            e.start_send(
                &r.group,
                r.eps[to],
                r.ctx,
                r.tag,
                bytemuck::cast_slice(src),
                false,
            )?
        };
        self.pending.extend(id.map(|id| (id, None)));
        Ok(())
    }

    /// The bytes of a receive's region.
    fn recv_region(&mut self, region: Region) -> Result<&mut [u8]> {
        if self.bufs.at(region).is_none() || region.buf == Buf::Input {
            return Err(self.bad(format!("receive into {region:?}")));
        }
        let (_, dst) = self.bufs.regions(None, Some(region)).expect("checked");
        Ok(bytemuck::cast_slice_mut(dst))
    }

    fn post_round(&mut self, e: &Engine) -> Result<()> {
        let sched = self.sched.clone();
        for op in &sched.rounds[self.round].ops {
            match *op {
                Op::Recv { from, region } => {
                    let m = self.matcher(from);
                    let group = self.route.group.clone();
                    let dst = self.recv_region(region)?;
                    let bytes = dst.len();
                    // SAFETY: as for a send: no other op of this round
                    // touches the region (schedule rule), and the executor
                    // makes no slice of it until the request completed.
                    let id = unsafe { e.post_recv(&group, m, dst, Layout::Contiguous)? };
                    self.pending.push((id, Some(bytes)));
                }
                Op::Send { to, region } => self.send_op(e, to, region)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// A received message of `st.len` bytes where `want` were expected:
    /// the ranks gave different counts.
    fn check_len(&self, st: RawStatus, want: usize) -> Result<()> {
        if st.len == want {
            return Ok(());
        }
        Err(Error::CollectiveMismatch(format!(
            "{}: {} sent {} bytes where {} were expected (counts differ between ranks)",
            self.what,
            self.route.group.rank(st.src),
            st.len,
            want
        )))
    }

    /// Post the first round as requests (receives first, then sends), for
    /// [`Exec::run_direct`] to finish: a check-mode call's round runs beside
    /// its signature exchange this way.
    pub(crate) fn post_first(&mut self, e: &Engine) -> Result<()> {
        if !self.sched.rounds.is_empty() {
            self.round = 0;
            self.post_round(e)?;
            self.posted = true;
        }
        Ok(())
    }

    /// Wait for every pending request, checking a receive's length.
    fn wait_pending(&mut self, e: &Engine, timeout: Option<Duration>) -> Result<()> {
        while let Some((id, want)) = self.pending.pop() {
            let st = e
                .wait_req(id, timeout, self.what)
                .map_err(|err| map_err(err, &self.route.group))?;
            if let Some(w) = want {
                self.check_len(st, w)?;
            }
        }
        Ok(())
    }

    /// Run the schedule on this thread without the task machinery (a
    /// blocking call without a trace). Per round: the first receive is
    /// posted as the engine's blocking receive before the round's sends
    /// start, so that the peer's message lands in place; the round's other
    /// receives follow one at a time; sends that did not complete at once
    /// are waited for; then the local operations. A first round already
    /// posted ([`Exec::post_first`]) is waited for and finished first.
    pub(crate) fn run_direct(&mut self, e: &Engine, timeout: Option<Duration>) -> Result<()> {
        let sched = self.sched.clone();
        let what = self.what;
        let mut start = 0;
        if self.posted {
            self.wait_pending(e, timeout)?;
            self.local_ops()?;
            self.posted = false;
            start = 1;
        }
        for (ri, round) in sched.rounds.iter().enumerate().skip(start) {
            self.round = ri;
            let mut recvs = round.ops.iter().filter_map(|op| match *op {
                Op::Recv { from, region } => Some((from, region)),
                _ => None,
            });
            let first = recvs.next();
            let mut early = None;
            if let Some((from, region)) = first {
                let m = self.matcher(from);
                let dst = self.recv_region(region)?;
                let bytes = dst.len();
                // SAFETY: the region is live (a buffer borrowed for 'a or
                // owned by the executor) and no op of this round touches it
                // (schedule rule); the receive is waited for or withdrawn
                // below before the executor makes a slice of it again.
                early = Some((
                    unsafe { e.post_blocking(m, dst, Layout::Contiguous) },
                    bytes,
                ));
            }
            let posted = matches!(early, Some((None, _)));
            for op in &round.ops {
                if let Op::Send { to, region } = *op {
                    if let Err(err) = self.send_op(e, to, region) {
                        if posted {
                            e.unpost_blocking();
                        }
                        return Err(err);
                    }
                }
            }
            if first.is_none() {
                // A round that only sends (a broadcast's root, say).
                self.wait_pending(e, timeout)?;
                self.local_ops()?;
                continue;
            }
            let g = self.route.group.clone();
            if let (Some((from, _)), Some((got, bytes))) = (first, early) {
                let st = match got {
                    Some(r) => r,
                    None => {
                        let describe = || self.describe();
                        e.wait_blocking(&g, Some(self.route.eps[from]), timeout, what, &describe)
                    }
                };
                self.check_len(st.map_err(|err| map_err(err, &g))?, bytes)?;
            }
            for (from, region) in recvs {
                let m = self.matcher(from);
                let dst = self.recv_region(region)?;
                let bytes = dst.len();
                let st = e.recv(&g, m, dst, Layout::Contiguous, timeout, what)?;
                self.check_len(st, bytes)?;
            }
            self.wait_pending(e, timeout)?;
            self.local_ops()?;
        }
        self.round = sched.rounds.len();
        Ok(())
    }

    fn local_ops(&mut self) -> Result<()> {
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
                    let Some((s, d)) = self.bufs.regions(Some(src), Some(dst)) else {
                        return Err(self.bad(format!("reduce {src:?} into {dst:?}")));
                    };
                    if let Some(op) = &self.op {
                        combine_slices(op, s, d, src_first);
                    }
                }
                Op::Copy { src, dst } => {
                    if src.len == 0 {
                        continue;
                    }
                    if overlap(src, dst) {
                        // Within one buffer: move through one slice of both.
                        let lo = src.offset.min(dst.offset);
                        let hi = (src.offset + src.len).max(dst.offset + dst.len);
                        let both = Region::new(dst.buf, lo, hi - lo);
                        let Some((_, b)) = self.bufs.regions(None, Some(both)) else {
                            return Err(self.bad(format!("copy {src:?} to {dst:?}")));
                        };
                        b.copy_within(src.offset - lo..src.offset - lo + src.len, dst.offset - lo);
                        continue;
                    }
                    let Some((s, d)) = self.bufs.regions(Some(src), Some(dst)) else {
                        return Err(self.bad(format!("copy {src:?} to {dst:?}")));
                    };
                    d.copy_from_slice(s);
                }
                _ => {}
            }
        }
        Ok(())
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
                            if let Err(err) = self.check_len(st, w) {
                                return Some(Err(err));
                            }
                        }
                    }
                }
            }
            if let Err(err) = self.local_ops() {
                return Some(Err(err));
            }
            self.round += 1;
            self.posted = false;
        }
    }
}

impl<T: Element, O: Operator<T>> Drop for Exec<'_, T, O> {
    fn drop(&mut self) {
        for (id, _) in self.pending.drain(..) {
            self.route.engine.withdraw(id);
        }
        for (v, _) in self.bufs.temps.drain(..) {
            scratch_give(v);
        }
    }
}

impl<T: Element, O: Operator<T>> Task for Exec<'_, T, O> {
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
                self.result = Some(r.map_err(Box::new));
                true
            }
        }
    }
    fn take_result(&mut self) -> Option<Result<()>> {
        self.result.take().map(|r| r.map_err(|e| *e))
    }
    fn group(&self) -> &Rc<Group> {
        &self.route.group
    }
    fn describe(&self) -> String {
        format!(
            "{} (collective tag {}) at round {} of {}",
            self.what,
            self.route.tag,
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
