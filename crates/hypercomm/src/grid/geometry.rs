//! [`Grid`]: a global point grid distributed over a Cartesian process grid.
//!
//! Not done yet: the host makes no halo plans (it owns no points); more
//! than three axes.

use super::block::{block_splits, owner};
use super::field::{Field, Region};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::topology::{agree, Cart};
use bytemuck::Pod;

/// The most points, halos included, a grid has along one axis (2^40: far
/// beyond any machine's memory, and far from the `isize` arithmetic of
/// regions overflowing).
pub const MAX_EXTENT: usize = 1 << 40;

/// A global grid of points (2-D or 3-D) partitioned over a Cartesian
/// process grid: each node owns a block of *inner* points (a strict
/// partition of the domain) and stores a halo around it. Made collectively
/// by every member of the process grid, the host included when it has one
/// (the host owns no points but can gather, scatter and address nodes).
#[derive(Debug)]
pub struct Grid {
    pub(crate) cart: Cart,
    /// An isolated copy of the grid's communicator (with the host).
    pub(crate) comm: Comm,
    /// An isolated copy of the grid's nodes (`None` on the host).
    pub(crate) nodes: Option<Comm>,
    pub(crate) ndim: usize,
    pub(crate) global: [usize; 3],
    pub(crate) splits: [Vec<usize>; 3],
    pub(crate) pdims: [usize; 3],
    pub(crate) periodic: [bool; 3],
    pub(crate) coords: [usize; 3],
    pub(crate) halo: [[usize; 2]; 3],
}

impl Grid {
    /// A grid of `global` points (2 or 3 axes) in blocks over `cart` (the
    /// first `n mod p` ranks of an axis get one point more), with a halo of
    /// `width` on every side. Collective over the grid's members, which
    /// must pass the same arguments; fails on every member when they differ
    /// or when an axis has fewer points than ranks.
    pub fn new(cart: &Cart, global: &[usize], width: usize) -> Result<Grid> {
        Grid::with_halo(cart, global, &[[width; 2]; 3][..global.len().min(3)])
    }

    /// [`Grid::new`] with a halo of `halo[a] = [lower, upper]` on axis `a`.
    pub fn with_halo(cart: &Cart, global: &[usize], halo: &[[usize; 2]]) -> Result<Grid> {
        let mut splits = Vec::new();
        for (a, &n) in global.iter().enumerate() {
            let p = cart.dims().get(a).copied().unwrap_or(1);
            if n < p {
                // Checked again (on every member) once the arguments agree.
                splits.push(vec![0; p + 1]);
            } else {
                splits.push(block_splits(n, p));
            }
        }
        Grid::build(cart, global, &splits, halo, "Grid::new")
    }

    /// A grid whose axis `a` is cut at `splits[a]` (`dims[a] + 1`
    /// non-decreasing boundaries from 0 to the number of points): any strict
    /// partition, as SUPRENUM allows, and as coarse multigrid levels and
    /// agglomerated grids need. A part may be empty; an exchange whose width
    /// exceeds a part's length is refused.
    pub fn with_splits(cart: &Cart, splits: &[Vec<usize>], halo: &[[usize; 2]]) -> Result<Grid> {
        let global: Vec<usize> = splits
            .iter()
            .map(|s| s.last().copied().unwrap_or(0))
            .collect();
        Grid::build(cart, &global, splits, halo, "Grid::with_splits")
    }

    fn build(
        cart: &Cart,
        global: &[usize],
        splits: &[Vec<usize>],
        halo: &[[usize; 2]],
        op: &'static str,
    ) -> Result<Grid> {
        let comm = cart.comm().dup();
        let nodes = cart.nodes().map(Comm::dup);
        let desc = format!(
            "points {global:?}, splits {splits:?}, halo {halo:?}, process grid {:?}",
            cart.dims()
        );
        agree(&comm, op, &desc)?;
        let bad = |what: String| Error::InvalidArgument { op, what };
        let ndim = global.len();
        if !(2..=3).contains(&ndim) || ndim < cart.ndims() {
            return Err(bad(format!(
                "{ndim} axes of points over a {}-axis process grid: grids have 2 or 3 axes, at least as many as the process grid",
                cart.ndims()
            )));
        }
        if halo.len() != ndim || splits.len() != ndim {
            return Err(bad(format!(
                "{} halo widths and {} split lists for {ndim} axes",
                halo.len(),
                splits.len()
            )));
        }
        let mut g = Grid {
            cart: cart.clone(),
            comm,
            nodes,
            ndim,
            global: [1; 3],
            splits: [vec![0, 1], vec![0, 1], vec![0, 1]],
            pdims: [1; 3],
            periodic: [false; 3],
            coords: [0; 3],
            halo: [[0; 2]; 3],
        };
        for a in 0..ndim {
            let p = cart.dims().get(a).copied().unwrap_or(1);
            let s = &splits[a];
            let n = global[a];
            if n < p && op == "Grid::new" {
                return Err(bad(format!(
                    "axis {a} has {n} points but {p} ranks: the grid does not fit the process grid (every rank needs a point)"
                )));
            }
            if s.len() != p + 1 || s[0] != 0 || s.windows(2).any(|w| w[0] > w[1]) {
                return Err(bad(format!(
                    "axis {a}: boundaries {s:?} are not {} non-decreasing numbers from 0",
                    p + 1
                )));
            }
            let extent = n
                .checked_add(halo[a][0])
                .and_then(|x| x.checked_add(halo[a][1]));
            if extent.is_none_or(|x| x > MAX_EXTENT) {
                return Err(bad(format!(
                    "axis {a}: {n} points with halos {:?} are more than a grid indexes along one axis ({MAX_EXTENT})",
                    halo[a]
                )));
            }
            g.global[a] = n;
            g.splits[a] = s.clone();
            g.pdims[a] = p;
            g.periodic[a] = cart.periodic().get(a).copied().unwrap_or(false);
            g.coords[a] = cart.coords().get(a).copied().unwrap_or(0);
            g.halo[a] = halo[a];
        }
        // This node's storage, halos included, must be addressable in
        // bytes of the widest element (a field of it is allocated whole).
        let st = g.storage();
        let points = (0..3).try_fold(1usize, |acc, a| acc.checked_mul(st.len(a) as usize));
        if points.is_none_or(|p| p > isize::MAX as usize / 16) {
            return Err(bad(format!(
                "the storage of one rank ({:?} points with halos) is larger than memory can address",
                (0..ndim).map(|a| st.len(a)).collect::<Vec<_>>()
            )));
        }
        Ok(g)
    }

    /// The process grid.
    pub fn cart(&self) -> &Cart {
        &self.cart
    }

    /// The grid's own communicator (an isolated copy of the process grid's,
    /// with its host): messages of the grid layer travel here.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// Whether the caller is the host (which owns no points).
    pub fn is_host(&self) -> bool {
        self.comm.is_host()
    }

    /// The number of axes (2 or 3).
    pub fn ndim(&self) -> usize {
        self.ndim
    }

    /// The number of points on each axis (1 on unused axes).
    pub fn global(&self) -> [usize; 3] {
        self.global
    }

    /// The whole domain as a region.
    pub fn domain(&self) -> Region {
        Region {
            lo: [0; 3],
            hi: self.global.map(|n| n as isize),
        }
    }

    /// The boundaries of the parts of axis `a` (`dims[a] + 1` of them).
    pub fn splits(&self, a: usize) -> &[usize] {
        &self.splits[a]
    }

    /// Ranks per axis (1 on unused axes).
    pub fn pdims(&self) -> [usize; 3] {
        self.pdims
    }

    /// Whether each axis wraps around.
    pub fn periodic(&self) -> [bool; 3] {
        self.periodic
    }

    /// The halo widths, `[lower, upper]` per axis.
    pub fn halo_widths(&self) -> [[usize; 2]; 3] {
        self.halo
    }

    /// The inner points of grid rank `rank` (none for a rank past the grid).
    pub fn inner_of(&self, rank: usize) -> Region {
        let Some(c) = self.cart.coords_of(rank) else {
            return Region::new(&[0..0, 0..0, 0..0]);
        };
        let mut r = Region {
            lo: [0; 3],
            hi: [1; 3],
        };
        for a in 0..3 {
            let ca = c.get(a).copied().unwrap_or(0);
            r.lo[a] = self.splits[a][ca] as isize;
            r.hi[a] = self.splits[a][ca + 1] as isize;
        }
        r
    }

    /// This node's inner points (empty on the host).
    pub fn inner(&self) -> Region {
        if self.is_host() {
            return Region::new(&[0..0, 0..0, 0..0]);
        }
        self.inner_of(self.cart.rank())
    }

    /// This node's stored points: the inner ones and the halo.
    pub fn storage(&self) -> Region {
        let mut r = self.inner();
        if self.is_host() {
            return r;
        }
        for a in 0..self.ndim {
            r.lo[a] -= self.halo[a][0] as isize;
            r.hi[a] += self.halo[a][1] as isize;
        }
        r
    }

    /// A grid function of zeros on this node's storage (on the host: an
    /// empty one).
    pub fn field<T: Pod>(&self) -> Field<T> {
        Field::from_parts(self.storage(), self.inner(), self.ndim)
    }

    /// A whole-domain array of zeros (as the host keeps initial data and
    /// solutions), indexed by global indices.
    pub fn global_field<T: Pod>(&self) -> Field<T> {
        Field::whole(self.domain(), self.ndim)
    }

    /// The grid rank whose inner points contain `p` (a point of the domain).
    pub fn owner_of(&self, p: [isize; 3]) -> Option<usize> {
        // Every axis of the domain (an axis without one is a single
        // point, 0), not only the process grid's.
        if (0..3).any(|a| p[a] < 0 || p[a] >= self.global[a] as isize) {
            return None;
        }
        let c: Vec<isize> = (0..self.cart.ndims())
            .map(|a| owner(&self.splits[a], p[a] as usize) as isize)
            .collect();
        self.cart.rank_of(&c)
    }

    /// The neighbour of this node `disp` parts along axis `a` (axes the
    /// process grid does not have: itself when periodic, else none).
    pub(crate) fn neighbour(&self, a: usize, disp: isize) -> Option<usize> {
        if self.is_host() {
            return None;
        }
        if a >= self.cart.ndims() {
            return self.periodic[a].then(|| self.cart.rank());
        }
        self.cart.neighbour(a, disp)
    }

    /// The node-only communicator, or an error naming `op` on the host.
    pub(crate) fn nodes(&self, op: &'static str) -> Result<&Comm> {
        self.nodes.as_ref().ok_or_else(|| Error::InvalidArgument {
            op,
            what: "the host owns no grid points and takes no part".into(),
        })
    }
}
