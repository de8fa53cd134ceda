//! Progress: draining the transport into the matching structures, control
//! frames (acknowledgements, the global OR flag, abort), and the [`Task`]s
//! that every wait advances (non-blocking collectives).

use super::matching::Offers;
use super::{Engine, Group, State};
use crate::error::Result;
use crate::trace::recorder::{self, Event};
use crate::transport::{Arrival, Frame, Payload, Transport};
use crate::wire::{Header, Kind};
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::Duration;

/// Something the engine advances while any wait of the rank spins: a
/// non-blocking collective, or a blocking one being run.
pub(crate) trait Task {
    /// Make progress without blocking; true when finished.
    fn advance(&mut self, e: &Engine) -> bool;
    /// The result once finished (taken once).
    fn take_result(&mut self) -> Option<Result<()>>;
    /// The group it runs on (for failure detection and messages).
    fn group(&self) -> &Rc<Group>;
    /// What it is, for timeout messages.
    fn describe(&self) -> String;
    /// Withdraw every outstanding request (after an error or timeout).
    fn withdraw(&mut self, e: &Engine);
}

/// A boxed task is a task (lets one start function return differently
/// typed tasks, e.g. plain and segmented scans).
impl<X: Task + ?Sized> Task for Box<X> {
    fn advance(&mut self, e: &Engine) -> bool {
        (**self).advance(e)
    }
    fn take_result(&mut self) -> Option<Result<()>> {
        (**self).take_result()
    }
    fn group(&self) -> &Rc<Group> {
        (**self).group()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn withdraw(&mut self, e: &Engine) {
        (**self).withdraw(e)
    }
}

impl Engine {
    /// Register a non-blocking collective so that every wait advances it,
    /// until it is dropped or [unregistered](Engine::unregister).
    ///
    /// The engine keeps only this weak reference. A task that borrows
    /// buffers is registered with its lifetime erased; whoever does that
    /// must unregister it before the borrow ends (the request scope does).
    pub(crate) fn register(&self, t: Weak<RefCell<dyn Task>>) {
        let mut v = self.tasks.borrow_mut();
        v.retain(|w| w.strong_count() > 0);
        v.push(t);
    }

    /// Stop advancing `t` (a registered task, or one never registered):
    /// after this the engine cannot reach it.
    pub(crate) fn unregister(&self, t: &RefCell<dyn Task + '_>) {
        let t: *const RefCell<dyn Task + '_> = t;
        self.tasks
            .borrow_mut()
            .retain(|w| w.strong_count() > 0 && !std::ptr::addr_eq(w.as_ptr(), t));
    }

    /// How many tasks are registered and alive.
    #[cfg(test)]
    pub(crate) fn registered(&self) -> usize {
        let v = self.tasks.borrow();
        v.iter().filter(|w| w.strong_count() > 0).count()
    }

    /// Advance every registered task that is not already being advanced.
    #[inline]
    pub(super) fn advance_tasks(&self) {
        if !self.tasks.borrow().is_empty() {
            self.advance_registered();
        }
    }

    fn advance_registered(&self) {
        let live: Vec<Rc<RefCell<dyn Task>>> = {
            let mut v = self.tasks.borrow_mut();
            v.retain(|w| w.strong_count() > 0);
            v.iter().filter_map(|w| w.upgrade()).collect()
        };
        for t in live {
            if let Ok(mut t) = t.try_borrow_mut() {
                t.advance(self);
            }
        }
    }

    /// Run a task to completion (blocking collectives, and waits on
    /// non-blocking ones). On error or timeout the task is withdrawn.
    pub(crate) fn run_task(
        &self,
        task: &RefCell<dyn Task + '_>,
        timeout: Option<Duration>,
        op: &str,
    ) -> Result<()> {
        let group = task.borrow().group().clone();
        let what = || task.try_borrow().map(|t| t.describe()).unwrap_or_default();
        recorder::hook(Event::Wait);
        let r = self.wait_loop(&group, None, timeout, op, &what, |e| {
            let mut t = task.borrow_mut();
            if t.advance(e) {
                Some(t.take_result().unwrap_or(Ok(())))
            } else {
                None
            }
        });
        recorder::hook(Event::Done);
        if r.is_err() {
            task.borrow_mut().withdraw(self);
        }
        r
    }

    // ---------------------------------------------------------------- progress

    /// Drain every arrived frame into the matching structures. (Not
    /// inlined: one call per pass of a wait, which is also how
    /// `bench/callgrind_oneway.py` counts passes.)
    #[inline(never)]
    pub(crate) fn progress(&self) {
        // Most passes of a wait find nothing: a look that costs a few
        // loads, not the drain's machinery.
        if !self.t.idle() {
            self.drain();
        }
        // Credit came back for frames that wait for it.
        self.send_waiting();
    }

    #[inline(never)]
    fn drain(&self) {
        loop {
            match self.t.try_recv_offer(&mut Offers(self)) {
                Arrival::Nothing => break,
                Arrival::Taken => {}
                Arrival::Frame(f) => self.handle(f),
                Arrival::Filled(h) => self.filled(&h),
                Arrival::Withdrawn(src) => self.withdrawn(src),
            }
        }
    }

    pub(super) fn ack(&self, to: u32, id: u64, taken: usize) {
        let _ = self.t.send(Frame {
            header: Header {
                kind: Kind::SyncAck,
                flags: 0,
                src: self.me,
                dst: to,
                context: 0,
                tag: 0,
                id,
                len: taken as u64,
            },
            payload: Payload::Bytes(Vec::new()),
        });
    }

    /// Send a control frame (no payload semantics for matching).
    pub(crate) fn control(&self, to: u32, kind: Kind, id: u64, payload: Vec<u8>) {
        self.control_in(0, to, kind, id, payload);
    }

    /// [`Engine::control`] about the communicator of context `ctx`.
    fn control_in(&self, ctx: u64, to: u32, kind: Kind, id: u64, payload: Vec<u8>) {
        let _ = self.t.send(Frame {
            header: Header {
                kind,
                flags: 0,
                src: self.me,
                dst: to,
                context: ctx,
                tag: 0,
                id,
                len: payload.len() as u64,
            },
            payload: Payload::Bytes(payload),
        });
    }

    // ------------------------------------------------------------ global OR

    /// Set this endpoint's global-OR bit of the communicator with user
    /// context `ctx` and tell the members of its group `g`.
    pub(crate) fn set_global_or(&self, g: &Group, ctx: u64, v: bool) {
        let changed = {
            let mut st = self.st.borrow_mut();
            let me = self.me as usize;
            let bits = self.or_bits(&mut st, ctx);
            let old = bits[me];
            bits[me] = v;
            old != v
        };
        if changed {
            for m in g.members().filter(|&m| m != self.me) {
                self.control_in(ctx, m, Kind::GlobalOr, v as u64, Vec::new());
            }
        }
    }

    /// The global-OR bits of every endpoint for the communicator of context
    /// `ctx` (all clear until one is set).
    pub(super) fn or_bits<'s>(&self, st: &'s mut State, ctx: u64) -> &'s mut Vec<bool> {
        let n = self.t.endpoints();
        st.global_or.entry(ctx).or_insert_with(|| vec![false; n])
    }

    /// The OR of the latest bits known from the members of `g` for the
    /// communicator with user context `ctx`.
    pub(crate) fn get_global_or(&self, g: &Group, ctx: u64) -> bool {
        self.progress();
        let st = self.st.borrow();
        st.global_or
            .get(&ctx)
            .is_some_and(|bits| g.members().any(|m| bits[m as usize]))
    }
}
