//! Algorithm selection: PICL's `setarc0` topology setting per communicator,
//! a per-call override, and for `Auto` a measured decision table with a
//! cost model behind it.
//!
//! `Auto` first looks the call up in the decision table of `tuning.rs`
//! (per transport, collective, participant count and oversubscription:
//! size thresholds measured with `hypercomm bench --all-algorithms`; the
//! crossovers it uses are listed there). Where the table has no rule (other
//! transports, collectives and participant counts) the cost model decides.
//! [`Comm::chosen_algorithm`] tells which algorithm a call would run.
//!
//! The cost model is seed 001's: a message of m bytes costs ts + tw·m; each
//! algorithm module of `hypercomm-algo` gives its cost in these terms, and
//! it picks the cheapest candidate for the message size and the number
//! of participants, with ts and tw of the transport in use
//! ([`TransportCost`]), plus the time to combine what a reduction combines
//! on one rank ([`COMBINE_COST`] per byte).
//!
//! | topology (setarc0) | barrier | bcast | reduce | allreduce |
//! |---|---|---|---|---|
//! | `Hypercube` | dissemination | binomial (seed 000 rule) | binomial | recursive doubling |
//! | `Full` | dissemination | star | star | reduce + bcast (star) |
//! | `Ring(order)` | dissemination | chain | binomial | ring |
//! | `BiRing(order)` | dissemination | bidirectional ring | binomial | ring |
//! | `Auto` | table, cost model | table, cost model | cost model | table, cost model |
//!
//! | topology | gather(v) | scatter(v) | allgather(v) | all-to-all | all-to-allv | reduce-scatter | scan |
//! |---|---|---|---|---|---|---|---|
//! | `Hypercube` | binomial | binomial | recursive doubling | Bruck | pairwise | recursive halving | recursive doubling |
//! | `Full` | star | star | Bruck | Bruck | pairwise | recursive halving | recursive doubling |
//! | `Ring(order)` | ring | binomial | ring | pairwise | pairwise | ring | chain |
//! | `BiRing(order)` | ring | binomial | bidirectional ring | pairwise | pairwise | ring | chain |
//! | `Auto` | cost model | cost model | table, cost model | table, cost model | pairwise | cost model | cost model |
//!
//! Ring allreduce and ring reduce-scatter need a commutative operator; with
//! a non-commutative one `Auto` and the ring topologies use Rabenseifner or
//! recursive halving instead, and forcing the ring is an error. Scans in
//! reproducible mode always use the chain (a strict left fold); reductions
//! and reduce-scatter in reproducible mode use the canonical tree whatever
//! the setting. All-to-allv never depends on the counts (they differ per
//! node), so it is always pairwise.
//!
//! The cost model takes the cheapest candidate by the formulas, and among
//! those within 5 % of it the one listed first (the formulas cannot tell closer
//! costs apart). The costs are per transport (thread, shm, tcp; measured
//! with `hypercomm bench`). When the job has more ranks than the machine
//! has cores, a message costs a context switch (ts is raised to 10 µs), the
//! cores copy for all ranks in turn (tw is multiplied by ranks per core),
//! and pipelines cannot overlap their stages, so the pipelined chain and
//! ring broadcasts are left out; with more than two ranks per core the
//! barrier is the two-round star ([`STAR_BARRIER_RANKS_PER_CORE`]).
//!
//! Crossovers of the cost model for the thread transport (ts = 0.5 µs,
//! tw = 0.1 ns/B), with 8 ranks on enough cores, as the formulas give them
//! (checked by this module's test; the measured table overrides them where
//! it has a rule, and BENCHMARKS.md measures both):
//!
//! * bcast: binomial up to 16 KiB, bidirectional pipelined ring from
//!   32 KiB, pipelined chain from 4 MiB (binomial at every size when the
//!   ranks outnumber the cores);
//! * allreduce: recursive doubling up to 4 KiB, Rabenseifner from 8 KiB,
//!   ring from 512 KiB (with 2 ranks: recursive doubling up to 8 KiB,
//!   ring from 16 KiB);
//! * allgather (bytes per rank): recursive doubling up to 2 KiB,
//!   bidirectional ring from 4 KiB;
//! * all-to-all (bytes per block): Bruck up to 2 KiB, pairwise from 4 KiB;
//! * scan: recursive doubling up to 8 KiB, pipelined chain from 16 KiB;
//! * gather and scatter: binomial at every size (same bandwidth term as
//!   the star, fewer start-ups); reduce-scatter: recursive halving at
//!   every size (the ring's bandwidth term is no better).
//!
//! Not done yet:
//!
//! * calibration of ts/tw at run time (the constants are per transport);
//! * decision-table rules for the shm and tcp transports, for more than 8
//!   ranks, and for the collectives the sweep does not measure (reduce,
//!   gather, scatter, reduce-scatter, scans);
//! * the cost model ignores link contention, and its combine term
//!   (`COMBINE_COST`) is one constant for every operator and type;
//! * variable-count calls choose by the average block length.

mod memo;
mod options;
pub(crate) mod state;
mod tuning;

pub(crate) use memo::SchedKey;
pub(crate) use options::Coll;
pub use options::{Algorithm, CollOpts, Collective, Topology};
pub(crate) use tuning::Link;

use super::ops::Element;
use crate::comm::Comm;
use crate::error::{Error, Result};
use hypercomm_algo::{RingOrder, Schedule};
use std::rc::Rc;

/// Start-up and per-byte costs of a transport (seconds, seconds per byte).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportCost {
    /// Start-up cost of one message.
    pub ts: f64,
    /// Cost per byte.
    pub tw: f64,
}

/// The thread transport's costs (measured with `hypercomm bench`).
pub const THREAD_COST: TransportCost = TransportCost {
    ts: 0.5e-6,
    tw: 0.1e-9,
};

/// The shared-memory transport's costs (measured with `hypercomm bench
/// --transport shm`: about 0.3 µs start-up, 8–20 GB/s).
pub const SHM_COST: TransportCost = TransportCost {
    ts: 0.6e-6,
    tw: 0.12e-9,
};

/// The TCP transport's costs on loopback (`hypercomm bench --transport tcp`:
/// about 10 µs start-up, 3 GB/s).
pub const TCP_COST: TransportCost = TransportCost {
    ts: 10e-6,
    tw: 0.35e-9,
};

/// With more than this many ranks per core, the barrier is the star (two
/// rounds) rather than dissemination (⌈log2 p⌉ rounds). Measured on 2 cores
/// (`hypercomm bench barrier --all-algorithms`, threads / shm, µs):
/// 4 ranks dissemination 7.0 / 5.7, star 8.7 / 6.9; 8 ranks 16.6 / 18.8
/// against 15.2 / 16.3; 16 ranks 44.8 / 66.7 against 30.5 / 36.3.
pub const STAR_BARRIER_RANKS_PER_CORE: usize = 2;

/// Start-up cost of a message when ranks outnumber cores: the receiver
/// usually has to be scheduled first (a context switch).
pub const OVERSUBSCRIBED_TS: f64 = 10e-6;

pub(crate) fn candidates(c: Coll) -> &'static [Algorithm] {
    use Algorithm::*;
    match c {
        Coll::Barrier => &[Dissemination, Tree, Star],
        Coll::Bcast => &[Binomial, Star, Chain, BiRing],
        Coll::Reduce => &[Binomial, Star],
        Coll::Allreduce => &[RecursiveDoubling, Ring, Rabenseifner, ReduceBcast],
        Coll::Gather => &[Binomial, Star, Ring],
        Coll::Scatter => &[Binomial, Star],
        Coll::Allgather => &[RecursiveDoubling, Ring, BiRing, Bruck],
        Coll::Alltoall => &[Pairwise, Bruck],
        Coll::Alltoallv => &[Pairwise],
        Coll::ReduceScatter => &[RecursiveHalving, Ring],
        Coll::Scan => &[RecursiveDoubling, Chain],
    }
}

fn cost(c: Coll, a: Algorithm, p: usize, m: usize, t: TransportCost) -> f64 {
    use hypercomm_algo as h;
    use Algorithm::*;
    let (ts, tw) = (t.ts, t.tw);
    match (c, a) {
        (Coll::Barrier, Dissemination) => h::barrier_dissemination::cost(p, 0, ts, tw),
        (Coll::Barrier, Tree) => h::barrier_tree::cost(p, 0, ts, tw),
        (Coll::Barrier, Star) => h::barrier_star::cost(p, 0, ts, tw),
        (Coll::Bcast, Binomial) => h::bcast_binomial::cost(p, m, ts, tw),
        (Coll::Bcast, Star) => h::bcast_star::cost(p, m, ts, tw),
        (Coll::Bcast, Chain) => h::bcast_chain::cost(p, m, ts, tw),
        (Coll::Bcast, BiRing) => h::bcast_ring::cost(p, m, ts, tw),
        (Coll::Reduce, Binomial) => h::reduce_binomial::cost(p, m, ts, tw),
        (Coll::Reduce, Star) => h::reduce_star::cost(p, m, ts, tw),
        (Coll::Allreduce, RecursiveDoubling) => h::allreduce_recursive_doubling::cost(p, m, ts, tw),
        (Coll::Allreduce, Ring) => h::allreduce_ring::cost(p, m, ts, tw),
        (Coll::Allreduce, Rabenseifner) => h::allreduce_rabenseifner::cost(p, m, ts, tw),
        (Coll::Allreduce, ReduceBcast) => h::allreduce_reduce_bcast::cost(p, m, ts, tw),
        (Coll::Gather, Binomial) => h::gather_binomial::cost(p, m, ts, tw),
        (Coll::Gather, Star) => h::gather_star::cost(p, m, ts, tw),
        (Coll::Gather, Ring) => h::gather_ring::cost(p, m, ts, tw),
        (Coll::Scatter, Binomial) => h::scatter_binomial::cost(p, m, ts, tw),
        (Coll::Scatter, Star) => h::scatter_star::cost(p, m, ts, tw),
        (Coll::Allgather, RecursiveDoubling) => h::allgather_recursive_doubling::cost(p, m, ts, tw),
        (Coll::Allgather, Ring) => h::allgather_ring::cost(p, m, ts, tw),
        (Coll::Allgather, BiRing) => h::allgather_ring::cost_bidirectional(p, m, ts, tw),
        (Coll::Allgather, Bruck) => h::allgather_bruck::cost(p, m, ts, tw),
        (Coll::Alltoall | Coll::Alltoallv, Pairwise) => h::alltoall_pairwise::cost(p, m, ts, tw),
        (Coll::Alltoall, Bruck) => h::alltoall_bruck::cost(p, m, ts, tw),
        (Coll::ReduceScatter, RecursiveHalving) => {
            h::reduce_scatter_recursive_halving::cost(p, m, ts, tw)
        }
        (Coll::ReduceScatter, Ring) => h::reduce_scatter_ring::cost(p, m, ts, tw),
        (Coll::Scan, RecursiveDoubling) => h::scan_recursive_doubling::cost(p, m, ts, tw),
        (Coll::Scan, Chain) => h::scan_chain::cost(p, m, ts, tw),
        _ => f64::INFINITY,
    }
}

/// Time to combine one byte into another (γ in the cost model of Thakur,
/// Rabenseifner and Gropp): about 10 GB/s for an f64 sum on this class of
/// machine, whatever the transport.
pub const COMBINE_COST: f64 = 0.1e-9;

/// Bytes one rank combines in `c` by `a` (m bytes of vector, p ranks):
/// recursive doubling combines the whole vector at every step, the ring and
/// Rabenseifner's algorithm combine one block per step. Without this term
/// the formulas tie recursive doubling and the ring for 2 ranks, which
/// measure 1.3-2x apart for large vectors.
fn combined_bytes(c: Coll, a: Algorithm, p: usize, m: usize) -> f64 {
    use Algorithm::*;
    let m = m as f64;
    let steps = (p.max(1) as f64).log2().ceil();
    let share = (p.saturating_sub(1)) as f64 / p.max(1) as f64;
    match (c, a) {
        (
            Coll::Allreduce | Coll::Reduce | Coll::Scan,
            RecursiveDoubling | Binomial | ReduceBcast,
        ) => m * steps,
        (Coll::Allreduce | Coll::ReduceScatter, Ring | Rabenseifner | RecursiveHalving) => {
            m * share
        }
        (Coll::Reduce, Star) => m * (p.saturating_sub(1)) as f64,
        (Coll::Scan, Chain) => m,
        _ => 0.0,
    }
}

/// Algorithms that combine contributions out of rank order.
fn needs_commutative(c: Coll, a: Algorithm) -> bool {
    matches!(
        (c, a),
        (Coll::Allreduce | Coll::ReduceScatter, Algorithm::Ring)
    )
}

/// The order-keeping algorithm used instead of one that needs a
/// commutative operator.
fn order_keeping(c: Coll) -> Algorithm {
    match c {
        Coll::ReduceScatter => Algorithm::RecursiveHalving,
        _ => Algorithm::Rabenseifner,
    }
}

/// Pipelined algorithms only pay off when the stages run at the same time,
/// which needs a core per rank.
fn pipelined(a: Algorithm) -> bool {
    matches!(a, Algorithm::Chain | Algorithm::BiRing)
}

/// The algorithm `Auto` picks for `c` with `p` participants and `m` bytes.
#[cfg(test)]
pub(crate) fn by_cost(c: Coll, p: usize, m: usize, t: TransportCost) -> Algorithm {
    by_cost_on(c, p, m, t, false)
}

/// [`by_cost`], knowing whether the ranks outnumber the cores: then every
/// message costs a context switch and pipelines do not overlap, so the
/// pipelined algorithms are left out and ts is raised.
pub(crate) fn by_cost_on(
    c: Coll,
    p: usize,
    m: usize,
    mut t: TransportCost,
    oversubscribed: bool,
) -> Algorithm {
    if c == Coll::Barrier && p > STAR_BARRIER_RANKS_PER_CORE * crate::transport::cores() {
        // Each rank must be scheduled once per round to move on: two
        // rounds beat ⌈log2 p⌉ when the ranks queue for the cores.
        return Algorithm::Star;
    }
    // Combining, like copying, slows down when the cores serve several ranks.
    let base_tw = t.tw;
    if oversubscribed {
        // Every message waits for its receiver to be scheduled, and the
        // cores copy for all ranks in turn.
        t.ts = t.ts.max(OVERSUBSCRIBED_TS);
        t.tw *= (p as f64 / crate::transport::cores() as f64).max(1.0);
    }
    let usable: Vec<(Algorithm, f64)> = candidates(c)
        .iter()
        .copied()
        .filter(|&a| {
            !(oversubscribed && pipelined(a) && candidates(c).iter().any(|&b| !pipelined(b)))
        })
        .map(|a| {
            let combine = combined_bytes(c, a, p, m) * COMBINE_COST;
            (a, cost(c, a, p, m, t) + combine * t.tw / base_tw)
        })
        .collect();
    let best = usable.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    // Within 5 % the formulas cannot tell algorithms apart; the candidate
    // listed first (the simpler one, or the measured better one) wins.
    usable
        .iter()
        .find(|x| x.1 <= best * 1.05)
        .map(|x| x.0)
        .expect("every collective has candidates")
}

/// The fixed algorithm of reproducible mode, for the collectives that have
/// one: the bracketing must depend only on the inputs and the number of
/// nodes, whatever `Auto`, the topology or a forced algorithm say.
fn reproducible(c: Coll) -> Option<Algorithm> {
    match c {
        Coll::Reduce | Coll::ReduceScatter => Some(Algorithm::Binomial),
        Coll::Allreduce => Some(Algorithm::ReduceBcast),
        Coll::Scan => Some(Algorithm::Chain),
        _ => None,
    }
}

/// `Auto`'s pick: the measured table where it covers the case (transport,
/// collective, participants, oversubscription), else the cost model.
pub(crate) fn auto(
    l: Option<Link>,
    c: Coll,
    p: usize,
    m: usize,
    t: TransportCost,
    oversubscribed: bool,
) -> Algorithm {
    l.and_then(|l| tuning::lookup(l, c, p, m, oversubscribed))
        .unwrap_or_else(|| by_cost_on(c, p, m, t, oversubscribed))
}

fn by_topology(c: Coll, t: Topology) -> Option<Algorithm> {
    use Algorithm::*;
    Some(match (t, c) {
        (Topology::Auto, _) => return None,
        (_, Coll::Barrier) => Dissemination,
        (Topology::Hypercube, Coll::Bcast) => Binomial,
        (Topology::Hypercube, Coll::Reduce) => Binomial,
        (Topology::Hypercube, Coll::Allreduce) => RecursiveDoubling,
        (Topology::Full, Coll::Bcast) => Star,
        (Topology::Full, Coll::Reduce) => Star,
        (Topology::Full, Coll::Allreduce) => ReduceBcast,
        (Topology::Ring(_), Coll::Bcast) => Chain,
        (Topology::BiRing(_), Coll::Bcast) => BiRing,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::Reduce) => Binomial,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::Allreduce) => Ring,
        (Topology::Hypercube, Coll::Gather | Coll::Scatter) => Binomial,
        (Topology::Full, Coll::Gather | Coll::Scatter) => Star,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::Gather) => Ring,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::Scatter) => Binomial,
        (Topology::Hypercube, Coll::Allgather) => RecursiveDoubling,
        (Topology::Full, Coll::Allgather) => Bruck,
        (Topology::Ring(_), Coll::Allgather) => Ring,
        (Topology::BiRing(_), Coll::Allgather) => BiRing,
        (Topology::Hypercube | Topology::Full, Coll::Alltoall) => Bruck,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::Alltoall) => Pairwise,
        (_, Coll::Alltoallv) => Pairwise,
        (Topology::Hypercube | Topology::Full, Coll::ReduceScatter) => RecursiveHalving,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::ReduceScatter) => Ring,
        (Topology::Hypercube | Topology::Full, Coll::Scan) => RecursiveDoubling,
        (Topology::Ring(_) | Topology::BiRing(_), Coll::Scan) => Chain,
    })
}

/// The error for an algorithm a collective does not have.
pub(crate) fn unsupported(op: &'static str, a: Algorithm) -> Error {
    Error::InvalidArgument {
        op,
        what: format!("algorithm {a:?} is not available for {op}"),
    }
}

/// Segment length in elements for pipelined algorithms.
pub(crate) fn segment_elems<T: Element>(opts: &CollOpts, count: usize, p: usize) -> usize {
    let sz = std::mem::size_of::<T>().max(1);
    let bytes = opts.segment_bytes.unwrap_or_else(|| {
        // About √(m·ts/((p-2)·tw)) bytes per segment minimises the chain's
        // cost; keep it between 8 KiB and 1 MiB.
        let m = (count * sz) as f64;
        let t = THREAD_COST;
        let best = (m * t.ts / ((p.saturating_sub(2).max(1)) as f64 * t.tw)).sqrt();
        (best as usize).clamp(8 << 10, 1 << 20)
    });
    (bytes / sz).max(1)
}

impl Comm {
    /// The transport this communicator runs on, its costs, and whether the
    /// job has more ranks than this machine has cores.
    pub(crate) fn cost_model(&self) -> (Option<Link>, TransportCost, bool) {
        use crate::transport::Transport;
        let link = self.engine().t.link();
        let cost = TransportCost {
            ts: link.ts,
            tw: link.tw,
        };
        (link.kind, cost, link.oversubscribed())
    }

    /// Set the virtual topology collectives follow (PICL setarc0). Every
    /// member should set the same.
    pub fn set_topology(&self, t: Topology) {
        self.inner.coll.topology.set(t);
    }

    /// The topology in force (PICL getarc0).
    pub fn topology(&self) -> Topology {
        self.inner.coll.topology.get()
    }

    /// Switch check mode (PICL check0): on by default; every collective then
    /// first compares a small signature across ranks.
    pub fn set_check(&self, on: bool) {
        self.inner.coll.check.set(on);
    }

    /// Whether check mode is on.
    pub fn check_mode(&self) -> bool {
        self.inner.coll.check.get()
    }

    pub(crate) fn ring_order(&self) -> RingOrder {
        match self.topology() {
            Topology::Ring(o) | Topology::BiRing(o) => o,
            _ => RingOrder::NATURAL,
        }
    }

    /// Choose an algorithm for one call.
    pub(crate) fn choose(
        &self,
        c: Coll,
        p: usize,
        bytes: usize,
        opts: &CollOpts,
        commutative: bool,
    ) -> Result<Algorithm> {
        let name = c.name();
        if opts.reproducible {
            if let Some(a) = reproducible(c) {
                return Ok(a);
            }
        }
        if !commutative && needs_commutative(c, opts.algorithm) {
            return Err(Error::InvalidArgument {
                op: name,
                what: format!(
                    "algorithm {:?} combines out of rank order and needs a commutative operator",
                    opts.algorithm
                ),
            });
        }
        if opts.algorithm != Algorithm::Auto {
            if !candidates(c).contains(&opts.algorithm) {
                return Err(unsupported(name, opts.algorithm));
            }
            return Ok(opts.algorithm);
        }
        let a = by_topology(c, self.topology()).unwrap_or_else(|| {
            let (l, t, over) = self.cost_model();
            auto(l, c, p, bytes, t, over)
        });
        if !commutative && needs_commutative(c, a) {
            // Order-keeping alternative with the same bandwidth profile.
            return Ok(order_keeping(c));
        }
        Ok(a)
    }

    /// The algorithm a call of collective `c` on this communicator would
    /// run, with `bytes` counted as [`Collective`] says (whole vector for
    /// broadcast and reductions, one rank's part for gathers, one block for
    /// all-to-all; ignored by the barrier), the options `opts` (a forced
    /// algorithm, reproducible mode) and an operator that is `commutative`
    /// or not (every built-in operator is; only reductions look at it).
    ///
    /// This is the selection the call itself makes (topology setting,
    /// measured table, cost model, operator and reproducibility rules), so
    /// a benchmark can say what `Auto` ran. In reproducible mode the
    /// reductions answer with the fixed schedule's family (allreduce:
    /// reduce + bcast; reduce and reduce-scatter: binomial, the canonical
    /// tree; scans: chain).
    ///
    /// Errors: the host asked about a node collective, a forced algorithm
    /// the collective does not have, or one that needs a commutative
    /// operator when `commutative` is false.
    pub fn chosen_algorithm(
        &self,
        c: Collective,
        bytes: usize,
        opts: &CollOpts,
        commutative: bool,
    ) -> Result<Algorithm> {
        let p = self.node_parts(c.name())?.eps.len();
        self.choose(c, p, bytes, opts, commutative)
    }

    /// [`Comm::choose`], remembered for repeated calls of the same shape.
    pub(crate) fn choose_memo(
        &self,
        c: Coll,
        p: usize,
        bytes: usize,
        opts: &CollOpts,
        commutative: bool,
    ) -> Result<Algorithm> {
        if opts.algorithm != Algorithm::Auto {
            return self.choose(c, p, bytes, opts, commutative);
        }
        let key = (c, p, bytes, commutative, opts.reproducible, self.topology());
        let memo = &self.inner.coll.memo;
        if let Some(a) = memo.choice(&key) {
            return Ok(a);
        }
        let a = self.choose(c, p, bytes, opts, commutative)?;
        memo.remember_choice(key, a);
        Ok(a)
    }

    /// The schedule for `key`, made by `make` unless remembered.
    pub(crate) fn schedule(
        &self,
        key: SchedKey,
        make: impl FnOnce() -> Result<Schedule>,
    ) -> Result<Rc<Schedule>> {
        let memo = &self.inner.coll.memo;
        if let Some(s) = memo.schedule(&key) {
            return Ok(s);
        }
        let s = Rc::new(make()?);
        memo.remember_schedule(key, &s);
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crossovers of the cost model the module doc states (8 ranks,
    /// thread transport costs; m in bytes per rank, per block, or of the
    /// whole vector, as each algorithm's cost formula takes it): the
    /// fallback for what the measured table does not cover.
    #[test]
    fn documented_crossovers() {
        let at = |c, m| by_cost(c, 8, m, THREAD_COST);
        use Algorithm::*;
        assert_eq!(at(Coll::Bcast, 16 << 10), Binomial);
        assert_eq!(at(Coll::Bcast, 32 << 10), BiRing);
        assert_eq!(at(Coll::Bcast, 4 << 20), Chain);
        assert_eq!(at(Coll::Allreduce, 4 << 10), RecursiveDoubling);
        assert_eq!(at(Coll::Allreduce, 8 << 10), Rabenseifner);
        assert_eq!(at(Coll::Allreduce, 256 << 10), Rabenseifner);
        assert_eq!(at(Coll::Allreduce, 512 << 10), Ring);
        assert_eq!(at(Coll::Allgather, 2 << 10), RecursiveDoubling);
        assert_eq!(at(Coll::Allgather, 4 << 10), BiRing);
        assert_eq!(at(Coll::Alltoall, 2 << 10), Bruck);
        assert_eq!(at(Coll::Alltoall, 4 << 10), Pairwise);
        assert_eq!(at(Coll::Scan, 8 << 10), RecursiveDoubling);
        assert_eq!(at(Coll::Scan, 16 << 10), Chain);
        // Two ranks: the ring combines half the vector where recursive
        // doubling combines all of it (the combine term breaks the tie).
        let two = |m| by_cost(Coll::Allreduce, 2, m, THREAD_COST);
        assert_eq!(two(8 << 10), RecursiveDoubling);
        assert_eq!(two(16 << 10), Ring);
        assert_eq!(two(4 << 20), Ring);
        // Many more ranks than cores: the two-round star barrier.
        let cores = crate::transport::cores();
        assert_eq!(
            by_cost_on(Coll::Barrier, 2 * cores + 1, 0, THREAD_COST, true),
            Star
        );
        assert_eq!(
            by_cost_on(Coll::Barrier, 2 * cores, 0, THREAD_COST, true),
            Dissemination
        );
        // More ranks than cores: no pipelines, and a start-up of 10 µs.
        let over = |c, m| by_cost_on(c, 8, m, THREAD_COST, true);
        assert_eq!(over(Coll::Bcast, 4 << 20), Binomial);
        assert_eq!(over(Coll::Allreduce, 4 << 20), Ring);
        for m in [0, 1, 1 << 20, 1 << 26] {
            assert_eq!(at(Coll::Gather, m), Binomial);
            assert_eq!(at(Coll::Scatter, m), Binomial);
            assert_eq!(at(Coll::ReduceScatter, m), RecursiveHalving);
        }
    }

    /// `Auto` takes the table where it covers the case and the cost model
    /// elsewhere.
    #[test]
    fn table_first_then_cost_model() {
        use Algorithm::*;
        for r in tuning::TABLE {
            for p in [r.ranks.0, r.ranks.1] {
                for m in [0, 8, 4096, 1 << 20, 1 << 24] {
                    let want = tuning::lookup(r.link, r.coll, p, m, r.oversubscribed);
                    assert!(want.is_some());
                    assert_eq!(
                        Some(auto(
                            Some(r.link),
                            r.coll,
                            p,
                            m,
                            THREAD_COST,
                            r.oversubscribed
                        )),
                        want
                    );
                }
            }
        }
        // Not in the table: other transports, collectives, counts.
        for (l, c, p, over) in [
            (Link::Shm, Coll::Allreduce, 4, false),
            (Link::Tcp, Coll::Bcast, 8, true),
            (Link::Thread, Coll::Scan, 8, true),
            (Link::Thread, Coll::Gather, 2, false),
            (Link::Thread, Coll::Allreduce, 64, true),
        ] {
            for m in [8, 1 << 20] {
                assert_eq!(tuning::lookup(l, c, p, m, over), None);
                assert_eq!(
                    auto(Some(l), c, p, m, THREAD_COST, over),
                    by_cost_on(c, p, m, THREAD_COST, over)
                );
            }
        }
        assert_eq!(
            auto(
                Some(Link::Thread),
                Coll::ReduceScatter,
                8,
                1 << 20,
                THREAD_COST,
                false
            ),
            RecursiveHalving
        );
    }

    /// What a call runs, asked of a communicator: forced algorithms,
    /// topology settings, operator and reproducibility rules keep their
    /// meaning over the table.
    #[test]
    fn chosen_algorithm_keeps_the_rules() {
        use Algorithm::*;
        let r = crate::run(2, |comm| {
            let auto = CollOpts::default();
            let forced = |a| CollOpts {
                algorithm: a,
                ..Default::default()
            };
            let repro = CollOpts {
                reproducible: true,
                ..Default::default()
            };
            let (l, t, over) = comm.cost_model();
            for m in [8, 4096, 1 << 18, 1 << 22] {
                for c in [
                    Coll::Allreduce,
                    Coll::Bcast,
                    Coll::Allgather,
                    Coll::Alltoall,
                ] {
                    assert_eq!(
                        comm.chosen_algorithm(c, m, &auto, true)?,
                        super::auto(l, c, 2, m, t, over)
                    );
                }
                // A non-commutative operator never gets the ring.
                let a = comm.chosen_algorithm(Coll::Allreduce, m, &auto, false)?;
                assert_ne!(a, Ring);
                let a = comm.chosen_algorithm(Coll::ReduceScatter, m, &auto, false)?;
                assert_ne!(a, Ring);
                assert_eq!(
                    comm.chosen_algorithm(Coll::Allreduce, m, &repro, false)?,
                    ReduceBcast
                );
                assert_eq!(comm.chosen_algorithm(Coll::Scan, m, &repro, true)?, Chain);
                assert_eq!(
                    comm.chosen_algorithm(Coll::Bcast, m, &forced(Chain), true)?,
                    Chain
                );
            }
            assert!(comm
                .chosen_algorithm(Coll::Allreduce, 8, &forced(Ring), false)
                .is_err());
            assert!(comm
                .chosen_algorithm(Coll::Alltoall, 8, &forced(Star), true)
                .is_err());
            comm.set_topology(Topology::Hypercube);
            assert_eq!(
                comm.chosen_algorithm(Coll::Bcast, 1 << 22, &auto, true)?,
                Binomial
            );
            comm.set_topology(Topology::Auto);
            assert_eq!(
                comm.chosen_algorithm(Coll::Alltoallv, 1 << 20, &auto, true)?,
                Pairwise
            );
            Ok::<_, Error>(())
        });
        r.unwrap();
    }
}
