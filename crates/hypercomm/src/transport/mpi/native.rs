//! The MPI library's own collectives ([`Native`]): `MPI_Barrier`,
//! `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`, `MPI_Allgather` and
//! `MPI_Alltoall` on a communicator of the participants, made once per
//! group with `MPI_Comm_create_group` (collective over the participants
//! only) and kept. The world's participants get one of their own too, not
//! the duplicate that carries our frames: that one has our wildcard
//! receives posted, and Open MPI compares every incoming fragment of a
//! collective with each of them (about 380 instructions a fragment with
//! 16 posted, BENCHMARKS.md).

use super::sys::{self, Handle};
use super::MpiEndpoint;
use crate::error::{Error, Result};
use crate::transport::native::{Native, NativeOp, NativeReduce, NativeType};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_int;

/// The library's communicators of the groups seen so far.
#[derive(Default)]
pub(crate) struct Natives {
    comms: RefCell<HashMap<u64, Handle>>,
    /// The last one used, by key: a program's collectives mostly run on
    /// one communicator, and this spares the lookup.
    last: Cell<Option<(u64, Handle)>>,
}

fn ty_code(t: NativeType) -> c_int {
    match t {
        NativeType::U8 => 0,
        NativeType::I8 => 1,
        NativeType::U16 => 2,
        NativeType::I16 => 3,
        NativeType::U32 => 4,
        NativeType::I32 => 5,
        NativeType::U64 => 6,
        NativeType::I64 => 7,
        NativeType::F32 => 8,
        NativeType::F64 => 9,
    }
}

fn op_code(o: NativeReduce) -> c_int {
    match o {
        NativeReduce::Sum => 0,
        NativeReduce::Prod => 1,
        NativeReduce::Min => 2,
        NativeReduce::Max => 3,
        NativeReduce::BitAnd => 4,
        NativeReduce::BitOr => 5,
        NativeReduce::BitXor => 6,
        NativeReduce::LogicalAnd => 7,
        NativeReduce::LogicalOr => 8,
    }
}

/// Element count of `bytes` bytes of `t`, as MPI's `int`.
fn count(bytes: usize, t: NativeType, what: &str) -> Result<c_int> {
    let n = bytes / t.size();
    c_int::try_from(n).map_err(|_| Error::InvalidArgument {
        op: "native collective",
        what: format!("{what}: {n} elements is more than MPI's int count allows"),
    })
}

impl MpiEndpoint {
    /// The library's communicator for `members` (made on first use).
    fn group_comm(&self, key: u64, members: &[u32]) -> Result<Handle> {
        if let Some((k, c)) = self.native.last.get() {
            if k == key {
                return Ok(c);
            }
        }
        if let Some(&c) = self.native.comms.borrow().get(&key) {
            self.native.last.set(Some((key, c)));
            return Ok(c);
        }
        let ranks: Vec<c_int> = members.iter().map(|&m| m as c_int).collect();
        let mut c = Handle::zeroed();
        // Tags 1 and 2 carry our frames on the parent communicator.
        let tag = 100 + (key % 30_000) as c_int;
        {
            let _g = sys::lock();
            // SAFETY: a valid communicator, a list of its ranks that
            // includes ours, and storage for the new handle.
            let code = unsafe {
                sys::hc_comm_create_group(
                    self.comm().ptr(),
                    ranks.len() as c_int,
                    ranks.as_ptr(),
                    tag,
                    c.mut_ptr(),
                )
            };
            sys::check(code, "MPI_Comm_create_group")?;
        }
        self.native.comms.borrow_mut().insert(key, c);
        self.native.last.set(Some((key, c)));
        Ok(c)
    }

    /// Free the group communicators (before finalising).
    pub(crate) fn free_natives(&self) {
        let _g = sys::lock();
        self.native.last.set(None);
        for (_, mut c) in self.native.comms.borrow_mut().drain() {
            // SAFETY: a communicator made by `group_comm`, freed once.
            unsafe { sys::hc_comm_free(c.mut_ptr()) };
        }
    }
}

impl Native for MpiEndpoint {
    fn library(&self) -> String {
        let v = sys::library_version();
        v.lines().next().unwrap_or("MPI").trim().to_string()
    }

    fn startup(&self) -> f64 {
        // An MPI library's own start-up per message (shared memory or
        // RDMA), without our frames and matching on top.
        1e-6
    }

    fn run(&self, key: u64, members: &[u32], op: NativeOp<'_>) -> Result<()> {
        let comm = self.group_comm(key, members)?;
        let c = comm.ptr();
        let _g = sys::lock();
        // SAFETY: in every arm, the buffers are live slices of the stated
        // lengths for the duration of the blocking call; counts are checked
        // to fit an int; `c` is a valid communicator including us.
        let (code, what) = unsafe {
            match op {
                NativeOp::Barrier => (sys::hc_barrier(c), "MPI_Barrier"),
                NativeOp::Bcast { buf, ty, root } => (
                    sys::hc_bcast(
                        buf.as_mut_ptr().cast(),
                        count(buf.len(), ty, "bcast")?,
                        ty_code(ty),
                        root as c_int,
                        c,
                    ),
                    "MPI_Bcast",
                ),
                NativeOp::Reduce {
                    send,
                    recv,
                    ty,
                    op,
                    root,
                } => {
                    let recv_ptr = recv.map_or(std::ptr::null_mut(), |r| r.as_mut_ptr().cast());
                    (
                        sys::hc_reduce(
                            send.as_ptr().cast(),
                            recv_ptr,
                            count(send.len(), ty, "reduce")?,
                            ty_code(ty),
                            op_code(op),
                            root as c_int,
                            c,
                        ),
                        "MPI_Reduce",
                    )
                }
                NativeOp::Allreduce { send, recv, ty, op } => (
                    sys::hc_allreduce(
                        send.as_ptr().cast(),
                        recv.as_mut_ptr().cast(),
                        count(send.len(), ty, "allreduce")?,
                        ty_code(ty),
                        op_code(op),
                        c,
                    ),
                    "MPI_Allreduce",
                ),
                NativeOp::Allgather { send, recv, ty } => (
                    sys::hc_allgather(
                        send.as_ptr().cast(),
                        recv.as_mut_ptr().cast(),
                        count(send.len(), ty, "allgather")?,
                        ty_code(ty),
                        c,
                    ),
                    "MPI_Allgather",
                ),
                NativeOp::Alltoall { send, recv, ty } => (
                    sys::hc_alltoall(
                        send.as_ptr().cast(),
                        recv.as_mut_ptr().cast(),
                        count(send.len() / members.len().max(1), ty, "alltoall")?,
                        ty_code(ty),
                        c,
                    ),
                    "MPI_Alltoall",
                ),
            }
        };
        sys::check(code, what)
    }
}
