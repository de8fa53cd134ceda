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
//! The candidates, their costs, the algorithms each topology setting
//! selects and the operator rules are the algorithm crate's registry
//! (`hypercomm_algo::registry`, one entry per algorithm file) and its pure
//! selection rules (`hypercomm_algo::select`); this module adds what only
//! a running communicator knows: the transport's costs and the machine's
//! shape ([`crate::transport::Link`]), the measured table for that
//! transport, and the memo of recent choices and schedules.
//!
//! The cost model is seed 001's: a message of m bytes costs ts + tw·m; each
//! registered algorithm gives its cost in these terms, and the cheapest
//! candidate for the message size and the number of participants wins,
//! with ts and tw of the transport in use, plus the time to combine what a
//! reduction combines on one rank (`COMBINE_COST` per byte).
//!
//! | topology (setarc0) | barrier | bcast | reduce | allreduce |
//! |---|---|---|---|---|
//! | `Hypercube` | dissemination | binomial (seed 000 rule) | binomial | recursive doubling |
//! | `Full` | dissemination | star | star | reduce + bcast (star) |
//! | `Ring(order)` | dissemination | chain | binomial | ring |
//! | `BiRing(order)` | dissemination | bidirectional ring | binomial | ring |
//! | `Mesh2D` | dissemination | mesh (row, then columns) | mesh (rows, then a column) | recursive doubling |
//! | `Auto` | table, cost model | table, cost model | cost model | table, cost model |
//!
//! | topology | gather(v) | scatter(v) | allgather(v) | all-to-all | all-to-allv | reduce-scatter | scan |
//! |---|---|---|---|---|---|---|---|
//! | `Hypercube` | binomial | binomial | recursive doubling | Bruck | pairwise | recursive halving | recursive doubling |
//! | `Full` | star | star | Bruck | Bruck | pairwise | recursive halving | recursive doubling |
//! | `Ring(order)` | ring | binomial | ring | pairwise | pairwise | ring | chain |
//! | `BiRing(order)` | ring | binomial | bidirectional ring | pairwise | pairwise | ring | chain |
//! | `Mesh2D` | binomial | binomial | mesh (rows, then columns) | pairwise | pairwise | recursive halving | mesh |
//! | `Auto` | cost model | cost model | table, cost model | table, cost model | pairwise | cost model | cost model |
//!
//! `Mesh2D` lays the ranks out row by row on the mesh of
//! `hypercomm_algo::topology::mesh_dims(p)` rows and columns (Kumar's mesh
//! algorithms, seed 001); its reduce folds in rank order for root 0 and
//! needs a commutative operator otherwise (binomial runs instead).
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
//! barrier is the two-round star (`STAR_BARRIER_RANKS_PER_CORE`).
//!
//! Every rank must choose alike, so selection reads only facts that are the
//! same on every rank: the transport's [`Link`] gives the most ranks on
//! any machine of the job and the fewest cores any rank's process may use,
//! agreed when the job started (the rendezvous's table for processes it
//! launched, an `MPI_Allreduce` at MPI start-up), never this process's own
//! affinity or host.
//!
//! Crossovers of the cost model for the thread transport (ts = 0.5 µs,
//! tw = 0.1 ns/B), with 8 ranks on enough cores, as the formulas give them
//! (checked by the algorithm crate's `documented_crossovers` test; the
//! measured table overrides them where it has a rule, and BENCHMARKS.md
//! measures both):
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

mod options;
mod tuning;

pub use options::{Algorithm, CollOpts, Collective, Topology};
pub(crate) use tuning::Link;

use crate::comm::Comm;
use crate::error::{Error, Result};
use hypercomm_algo::memo::{ChoiceKey, SchedKey};
use hypercomm_algo::registry::{self, Params};
use hypercomm_algo::select::{self as rules, CostModel, COMBINE_COST};
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

/// The thread transport's costs (measured with `hypercomm bench`); also
/// what pipeline segments are sized by.
pub const THREAD_COST: TransportCost = TransportCost {
    ts: 0.5e-6,
    tw: 0.1e-9,
};

/// The cost model's pick on a machine of `cores` cores.
fn by_cost(
    c: Collective,
    p: usize,
    m: usize,
    t: TransportCost,
    over: bool,
    cores: usize,
) -> Algorithm {
    rules::by_cost(
        c,
        p,
        m,
        &CostModel {
            ts: t.ts,
            tw: t.tw,
            gamma: COMBINE_COST,
            cores,
            oversubscribed: over,
        },
    )
}

/// `Auto`'s pick: the measured table where it covers the case (transport,
/// collective, participants, oversubscription), else the cost model for a
/// machine of `cores` cores (the transport's, agreed by the job's ranks,
/// or a simulated machine's).
pub(crate) fn auto(
    l: Option<Link>,
    c: Collective,
    p: usize,
    m: usize,
    t: TransportCost,
    (oversubscribed, cores): (bool, usize),
) -> Algorithm {
    l.and_then(|l| tuning::lookup(l, c.family(), p, m, oversubscribed))
        .unwrap_or_else(|| by_cost(c, p, m, t, oversubscribed, cores))
}

/// The error for an algorithm a collective does not have.
pub(crate) fn unsupported(op: &'static str, a: Algorithm) -> Error {
    let known: Vec<&str> = Collective::ALL
        .iter()
        .find(|c| c.name() == op)
        .map(|c| registry::names(*c).collect())
        .unwrap_or_default();
    Error::InvalidArgument {
        op,
        what: if known.is_empty() {
            format!("algorithm {a} is not available for {op}")
        } else {
            format!(
                "algorithm {a} is not available for {op} (it has {})",
                known.join(", ")
            )
        },
    }
}

/// The schedule of algorithm `a` of collective `c` for one participant,
/// from the registry.
pub(crate) fn generate(c: Collective, a: Algorithm, params: &Params<'_>) -> Result<Schedule> {
    registry::find(c, a)
        .map(|e| e.generate(params))
        .ok_or_else(|| unsupported(c.name(), a))
}

/// Segment length in elements of `elem` bytes for pipelined algorithms.
pub(crate) fn segment_elems(opts: &CollOpts, count: usize, p: usize, elem: usize) -> usize {
    let sz = elem.max(1);
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
    /// job has more ranks on a machine than its ranks have cores (the job's
    /// agreed figures, the same on every rank).
    pub(crate) fn cost_model(&self) -> (Option<Link>, TransportCost, (bool, usize)) {
        use crate::transport::Transport;
        let link = self.engine().t.link();
        let cost = TransportCost {
            ts: link.ts,
            tw: link.tw,
        };
        (
            link.kind,
            cost,
            (link.oversubscribed(), link.cores_per_node),
        )
    }

    /// Set the virtual topology collectives follow (PICL setarc0). Every
    /// member should set the same (check mode compares it).
    pub fn set_topology(&self, t: Topology) {
        self.inner.coll.topology.set(t);
    }

    /// The topology in force (PICL getarc0).
    pub fn topology(&self) -> Topology {
        self.inner.coll.topology.get()
    }

    /// Switch check mode (PICL check0): on by default (`HYPERCOMM_CHECK=off`
    /// makes it off by default, for an unchanged program: to time the
    /// collectives alone, e.g. on the simulator); every collective then
    /// first compares a small signature across ranks: the operation, root,
    /// element type, operator, count (or every node's counts), scan kind,
    /// and the options in force — the call's [`CollOpts`] (forced
    /// algorithm, reproducible mode, segment size) and this communicator's
    /// [`topology`](Comm::set_topology) and
    /// [library collectives](Comm::set_native_collectives) settings. The
    /// host of a call rooted at it states no options (the nodes choose).
    /// Any difference fails every participant with
    /// [`Error::CollectiveMismatch`], naming the ranks and what differs.
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

    /// Choose an algorithm for one call of `c` (its family's algorithms).
    pub(crate) fn choose(
        &self,
        c: Collective,
        p: usize,
        bytes: usize,
        opts: &CollOpts,
        commutative: bool,
    ) -> Result<Algorithm> {
        let name = c.name();
        if opts.algorithm == Algorithm::Native || opts.algorithm == Algorithm::Board {
            // The library's own collective and the board are taken by the
            // blocking front end (`collective/native.rs`, `board.rs`); the
            // schedule behind them (for non-blocking calls and where they
            // cannot serve) is what `Auto` would run.
            let auto = CollOpts {
                algorithm: Algorithm::Auto,
                ..opts.clone()
            };
            return self.choose(c, p, bytes, &auto, commutative);
        }
        if opts.reproducible {
            if let Some(a) = rules::reproducible(c) {
                return Ok(a);
            }
        }
        if opts.algorithm != Algorithm::Auto {
            if registry::find(c, opts.algorithm).is_none() {
                return Err(unsupported(name, opts.algorithm));
            }
            if !commutative && rules::needs_commutative(c, opts.algorithm) {
                return Err(Error::InvalidArgument {
                    op: name,
                    what: format!(
                        "algorithm {} combines out of rank order and needs a commutative operator",
                        opts.algorithm
                    ),
                });
            }
            return Ok(opts.algorithm);
        }
        let a = rules::by_topology(c, self.topology()).unwrap_or_else(|| {
            let (l, t, over) = self.cost_model();
            auto(l, c, p, bytes, t, over)
        });
        if !commutative && rules::needs_commutative(c, a) {
            // Order-keeping alternative with the same bandwidth profile.
            return Ok(rules::order_keeping(c));
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
    /// tree; scans: chain). [`Algorithm::Native`] when the call would go
    /// to the transport library's own collective
    /// ([`Comm::set_native_collectives`], for a built-in operator on a
    /// type the library has); [`Algorithm::Board`] when it would run
    /// through the shared-memory board (small barrier, bcast, reduce,
    /// allreduce, allgather and all-to-all on the world communicator over
    /// threads or shm).
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
        let ours = self.choose(c, p, bytes, opts, commutative)?;
        Ok(self
            .chosen_native(c, p, bytes, opts)
            .or_else(|| self.chosen_board(c, bytes, opts))
            .unwrap_or(ours))
    }

    /// [`Comm::choose`], remembered for repeated calls of the same shape.
    pub(crate) fn choose_memo(
        &self,
        c: Collective,
        p: usize,
        bytes: usize,
        opts: &CollOpts,
        commutative: bool,
    ) -> Result<Algorithm> {
        // The library's collective and the board have `Auto`'s schedule
        // behind them (`choose`).
        let algorithm = if matches!(opts.algorithm, Algorithm::Native | Algorithm::Board) {
            Algorithm::Auto
        } else {
            opts.algorithm
        };
        let key = ChoiceKey {
            collective: c,
            algorithm,
            p,
            bytes,
            commutative,
            reproducible: opts.reproducible,
            topology: self.topology(),
        };
        let memo = &self.inner.coll.memo;
        if let Some(a) = memo.choice(&key) {
            return Ok(a);
        }
        let a = self.choose(c, p, bytes, opts, commutative)?;
        memo.remember_choice(key, a);
        Ok(a)
    }

    /// The check-mode signature exchange of participant `me` of `p`: an
    /// allgather of [`SIG_BYTES`](super::task::SIG_BYTES) bytes each by
    /// Bruck (its shifts follow those of the dissemination barrier and the
    /// other shift schedules, which matters with more ranks than cores:
    /// recursive doubling's partners made a 4-process barrier on 2 cores
    /// a third slower), except on 2 participants, where recursive doubling
    /// sends the same one message each way straight into place, with no
    /// scratch buffer and no final rotation. Remembered like a fixed-count
    /// schedule: made afresh it cost more than the rest of a small call.
    pub(crate) fn check_schedule(&self, me: usize, p: usize) -> Rc<Schedule> {
        let n = super::task::SIG_BYTES;
        let params = Params::new(me, p);
        let alg = if p == 2 {
            Algorithm::RecursiveDoubling
        } else {
            Algorithm::Bruck
        };
        // Under the variable-count allgather's key, which no other call
        // remembers (variable-count schedules are made per call).
        let key = sched_key(Collective::Allgatherv, alg, &params, n);
        let memo = &self.inner.coll.memo;
        if let Some(s) = memo.schedule(&key) {
            return s;
        }
        let counts = vec![n; p];
        let s = Rc::new(if alg == Algorithm::Bruck {
            hypercomm_algo::allgather_bruck(me, &counts)
        } else {
            hypercomm_algo::allgather_recursive_doubling(me, &counts)
        });
        memo.remember_schedule(key, &s);
        s
    }

    /// The schedule of algorithm `alg` of `c` (its kind: a scan and an
    /// exclusive scan differ) for `params`, from the registry; fixed-count
    /// calls are remembered.
    pub(crate) fn schedule(
        &self,
        c: Collective,
        alg: Algorithm,
        params: &Params<'_>,
    ) -> Result<Rc<Schedule>> {
        // Counts per node are remembered only when they are all the same
        // (a fixed-count allgather): made afresh, its schedule cost more
        // than a small call's messages.
        let uniform = params.counts.first().filter(|&&k| {
            params.recv_counts.is_empty()
                && (params.count == 0 || params.count == k)
                && params.counts.iter().all(|&x| x == k)
        });
        if uniform.is_none() && (!params.counts.is_empty() || !params.recv_counts.is_empty()) {
            return generate(c.family(), alg, params).map(Rc::new);
        }
        let mut key = sched_key(c, alg, params, params.count);
        if let Some(&k) = uniform {
            key.count = k;
            key.per_node = true;
        }
        let memo = &self.inner.coll.memo;
        if let Some(s) = memo.schedule(&key) {
            return Ok(s);
        }
        let s = Rc::new(generate(c.family(), alg, params)?);
        memo.remember_schedule(key, &s);
        Ok(s)
    }
}

/// The memo's key of the schedule of `alg` of `c` for `params`, with
/// `count` elements.
fn sched_key(c: Collective, alg: Algorithm, params: &Params<'_>, count: usize) -> SchedKey {
    SchedKey {
        collective: c,
        algorithm: alg,
        p: params.p,
        me: params.me,
        count,
        root: params.root,
        segment: params.segment,
        order: params.order,
        direction: params.direction,
        inclusion: params.inclusion,
        per_node: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Auto` takes the table where it covers the case and the cost model
    /// elsewhere.
    #[test]
    fn table_first_then_cost_model() {
        use Algorithm as A;
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
                            (r.oversubscribed, crate::transport::cores())
                        )),
                        want
                    );
                }
            }
        }
        // Not in the table: other transports, collectives, counts.
        for (l, c, p, over) in [
            (Link::Shm, Collective::Allreduce, 4, false),
            (Link::Tcp, Collective::Bcast, 8, true),
            (Link::Thread, Collective::Scan, 8, true),
            (Link::Thread, Collective::Gather, 2, false),
            (Link::Thread, Collective::Allreduce, 64, true),
        ] {
            for m in [8, 1 << 20] {
                assert_eq!(tuning::lookup(l, c, p, m, over), None);
                assert_eq!(
                    auto(
                        Some(l),
                        c,
                        p,
                        m,
                        THREAD_COST,
                        (over, crate::transport::cores())
                    ),
                    by_cost(c, p, m, THREAD_COST, over, crate::transport::cores())
                );
            }
        }
        assert_eq!(
            auto(
                Some(Link::Thread),
                Collective::ReduceScatter,
                8,
                1 << 20,
                THREAD_COST,
                (false, crate::transport::cores())
            ),
            A::RecursiveHalving
        );
    }

    /// What a call runs, asked of a communicator: forced algorithms,
    /// topology settings, operator and reproducibility rules keep their
    /// meaning over the table.
    #[test]
    fn chosen_algorithm_keeps_the_rules() {
        use Algorithm as A;
        let r = crate::run(2, |comm| {
            // With check mode off a reduce fans in to its root.
            comm.set_check(false);
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
                    Collective::Allreduce,
                    Collective::Bcast,
                    Collective::Allgather,
                    Collective::Alltoall,
                ] {
                    // Small barrier, bcast, reduce and allreduce of the
                    // world's nodes go through the board on threads: among
                    // 2 nodes as one exchange of up to 4 KiB from each (an
                    // all-to-all's row is 2 blocks).
                    let (need, most) = match c {
                        Collective::Alltoall => (2 * m, 4096),
                        _ => (m, 4096),
                    };
                    let board = need <= most;
                    assert_eq!(
                        comm.chosen_algorithm(c, m, &auto, true)?,
                        if board {
                            A::Board
                        } else {
                            super::auto(l, c, 2, m, t, over)
                        }
                    );
                }
                // A non-commutative operator never gets the ring.
                let a = comm.chosen_algorithm(Collective::Allreduce, m, &auto, false)?;
                assert_ne!(a, A::Ring);
                let a = comm.chosen_algorithm(Collective::ReduceScatter, m, &auto, false)?;
                assert_ne!(a, A::Ring);
                assert_eq!(
                    comm.chosen_algorithm(Collective::Allreduce, m, &repro, false)?,
                    A::ReduceBcast
                );
                assert_eq!(
                    comm.chosen_algorithm(Collective::Scan, m, &repro, true)?,
                    A::Chain
                );
                assert_eq!(
                    comm.chosen_algorithm(Collective::Bcast, m, &forced(A::Chain), true)?,
                    A::Chain
                );
            }
            assert!(comm
                .chosen_algorithm(Collective::Allreduce, 8, &forced(A::Ring), false)
                .is_err());
            assert!(comm
                .chosen_algorithm(Collective::Alltoall, 8, &forced(A::Star), true)
                .is_err());
            comm.set_topology(Topology::Hypercube);
            assert_eq!(
                comm.chosen_algorithm(Collective::Bcast, 1 << 22, &auto, true)?,
                A::Binomial
            );
            comm.set_topology(Topology::Auto);
            assert_eq!(
                comm.chosen_algorithm(Collective::Alltoallv, 1 << 20, &auto, true)?,
                A::Pairwise
            );
            Ok::<_, Error>(())
        });
        r.unwrap();
    }
}
