//! The simulator's pure half: a model of a parallel machine's network, and
//! the simulation of collective schedules on it in virtual time (SPEC.md
//! section 8; seed 001, Kumar et al., *Basic Communication Operations*).
//!
//! # The model
//!
//! A [`Model`] is seed 001's machine: a [`Network`] — hypercube (e-cube
//! routing), ring (the shorter way round), 2-D mesh with or without
//! wrap-around (XY routing), fully connected — of p nodes; [`Routing`]
//! store-and-forward (SF) or cut-through (CT); [`Costs`] ts (start-up), tw
//! (per word), th (per hop), in any one unit of time; [`Ports`]: a node
//! sends one message and receives one at a time (seed 001's assumption), or
//! uses all its links at once; and link contention: a link carries one
//! message at a time in each direction, later ones wait
//! ([`Model::contention`]). Optionally the nodes share fewer cores than
//! there are nodes ([`Model::with_cores`]: more ranks than cores on a real
//! machine): a core does one node's start-ups and copies at a time, a
//! message waits for its receiver's core, and turning a core from one
//! node to another costs a switch time; seed 001's machine (and every
//! closed form below) has a processor per node. A message of m words over l links takes ts +
//! l·(th + tw·m) with SF routing and ts + l·th + tw·m with CT routing when
//! nothing is in its way ([`Fabric`] has the rules).
//!
//! # Schedule simulation
//!
//! [`simulate`](fn@simulate) runs one [`Schedule`](crate::Schedule) per participant —
//! any registered algorithm's ([`simulate_entry`]), or several collectives
//! joined with [`Schedule::then`](crate::Schedule::then) — on a model,
//! without threads: one event per link a message crosses, in a radix heap
//! ([`EventQueue`]), with the participants' schedules shared when they
//! are the same relative to their own number; where an algorithm's
//! participants are declared alike ([`alike`]) only participant 0's
//! schedule is generated. It gives every participant's finish time and
//! every link's traffic ([`Outcome`]). A 2^20-node hypercube allreduce
//! (recursive doubling, 20 971 520 messages) takes about 1.5 s of CPU and
//! 368 MiB on a loaded machine, a 65 536-node broadcast 0.02 s
//! (BENCHMARKS.md).
//!
//! # Seed 001's closed forms
//!
//! For the operations seed 001 treats, on its three networks, with one
//! port, p nodes and messages of m words (the broadcast's and the
//! accumulation's vector, each node's block of the all-to-all broadcast,
//! the prefix sums' vector), the simulation of the seed's algorithm
//! ([`seed_algorithm`]) on the seed's network takes exactly:
//!
//! | operation | network | SF | CT |
//! |---|---|---|---|
//! | one-to-all broadcast | ring | ⌈p/2⌉·(ts + tw·m) + ⌊p/2⌋·th | (ts + tw·m)·log p + th·(p − 1) |
//! | | 2-D mesh, wrap-around | 2·(⌈√p/2⌉·(ts + tw·m) + ⌊√p/2⌋·th) | (ts + tw·m)·log p + 2·th·(√p − 1) |
//! | | hypercube | (ts + tw·m + th)·log p | (ts + tw·m + th)·log p |
//! | single-node accumulation | ring | ⌈p/2⌉·(ts + tw·m + th) | (ts + tw·m)·log p + th·(p − 1) |
//! | | 2-D mesh, wrap-around | 2·⌈√p/2⌉·(ts + tw·m + th) | (ts + tw·m)·log p + 2·th·(√p − 1) |
//! | | hypercube | (ts + tw·m + th)·log p | (ts + tw·m + th)·log p |
//! | all-to-all broadcast | ring | (ts + tw·m + th)·(p − 1) | (ts + tw·m + th)·(p − 1) |
//! | | 2-D mesh, wrap-around | 2·(ts + th)·(√p − 1) + tw·m·(p − 1) | 2·(ts + th)·(√p − 1) + tw·m·(p − 1) |
//! | | hypercube | (ts + th)·log p + tw·m·(p − 1) | (ts + th)·log p + tw·m·(p − 1) |
//! | prefix sums | ring | (ts + tw·m + th)·(p − 1) | (ts + tw·m + th)·(p − 1) |
//! | | 2-D mesh, wrap-around | 2·(ts + tw·m + th)·(√p − 1) | 2·(ts + tw·m + th)·(√p − 1) |
//! | | hypercube | (ts + tw·m + th)·log p | (ts + tw·m + th)·log p |
//!
//! for p ≥ 2 on rings (p = 2^d with CT routing), p = q² on meshes (q = 2^d
//! with CT routing), p = 2^d on hypercubes. The same table is [`FORMS`],
//! and a test per entry holds the simulator to it for p up to 4 096 and
//! several m and costs, exactly.
//!
//! How they follow from the seed: with th = 0 the SF column is the seed's
//! — (ts + tw·m)·⌈p/2⌉ on a ring (Figure 3.2: the source sends both ways,
//! one after the other), 2·(ts + tw·m)·⌈√p/2⌉ on a mesh (Figure 3.4: a row,
//! then every column), (ts + tw·m)·log p on a hypercube (Program 3.1),
//! ts·log p + tw·m·(p − 1) for the hypercube all-to-all broadcast (Program
//! 3.6, the message doubling each step), 2·ts·(√p − 1) + tw·m·(p − 1) on
//! the mesh (Figure 3.11). Each hop adds th; where a message's last hop
//! overlaps the sender's next start-up (the second message of a ring
//! broadcast leaves while the first still crosses its link) the hop costs
//! less than a step, hence ⌊p/2⌋ and ⌈p/2⌉ apart for odd p. With CT
//! routing the broadcast halves the distance each step (Figure 3.6): log p
//! start-ups and message times, and p/2 + p/4 + … + 1 = p − 1 hops on a
//! ring, twice √p − 1 on a mesh; the accumulation is its dual. The
//! accumulation, the all-to-all broadcast and the prefix sums on a ring and
//! a mesh use their algorithms' neighbour steps ([`crate::reduce_biring()`],
//! [`crate::allgather_ring()`], [`crate::allgather_mesh()`],
//! [`crate::scan_chain()`], [`crate::scan_mesh()`]; prefix sums on a mesh
//! pass fixed-length messages round the rows, then the columns, as the
//! all-to-all broadcast does). Contention: mapped onto a ring, step i of
//! the hypercube all-to-all broadcast sends 2^i messages of 2^i·m words
//! through each link (Figure 3.14) and takes ts + th + 4^i·tw·m instead of
//! ts + th + 2^i·tw·m (a test checks both).
//!
//! # Not done yet
//!
//! * Local computation (Reduce, Copy) costs nothing in schedule
//!   simulation, as in seed 001; no per-element combine time.
//! * Routing is deterministic (e-cube, XY, shorter way); no adaptive
//!   routing, no virtual channels, no finite buffers (a message blocked on
//!   a link waits at the node before it, whole).
//! * Meshes are 2-D with the shape of [`mesh_dims`](crate::topology::mesh_dims)
//!   only; no tori of more dimensions, no fat trees or dragonflies.
//! * The fully connected network keeps its links in a hash map (p² links),
//!   slower than the others.
//! * Speed: about 13 million messages per CPU second on a 2^20-node
//!   allreduce; algorithms not declared alike still have every
//!   participant's schedule generated, and the per-link free times and
//!   counts of a 2^20-node hypercube (240 MiB) are faulted in page by page.
//! * No per-call overhead or combine time in the model, and local copies
//!   (Bruck's rotations) cost nothing, also on shared cores; shared cores
//!   are for schedule simulation only (`hypercomm sim run` does not take
//!   them), and a node's cores are assigned round-robin, not as an
//!   operating system's scheduler would move them.

mod budget;
mod error;
mod fabric;
mod formulas;
mod network;
mod pool;
mod queue;
mod seed;
mod shared;
mod simulate;
#[cfg(test)]
mod tests;

pub use budget::{
    sparse_links, state_bytes, LINK_BYTES, MAX_HOPS, MAX_MESSAGES, MAX_OPS,
    MAX_PARTICIPANT_MESSAGES, MAX_STATE_BYTES, NODE_BYTES, SPARSE_LINK_BYTES,
};
pub use error::SimError;
pub use fabric::{Fabric, Flight, Hopped, Next, Started, Traffic};
pub use formulas::{closed_form, Form, FORMS};
pub use network::{Costs, Model, ModelError, Network, Ports, Routing, MAX_COST, MAX_NODES};
pub use queue::EventQueue;
pub use seed::{check_algorithm, seed_algorithm, Call};
pub use shared::{alike, Alike};
pub use simulate::{simulate, simulate_entry, Outcome};
