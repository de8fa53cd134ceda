//! CMMD's global operations (seed 004): broadcasts, synchronisation,
//! reductions, scans and concatenation, over hypercomm's collectives.

use super::*;

// ---------------------------------------------------------- broadcasts

/// CMMD_bc_from_host: the host broadcasts `len` bytes to every node.
///
/// # Safety
/// `buffer` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_bc_from_host(buffer: *mut c_void, len: c_int) {
    guard(LIB, "CMMD_bc_from_host", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, len as i64) }?;
        world()?.bcast(b, Rank::Host).map_err(err)
    })
}

/// CMMD_receive_bc_from_host: a node's half of CMMD_bc_from_host (the same
/// length).
///
/// # Safety
/// `buffer` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_receive_bc_from_host(buffer: *mut c_void, len: c_int) {
    guard(LIB, "CMMD_receive_bc_from_host", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, len as i64) }?;
        world()?.bcast(b, Rank::Host).map_err(err)
    })
}

/// CMMD_distrib_to_nodes: the host sends element i (`elem_length` bytes)
/// of `buffer` to node i.
///
/// # Safety
/// `buffer` holds one element per node.
#[no_mangle]
pub unsafe extern "C" fn CMMD_distrib_to_nodes(buffer: *mut c_void, elem_length: c_int) {
    guard(LIB, "CMMD_distrib_to_nodes", || {
        let w = world()?;
        let n = w.size();
        // SAFETY: the caller's contract.
        let b = unsafe { bytes(buffer, elem_length as i64 * n as i64) }?;
        w.scatterv(b, &vec![elem_length as usize; n], Rank::Host)
            .map(|_| ())
            .map_err(err)
    })
}

/// CMMD_receive_element_from_host: a node's element of
/// CMMD_distrib_to_nodes, into a buffer of `length` bytes.
///
/// # Safety
/// `buffer` is valid for `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_receive_element_from_host(buffer: *mut c_void, length: c_int) {
    guard(LIB, "CMMD_receive_element_from_host", || {
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, length as i64) }?;
        let mine: Vec<u8> = world()?.scatterv(&[], &[], Rank::Host).map_err(err)?;
        if mine.len() > b.len() {
            return Err(format!(
                "the element has {} bytes but the buffer {}",
                mine.len(),
                b.len()
            ));
        }
        b[..mine.len()].copy_from_slice(&mine);
        Ok(())
    })
}

// ------------------------------------------------------ synchronisation

/// CMMD_sync_host_with_nodes: the host's half of a host and nodes barrier.
#[no_mangle]
pub extern "C" fn CMMD_sync_host_with_nodes() {
    guard(LIB, "CMMD_sync_host_with_nodes", || {
        world()?.barrier_with_host().map_err(err)
    })
}

/// CMMD_sync_with_host: a node's half of the host and nodes barrier.
#[no_mangle]
pub extern "C" fn CMMD_sync_with_host() {
    guard(LIB, "CMMD_sync_with_host", || {
        world()?.barrier_with_host().map_err(err)
    })
}

/// CMMD_sync_with_nodes: a barrier of the nodes.
#[no_mangle]
pub extern "C" fn CMMD_sync_with_nodes() {
    guard(LIB, "CMMD_sync_with_nodes", || {
        world()?.barrier().map_err(err)
    })
}

/// CMMD_set_global_or: contribute `value` (0 or not) to the asynchronous
/// global OR.
#[no_mangle]
pub extern "C" fn CMMD_set_global_or(value: c_int) {
    guard(LIB, "CMMD_set_global_or", || {
        world()?.set_global_or(value != 0);
        Ok(())
    })
}

/// CMMD_get_global_or: the current global OR (1 or 0).
#[no_mangle]
pub extern "C" fn CMMD_get_global_or() -> c_int {
    guard(LIB, "CMMD_get_global_or", || {
        Ok(world()?.get_global_or() as c_int)
    })
}

// ------------------------------------------ reductions, scans, concat

/// The combiners of `cmmd.h`.
fn combiner(c: c_int, ty: &str) -> CResult<OpCode> {
    let (op, ok) = match c {
        0 => (OpCode::Sum, ty != "uint"),
        1 => (OpCode::Sum, ty == "uint"),
        2 => (OpCode::Max, ty != "uint"),
        3 => (OpCode::Max, ty == "uint"),
        4 => (OpCode::Min, ty != "uint"),
        5 => (OpCode::Min, ty == "uint"),
        6 => (OpCode::Or, ty == "int" || ty == "uint"),
        7 => (OpCode::Xor, ty == "int" || ty == "uint"),
        8 => (OpCode::And, ty == "int" || ty == "uint"),
        _ => (OpCode::Sum, false),
    };
    if ok {
        Ok(op)
    } else {
        Err(format!("combiner {c} is not allowed for {ty} operands"))
    }
}

fn reduce_value<T: bytemuck::Pod>(v: T, ty: Ty, op: OpCode, to: To) -> CResult<T> {
    let w = world()?;
    let mut b = bytemuck::bytes_of(&v).to_vec();
    reduce::reduce(&w, &mut b, ty, op, to)?;
    Ok(bytemuck::pod_read_unaligned(&b))
}

/// CMMD reduce_to_host / reduce_from_nodes: the result on the host and on
/// every node.
fn reduce_with_host<T: bytemuck::Pod>(v: T, ty: Ty, op: OpCode) -> CResult<T> {
    reduce_value(v, ty, op, To::HostAndNodes)
}

macro_rules! reductions {
    ($($t:ty, $ret:ty, $ty:expr, $name:literal, $reduce:ident, $from:ident, $to:ident, $scan:ident;)*) => {$(
        #[doc = concat!("CMMD_reduce_", $name, ": the reduction over the nodes, returned to every node.")]
        #[no_mangle]
        pub extern "C" fn $reduce(value: $t, combiner: c_int) -> $ret {
            guard(LIB, concat!("CMMD_reduce_", $name), || {
                let op = self::combiner(combiner, $name)?;
                reduce_value(value, $ty, op, To::All).map(|v| v as $ret)
            })
        }
        #[doc = concat!("CMMD_reduce_from_nodes_", $name, ": the host's half of a reduction to the host (its value does not contribute).")]
        #[no_mangle]
        pub extern "C" fn $from(value: $t, combiner: c_int) -> $ret {
            guard(LIB, concat!("CMMD_reduce_from_nodes_", $name), || {
                let op = self::combiner(combiner, $name)?;
                reduce_with_host(value, $ty, op).map(|v| v as $ret)
            })
        }
        #[doc = concat!("CMMD_reduce_to_host_", $name, ": a node's half of a reduction to the host; the result is returned to every node too.")]
        #[no_mangle]
        pub extern "C" fn $to(value: $t, combiner: c_int) -> $ret {
            guard(LIB, concat!("CMMD_reduce_to_host_", $name), || {
                let op = self::combiner(combiner, $name)?;
                reduce_with_host(value, $ty, op).map(|v| v as $ret)
            })
        }
        #[doc = concat!("CMMD_scan_", $name, ": a scan over the nodes (direction 0 upward / 1 downward; smode 0 none, 1 segment bit, 2 start bit; inclusion 0 inclusive / 1 exclusive).")]
        #[no_mangle]
        pub extern "C" fn $scan(value: $t, combiner: c_int, direction: c_int, smode: c_int, sbit: c_int, inclusion: c_int) -> $ret {
            guard(LIB, concat!("CMMD_scan_", $name), || {
                let op = self::combiner(combiner, $name)?;
                let how = scan(direction, smode, sbit, inclusion)?;
                let w = world()?;
                scan_value(&w, value, op, how, $name).map(|v| v as $ret)
            })
        }
    )*};
}

fn scan(direction: c_int, smode: c_int, sbit: c_int, inclusion: c_int) -> CResult<Scan> {
    Ok(Scan {
        direction: match direction {
            0 => Direction::Upward,
            1 => Direction::Downward,
            d => return Err(format!("direction {d} is not CMMD_upward or CMMD_downward")),
        },
        inclusion: match inclusion {
            0 => Inclusion::Inclusive,
            1 => Inclusion::Exclusive,
            i => {
                return Err(format!(
                    "inclusion {i} is not CMMD_inclusive or CMMD_exclusive"
                ))
            }
        },
        segmentation: match smode {
            0 => Segmentation::None,
            1 => Segmentation::SegmentBit,
            2 => Segmentation::StartBit,
            s => {
                return Err(format!(
                    "smode {s} is not CMMD_none, CMMD_segment_bit or CMMD_start_bit"
                ))
            }
        },
        bit: sbit != 0,
    })
}

trait ScanValue: Sized {
    fn go(self, w: &Comm, op: OpCode, how: Scan) -> CResult<Self>;
}
impl ScanValue for i32 {
    fn go(self, w: &Comm, op: OpCode, how: Scan) -> CResult<Self> {
        reduce::scan_int(w, self, op, how)
    }
}
impl ScanValue for u32 {
    fn go(self, w: &Comm, op: OpCode, how: Scan) -> CResult<Self> {
        reduce::scan_int(w, self, op, how)
    }
}
impl ScanValue for f32 {
    fn go(self, w: &Comm, op: OpCode, how: Scan) -> CResult<Self> {
        reduce::scan_one(w, self, op, how)
    }
}
impl ScanValue for f64 {
    fn go(self, w: &Comm, op: OpCode, how: Scan) -> CResult<Self> {
        reduce::scan_one(w, self, op, how)
    }
}

fn scan_value<T: ScanValue>(w: &Comm, v: T, op: OpCode, how: Scan, ty: &str) -> CResult<T> {
    if (ty == "float" || ty == "double")
        && how.segmentation == Segmentation::StartBit
        && how.inclusion == Inclusion::Exclusive
    {
        return Err("a start-bit exclusive scan of floating-point values is illegal".into());
    }
    v.go(w, op, how)
}

reductions! {
    c_int, c_int, Ty::I32, "int", CMMD_reduce_int, CMMD_reduce_from_nodes_int, CMMD_reduce_to_host_int, CMMD_scan_int;
    c_uint, c_uint, Ty::U32, "uint", CMMD_reduce_uint, CMMD_reduce_from_nodes_uint, CMMD_reduce_to_host_uint, CMMD_scan_uint;
    f32, f64, Ty::F32, "float", CMMD_reduce_float, CMMD_reduce_from_nodes_float, CMMD_reduce_to_host_float, CMMD_scan_float;
    f64, f64, Ty::F64, "double", CMMD_reduce_double, CMMD_reduce_from_nodes_double, CMMD_reduce_to_host_double, CMMD_scan_double;
}

/// CMMD_concat_with_nodes: every node's element, in node order, into every
/// node's `buffer`.
///
/// # Safety
/// `element` holds `elem_length` bytes, `buffer` one element per node.
#[no_mangle]
pub unsafe extern "C" fn CMMD_concat_with_nodes(
    element: *const c_void,
    buffer: *mut c_void,
    elem_length: c_int,
) {
    guard(LIB, "CMMD_concat_with_nodes", || {
        let w = world()?;
        // SAFETY: the caller's contract; copied before the output is taken.
        let e = unsafe { bytes(element, elem_length as i64) }?.to_vec();
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, elem_length as i64 * w.size() as i64) }?;
        w.allgather_into(&e, b).map_err(err)
    })
}

/// CMMD_gather_from_nodes: the host's half: every node's element, in node
/// order, into `buffer`.
///
/// # Safety
/// `buffer` holds one element per node.
#[no_mangle]
pub unsafe extern "C" fn CMMD_gather_from_nodes(buffer: *mut c_void, elem_length: c_int) {
    guard(LIB, "CMMD_gather_from_nodes", || {
        let w = world()?;
        // SAFETY: the caller's contract.
        let b = unsafe { bytes_mut(buffer, elem_length as i64 * w.size() as i64) }?;
        w.gather_into(&[], b, Rank::Host).map_err(err)
    })
}

/// CMMD_concat_elements_to_host: a node's half of CMMD_gather_from_nodes.
///
/// # Safety
/// `element` holds `elem_length` bytes.
#[no_mangle]
pub unsafe extern "C" fn CMMD_concat_elements_to_host(element: *const c_void, elem_length: c_int) {
    guard(LIB, "CMMD_concat_elements_to_host", || {
        // SAFETY: the caller's contract.
        let e = unsafe { bytes(element, elem_length as i64) }?;
        world()?.gather_into(e, &mut [], Rank::Host).map_err(err)
    })
}
