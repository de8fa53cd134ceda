//! Agglomeration (AGGLM2, and beyond the seed): move grid functions onto a
//! coarser process grid and back, for the coarse levels of multigrid where
//! messages would otherwise outweigh the work.
//!
//! [`Grid::agglomerate`] merges blocks of `f0 × f1 (× f2)` neighbouring
//! ranks into one: any factor that divides the ranks of its axis, not only
//! powers of two, in 2-D and 3-D (the seed shipped 2-D with powers of two
//! and promised AGGLM3). The rank at the lowest corner of each block stays
//! *active* and owns the block's points on the coarse grid, whose parts are
//! the unions of the fine parts (every `f`-th boundary), so nothing but
//! whole inner blocks moves; the other ranks are *inactive* until the way
//! back ([`Agglomeration::is_active`], [`Agglomeration::coarse`] is `None`).
//! Agglomerating the coarse grid again stacks levels; each
//! [`Agglomeration`] undoes its own step ([`Agglomeration::scatter`]).
//! Extra payload vectors (AGGLM2's `re` and `in`) go down concatenated in
//! the order of the merged ranks and come back split as they came.
//!
//! Not done yet: the seed merges along spanning trees with
//! nearest-neighbour messages only; here each merged rank sends its block
//! straight to its block's active rank (one message each, not
//! neighbour-to-neighbour). The coarse grid has no host.

use super::block::merge_splits;
use super::field::Field;
use super::geometry::Grid;
use super::subarray::{AGGLOMERATE_TAG, DEAGGLOMERATE_TAG};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::topology::agree;
use bytemuck::Pod;

/// In which order the payload vectors of merged ranks are concatenated
/// (AGGLM2's `iorder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PayloadOrder {
    /// By increasing coordinates, axis 0 fastest (`iorder = 1`: first `I`,
    /// then `J`).
    #[default]
    IFirst,
    /// Axis 1 fastest, then axis 0, then axis 2 (`iorder = 2`).
    JFirst,
}

/// One agglomeration step: the coarse grid (on the active ranks) and how
/// to move data down to it and back up.
#[derive(Debug)]
pub struct Agglomeration {
    /// The fine grid's communicator (grid ranks).
    comm: Comm,
    /// The fine inner region of every fine rank.
    inner: Vec<super::field::Region>,
    /// The fine coordinates of every fine rank.
    coords: Vec<Vec<usize>>,
    factors: Vec<usize>,
    me: usize,
    /// The active rank of my block (a fine rank).
    leader: usize,
    /// The fine ranks of my block, in `IFirst` order (leaders only).
    members: Vec<usize>,
    coarse: Option<Grid>,
    /// Payload lengths per member of the last `gather_vec` (leaders).
    payload_counts: std::cell::RefCell<Vec<usize>>,
}

impl Grid {
    /// Agglomerate by `factors` (one per process-grid axis, each dividing
    /// that axis's ranks): blocks of ranks merge onto the rank at their
    /// lowest corner (AGGLM2 with `nxnew = nx / f0`, …). Collective over the
    /// grid's nodes, which must pass the same factors; a factor that does
    /// not divide is an error on every node. The coarse grid keeps this
    /// grid's points, halo widths and periodicity.
    pub fn agglomerate(&self, factors: &[usize]) -> Result<Agglomeration> {
        const OP: &str = "Grid::agglomerate";
        let nodes = self.nodes(OP)?;
        agree(nodes, OP, &format!("factors {factors:?}"))?;
        let dims = self.cart.dims().to_vec();
        if factors.len() != dims.len() {
            return Err(Error::InvalidArgument {
                op: OP,
                what: format!(
                    "{} factors for a process grid of {} axes",
                    factors.len(),
                    dims.len()
                ),
            });
        }
        for (a, (&f, &d)) in factors.iter().zip(&dims).enumerate() {
            if f == 0 || !d.is_multiple_of(f) {
                return Err(Error::InvalidArgument {
                    op: OP,
                    what: format!("factor {f} does not divide the {d} ranks of axis {a} (process grid {dims:?})"),
                });
            }
        }
        let n = self.cart.size();
        let coords: Vec<Vec<usize>> = (0..n)
            .map(|r| self.cart.coords_of(r).expect("a grid rank"))
            .collect();
        let me = self.cart.rank();
        let my = &coords[me];
        let lead: Vec<usize> = my.iter().zip(factors).map(|(&c, &f)| c / f * f).collect();
        let leader = coords
            .iter()
            .position(|c| *c == lead)
            .expect("the block's corner is a rank");
        let active = leader == me;
        let members: Vec<usize> = if active {
            (0..n)
                .filter(|&r| {
                    coords[r]
                        .iter()
                        .zip(&lead)
                        .zip(factors)
                        .all(|((&c, &l), &f)| c >= l && c < l + f)
                })
                .collect()
        } else {
            Vec::new()
        };
        // The coarse process grid: the active ranks, by coarse coordinates.
        let cdims: Vec<usize> = dims.iter().zip(factors).map(|(&d, &f)| d / f).collect();
        let key = {
            let cc: Vec<usize> = my.iter().zip(factors).map(|(&c, &f)| c / f).collect();
            cc.iter()
                .zip(&cdims)
                .rev()
                .fold(0usize, |acc, (&c, &d)| acc * d + c)
        };
        let sub = nodes.split(active.then_some(0), key as i64)?;
        let coarse = match sub {
            Some(c) => {
                let cart = c
                    .cartesian(&cdims, self.cart.periodic())?
                    .expect("every active rank is in the coarse grid");
                let splits: Vec<Vec<usize>> = (0..self.ndim)
                    .map(|a| merge_splits(&self.splits[a], factors.get(a).copied().unwrap_or(1)))
                    .collect();
                let halo: Vec<[usize; 2]> = self.halo[..self.ndim].to_vec();
                Some(Grid::with_splits(&cart, &splits, &halo)?)
            }
            None => None,
        };
        Ok(Agglomeration {
            comm: self.comm.clone(),
            inner: (0..n).map(|r| self.inner_of(r)).collect(),
            coords,
            factors: factors.to_vec(),
            me,
            leader,
            members,
            coarse,
            payload_counts: std::cell::RefCell::new(Vec::new()),
        })
    }
}

impl Agglomeration {
    /// Whether this rank is active on the coarse grid.
    pub fn is_active(&self) -> bool {
        self.coarse.is_some()
    }

    /// The coarse grid (`None` on an inactive rank).
    pub fn coarse(&self) -> Option<&Grid> {
        self.coarse.as_ref()
    }

    /// The factors of this step.
    pub fn factors(&self) -> &[usize] {
        &self.factors
    }

    /// The fine rank whose coarse block holds this rank's points.
    pub fn leader(&self) -> usize {
        self.leader
    }

    fn check_fine<T: Pod>(&self, fine: &Field<T>, op: &'static str) -> Result<()> {
        if fine.inner() == &self.inner[self.me] {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op,
                what: format!(
                    "the field's inner points {:?} are not this rank's fine points {:?}",
                    fine.inner(),
                    self.inner[self.me]
                ),
            })
        }
    }

    /// Move a fine grid function down: an active rank gets the coarse field
    /// with the inner points of its whole block (its halo zero: exchange it
    /// on the coarse grid), an inactive rank `None`. Collective over the
    /// fine grid's nodes.
    pub fn gather<T: Pod + Send>(&self, fine: &Field<T>) -> Result<Option<Field<T>>> {
        const OP: &str = "Agglomeration::gather";
        self.check_fine(fine, OP)?;
        let Some(coarse) = &self.coarse else {
            let v = fine.copy_region(&self.inner[self.me])?;
            self.comm.send_vec(v, self.leader, AGGLOMERATE_TAG)?;
            return Ok(None);
        };
        let mut out = coarse.field::<T>();
        for &r in &self.members {
            let region = &self.inner[r];
            if r == self.me {
                out.set_region(region, &fine.copy_region(region)?)?;
                continue;
            }
            let (v, _) = self.comm.recv_vec::<T>(r, AGGLOMERATE_TAG)?;
            if v.len() != region.count() {
                return Err(Error::CollectiveMismatch(format!(
                    "{OP}: rank {r} sent {} points for its {} inner points",
                    v.len(),
                    region.count()
                )));
            }
            out.set_region(region, &v)?;
        }
        Ok(Some(out))
    }

    /// Move a coarse grid function back up (AGGLM2 with `-1, -1`): every
    /// rank's fine inner points get the values of the coarse field at them
    /// (the halo is left as it is). Active ranks pass `Some(coarse)`,
    /// inactive ones `None`. Collective over the fine grid's nodes.
    pub fn scatter<T: Pod + Send>(
        &self,
        coarse: Option<&Field<T>>,
        fine: &mut Field<T>,
    ) -> Result<()> {
        const OP: &str = "Agglomeration::scatter";
        self.check_fine(fine, OP)?;
        let Some(cg) = &self.coarse else {
            let region = self.inner[self.me].clone();
            let (v, _) = self.comm.recv_vec::<T>(self.leader, DEAGGLOMERATE_TAG)?;
            if v.len() != region.count() {
                return Err(Error::CollectiveMismatch(format!(
                    "{OP}: the active rank sent {} points for this rank's {}",
                    v.len(),
                    region.count()
                )));
            }
            fine.set_region(&region, &v)?;
            return Ok(());
        };
        let Some(c) = coarse.filter(|c| c.inner() == &cg.inner()) else {
            return Err(Error::InvalidArgument {
                op: OP,
                what: format!(
                    "an active rank passes its coarse field (inner points {:?})",
                    cg.inner()
                ),
            });
        };
        for &r in &self.members {
            let v = c.copy_region(&self.inner[r])?;
            if r == self.me {
                fine.set_region(&self.inner[r], &v)?;
            } else {
                self.comm.send_vec(v, r, DEAGGLOMERATE_TAG)?;
            }
        }
        Ok(())
    }

    /// The merged ranks in `order`.
    fn ordered(&self, order: PayloadOrder) -> Vec<usize> {
        let mut m = self.members.clone();
        if order == PayloadOrder::JFirst {
            m.sort_by_key(|&r| {
                let c = &self.coords[r];
                let g = |a: usize| c.get(a).copied().unwrap_or(0);
                (g(2), g(0), g(1))
            });
        }
        m
    }

    /// Move a payload vector down along with the grid functions (AGGLM2's
    /// `re`/`in`): an active rank gets the vectors of its block's ranks
    /// concatenated in `order` (lengths may differ), an inactive one `None`.
    pub fn gather_vec<T: Pod + Send>(
        &self,
        v: &[T],
        order: PayloadOrder,
    ) -> Result<Option<Vec<T>>> {
        if self.coarse.is_none() {
            self.comm
                .send_vec(v.to_vec(), self.leader, AGGLOMERATE_TAG)?;
            return Ok(None);
        }
        let mut parts: Vec<(usize, Vec<T>)> = Vec::new();
        for &r in &self.members {
            let part = if r == self.me {
                v.to_vec()
            } else {
                self.comm.recv_vec::<T>(r, AGGLOMERATE_TAG)?.0
            };
            parts.push((r, part));
        }
        let mut out = Vec::new();
        let mut counts = Vec::new();
        for r in self.ordered(order) {
            let p = &parts.iter().find(|x| x.0 == r).expect("a member").1;
            counts.push(p.len());
            out.extend_from_slice(p);
        }
        *self.payload_counts.borrow_mut() = counts;
        Ok(Some(out))
    }

    /// Move a payload vector back up: each merged rank gets its part of the
    /// active rank's vector (split as the last [`Agglomeration::gather_vec`]
    /// with the same `order` joined it) back. Active ranks pass
    /// `Some(vector)`, inactive ones `None`; every rank gets its part.
    pub fn scatter_vec<T: Pod + Send>(
        &self,
        v: Option<&[T]>,
        order: PayloadOrder,
    ) -> Result<Vec<T>> {
        const OP: &str = "Agglomeration::scatter_vec";
        if self.coarse.is_none() {
            return Ok(self.comm.recv_vec::<T>(self.leader, DEAGGLOMERATE_TAG)?.0);
        }
        let counts = self.payload_counts.borrow().clone();
        let total: usize = counts.iter().sum();
        let Some(v) = v.filter(|v| v.len() == total && counts.len() == self.members.len()) else {
            return Err(Error::InvalidArgument {
                op: OP,
                what: format!(
                    "an active rank passes a vector of the {total} elements gathered last"
                ),
            });
        };
        let mut at = 0;
        let mut mine = Vec::new();
        for (r, n) in self.ordered(order).into_iter().zip(counts) {
            let part = v[at..at + n].to_vec();
            at += n;
            if r == self.me {
                mine = part;
            } else {
                self.comm.send_vec(part, r, DEAGGLOMERATE_TAG)?;
            }
        }
        Ok(mine)
    }
}
