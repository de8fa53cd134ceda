//! Cartesian process grids (SUPRENUM CRGR2D/CRGR3D and GRID2D/GRID3D; MPI
//! `Cart_create`, `Cart_shift`, `Cart_sub`, `Dims_create`).
//!
//! A [`Cart`] numbers its nodes by coordinates with **axis 0 fastest**:
//! the rank of `(c0, c1, c2)` is `c0 + d0·(c1 + d1·c2)`, as SUPRENUM's
//! `procn(i, j, k)` array is laid out (Fortran order) and as grid functions
//! are stored (see [`crate::grid`]). MPI orders the other way (last axis
//! fastest). Coordinates are 0-based (SUPRENUM's are 1-based).
//!
//! Where the grid's nodes run is the [`Embedding`]: `Natural` puts grid
//! rank `r` on rank `r` of the parent communicator; `Hypercube` puts the
//! node at coordinates `c` on parent rank `Mesh::node(c)` (MESH, seed 000),
//! so that grid neighbours are hypercube neighbours.
//!
//! A missing neighbour is `None`: [`Cart::shift`] and [`Cart::neighbour`]
//! let edge ranks skip a send or a receive without a branch on their
//! coordinates. A periodic axis of one rank makes a rank its own neighbour;
//! of two ranks, both neighbours are the same rank.
//!
//! The host, when the parent communicator has one, calls
//! [`Comm::cartesian`] too and becomes the grid communicator's host: it has
//! no coordinates (an empty slice) and no neighbours, but can address every
//! node by coordinates (the subarray messages and GLOPH of the grid layer).
//!
//! Not done yet: `Cart_map`-style placement by measured distances; more
//! than three axes.

use super::mesh::{moved, Mesh};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;

/// Where the grid's nodes run on the parent communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Embedding {
    /// Grid rank `r` is parent rank `r`.
    #[default]
    Natural,
    /// MESH's hypercube embedding: coordinates `c` run on parent rank
    /// `Mesh::node(c)`, so grid neighbours are hypercube neighbours. Needs a
    /// parent of at least `Mesh::cube_nodes()` ranks when an axis length is
    /// not a power of two (some parent ranks are then left out).
    Hypercube,
}

/// Options of [`Comm::cartesian_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CartOpts {
    /// Placement of the grid's nodes.
    pub embedding: Embedding,
}

/// Neighbours for a shift along one axis (MPI `Cart_shift`): data moving
/// by `disp` comes from `source` and goes to `dest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    /// The rank at `coords − disp`, if there is one.
    pub source: Option<usize>,
    /// The rank at `coords + disp`, if there is one.
    pub dest: Option<usize>,
}

/// The binary-tree view of a process grid (CRGR2D's `tree`): a heap over the
/// grid's ranks, father `⌊(r−1)/2⌋`, sons `2r+1` and `2r+2`, so its depth is
/// `⌊log2 n⌋`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// The father (`None` at the root, rank 0).
    pub father: Option<usize>,
    /// The sons, zero to two.
    pub sons: Vec<usize>,
}

/// A Cartesian process grid: a communicator whose nodes have coordinates.
#[derive(Debug, Clone)]
pub struct Cart {
    comm: Comm,
    /// The nodes only (the grid communicator itself when it has no host;
    /// `None` on the host).
    nodes: Option<Comm>,
    dims: Vec<usize>,
    periodic: Vec<bool>,
    coords: Vec<usize>,
    embedding: Embedding,
}

/// The most ranks [`dims_create`] and [`dims_fill`] arrange (2^32 − 1).
pub const MAX_DIMS_RANKS: usize = u32::MAX as usize;

/// Balanced dimensions for `n` ranks on `ndims` axes (MPI `Dims_create`):
/// the product is `n`, the lengths are as close to each other as possible
/// (the largest is smallest), in non-increasing order.
pub fn dims_create(n: usize, ndims: usize) -> Result<Vec<usize>> {
    let mut dims = vec![0; ndims];
    dims_fill(n, &mut dims)?;
    Ok(dims)
}

/// [`dims_create`] with some lengths fixed: the entries of `dims` that are
/// not 0 are kept, the zeros are filled (in non-increasing order among
/// themselves) so that the product is `n`.
pub fn dims_fill(n: usize, dims: &mut [usize]) -> Result<()> {
    let bad = |what: String| Error::InvalidArgument {
        op: "dims_create",
        what,
    };
    if n == 0 {
        return Err(bad("no ranks to arrange".into()));
    }
    if n > MAX_DIMS_RANKS {
        return Err(bad(format!(
            "{n} ranks: at most {MAX_DIMS_RANKS} can be arranged"
        )));
    }
    let fixed = dims
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |p, &d| p.checked_mul(d).filter(|&p| p <= n));
    let Some(fixed) = fixed.filter(|&f| n.is_multiple_of(f)) else {
        return Err(bad(format!(
            "{n} ranks cannot be split with the fixed lengths {dims:?} (their product does not divide {n})"
        )));
    };
    let free = dims.iter().filter(|&&d| d == 0).count();
    let rest = n / fixed;
    if free == 0 {
        return if rest == 1 {
            Ok(())
        } else {
            Err(bad(format!(
                "the lengths {dims:?} multiply to {fixed}, not {n}"
            )))
        };
    }
    // Exhaustive over non-increasing factorisations into divisors of
    // `rest` (largest first): the smallest largest factor, then the
    // smallest spread.
    fn search(
        rest: usize,
        k: usize,
        max: usize,
        divisors: &[usize],
        cur: &mut Vec<usize>,
        best: &mut Option<Vec<usize>>,
    ) {
        if k == 1 {
            if rest <= max {
                cur.push(rest);
                let better = match best {
                    None => true,
                    Some(b) => {
                        (cur[0], cur[0] - cur[cur.len() - 1]) < (b[0], b[0] - b[b.len() - 1])
                    }
                };
                if better {
                    *best = Some(cur.clone());
                }
                cur.pop();
            }
            return;
        }
        for &d in divisors {
            if d > max || d > rest || !rest.is_multiple_of(d) {
                continue;
            }
            // No k factors of at most d make `rest`: nor do smaller ones.
            if d.checked_pow(k as u32).is_some_and(|p| p < rest) {
                break;
            }
            // What this path can reach at best: its first factor, and a
            // spread of at least first − d.
            let first = cur.first().copied().unwrap_or(d);
            if best
                .as_ref()
                .is_some_and(|b| (first, first - d) >= (b[0], b[0] - b[b.len() - 1]))
            {
                continue;
            }
            {
                cur.push(d);
                search(rest / d, k - 1, d, divisors, cur, best);
                cur.pop();
            }
        }
    }
    // The divisors of `rest`, largest first (trial division up to its
    // square root: at most 65 536 steps).
    let mut divisors = Vec::new();
    let mut d = 1;
    while d * d <= rest {
        if rest.is_multiple_of(d) {
            divisors.push(d);
            if d * d != rest {
                divisors.push(rest / d);
            }
        }
        d += 1;
    }
    divisors.sort_unstable_by(|a, b| b.cmp(a));
    // The first (largest) factor from the smallest up: the first that
    // leads anywhere is the answer's, and the search below it only
    // narrows the spread.
    let mut best = None;
    for &d in divisors.iter().rev() {
        if d.checked_pow(free as u32).is_some_and(|p| p < rest) {
            continue;
        }
        search(rest, free, d, &divisors, &mut Vec::new(), &mut best);
        if best.is_some() {
            break;
        }
    }
    let best = best.expect("1 × … × rest always works");
    let mut it = best.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().expect("one factor per free axis");
    }
    Ok(())
}

/// Linear index of `coords` with axis 0 fastest.
fn linear(dims: &[usize], coords: &[usize]) -> usize {
    coords
        .iter()
        .zip(dims)
        .rev()
        .fold(0, |acc, (&c, &d)| acc * d + c)
}

/// Coordinates of linear index `r` with axis 0 fastest.
fn unlinear(dims: &[usize], mut r: usize) -> Vec<usize> {
    dims.iter()
        .map(|&d| {
            let c = r % d;
            r /= d;
            c
        })
        .collect()
}

impl Comm {
    /// A Cartesian process grid over this communicator's nodes with
    /// `dims[a]` ranks on axis `a` (1 to 3 axes), periodic where
    /// `periodic[a]` (SUPRENUM CRGR2D/CRGR3D + GRID2D/GRID3D, MPI
    /// `Cart_create`). Collective over every member, the host included; the
    /// members must pass the same arguments (checked: a difference is the
    /// same error on every member). Nodes beyond the grid get `None`.
    pub fn cartesian(&self, dims: &[usize], periodic: &[bool]) -> Result<Option<Cart>> {
        self.cartesian_with(dims, periodic, &CartOpts::default())
    }

    /// [`Comm::cartesian`] with options (the embedding).
    pub fn cartesian_with(
        &self,
        dims: &[usize],
        periodic: &[bool],
        opts: &CartOpts,
    ) -> Result<Option<Cart>> {
        const OP: &str = "cartesian";
        let own = self.dup();
        let desc = format!("dims {dims:?}, periodic {periodic:?}, {:?}", opts.embedding);
        super::agree(&own, OP, &desc)?;
        let bad = |what: String| Error::InvalidArgument { op: OP, what };
        if dims.is_empty() || dims.len() > 3 {
            return Err(bad(format!("{} axes: a grid has 1, 2 or 3", dims.len())));
        }
        if dims.len() != periodic.len() {
            return Err(bad(format!(
                "{} lengths but {} periodic flags",
                dims.len(),
                periodic.len()
            )));
        }
        if let Some(a) = dims.iter().position(|&d| d == 0) {
            return Err(bad(format!("axis {a} has no ranks (dims {dims:?})")));
        }
        let count: usize = dims.iter().product();
        // Grid rank of each parent node.
        let member: Option<usize> = match (self.me(), opts.embedding) {
            (Rank::Host, _) => None,
            (Rank::Node(r), Embedding::Natural) => (r < count).then_some(r),
            (Rank::Node(r), Embedding::Hypercube) => {
                let mesh = Mesh::new(dims, periodic)?;
                mesh.coords(r).map(|c| linear(dims, &c))
            }
        };
        let needed = match opts.embedding {
            Embedding::Natural => count,
            Embedding::Hypercube => Mesh::new(dims, periodic)?.cube_nodes(),
        };
        if needed > self.size() {
            return Err(bad(format!(
                "a {dims:?} grid ({:?} embedding) needs {needed} ranks but the communicator has {}",
                opts.embedding,
                self.size()
            )));
        }
        // The grid communicator (with the host, if any) and its nodes only.
        let colour = if self.is_host() {
            Some(0)
        } else {
            member.map(|_| 0)
        };
        let grid = own.split(colour, member.map_or(i64::MAX, |m| m as i64))?;
        let nodes = if self.has_host() {
            own.split(member.map(|_| 0), member.unwrap_or(0) as i64)?
        } else {
            grid.clone()
        };
        let Some(comm) = grid else { return Ok(None) };
        let coords = member.map(|m| unlinear(dims, m)).unwrap_or_default();
        Ok(Some(Cart {
            comm,
            nodes,
            dims: dims.to_vec(),
            periodic: periodic.to_vec(),
            coords,
            embedding: opts.embedding,
        }))
    }
}

impl Cart {
    /// The grid's communicator: its node ranks are the grid ranks; it has
    /// the parent's host, if any.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The grid's nodes without the host (`None` on the host). The same
    /// communicator as [`Cart::comm`] when there is no host.
    pub fn nodes(&self) -> Option<&Comm> {
        self.nodes.as_ref()
    }

    /// This node's grid rank (on the host: the number of nodes, as
    /// [`Comm::rank`]).
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The number of nodes in the grid.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// Whether the caller is the host.
    pub fn is_host(&self) -> bool {
        self.comm.is_host()
    }

    /// Ranks per axis.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The number of axes.
    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    /// Which axes wrap around.
    pub fn periodic(&self) -> &[bool] {
        &self.periodic
    }

    /// The embedding this grid was made with.
    pub fn embedding(&self) -> Embedding {
        self.embedding
    }

    /// This node's coordinates (empty on the host).
    pub fn coords(&self) -> &[usize] {
        &self.coords
    }

    /// The coordinates of grid rank `rank`, or `None` past the grid.
    pub fn coords_of(&self, rank: usize) -> Option<Vec<usize>> {
        (rank < self.size()).then(|| unlinear(&self.dims, rank))
    }

    /// The grid rank at `coords`: periodic axes wrap, a coordinate outside a
    /// non-periodic axis gives `None` (as does a wrong number of axes).
    pub fn rank_of(&self, coords: &[isize]) -> Option<usize> {
        if coords.len() != self.dims.len() {
            return None;
        }
        let mut c = Vec::with_capacity(coords.len());
        for (a, &x) in coords.iter().enumerate() {
            c.push(moved(self.dims[a], self.periodic[a], x as i128)?);
        }
        Some(linear(&self.dims, &c))
    }

    /// The rank `disp` steps from this node along `axis` (wrapping on a
    /// periodic axis), or `None` past an edge, on the host, or for an axis
    /// the grid does not have.
    pub fn neighbour(&self, axis: usize, disp: isize) -> Option<usize> {
        self.step(axis, disp as i128)
    }

    /// [`Cart::neighbour`] in a width where no displacement overflows
    /// (`isize::MIN` included, negated by [`Cart::shift`]).
    fn step(&self, axis: usize, disp: i128) -> Option<usize> {
        if self.is_host() || axis >= self.dims.len() {
            return None;
        }
        let to = self.coords[axis] as i128 + disp;
        let mut c = self.coords.clone();
        c[axis] = moved(self.dims[axis], self.periodic[axis], to)?;
        Some(linear(&self.dims, &c))
    }

    /// Where data moving by `disp` along `axis` comes from and goes to (MPI
    /// `Cart_shift`); `None` where there is no such rank.
    pub fn shift(&self, axis: usize, disp: isize) -> Shift {
        let disp = disp as i128;
        Shift {
            source: self.step(axis, -disp),
            dest: self.step(axis, disp),
        }
    }

    /// The rank of the parent communicator that runs grid rank `rank` (the
    /// embedding's placement).
    pub fn parent_rank_of(&self, rank: usize) -> Option<usize> {
        let c = self.coords_of(rank)?;
        match self.embedding {
            Embedding::Natural => Some(rank),
            Embedding::Hypercube => Mesh::new(&self.dims, &self.periodic).ok()?.node(&c),
        }
    }

    /// The binary-tree view (CRGR2D/CRGR3D): a heap over the grid ranks.
    /// On the host: no father and no sons.
    pub fn tree(&self) -> Tree {
        if self.is_host() {
            return Tree {
                father: None,
                sons: Vec::new(),
            };
        }
        let r = self.rank();
        Tree {
            father: (r > 0).then(|| (r - 1) / 2),
            sons: [2 * r + 1, 2 * r + 2]
                .into_iter()
                .filter(|&s| s < self.size())
                .collect(),
        }
    }

    /// The sub-grid through this node that keeps the axes where `keep` is
    /// true (MPI `Cart_sub`): rows, columns, planes. Collective over the
    /// grid's nodes (not the host, which gets an error without taking part).
    /// The sub-grid's ranks follow the kept axes, axis 0 fastest; it has no
    /// host and a `Natural` embedding.
    pub fn sub(&self, keep: &[bool]) -> Result<Cart> {
        let bad = |what: String| Error::InvalidArgument {
            op: "Cart::sub",
            what,
        };
        let Some(nodes) = &self.nodes else {
            return Err(bad("the host belongs to no sub-grid".into()));
        };
        if keep.len() != self.dims.len() || !keep.iter().any(|&k| k) {
            return Err(bad(format!(
                "keep {keep:?} for a grid of {} axes: one flag per axis, at least one kept",
                self.dims.len()
            )));
        }
        let pick = |want: bool| -> (Vec<usize>, Vec<usize>) {
            (0..self.dims.len())
                .filter(|&a| keep[a] == want)
                .map(|a| (self.dims[a], self.coords[a]))
                .unzip()
        };
        let (kd, kc) = pick(true);
        let (dd, dc) = pick(false);
        let colour = linear(&dd, &dc) as u32;
        let comm = nodes
            .split(Some(colour), linear(&kd, &kc) as i64)?
            .expect("every node passes a colour");
        let periodic: Vec<bool> = (0..keep.len())
            .filter(|&a| keep[a])
            .map(|a| self.periodic[a])
            .collect();
        Ok(Cart {
            nodes: Some(comm.clone()),
            comm,
            dims: kd,
            periodic,
            coords: kc,
            embedding: Embedding::Natural,
        })
    }

    /// The 1-D sub-grid along `axis` through this node: `line(0)` is the
    /// row (varying x), `line(1)` the column.
    pub fn line(&self, axis: usize) -> Result<Cart> {
        let keep: Vec<bool> = (0..self.dims.len()).map(|a| a == axis).collect();
        self.sub(&keep)
    }

    /// The sub-grid of every axis but `normal` through this node (in 3-D, a
    /// plane; in 2-D, a line).
    pub fn plane(&self, normal: usize) -> Result<Cart> {
        let keep: Vec<bool> = (0..self.dims.len()).map(|a| a != normal).collect();
        self.sub(&keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dims_like_mpi() {
        assert_eq!(dims_create(6, 2).unwrap(), vec![3, 2]);
        assert_eq!(dims_create(12, 2).unwrap(), vec![4, 3]);
        assert_eq!(dims_create(16, 3).unwrap(), vec![4, 2, 2]);
        assert_eq!(dims_create(7, 2).unwrap(), vec![7, 1]);
        assert_eq!(dims_create(1, 3).unwrap(), vec![1, 1, 1]);
        let mut d = [0, 3, 0];
        dims_fill(24, &mut d).unwrap();
        assert_eq!(d, [4, 3, 2]);
        assert!(dims_fill(10, &mut [3, 0]).is_err());
        assert!(dims_create(0, 2).is_err());
    }

    #[test]
    fn dims_of_large_or_impossible_counts_answer_at_once() {
        // A prime: one long axis (trial division, not a walk over every
        // length).
        assert_eq!(
            dims_create(2_147_483_647, 3).unwrap(),
            vec![2_147_483_647, 1, 1]
        );
        assert_eq!(
            dims_create(735_134_400, 8).unwrap(),
            vec![17, 15, 14, 13, 12, 12, 11, 10]
        );
        let e = dims_create(usize::MAX, 2).unwrap_err().to_string();
        assert!(e.contains("at most 4294967295"), "{e}");
        // Fixed lengths whose product overflows.
        let e = dims_fill(8, &mut [usize::MAX, 2, 0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not divide 8"), "{e}");
    }

    #[test]
    fn linear_is_axis_0_fastest() {
        assert_eq!(linear(&[3, 2], &[1, 1]), 4);
        assert_eq!(unlinear(&[3, 2], 4), vec![1, 1]);
        assert_eq!(linear(&[2, 3, 4], &[1, 2, 3]), 1 + 2 * (2 + 3 * 3));
    }

    proptest! {
        #[test]
        fn dims_are_balanced(n in 1usize..400, k in 1usize..4) {
            let d = dims_create(n, k).unwrap();
            prop_assert_eq!(d.iter().product::<usize>(), n);
            prop_assert!(d.windows(2).all(|w| w[0] >= w[1]));
            // No factorisation has a smaller largest length.
            let best = (1..=n).find(|&m| {
                fn fits(n: usize, k: usize, m: usize) -> bool {
                    if k == 1 { return n <= m; }
                    (1..=m.min(n)).any(|d| n.is_multiple_of(d) && fits(n / d, k - 1, m))
                }
                fits(n, k, m)
            }).unwrap();
            prop_assert_eq!(d[0], best);
        }

        #[test]
        fn dims_have_the_smallest_spread_among_the_most_balanced(n in 1usize..400, k in 1usize..6) {
            // Every non-increasing factorisation, by brute force.
            fn all(n: usize, k: usize, max: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
                if k == 0 {
                    if n == 1 { out.push(cur.clone()); }
                    return;
                }
                for d in 1..=max.min(n) {
                    if n.is_multiple_of(d) {
                        cur.push(d);
                        all(n / d, k - 1, d, cur, out);
                        cur.pop();
                    }
                }
            }
            let mut every = Vec::new();
            all(n, k, n, &mut Vec::new(), &mut every);
            let key = |v: &Vec<usize>| (v[0], v[0] - v[v.len() - 1]);
            let want = every.iter().map(key).min().unwrap();
            prop_assert_eq!(key(&dims_create(n, k).unwrap()), want);
        }

        #[test]
        fn linear_round_trips(dims in proptest::collection::vec(1usize..6, 1..4), r in 0usize..1000) {
            let n: usize = dims.iter().product();
            let r = r % n;
            prop_assert_eq!(linear(&dims, &unlinear(&dims, r)), r);
        }
    }
}
