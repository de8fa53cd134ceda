//! Grid functions: arrays indexed by global indices (SUPRENUM section 2.1).
//!
//! A [`Field`] stores the points of a [`Region`] (its *storage*, SUPRENUM's
//! `idl:idx, jdl:jdx, kdl:kdx`) with axis 0 fastest, as a Fortran
//! `u(idl:idx, jdl:jdx)` is, and knows which of them are its *inner*
//! points (`il:ix, jl:jx`): those this rank updates. Indices are global and
//! signed, so a halo below the first point of the domain has index −1.
//! Regions are half-open (`lo..hi`), where SUPRENUM's bounds are inclusive.
//!
//! Not done yet: 1-D grid functions (a 2-D grid one point across serves);
//! views of a region as rows (loops use [`Field::offset`] and
//! [`Field::strides`] or global indices).

use crate::error::{Error, Result};
use bytemuck::Pod;
use std::ops::{Index, IndexMut, Range};

/// A box of global indices, half-open on each of three axes (a 2-D region
/// has `0..1` on axis 2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Region {
    /// The lowest index on each axis.
    pub lo: [isize; 3],
    /// One past the highest index on each axis.
    pub hi: [isize; 3],
}

impl Region {
    /// A region from ranges, one per axis used (missing axes are `0..1`;
    /// an empty range stays empty).
    ///
    /// # Panics
    /// With more than three ranges.
    pub fn new(ranges: &[Range<isize>]) -> Region {
        assert!(ranges.len() <= 3, "at most three axes");
        let mut r = Region {
            lo: [0; 3],
            hi: [1; 3],
        };
        for (a, x) in ranges.iter().enumerate() {
            r.lo[a] = x.start;
            r.hi[a] = x.end.max(x.start);
        }
        r
    }

    /// The range of axis `a`.
    pub fn range(&self, a: usize) -> Range<isize> {
        self.lo[a]..self.hi[a]
    }

    /// The number of indices on axis `a`.
    pub fn len(&self, a: usize) -> usize {
        (self.hi[a] - self.lo[a]).max(0) as usize
    }

    /// The number of points.
    pub fn count(&self) -> usize {
        (0..3).map(|a| self.len(a)).product()
    }

    /// Whether it has no point.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Whether `p` lies inside.
    pub fn contains(&self, p: [isize; 3]) -> bool {
        (0..3).all(|a| self.lo[a] <= p[a] && p[a] < self.hi[a])
    }

    /// Whether `other` lies entirely inside (an empty region always does).
    pub fn covers(&self, other: &Region) -> bool {
        other.is_empty() || (0..3).all(|a| self.lo[a] <= other.lo[a] && other.hi[a] <= self.hi[a])
    }

    /// Every point, axis 0 fastest.
    pub fn points(&self) -> impl Iterator<Item = [isize; 3]> {
        let r = self.clone();
        (r.lo[2]..r.hi[2]).flat_map(move |k| {
            let r = r.clone();
            (r.lo[1]..r.hi[1]).flat_map(move |j| (r.lo[0]..r.hi[0]).map(move |i| [i, j, k]))
        })
    }
}

/// A grid function: values of type `T` at the points of a storage region,
/// of which the inner region is this rank's own. Indexed by global indices
/// (`u[[i, j]]` in 2-D, `u[[i, j, k]]` in 3-D); as with a slice, indexing a
/// point that is not stored panics, and [`Field::get`] returns `None`.
#[derive(Clone, PartialEq)]
pub struct Field<T> {
    data: Vec<T>,
    storage: Region,
    inner: Region,
    ndim: usize,
}

impl<T: Pod> Field<T> {
    /// A field of zeros on `storage` whose inner points are `inner` (which
    /// must lie inside `storage`), with `ndim` axes (2 or 3).
    pub fn new(storage: Region, inner: Region, ndim: usize) -> Result<Field<T>> {
        if !storage.covers(&inner) || !(2..=3).contains(&ndim) {
            return Err(Error::InvalidArgument {
                op: "Field::new",
                what: format!(
                    "inner points {inner:?} must lie in the storage {storage:?}, and a field has 2 or 3 axes (not {ndim})"
                ),
            });
        }
        Ok(Field::from_parts(storage, inner, ndim))
    }

    /// A field of zeros (the arguments are known to fit).
    pub(super) fn from_parts(storage: Region, inner: Region, ndim: usize) -> Field<T> {
        Field {
            data: vec![T::zeroed(); storage.count()],
            storage,
            inner,
            ndim,
        }
    }

    /// A field whose storage and inner points are both `region` (a whole
    /// global array, as a host keeps one).
    pub fn whole(region: Region, ndim: usize) -> Field<T> {
        Field::from_parts(region.clone(), region, ndim.clamp(2, 3))
    }

    /// Every stored value, axis 0 fastest.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// Every stored value, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The stored points.
    pub fn storage(&self) -> &Region {
        &self.storage
    }

    /// This rank's own points.
    pub fn inner(&self) -> &Region {
        &self.inner
    }

    /// The number of axes (2 or 3).
    pub fn ndim(&self) -> usize {
        self.ndim
    }

    /// The position in [`Field::as_slice`] of global point `p` (which must be
    /// stored).
    #[inline]
    pub fn offset(&self, p: [isize; 3]) -> usize {
        debug_assert!(
            self.storage.contains(p),
            "{p:?} is not stored in {:?}",
            self.storage
        );
        let s = &self.storage;
        let e0 = (s.hi[0] - s.lo[0]) as usize;
        let e1 = (s.hi[1] - s.lo[1]) as usize;
        (p[0] - s.lo[0]) as usize
            + e0 * ((p[1] - s.lo[1]) as usize + e1 * (p[2] - s.lo[2]) as usize)
    }

    /// How far apart consecutive indices of each axis are in
    /// [`Field::as_slice`] (1 for axis 0).
    pub fn strides(&self) -> [usize; 3] {
        let e0 = self.storage.len(0);
        [1, e0, e0 * self.storage.len(1)]
    }

    /// The value at global point `p`, or `None` if it is not stored.
    pub fn get(&self, p: [isize; 3]) -> Option<&T> {
        self.storage.contains(p).then(|| &self.data[self.offset(p)])
    }

    /// Set every stored value (halo included) to `v`.
    pub fn fill(&mut self, v: T) {
        self.data.fill(v);
    }

    /// Set every stored point to `f(point)`.
    pub fn fill_with(&mut self, mut f: impl FnMut([isize; 3]) -> T) {
        for (d, p) in self.data.iter_mut().zip(self.storage.points()) {
            *d = f(p);
        }
    }

    fn check_stored(&self, region: &Region, op: &'static str) -> Result<()> {
        if self.storage.covers(region) {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op,
                what: format!("{region:?} is not stored in {:?}", self.storage),
            })
        }
    }

    /// The values of `region` (inside the storage), axis 0 fastest.
    pub fn copy_region(&self, region: &Region) -> Result<Vec<T>> {
        self.check_stored(region, "Field::copy_region")?;
        let mut out = Vec::with_capacity(region.count());
        if region.is_empty() {
            return Ok(out);
        }
        for k in region.range(2) {
            for j in region.range(1) {
                let a = self.offset([region.lo[0], j, k]);
                out.extend_from_slice(&self.data[a..a + region.len(0)]);
            }
        }
        Ok(out)
    }

    /// Write `values` (axis 0 fastest, one per point) into `region` (inside
    /// the storage).
    pub fn set_region(&mut self, region: &Region, values: &[T]) -> Result<()> {
        self.check_stored(region, "Field::set_region")?;
        if values.len() != region.count() {
            return Err(Error::InvalidArgument {
                op: "Field::set_region",
                what: format!(
                    "{} values for the {} points of {region:?}",
                    values.len(),
                    region.count()
                ),
            });
        }
        if region.is_empty() {
            return Ok(());
        }
        let n0 = region.len(0);
        let mut at = 0;
        for k in region.range(2) {
            for j in region.range(1) {
                let a = self.offset([region.lo[0], j, k]);
                self.data[a..a + n0].copy_from_slice(&values[at..at + n0]);
                at += n0;
            }
        }
        Ok(())
    }
}

impl<T: Pod> Index<[isize; 3]> for Field<T> {
    type Output = T;
    #[inline]
    fn index(&self, p: [isize; 3]) -> &T {
        assert!(
            self.storage.contains(p),
            "{p:?} is not stored in {:?}",
            self.storage
        );
        &self.data[self.offset(p)]
    }
}

impl<T: Pod> IndexMut<[isize; 3]> for Field<T> {
    #[inline]
    fn index_mut(&mut self, p: [isize; 3]) -> &mut T {
        assert!(
            self.storage.contains(p),
            "{p:?} is not stored in {:?}",
            self.storage
        );
        let o = self.offset(p);
        &mut self.data[o]
    }
}

impl<T: Pod> Index<[isize; 2]> for Field<T> {
    type Output = T;
    #[inline]
    fn index(&self, p: [isize; 2]) -> &T {
        debug_assert!(self.ndim < 3, "a 3-D field indexed with two indices");
        &self[[p[0], p[1], 0]]
    }
}

impl<T: Pod> IndexMut<[isize; 2]> for Field<T> {
    #[inline]
    fn index_mut(&mut self, p: [isize; 2]) -> &mut T {
        debug_assert!(self.ndim < 3, "a 3-D field indexed with two indices");
        &mut self[[p[0], p[1], 0]]
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Field<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Field")
            .field("type", &std::any::type_name::<T>())
            .field("storage", &self.storage)
            .field("inner", &self.inner)
            .finish()
    }
}

/// A grid function of any element type, as the halo exchange sees it: its
/// storage geometry and its values as bytes. Implemented by every
/// [`Field`]; lets one exchange carry fields of different types.
pub trait FieldData {
    /// The stored points.
    fn storage(&self) -> &Region;
    /// The inner points.
    fn inner(&self) -> &Region;
    /// The element type's name (for checks and messages).
    fn type_name(&self) -> &'static str;
    /// The element size in bytes.
    fn elem_size(&self) -> usize;
    /// The stored values as bytes (storage order).
    fn as_bytes_mut(&mut self) -> &mut [u8];
    /// Append the elements at the given runs to `out` (as bytes).
    fn pack(&self, runs: &[Run], out: &mut Vec<u8>);
    /// Write the elements at the given runs from `inp` (as bytes); returns
    /// the bytes used.
    fn unpack(&mut self, runs: &[Run], inp: &[u8]) -> usize;
}

/// Elements of a field's storage at `start, start + step, …` (`len` of
/// them), positions in [`Field::as_slice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The first position.
    pub start: usize,
    /// How many elements.
    pub len: usize,
    /// The distance between them (1: contiguous).
    pub step: usize,
}

impl<T: Pod> FieldData for Field<T> {
    fn storage(&self) -> &Region {
        &self.storage
    }
    fn inner(&self) -> &Region {
        &self.inner
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
    fn elem_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.data)
    }
    fn pack(&self, runs: &[Run], out: &mut Vec<u8>) {
        // Strided elements gather into an aligned block on the stack, so
        // that the message grows by one copy per block, not per element.
        const BLOCK: usize = 64;
        let mut tmp = [T::zeroed(); BLOCK];
        for r in runs {
            if r.len == 0 {
                continue;
            }
            if r.step == 1 {
                out.extend_from_slice(bytemuck::cast_slice(&self.data[r.start..r.start + r.len]));
                continue;
            }
            let src = &self.data[r.start..=r.start + (r.len - 1) * r.step];
            let mut it = src.iter().step_by(r.step);
            loop {
                let mut k = 0;
                for (t, v) in tmp.iter_mut().zip(it.by_ref()) {
                    *t = *v;
                    k += 1;
                }
                if k == 0 {
                    break;
                }
                out.extend_from_slice(bytemuck::cast_slice(&tmp[..k]));
            }
        }
    }
    fn unpack(&mut self, runs: &[Run], inp: &[u8]) -> usize {
        let sz = std::mem::size_of::<T>();
        let mut at = 0;
        for r in runs {
            if r.len == 0 {
                continue;
            }
            let bytes = &inp[at..at + r.len * sz];
            at += r.len * sz;
            if r.step == 1 {
                bytemuck::cast_slice_mut::<T, u8>(&mut self.data[r.start..r.start + r.len])
                    .copy_from_slice(bytes);
                continue;
            }
            let dst = &mut self.data[r.start..=r.start + (r.len - 1) * r.step];
            match bytemuck::try_cast_slice::<u8, T>(bytes) {
                // The message happens to be aligned for T: typed loads.
                Ok(src) => {
                    for (d, v) in dst.iter_mut().step_by(r.step).zip(src) {
                        *d = *v;
                    }
                }
                Err(_) => {
                    for (d, b) in dst.iter_mut().step_by(r.step).zip(bytes.chunks_exact(sz)) {
                        *d = bytemuck::pod_read_unaligned(b);
                    }
                }
            }
        }
        at
    }
}
