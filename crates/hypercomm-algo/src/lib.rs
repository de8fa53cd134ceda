//! Collective communication algorithms as pure schedules (no I/O, no
//! dependencies).
//!
//! Every algorithm is a pure function from `(rank, size, root, counts)` to a
//! [`Schedule`] (SPEC.md section 4, "Algorithms are data"; DESIGN.md "One
//! file per algorithm"). The same schedule is run by the library's
//! executor over a real transport, by the simulator, and by
//! [`check::simulate`] in this crate's tests. Each algorithm lives in
//! `src/<collective>_<algorithm>.rs`, whose module doc gives the method, its
//! source (seed file and section, or paper) and its cost in the seed-001
//! model (ts start-up, tw per byte), and which has a
//! `pub fn cost(p, m_bytes, ts, tw) -> f64` for the selector.
//!
//! # The model
//!
//! * Participants are numbered `0..p`; the caller maps them to real ranks
//!   (e.g. the host to a participant index for host collectives).
//! * A [`Schedule`] is a list of [`Round`]s and the lengths of its scratch
//!   buffers. A round's [`Op`]s are Send/Recv of a [`Region`] (a contiguous
//!   range of elements of [`Buf::Input`], [`Buf::Output`] or
//!   [`Buf::Temp`]) and local Reduce/Copy.
//! * **Executor semantics of a round:** post every Send and Recv of the
//!   round (non-blocking, in the listed order), wait for all of them, then
//!   apply the local ops in order. A round never receives into a region it
//!   also sends or receives elsewhere.
//! * Messages between one ordered pair are matched FIFO, with equal lengths.
//!   Sends are **rendezvous**: every schedule here is deadlock-free under
//!   that rule (checked by the simulator). Zero-length messages are real
//!   messages; with count 0 the schedules still exchange them, consistently
//!   on all ranks.
//! * `Reduce { src, dst, src_first }` computes `dst = src ⊕ dst` when
//!   `src_first`, else `dst ⊕ src`; `src_first` means "src comes earlier in
//!   the combine order" (rank order, or reverse rank order for downward
//!   scans). Every reduction here folds in that order (x0 ⊕ x1 ⊕ … ⊕ x(p-1))
//!   for any associative operator, **except** [`allreduce_ring()`] and
//!   [`reduce_scatter_ring()`], which require a commutative operator.
//!
//! # Buffer conventions (lengths in elements)
//!
//! | collective | Input | Output |
//! |---|---|---|
//! | bcast | unused | `count`; the root's data is already there |
//! | reduce | `count` | `count` at the root; untouched elsewhere |
//! | allreduce | `count` | `count` |
//! | reduce_scatter | the full vector (Σ counts) | own block, `counts[rank]` |
//! | gather(v) | own block | root: all blocks in rank order; untouched elsewhere |
//! | allgather(v) | own block | all blocks in rank order |
//! | scatter(v) | root: all blocks in rank order; unused elsewhere | own block |
//! | alltoall(v) | p blocks, block q for participant q | p blocks, block q from q |
//! | scan / exscan | `count` | `count` |
//! | barrier | unused | zero-length regions only |
//! | multicast | unused | `count`; the root's data is there |
//!
//! Variable-count collectives take `counts: &[usize]` (one entry per
//! participant; displacements are prefix sums in rank order; zeros allowed).
//! Scans go [`Direction::Upward`] (rank order) or [`Direction::Downward`]
//! (reverse order; the fold is in traversal order x(p-1) ⊕ … ⊕ x(n)),
//! [`Inclusion::Inclusive`] or [`Inclusion::Exclusive`]; an exclusive scan
//! leaves the first participant's Output untouched and the executor fills
//! in the operator's identity. Segmented scans (CMMD `segment_bit` /
//! `start_bit`) run an ordinary exclusive scan schedule with the lifted
//! operator of [`segmented`]. For bitwise-reproducible floating point use
//! [`reproducible`]. The sparse multicast ([`multicast_spgsnw`]) needs a
//! "receive from any source" that schedules do not express; its module doc
//! gives the executor contract.
//!
//! # Algorithms
//!
//! * barrier: [`barrier_dissemination()`], [`barrier_tree()`] (host + nodes),
//!   [`barrier_star()`]
//! * bcast: [`bcast_binomial()`] (seed 000 forwarding rule), [`bcast_chain()`]
//!   (pipelined, ring order), [`bcast_ring_bidirectional()`], [`bcast_star()`],
//!   [`bcast_scatter_allgather()`]
//! * reduce: [`reduce_binomial()`], [`reduce_star()`]
//! * allreduce: [`allreduce_recursive_doubling()`], [`allreduce_ring()`],
//!   [`allreduce_rabenseifner()`], [`allreduce_reduce_bcast()`]
//! * reduce_scatter: [`reduce_scatter_ring()`], [`reduce_scatter_recursive_halving()`]
//! * gather(v): [`gather_binomial()`], [`gather_star()`], [`gather_ring()`]
//! * allgather(v): [`allgather_recursive_doubling()`], [`allgather_ring()`]
//!   (uni/bidirectional), [`allgather_bruck()`]
//! * scatter(v): [`scatter_binomial()`], [`scatter_star()`]
//! * alltoall(v): [`alltoallv_pairwise()`], [`alltoall_pairwise()`], [`alltoall_bruck()`]
//! * scan: [`scan_recursive_doubling()`], [`scan_chain()`] (pipelined)
//! * sparse multicast: [`spgsnw_sender()`], [`spgsnw_plan()`], [`spgsnw_receiver()`]
//! * helpers: [`hypercube`] (gray, gray_inverse, between, split), [`ring`]
//!   ([`RingOrder`], PICL setarc0 orders), [`tree`] (canonical interval tree)
//!
//! # Not done yet
//!
//! * Ring allreduce and ring reduce-scatter need a commutative operator
//!   (the selector must not pick them otherwise).
//! * No pipelined (segmented) chain reduce; no reproducible reduce-scatter
//!   or scan; Bruck all-to-all only for a fixed count.
//! * Costs ignore the local combine time and link contention (the simulator
//!   transport models those); pipelined costs choose k by the textbook formula.
//! * Gray ring positions for p not a power of two cost O(p) per call.
//! * The multicast's receive-from-any is left to the executor.

pub mod check;
pub mod collective;
pub mod hypercube;
#[macro_use]
pub mod registry;
pub mod ring;
pub mod schedule;
pub mod select;
pub mod tree;

pub use collective::Collective;
pub use registry::{Algorithm, Entry, Params};
pub use ring::RingOrder;
pub use schedule::{Buf, Op, Region, Round, Schedule};
pub use select::{Topology, TopologyKind};

/// Whether a scan includes each participant's own value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inclusion {
    /// Result at n combines the values up to and including n.
    Inclusive,
    /// Result at n combines the values strictly before n; the first
    /// participant's Output is left untouched (the executor fills in the
    /// operator's identity).
    Exclusive,
}

/// Direction of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Rank order 0, 1, …, p-1 (CMMD upward).
    Upward,
    /// Reverse rank order p-1, …, 0 (CMMD downward).
    Downward,
}

// The registered algorithm modules (`pub mod barrier_dissemination;` …),
// declared from the one list in registry.rs.
algorithm_modules!(declare_modules);

// Algorithms outside the registry: selection reaches them by rules of its
// own (or not at all).
pub mod bcast_scatter_allgather;
pub mod multicast_spgsnw;
pub mod reproducible;
pub mod segmented;

pub use barrier_dissemination::barrier_dissemination;
pub use barrier_star::barrier_star;
pub use barrier_tree::barrier_tree;
pub use bcast_binomial::bcast_binomial;
pub use bcast_chain::bcast_chain;
pub use bcast_ring::bcast_ring_bidirectional;
pub use bcast_scatter_allgather::bcast_scatter_allgather;
pub use bcast_star::bcast_star;

pub use allreduce_rabenseifner::allreduce_rabenseifner;
pub use allreduce_recursive_doubling::allreduce_recursive_doubling;
pub use allreduce_reduce_bcast::allreduce_reduce_bcast;
pub use allreduce_ring::allreduce_ring;
pub use reduce_binomial::reduce_binomial;
pub use reduce_scatter_recursive_halving::reduce_scatter_recursive_halving;
pub use reduce_scatter_ring::reduce_scatter_ring;
pub use reduce_star::reduce_star;

pub use allgather_bruck::allgather_bruck;
pub use allgather_recursive_doubling::allgather_recursive_doubling;
pub use allgather_ring::allgather_ring;
pub use alltoall_bruck::alltoall_bruck;
pub use alltoall_pairwise::{alltoall_pairwise, alltoallv_pairwise};
pub use gather_binomial::gather_binomial;
pub use gather_ring::gather_ring;
pub use gather_star::gather_star;
pub use scatter_binomial::scatter_binomial;
pub use scatter_star::scatter_star;

pub use scan_chain::scan_chain;
pub use scan_recursive_doubling::scan_recursive_doubling;

pub use multicast_spgsnw::{spgsnw_plan, spgsnw_receiver, spgsnw_sender};

#[cfg(test)]
mod proptests;
