//! Segmented scans as CMMD defines them (seed 004, "Segmented Scans" and
//! "Smode and Sbit"), expressed as an ordinary scan with a *lifted*
//! operator, so any scan schedule runs them unchanged.
//!
//! * `segment_bit`: a set bit starts a segment (in rank order) for an upward
//!   scan and ends one for a downward scan — the segments are the same both
//!   ways; values never cross segments; in an exclusive scan the first
//!   element of a segment (in traversal order) gets the identity.
//! * `start_bit`: a set bit starts a segment *in the traversal direction*;
//!   in an exclusive scan a node with a set bit receives the reduction of
//!   the previous segment.
//!
//! The lift: every participant turns its value `v` and bit into
//! [`Lifted`]`{ cut, tail }`, where `cut` says a segment boundary lies within
//! it (before `v` for a start flag, after `v` for an end flag) and `tail` is
//! the combination of the values after its last boundary (`None` when it
//! ends with one). [`lifted_combine`] (earlier ⊕ later) is associative but
//! not commutative. **Executor recipe:** lift, run the ordinary *exclusive*
//! scan schedule of the same direction with [`lifted_combine`] (the first
//! participant in traversal order gets no prefix), then compute the result
//! with [`segmented_finish`] from the received prefix (or `None`). This is
//! the same for inclusive and exclusive segmented scans; it needs only the
//! participant's own bit. [`segmented_scan_serial`] is the serial reference,
//! written straight from the CMMD definitions.

use crate::{Direction, Inclusion};

/// How the scan is segmented (CMMD `smode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Segmentation {
    /// Not segmented (CMMD_none): the bits are ignored.
    None,
    /// CMMD_segment_bit.
    SegmentBit,
    /// CMMD_start_bit.
    StartBit,
}

/// A lifted scan element (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lifted<T> {
    /// A segment boundary lies within this element or range.
    pub cut: bool,
    /// Combination of the values after the last boundary (`None`: empty).
    pub tail: Option<T>,
}

/// `(boundary before me, boundary after me)` in traversal order, from the
/// participant's own bit.
pub fn seg_flags(mode: Segmentation, dir: Direction, bit: bool) -> (bool, bool) {
    match (mode, dir) {
        (Segmentation::None, _) => (false, false),
        (Segmentation::SegmentBit, Direction::Upward) => (bit, false),
        (Segmentation::SegmentBit, Direction::Downward) => (false, bit),
        (Segmentation::StartBit, _) => (bit, false),
    }
}

/// Lift a participant's value.
pub fn lift<T>(mode: Segmentation, dir: Direction, bit: bool, v: T) -> Lifted<T> {
    let (start, end) = seg_flags(mode, dir, bit);
    Lifted {
        cut: start || end,
        tail: if end { None } else { Some(v) },
    }
}

fn opt_combine<T: Clone>(a: &Option<T>, b: &Option<T>, op: &dyn Fn(&T, &T) -> T) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(op(x, y)),
        (Some(x), None) => Some(x.clone()),
        (None, y) => y.clone(),
    }
}

/// The lifted operator: `a` comes earlier in traversal order than `b`.
pub fn lifted_combine<T: Clone>(
    a: &Lifted<T>,
    b: &Lifted<T>,
    op: &dyn Fn(&T, &T) -> T,
) -> Lifted<T> {
    Lifted {
        cut: a.cut || b.cut,
        tail: if b.cut {
            b.tail.clone()
        } else {
            opt_combine(&a.tail, &b.tail, op)
        },
    }
}

/// A participant's result from the exclusive lifted prefix it received
/// (`None` for the first participant in traversal order).
#[allow(clippy::too_many_arguments)]
pub fn segmented_finish<T: Clone>(
    mode: Segmentation,
    dir: Direction,
    inclusion: Inclusion,
    bit: bool,
    v: &T,
    prefix: Option<&Lifted<T>>,
    op: &dyn Fn(&T, &T) -> T,
    identity: &T,
) -> T {
    let (start, _end) = seg_flags(mode, dir, bit);
    let before: Option<T> = prefix.and_then(|x| x.tail.clone());
    match inclusion {
        Inclusion::Inclusive => {
            let base = if start { None } else { before };
            match base {
                Some(b) => op(&b, v),
                None => v.clone(),
            }
        }
        Inclusion::Exclusive => {
            let b = if start && mode != Segmentation::StartBit {
                None
            } else {
                before
            };
            b.unwrap_or_else(|| identity.clone())
        }
    }
}

/// Serial reference, straight from the CMMD manual. `values[n]`, `bits[n]`
/// belong to node n; the fold is in traversal order.
pub fn segmented_scan_serial<T: Clone>(
    values: &[T],
    bits: &[bool],
    op: &dyn Fn(&T, &T) -> T,
    identity: &T,
    dir: Direction,
    inclusion: Inclusion,
    mode: Segmentation,
) -> Vec<T> {
    let p = values.len();
    assert_eq!(bits.len(), p);
    // Segment id of each node.
    let seg: Vec<usize> = (0..p)
        .map(|n| match (mode, dir) {
            (Segmentation::None, _) => 0,
            (Segmentation::SegmentBit, _) | (Segmentation::StartBit, Direction::Upward) => {
                bits[..=n].iter().filter(|b| **b).count()
            }
            (Segmentation::StartBit, Direction::Downward) => {
                bits[n..].iter().filter(|b| **b).count()
            }
        })
        .collect();
    let order: Vec<usize> = match dir {
        Direction::Upward => (0..p).collect(),
        Direction::Downward => (0..p).rev().collect(),
    };
    let fold = |nodes: &[usize]| -> Option<T> {
        let mut acc: Option<T> = None;
        for &n in nodes {
            acc = Some(match acc {
                None => values[n].clone(),
                Some(a) => op(&a, &values[n]),
            });
        }
        acc
    };
    let mut out = vec![identity.clone(); p];
    for (t, &n) in order.iter().enumerate() {
        let same_before: Vec<usize> = order[..t]
            .iter()
            .copied()
            .filter(|&m| seg[m] == seg[n])
            .collect();
        out[n] = match inclusion {
            Inclusion::Inclusive => {
                let mut all = same_before;
                all.push(n);
                fold(&all).expect("non-empty")
            }
            Inclusion::Exclusive => {
                if mode == Segmentation::StartBit && same_before.is_empty() && t > 0 {
                    // Reduction of the previous segment.
                    let ps = seg[order[t - 1]];
                    let prev: Vec<usize> = order[..t]
                        .iter()
                        .copied()
                        .filter(|&m| seg[m] == ps)
                        .collect();
                    fold(&prev).unwrap_or_else(|| identity.clone())
                } else {
                    fold(&same_before).unwrap_or_else(|| identity.clone())
                }
            }
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::simulate;
    use crate::scan_recursive_doubling::scan_recursive_doubling;
    use crate::Schedule;

    fn add(a: &u32, b: &u32) -> u32 {
        a + b
    }
    fn max(a: &u32, b: &u32) -> u32 {
        *a.max(b)
    }
    const UP: Direction = Direction::Upward;
    const DOWN: Direction = Direction::Downward;
    const INC: Inclusion = Inclusion::Inclusive;
    const EXC: Inclusion = Inclusion::Exclusive;

    /// Run the real exclusive scan schedule on lifted values, then finish.
    fn via_schedule<T: Clone + std::fmt::Debug>(
        values: &[T],
        bits: &[bool],
        op: &dyn Fn(&T, &T) -> T,
        identity: &T,
        dir: Direction,
        inc: Inclusion,
        mode: Segmentation,
    ) -> Vec<T> {
        let p = values.len();
        let scheds: Vec<Schedule> = (0..p)
            .map(|r| scan_recursive_doubling(r, p, 1, dir, Inclusion::Exclusive))
            .collect();
        let init = (0..p)
            .map(|r| {
                (
                    vec![Some(lift(mode, dir, bits[r], values[r].clone()))],
                    vec![None],
                )
            })
            .collect();
        let comb = |a: &Lifted<T>, b: &Lifted<T>| lifted_combine(a, b, op);
        let out = simulate(&scheds, init, &comb).expect("simulation");
        (0..p)
            .map(|r| {
                segmented_finish(
                    mode,
                    dir,
                    inc,
                    bits[r],
                    &values[r],
                    out[r].output[0].as_ref(),
                    op,
                    identity,
                )
            })
            .collect()
    }

    #[test]
    fn cmmd_manual_examples() {
        let v = [4u32, 9, 7, 6];
        let none = [false; 4];
        let n = Segmentation::None;
        for f in [segmented_scan_serial::<u32>, via_schedule::<u32>] {
            assert_eq!(f(&v, &none, &add, &0, UP, EXC, n), [0, 4, 13, 20]);
            assert_eq!(f(&v, &none, &add, &0, DOWN, INC, n), [26, 22, 13, 6]);
            let b = [true, false, true, false];
            assert_eq!(
                f(&v, &b, &add, &0, UP, INC, Segmentation::SegmentBit),
                [4, 13, 7, 13]
            );
            let w = [4u32, 1, 5, 2];
            let b = [false, false, true, false];
            assert_eq!(
                f(&w, &b, &max, &0, UP, EXC, Segmentation::SegmentBit),
                [0, 4, 0, 5]
            );
            assert_eq!(
                f(&w, &b, &max, &0, UP, EXC, Segmentation::StartBit),
                [0, 4, 4, 5]
            );
        }
    }

    #[test]
    fn cmmd_segments_eight_nodes() {
        // Bits 0 0 1 0 0 1 0 0: segment_bit gives {0,1},{2,3,4},{5,6,7} both ways;
        // start_bit downward gives 7-6, 5-3, 2-0.
        let bits = [false, false, true, false, false, true, false, false];
        let ones = [1u32; 8];
        let sb = Segmentation::SegmentBit;
        assert_eq!(
            segmented_scan_serial(&ones, &bits, &add, &0, UP, INC, sb),
            [1, 2, 1, 2, 3, 1, 2, 3]
        );
        assert_eq!(
            segmented_scan_serial(&ones, &bits, &add, &0, DOWN, INC, sb),
            [2, 1, 3, 2, 1, 3, 2, 1]
        );
        let st = Segmentation::StartBit;
        assert_eq!(
            segmented_scan_serial(&ones, &bits, &add, &0, DOWN, INC, st),
            [3, 2, 1, 3, 2, 1, 2, 1]
        );
    }

    #[test]
    fn lifted_schedule_equals_serial_exhaustive_small() {
        // Non-commutative operator: string concatenation.
        let cat = |a: &String, b: &String| format!("{a}{b}");
        for p in 1..=9usize {
            let values: Vec<String> = (0..p)
                .map(|i| ((b'a' + i as u8) as char).to_string())
                .collect();
            for mask in 0..(1u32 << p) {
                let bits: Vec<bool> = (0..p).map(|i| mask >> i & 1 == 1).collect();
                for dir in [UP, DOWN] {
                    for inc in [INC, EXC] {
                        for mode in [
                            Segmentation::None,
                            Segmentation::SegmentBit,
                            Segmentation::StartBit,
                        ] {
                            let want = segmented_scan_serial(
                                &values,
                                &bits,
                                &cat,
                                &String::new(),
                                dir,
                                inc,
                                mode,
                            );
                            let got =
                                via_schedule(&values, &bits, &cat, &String::new(), dir, inc, mode);
                            assert_eq!(got, want, "p={p} bits={bits:?} {dir:?} {inc:?} {mode:?}");
                        }
                    }
                }
            }
        }
    }
}
