//! Subarray messages (SENDIA/SENDRA/RECIA/RECRA) and whole grid functions
//! to and from one member (the initial data in, the solution out).
//!
//! A subarray message names its destination by process-grid coordinates or
//! the host; it carries its extent, so the receiver says only where the
//! lowest corner goes and learns the rest. Tags are the user's, below
//! [`USER_TAG_LIMIT`]; the messages travel on the grid's own communicator,
//! apart from every other message of the program.
//!
//! Not done yet: non-blocking subarray messages; gather and scatter pass
//! every block through the root one rank at a time (no tree), which is
//! what initial data and solutions need but not a parallel I/O path.

use super::field::{Field, Region};
use super::geometry::Grid;
use crate::error::{Error, Result};
use crate::rank::Rank;
use bytemuck::Pod;

/// User tags of subarray messages must be below this; the grid layer's own
/// messages use the tags above it.
pub const USER_TAG_LIMIT: u32 = 0x7f00_0000;

/// The grid layer's own tags (gather, scatter, agglomeration).
pub(crate) const GATHER_TAG: u32 = 0x7f00_0001;
pub(crate) const SCATTER_TAG: u32 = 0x7f00_0002;
pub(crate) const AGGLOMERATE_TAG: u32 = 0x7f00_0003;
pub(crate) const DEAGGLOMERATE_TAG: u32 = 0x7f00_0004;

/// A member of the grid addressed the SUPRENUM way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place<'a> {
    /// The node at these process-grid coordinates (0-based).
    Coords(&'a [usize]),
    /// The host.
    Host,
}

const HEADER: usize = 24;

impl Grid {
    fn rank_of_place(&self, p: Place<'_>, op: &'static str) -> Result<Rank> {
        match p {
            Place::Host if !self.comm.has_host() => Err(Error::InvalidRank {
                rank: Rank::Host,
                op,
                size: self.comm.size(),
                host: "",
            }),
            Place::Host => Ok(Rank::Host),
            Place::Coords(c) => {
                let ci: Vec<isize> = c.iter().map(|&x| x as isize).collect();
                let inside = c.len() == self.cart.ndims()
                    && c.iter().zip(self.cart.dims()).all(|(&x, &d)| x < d);
                match self.cart.rank_of(&ci) {
                    Some(r) if inside => Ok(Rank::Node(r)),
                    _ => Err(Error::InvalidArgument {
                        op,
                        what: format!(
                            "coordinates {c:?} are outside the {:?} process grid",
                            self.cart.dims()
                        ),
                    }),
                }
            }
        }
    }

    /// Send the points `region` of `src` to `to` with `tag` (SENDIA/SENDRA):
    /// host or node, any region the array stores. The receiver learns the
    /// extent.
    pub fn send_subarray<T: Pod>(
        &self,
        src: &Field<T>,
        region: &Region,
        to: Place<'_>,
        tag: u32,
    ) -> Result<()> {
        const OP: &str = "Grid::send_subarray";
        check_tag(tag, OP)?;
        if !src.storage().covers(region) {
            return Err(Error::InvalidArgument {
                op: OP,
                what: format!("{region:?} is not stored in {:?}", src.storage()),
            });
        }
        let dest = self.rank_of_place(to, OP)?;
        let mut msg = Vec::with_capacity(HEADER + region.count() * std::mem::size_of::<T>());
        for a in 0..3 {
            msg.extend_from_slice(&(region.len(a) as u64).to_le_bytes());
        }
        msg.extend_from_slice(bytemuck::cast_slice(&src.copy_region(region)?));
        self.comm.send_vec(msg, dest, tag)
    }

    /// Receive a subarray sent with [`Grid::send_subarray`] from `from` with
    /// `tag` into `dst`, its lowest point at `at` (RECIA/RECRA); returns the
    /// region it filled. Fails (and the message is consumed) when the
    /// subarray does not fit into `dst`'s storage there.
    pub fn recv_subarray<T: Pod>(
        &self,
        dst: &mut Field<T>,
        at: [isize; 3],
        from: Place<'_>,
        tag: u32,
    ) -> Result<Region> {
        const OP: &str = "Grid::recv_subarray";
        check_tag(tag, OP)?;
        let src = self.rank_of_place(from, OP)?;
        let (msg, st) = self.comm.recv_vec::<u8>(src, tag)?;
        let bad = |what: String| Error::InvalidArgument { op: OP, what };
        if msg.len() < HEADER {
            return Err(bad(format!(
                "a {}-byte message from {} is no subarray",
                msg.len(),
                st.source
            )));
        }
        let ext: [usize; 3] = std::array::from_fn(|a| {
            u64::from_le_bytes(msg[8 * a..8 * a + 8].try_into().expect("8 bytes")) as usize
        });
        let sz = std::mem::size_of::<T>();
        let count = ext.iter().try_fold(1usize, |acc, &e| acc.checked_mul(e));
        if count.and_then(|c| c.checked_mul(sz)) != Some(msg.len() - HEADER) {
            return Err(bad(format!(
                "the subarray from {} of extent {ext:?} came with {} bytes of {} (sent with another element type?)",
                st.source,
                msg.len() - HEADER,
                std::any::type_name::<T>()
            )));
        }
        let region = Region {
            lo: at,
            hi: std::array::from_fn(|a| at[a] + ext[a] as isize),
        };
        if !dst.storage().covers(&region) {
            return Err(bad(format!(
                "a subarray of extent {ext:?} placed at {at:?} does not fit into {:?}",
                dst.storage()
            )));
        }
        let mut values = vec![T::zeroed(); region.count()];
        bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(&msg[HEADER..]);
        dst.set_region(&region, &values)?;
        Ok(region)
    }

    /// Gather the inner points of every node's `local` into one array of
    /// the whole domain at `root` (the host or a node), which gets
    /// `Some(array)`; the others get `None`. Collective over the nodes and
    /// the root; the host, when it is the root, passes `grid.field()` (an
    /// empty field).
    pub fn gather<T: Pod + Send>(&self, local: &Field<T>, root: Rank) -> Result<Option<Field<T>>> {
        const OP: &str = "Grid::gather";
        self.check_root(root, OP)?;
        if !self.is_host() {
            self.check_local(local, OP)?;
        }
        if self.comm.me() != root {
            if !self.is_host() {
                let v = local.copy_region(&self.inner())?;
                self.comm.send_vec(v, root, GATHER_TAG)?;
            }
            return Ok(None);
        }
        let mut global = self.global_field::<T>();
        for r in 0..self.cart.size() {
            let region = self.inner_of(r);
            if Rank::Node(r) == root {
                global.set_region(&region, &local.copy_region(&region)?)?;
                continue;
            }
            let (v, _) = self.comm.recv_vec::<T>(r, GATHER_TAG)?;
            if v.len() != region.count() {
                return Err(Error::CollectiveMismatch(format!(
                    "{OP}: rank {r} sent {} points for its {} inner points",
                    v.len(),
                    region.count()
                )));
            }
            global.set_region(&region, &v)?;
        }
        Ok(Some(global))
    }

    /// Scatter a whole-domain array from `root` (which passes
    /// `Some(global)`) into the inner points of every node's `local` (the
    /// halo is left as it is: exchange it afterwards). The host, when it is
    /// the root, passes `grid.field()` as `local`.
    pub fn scatter<T: Pod + Send>(
        &self,
        global: Option<&Field<T>>,
        local: &mut Field<T>,
        root: Rank,
    ) -> Result<()> {
        const OP: &str = "Grid::scatter";
        self.check_root(root, OP)?;
        if !self.is_host() {
            self.check_local(local, OP)?;
        }
        if self.comm.me() == root {
            let Some(g) = global.filter(|g| g.storage().covers(&self.domain())) else {
                return Err(Error::InvalidArgument {
                    op: OP,
                    what: format!(
                        "the root must pass an array of the whole domain {:?}",
                        self.domain()
                    ),
                });
            };
            for r in 0..self.cart.size() {
                let region = self.inner_of(r);
                let v = g.copy_region(&region)?;
                if Rank::Node(r) == root {
                    local.set_region(&region, &v)?;
                } else {
                    self.comm.send_vec(v, r, SCATTER_TAG)?;
                }
            }
            return Ok(());
        }
        if self.is_host() {
            return Ok(());
        }
        let region = self.inner();
        let (v, _) = self.comm.recv_vec::<T>(root, SCATTER_TAG)?;
        if v.len() != region.count() {
            return Err(Error::CollectiveMismatch(format!(
                "{OP}: {root} sent {} points for this rank's {} inner points",
                v.len(),
                region.count()
            )));
        }
        local.set_region(&region, &v)?;
        Ok(())
    }

    fn check_root(&self, root: Rank, op: &'static str) -> Result<()> {
        let ok = match root {
            Rank::Host => self.comm.has_host(),
            Rank::Node(r) => r < self.cart.size(),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidRank {
                rank: root,
                op,
                size: self.cart.size(),
                host: if self.comm.has_host() {
                    " and a host"
                } else {
                    " and no host"
                },
            })
        }
    }

    fn check_local<T: Pod>(&self, local: &Field<T>, op: &'static str) -> Result<()> {
        if local.inner() == &self.inner() {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op,
                what: format!(
                    "the field's inner points {:?} are not this rank's {:?}",
                    local.inner(),
                    self.inner()
                ),
            })
        }
    }
}

fn check_tag(tag: u32, op: &'static str) -> Result<()> {
    if tag < USER_TAG_LIMIT {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            what: format!(
                "tag {tag:#x} is reserved for the grid layer (use tags below {USER_TAG_LIMIT:#x})"
            ),
        })
    }
}
