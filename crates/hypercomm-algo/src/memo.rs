//! The memo of selection: recent algorithm choices and schedules of one
//! communicator.
//!
//! Applications call the same collective with the same sizes over and over;
//! choosing by the cost model and generating the schedule cost more than
//! the rest of a small call (callgrind: about 560 and 400 instructions of
//! 2 400). The last [`MEMO_LEN`] of each are kept; a schedule is pure data
//! determined by its key, so sharing it between calls changes nothing.

use crate::{Algorithm, Collective, Direction, Inclusion, RingOrder, Schedule, Topology};
use std::cell::RefCell;
use std::rc::Rc;

/// How many choices and schedules a memo remembers.
pub const MEMO_LEN: usize = 8;

/// What a choice depends on (the transport and the machine are fixed for
/// a communicator).
#[derive(Debug, Clone, Copy)]
pub struct ChoiceKey {
    /// The collective asked about.
    pub collective: Collective,
    /// The algorithm asked for (`Auto`, or a forced one, whose choice is
    /// a check that the collective has it).
    pub algorithm: Algorithm,
    /// Participants.
    pub p: usize,
    /// Bytes, as [`Collective`] counts them.
    pub bytes: usize,
    /// Whether the operator commutes.
    pub commutative: bool,
    /// Reproducible mode.
    pub reproducible: bool,
    /// The communicator's topology setting.
    pub topology: Topology,
}

impl PartialEq for ChoiceKey {
    /// Field by field, the algorithm by the address of its name, as for
    /// [`SchedKey`] (a name compared by its bytes cost a lookup more than
    /// the rest of the key).
    fn eq(&self, o: &Self) -> bool {
        self.bytes == o.bytes
            && self.p == o.p
            && self.collective == o.collective
            && std::ptr::eq(self.algorithm.name(), o.algorithm.name())
            && self.commutative == o.commutative
            && self.reproducible == o.reproducible
            && self.topology == o.topology
    }
}

impl Eq for ChoiceKey {}

/// What a schedule depends on (fixed-count calls).
#[derive(Debug, Clone, Copy)]
pub struct SchedKey {
    /// The operation (its own code: a scan and an exclusive scan differ).
    pub collective: Collective,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Participants.
    pub p: usize,
    /// This participant.
    pub me: usize,
    /// Elements.
    pub count: usize,
    /// Root participant.
    pub root: usize,
    /// Pipeline segment, elements.
    pub segment: usize,
    /// Ring order.
    pub order: RingOrder,
    /// Scan direction.
    pub direction: Direction,
    /// Scan inclusion.
    pub inclusion: Inclusion,
    /// The counts were given per node, every one `count` (a fixed-count
    /// allgather made through the variable-count generator).
    pub per_node: bool,
}

impl PartialEq for SchedKey {
    /// Field by field, the cheap and most telling first; algorithms by the
    /// address of their name (names come from the registry's constants, so
    /// equal names almost always share it; when they do not, the memo
    /// misses and the schedule is made again — never a wrong hit).
    fn eq(&self, o: &Self) -> bool {
        self.count == o.count
            && self.me == o.me
            && self.p == o.p
            && self.root == o.root
            && self.collective == o.collective
            && std::ptr::eq(self.algorithm.name(), o.algorithm.name())
            && self.segment == o.segment
            && self.order == o.order
            && self.direction == o.direction
            && self.inclusion == o.inclusion
            && self.per_node == o.per_node
    }
}

impl Eq for SchedKey {}

/// Recent algorithm choices and schedules of one communicator (single
/// threaded: a communicator belongs to one rank).
#[derive(Debug, Default)]
pub struct Memo {
    choices: RefCell<Vec<(ChoiceKey, Algorithm)>>,
    scheds: RefCell<Vec<(SchedKey, Rc<Schedule>)>>,
}

impl Memo {
    /// The remembered choice for `key`.
    pub fn choice(&self, key: &ChoiceKey) -> Option<Algorithm> {
        recall(&self.choices, key)
    }

    /// Remember a choice (forgetting the oldest when full).
    pub fn remember_choice(&self, key: ChoiceKey, a: Algorithm) {
        remember(&self.choices, key, &a);
    }

    /// The remembered schedule for `key`.
    pub fn schedule(&self, key: &SchedKey) -> Option<Rc<Schedule>> {
        recall(&self.scheds, key)
    }

    /// Remember a schedule (forgetting the oldest when full).
    pub fn remember_schedule(&self, key: SchedKey, s: &Rc<Schedule>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: usize) -> ChoiceKey {
        ChoiceKey {
            collective: Collective::Bcast,
            algorithm: Algorithm::Auto,
            p,
            bytes: 8,
            commutative: true,
            reproducible: false,
            topology: Topology::Auto,
        }
    }

    #[test]
    fn remembers_the_last_ones_only() {
        let m = Memo::default();
        for p in 0..MEMO_LEN + 2 {
            m.remember_choice(key(p), Algorithm::Star);
        }
        assert_eq!(m.choice(&key(0)), None);
        assert_eq!(m.choice(&key(1)), None);
        assert_eq!(m.choice(&key(2)), Some(Algorithm::Star));
        assert_eq!(m.choice(&key(MEMO_LEN + 1)), Some(Algorithm::Star));
    }
}
