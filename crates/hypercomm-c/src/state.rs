//! What the C side keeps per process (one communicator, owned by the thread
//! that opened communication), the error conventions, and the pointer
//! helpers every entry point uses.

use hypercomm::{Comm, Error, ShortSends};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;

/// PICL's and the iPSC's host number.
pub(crate) const HOST: i32 = hypercomm::PICL_HOST;

/// PICL tracing as set by traceenable (host) and started by tracehost /
/// tracenode.
#[derive(Default)]
pub(crate) struct TraceState {
    /// traceenable's file and format (host only).
    pub(crate) file: Option<(PathBuf, bool)>,
}

/// CMMD's "last message" information.
#[derive(Default, Clone, Copy)]
pub(crate) struct MsgInfo {
    pub(crate) bytes_received: i32,
    pub(crate) bytes_sent: i32,
    pub(crate) sender: i32,
    pub(crate) tag: i32,
}

/// The per-process state of the C interfaces.
#[derive(Default)]
pub(crate) struct State {
    /// The job's world, once opened (PICL open0/load0, or the first CMMD or
    /// iPSC call).
    pub(crate) world: Option<Comm>,
    /// A duplicate of the world for the library's own messages (trace
    /// collection, CMMD reduce to host): never seen by user receives.
    pub(crate) aux: Option<Comm>,
    /// Nodes in use and the host (PICL setarc0), with `arch` = nprocs,
    /// top, ord, dir as set.
    pub(crate) in_use: Option<Comm>,
    pub(crate) arch: [i32; 4],
    /// PICL recvinfo0: bytes, type, source of the last message.
    pub(crate) last: [i32; 3],
    /// A host's open0 request before load0 starts the nodes.
    pub(crate) requested: Option<i32>,
    /// Communication was closed (close0): it cannot be opened again.
    pub(crate) closed: bool,
    pub(crate) trace: TraceState,
    pub(crate) cmmd: MsgInfo,
    pub(crate) short: Option<ShortSends>,
    pub(crate) enabled: bool,
    pub(crate) suspended: bool,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Run `f` on this thread's state.
pub(crate) fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(&mut s.borrow_mut()))
}

/// An error of a C entry point: what went wrong, in words.
pub(crate) type CResult<T> = std::result::Result<T, String>;

/// A library error as a message.
/// Send as PICL's send0 and the iPSC's SENDW do: return once the message
/// is on its way, whatever the receiver is doing. A message longer than
/// the eager limit is copied and handed over ([`Comm::send`] would wait
/// until the receiver copies it out of `data`, so that two nodes that
/// exchange long messages, each sending first, would wait for each other).
pub(crate) fn send_on_its_way(
    c: &Comm,
    data: &[u8],
    dest: hypercomm::Rank,
    tag: u32,
) -> hypercomm::Result<()> {
    if data.len() <= hypercomm::EAGER_LIMIT {
        c.send(data, dest, tag)
    } else {
        c.send_vec(data.to_vec(), dest, tag)
    }
}

pub(crate) fn err(e: Error) -> String {
    e.to_string()
}

/// This process's node number for messages (the host's is −32768): its
/// rank in the job, the host's once a process started by hand has called
/// open0, or before it joined (or after it left) what its launcher says;
/// `None` outside any job.
fn who() -> Option<i32> {
    STATE
        .try_with(|s| {
            s.try_borrow().ok().and_then(|s| {
                s.world
                    .as_ref()
                    .map(|w| w.me().to_picl())
                    .or(s.requested.map(|_| HOST))
            })
        })
        .ok()
        .flatten()
        .or_else(launched_as)
}

/// This process's node number from its launcher's environment (before it
/// joined the job, or after it left): `hypercomm run`'s endpoint, or the
/// rank `mpirun` or `srun` gave it; the host's number for the host.
fn launched_as() -> Option<i32> {
    let shape = hypercomm::launch::job_shape()?;
    let ep: usize = [
        "HYPERCOMM_RANK",
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())?;
    Some(if shape.host && ep == shape.nodes {
        HOST
    } else {
        ep as i32
    })
}

/// The documented abort: a message naming the routine and the node on
/// standard error, the job aborted (every other rank's next call fails and
/// the launcher reports it), and this process ends with status 1.
pub(crate) fn fatal(lib: &str, routine: &str, msg: &str) -> ! {
    let name = match who() {
        Some(HOST) => "the host".to_string(),
        Some(node) => format!("node {node}"),
        None => "a process outside any job".to_string(),
    };
    let text = format!("{lib} error in {routine} on {name}: {msg}");
    eprintln!("{text}");
    let _ = STATE.try_with(|s| {
        if let Ok(s) = s.try_borrow() {
            if let Some(w) = &s.world {
                let _ = w.abort(&text);
            }
        }
    });
    std::process::exit(1)
}

/// Run an entry point: an error or a panic becomes the documented abort
/// (never an unwind across the C boundary).
pub(crate) fn guard<R>(lib: &str, routine: &str, f: impl FnOnce() -> CResult<R>) -> R {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => r,
        Ok(Err(msg)) => fatal(lib, routine, &msg),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            fatal(lib, routine, &format!("internal error: {what}"))
        }
    }
}

/// Run an iPSC utility: errors are "syslogged" (written on standard error
/// in capitals, beginning with the routine's name, as seed 000 section 8
/// lists them) and the routine returns `fallback`; panics abort as
/// [`guard`] does.
pub(crate) fn syslog_guard<R>(routine: &str, fallback: R, f: impl FnOnce() -> CResult<R>) -> R {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => r,
        Ok(Err(msg)) => {
            eprintln!("{routine}: {}", msg.to_uppercase());
            fallback
        }
        Err(_) => fatal("iPSC", routine, "internal error"),
    }
}

/// `len` bytes at `p` (empty for a zero length).
///
/// # Safety
/// `p` must be valid for reads of `len` bytes, or `len` must be 0.
pub(crate) unsafe fn bytes<'a>(p: *const c_void, len: i64) -> CResult<&'a [u8]> {
    if len < 0 {
        return Err(format!("a negative length ({len})"));
    }
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(format!("a null buffer of {len} bytes"));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len as usize) })
}

/// `len` writable bytes at `p`.
///
/// # Safety
/// `p` must be valid for writes of `len` bytes and not otherwise accessed
/// while the slice lives, or `len` must be 0.
pub(crate) unsafe fn bytes_mut<'a>(p: *mut c_void, len: i64) -> CResult<&'a mut [u8]> {
    if len < 0 {
        return Err(format!("a negative length ({len})"));
    }
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(format!("a null buffer of {len} bytes"));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len as usize) })
}

/// A C string (lossy UTF-8).
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string.
pub(crate) unsafe fn string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Write `v` through `p` when it is not null.
///
/// # Safety
/// `p` must be null or valid for a write of an `i32`.
pub(crate) unsafe fn put(p: *mut i32, v: i32) {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        unsafe { p.write(v) };
    }
}

/// Read `*p` (0 for null).
///
/// # Safety
/// `p` must be null or valid for a read of an `i32`.
pub(crate) unsafe fn get(p: *const i32) -> i32 {
    if p.is_null() {
        0
    } else {
        // SAFETY: the caller's contract.
        unsafe { p.read() }
    }
}

/// Why a PICL routine that needs the world finds none: open0 not called,
/// or called by a process started by hand, which is the host and must
/// start its nodes with load0 first.
pub(crate) fn not_open(st: &State) -> String {
    match st.requested {
        Some(n) => format!(
            "this process was started by hand, so open0 made it the host, and its {n} nodes are \
             not running yet: call load0 to start them, or start the program with \
             `hypercomm run -n {n}`"
        ),
        None => "communication is not open (call open0 first)".into(),
    }
}

/// The world communicator, joining the job first when `join` (CMMD and
/// the iPSC utilities have no open call).
pub(crate) fn world(st: &mut State, join: bool) -> CResult<Comm> {
    if let Some(w) = &st.world {
        return Ok(w.clone());
    }
    if st.closed {
        return Err("communication was closed and cannot be opened again".into());
    }
    if !join {
        return Err(not_open(st));
    }
    let w = hypercomm::init().map_err(err)?;
    st.aux = Some(w.dup());
    st.world = Some(w.clone());
    Ok(w)
}
