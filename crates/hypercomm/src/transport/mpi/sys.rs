//! The C shim's functions (`shim.c`), declared by hand, and safe wrappers
//! over them.
//!
//! Every call into MPI holds [`lock`], and all of them come from the
//! thread that built the endpoint (a `Comm` is not `Send`); our other
//! threads (the launcher's control connection, output forwarding) never
//! call MPI. So when we initialise MPI we ask for `MPI_THREAD_SINGLE` by
//! default: Open MPI 4 takes its locked paths at any level above that
//! (`opal_set_using_threads` whenever the level provided is not single),
//! which costs about 480 instructions and doubles the time of an 8-byte
//! `MPI_Allreduce` on shared memory (BENCHMARKS.md). A program whose own
//! threads call MPI too sets [`THREAD_VAR`] to the level it needs; a
//! program that initialised MPI itself keeps its level.

use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, MutexGuard};

/// Storage for an MPI handle (`MPI_Comm`, `MPI_Request`): a pointer in
/// Open MPI, an `int` in MPICH; [`init`] checks that it fits.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub(crate) struct Handle([u8; 16]);

impl Handle {
    pub(crate) const fn zeroed() -> Handle {
        Handle([0; 16])
    }
    pub(crate) fn ptr(&self) -> *const c_void {
        self.0.as_ptr().cast()
    }
    pub(crate) fn mut_ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr().cast()
    }
}

extern "C" {
    fn hc_handle_sizes(comm: *mut c_int, request: *mut c_int);
    fn hc_init(want: c_int, provided: *mut c_int, ours: *mut c_int) -> c_int;
    fn hc_finalized() -> c_int;
    fn hc_finalize() -> c_int;
    fn hc_world_dup(out: *mut c_void) -> c_int;
    fn hc_comm_rank(comm: *const c_void, rank: *mut c_int) -> c_int;
    fn hc_comm_size(comm: *const c_void, size: *mut c_int) -> c_int;
    fn hc_job_shape(comm: *const c_void, node_max: *mut c_int, cores: *mut c_int) -> c_int;
    pub(crate) fn hc_comm_create_group(
        comm: *const c_void,
        n: c_int,
        ranks: *const c_int,
        tag: c_int,
        out: *mut c_void,
    ) -> c_int;
    pub(crate) fn hc_comm_free(comm: *mut c_void) -> c_int;
    fn hc_isend(
        buf: *const c_void,
        bytes: c_int,
        dest: c_int,
        tag: c_int,
        comm: *const c_void,
        req: *mut c_void,
    ) -> c_int;
    fn hc_send(
        buf: *const c_void,
        bytes: c_int,
        dest: c_int,
        tag: c_int,
        comm: *const c_void,
    ) -> c_int;
    fn hc_recv_init(
        buf: *mut c_void,
        bytes: c_int,
        tag: c_int,
        comm: *const c_void,
        req: *mut c_void,
    ) -> c_int;
    fn hc_start(req: *mut c_void) -> c_int;
    fn hc_recv(
        buf: *mut c_void,
        bytes: c_int,
        source: c_int,
        tag: c_int,
        comm: *const c_void,
        got: *mut c_int,
    ) -> c_int;
    fn hc_test(
        req: *mut c_void,
        flag: *mut c_int,
        source: *mut c_int,
        tag: *mut c_int,
        bytes: *mut c_int,
    ) -> c_int;
    fn hc_comm_dup(comm: *const c_void, out: *mut c_void) -> c_int;
    fn hc_tag_ub(comm: *const c_void, ub: *mut c_int) -> c_int;
    fn hc_irecv(
        buf: *mut c_void,
        bytes: c_int,
        source: c_int,
        tag: c_int,
        comm: *const c_void,
        req: *mut c_void,
    ) -> c_int;
    fn hc_cancel_recv(
        req: *mut c_void,
        done: *mut c_int,
        source: *mut c_int,
        tag: *mut c_int,
        bytes: *mut c_int,
    ) -> c_int;
    fn hc_cancel(req: *mut c_void) -> c_int;
    fn hc_abort(comm: *const c_void, code: c_int) -> c_int;
    fn hc_error_string(code: c_int, buf: *mut c_char, len: c_int);
    fn hc_library_version(buf: *mut c_char, len: c_int);
    pub(crate) fn hc_allreduce(
        send: *const c_void,
        recv: *mut c_void,
        count: c_int,
        t: c_int,
        o: c_int,
        comm: *const c_void,
    ) -> c_int;
    pub(crate) fn hc_reduce(
        send: *const c_void,
        recv: *mut c_void,
        count: c_int,
        t: c_int,
        o: c_int,
        root: c_int,
        comm: *const c_void,
    ) -> c_int;
    pub(crate) fn hc_bcast(
        buf: *mut c_void,
        count: c_int,
        t: c_int,
        root: c_int,
        comm: *const c_void,
    ) -> c_int;
    pub(crate) fn hc_barrier(comm: *const c_void) -> c_int;
    pub(crate) fn hc_allgather(
        send: *const c_void,
        recv: *mut c_void,
        count: c_int,
        t: c_int,
        comm: *const c_void,
    ) -> c_int;
    pub(crate) fn hc_alltoall(
        send: *const c_void,
        recv: *mut c_void,
        count: c_int,
        t: c_int,
        comm: *const c_void,
    ) -> c_int;
}

static LOCK: Mutex<()> = Mutex::new(());

/// Hold this around every call into MPI.
pub(crate) fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// MPI's words for an error code.
pub(crate) fn error_string(code: c_int) -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the shim writes at most `len` bytes, NUL-terminated.
    unsafe { hc_error_string(code, buf.as_mut_ptr(), buf.len() as c_int) };
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `Ok` for `MPI_SUCCESS`, else an error saying what `op` was.
#[inline]
pub(crate) fn check(code: c_int, op: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(failed(code, op))
    }
}

/// The error of MPI call `op` that returned `code`.
#[cold]
#[inline(never)]
fn failed(code: c_int, op: &str) -> Error {
    Error::Io {
        op: format!("MPI: {op}"),
        message: error_string(code),
        source: None,
    }
}

/// The MPI library's version string (`MPI_Get_library_version`).
pub(crate) fn library_version() -> String {
    let mut buf = vec![0 as c_char; 8192];
    let _g = lock();
    // SAFETY: as in `error_string`.
    unsafe { hc_library_version(buf.as_mut_ptr(), buf.len() as c_int) };
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// What [`init`] found.
pub(crate) struct World {
    /// Our private duplicate of `MPI_COMM_WORLD`.
    pub(crate) comm: Handle,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// The most ranks on one node, agreed by every rank.
    pub(crate) node_size: usize,
    /// The fewest cores any rank may use, agreed by every rank.
    pub(crate) cores: usize,
    /// Whether we initialised MPI (and so finalise it).
    pub(crate) ours: bool,
}

/// The variable naming the thread level asked of MPI when we initialise
/// it: `single` (the default), `funneled`, `serialized` or `multiple`.
pub(crate) const THREAD_VAR: &str = "HYPERCOMM_MPI_THREAD";

/// The levels [`THREAD_VAR`] names, in the shim's numbering.
const LEVELS: [&str; 4] = ["single", "funneled", "serialized", "multiple"];

/// The level [`THREAD_VAR`] asks for (0 single .. 3 multiple).
fn thread_level(value: Option<&str>) -> Result<c_int> {
    let Some(v) = value else { return Ok(0) };
    let want = v.trim().to_ascii_lowercase();
    let want = want.strip_prefix("mpi_thread_").unwrap_or(&want);
    match LEVELS.iter().position(|l| *l == want) {
        Some(i) => Ok(i as c_int),
        None => Err(Error::InvalidArgument {
            op: "MPI: init",
            what: format!("{THREAD_VAR}={v:?}: want one of {}", LEVELS.join(", ")),
        }),
    }
}

/// Initialise MPI (unless the program did) at the thread level of
/// [`THREAD_VAR`], and duplicate the world communicator for our traffic.
pub(crate) fn init() -> Result<World> {
    let want = thread_level(std::env::var(THREAD_VAR).ok().as_deref())?;
    let (mut cs, mut rs) = (0, 0);
    // SAFETY: writes two ints.
    unsafe { hc_handle_sizes(&mut cs, &mut rs) };
    if cs as usize > std::mem::size_of::<Handle>() || rs as usize > std::mem::size_of::<Handle>() {
        return Err(Error::Io {
            op: "MPI: init".into(),
            message: format!("this MPI's handles ({cs} and {rs} bytes) do not fit in 16 bytes"),
            source: None,
        });
    }
    let _g = lock();
    // SAFETY: plain out-parameters; MPI_Init_thread with null argc/argv.
    unsafe {
        if hc_finalized() != 0 {
            return Err(Error::Io {
                op: "MPI: init".into(),
                message: "MPI was already finalised in this process".into(),
                source: None,
            });
        }
        let (mut provided, mut ours) = (0, 0);
        check(hc_init(want, &mut provided, &mut ours), "MPI_Init_thread")?;
        if ours != 0 && provided < want {
            // Our own calls need no more than single; the program asked
            // for more on behalf of its own threads.
            eprintln!(
                "hypercomm: {THREAD_VAR} asked MPI for thread level {}, it gives only {}; continuing",
                LEVELS[want as usize],
                LEVELS.get(provided as usize).unwrap_or(&"single")
            );
        }
        let mut comm = Handle::zeroed();
        check(hc_world_dup(comm.mut_ptr()), "MPI_Comm_dup")?;
        let (mut rank, mut size, mut node) = (0, 0, 0);
        let mut cores = crate::transport::cores().min(c_int::MAX as usize) as c_int;
        check(hc_comm_rank(comm.ptr(), &mut rank), "MPI_Comm_rank")?;
        check(hc_comm_size(comm.ptr(), &mut size), "MPI_Comm_size")?;
        check(
            hc_job_shape(comm.ptr(), &mut node, &mut cores),
            "agreeing on the job's shape (MPI_Comm_split_type, MPI_Allreduce)",
        )?;
        Ok(World {
            comm,
            rank: rank as usize,
            size: size as usize,
            node_size: node.max(1) as usize,
            cores: cores.max(1) as usize,
            ours: ours != 0,
        })
    }
}

/// Finalise MPI (only when we initialised it).
pub(crate) fn finalize() -> Result<()> {
    let _g = lock();
    // SAFETY: no arguments; called once, after every request completed.
    unsafe {
        if hc_finalized() == 0 {
            check(hc_finalize(), "MPI_Finalize")?;
        }
    }
    Ok(())
}

/// `MPI_Abort` on `comm`: ends every process of the job.
pub(crate) fn abort(comm: &Handle, code: i32) -> ! {
    let _g = lock();
    // SAFETY: a valid communicator; MPI_Abort does not return normally.
    unsafe {
        hc_abort(comm.ptr(), code);
    }
    std::process::exit(code)
}

/// Start sending `buf` (which must stay alive and unmodified until the
/// request completes) to `dest`.
///
/// # Safety
/// `buf` must outlive the request; `req` must stay at the same address
/// until it completes.
pub(crate) unsafe fn isend(
    comm: &Handle,
    buf: &[u8],
    dest: usize,
    tag: i32,
    req: &mut Handle,
) -> Result<()> {
    let _g = lock();
    // SAFETY: the caller's contract (see above).
    check(
        unsafe {
            hc_isend(
                buf.as_ptr().cast(),
                buf.len() as c_int,
                dest as c_int,
                tag,
                comm.ptr(),
                req.mut_ptr(),
            )
        },
        "MPI_Isend",
    )
}

/// Send `buf` to `dest` (`MPI_Send`: returns once `buf` may be reused).
pub(crate) fn send(comm: &Handle, buf: &[u8], dest: usize, tag: i32) -> Result<()> {
    let _g = lock();
    // SAFETY: a live buffer of the given length; a blocking call.
    let code = unsafe {
        hc_send(
            buf.as_ptr().cast(),
            buf.len() as c_int,
            dest as c_int,
            tag,
            comm.ptr(),
        )
    };
    check(code, "MPI_Send")
}

/// Set up a persistent receive into `buf` from any source on `tag`
/// (`MPI_Recv_init`); [`start`] starts it, and starts it again after each
/// message (cheaper than posting a new receive each time).
///
/// # Safety
/// `buf` and `req` must stay alive, unmoved and untouched until the request
/// is cancelled and freed ([`cancel`]); `buf` untouched while started.
pub(crate) unsafe fn recv_init(
    comm: &Handle,
    buf: &mut [u8],
    tag: i32,
    req: &mut Handle,
) -> Result<()> {
    let _g = lock();
    // SAFETY: the caller's contract (see above).
    check(
        unsafe {
            hc_recv_init(
                buf.as_mut_ptr().cast(),
                buf.len() as c_int,
                tag,
                comm.ptr(),
                req.mut_ptr(),
            )
        },
        "MPI_Recv_init",
    )
}

/// Start the persistent receive `req` (inactive: set up or completed).
///
/// # Safety
/// As [`recv_init`].
pub(crate) unsafe fn start(req: &mut Handle) -> Result<()> {
    let _g = lock();
    // SAFETY: the caller's contract.
    check(unsafe { hc_start(req.mut_ptr()) }, "MPI_Start")
}

/// Receive exactly into `buf` from `source` (blocking); the byte count.
pub(crate) fn recv(comm: &Handle, buf: &mut [u8], source: usize, tag: i32) -> Result<usize> {
    let mut got = 0;
    let _g = lock();
    // SAFETY: a live buffer of the given length; a blocking call.
    let code = unsafe {
        hc_recv(
            buf.as_mut_ptr().cast(),
            buf.len() as c_int,
            source as c_int,
            tag,
            comm.ptr(),
            &mut got,
        )
    };
    check(code, "MPI_Recv")?;
    Ok(got as usize)
}

/// Test a request: `Some((source, bytes))` once complete.
///
/// # Safety
/// `req` is a request started by [`isend`], [`irecv`] or [`start`] (or
/// completed already: then it is `MPI_REQUEST_NULL` and completes at once).
#[inline]
pub(crate) unsafe fn test(req: &mut Handle) -> Result<Option<(usize, usize)>> {
    // SAFETY: the caller's contract.
    Ok(unsafe { test_tagged(req) }?.map(|m| (m.source, m.bytes)))
}

/// What a completed receive (or a probe) found: source, tag, byte count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub(crate) source: usize,
    pub(crate) tag: i32,
    pub(crate) bytes: usize,
}

impl Found {
    fn new(source: c_int, tag: c_int, bytes: c_int) -> Found {
        Found {
            source: source.max(0) as usize,
            tag,
            bytes: bytes.max(0) as usize,
        }
    }
}

/// [`test()`], with the tag of what a receive received.
///
/// # Safety
/// As [`test()`].
pub(crate) unsafe fn test_tagged(req: &mut Handle) -> Result<Option<Found>> {
    let (mut flag, mut source, mut tag, mut bytes) = (0, 0, 0, 0);
    let _g = lock();
    // SAFETY: the caller's contract; plain out-parameters.
    let code = unsafe { hc_test(req.mut_ptr(), &mut flag, &mut source, &mut tag, &mut bytes) };
    check(code, "MPI_Test")?;
    Ok((flag != 0).then(|| Found::new(source, tag, bytes)))
}

/// A duplicate of `comm` (`MPI_Comm_dup`; collective over its ranks).
pub(crate) fn comm_dup(comm: &Handle) -> Result<Handle> {
    let mut out = Handle::zeroed();
    let _g = lock();
    // SAFETY: a valid communicator and room for a handle.
    let code = unsafe { hc_comm_dup(comm.ptr(), out.mut_ptr()) };
    check(code, "MPI_Comm_dup")?;
    Ok(out)
}

/// Free `comm` (`MPI_Comm_free`; collective over its ranks, as its
/// duplication was). Operations still pending on it complete normally.
///
/// # Safety
///
/// `comm` is a communicator made by [`init`] or [`comm_dup`], freed once
/// and not used afterwards (by any copy of the handle).
pub(crate) unsafe fn comm_free(comm: &Handle) -> Result<()> {
    let mut c = *comm;
    let _g = lock();
    // SAFETY: the caller's contract.
    check(unsafe { hc_comm_free(c.mut_ptr()) }, "MPI_Comm_free")
}

/// The largest tag MPI takes on `comm` (`MPI_TAG_UB`).
pub(crate) fn tag_ub(comm: &Handle) -> Result<i32> {
    let mut ub = 0;
    let _g = lock();
    // SAFETY: a valid communicator; an int out-parameter.
    let code = unsafe { hc_tag_ub(comm.ptr(), &mut ub) };
    check(code, "MPI_Comm_get_attr(MPI_TAG_UB)")?;
    Ok(ub)
}

/// Start a receive into `buf` from `source` (`None`: any) with `tag`
/// (`None`: any).
///
/// # Safety
/// `buf` and `req` must stay alive, unmoved and untouched until the
/// request completes ([`test_tagged`]) or is cancelled ([`cancel_recv`]).
pub(crate) unsafe fn irecv(
    comm: &Handle,
    buf: &mut [u8],
    source: Option<usize>,
    tag: Option<i32>,
    req: &mut Handle,
) -> Result<()> {
    let _g = lock();
    // SAFETY: the caller's contract.
    check(
        unsafe {
            hc_irecv(
                buf.as_mut_ptr().cast(),
                buf.len() as c_int,
                source.map_or(-1, |s| s as c_int),
                tag.unwrap_or(-1),
                comm.ptr(),
                req.mut_ptr(),
            )
        },
        "MPI_Irecv",
    )
}

/// Cancel a receive started by [`irecv`] and wait for it to end: what it
/// received if it had matched a message after all.
///
/// # Safety
/// As [`irecv`].
pub(crate) unsafe fn cancel_recv(req: &mut Handle) -> Result<Option<Found>> {
    let (mut done, mut source, mut tag, mut bytes) = (0, 0, 0, 0);
    let _g = lock();
    // SAFETY: the caller's contract; plain out-parameters.
    let code =
        unsafe { hc_cancel_recv(req.mut_ptr(), &mut done, &mut source, &mut tag, &mut bytes) };
    check(code, "MPI_Cancel")?;
    Ok((done != 0).then(|| Found::new(source, tag, bytes)))
}

/// Cancel a started persistent receive, wait for it to end and free it.
///
/// # Safety
/// As [`test()`].
pub(crate) unsafe fn cancel(req: &mut Handle) {
    let _g = lock();
    // SAFETY: the caller's contract.
    unsafe { hc_cancel(req.mut_ptr()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unset means single; the four names (and MPI's own spellings, in any
    /// case) map to the shim's numbering; anything else is an error that
    /// names the variable and the value.
    #[test]
    fn thread_level_names() {
        assert_eq!(thread_level(None).unwrap(), 0);
        assert_eq!(thread_level(Some("funneled")).unwrap(), 1);
        assert_eq!(thread_level(Some(" Serialized ")).unwrap(), 2);
        assert_eq!(thread_level(Some("MPI_THREAD_MULTIPLE")).unwrap(), 3);
        assert_eq!(thread_level(Some("single")).unwrap(), 0);
        let e = thread_level(Some("serialised!")).unwrap_err().to_string();
        assert!(e.contains(THREAD_VAR) && e.contains("serialised!"), "{e}");
    }
}
