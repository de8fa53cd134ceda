//! What the registry holds: an algorithm's name ([`Algorithm`]), the
//! arguments of one call's schedule ([`Params`]) and one registered
//! algorithm ([`Entry`]), with the helpers entries use for their combine
//! term. The algorithm files import this, and the registry lists them.

use crate::topology::TopologyKind;
use crate::{Collective, Direction, Inclusion, RingOrder, Schedule};
use std::fmt;

/// A collective algorithm, identified by its name ("binomial", "ring", …),
/// so that a new algorithm needs no enum variant.
///
/// The associated consts (`Algorithm::Ring`, …) are conveniences for the
/// names registered today and keep code written against the former enum
/// compiling, `match` included (they work as patterns, with a `_` arm);
/// any registered name works through [`Algorithm::named`] or
/// [`str::parse`]. [`Algorithm::Auto`] asks selection to choose.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Algorithm(&'static str);

#[allow(non_upper_case_globals)]
impl Algorithm {
    /// Let selection choose (topology setting, measured table, cost model).
    pub const Auto: Algorithm = Algorithm("auto");
    /// Binomial / hypercube spanning tree.
    pub const Binomial: Algorithm = Algorithm("binomial");
    /// Star (PICL full connectivity).
    pub const Star: Algorithm = Algorithm("star");
    /// Pipelined chain along the ring order.
    pub const Chain: Algorithm = Algorithm("chain");
    /// Bidirectional (pipelined) ring.
    pub const BiRing: Algorithm = Algorithm("biring");
    /// Ring (reduce-scatter + allgather for allreduce).
    pub const Ring: Algorithm = Algorithm("ring");
    /// Recursive doubling / dimension exchange.
    pub const RecursiveDoubling: Algorithm = Algorithm("recursive-doubling");
    /// Recursive halving (reduce-scatter).
    pub const RecursiveHalving: Algorithm = Algorithm("recursive-halving");
    /// Reduce-scatter + allgather by halving and doubling.
    pub const Rabenseifner: Algorithm = Algorithm("rabenseifner");
    /// Reduce to one rank, then broadcast.
    pub const ReduceBcast: Algorithm = Algorithm("reduce-bcast");
    /// Bruck's algorithm.
    pub const Bruck: Algorithm = Algorithm("bruck");
    /// Pairwise exchange.
    pub const Pairwise: Algorithm = Algorithm("pairwise");
    /// Dissemination barrier.
    pub const Dissemination: Algorithm = Algorithm("dissemination");
    /// Tree barrier.
    pub const Tree: Algorithm = Algorithm("tree");
    /// The transport library's own collective (MPI's `MPI_Allreduce`, …),
    /// where the transport has one and the operation maps; not a schedule,
    /// so not in the registry.
    pub const Native: Algorithm = Algorithm("native");
    /// Through the shared-memory board instead of messages (small
    /// barrier, bcast, reduce, allreduce, allgather and all-to-all among
    /// the nodes of a job on threads or shm); not a schedule, so not in
    /// the registry.
    pub const Board: Algorithm = Algorithm("board");

    /// The algorithm called `name`. Any name can be made; only registered
    /// ones (see [`names`](crate::registry::names)) are found by [`find`](crate::registry::find) and accepted by
    /// [`str::parse`].
    pub const fn named(name: &'static str) -> Algorithm {
        Algorithm(name)
    }

    /// Its name, as `hypercomm bench` and the registry spell it.
    pub const fn name(self) -> &'static str {
        self.0
    }
}

impl Default for Algorithm {
    fn default() -> Self {
        Algorithm::Auto
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The error of parsing an [`Algorithm`] name that is neither "auto" nor
/// registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseAlgorithmError {
    pub(crate) name: String,
    /// The registered names, for the message.
    pub(crate) known: Vec<&'static str>,
}

impl fmt::Display for ParseAlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // What `str::parse` accepts besides the registry's names.
        write!(
            f,
            "unknown algorithm {:?}; known: auto, native, board",
            self.name
        )?;
        for n in &self.known {
            write!(f, ", {n}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseAlgorithmError {}

/// The arguments of one call's schedule, filled once by the caller for
/// whatever entry it runs (see the module doc for the fields each family
/// reads; the others are ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params<'a> {
    /// This participant, `0..p`.
    pub me: usize,
    /// The number of participants.
    pub p: usize,
    /// The root participant of rooted collectives.
    pub root: usize,
    /// Elements of fixed-count collectives (the vector, or one block of an
    /// all-to-all).
    pub count: usize,
    /// Elements per participant of variable-count collectives (for
    /// all-to-allv: the elements this participant sends to each).
    pub counts: &'a [usize],
    /// All-to-allv only: the elements this participant receives from each.
    pub recv_counts: &'a [usize],
    /// Segment length in elements of pipelined algorithms (0 is taken as 1).
    pub segment: usize,
    /// The ring order of ring and chain algorithms (PICL setarc0).
    pub order: RingOrder,
    /// Direction of scans.
    pub direction: Direction,
    /// Inclusive or exclusive scans.
    pub inclusion: Inclusion,
}

impl Params<'static> {
    /// Participant `me` of `p`, with everything else empty or default: root
    /// 0, count 0, no counts, segment 1, natural ring order, an upward
    /// inclusive scan. Fill in the rest with struct update syntax.
    pub const fn new(me: usize, p: usize) -> Params<'static> {
        Params {
            me,
            p,
            root: 0,
            count: 0,
            counts: &[],
            recv_counts: &[],
            segment: 1,
            order: RingOrder::NATURAL,
            direction: Direction::Upward,
            inclusion: Inclusion::Inclusive,
        }
    }
}

/// One registered algorithm of one collective family.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The family it serves (a collective whose [`Collective::family`] is
    /// itself).
    pub collective: Collective,
    /// Its name.
    pub algorithm: Algorithm,
    /// The schedule of one participant.
    pub generate: fn(&Params<'_>) -> Schedule,
    /// Its time in the seed-001 model for `p` participants and `m` bytes
    /// counted as [`Collective`] documents, with start-up `ts` and per-byte
    /// `tw` (seconds).
    pub cost: fn(p: usize, m: usize, ts: f64, tw: f64) -> f64,
    /// The bytes one participant combines with the operator (0 for
    /// collectives that do not reduce); the selector adds this times the
    /// combine cost per byte.
    pub combined: fn(p: usize, m: usize) -> f64,
    /// It combines contributions out of rank order, so it needs a
    /// commutative operator.
    pub commutative_only: bool,
    /// It is pipelined: it only pays off when its stages run at the same
    /// time, which needs a core per rank.
    pub pipelined: bool,
    /// The topology settings (PICL setarc0) that select it.
    pub topologies: &'static [TopologyKind],
}

impl Entry {
    /// The schedule of participant `params.me` (calls the `generate` field).
    pub fn generate(&self, params: &Params<'_>) -> Schedule {
        (self.generate)(params)
    }

    /// Its cost in the seed-001 model (calls the `cost` field).
    pub fn cost(&self, p: usize, m: usize, ts: f64, tw: f64) -> f64 {
        (self.cost)(p, m, ts, tw)
    }
}

/// [`Entry::combined`] of collectives that do not reduce: nothing.
pub fn combines_nothing(_p: usize, _m: usize) -> f64 {
    0.0
}

/// [`Entry::combined`] of algorithms that combine the whole vector at each
/// of ⌈log2 p⌉ steps (recursive doubling, the binomial tree).
pub fn combines_per_step(p: usize, m: usize) -> f64 {
    let steps = (p.max(1) as f64).log2().ceil();
    m as f64 * steps
}

/// [`Entry::combined`] of algorithms that combine one block per step,
/// (p-1)/p of the vector in all (ring, recursive halving, Rabenseifner).
/// Without the combine term the formulas tie recursive doubling and the
/// ring for 2 ranks, which measure 1.3-2x apart for large vectors.
pub fn combines_share(p: usize, m: usize) -> f64 {
    let share = (p.saturating_sub(1)) as f64 / p.max(1) as f64;
    m as f64 * share
}
