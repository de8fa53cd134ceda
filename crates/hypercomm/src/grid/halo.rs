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
//! ## Exchanges of one plan under way together
//!
//! Every plan has a communicator of its own (a copy of the grid's nodes',
//! made with the plan), and every exchange of a plan, blocking or started,
//! takes the plan's next number, which is part of all its tags: each
//! exchange has messages (and buffers) of its own. So a plan may be run
//! again while a split-phase exchange of it is pending, blocking or split
//! phase, on other fields, and pending exchanges may be finished in any
//! order; each field's halo gets its own field's values. The numbers match
//! the exchanges of neighbours when every node runs a plan's exchanges in
//! the same order, as it runs collective operations: the `n`-th
//! [`Halo::exchange`] or [`Halo::start`] of a plan on one node meets the
//! `n`-th on its neighbours (when to finish is up to each node). A call
//! refused for its fields takes no number. Numbers come round again after
//! 2^27 exchanges: an exchange whose number would be that of one still
//! open (started and never finished, or failed on the way) is refused.
//!
//! In a blocking exchange of one field without a colour mask, a face that
//! is one contiguous range of the storage (a face one row thick, whole
//! rows, whole planes) is sent from the field and received into the
//! field, with no packing ([`Halo::is_direct`]): above the engine's eager
//! limit (16 KiB) that is one copy, straight from the neighbour's array
//! into the halo.
//!
//! Between threads of one process the blocking exchange writes faces
//! straight into the neighbours' halos instead (one copy, any layout, any
//! number of fields; `inplace.rs`), along the axes [`InPlace`] chooses: by
//! default those whose faces are rows or planes, as a face of single
//! strided points moves a cache line between cores per point.
//!
//! Not done yet: between processes a strided face, or several fields,
//! go through a packed message (two copies); in split phase only the first exchanged axis
//! overlaps the computation — the later axes, which carry the corners, run
//! in `finish`; a started exchange dropped without `finish` leaves its
//! messages queued at its neighbours under its own tags (no later exchange
//! takes them) and never sends those of the later axes, which the
//! neighbours' `finish` waits for (until the communicator's timeout), and
//! `#[must_use]` only warns about it.

use super::field::{FieldData, Region};
use super::geometry::Grid;
use super::mask::{Colour, Directions, Location, Side};
use super::plan::{Phase, Xfer};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::topology::agree;
use bytemuck::Pod;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, VecDeque};

/// One field of a halo plan: its element type and where its values sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    type_name: &'static str,
    pub(super) size: usize,
    pub(super) location: Location,
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

/// When the blocking exchange between ranks that are threads of one process
/// writes each face straight into the neighbour's halo (one copy, whatever
/// the layout) instead of sending it packed in a message (two copies). It
/// only matters between threads: processes always exchange messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum InPlace {
    /// Along the axes whose faces are runs of a cache line or more on
    /// average (rows, planes): a face of single strided points moves a
    /// line between cores per point when written in place, but a line per
    /// eight points in a packed message. Decided for every node at once
    /// (an axis is in place where every node's faces along it are long),
    /// so that both ends of each face take the same road.
    #[default]
    Auto,
    /// Along every axis.
    Always,
    /// Along none: packed messages, as between processes.
    Never,
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

/// A halo exchange plan: the fields (types, locations) and options, checked
/// across the nodes once, with every message's layout worked out. Run it
/// as often as needed, several exchanges at once if need be (split-phase
/// ones pending, blocking ones between, finished in any order), every node
/// running them in the same order (see the module docs).
#[derive(Debug)]
pub struct Halo {
    pub(super) comm: Comm,
    pub(super) me: usize,
    specs: Vec<FieldSpec>,
    storage: Region,
    pub(super) phases: Vec<Phase>,
    /// Some phase copies straight between threads' arrays (`inplace.rs`).
    in_place: bool,
    /// Message buffers received and unpacked, kept for the next packing:
    /// a face of a few hundred KiB allocated afresh every exchange costs
    /// page faults (seen in `perf` of `bench halo` in 3-D).
    pool: RefCell<Vec<Vec<u8>>>,
    /// The number of the plan's next exchange.
    next: Cell<u64>,
    /// The numbers of the exchanges not complete: started and not finished
    /// (or dropped), or failed on the way. Their messages may still be
    /// queued under their tags.
    open: RefCell<BTreeSet<u64>>,
}

/// Buffers kept per plan.
const POOL: usize = 8;

/// The tag bits of a flow (axis and side, and the bit `inplace.rs` marks
/// its second message with) lie below the exchange's number.
const TURN_SHIFT: u32 = 4;
/// Bits of the exchange's number in its tags: numbers come round again
/// after 2^27 exchanges of a plan.
const TURN_BITS: u32 = 27;

/// One exchange of a plan: its number, and the bits it adds to the tag of
/// every flow ([`Turn::tag`]), keeping its messages apart from those of
/// the plan's other exchanges.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn {
    n: u64,
    bits: u32,
}

impl Turn {
    /// The tag of message `x` in this exchange.
    pub(super) fn tag(self, x: &Xfer) -> u32 {
        x.tag | self.bits
    }
}

/// A split-phase exchange between [`Halo::start`] and [`Pending::finish`].
#[must_use = "a started exchange must be finished, or its neighbours wait for it"]
#[derive(Debug)]
pub struct Pending<'h> {
    halo: &'h Halo,
    /// This exchange's number and tags.
    turn: Turn,
    /// Inner parts of the later phases' messages, packed at the start.
    snaps: Vec<Vec<Vec<u8>>>,
    /// Messages to itself of the first phase.
    local: VecDeque<(u32, Vec<u8>)>,
    first: usize,
}

impl Grid {
    /// A halo plan for `fields` with `opts` (SUPDT/RUPDT's arguments but the
    /// arrays). Collective over the grid's nodes (not the host); every node
    /// must pass the same field types, locations and options, or every node
    /// gets the same error. Also refused on every node: a width larger than
    /// the allocated halo, or larger than the inner range of a rank along
    /// an axis that exchanges (SUPRENUM's error 4).
    pub fn halo(&self, fields: &[FieldSpec], opts: &HaloOpts) -> Result<Halo> {
        self.halo_with(fields, opts, InPlace::Auto)
    }

    /// [`Grid::halo`], saying when the blocking exchange between threads
    /// copies faces straight into the neighbours' arrays (see [`InPlace`];
    /// [`Grid::halo`] takes [`InPlace::Auto`]). Every node must pass the same.
    pub fn halo_with(
        &self,
        fields: &[FieldSpec],
        opts: &HaloOpts,
        in_place: InPlace,
    ) -> Result<Halo> {
        const OP: &str = "Grid::halo";
        let nodes = self.nodes(OP)?;
        let desc = format!("fields {fields:?}, {opts:?}, {in_place:?}");
        agree(nodes, OP, &desc)?;
        let bad = |what: String| Error::InvalidArgument { op: OP, what };
        if fields.is_empty() {
            return Err(bad("no fields".into()));
        }
        let w = opts.width.unsigned_abs();
        for a in 0..self.ndim {
            let flows = [Side::Lower, Side::Upper]
                .iter()
                .any(|&s| opts.directions.sends_to(a, s));
            // An axis of one rank that does not wrap has nothing to exchange.
            let exchanges = self.pdims[a] > 1 || self.periodic[a];
            if !flows || w == 0 || !exchanges {
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
        let threads = self.comm.ranks_are_threads();
        let mut phases = Vec::with_capacity(self.ndim);
        for a in 0..self.ndim {
            let mut ph = Phase::default();
            if w > 0 {
                for toward in [Side::Lower, Side::Upper] {
                    if !opts.directions.sends_to(a, toward) {
                        continue;
                    }
                    // The flow's bits; each exchange adds its number.
                    let tag = 0x8000_0000 | ((a as u32) << 1) | u32::from(toward == Side::Upper);
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
        // Both ends of a face must take the same road (copied in place, or
        // packed into a message), so `Auto` decides each axis for all the
        // nodes at once: in place where every node's faces on it are long
        // enough. Decided rank by rank, a rank whose only face a colour
        // mask emptied chose in place while its neighbour packed, and the
        // two waited for each other.
        let long: Vec<u32> = match (threads, in_place) {
            (true, InPlace::Auto) => {
                let mine: Vec<u32> = phases.iter().map(|p| u32::from(p.runs_long())).collect();
                nodes.allreduce(&mine, crate::collective::Min)?
            }
            _ => vec![1; phases.len()],
        };
        for (ph, long) in phases.iter_mut().zip(long) {
            let peers = ph.sends.iter().chain(&ph.recvs).any(|x| x.peer != me);
            ph.in_place = threads
                && peers
                && match in_place {
                    InPlace::Auto => long == 1,
                    InPlace::Always => true,
                    InPlace::Never => false,
                };
        }
        let in_place = phases.iter().any(|p| p.in_place);
        Ok(Halo {
            // Its own context: no other plan's message has its tags.
            comm: nodes.dup(),
            me,
            in_place,
            specs: fields.to_vec(),
            storage,
            phases,
            pool: RefCell::new(Vec::new()),
            next: Cell::new(0),
            open: RefCell::new(BTreeSet::new()),
        })
    }
}

impl Halo {
    /// Number the plan's next exchange (for operation `op`), which is open
    /// until [`Halo::close`]. Refused when its tags would be those of an
    /// exchange still open, 2^27 exchanges earlier.
    fn open(&self, op: &'static str) -> Result<Turn> {
        let n = self.next.get();
        let mut open = self.open.borrow_mut();
        if let Some(&old) = open.first() {
            if n - old >= 1 << TURN_BITS {
                return Err(Error::InvalidArgument {
                    op,
                    what: format!(
                        "exchange {old} of this halo plan was started and never finished (or failed), and exchange {n} would reuse its message tags: finish every started exchange"
                    ),
                });
            }
        }
        open.insert(n);
        self.next.set(n + 1);
        let bits = ((n & ((1 << TURN_BITS) - 1)) as u32) << TURN_SHIFT;
        Ok(Turn { n, bits })
    }

    /// Exchange `turn` is complete: none of its messages is left queued.
    fn close(&self, turn: Turn) {
        self.open.borrow_mut().remove(&turn.n);
    }

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

    /// Whether the blocking exchange moves the faces of `axis` straight
    /// from one field's storage into the other's, without packing: a plan
    /// of one field without a colour mask, whose faces along `axis` are
    /// contiguous in the storage (a face one row thick, or whole rows and
    /// planes). Above the engine's eager limit such a face is one copy,
    /// from the neighbour's array into the halo. A halo allocated beyond a
    /// non-periodic edge of the domain is not part of any face, so a face
    /// across it spans only part of each row: a grid whose axes without
    /// neighbours have no halo ([`Grid::with_halo`]) keeps its faces whole.
    pub fn is_direct(&self, axis: usize) -> bool {
        self.phases.get(axis).is_some_and(|ph| {
            let mut xs = ph.sends.iter().chain(&ph.recvs).peekable();
            xs.peek().is_some() && xs.all(|x| x.direct.is_some())
        })
    }

    /// Whether the blocking exchange copies the faces of `axis` straight
    /// from this rank's array into the neighbours' halos, one copy whatever
    /// the layout (strided faces, colour masks, several fields): the ranks
    /// are threads of one process, and [`InPlace`] chose the axis.
    /// Otherwise faces travel in messages (see [`Halo::is_direct`]).
    pub fn is_in_place(&self, axis: usize) -> bool {
        self.phases.get(axis).is_some_and(|p| p.in_place)
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
    /// return when they are filled (SUPDT + RUPDT). Exchanges of this plan
    /// started and not finished yet may be pending meanwhile.
    pub fn exchange(&self, mut fields: impl Fields) -> Result<()> {
        let mut fs = fields.list();
        self.check(&fs)?;
        let turn = self.open("Halo::exchange")?;
        if self.in_place {
            self.exchange_in_place(&mut fs, turn)?;
        } else {
            self.exchange_packed(&mut fs, turn)?;
        }
        self.close(turn);
        Ok(())
    }

    /// The blocking exchange in messages (contiguous faces of one field
    /// straight from the array, the others packed).
    fn exchange_packed(&self, fs: &mut [&mut dyn FieldData], turn: Turn) -> Result<()> {
        let mut local = VecDeque::new();
        for a in 0..self.phases.len() {
            let ph = &self.phases[a];
            let direct = ph.sends.iter().chain(&ph.recvs).all(|x| x.direct.is_some());
            if direct && fs.len() == 1 {
                self.direct_phase(a, &mut *fs[0], turn)?;
                continue;
            }
            self.send_phase(a, fs, None, &mut local, turn)?;
            self.recv_phase(a, fs, &mut local, turn)?;
        }
        Ok(())
    }

    /// Phase `a` of a blocking exchange whose faces are contiguous: each face
    /// goes from the field's own storage and into the neighbour's, with no
    /// packing (above the engine's eager limit, in one copy: the receiver
    /// copies straight from the sender's array).
    fn direct_phase(&self, a: usize, f: &mut dyn FieldData, turn: Turn) -> Result<()> {
        let ph = &self.phases[a];
        let sz = f.elem_size();
        let bytes_of = |x: &Xfer| {
            let r = x.direct.clone().expect("a direct face");
            r.start * sz..r.end * sz
        };
        let data = f.as_bytes_mut();
        // 1. To itself: a copy within the array (faces and halos are apart).
        for (s, r) in ph.to_itself(self.me) {
            data.copy_within(bytes_of(s), bytes_of(r).start);
        }
        // 2. The others: the halo parts lent to receives, the rest shared by
        // the sends (a face lies in the gaps between the halo parts).
        let mut recvs: Vec<&Xfer> = ph.recvs.iter().filter(|x| x.peer != self.me).collect();
        recvs.sort_by_key(|x| bytes_of(x).start);
        let sends: Vec<&Xfer> = ph.sends.iter().filter(|x| x.peer != self.me).collect();
        if recvs.is_empty() && sends.is_empty() {
            return Ok(());
        }
        let statuses = crate::request::scope(|s| -> Result<Vec<crate::rank::Status>> {
            let mut reqs = Vec::with_capacity(recvs.len() + sends.len());
            let mut gaps: Vec<(usize, &[u8])> = Vec::with_capacity(recvs.len() + 1);
            let (mut rest, mut base) = (&mut data[..], 0);
            for x in &recvs {
                let r = bytes_of(x);
                let (gap, tail) = std::mem::take(&mut rest).split_at_mut(r.start - base);
                gaps.push((base, gap));
                let (piece, tail) = tail.split_at_mut(r.len());
                reqs.push(self.comm.irecv(s, piece, x.peer, turn.tag(x))?);
                rest = tail;
                base = r.end;
            }
            gaps.push((base, rest));
            for x in &sends {
                let r = bytes_of(x);
                let (gb, g) = gaps
                    .iter()
                    .find(|(gb, g)| *gb <= r.start && r.end <= gb + g.len())
                    .expect("a face lies outside the halo parts of its phase");
                reqs.push(
                    self.comm
                        .isend(s, &g[r.start - gb..r.end - gb], x.peer, turn.tag(x))?,
                );
            }
            crate::request::wait_all(reqs)
        })?;
        for (x, st) in recvs.iter().zip(&statuses) {
            if st.len != x.bytes {
                return Err(wrong_size(x, a, st.len));
            }
        }
        Ok(())
    }

    /// Start an exchange (SUPDT): the values to send are taken now, and the
    /// first axis's messages leave. Until [`Pending::finish`], the fields may
    /// be read anywhere and written anywhere but in the halo cells the
    /// exchange fills. The plan may meanwhile run other exchanges, of other
    /// fields, blocking or started, and pending ones may be finished in any
    /// order (see the module docs).
    pub fn start(&self, mut fields: impl Fields) -> Result<Pending<'_>> {
        let fs = fields.list();
        self.check(&fs)?;
        let turn = self.open("Halo::start")?;
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
            self.send_phase(first, &fs, None, &mut local, turn)?;
        }
        Ok(Pending {
            halo: self,
            turn,
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
        turn: Turn,
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
                self.comm.send_vec(buf, x.peer, turn.tag(x))?;
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
        turn: Turn,
    ) -> Result<()> {
        for x in &self.phases[a].recvs {
            let buf = if x.peer == self.me {
                let i = local
                    .iter()
                    .position(|(t, _)| *t == x.tag)
                    .expect("a rank that is its own neighbour sent to itself first");
                local.remove(i).expect("found").1
            } else {
                self.comm.recv_vec::<u8>(x.peer, turn.tag(x))?.0
            };
            if buf.len() != x.bytes {
                return Err(wrong_size(x, a, buf.len()));
            }
            let mut at = 0;
            for (f, runs) in fs.iter_mut().zip(&x.inner) {
                at += f.unpack(runs, &buf[at..]);
            }
            for (f, runs) in fs.iter_mut().zip(&x.ext) {
                at += f.unpack(runs, &buf[at..]);
            }
            self.keep(buf);
        }
        Ok(())
    }

    /// Keep a message buffer for a later packing.
    pub(super) fn keep(&self, buf: Vec<u8>) {
        let mut pool = self.pool.borrow_mut();
        if pool.len() < POOL {
            pool.push(buf);
        }
    }

    /// An empty buffer for a message of `bytes`: a kept one when one is
    /// large enough.
    pub(super) fn buffer(&self, bytes: usize) -> Vec<u8> {
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
    /// filled). `fields` must be the ones passed to [`Halo::start`]. Other
    /// exchanges of the plan may be pending still, started before this one
    /// or after it.
    pub fn finish(mut self, mut fields: impl Fields) -> Result<()> {
        let h = self.halo;
        let turn = self.turn;
        let mut fs = fields.list();
        h.check(&fs)?;
        if self.first < h.phases.len() {
            h.recv_phase(self.first, &mut fs, &mut self.local, turn)?;
            for a in self.first + 1..h.phases.len() {
                let snap = std::mem::take(&mut self.snaps[a]);
                h.send_phase(a, &fs, Some(snap), &mut self.local, turn)?;
                h.recv_phase(a, &mut fs, &mut self.local, turn)?;
            }
        }
        h.close(turn);
        Ok(())
    }
}

/// A halo exchange between ranks that disagree (the plans are agreed when
/// made, so only a peer's broken plan gets here).
pub(super) fn mismatch(peer: usize, what: &str) -> Error {
    Error::CollectiveMismatch(format!(
        "halo exchange with rank {peer}: {what} (do the ranks pass the same fields and options?)"
    ))
}

/// The message of receive `x` along axis `a` came with `got` bytes.
pub(super) fn wrong_size(x: &Xfer, a: usize, got: usize) -> Error {
    mismatch(
        x.peer,
        &format!(
            "it sent {got} bytes along axis {a} where this rank expects {}",
            x.bytes
        ),
    )
}
