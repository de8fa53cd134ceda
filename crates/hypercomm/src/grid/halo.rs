//! Halo exchange (SUPDT2/RUPDT2, SUPDT3/RUPDT3, SUPSG2/RUPSG2): a [`Halo`]
//! plan made once per set of fields and options, run blocking
//! ([`Halo::exchange`]) or split phase ([`Halo::start`] …
//! [`Pending::finish`]).
//!
//! ## What an exchange fills
//!
//! With width `w`, a rank's halo cells filled along axis `a` on side `s` are
//! the `|w|` indices beyond its inner range on that side, when the flow
//! from `s` is in the direction mask and a neighbour exists there; for a
//! staggered field with `w < 0` the first of them is left out when it holds
//! a value on the process border. With corners (the default) the axes are
//! exchanged one after the other, 0 first, and the faces sent along axis
//! `a` extend over the halo cells already filled along the axes before it,
//! so a corner cell is filled exactly when each of its out-of-range
//! indices would be. Of those cells, the colour mask keeps the ones whose
//! (domain) indices have the right parity. Nothing else is written:
//! halo cells beyond a non-periodic edge of the domain belong to the user.
//!
//! ## Messages
//!
//! One message per neighbour and flow carries every field: first the inner
//! part of each field's face, then the parts that lie in halos filled
//! earlier in the same exchange. A rank that is its own neighbour (a
//! periodic axis of one rank) copies without a message; a periodic axis of
//! two ranks sends both flows to the same rank under different tags.
//! Messages are handed over whole ([`Comm::send_vec`]), so between threads
//! a face costs one copy into the message and one out of it.
//!
//! Not done yet: a face that is contiguous in both arrays still goes
//! through a message of its own (one copy more than a transfer straight
//! from the neighbour's array into the halo, which the engine would do for
//! faces over 16 KiB); in split phase only the first exchanged axis
//! overlaps the computation — the later axes, which carry the corners, run
//! in `finish`; a started exchange dropped without `finish` leaves its
//! messages queued at its neighbours (the next exchange of the same plan
//! would take them), which `#[must_use]` only warns about.

use super::field::{FieldData, Region, Run};
use super::geometry::Grid;
use super::mask::{Colour, Directions, Location, Side};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::topology::agree;
use bytemuck::Pod;
use std::cell::RefCell;
use std::collections::VecDeque;

/// One field of a halo plan: its element type and where its values sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    type_name: &'static str,
    size: usize,
    location: Location,
}

impl FieldSpec {
    /// A grid function of `T` at the grid points (or cell centres).
    pub fn of<T: Pod>() -> FieldSpec {
        FieldSpec {
            type_name: std::any::type_name::<T>(),
            size: std::mem::size_of::<T>(),
            location: Location::CENTRE,
        }
    }

    /// The same field, staggered: its values sit at `location` in their cells.
    pub fn at(self, location: Location) -> FieldSpec {
        FieldSpec { location, ..self }
    }
}

/// The options of a halo plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaloOpts {
    /// Cells exchanged beyond the inner range on each side; negative for
    /// staggered fields: leave out the values on the process border
    /// (SUPSG2). Default 1.
    pub width: isize,
    /// Which points (default: all).
    pub colour: Colour,
    /// Which flows (default: all).
    pub directions: Directions,
    /// Fill corners and edges (default: yes).
    pub corners: bool,
}

impl Default for HaloOpts {
    fn default() -> Self {
        HaloOpts {
            width: 1,
            colour: Colour::All,
            directions: Directions::ALL,
            corners: true,
        }
    }
}

/// The fields one exchange moves: a `&mut Field<T>`, a tuple of up to four
/// of them (of any element types), or a slice or vector of
/// `&mut dyn FieldData`.
pub trait Fields {
    /// Each field, in order.
    fn list(&mut self) -> Vec<&mut dyn FieldData>;
}

impl<A: FieldData> Fields for &mut A {
    fn list(&mut self) -> Vec<&mut dyn FieldData> {
        vec![&mut **self]
    }
}

macro_rules! tuple_fields {
    ($($t:ident $i:tt),*) => {
        impl<$($t: FieldData),*> Fields for ($(&mut $t,)*) {
            fn list(&mut self) -> Vec<&mut dyn FieldData> {
                vec![$(&mut *self.$i),*]
            }
        }
    };
}
tuple_fields!(A 0);
tuple_fields!(A 0, B 1);
tuple_fields!(A 0, B 1, C 2);
tuple_fields!(A 0, B 1, C 2, D 3);

impl Fields for &mut [&mut dyn FieldData] {
    fn list(&mut self) -> Vec<&mut dyn FieldData> {
        self.iter_mut()
            .map(|f| &mut **f as &mut dyn FieldData)
            .collect()
    }
}

impl Fields for Vec<&mut dyn FieldData> {
    fn list(&mut self) -> Vec<&mut dyn FieldData> {
        self.iter_mut()
            .map(|f| &mut **f as &mut dyn FieldData)
            .collect()
    }
}

/// One message of a phase: to or from `peer`, with runs per field for the
/// inner part and for the part in earlier halos.
#[derive(Debug)]
struct Xfer {
    peer: usize,
    tag: u32,
    inner: Vec<Vec<Run>>,
    ext: Vec<Vec<Run>>,
    bytes: usize,
}

#[derive(Debug, Default)]
struct Phase {
    sends: Vec<Xfer>,
    recvs: Vec<Xfer>,
}

/// A halo exchange plan: the fields (types, locations) and options, checked
/// across the nodes once, with every message's layout worked out. Run it
/// as often as needed.
#[derive(Debug)]
pub struct Halo {
    comm: Comm,
    me: usize,
    specs: Vec<FieldSpec>,
    storage: Region,
    phases: Vec<Phase>,
    /// Message buffers received and unpacked, kept for the next packing:
    /// a face of a few hundred KiB allocated afresh every exchange costs
    /// page faults (seen in `perf` of `bench halo` in 3-D).
    pool: RefCell<Vec<Vec<u8>>>,
}

/// Buffers kept per plan.
const POOL: usize = 8;

/// A split-phase exchange between [`Halo::start`] and [`Pending::finish`].
#[must_use = "a started exchange must be finished, or its neighbours wait for it"]
#[derive(Debug)]
pub struct Pending<'h> {
    halo: &'h Halo,
    /// Inner parts of the later phases' messages, packed at the start.
    snaps: Vec<Vec<Vec<u8>>>,
    /// Messages to itself of the first phase.
    local: VecDeque<(u32, Vec<u8>)>,
    first: usize,
}

/// `[lo, hi)` ranges per axis to a region.
fn region(r: [(isize, isize); 3]) -> Region {
    Region {
        lo: r.map(|x| x.0),
        hi: r.map(|x| x.1),
    }
}

impl Grid {
    /// A halo plan for `fields` with `opts` (SUPDT/RUPDT's arguments but the
    /// arrays). Collective over the grid's nodes (not the host); every node
    /// must pass the same field types, locations and options, or every node
    /// gets the same error. Also refused on every node: a width larger than
    /// the allocated halo, or larger than the inner range of a rank along
    /// an axis that exchanges (SUPRENUM's error 4).
    pub fn halo(&self, fields: &[FieldSpec], opts: &HaloOpts) -> Result<Halo> {
        const OP: &str = "Grid::halo";
        let nodes = self.nodes(OP)?;
        let desc = format!("fields {fields:?}, {opts:?}");
        agree(nodes, OP, &desc)?;
        let bad = |what: String| Error::InvalidArgument { op: OP, what };
        if fields.is_empty() {
            return Err(bad("no fields".into()));
        }
        let w = opts.width.unsigned_abs();
        let id = self.plans.get();
        self.plans.set(id + 1);
        if id >= 1 << 27 {
            return Err(bad("more than 2^27 halo plans on one grid".into()));
        }
        for a in 0..self.ndim {
            let flows = [Side::Lower, Side::Upper]
                .iter()
                .any(|&s| opts.directions.sends_to(a, s));
            if !flows || w == 0 {
                continue;
            }
            let shortest = self.splits[a]
                .windows(2)
                .map(|x| x[1] - x[0])
                .min()
                .unwrap_or(0);
            if w > shortest {
                return Err(bad(format!(
                    "width {w} on axis {a} is wider than the inner range of a rank there ({shortest} points): the exchange needs more than the direct neighbour's points"
                )));
            }
            for (s, side) in [(0, "lower"), (1, "upper")] {
                if w > self.halo[a][s] {
                    return Err(bad(format!(
                        "width {w} on axis {a} but the grid's {side} halo is {} wide",
                        self.halo[a][s]
                    )));
                }
            }
        }
        let storage = self.storage();
        let me = self.cart.rank();
        let mut phases = Vec::with_capacity(self.ndim);
        for a in 0..self.ndim {
            let mut ph = Phase::default();
            if w > 0 {
                for toward in [Side::Lower, Side::Upper] {
                    if !opts.directions.sends_to(a, toward) {
                        continue;
                    }
                    let tag = 0x8000_0000
                        | (id << 4)
                        | ((a as u32) << 1)
                        | u32::from(toward == Side::Upper);
                    if let Some(peer) = self.neighbour(a, toward.sign()) {
                        ph.sends
                            .push(self.xfer(a, toward, false, peer, tag, fields, opts, &storage));
                    }
                    if let Some(peer) = self.neighbour(a, -toward.sign()) {
                        ph.recvs
                            .push(self.xfer(a, toward, true, peer, tag, fields, opts, &storage));
                    }
                }
            }
            phases.push(ph);
        }
        Ok(Halo {
            comm: self.comm.clone(),
            me,
            specs: fields.to_vec(),
            storage,
            phases,
            pool: RefCell::new(Vec::new()),
        })
    }

    /// The message of the flow along `a` towards `toward`: what this rank
    /// sends (`recv` false) or receives.
    #[allow(clippy::too_many_arguments)]
    fn xfer(
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

impl Halo {
    /// The fields' types and storage against the plan's.
    fn check(&self, fields: &[&mut dyn FieldData]) -> Result<()> {
        let bad = |what: String| Error::InvalidArgument {
            op: "halo exchange",
            what,
        };
        if fields.len() != self.specs.len() {
            return Err(bad(format!(
                "{} fields passed to a plan made for {}",
                fields.len(),
                self.specs.len()
            )));
        }
        for (i, (f, s)) in fields.iter().zip(&self.specs).enumerate() {
            if f.type_name() != s.type_name || f.elem_size() != s.size {
                return Err(bad(format!(
                    "field {i} holds {} but the plan was made for {}",
                    f.type_name(),
                    s.type_name
                )));
            }
            if f.storage() != &self.storage {
                return Err(bad(format!(
                    "field {i} is stored on {:?}, not on this rank's grid storage {:?}",
                    f.storage(),
                    self.storage
                )));
            }
        }
        Ok(())
    }

    /// The number of bytes this rank sends per exchange (to itself too).
    pub fn bytes_sent(&self) -> usize {
        self.phases
            .iter()
            .flat_map(|p| &p.sends)
            .map(|x| x.bytes)
            .sum()
    }

    /// The number of halo bytes this rank receives per exchange.
    pub fn bytes_received(&self) -> usize {
        self.phases
            .iter()
            .flat_map(|p| &p.recvs)
            .map(|x| x.bytes)
            .sum()
    }

    /// Exchange the halos of `fields` (the plan's types, in its order), and
    /// return when they are filled (SUPDT + RUPDT).
    pub fn exchange(&self, mut fields: impl Fields) -> Result<()> {
        let mut fs = fields.list();
        self.check(&fs)?;
        let mut local = VecDeque::new();
        for a in 0..self.phases.len() {
            self.send_phase(a, &fs, None, &mut local)?;
            self.recv_phase(a, &mut fs, &mut local)?;
        }
        Ok(())
    }

    /// Start an exchange (SUPDT): the values to send are taken now, and the
    /// first axis's messages leave. Until [`Pending::finish`], the fields may
    /// be read anywhere and written anywhere but in the halo cells the
    /// exchange fills.
    pub fn start(&self, mut fields: impl Fields) -> Result<Pending<'_>> {
        let fs = fields.list();
        self.check(&fs)?;
        let first = self
            .phases
            .iter()
            .position(|p| !p.sends.is_empty() || !p.recvs.is_empty())
            .unwrap_or(self.phases.len());
        let mut snaps = vec![Vec::new(); self.phases.len()];
        for (a, ph) in self.phases.iter().enumerate().skip(first + 1) {
            snaps[a] = ph
                .sends
                .iter()
                .map(|x| {
                    let mut buf = self.buffer(x.bytes);
                    for (f, runs) in fs.iter().zip(&x.inner) {
                        f.pack(runs, &mut buf);
                    }
                    buf
                })
                .collect();
        }
        let mut local = VecDeque::new();
        if first < self.phases.len() {
            self.send_phase(first, &fs, None, &mut local)?;
        }
        Ok(Pending {
            halo: self,
            snaps,
            local,
            first,
        })
    }

    /// Pack and send phase `a`'s messages (inner parts from `snap` when
    /// given) — to itself through `local`.
    fn send_phase(
        &self,
        a: usize,
        fs: &[&mut dyn FieldData],
        snap: Option<Vec<Vec<u8>>>,
        local: &mut VecDeque<(u32, Vec<u8>)>,
    ) -> Result<()> {
        let mut snap = snap.map(|s| s.into_iter());
        for x in &self.phases[a].sends {
            let mut buf = match snap.as_mut().and_then(|s| s.next()) {
                Some(b) => b,
                None => {
                    let mut b = self.buffer(x.bytes);
                    for (f, runs) in fs.iter().zip(&x.inner) {
                        f.pack(runs, &mut b);
                    }
                    b
                }
            };
            for (f, runs) in fs.iter().zip(&x.ext) {
                f.pack(runs, &mut buf);
            }
            debug_assert_eq!(buf.len(), x.bytes);
            if x.peer == self.me {
                local.push_back((x.tag, buf));
            } else {
                self.comm.send_vec(buf, x.peer, x.tag)?;
            }
        }
        Ok(())
    }

    /// Receive and unpack phase `a`'s messages.
    fn recv_phase(
        &self,
        a: usize,
        fs: &mut [&mut dyn FieldData],
        local: &mut VecDeque<(u32, Vec<u8>)>,
    ) -> Result<()> {
        for x in &self.phases[a].recvs {
            let buf = if x.peer == self.me {
                let i = local
                    .iter()
                    .position(|(t, _)| *t == x.tag)
                    .expect("a rank that is its own neighbour sent to itself first");
                local.remove(i).expect("found").1
            } else {
                self.comm.recv_vec::<u8>(x.peer, x.tag)?.0
            };
            if buf.len() != x.bytes {
                return Err(Error::CollectiveMismatch(format!(
                    "halo exchange: rank {} sent {} bytes along axis {a} where this rank expects {} (do the ranks pass the same fields and options?)",
                    x.peer,
                    buf.len(),
                    x.bytes
                )));
            }
            let mut at = 0;
            for (f, runs) in fs.iter_mut().zip(&x.inner) {
                at += f.unpack(runs, &buf[at..]);
            }
            for (f, runs) in fs.iter_mut().zip(&x.ext) {
                at += f.unpack(runs, &buf[at..]);
            }
            let mut pool = self.pool.borrow_mut();
            if pool.len() < POOL {
                pool.push(buf);
            }
        }
        Ok(())
    }

    /// An empty buffer for a message of `bytes`: a kept one when one is
    /// large enough.
    fn buffer(&self, bytes: usize) -> Vec<u8> {
        let mut pool = self.pool.borrow_mut();
        match pool.iter().position(|b| b.capacity() >= bytes) {
            Some(i) => {
                let mut b = pool.swap_remove(i);
                b.clear();
                b
            }
            None => Vec::with_capacity(bytes),
        }
    }
}

impl Pending<'_> {
    /// Finish the exchange (RUPDT): receive the first axis's faces, then
    /// exchange the later axes (whose faces extend over the halos just
    /// filled). `fields` must be the ones passed to [`Halo::start`].
    pub fn finish(mut self, mut fields: impl Fields) -> Result<()> {
        let h = self.halo;
        let mut fs = fields.list();
        h.check(&fs)?;
        if self.first >= h.phases.len() {
            return Ok(());
        }
        h.recv_phase(self.first, &mut fs, &mut self.local)?;
        for a in self.first + 1..h.phases.len() {
            let snap = std::mem::take(&mut self.snaps[a]);
            h.send_phase(a, &fs, Some(snap), &mut self.local)?;
            h.recv_phase(a, &mut fs, &mut self.local)?;
        }
        Ok(())
    }
}
