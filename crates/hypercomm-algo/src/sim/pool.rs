//! Schedules in the compact form the simulator reads, shared between the
//! participants whose schedules are the same up to their own number.
//!
//! Only messages cost time in seed 001's model, so a participant's
//! schedule is kept as its Sends and Recvs, one `u64` each (kind, whether
//! it ends its round, the peer, the length); rounds without messages
//! vanish. The peer is stored relative to the participant, as `peer XOR
//! me` or as `peer − me mod p`, whichever makes it equal to a schedule
//! already kept: on a hypercube every participant of recursive doubling
//! has the same relative schedule, on a ring every one of the ring
//! algorithms. A million participants then share a handful of schedules.
//!
//! Beside each op its ordinal is kept: how many Sends to (or Recvs from)
//! the same peer come before it in the schedule. The k-th message from q
//! to r matches r's k-th Recv from q (FIFO per pair), whatever order the
//! network delivers them in.

use crate::schedule::{Op, Schedule};
use std::collections::HashMap;

const RECV: u64 = 1 << 63;
const LAST: u64 = 1 << 62;
const PEER_SHIFT: u32 = 32;
const PEER_MASK: u64 = (1 << 30) - 1;

/// One compact op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cop(u64);

impl Cop {
    #[inline]
    pub(crate) fn is_recv(self) -> bool {
        self.0 & RECV != 0
    }
    #[inline]
    pub(crate) fn ends_round(self) -> bool {
        self.0 & LAST != 0
    }
    #[inline]
    fn rel(self) -> usize {
        ((self.0 >> PEER_SHIFT) & PEER_MASK) as usize
    }
    /// Length in elements.
    #[inline]
    pub(crate) fn len(self) -> u32 {
        self.0 as u32
    }
}

/// How a kept schedule's peers relate to its participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relative {
    Xor,
    Sub,
}

#[derive(Debug, Clone)]
struct Kept {
    start: usize,
    len: usize,
    rel: Relative,
    /// The next kept schedule with the same hash.
    next: u32,
}

const NONE: u32 = u32::MAX;

/// Why a schedule cannot be kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PoolError {
    /// A message longer than 2^32 − 1 elements.
    TooLong { me: usize, len: usize },
    /// A peer outside `0..p`.
    Peer { me: usize, peer: usize },
}

/// The kept schedules.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    p: usize,
    ops: Vec<u64>,
    /// Each op's ordinal among the ops of its kind and peer.
    ords: Vec<u32>,
    /// Scratch counts for the ordinals, by kind and relative peer.
    counts: HashMap<u64, u32>,
    kept: Vec<Kept>,
    heads: [HashMap<u64, u32>; 2],
    hits: [usize; 2],
    scratch: [Vec<u64>; 2],
    added: usize,
}

/// FxHash over the words.
fn hash(words: &[u64]) -> u64 {
    let mut h: u64 = words.len() as u64;
    for &w in words {
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    h
}

impl Pool {
    pub(crate) fn new(p: usize) -> Pool {
        Pool {
            p,
            ..Pool::default()
        }
    }

    /// Participants (p).
    pub(crate) fn participants(&self) -> usize {
        self.p
    }

    /// Number of distinct schedules kept.
    pub(crate) fn distinct(&self) -> usize {
        self.kept.len()
    }

    /// Keep participant `me`'s schedule; returns its index.
    pub(crate) fn add(&mut self, me: usize, s: &Schedule) -> Result<u32, PoolError> {
        let mut hs = [0u64; 2];
        for (k, rel) in [(0, Relative::Xor), (1, Relative::Sub)] {
            self.encode(k, rel, me, s)?;
            hs[k] = hash(&self.scratch[k]);
            if let Some(i) = self.find(k, hs[k]) {
                self.hits[k] += 1;
                return Ok(i);
            }
        }
        // New: keep the forms that have paid off so far (both at first).
        self.added += 1;
        let keep = [
            self.added <= 256 || self.hits[0] > 0 || self.hits[1] == 0,
            self.added <= 256 || self.hits[1] > 0,
        ];
        let mut first = NONE;
        for k in 0..2 {
            if !keep[k] {
                continue;
            }
            let idx = self.kept.len() as u32;
            let start = self.push(k);
            let head = self.heads[k].insert(hs[k], idx).unwrap_or(NONE);
            self.kept.push(Kept {
                start,
                len: self.scratch[k].len(),
                rel: if k == 0 { Relative::Xor } else { Relative::Sub },
                next: head,
            });
            if first == NONE {
                first = idx;
            }
        }
        Ok(first)
    }

    /// Keep participant `me`'s schedule in one form only (`xor`: peers as
    /// `peer XOR me`, else as `peer − me mod p`), for participants declared
    /// alike in that form (the `shared` module); returns its index.
    pub(crate) fn add_form(
        &mut self,
        me: usize,
        s: &Schedule,
        xor: bool,
    ) -> Result<u32, PoolError> {
        let (k, rel) = if xor {
            (0, Relative::Xor)
        } else {
            (1, Relative::Sub)
        };
        self.encode(k, rel, me, s)?;
        let h = hash(&self.scratch[k]);
        if let Some(i) = self.find(k, h) {
            return Ok(i);
        }
        let idx = self.kept.len() as u32;
        let start = self.push(k);
        let head = self.heads[k].insert(h, idx).unwrap_or(NONE);
        self.kept.push(Kept {
            start,
            len: self.scratch[k].len(),
            rel,
            next: head,
        });
        Ok(idx)
    }

    /// Append `scratch[k]` to the kept ops, with its ordinals; where it
    /// starts.
    fn push(&mut self, k: usize) -> usize {
        let start = self.ops.len();
        self.counts.clear();
        for &w in &self.scratch[k] {
            let n = self
                .counts
                .entry(w & (RECV | PEER_MASK << PEER_SHIFT))
                .or_insert(0);
            self.ords.push(*n);
            *n += 1;
        }
        self.ops.extend_from_slice(&self.scratch[k]);
        start
    }

    /// Whether participant `me`'s schedule `s` is kept schedule `i` (in
    /// `i`'s form).
    pub(crate) fn is(&mut self, i: u32, me: usize, s: &Schedule) -> Result<bool, PoolError> {
        let e = self.kept[i as usize].clone();
        let k = usize::from(e.rel == Relative::Sub);
        self.encode(k, e.rel, me, s)?;
        Ok(self.ops[e.start..e.start + e.len] == self.scratch[k][..])
    }

    /// The kept schedule of form `k` equal to `scratch[k]`, if any.
    fn find(&self, k: usize, h: u64) -> Option<u32> {
        let mut i = self.heads[k].get(&h).copied().unwrap_or(NONE);
        while i != NONE {
            let e = &self.kept[i as usize];
            if self.ops[e.start..e.start + e.len] == self.scratch[k][..] {
                return Some(i);
            }
            i = e.next;
        }
        None
    }

    /// `me`'s messages in form `rel`, into `scratch[k]`.
    fn encode(
        &mut self,
        k: usize,
        rel: Relative,
        me: usize,
        s: &Schedule,
    ) -> Result<(), PoolError> {
        let p = self.p;
        let out = &mut self.scratch[k];
        out.clear();
        for r in &s.rounds {
            for op in &r.ops {
                let (recv, peer, len) = match op {
                    Op::Send { to, region } => (0, *to, region.len),
                    Op::Recv { from, region } => (RECV, *from, region.len),
                    _ => continue,
                };
                if peer >= p {
                    return Err(PoolError::Peer { me, peer });
                }
                if len > u32::MAX as usize {
                    return Err(PoolError::TooLong { me, len });
                }
                let r = match rel {
                    Relative::Xor => peer ^ me,
                    Relative::Sub => (peer + p - me) % p,
                } as u64;
                out.push(recv | (r & PEER_MASK) << PEER_SHIFT | len as u64);
            }
            // A round's last message ends it (a round of local ops only
            // marks the end of the round before, again).
            if let Some(last) = out.last_mut() {
                *last |= LAST;
            }
        }
        Ok(())
    }

    /// Number of ops of kept schedule `i`.
    #[inline]
    pub(crate) fn len(&self, i: u32) -> usize {
        self.kept[i as usize].len
    }

    /// Op `j` of kept schedule `i`.
    #[inline]
    pub(crate) fn op(&self, i: u32, j: usize) -> Cop {
        let e = &self.kept[i as usize];
        Cop(self.ops[e.start + j])
    }

    /// The ordinal of op `j` of kept schedule `i`: how many ops of its
    /// kind (Send or Recv) with the same peer come before it.
    #[inline]
    pub(crate) fn ord(&self, i: u32, j: usize) -> u32 {
        self.ords[self.kept[i as usize].start + j]
    }

    /// Op `j` of kept schedule `i` and its ordinal ([`Pool::ord`]).
    #[inline]
    pub(crate) fn op_ord(&self, i: u32, j: usize) -> (Cop, u32) {
        let at = self.kept[i as usize].start + j;
        (Cop(self.ops[at]), self.ords[at])
    }

    /// The peer of op `c` of kept schedule `i` for participant `me`.
    #[inline]
    pub(crate) fn peer(&self, i: u32, c: Cop, me: usize) -> usize {
        match self.kept[i as usize].rel {
            Relative::Xor => c.rel() ^ me,
            Relative::Sub => (c.rel() + me) % self.p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allreduce_recursive_doubling;

    #[test]
    fn symmetric_schedules_are_kept_once() {
        let p = 64;
        let mut pool = Pool::new(p);
        let ids: Vec<u32> = (0..p)
            .map(|me| {
                pool.add(me, &allreduce_recursive_doubling(me, p, 5))
                    .unwrap()
            })
            .collect();
        assert!(ids.iter().all(|&i| i == ids[0]));
        assert_eq!(pool.distinct(), 2, "one form of each kind");
        let s = allreduce_recursive_doubling(9, p, 5);
        let mut j = 0;
        for op in s.ops() {
            let (peer, recv) = match op {
                Op::Send { to, .. } => (*to, false),
                Op::Recv { from, .. } => (*from, true),
                _ => continue,
            };
            let c = pool.op(ids[9], j);
            assert_eq!(
                (pool.peer(ids[9], c, 9), c.is_recv(), c.len()),
                (peer, recv, 5)
            );
            j += 1;
        }
        assert_eq!(j, pool.len(ids[9]));
        // A ring algorithm shares by difference, not by XOR: participant 0
        // keeps both forms, the others use the second.
        let mut pool = Pool::new(12);
        let ids: Vec<u32> = (0..12)
            .map(|me| {
                let counts = vec![2; 12];
                pool.add(
                    me,
                    &crate::allgather_ring(me, &counts, Default::default(), false),
                )
                .unwrap()
            })
            .collect();
        assert!(ids[1..].iter().all(|&i| i == ids[0] + 1), "{ids:?}");
        assert_eq!(pool.distinct(), 2);
    }
}
