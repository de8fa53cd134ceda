//! Element-wise reductions over C buffers for PICL's g*0 routines, CMMD's
//! reduce and scan calls and the iPSC GOP, dispatched on a type code.

use crate::state::{err, CResult};
use hypercomm::collective::{
    BitAnd, BitOr, BitXor, Element, Integer, Max, Min, Number, Operator, Prod, Scan, Sum, UserOp,
};
use hypercomm::{Comm, Rank};

/// The operators the seeds name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpCode {
    Sum,
    Prod,
    Max,
    Min,
    And,
    Or,
    Xor,
}

/// PICL's data types (0 char … 5 double) as Rust element types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    I8,
    I16,
    I32,
    Long,
    U32,
    F32,
    F64,
}

impl Ty {
    /// PICL's datatype code.
    pub(crate) fn picl(code: i32) -> CResult<Ty> {
        Ok(match code {
            0 => Ty::I8,
            1 => Ty::I16,
            2 => Ty::I32,
            3 => Ty::Long,
            4 => Ty::F32,
            5 => Ty::F64,
            _ => {
                return Err(format!(
                    "datatype {code} is not one of 0 (char) … 5 (double)"
                ))
            }
        })
    }
    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Ty::I8 => 1,
            Ty::I16 => 2,
            Ty::I32 | Ty::U32 | Ty::F32 => 4,
            Ty::Long => std::mem::size_of::<std::ffi::c_long>(),
            Ty::F64 => 8,
        }
    }
    fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
}

/// Where the result goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum To {
    /// Every node (allreduce).
    All,
    /// One root (a node or the host); other ranks' buffers are left as
    /// they were.
    Root(Rank),
    /// Every node and the host (CMMD reduce_to_host / reduce_from_nodes).
    HostAndNodes,
}

/// Reduce `buf` (its bytes, elements of `ty`) in place with `op`.
pub(crate) fn reduce(comm: &Comm, buf: &mut [u8], ty: Ty, op: OpCode, to: To) -> CResult<()> {
    if ty.float() && matches!(op, OpCode::And | OpCode::Or | OpCode::Xor) {
        return Err(format!("{op:?} is not defined for floating-point data"));
    }
    match ty {
        Ty::I8 => int::<i8>(comm, buf, op, to),
        Ty::I16 => int::<i16>(comm, buf, op, to),
        Ty::I32 => int::<i32>(comm, buf, op, to),
        Ty::Long => int::<std::ffi::c_long>(comm, buf, op, to),
        Ty::U32 => int::<u32>(comm, buf, op, to),
        Ty::F32 => num::<f32>(comm, buf, op, to),
        Ty::F64 => num::<f64>(comm, buf, op, to),
    }
}

fn int<T: Integer>(comm: &Comm, buf: &mut [u8], op: OpCode, to: To) -> CResult<()> {
    match op {
        OpCode::And => run::<T, _>(comm, buf, BitAnd, to),
        OpCode::Or => run::<T, _>(comm, buf, BitOr, to),
        OpCode::Xor => run::<T, _>(comm, buf, BitXor, to),
        _ => num::<T>(comm, buf, op, to),
    }
}

fn num<T: Number>(comm: &Comm, buf: &mut [u8], op: OpCode, to: To) -> CResult<()> {
    match op {
        OpCode::Sum => run::<T, _>(comm, buf, Sum, to),
        OpCode::Prod => run::<T, _>(comm, buf, Prod, to),
        OpCode::Max => run::<T, _>(comm, buf, Max, to),
        OpCode::Min => run::<T, _>(comm, buf, Min, to),
        _ => unreachable!("bit operators are dispatched by `int`"),
    }
}

/// Elements of `T` from bytes (copied: C buffers need not be aligned).
pub(crate) fn elems<T: Element>(b: &[u8]) -> Vec<T> {
    let mut v = vec![T::zeroed(); b.len() / std::mem::size_of::<T>()];
    let n = std::mem::size_of_val(v.as_slice());
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&b[..n]);
    v
}

fn run<T: Element, O: Operator<T> + 'static>(
    comm: &Comm,
    buf: &mut [u8],
    op: O,
    to: To,
) -> CResult<()> {
    let sz = std::mem::size_of::<T>();
    if !buf.len().is_multiple_of(sz) {
        return Err(format!(
            "{} bytes are not a whole number of elements",
            buf.len()
        ));
    }
    let n = buf.len() / sz;
    if let To::HostAndNodes = to {
        let input = if comm.is_host() {
            Vec::new()
        } else {
            elems(buf)
        };
        let r = comm.reduce_to_host_and_nodes(&input, op).map_err(err)?;
        if r.len() != n {
            return Err(format!(
                "{} elements came back where {n} were given",
                r.len()
            ));
        }
        buf.copy_from_slice(bytemuck::cast_slice(&r));
        return Ok(());
    }
    // Short vectors (the common case) go through the stack, and an aligned
    // buffer receives the result directly: no allocation per call.
    let mut stack = [T::zeroed(); 16];
    let heap: Vec<T>;
    let input: &[T] = if comm.is_host() {
        &[]
    } else if n <= stack.len() {
        bytemuck::cast_slice_mut::<T, u8>(&mut stack[..n]).copy_from_slice(buf);
        &stack[..n]
    } else {
        heap = elems(buf);
        &heap
    };
    if let Ok(out) = bytemuck::try_cast_slice_mut::<u8, T>(buf) {
        return match to {
            To::All => comm.allreduce_into(input, out, op).map_err(err),
            To::Root(r) => {
                let o: &mut [T] = if comm.me() == r { out } else { &mut [] };
                comm.reduce_into(input, o, op, r).map_err(err)
            }
            To::HostAndNodes => unreachable!("handled above"),
        };
    }
    let mut out = vec![T::zeroed(); n];
    match to {
        To::All => comm.allreduce_into(input, &mut out, op).map_err(err)?,
        To::Root(r) => {
            let at_root = comm.me() == r;
            let o: &mut [T] = if at_root { &mut out } else { &mut [] };
            comm.reduce_into(input, o, op, r).map_err(err)?;
            if !at_root {
                return Ok(());
            }
        }
        To::HostAndNodes => unreachable!("handled above"),
    }
    buf.copy_from_slice(bytemuck::cast_slice(&out));
    Ok(())
}

/// A user combiner (PICL gcomb0) applied element by element over `buf`.
pub(crate) fn reduce_user(
    comm: &Comm,
    buf: &mut [u8],
    ty: Ty,
    comb: extern "C" fn(*mut u8, *const u8, i32, i32),
    datatype: i32,
    root: Rank,
) -> CResult<()> {
    macro_rules! go {
        ($t:ty) => {{
            let op = UserOp::<$t>::commutative(move |a: $t, b: $t| {
                let mut x = a;
                comb(
                    (&mut x as *mut $t).cast::<u8>(),
                    (&b as *const $t).cast::<u8>(),
                    1,
                    datatype,
                );
                x
            });
            run::<$t, _>(comm, buf, op, To::Root(root))
        }};
    }
    match ty {
        Ty::I8 => go!(i8),
        Ty::I16 => go!(i16),
        Ty::I32 => go!(i32),
        Ty::Long => go!(std::ffi::c_long),
        Ty::U32 => go!(u32),
        Ty::F32 => go!(f32),
        Ty::F64 => go!(f64),
    }
}

/// One value scanned over the nodes (CMMD `scan_<type>`).
pub(crate) fn scan_one<T: Number>(comm: &Comm, v: T, op: OpCode, how: Scan) -> CResult<T> {
    let r = match op {
        OpCode::Sum => comm.scan_with(&[v], Sum, &how),
        OpCode::Prod => comm.scan_with(&[v], Prod, &how),
        OpCode::Max => comm.scan_with(&[v], Max, &how),
        OpCode::Min => comm.scan_with(&[v], Min, &how),
        _ => return Err(format!("{op:?} needs an integer scan")),
    };
    Ok(r.map_err(err)?[0])
}

/// One integer value scanned over the nodes.
pub(crate) fn scan_int<T: Integer>(comm: &Comm, v: T, op: OpCode, how: Scan) -> CResult<T> {
    let r = match op {
        OpCode::And => comm.scan_with(&[v], BitAnd, &how),
        OpCode::Or => comm.scan_with(&[v], BitOr, &how),
        OpCode::Xor => comm.scan_with(&[v], BitXor, &how),
        _ => return scan_one(comm, v, op, how),
    };
    Ok(r.map_err(err)?[0])
}
