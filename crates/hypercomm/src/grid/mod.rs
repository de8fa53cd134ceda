//! The SUPRENUM grid library (seed 002; SPEC section 5): grid functions
//! distributed over a Cartesian process grid, halo exchange with widths,
//! colour and direction masks, corners, split phase and staggered
//! variables, subarray messages, mixed-type global operations and
//! agglomeration onto coarser process grids.
//!
//! * [`Grid`] (made by [`Grid::new`] over a [`Cart`](crate::topology::Cart)):
//!   the global point grid (2-D or 3-D), its block distribution (any size,
//!   not only multiples; or any partition with [`Grid::with_splits`]) and
//!   the halo widths.
//! * [`Field`]: a grid function, indexed by **global** indices
//!   (`u[[i, j]]`), axis 0 fastest, stored with its halo.
//! * [`Halo`] (made by [`Grid::halo`]): an exchange plan for one or more
//!   fields of any `Pod` types ([`FieldSpec`]), with width, [`Colour`],
//!   [`Directions`], corners and staggered [`Location`]s; one message per
//!   neighbour carries every field. Blocking [`Halo::exchange`], or
//!   [`Halo::start`] … [`Pending::finish`] around computation; exchanges
//!   of one plan may be under way together (split-phase ones pending,
//!   blocking ones between, finished in any order), each with messages of
//!   its own, when every node runs the plan's exchanges in the same order.
//!
//! Positions are 0-based (SUPRENUM's are 1-based); ranges are half-open.
//!
//! ## A complete halo-exchange loop
//!
//! Jacobi sweeps of the Laplacian on a 64 × 48 grid over 6 ranks; the
//! boundary values stay fixed, the halo is refreshed before each sweep.
//!
//! ```
//! use hypercomm::grid::{FieldSpec, Grid, HaloOpts};
//! use hypercomm::topology::dims_create;
//!
//! let sums = hypercomm::run(6, |comm| {
//!     let cart = comm.cartesian(&dims_create(comm.size(), 2)?, &[false, false])?.unwrap();
//!     let grid = Grid::new(&cart, &[64, 48], 1)?;
//!     let halo = grid.halo(&[FieldSpec::of::<f64>()], &HaloOpts::default())?;
//!     let (n, m) = (64isize, 48isize);
//!     let mut u = grid.field::<f64>();
//!     u.fill_with(|[i, j, _]| if i == 0 { 1.0 } else { 0.0 }); // u = 1 on the left edge
//!     let mut v = u.clone();
//!     let inner = grid.inner();
//!     for _ in 0..10 {
//!         halo.exchange(&mut u)?;
//!         for j in inner.range(1) {
//!             for i in inner.range(0) {
//!                 if i > 0 && i < n - 1 && j > 0 && j < m - 1 {
//!                     v[[i, j]] = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
//!                 }
//!             }
//!         }
//!         std::mem::swap(&mut u, &mut v);
//!     }
//!     let mine: f64 = inner.points().map(|p| u[p]).sum();
//!     Ok::<_, hypercomm::Error>(comm.allreduce(&[mine], hypercomm::collective::Sum)?[0])
//! }).unwrap();
//! assert!(sums[0] > 46.0 && sums.iter().all(|&s| s == sums[0]));
//! ```
//!
//! Between threads, the blocking exchange writes faces of rows and planes
//! straight from one rank's array into its neighbour's halo, any number of
//! fields, colour masks included ([`Halo::is_in_place`], [`InPlace`]).
//!
//! Not done yet: block-structured (multi-block) domains, which SUPRENUM
//! defined but had not shipped either; between processes a face that is
//! strided in memory, or an exchange of several fields, goes into a packed
//! message and out of it again (two copies); only contiguous faces of one
//! field go straight from the neighbour's array into the halo there (see
//! [`Halo::is_direct`]); the split-phase exchange always packs.

mod agglomerate;
mod block;
mod field;
mod geometry;
mod glops;
mod halo;
mod inplace;
mod mask;
mod plan;
mod subarray;

pub use agglomerate::{Agglomeration, PayloadOrder};
pub use block::{block_range, block_splits, coarsen_splits, merge_splits, owner};
pub use field::{Field, FieldData, Region, Run};
pub use geometry::{Grid, MAX_EXTENT};
pub use glops::{GlobalOp, Glop, GlopsOpts, Value};
pub use halo::{FieldSpec, Fields, Halo, HaloOpts, InPlace, Pending};
pub use mask::{Colour, Directions, Location, Pos, Side};
pub use subarray::{Place, USER_TAG_LIMIT};
