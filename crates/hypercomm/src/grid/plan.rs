//! The layout of a halo plan's messages: for each axis and flow, which
//! points of each field a rank sends and receives, as runs of its storage
//! (what the exchange packs, or moves in place when a face is contiguous).

use super::field::{Region, Run};
use super::geometry::Grid;
use super::halo::{FieldSpec, HaloOpts};
use super::mask::{Colour, Side};
use std::ops::Range;

/// One message of a phase: to or from `peer`, with runs per field for the
/// inner part and for the part in earlier halos.
#[derive(Debug)]
pub(super) struct Xfer {
    pub(super) peer: usize,
    /// The flow's tag bits (axis, side); each exchange adds its number
    /// ([`Turn::tag`](super::halo::Turn::tag)).
    pub(super) tag: u32,
    pub(super) inner: Vec<Vec<Run>>,
    pub(super) ext: Vec<Vec<Run>>,
    pub(super) bytes: usize,
    /// For a plan of one field without a colour mask whose face is one
    /// contiguous range of the storage (on both sides alike: the shapes
    /// agree): that range of elements, sent from and received into the
    /// field itself by the blocking exchange.
    pub(super) direct: Option<Range<usize>>,
}

#[derive(Debug, Default)]
pub(super) struct Phase {
    pub(super) sends: Vec<Xfer>,
    pub(super) recvs: Vec<Xfer>,
    /// Between threads, the blocking exchange writes this phase's faces
    /// straight into the neighbours' halos (`inplace.rs`).
    pub(super) in_place: bool,
}

/// Bytes per run, on average, from which a face is copied between threads'
/// arrays rather than packed: one cache line. A face of single strided
/// points costs a line moved between cores per point when written into the
/// neighbour's array, but only a line per 8 points in a packed message.
const IN_PLACE_RUN: usize = 64;

impl Phase {
    /// For a rank that is its own neighbour (a periodic axis of one rank):
    /// each message it sends itself, with the receive it meets.
    pub(super) fn to_itself(&self, me: usize) -> impl Iterator<Item = (&Xfer, &Xfer)> {
        self.recvs
            .iter()
            .filter(move |r| r.peer == me)
            .map(move |r| {
                let s = self
                    .sends
                    .iter()
                    .find(|x| x.peer == me && x.tag == r.tag)
                    .expect("a rank that is its own neighbour sends to itself");
                (s, r)
            })
    }

    /// Whether the phase's faces are made of contiguous pieces long enough
    /// to copy in place (every message's pieces at least [`IN_PLACE_RUN`]
    /// bytes on average; a strided run is a piece per element).
    pub(super) fn runs_long(&self) -> bool {
        self.sends.iter().chain(&self.recvs).all(|x| {
            let pieces: usize = x
                .inner
                .iter()
                .chain(&x.ext)
                .flatten()
                .map(|r| {
                    if r.step == 1 {
                        usize::from(r.len > 0)
                    } else {
                        r.len
                    }
                })
                .sum();
            x.bytes >= pieces * IN_PLACE_RUN
        })
    }
}

/// `[lo, hi)` ranges per axis to a region.
pub(super) fn region(r: [(isize, isize); 3]) -> Region {
    Region {
        lo: r.map(|x| x.0),
        hi: r.map(|x| x.1),
    }
}

/// The elements of the face made of `pieces` (per axis, intervals of
/// indices) when they join into one box that is one contiguous range of a
/// field stored on `storage` (axis 0 fastest).
fn direct_range(pieces: &[Vec<((isize, isize), bool)>], storage: &Region) -> Option<Range<usize>> {
    let mut face = Region {
        lo: [0; 3],
        hi: [0; 3],
    };
    for (a, p) in pieces.iter().enumerate() {
        let mut iv: Vec<(isize, isize)> = p.iter().map(|x| x.0).filter(|x| x.0 < x.1).collect();
        iv.sort_unstable();
        if iv.is_empty() || iv.windows(2).any(|w| w[0].1 != w[1].0) {
            return None;
        }
        face.lo[a] = iv[0].0;
        face.hi[a] = iv[iv.len() - 1].1;
    }
    // Full rows up to some axis m, a single index beyond it.
    let m = (0..3)
        .find(|&a| face.lo[a] != storage.lo[a] || face.hi[a] != storage.hi[a])
        .unwrap_or(3);
    if !(m + 1..3).all(|a| face.len(a) == 1) {
        return None;
    }
    let (e0, e1) = (storage.len(0), storage.len(1));
    let off = |p: [isize; 3]| {
        (p[0] - storage.lo[0]) as usize
            + e0 * ((p[1] - storage.lo[1]) as usize + e1 * (p[2] - storage.lo[2]) as usize)
    };
    let start = off(face.lo);
    Some(start..start + face.count())
}

impl Grid {
    /// The message of the flow along `a` towards `toward`: what this rank
    /// sends (`recv` false) or receives.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn xfer(
        &self,
        a: usize,
        toward: Side,
        recv: bool,
        peer: usize,
        tag: u32,
        fields: &[FieldSpec],
        opts: &HaloOpts,
        storage: &Region,
    ) -> Xfer {
        let inner = self.inner();
        let w = opts.width.unsigned_abs() as isize;
        let mut x = Xfer {
            peer,
            tag,
            inner: Vec::new(),
            ext: Vec::new(),
            bytes: 0,
            direct: None,
        };
        for spec in fields {
            let loc = spec.location;
            let neg = opts.width < 0;
            // Axis a: the face. The receiver's first halo index on the side
            // it receives from may be left out (staggered, w < 0).
            let from = toward.opposite(); // the receiver receives from this side
            let excl = isize::from(neg && loc.border_in_halo(a, from));
            let (lo, hi) = (inner.lo[a], inner.hi[a]);
            let face = match (recv, toward) {
                (false, Side::Upper) => (hi - w, hi - excl),
                (false, Side::Lower) => (lo + excl, lo + w),
                (true, Side::Upper) => (lo - w, lo - excl),
                (true, Side::Lower) => (hi + excl, hi + w),
            };
            // The other axes: inner, and before `a` (with corners) the halo
            // parts filled earlier in this exchange.
            let mut pieces: Vec<Vec<((isize, isize), bool)>> = Vec::new();
            for b in 0..3 {
                if b == a {
                    pieces.push(vec![(face, false)]);
                    continue;
                }
                let mut p = vec![((inner.lo[b], inner.hi[b]), false)];
                if b < a && opts.corners && b < self.ndim {
                    for s in [Side::Lower, Side::Upper] {
                        // Filled along b on side s: the flow from s, a neighbour there.
                        if !opts.directions.receives_from(b, s)
                            || self.neighbour(b, s.sign()).is_none()
                        {
                            continue;
                        }
                        let e = isize::from(neg && loc.border_in_halo(b, s));
                        let r = match s {
                            Side::Lower => (inner.lo[b] - w, inner.lo[b] - e),
                            Side::Upper => (inner.hi[b] + e, inner.hi[b] + w),
                        };
                        p.push((r, true));
                    }
                }
                pieces.push(p);
            }
            let (mut fin, mut fext) = (Vec::new(), Vec::new());
            for p0 in &pieces[0] {
                for p1 in &pieces[1] {
                    for p2 in &pieces[2] {
                        let reg = region([p0.0, p1.0, p2.0]);
                        let runs = self.runs(&reg, storage, opts.colour);
                        let n: usize = runs.iter().map(|r| r.len).sum();
                        x.bytes += n * spec.size;
                        if p0.1 || p1.1 || p2.1 {
                            fext.extend(runs);
                        } else {
                            fin.extend(runs);
                        }
                    }
                }
            }
            x.inner.push(fin);
            x.ext.push(fext);
            if fields.len() == 1 && opts.colour == Colour::All {
                x.direct = direct_range(&pieces, storage);
            }
        }
        x
    }

    /// The runs of `reg` (which lies in one wrap segment per axis) in a
    /// field stored on `storage`, keeping the points of `colour`.
    fn runs(&self, reg: &Region, storage: &Region, colour: Colour) -> Vec<Run> {
        let mut out: Vec<Run> = Vec::new();
        if reg.is_empty() {
            return out;
        }
        // The shift that maps this region's indices into the domain.
        let shift: [isize; 3] = std::array::from_fn(|a| {
            let n = self.global[a] as isize;
            if reg.lo[a] < 0 {
                n
            } else if reg.lo[a] >= n {
                -n
            } else {
                0
            }
        });
        let e0 = storage.len(0);
        let e1 = storage.len(1);
        let off = |i: isize, j: isize, k: isize| {
            (i - storage.lo[0]) as usize
                + e0 * ((j - storage.lo[1]) as usize + e1 * (k - storage.lo[2]) as usize)
        };
        let n0 = reg.len(0);
        for k in reg.range(2) {
            for j in reg.range(1) {
                let run = match colour {
                    Colour::All => Run {
                        start: off(reg.lo[0], j, k),
                        len: n0,
                        step: 1,
                    },
                    Colour::Parity { axes, odd } => {
                        let mut s = 0;
                        if axes[1] {
                            s += j + shift[1];
                        }
                        if axes[2] {
                            s += k + shift[2];
                        }
                        if axes[0] {
                            let i0 = reg.lo[0] + shift[0];
                            let first = usize::from((s + i0).rem_euclid(2) != isize::from(odd));
                            let len = if first == 0 { n0.div_ceil(2) } else { n0 / 2 };
                            Run {
                                start: off(reg.lo[0] + first as isize, j, k),
                                len,
                                step: 2,
                            }
                        } else if s.rem_euclid(2) == isize::from(odd) {
                            Run {
                                start: off(reg.lo[0], j, k),
                                len: n0,
                                step: 1,
                            }
                        } else {
                            continue;
                        }
                    }
                };
                if run.len == 0 {
                    continue;
                }
                // Merge runs: contiguous ones (whole rows of a full-width
                // face) into one; single points at a constant distance (a
                // face one point wide across rows) into one strided run.
                if let Some(last) = out.last_mut() {
                    if last.step == 1 && run.step == 1 && last.start + last.len == run.start {
                        last.len += run.len;
                        continue;
                    }
                    if run.len == 1 && run.start > last.start {
                        if last.len == 1 {
                            last.step = run.start - last.start;
                            last.len = 2;
                            continue;
                        }
                        if last.step > 1 && run.start == last.start + last.len * last.step {
                            last.len += 1;
                            continue;
                        }
                    }
                }
                out.push(run);
            }
        }
        out
    }
}
