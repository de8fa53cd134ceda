//! Peer states, abort and the end of a simulated job, and what each rank
//! waits for (for timeout and deadlock messages).

use super::config::REPORT_ENV;
use super::world::{lock, Job};
use crate::transport::PeerState;
use std::io::Write;

/// What a finished simulated job did.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Each endpoint's virtual time when it left the job (seconds).
    pub end: Vec<f64>,
    /// Messages sent.
    pub messages: u64,
    /// Words sent.
    pub words: f64,
}

impl Summary {
    /// The virtual time the last endpoint left.
    pub fn time(&self) -> f64 {
        self.end.iter().copied().fold(0.0, f64::max)
    }
}

impl Job {
    /// What is known about endpoint `ep`.
    pub(super) fn peer_state(&self, ep: usize) -> PeerState {
        if self.visible.alive[ep].load(std::sync::atomic::Ordering::Acquire) {
            return PeerState::Alive;
        }
        lock(&self.world).ranks[ep].state.clone()
    }

    /// Endpoint `me` aborts the job (the first abort wins).
    pub(super) fn abort(&self, me: usize, message: &str) {
        let mut w = lock(&self.world);
        if w.aborted.is_none() {
            w.aborted = Some((me, message.to_string()));
        }
        w.wake_waiting();
    }

    /// Endpoint `me` leaves the job; when it holds the turn, it hands it on.
    pub(super) fn close(&self, me: usize, outcome: Result<(), String>, holder: bool) {
        let mut w = lock(&self.world);
        let now = w.queue.now();
        let rk = &mut w.ranks[me];
        if !rk.gone {
            rk.gone = true;
            let st = match outcome {
                Ok(()) => PeerState::Finished,
                Err(m) => PeerState::Failed(m),
            };
            // The others see it gone once its frames have arrived.
            if rk.in_flight == 0 {
                rk.state = st;
                self.visible.alive[me].store(false, std::sync::atomic::Ordering::Release);
            } else {
                rk.leaving = Some(st);
            }
            rk.end = Some(now);
        }
        rk.inbox.clear();
        rk.waiting = false;
        w.wake_waiting();
        let done = w.ranks.iter().all(|r| r.gone);
        if done {
            if let Some(path) = std::env::var_os(REPORT_ENV) {
                let s = self.summary_of(&w);
                let line = format!(
                    "end={} ranks={} messages={} words={}\n",
                    s.time(),
                    s.end.len(),
                    s.messages,
                    s.words
                );
                // A report that cannot be written loses a line of output,
                // not the job's results.
                let _ = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut f| f.write_all(line.as_bytes()));
            }
        }
        if holder {
            self.pass(me, w, true);
        }
    }

    /// What the job did so far (its end once every endpoint has left).
    pub fn summary(&self) -> Summary {
        self.summary_of(&lock(&self.world))
    }

    fn summary_of(&self, w: &super::world::World) -> Summary {
        Summary {
            end: w.ranks.iter().map(|r| r.end.unwrap_or(f64::NAN)).collect(),
            messages: w.messages,
            words: w.words,
        }
    }

    /// What every endpoint but `me` is doing or waiting for.
    pub(super) fn describe_waits(&self, me: usize) -> String {
        let w = lock(&self.world);
        let mut out = format!(" (virtual time {} s)", w.queue.now());
        for (i, r) in w.ranks.iter().enumerate() {
            if i == me {
                continue;
            }
            let st = match &r.state {
                PeerState::Finished => "finished".to_string(),
                PeerState::Failed(m) => format!("failed ({m})"),
                PeerState::Alive => match &r.waiting_for {
                    Some(what) => format!("waiting for {what}"),
                    None if self.is_turn(i) => "running".to_string(),
                    None => "ready".to_string(),
                },
            };
            out.push_str(&format!("; endpoint {i}: {st}"));
        }
        out
    }
}
