//! Deadlock detection for transports that see the whole job (threads,
//! shared memory): when every endpoint is blocked — waiting with no
//! deadline — or has ended, and no frame is in flight, nothing can ever
//! happen again, and every blocked endpoint is told so.
//!
//! Each endpoint counts the frames it hands to a live receiver (`sent`)
//! and the frames it takes in (`drained`, also those dropped unread when
//! it ends), and publishes both when it blocks and when it ends. Blocking
//! bumps its *epoch* to an odd number, waking bumps it to even, so an
//! endpoint found blocked with the same epoch twice did nothing in between.
//! An endpoint that blocks records how many endpoints of the job had ended
//! (`ends`) when it last let its engine look at its peers; one that sees
//! the count changed returns at once instead (its engine then notices the
//! end: a `PeerFailed` is the right answer there, not a deadlock).
//!
//! [`detect`] reads every endpoint twice (a double collect): when both
//! reads find every endpoint ended or blocked in the same epoch, every
//! blocked one having seen every end, and as many frames drained as sent,
//! there was a moment between the two reads when every endpoint was
//! blocked and nothing was in flight; as blocked endpoints change nothing,
//! that lasts for ever. The endpoint that finds it declares the deadlock
//! (the blocked endpoints and their epochs, and what each waits for) and
//! wakes everyone; each blocked endpoint then reports it once, from the
//! wait it was blocked in ([`crate::transport::Transport::deadlock`]).
//!
//! A frame dropped because its receiver ended counts as neither sent nor
//! drained; one that a receiver never takes keeps the counts apart, so a
//! doubtful case is never called a deadlock (it can still time out).

/// What one endpoint published, as the detector reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    /// The endpoint has ended (finished or failed).
    pub(crate) ended: bool,
    /// Odd while blocked.
    pub(crate) epoch: u64,
    /// Frames it handed to live receivers, as of its last block or its end.
    pub(crate) sent: u64,
    /// Frames it took in (or dropped unread at its end).
    pub(crate) drained: u64,
    /// The job's count of ended endpoints when it blocked.
    pub(crate) ends_seen: u64,
}

/// What a detector needs to see of a job.
pub(crate) trait JobView {
    /// Number of endpoints.
    fn endpoints(&self) -> usize;
    /// What endpoint `e` published.
    fn published(&self, e: usize) -> Published;
    /// How many endpoints have ended so far.
    fn ends(&self) -> u64;
    /// Whether the job was aborted (then nobody is deadlocked: the abort
    /// is the news).
    fn aborted(&self) -> bool;
    /// Whether a lend ended that its lender has not seen end yet: that
    /// lender, found blocked, is woken without a frame. Default: no.
    fn unsettled(&self) -> bool {
        false
    }
    /// Whether every endpoint may be blocked or ended, from a count the
    /// job keeps (never false when all are): when false, [`detect`] reads
    /// no endpoint. Default: maybe.
    fn may_be_quiet(&self) -> bool {
        true
    }
    /// Whether endpoint `e`, found blocked, can really still run (shared
    /// memory: its process exists). Default: yes.
    fn alive(&self, e: usize) -> bool {
        let _ = e;
        true
    }
}

/// Is the job deadlocked? The epoch of every endpoint (0 for an ended one)
/// when it is. See the module docs.
pub(crate) fn detect(v: &impl JobView) -> Option<Vec<u64>> {
    if v.aborted() || !v.may_be_quiet() {
        return None;
    }
    let n = v.endpoints();
    let first: Vec<Published> = (0..n).map(|e| v.published(e)).collect();
    let quiet = |p: &Published| p.ended || p.epoch & 1 == 1;
    if !first.iter().all(quiet) || first.iter().all(|p| p.ended) {
        return None;
    }
    let ends = v.ends();
    if v.unsettled() {
        return None;
    }
    let second: Vec<Published> = (0..n).map(|e| v.published(e)).collect();
    if first != second || v.ends() != ends || v.unsettled() {
        return None;
    }
    if second.iter().any(|p| !p.ended && p.ends_seen != ends) {
        return None;
    }
    let sent: u64 = second.iter().map(|p| p.sent).sum();
    let drained: u64 = second.iter().map(|p| p.drained).sum();
    if sent != drained {
        return None;
    }
    if (0..n).any(|e| !second[e].ended && !v.alive(e)) {
        return None;
    }
    Some(
        second
            .iter()
            .map(|p| if p.ended { 0 } else { p.epoch })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Job(Vec<Published>, u64);
    impl JobView for Job {
        fn unsettled(&self) -> bool {
            false
        }
        fn endpoints(&self) -> usize {
            self.0.len()
        }
        fn published(&self, e: usize) -> Published {
            self.0[e]
        }
        fn ends(&self) -> u64 {
            self.1
        }
        fn aborted(&self) -> bool {
            false
        }
    }

    fn blocked(epoch: u64, sent: u64, drained: u64) -> Published {
        Published {
            ended: false,
            epoch,
            sent,
            drained,
            ends_seen: 0,
        }
    }

    #[test]
    fn every_endpoint_blocked_and_nothing_in_flight_is_a_deadlock() {
        let job = Job(vec![blocked(3, 2, 1), blocked(5, 1, 2)], 0);
        assert_eq!(detect(&job), Some(vec![3, 5]));
    }

    #[test]
    fn a_running_endpoint_a_frame_in_flight_or_an_unseen_end_is_not() {
        assert_eq!(
            detect(&Job(vec![blocked(3, 0, 0), blocked(4, 0, 0)], 0)),
            None
        );
        assert_eq!(
            detect(&Job(vec![blocked(3, 2, 1), blocked(5, 1, 1)], 0)),
            None
        );
        let ended = Published {
            ended: true,
            ..blocked(2, 0, 0)
        };
        // Endpoint 0 blocked before endpoint 1 ended: its engine has not
        // looked at the end yet.
        assert_eq!(detect(&Job(vec![blocked(3, 0, 0), ended], 1)), None);
        let seen = Published {
            ends_seen: 1,
            ..blocked(3, 0, 0)
        };
        assert_eq!(detect(&Job(vec![seen, ended], 1)), Some(vec![3, 0]));
        assert_eq!(
            detect(&Job(vec![ended, ended], 2)),
            None,
            "nobody is blocked"
        );
    }

    /// Every endpoint blocked and every frame drained, but a lend ended
    /// that its lender has not seen: the lender was woken without a frame
    /// (a reader finished copying its buffer) and is about to run.
    #[test]
    fn an_ended_lend_its_lender_has_not_seen_is_not() {
        struct Lending(Job);
        impl JobView for Lending {
            fn endpoints(&self) -> usize {
                self.0.endpoints()
            }
            fn published(&self, e: usize) -> Published {
                self.0.published(e)
            }
            fn ends(&self) -> u64 {
                self.0.ends()
            }
            fn aborted(&self) -> bool {
                false
            }
            fn unsettled(&self) -> bool {
                true
            }
        }
        let both = || Job(vec![blocked(3, 2, 1), blocked(5, 1, 2)], 0);
        assert_eq!(detect(&Lending(both())), None);
        assert_eq!(detect(&both()), Some(vec![3, 5]));
    }
}
