//! Process topologies (SPEC section 5): hypercube utilities, the MESH
//! embedding of the iPSC utilities and Cartesian process grids with the
//! binary-tree view of SUPRENUM's CRGR2D/CRGR3D.
//!
//! * [`hypercube`]: [`gray`], [`gray_inverse`], [`between`], [`split`]
//!   (re-exported from `hypercomm_algo`, where the collectives use them),
//!   neighbours and subcube membership.
//! * [`mesh`]: [`Mesh`], MESH's nearest-neighbour embedding of a mesh into
//!   a hypercube: coordinates, predecessor and successor per axis,
//!   periodic or not.
//! * [`cart`]: [`Cart`], a Cartesian process grid in 1, 2 or 3 dimensions
//!   made by [`Comm::cartesian`](crate::Comm::cartesian), with
//!   [`dims_create`] (MPI `Dims_create`), coordinates, `rank_of`, shifts
//!   that return `None` for a missing neighbour, row/column/plane
//!   sub-grids and the binary tree.
//!
//! ```
//! use hypercomm::topology::dims_create;
//! // Six ranks: a 3 × 2 grid, periodic in x; the edge ranks need no branch.
//! let out = hypercomm::run(6, |comm| {
//!     let cart = comm.cartesian(&dims_create(comm.size(), 2)?, &[true, false])?
//!         .expect("all six ranks are in the grid");
//!     let up = cart.shift(1, 1);
//!     let mut got = [u64::MAX];
//!     if let Some(to) = up.dest {
//!         cart.comm().send(&[cart.rank() as u64], to, 0)?;
//!     }
//!     if let Some(from) = up.source {
//!         cart.comm().recv_into(&mut got, from, 0)?;
//!     }
//!     Ok::<_, hypercomm::Error>((cart.coords().to_vec(), got[0]))
//! }).unwrap();
//! assert_eq!(out[4], (vec![1, 1], 1)); // (1,1) heard from (1,0), rank 1
//! assert_eq!(out[1].1, u64::MAX);      // (1,0) has no lower neighbour
//! ```
//!
//! Grids (the [`crate::grid`] module) sit on these and on the public
//! point-to-point and collective API only.
//!
//! Not done yet: graph topologies (MPI `Graph_create`, `Dist_graph`) and
//! neighbourhood collectives over them; a Cartesian grid of more than three
//! dimensions; re-ordering ranks by measured distances (only the hypercube
//! embedding of MESH is offered).

pub mod cart;
pub mod hypercube;
pub mod mesh;

pub use cart::{dims_create, dims_fill, Cart, CartOpts, Embedding, Shift, Tree};
pub use hypercube::{
    between, cube_dim, gray, gray_inverse, in_subcube, neighbours, split, subcube_members,
};
pub use mesh::{Mesh, MeshPlace};

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;

/// The tag of the host's part of [`agree`] (on the caller's isolated
/// communicator).
const AGREE_TAG: u32 = 0x6167_7265;

/// Check that every member of `comm` (nodes, and the host when there is one)
/// passed the same arguments, described by `desc`: every member gets the
/// same error naming the members whose description differs from node 0's,
/// or every member gets `Ok`. Collective over all members; `comm` should be
/// a communicator of the library's own (a `dup`), since the host's part is
/// point-to-point with a fixed tag.
pub(crate) fn agree(comm: &Comm, op: &'static str, desc: &str) -> Result<()> {
    // 1. The host hands its description to node 0.
    if comm.is_host() {
        comm.send(desc.as_bytes(), 0usize, AGREE_TAG)?;
        let (verdict, _) = comm.recv_vec::<u8>(0usize, AGREE_TAG)?;
        return verdict_result(op, verdict);
    }
    let mut mine = desc.as_bytes().to_vec();
    if comm.rank() == 0 && comm.has_host() {
        let (host, _) = comm.recv_vec::<u8>(Rank::Host, AGREE_TAG)?;
        // 2. Node 0 carries the host's description in its own contribution.
        let mut both = (desc.len() as u64).to_le_bytes().to_vec();
        both.extend_from_slice(&mine);
        both.extend_from_slice(&host);
        mine = both;
    }
    // 3. All nodes see every description and reach the same verdict.
    let (all, counts) = comm.allgatherv(&mine)?;
    let mut descs: Vec<(Rank, String)> = Vec::new();
    let mut at = 0;
    for (r, &c) in counts.iter().enumerate() {
        let bytes = &all[at..at + c];
        at += c;
        if r == 0 && comm.has_host() {
            let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
            descs.push((
                Rank::Node(0),
                String::from_utf8_lossy(&bytes[8..8 + n]).into(),
            ));
            descs.push((Rank::Host, String::from_utf8_lossy(&bytes[8 + n..]).into()));
        } else {
            descs.push((Rank::Node(r), String::from_utf8_lossy(bytes).into()));
        }
    }
    let first = &descs[0].1;
    let odd: Vec<String> = descs
        .iter()
        .filter(|(_, d)| d != first)
        .map(|(r, d)| format!("{r} has {d}"))
        .collect();
    let verdict = if odd.is_empty() {
        Vec::new()
    } else {
        format!(
            "the members disagree: rank 0 has {first}, but {}",
            odd.join(", ")
        )
        .into_bytes()
    };
    // 4. Node 0 tells the host.
    if comm.rank() == 0 && comm.has_host() {
        comm.send(&verdict, Rank::Host, AGREE_TAG)?;
    }
    verdict_result(op, verdict)
}

fn verdict_result(op: &'static str, verdict: Vec<u8>) -> Result<()> {
    if verdict.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            what: String::from_utf8_lossy(&verdict).into_owned(),
        })
    }
}
