//! The thread transport: every endpoint is a thread of this process.
//!
//! Each endpoint has a mailbox (a mutex-protected queue plus an atomic count
//! so an empty poll costs one load). Senders push frames and unpark the
//! receiver only if it is asleep; a receiver drains the whole mailbox under
//! one lock. Large messages travel as borrowed payloads (the receiver copies
//! straight out of the sender's buffer) or handed-off vectors (no copy).
//!
//! Failure: when an endpoint's closure panics or returns an error, `close`
//! marks it failed and wakes everyone; the engine turns that into
//! `PeerFailed` for operations that need it.

use super::{Frame, PeerState, Transport};
use crate::error::Result;
use crossbeam_utils::CachePadded;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const ALIVE: u8 = 0;
const FINISHED: u8 = 1;
const FAILED: u8 = 2;

/// Longest single sleep; bounds the cost of any missed wake-up.
const MAX_SLEEP: Duration = Duration::from_millis(20);

struct Slot {
    queue: Mutex<VecDeque<Frame>>,
    pending: AtomicUsize,
    state: AtomicU8,
    failure: Mutex<Option<String>>,
    sleeping: AtomicBool,
    thread: Mutex<Option<std::thread::Thread>>,
    waiting: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these short locks cannot leave the data
    // inconsistent (every critical section is a single push/pop/assign).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared state of a job whose endpoints are threads.
pub(crate) struct ThreadJob {
    slots: Vec<CachePadded<Slot>>,
    aborted: Mutex<Option<(usize, String)>>,
    abort_flag: AtomicBool,
}

impl ThreadJob {
    /// A job with `endpoints` endpoints.
    pub(crate) fn new(endpoints: usize) -> Arc<ThreadJob> {
        Arc::new(ThreadJob {
            slots: (0..endpoints)
                .map(|_| {
                    CachePadded::new(Slot {
                        queue: Mutex::new(VecDeque::new()),
                        pending: AtomicUsize::new(0),
                        state: AtomicU8::new(ALIVE),
                        failure: Mutex::new(None),
                        sleeping: AtomicBool::new(false),
                        thread: Mutex::new(None),
                        waiting: Mutex::new(None),
                    })
                })
                .collect(),
            aborted: Mutex::new(None),
            abort_flag: AtomicBool::new(false),
        })
    }

    /// The endpoint `me`, to be created on the thread that will use it.
    pub(crate) fn endpoint(self: &Arc<Self>, me: usize) -> ThreadEndpoint {
        *lock(&self.slots[me].thread) = Some(std::thread::current());
        ThreadEndpoint {
            job: self.clone(),
            me,
            local: RefCell::new(VecDeque::new()),
        }
    }

    /// Mark `ep` failed from outside its thread (e.g. after it panicked).
    pub(crate) fn mark_failed(&self, ep: usize, message: String) {
        let slot = &self.slots[ep];
        if slot.state.load(Ordering::Acquire) == ALIVE {
            *lock(&slot.failure) = Some(message);
            slot.state.store(FAILED, Ordering::Release);
            lock(&slot.queue).clear();
            self.wake_all();
        }
    }

    /// Who aborted the job, and why.
    pub(crate) fn abort_info(&self) -> Option<(usize, String)> {
        lock(&self.aborted).clone()
    }

    fn wake_all(&self) {
        for s in &self.slots {
            if let Some(t) = lock(&s.thread).as_ref() {
                t.unpark();
            }
        }
    }
}

/// One thread's endpoint.
pub(crate) struct ThreadEndpoint {
    job: Arc<ThreadJob>,
    me: usize,
    local: RefCell<VecDeque<Frame>>,
}

impl ThreadEndpoint {
    pub(crate) fn aborted(&self) -> Option<(usize, String)> {
        if self.job.abort_flag.load(Ordering::Acquire) {
            lock(&self.job.aborted).clone()
        } else {
            None
        }
    }

    pub(crate) fn set_waiting(&self, what: Option<String>) {
        *lock(&self.job.slots[self.me].waiting) = what;
    }

    pub(crate) fn describe_waits(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.job.slots.iter().enumerate() {
            if i == self.me {
                continue;
            }
            let st = match s.state.load(Ordering::Acquire) {
                FINISHED => "finished".to_string(),
                FAILED => format!("failed ({})", lock(&s.failure).clone().unwrap_or_default()),
                _ => match lock(&s.waiting).clone() {
                    Some(w) => format!("waiting for {w}"),
                    None => "running".to_string(),
                },
            };
            out.push_str(&format!("; endpoint {i}: {st}"));
        }
        out
    }
}

impl Transport for ThreadEndpoint {
    #[inline]
    fn endpoint(&self) -> usize {
        self.me
    }
    #[inline]
    fn endpoints(&self) -> usize {
        self.job.slots.len()
    }

    fn send(&self, frame: Frame) -> Result<()> {
        let slot = &self.job.slots[frame.header.dst as usize];
        if slot.state.load(Ordering::Acquire) != ALIVE {
            // Dropped: a borrowed payload reports DROPPED to its sender.
            return Ok(());
        }
        lock(&slot.queue).push_back(frame);
        slot.pending.fetch_add(1, Ordering::SeqCst);
        if slot.sleeping.load(Ordering::SeqCst) {
            if let Some(t) = lock(&slot.thread).as_ref() {
                t.unpark();
            }
        }
        Ok(())
    }

    #[inline]
    fn try_recv(&self) -> Option<Frame> {
        let mut local = self.local.borrow_mut();
        if let Some(f) = local.pop_front() {
            return Some(f);
        }
        let slot = &self.job.slots[self.me];
        if slot.pending.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = lock(&slot.queue);
        let n = q.len();
        slot.pending.fetch_sub(n, Ordering::AcqRel);
        if n == 1 {
            return q.pop_front();
        }
        std::mem::swap(&mut *q, &mut *local);
        drop(q);
        local.pop_front()
    }

    fn wait(&self, deadline: Option<Instant>) {
        let slot = &self.job.slots[self.me];
        slot.sleeping.store(true, Ordering::SeqCst);
        if slot.pending.load(Ordering::SeqCst) == 0 && !self.job.abort_flag.load(Ordering::SeqCst) {
            let mut d = MAX_SLEEP;
            if let Some(dl) = deadline {
                d = d.min(dl.saturating_duration_since(Instant::now()));
            }
            if !d.is_zero() {
                std::thread::park_timeout(d);
            }
        }
        slot.sleeping.store(false, Ordering::SeqCst);
    }

    fn peer_state(&self, endpoint: usize) -> PeerState {
        let s = &self.job.slots[endpoint];
        match s.state.load(Ordering::Acquire) {
            ALIVE => PeerState::Alive,
            FINISHED => PeerState::Finished,
            _ => PeerState::Failed(lock(&s.failure).clone().unwrap_or_default()),
        }
    }

    fn abort(&self, message: &str) {
        {
            let mut a = lock(&self.job.aborted);
            if a.is_none() {
                *a = Some((self.me, message.to_string()));
            }
        }
        self.job.abort_flag.store(true, Ordering::Release);
        self.job.wake_all();
    }

    fn close(&self, outcome: std::result::Result<(), String>) {
        let slot = &self.job.slots[self.me];
        match outcome {
            Ok(()) => {
                if slot.state.load(Ordering::Acquire) == ALIVE {
                    slot.state.store(FINISHED, Ordering::Release);
                }
            }
            Err(m) => self.job.mark_failed(self.me, m),
        }
        // Drop undelivered frames so that senders of borrowed data wake up.
        lock(&slot.queue).clear();
        self.local.borrow_mut().clear();
        *lock(&slot.thread) = None;
        self.job.wake_all();
    }
}
