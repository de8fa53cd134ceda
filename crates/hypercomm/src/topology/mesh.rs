//! MESH (seed 000, section 5): a rectangular mesh embedded in a hypercube so
//! that mesh neighbours are hypercube neighbours.
//!
//! The method, reconstructed from the seed's description and the opening of
//! its listing (which rounds every `LINDIM(I)` up to the next power of two
//! and then breaks off): each axis `a` of length `L_a` gets `d_a = ⌈log2
//! L_a⌉` bits of the node number, axis 0 the lowest bits; coordinate `c` on
//! that axis is written as `gray(c)` in its bits. Consecutive coordinates
//! differ in one bit of one field, so mesh neighbours are cube neighbours;
//! a periodic axis whose length is a power of two wraps around to a cube
//! neighbour too (`gray(L-1)` and `gray(0)` differ in the top bit). A
//! periodic axis of another length still has its wrap-around neighbour,
//! but that one is not adjacent in the cube.
//!
//! When a length is not a power of two, some node numbers below
//! `2^(Σ d_a)` belong to no mesh position ([`Mesh::coords`] says `None`, as
//! MESH returns -1). Coordinates are 0-based, as in the seed.
//!
//! Not done yet: the seed logs "MESH: TOO LARGE" and carries on; here
//! [`Mesh::cube_nodes`] tells the caller how large a cube is needed, and
//! `Comm::cartesian_with` refuses an embedding that does not fit.

use super::hypercube::{gray, gray_inverse};
use crate::error::{Error, Result};

/// Coordinate `to` on an axis of `len` places: wrapped when the axis is
/// periodic, `None` past its edge otherwise. In a width where no
/// coordinate plus displacement overflows (`isize::MIN` negated
/// included).
pub(crate) fn moved(len: usize, periodic: bool, to: i128) -> Option<usize> {
    let len = len as i128;
    if periodic {
        Some(to.rem_euclid(len) as usize)
    } else {
        (0..len).contains(&to).then_some(to as usize)
    }
}

/// A mesh of processes embedded in a hypercube (MESH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mesh {
    dims: Vec<usize>,
    periodic: Vec<bool>,
    /// Bits of the node number per axis (`⌈log2 L⌉`).
    bits: Vec<u32>,
}

/// What MESH computes for one node: its coordinates and its predecessor and
/// successor on every axis (`None` where there is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeshPlace {
    /// The node's coordinates, 0-based.
    pub coords: Vec<usize>,
    /// The node preceding it on each axis.
    pub pred: Vec<Option<usize>>,
    /// The node succeeding it on each axis.
    pub succ: Vec<Option<usize>>,
}

impl Mesh {
    /// A mesh with `dims[a]` positions on axis `a`, periodic where
    /// `periodic[a]`. Every length must be at least 1.
    pub fn new(dims: &[usize], periodic: &[bool]) -> Result<Mesh> {
        if dims.is_empty() || dims.len() != periodic.len() {
            return Err(Error::InvalidArgument {
                op: "Mesh::new",
                what: format!(
                    "{} lengths and {} periodic flags: give one of each per axis, at least one axis",
                    dims.len(),
                    periodic.len()
                ),
            });
        }
        if let Some(a) = dims.iter().position(|&d| d == 0) {
            return Err(Error::InvalidArgument {
                op: "Mesh::new",
                what: format!("axis {a} has length 0"),
            });
        }
        let bits: Vec<u32> = dims
            .iter()
            .map(|&d| super::hypercube::cube_dim(d))
            .collect();
        if bits.iter().sum::<u32>() >= usize::BITS - 1 {
            return Err(Error::InvalidArgument {
                op: "Mesh::new",
                what: format!("a mesh of {dims:?} needs a hypercube larger than addresses allow"),
            });
        }
        Ok(Mesh {
            dims: dims.to_vec(),
            periodic: periodic.to_vec(),
            bits,
        })
    }

    /// The lengths of the axes.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Whether each axis wraps around.
    pub fn periodic(&self) -> &[bool] {
        &self.periodic
    }

    /// The dimension of the hypercube the mesh needs (`Σ ⌈log2 L_a⌉`).
    pub fn cube_dim(&self) -> u32 {
        self.bits.iter().sum()
    }

    /// The number of nodes of that hypercube (`2^cube_dim`); node numbers of
    /// the mesh are below it.
    pub fn cube_nodes(&self) -> usize {
        1usize << self.cube_dim()
    }

    fn shift_of(&self, axis: usize) -> u32 {
        self.bits[..axis].iter().sum()
    }

    /// The node at `coords` (each below its axis length), or `None` if a
    /// coordinate is out of range.
    pub fn node(&self, coords: &[usize]) -> Option<usize> {
        if coords.len() != self.dims.len() {
            return None;
        }
        let mut node = 0;
        for (a, (&c, &l)) in coords.iter().zip(&self.dims).enumerate() {
            if c >= l {
                return None;
            }
            node |= gray(c) << self.shift_of(a);
        }
        Some(node)
    }

    /// The coordinates of `node`, or `None` if the mesh does not use it.
    pub fn coords(&self, node: usize) -> Option<Vec<usize>> {
        if node >= self.cube_nodes() {
            return None;
        }
        let mut out = Vec::with_capacity(self.dims.len());
        for (a, &b) in self.bits.iter().enumerate() {
            let field = (node >> self.shift_of(a)) & ((1usize << b) - 1);
            let c = gray_inverse(field);
            if c >= self.dims[a] {
                return None;
            }
            out.push(c);
        }
        Some(out)
    }

    /// The neighbour of `node` at distance `disp` along `axis` (wrapping on
    /// a periodic axis), or `None` past the edge of a non-periodic axis or
    /// when the mesh does not use `node`.
    pub fn neighbour(&self, node: usize, axis: usize, disp: isize) -> Option<usize> {
        let mut c = self.coords(node)?;
        let len = *self.dims.get(axis)?;
        c[axis] = moved(len, self.periodic[axis], c[axis] as i128 + disp as i128)?;
        self.node(&c)
    }

    /// MESH for one node: coordinates, predecessors and successors, or
    /// `None` if the mesh does not use `node` (MESH's all −1).
    pub fn place(&self, node: usize) -> Option<MeshPlace> {
        let coords = self.coords(node)?;
        let axes = 0..self.dims.len();
        Some(MeshPlace {
            coords,
            pred: axes.clone().map(|a| self.neighbour(node, a, -1)).collect(),
            succ: axes.map(|a| self.neighbour(node, a, 1)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn any_displacement_wraps_or_leaves_without_overflow() {
        let ring = Mesh::new(&[5], &[true]).unwrap();
        let line = Mesh::new(&[5], &[false]).unwrap();
        for c in 0..5usize {
            let node = ring.node(&[c]).unwrap();
            assert_eq!(line.node(&[c]), Some(node));
            let c = c as i128;
            for disp in [isize::MAX, isize::MIN, isize::MIN + 1, -7, 12] {
                let to = (c + disp as i128).rem_euclid(5) as usize;
                assert_eq!(
                    ring.neighbour(node, 0, disp),
                    ring.node(&[to]),
                    "{node} {disp}"
                );
                assert_eq!(line.neighbour(node, 0, disp), None, "{node} {disp}");
            }
        }
    }

    #[test]
    fn a_ring_is_the_gray_code() {
        let m = Mesh::new(&[8], &[true]).unwrap();
        let order: Vec<usize> = (0..8).map(|c| m.node(&[c]).unwrap()).collect();
        assert_eq!(order, vec![0, 1, 3, 2, 6, 7, 5, 4]);
        assert_eq!(m.place(4).unwrap().succ, vec![Some(0)]);
        assert_eq!(m.place(0).unwrap().pred, vec![Some(4)]);
    }

    #[test]
    fn a_3_by_2_mesh_by_hand() {
        // Axis 0: 3 positions in 2 bits (gray 0, 1, 3); axis 1: 2 in 1 bit.
        let m = Mesh::new(&[3, 2], &[false, false]).unwrap();
        assert_eq!(m.cube_nodes(), 8);
        assert_eq!(m.node(&[2, 1]), Some(3 | 4));
        assert_eq!(m.coords(2), None, "gray_inverse(2) = 3 is past the axis");
        let p = m.place(1).unwrap();
        assert_eq!(p.coords, vec![1, 0]);
        assert_eq!(p.pred, vec![Some(0), None]);
        assert_eq!(p.succ, vec![Some(3), Some(5)]);
    }

    #[test]
    fn periodic_axes_of_one_and_two() {
        let m = Mesh::new(&[1, 2], &[true, true]).unwrap();
        let p = m.place(1).unwrap();
        assert_eq!(p.pred, vec![Some(1), Some(0)]);
        assert_eq!(p.succ, vec![Some(1), Some(0)]);
    }

    proptest! {
        #[test]
        fn neighbours_are_cube_neighbours(
            dims in proptest::collection::vec(1usize..9, 1..4),
            per in proptest::collection::vec(any::<bool>(), 3),
        ) {
            let per = &per[..dims.len()];
            let m = Mesh::new(&dims, per).unwrap();
            let mut seen = 0;
            for node in 0..m.cube_nodes() {
                let Some(p) = m.place(node) else { continue };
                seen += 1;
                prop_assert_eq!(m.node(&p.coords), Some(node));
                for a in 0..dims.len() {
                    for (nb, d) in [(p.pred[a], -1isize), (p.succ[a], 1)] {
                        let c = p.coords[a] as isize + d;
                        let inside = (0..dims[a] as isize).contains(&c);
                        prop_assert_eq!(nb.is_some(), inside || per[a]);
                        let Some(nb) = nb else { continue };
                        let wraps = !inside;
                        // Nearest neighbours in the cube, except a wrap of
                        // a length that is not a power of two.
                        if !wraps || dims[a].is_power_of_two() {
                            prop_assert!((nb ^ node).count_ones() <= 1, "{node} {nb}");
                        }
                    }
                }
            }
            prop_assert_eq!(seen, dims.iter().product::<usize>());
        }
    }
}
