//! Scans (parallel prefix): inclusive and exclusive, upward and downward,
//! and segmented by `segment_bit` or `start_bit` exactly as CMMD defines
//! them (seed 004, "Scans", "Segmented Scans", "Smode and Sbit"; Kumar,
//! seed 001, prefix sums). Vectors are scanned elementwise; the segment bit
//! belongs to the node and applies to all of its elements.
//!
//! * Plain scans run a scan schedule of `hypercomm-algo`
//!   (`scan_recursive_doubling` or the pipelined `scan_chain`) with the
//!   user's operator. In an exclusive scan the first node in traversal order
//!   (node 0 upward, node n-1 downward) gets the operator's identity; an
//!   operator without one (a [`UserOp`](super::UserOp) without
//!   `with_identity`) leaves that output as it was (`_into`) or zero.
//! * Segmented scans follow `hypercomm_algo::segmented`: every node lifts
//!   its element `v` to a [`SegElem`] — the packed pair (flags, value) where
//!   the flags say whether a segment boundary lies in it and whether it has
//!   a value after its last boundary — runs the ordinary **exclusive** scan
//!   schedule of the same direction with the lifted operator
//!   (`lifted_combine`, associative, not commutative, identity = no
//!   boundary and no value), then finishes locally with `segmented_finish`
//!   from its own value, bit and received prefix. This serves inclusive and
//!   exclusive segmented scans alike. `SegElem<T>` is `#[repr(C, packed)]`,
//!   so it is `Pod` with no padding: one message element is the value's
//!   bytes plus one flag byte. An exclusive segmented scan needs an operator
//!   with an identity (a segment's first element gets it).
//! * Reproducible mode (`CollOpts::reproducible`) forces the chain: each
//!   result is then the strict left fold in traversal order, whatever the
//!   topology, so floating-point bits depend only on the inputs and n.
//!
//! Not done yet: scans including the host; a reproducible scan faster than
//! the chain.

use super::call::{Call, Check};
use super::executor::{Input, Output};
use super::need_len;
use super::ops::{Element, Operator};
use super::select::{self, Algorithm, CollOpts};
use super::task::Finish;
use crate::comm::Comm;
use crate::error::{Error, Result};
use bytemuck::Zeroable;
use hypercomm_algo::segmented::{lift, lifted_combine, segmented_finish, Lifted, Segmentation};
use hypercomm_algo::{Collective, Direction, Inclusion, Params};

/// Which scan a call performs (CMMD `scan` parameters), and this node's
/// segment bit. Build it with struct update syntax:
/// `Scan { inclusion: Inclusion::Exclusive, ..Scan::default() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// Upward (rank order, CMMD_upward) or downward.
    pub direction: Direction,
    /// Inclusive or exclusive.
    pub inclusion: Inclusion,
    /// Not segmented, or segmented by `segment_bit` / `start_bit`.
    pub segmentation: Segmentation,
    /// This node's bit (CMMD `sbit`); ignored when not segmented.
    pub bit: bool,
}

impl Default for Scan {
    /// Upward, inclusive, not segmented.
    fn default() -> Self {
        Scan {
            direction: Direction::Upward,
            inclusion: Inclusion::Inclusive,
            segmentation: Segmentation::None,
            bit: false,
        }
    }
}

impl Scan {
    /// Upward exclusive, not segmented (MPI exscan).
    pub const EXCLUSIVE: Scan = Scan {
        direction: Direction::Upward,
        inclusion: Inclusion::Exclusive,
        segmentation: Segmentation::None,
        bit: false,
    };

    /// The signature's variant byte: bit 0 downward, bit 1 exclusive,
    /// bits 2–3 the segmentation.
    fn variant(&self) -> u8 {
        u8::from(self.direction == Direction::Downward)
            | u8::from(self.inclusion == Inclusion::Exclusive) << 1
            | match self.segmentation {
                Segmentation::None => 0,
                Segmentation::SegmentBit => 1 << 2,
                Segmentation::StartBit => 2 << 2,
            }
    }
}

// `SegElem` is defined where its `Pod` declaration is (`crate::buffer`).
pub(crate) use crate::buffer::SegElem;

const CUT: u8 = 1;
const HAS: u8 = 2;

impl<T: Element> PartialEq for SegElem<T> {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.tail, other.tail);
        self.flags == other.flags && a == b
    }
}

impl<T: Element> std::fmt::Debug for SegElem<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tail, flags) = (self.tail, self.flags);
        f.debug_struct("SegElem")
            .field("tail", &tail)
            .field("flags", &flags)
            .finish()
    }
}

impl<T: Element> Element for SegElem<T> {
    const CODE: u8 = T::CODE | 0x80;
    const NAME: &'static str = "segmented-scan element";
}

impl<T: Element> SegElem<T> {
    fn from_lifted(l: Lifted<T>) -> Self {
        SegElem {
            flags: if l.cut { CUT } else { 0 } | if l.tail.is_some() { HAS } else { 0 },
            tail: l.tail.unwrap_or_else(T::zeroed),
        }
    }
    fn to_lifted(self) -> Lifted<T> {
        let (tail, flags) = (self.tail, self.flags);
        Lifted {
            cut: flags & CUT != 0,
            tail: (flags & HAS != 0).then_some(tail),
        }
    }
}

/// The lifted operator of a segmented scan.
#[derive(Clone)]
pub(crate) struct Lift<O>(O);

impl<T: Element, O: Operator<T>> Operator<SegElem<T>> for Lift<O> {
    fn combine(&self, a: SegElem<T>, b: SegElem<T>) -> SegElem<T> {
        let f = |x: &T, y: &T| self.0.combine(*x, *y);
        SegElem::from_lifted(lifted_combine(&a.to_lifted(), &b.to_lifted(), &f))
    }
    fn identity(&self) -> Option<SegElem<T>> {
        Some(SegElem::zeroed())
    }
    fn commutative(&self) -> bool {
        false
    }
    fn code(&self) -> u8 {
        self.0.code()
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
}

/// Traversal index of node `r` of `p`.
fn vidx(r: usize, p: usize, dir: Direction) -> usize {
    match dir {
        Direction::Upward => r,
        Direction::Downward => p - 1 - r,
    }
}

impl Comm {
    /// Inclusive upward scan (MPI scan, CMMD scan upward inclusive): node r
    /// gets `x0 ⊕ … ⊕ xr`, elementwise.
    pub fn scan<T: Element, O: Operator<T> + 'static>(&self, input: &[T], op: O) -> Result<Vec<T>> {
        self.scan_with(input, op, &Scan::default())
    }

    /// Exclusive upward scan (MPI exscan): node r gets `x0 ⊕ … ⊕ x(r-1)`;
    /// node 0 gets the identity (zero if the operator has none).
    pub fn exscan<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        op: O,
    ) -> Result<Vec<T>> {
        self.scan_with(input, op, &Scan::EXCLUSIVE)
    }

    /// Any scan (direction, inclusion, segmentation and this node's bit in
    /// `scan`), returning a new vector.
    pub fn scan_with<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        op: O,
        scan: &Scan,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); input.len()];
        self.scan_into_with(input, &mut out, op, scan, &CollOpts::default())?;
        Ok(out)
    }

    /// Any scan into `output` (`input.len()` elements).
    pub fn scan_into<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        scan: &Scan,
    ) -> Result<()> {
        self.scan_into_with(input, output, op, scan, &CollOpts::default())
    }

    /// [`Comm::scan_into`] with options (algorithms: `RecursiveDoubling`,
    /// `Chain`; reproducible mode forces `Chain`).
    pub fn scan_into_with<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        output: &mut [T],
        op: O,
        scan: &Scan,
        opts: &CollOpts,
    ) -> Result<()> {
        let built = self.scan_call(input, output, op, scan, opts);
        match self.announce_bad(Collective::Scan, "scan", built, false)? {
            ScanCall::Plain(call) => self.run_blocking(call, opts),
            ScanCall::Segmented(call) => self.run_blocking(call, opts),
        }
    }

    /// A scan: plain, or segmented (over lifted elements).
    pub(crate) fn scan_call<'a, T: Element, O: Operator<T> + 'static>(
        &self,
        input: &'a [T],
        output: &'a mut [T],
        op: O,
        scan: &Scan,
        opts: &CollOpts,
    ) -> Result<ScanCall<'a, T, O>> {
        let count = input.len();
        let what = "scan";
        let parts = self.node_parts(what)?;
        let p = parts.eps.len();
        need_len(what, "output", output.len(), count)?;
        let alg = if opts.reproducible {
            Algorithm::Chain
        } else {
            self.choose_memo(
                Collective::Scan,
                p,
                std::mem::size_of_val(input),
                opts,
                true,
            )?
        };
        let segmented = scan.segmentation != Segmentation::None;
        let sched_incl = if segmented {
            Inclusion::Exclusive
        } else {
            scan.inclusion
        };
        let seg_len = if segmented {
            select::segment_elems(opts, count, p, std::mem::size_of::<SegElem<T>>())
        } else {
            select::segment_elems(opts, count, p, std::mem::size_of::<T>())
        };
        let dir = scan.direction;
        let kind = match (segmented, scan.inclusion) {
            (true, _) => Collective::SegmentedScan,
            (false, Inclusion::Inclusive) => Collective::Scan,
            (false, Inclusion::Exclusive) => Collective::Exscan,
        };
        let params = Params {
            count,
            segment: seg_len,
            direction: dir,
            inclusion: sched_incl,
            ..Params::new(parts.me, p)
        };
        let sched = self.schedule(kind, alg, &params)?;
        let check = Check {
            variant: scan.variant(),
            ..Check::of::<T>(count, opts)
        };
        let first = vidx(parts.me, p, dir) == 0;
        if !segmented {
            let fill = scan.inclusion == Inclusion::Exclusive && first;
            return Ok(ScanCall::Plain(Call {
                kind,
                what,
                parts,
                root: None,
                input: Input::Borrowed(input),
                output: Output::Borrowed(output),
                finish: op.identity().filter(|_| fill).map(Finish::Fill),
                op: Some(op),
                sched,
                check,
            }));
        }
        // Segmented: lift, exclusive lifted scan, finish.
        let mode = scan.segmentation;
        let bit = scan.bit;
        let inclusion = scan.inclusion;
        let identity = match (op.identity(), inclusion) {
            (Some(id), _) => id,
            (None, Inclusion::Inclusive) => T::zeroed(),
            (None, Inclusion::Exclusive) => {
                return Err(Error::InvalidArgument {
                    op: "scan",
                    what: format!(
                    "an exclusive segmented scan needs an operator with an identity ({} has none)",
                    op.name()
                ),
                })
            }
        };
        let lifted: Vec<SegElem<T>> = input
            .iter()
            .map(|&v| SegElem::from_lifted(lift(mode, dir, bit, v)))
            .collect();
        let op2 = op.clone();
        // After the lifted scan, from each prefix, value and bit to the result.
        let finish = move |pre: &mut [SegElem<T>]| {
            let f = |x: &T, y: &T| op2.combine(*x, *y);
            for ((out, v), p) in output.iter_mut().zip(input).zip(pre.iter()) {
                let prefix = p.to_lifted();
                *out = segmented_finish(mode, dir, inclusion, bit, v, Some(&prefix), &f, &identity);
            }
        };
        Ok(ScanCall::Segmented(Call {
            kind,
            what,
            parts,
            root: None,
            input: Input::Owned(lifted),
            output: Output::Owned(vec![SegElem::zeroed(); count]),
            op: Some(Lift(op)),
            sched,
            check,
            finish: Some(Finish::With(Box::new(finish))),
        }))
    }
}

/// A scan call: over the caller's elements, or over lifted ones (a
/// segmented scan).
pub(crate) enum ScanCall<'a, T: Element, O: Operator<T>> {
    /// Not segmented.
    Plain(Call<'a, T, O>),
    /// Segmented: the schedule runs on lifted elements, and the finishing
    /// step writes the caller's output.
    Segmented(Call<'a, SegElem<T>, Lift<O>>),
}
