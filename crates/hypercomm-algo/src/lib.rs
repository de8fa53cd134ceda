//! Collective communication algorithms as pure schedules (no I/O, no
//! dependencies).
//!
//! Published with `hypercomm`, at the same version: its public types
//! ([`Algorithm`], [`Collective`], [`Topology`], [`Schedule`], the
//! [`sim`] network model) are part of `hypercomm`'s API, which re-exports
//! them, and change only with a new version of both.
//!
//! Every algorithm is a pure function from `(rank, size, root, counts)` to a
//! [`Schedule`] (SPEC.md section 4, "Algorithms are data"; DESIGN.md "One
//! file per algorithm"). The same schedule is run by the library's
//! executor over a real transport, by the simulator, and by
//! [`check::simulate`] in this crate's tests. Each algorithm lives in
//! `src/<collective>_<algorithm>.rs`, whose module doc gives the method, its
//! source (seed file and section, or paper) and its cost in the seed-001
//! model (ts start-up, tw per byte), and which has a
//! `pub fn cost(p, m_bytes, ts, tw) -> f64`.
//!
//! # How algorithms are wired: the registry
//!
//! Every algorithm file also declares its [`registry`] entries
//! (`pub const ENTRIES: &[Entry]`): the [`Collective`] family it serves, its
//! [`Algorithm`] name, a generator taking one [`Params`], its cost, the bytes
//! one rank combines, whether it needs a commutative operator or a core per
//! rank, and the topology settings ([`Topology`], PICL setarc0) that select
//! it. The list of modules in `registry.rs` declares the modules and builds
//! the one table that selection ([`select`]: topology setting, cost model,
//! operator and reproducibility rules), the library's dispatch, the
//! benchmark and the property tests read. **Adding an algorithm is one
//! file plus one line of that list**: write `src/<collective>_<name>.rs`
//! with the generator, `cost` and `ENTRIES` (name it
//! `Algorithm::named("<name>")`), and add its module to the list where its
//! family's candidates are (the first listed wins near ties). The property
//! tests then check it at random sizes without further code; since
//! `cargo fmt` does not see macro-declared modules, run `rustfmt` on the new
//! file (a test checks the registered files).
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
//! Registered (in candidate order within each family; see
//! [`registry::names`]):
//!
//! * barrier: [`barrier_dissemination()`], [`barrier_tree()`] (host + nodes),
//!   [`barrier_star()`]
//! * bcast: [`bcast_binomial()`] (seed 000 forwarding rule), [`bcast_star()`],
//!   [`bcast_chain()`] (pipelined, ring order), [`bcast_ring_bidirectional()`],
//!   [`bcast_recursive_doubling()`] (seed 001, farthest first),
//!   [`bcast_mesh()`] (seed 001, row then columns)
//! * reduce: [`reduce_binomial()`], [`reduce_star()`], [`reduce_chain()`]
//!   (pipelined), [`reduce_biring()`] (seed 001, two chains round a ring),
//!   [`reduce_mesh()`] (seed 001, rows then a column),
//!   [`reduce_rabenseifner()`] (reduce-scatter, then gather to the root)
//! * allreduce: [`allreduce_recursive_doubling()`], [`allreduce_ring()`],
//!   [`allreduce_rabenseifner()`], [`allreduce_reduce_bcast()`]
//! * gather(v): [`gather_binomial()`], [`gather_star()`], [`gather_ring()`]
//! * scatter(v): [`scatter_binomial()`], [`scatter_star()`]
//! * allgather(v): [`allgather_recursive_doubling()`], [`allgather_ring()`]
//!   (uni- and bidirectional, two entries), [`allgather_bruck()`],
//!   [`allgather_mesh()`] (seed 001, rows then columns)
//! * alltoall: [`alltoall_pairwise()`], [`alltoall_bruck()`]; alltoallv:
//!   [`alltoallv_pairwise()`]
//! * reduce_scatter: [`reduce_scatter_recursive_halving()`],
//!   [`reduce_scatter_ring()`]
//! * scan: [`scan_recursive_doubling()`], [`scan_chain()`] (pipelined),
//!   [`scan_mesh()`] (seed 001, rows then columns)
//!
//! Outside the registry (selection reaches them by rules of its own, or
//! not at all):
//!
//! * [`bcast_scatter_allgather()`] (never selected so far)
//! * [`reproducible`]: canonical-tree reduce and allreduce
//! * [`segmented`]: the lifted operator of segmented scans
//! * sparse multicast: [`spgsnw_sender()`], [`spgsnw_plan()`], [`spgsnw_receiver()`]
//!
//! The simulator's pure half is [`sim`]: a network model (hypercube, ring,
//! 2-D mesh, fully connected; store-and-forward or cut-through routing;
//! ts, tw, th; one port or all; link contention) and the simulation of any
//! of these schedules on it in virtual time, with seed 001's closed forms.
//!
//! Helpers: [`hypercube`] (gray, gray_inverse, between, split), [`ring`]
//! ([`RingOrder`], PICL setarc0 orders, the shared ring reduce-scatter
//! phase), [`tree`] (canonical interval tree), [`collective`] (the operation
//! codes of check-mode signatures and traces).
//!
//! # Not done yet
//!
//! * The library still has its own `Algorithm`, `Collective`, `Topology`,
//!   candidate lists and `match` sites; it does not read the registry yet.
//! * Ring allreduce and ring reduce-scatter need a commutative operator
//!   (the selector must not pick them otherwise; [`select::order_keeping`]
//!   says what runs instead).
//! * No pipelined (segmented) chain reduce; no reproducible reduce-scatter
//!   or scan; Bruck all-to-all only for a fixed count.
//! * Costs ignore link contention (the simulator transport models it); the
//!   combine term is one constant per byte; pipelined costs choose k by the
//!   textbook formula.
//! * Gray ring positions for p not a power of two cost O(p) per call.
//! * The multicast's receive-from-any is left to the executor.

pub mod check;
pub mod collective;
pub mod entry;
pub mod hypercube;
pub mod memo;
#[macro_use]
pub mod registry;
pub mod ring;
pub mod schedule;
pub mod select;
pub mod sim;
pub mod topology;
pub mod tree;

pub use collective::Collective;
pub use entry::{Algorithm, Entry, Params};
pub use ring::RingOrder;
pub use schedule::{Buf, Op, Region, Round, Schedule};
pub use topology::{Topology, TopologyKind};

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
pub use bcast_mesh::bcast_mesh;
pub use bcast_recursive_doubling::bcast_recursive_doubling;
pub use bcast_ring::bcast_ring_bidirectional;
pub use bcast_scatter_allgather::bcast_scatter_allgather;
pub use bcast_star::bcast_star;

pub use allreduce_rabenseifner::allreduce_rabenseifner;
pub use allreduce_recursive_doubling::allreduce_recursive_doubling;
pub use allreduce_reduce_bcast::allreduce_reduce_bcast;
pub use allreduce_ring::allreduce_ring;
pub use reduce_binomial::reduce_binomial;
pub use reduce_biring::reduce_biring;
pub use reduce_chain::reduce_chain;
pub use reduce_mesh::reduce_mesh;
pub use reduce_rabenseifner::reduce_rabenseifner;
pub use reduce_scatter_recursive_halving::reduce_scatter_recursive_halving;
pub use reduce_scatter_ring::reduce_scatter_ring;
pub use reduce_star::reduce_star;

pub use allgather_bruck::allgather_bruck;
pub use allgather_mesh::allgather_mesh;
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
pub use scan_mesh::scan_mesh;
pub use scan_recursive_doubling::scan_recursive_doubling;

pub use multicast_spgsnw::{spgsnw_plan, spgsnw_receiver, spgsnw_sender};

#[cfg(test)]
mod proptests;
