//! Buffer casting: element types whose plain-old-data layout `bytemuck`'s
//! derive cannot check.
//!
//! Collectives carry their elements as bytes (`bytemuck::Pod`). For a
//! concrete or packed type the derive proves that; for a generic `repr(C)`
//! struct it cannot, because the padding depends on the parameters. Such a
//! type declares `Pod` here, once per instantiation the library supports,
//! with a compile-time check that it has no padding. This is where the
//! unsafe of buffer casting lives (DESIGN.md, convention 4); the rest of the
//! crate converts buffers with `bytemuck`'s safe casts.
//!
//! Not done yet: `Loc` pairs of other widths (an application's own pair
//! type can be an element through `UserOp` on a `Pod` type of its own).

use bytemuck::{Pod, Zeroable};

/// A value with its location (MPI `MAXLOC`/`MINLOC` pairs): the index is
/// typically the rank or a global position.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[repr(C)]
pub struct Loc<V, I> {
    /// The value compared.
    pub value: V,
    /// Where it came from; ties go to the smaller index.
    pub index: I,
}

macro_rules! pod_locs {
    ($($v:ty, $i:ty);*) => {$(
        const _: () = assert!(
            std::mem::size_of::<Loc<$v, $i>>() == std::mem::size_of::<$v>() + std::mem::size_of::<$i>(),
            "a Loc pair has no padding"
        );
        // SAFETY: both fields are Pod; the repr(C) struct has no padding
        // (checked just above), so every bit pattern, zero included, is a
        // valid value.
        unsafe impl Zeroable for Loc<$v, $i> {}
        // SAFETY: as above; both fields are Copy + 'static, so the pair is.
        unsafe impl Pod for Loc<$v, $i> {}
    )*};
}
pod_locs!(f64, u64; i64, u64; u64, u64; f32, u32; i32, u32; u32, u32);

/// A lifted segmented-scan element (`collective/scan.rs`): the running
/// value and two flags (bit 0: a segment boundary lies within; bit 1: the
/// value is present). Packed, so it is `Pod` without padding for every
/// element type.
#[derive(Clone, Copy)]
#[repr(C, packed)]
pub(crate) struct SegElem<T> {
    pub(crate) tail: T,
    pub(crate) flags: u8,
}

// SAFETY: `SegElem` is `repr(C, packed)`, so it has no padding, and both
// of its fields (a `T: Pod` and a `u8`) are `Pod`: all-zero bytes and any
// other bit pattern are valid values.
unsafe impl<T: Pod> Zeroable for SegElem<T> {}
// SAFETY: as above; `T: Pod` makes it `Copy + 'static`.
unsafe impl<T: Pod> Pod for SegElem<T> {}
