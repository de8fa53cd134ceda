//! Ring orders (PICL `setarc0`: natural or Gray-code order, forward or
//! backward; seed 003, setarc0 manual page).
//!
//! A ring order maps each participant to a *position* 0..p; ring algorithms
//! pass data from position i to position i+1 (mod p). Gray order for p not a
//! power of two uses the Gray sequence of the next power of two with the
//! numbers ≥ p left out (PICL's "incomplete hypercube"); consecutive
//! positions are then hypercube neighbours except where a number was left
//! out.
//!
//! The reduce-scatter phase shared by the ring allreduce and the ring
//! reduce-scatter ([`crate::allreduce_ring()`],
//! [`crate::reduce_scatter_ring()`]) lives here too, so that the algorithm
//! files keep the `<collective>_<algorithm>.rs` names.
//!
//! Not done yet: Gray positions for p not a power of two cost O(p) per call.

use crate::hypercube::{gray, gray_inverse};
use crate::schedule::{recv, reduce, send, Buf, Region, Schedule};

/// How participants are arranged on a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingOrder {
    /// Gray-code order (0, 1, 3, 2, 6, …) instead of natural order.
    pub gray: bool,
    /// Forward: data flows along the order (0 → 1 → 2 …); backward: against it
    /// (0 → p-1 → p-2 …).
    pub forward: bool,
}

impl Default for RingOrder {
    fn default() -> Self {
        RingOrder::NATURAL
    }
}

impl RingOrder {
    /// Natural order, forward.
    pub const NATURAL: RingOrder = RingOrder {
        gray: false,
        forward: true,
    };
    /// Gray order, forward.
    pub const GRAY: RingOrder = RingOrder {
        gray: true,
        forward: true,
    };

    /// The participants in order (index = sequence index before applying
    /// direction).
    fn seq_index(&self, rank: usize, p: usize) -> usize {
        if !self.gray {
            return rank;
        }
        if p.is_power_of_two() {
            return gray_inverse(rank);
        }
        let g = gray_inverse(rank);
        (0..g).filter(|&i| gray(i) < p).count()
    }

    fn seq_rank(&self, idx: usize, p: usize) -> usize {
        if !self.gray {
            return idx;
        }
        if p.is_power_of_two() {
            return gray(idx);
        }
        (0..)
            .map(gray)
            .filter(|&g| g < p)
            .nth(idx)
            .expect("index < p")
    }

    /// Position of `rank` on the ring of `p` (position 0 is rank 0).
    pub fn position(&self, rank: usize, p: usize) -> usize {
        assert!(rank < p);
        let s = self.seq_index(rank, p);
        if self.forward {
            s
        } else {
            (p - s) % p
        }
    }

    /// The rank at position `pos` (taken mod p).
    pub fn rank_at(&self, pos: usize, p: usize) -> usize {
        let pos = pos % p;
        let s = if self.forward { pos } else { (p - pos) % p };
        self.seq_rank(s, p)
    }

    /// The rank data is sent to from `rank`.
    pub fn next(&self, rank: usize, p: usize) -> usize {
        self.rank_at(self.position(rank, p) + 1, p)
    }

    /// The rank data comes from to `rank`.
    pub fn prev(&self, rank: usize, p: usize) -> usize {
        self.rank_at(self.position(rank, p) + p - 1, p)
    }

    /// Position of `rank` counted from `root` along the ring direction.
    pub fn distance_from(&self, root: usize, rank: usize, p: usize) -> usize {
        (self.position(rank, p) + p - self.position(root, p)) % p
    }
}

/// The ring reduce-scatter phase, in place on the regions `block(q)` of one
/// buffer (already holding this rank's contribution): `block(q)` is the
/// region finally owned by ring position `q`; `tmp` is a scratch buffer at
/// least as long as the largest block. After p-1 steps position i holds the
/// full reduction of `block(i)` (contributions combined in ring order
/// starting after i, so a commutative operator is required).
pub(crate) fn reduce_scatter_phase(
    s: &mut Schedule,
    rank: usize,
    p: usize,
    order: RingOrder,
    block: &dyn Fn(usize) -> Region,
    tmp: Buf,
) {
    let i = order.position(rank, p);
    let next = order.next(rank, p);
    let prev = order.prev(rank, p);
    for st in 0..p.saturating_sub(1) {
        // Step st: send the partial of block i-st-1, receive that of block
        // i-st-2 and add my contribution to it.
        let sb = block((i + 2 * p - st - 1) % p);
        let rb = block((i + 2 * p - st - 2) % p);
        let t = Region::new(tmp, 0, rb.len);
        s.push(vec![send(next, sb), recv(prev, t), reduce(t, rb, true)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_permutations_and_inverse() {
        for p in 1..=40 {
            for gray in [false, true] {
                for forward in [false, true] {
                    let o = RingOrder { gray, forward };
                    let mut seen = vec![false; p];
                    for pos in 0..p {
                        let r = o.rank_at(pos, p);
                        assert!(!seen[r]);
                        seen[r] = true;
                        assert_eq!(o.position(r, p), pos);
                        assert_eq!(o.prev(o.next(r, p), p), r);
                    }
                }
            }
        }
    }

    #[test]
    fn picl_examples() {
        let g = RingOrder::GRAY;
        assert_eq!(
            (0..4).map(|i| g.rank_at(i, 4)).collect::<Vec<_>>(),
            [0, 1, 3, 2]
        );
        let b = RingOrder {
            gray: false,
            forward: false,
        };
        assert_eq!(b.next(0, 5), 4);
        assert_eq!(b.next(3, 5), 2);
        // incomplete hypercube: 0 1 3 2 6 7 5 4 without 6 and 7
        assert_eq!(
            (0..6).map(|i| g.rank_at(i, 6)).collect::<Vec<_>>(),
            [0, 1, 3, 2, 5, 4]
        );
    }
}
