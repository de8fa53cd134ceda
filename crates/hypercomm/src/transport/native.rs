//! A transport's own collectives: what a transport over a library that has
//! tuned collectives (MPI) offers the collective layer, in terms that know
//! nothing of communicators or operators.
//!
//! The collective layer decides whether to use them (a communicator's
//! option and selection, `collective/native.rs`), maps its element types
//! and operators onto [`NativeType`] and [`NativeReduce`], and calls
//! [`Native::run`] with the participants as endpoints.

use crate::error::Result;

/// Element types a native collective can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeType {
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl NativeType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            NativeType::U8 | NativeType::I8 => 1,
            NativeType::U16 | NativeType::I16 => 2,
            NativeType::U32 | NativeType::I32 | NativeType::F32 => 4,
            NativeType::U64 | NativeType::I64 | NativeType::F64 => 8,
        }
    }
}

/// Reduction operators a native collective can apply (wrapping integer
/// arithmetic; logical operators give 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeReduce {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    BitAnd,
    /// Bitwise or.
    BitOr,
    /// Bitwise exclusive or.
    BitXor,
    /// Logical and.
    LogicalAnd,
    /// Logical or.
    LogicalOr,
}

/// One native collective call; buffers are bytes of `ty` elements, roots
/// are participant indices.
pub enum NativeOp<'a> {
    /// Every participant waits for all.
    Barrier,
    /// `buf` from `root` to all.
    Bcast {
        /// In at the root, out elsewhere.
        buf: &'a mut [u8],
        /// Element type.
        ty: NativeType,
        /// Root participant.
        root: usize,
    },
    /// Combine `send` of all into `recv` at `root` (`None` elsewhere).
    Reduce {
        /// This participant's contribution.
        send: &'a [u8],
        /// The result, at the root.
        recv: Option<&'a mut [u8]>,
        /// Element type.
        ty: NativeType,
        /// Operator.
        op: NativeReduce,
        /// Root participant.
        root: usize,
    },
    /// Combine `send` of all into every `recv`.
    Allreduce {
        /// This participant's contribution.
        send: &'a [u8],
        /// The result.
        recv: &'a mut [u8],
        /// Element type.
        ty: NativeType,
        /// Operator.
        op: NativeReduce,
    },
    /// Every participant's `send` (same length) into every `recv`, in
    /// participant order.
    Allgather {
        /// This participant's block.
        send: &'a [u8],
        /// All blocks.
        recv: &'a mut [u8],
        /// Element type.
        ty: NativeType,
    },
    /// Block `j` of `send` to participant `j`; block `i` of `recv` from `i`.
    Alltoall {
        /// Outgoing blocks.
        send: &'a [u8],
        /// Incoming blocks.
        recv: &'a mut [u8],
        /// Element type.
        ty: NativeType,
    },
}

/// A transport's own collectives.
pub trait Native {
    /// What the library is called, for messages and reports (e.g.
    /// "Open MPI v4.1.4").
    fn library(&self) -> String;
    /// Start-up cost of one message inside the library, seconds (the
    /// cost model's ts for its collectives).
    fn startup(&self) -> f64;
    /// Run `op` among `members` (their endpoints, in participant order;
    /// this endpoint is one of them). `key` names the group for the
    /// transport's cache: the same for the same members on every member
    /// (a communicator's context).
    fn run(&self, key: u64, members: &[u32], op: NativeOp<'_>) -> Result<()>;
}
