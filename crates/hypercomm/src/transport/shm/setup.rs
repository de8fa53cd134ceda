//! Making a shared-memory job: the launcher creates the segment and hands
//! its descriptor to the processes ([`SHM_FD`]); each process maps it and
//! joins. The same segment also serves a job whose endpoints are threads
//! of one process ([`ShmBuilder`]), which the tests use.

use super::liveness::{mark_failed, set_abort};
use super::segment::{self, Mapping};
use super::{io_err, ShmEndpoint};
use crate::error::{Error, Result};
use crate::transport::{
    AnyTransport, Builder, JoinInfo, JoinTable, Joined, Joining, Notices, Prepared, Setup,
    Supervisor,
};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The variable that carries the inherited segment descriptor's number to
/// a launched process.
pub const SHM_FD: &str = "HYPERCOMM_SHM_FD";

/// Create the shared segment for a job of `endpoints` endpoints (nodes plus
/// host): an initialised memfd, close-on-exec (clear the flag, or `dup2`
/// it, for the children that should inherit it).
pub fn create_segment(endpoints: usize) -> io::Result<OwnedFd> {
    segment::create(endpoints)
}

/// Let child processes inherit `fd` (clears close-on-exec). A launcher calls
/// it on the segment before spawning the ranks and passes the number in
/// `HYPERCOMM_SHM_FD`.
pub fn share_with_children(fd: &impl std::os::fd::AsFd) -> io::Result<()> {
    Ok(rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?)
}

static FD_TAKEN: AtomicBool = AtomicBool::new(false);

/// Take the segment descriptor the launcher passed in `HYPERCOMM_SHM_FD`.
///
/// Checks that the number names an open memfd made by [`create_segment`]
/// and marks it close-on-exec. Succeeds once per process.
pub fn fd_from_env() -> Result<OwnedFd> {
    let bad = |what: String| Error::InvalidArgument {
        op: "HYPERCOMM_SHM_FD",
        what,
    };
    let s = std::env::var(SHM_FD)
        .map_err(|_| bad("is not set (start the program with `hypercomm run`)".into()))?;
    let raw: i32 = s
        .trim()
        .parse()
        .ok()
        .filter(|&v| v >= 0)
        .ok_or_else(|| bad(format!("{s:?} is not a file descriptor number")))?;
    let target = std::fs::read_link(format!("/proc/self/fd/{raw}"))
        .map_err(|e| bad(format!("descriptor {raw} is not open: {e}")))?;
    if !target.to_string_lossy().starts_with("/memfd:hypercomm-shm") {
        return Err(bad(format!(
            "descriptor {raw} is {}, not a hypercomm segment",
            target.display()
        )));
    }
    if FD_TAKEN.swap(true, Ordering::SeqCst) {
        return Err(bad("the descriptor was already taken".into()));
    }
    // SAFETY: the descriptor is open (checked above), was handed to this
    // process by its launcher for exactly this purpose, and is owned by
    // nothing else here: FD_TAKEN lets only one caller take it.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC);
    Ok(fd)
}

/// Builds endpoint `me` of a segment on the thread that will use it.
pub struct ShmBuilder {
    fd: OwnedFd,
    endpoints: usize,
    me: usize,
}

impl ShmBuilder {
    /// Endpoint `me` of the segment `fd` made for `endpoints` endpoints.
    pub fn new(fd: OwnedFd, endpoints: usize, me: usize) -> ShmBuilder {
        ShmBuilder { fd, endpoints, me }
    }

    /// One builder per endpoint of a new segment of `endpoints` endpoints,
    /// for a job whose endpoints are threads of this process.
    pub fn job(endpoints: usize) -> Result<Vec<ShmBuilder>> {
        let fd = create_segment(endpoints).map_err(|e| io_err("creating the segment", e))?;
        (0..endpoints)
            .map(|me| {
                let fd = fd
                    .try_clone()
                    .map_err(|e| io_err("sharing the segment", e))?;
                Ok(ShmBuilder::new(fd, endpoints, me))
            })
            .collect()
    }
}

impl Builder for ShmBuilder {
    fn build(self: Box<Self>) -> Result<AnyTransport> {
        ShmEndpoint::attach(self.fd, self.endpoints, self.me).map(AnyTransport::from)
    }
}

/// The shared-memory transport's [`Setup`].
pub(crate) struct ShmSetup;

/// The one instance.
pub(crate) static SETUP: ShmSetup = ShmSetup;

impl Setup for ShmSetup {
    fn threads(&self, endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
        let b = ShmBuilder::job(endpoints).ok()?;
        Some(
            b.into_iter()
                .map(|b| Box::new(b) as Box<dyn Builder>)
                .collect(),
        )
    }

    fn prepare(&self, endpoints: usize) -> Result<Prepared> {
        if endpoints > segment::MAX_ENDPOINTS {
            // A limit of the transport, not a failure to make the segment.
            return Err(Error::InvalidArgument {
                op: "transport",
                what: format!(
                    "a shared-memory job has at most {} processes (nodes and host), not {endpoints}; \
                     the tcp transport takes more",
                    segment::MAX_ENDPOINTS
                ),
            });
        }
        let fd = create_segment(endpoints)
            .map_err(|e| io_err("creating the shared-memory segment", e))?;
        Ok(Prepared {
            env: vec![(SHM_FD.to_string(), fd.as_raw_fd().to_string())],
            inherit: vec![fd],
        })
    }

    fn join(&self, info: &JoinInfo) -> Result<Box<dyn Joining>> {
        if std::env::var_os(SHM_FD).is_none() {
            return Err(Error::InvalidArgument {
                op: "hypercomm::init",
                what: format!("HYPERCOMM_TRANSPORT is shm but {SHM_FD} is not set"),
            });
        }
        let fd = fd_from_env()?;
        let ep = ShmEndpoint::attach(fd, info.endpoints, info.endpoint)?;
        Ok(Box::new(ShmJoining(ep)))
    }
}

/// Attached, waiting for the others: the table only tells that every
/// endpoint has attached (its pid is known) before anyone sends.
struct ShmJoining(ShmEndpoint);

impl Joining for ShmJoining {
    fn address(&self) -> String {
        String::new()
    }

    fn complete(self: Box<Self>, table: &JoinTable, sup: Box<dyn Supervisor>) -> Result<Joined> {
        let ep = self.0;
        if table.addrs.len() != ep.n {
            return Err(Error::Protocol(format!(
                "the rendezvous's table has {} entries for a job of {} endpoints",
                table.addrs.len(),
                ep.n
            )));
        }
        ep.cores.set(table.cores.max(1));
        let notices = Arc::new(ShmNotices {
            map: ep.map.clone(),
            me: ep.me,
        });
        *ep.supervisor.borrow_mut() = Some(sup);
        Ok(Joined {
            transport: ep.into(),
            notices,
        })
    }
}

/// The supervisor's news, written into the segment for every endpoint to
/// see (deaths before a process attached are seen that way).
struct ShmNotices {
    map: Arc<Mapping>,
    me: usize,
}

impl Notices for ShmNotices {
    fn peer_failed(&self, endpoint: usize, message: &str) {
        if endpoint < self.map.endpoints && endpoint != self.me {
            mark_failed(&self.map, endpoint, message);
        }
    }
    fn aborted(&self, endpoint: usize, message: &str) {
        if endpoint < self.map.endpoints {
            set_abort(&self.map, endpoint, message);
        }
    }
}
