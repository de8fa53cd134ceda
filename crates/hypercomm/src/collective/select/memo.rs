//! The memo: recent algorithm choices and schedules of one communicator.
//!
//! Applications call the same collective with the same sizes over and over;
//! choosing by the cost model and generating the schedule cost more than
//! the rest of a small call (callgrind: about 560 and 400 instructions of
//! 2 400). The last [`MEMO_LEN`] of each are kept; a schedule is pure data
//! determined by its key, so sharing it between calls changes nothing.
//! [`Comm::choose_memo`](crate::Comm::choose_memo) and
//! [`Comm::schedule`](crate::Comm::schedule) (in `select/mod.rs`) consult
//! it; this file imports nothing from the communicator.

use super::options::{Algorithm, Collective, Topology};
use crate::collective::kind::Kind;
use hypercomm_algo::{RingOrder, Schedule};
use std::cell::RefCell;
use std::rc::Rc;

/// Recent algorithm choices and schedules of one communicator.
#[derive(Default)]
pub(crate) struct Memo {
    choices: RefCell<Vec<(ChoiceKey, Algorithm)>>,
    scheds: RefCell<Vec<(SchedKey, Rc<Schedule>)>>,
}

/// How many choices and schedules a communicator remembers.
const MEMO_LEN: usize = 8;

/// What an `Auto` choice depends on (the transport and the machine are
/// fixed for a communicator): the collective, the participants, the bytes,
/// whether the operator commutes, reproducible mode and the topology.
pub(crate) type ChoiceKey = (Collective, usize, usize, bool, bool, Topology);

/// What a schedule depends on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct SchedKey {
    pub(crate) kind: Kind,
    pub(crate) alg: Algorithm,
    pub(crate) p: usize,
    pub(crate) me: usize,
    pub(crate) count: usize,
    pub(crate) root: usize,
    pub(crate) seg: usize,
    pub(crate) order: RingOrder,
}

impl Memo {
    /// The remembered choice for `key`.
    pub(crate) fn choice(&self, key: &ChoiceKey) -> Option<Algorithm> {
        recall(&self.choices, key)
    }

    /// Remember a choice (forgetting the oldest when full).
    pub(crate) fn remember_choice(&self, key: ChoiceKey, a: Algorithm) {
        remember(&self.choices, key, &a);
    }

    /// The remembered schedule for `key`.
    pub(crate) fn schedule(&self, key: &SchedKey) -> Option<Rc<Schedule>> {
        recall(&self.scheds, key)
    }

    /// Remember a schedule (forgetting the oldest when full).
    pub(crate) fn remember_schedule(&self, key: SchedKey, s: &Rc<Schedule>) {
        remember(&self.scheds, key, s);
    }
}

fn remember<K: PartialEq, V: Clone>(v: &RefCell<Vec<(K, V)>>, key: K, val: &V) {
    let mut v = v.borrow_mut();
    if v.len() >= MEMO_LEN {
        v.remove(0);
    }
    v.push((key, val.clone()));
}

fn recall<K: PartialEq, V: Clone>(v: &RefCell<Vec<(K, V)>>, key: &K) -> Option<V> {
    v.borrow()
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, a)| a.clone())
}
