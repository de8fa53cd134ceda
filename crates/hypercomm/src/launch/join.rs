//! Joining a job of processes: the control connection to the rendezvous,
//! the handshake (hello, then the address table) that every transport kind
//! goes through the same way, and the [`Supervisor`] through which the
//! endpoint reports to the rendezvous afterwards.

use super::control::{self, Ctl};
use super::rank::rank_over;
use crate::comm::Comm;
pub(crate) use crate::error::io_err;
use crate::error::{Error, Result};
use crate::transport::tcp::{auth, tune};
use crate::transport::{JoinInfo, JoinTable, Joined, Notices, Supervisor, TransportKind};
use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an endpoint keeps trying to reach the rendezvous.
const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Connect to the rendezvous as `endpoint` and authenticate.
pub(crate) fn connect_rendezvous(
    addr: &str,
    secret: &[u8],
    job: &str,
    endpoint: usize,
) -> Result<TcpStream> {
    let deadline = Instant::now() + RENDEZVOUS_TIMEOUT;
    let mut s = loop {
        let attempt = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
            .and_then(|a| {
                TcpStream::connect_timeout(&a, Duration::from_secs(5)).map_err(|e| e.to_string())
            });
        match attempt {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => {
                return Err(io_err(
                    "joining the job",
                    format!("endpoint {endpoint} could not reach the rendezvous at {addr}: {e}"),
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    tune(&s);
    auth::client(&mut s, secret, job, endpoint as u32)
        .map_err(|e| io_err("joining the job", format!("rendezvous at {addr}: {e}")))?;
    Ok(s)
}

/// A job to join over an authenticated control connection.
pub(crate) struct JoinSpec {
    pub(crate) kind: TransportKind,
    pub(crate) endpoint: usize,
    pub(crate) nodes: usize,
    pub(crate) host: bool,
    pub(crate) bind: Option<IpAddr>,
    pub(crate) secret: Vec<u8>,
    pub(crate) job: String,
    /// Run after this endpoint has told the rendezvous it finished (a
    /// spawning host waits for its children).
    pub(crate) after_finish: Option<Box<dyn FnOnce() + Send>>,
}

/// This process's control connection, for [`report_result`].
static CONTROL: Mutex<Option<Arc<Mutex<TcpStream>>>> = Mutex::new(None);

/// Send a rank's result to the rendezvous (ranks of `run_processes`).
pub(crate) fn report_result(bytes: Vec<u8>) -> Result<()> {
    let c = lock(&CONTROL).clone().ok_or_else(|| {
        io_err(
            "reporting a result",
            "this process has no connection to a launcher",
        )
    })?;
    let mut w = lock(&c);
    control::write(&mut *w, &Ctl::Result { bytes }).map_err(|e| io_err("reporting a result", e))
}

/// Join: announce this endpoint (its transport's address) to the
/// rendezvous, wait for the table of every endpoint, finish joining with
/// it, and keep the control connection for reports and notices. Returns
/// the world communicator.
pub(crate) fn join_job(mut ctl: TcpStream, spec: JoinSpec) -> Result<Comm> {
    let endpoints = spec.nodes + spec.host as usize;
    let local_ip = ctl
        .local_addr()
        .map_err(|e| io_err("joining the job", e))?
        .ip();
    let info = JoinInfo {
        endpoint: spec.endpoint,
        endpoints,
        bind: spec.bind,
        local_ip,
        secret: spec.secret.clone(),
        job: spec.job.clone(),
    };
    let joining = spec.kind.setup().join(&info)?;
    control::write(
        &mut ctl,
        &Ctl::Hello {
            endpoint: spec.endpoint as u32,
            addr: joining.address(),
            cores: crate::transport::cores().min(u32::MAX as usize) as u32,
        },
    )
    .map_err(|e| io_err("joining the job", e))?;
    let table = match control::read(&mut ctl) {
        Ok(Some(Ctl::Table { addrs, cores })) => JoinTable {
            addrs,
            cores: (cores as usize).max(1),
        },
        Ok(Some(Ctl::Aborted { endpoint, message })) => {
            return Err(Error::Protocol(format!(
                "the job was aborted by endpoint {endpoint} before it started: {message}"
            )))
        }
        Ok(Some(Ctl::PeerFailed { message, .. })) => {
            return Err(io_err(
                "joining the job",
                format!("the job failed before it started: {message}"),
            ))
        }
        Ok(other) => {
            return Err(Error::Protocol(format!(
                "expected the address table from the rendezvous, got {other:?}"
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Error::Protocol(format!(
                "the rendezvous sent an address table this program cannot read ({e}); \
                 are the launcher and the program built from the same hypercomm version?"
            )))
        }
        Err(e) => {
            return Err(io_err(
                "joining the job",
                format!("waiting for the address table: {e}"),
            ))
        }
    };
    if table.addrs.len() != endpoints {
        return Err(Error::Protocol(format!(
            "the address table has {} entries for a job of {endpoints} endpoints",
            table.addrs.len()
        )));
    }
    let reader = ctl.try_clone().map_err(|e| io_err("joining the job", e))?;
    let writer = Arc::new(Mutex::new(ctl));
    let cause = Arc::new(AtomicU64::new(NO_CAUSE));
    let sup = ControlSupervisor {
        ctl: writer.clone(),
        after: Mutex::new(spec.after_finish),
        cause: cause.clone(),
    };
    let Joined { transport, notices } = joining.complete(&table, Box::new(sup))?;
    std::thread::Builder::new()
        .name(format!("hypercomm-control-{}", spec.endpoint))
        .spawn(move || read_notices(reader, notices))
        .map_err(|e| io_err("spawning the control thread", e))?;
    *lock(&CONTROL) = Some(writer);
    panics::record();
    let comm = rank_over(transport, spec.host, false)?;
    // The first peer failure this endpoint reports goes with its
    // `Finished`, so that the launcher blames the root cause.
    *comm.engine().on_cause.borrow_mut() = Some(Box::new(move |ep| {
        let _ = cause.compare_exchange(NO_CAUSE, u64::from(ep), Ordering::SeqCst, Ordering::SeqCst);
    }));
    Ok(comm)
}

/// `ControlSupervisor::cause` before any peer failure.
const NO_CAUSE: u64 = u64::MAX;

/// The rendezvous's news, handed to the transport.
fn read_notices(mut r: TcpStream, notices: Arc<dyn Notices>) {
    while let Ok(Some(m)) = control::read(&mut r) {
        match m {
            Ctl::Aborted { endpoint, message } => notices.aborted(endpoint as usize, &message),
            Ctl::PeerFailed { endpoint, message } => {
                notices.peer_failed(endpoint as usize, &message)
            }
            _ => {}
        }
    }
    // The rendezvous went away: the transport's own liveness checks say
    // everything that matters.
}

/// Reports of an endpoint to the rendezvous over its control connection.
struct ControlSupervisor {
    ctl: Arc<Mutex<TcpStream>>,
    after: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// The first endpoint the rank's engine reported gone (`NO_CAUSE`:
    /// none).
    cause: Arc<AtomicU64>,
}

impl Supervisor for ControlSupervisor {
    fn aborting(&self, message: &str) {
        let _ = control::write(
            &mut *lock(&self.ctl),
            &Ctl::Abort {
                message: message.to_string(),
            },
        );
    }

    fn finished(&self, outcome: &std::result::Result<(), String>) {
        {
            let mut c = lock(&self.ctl);
            let (ok, message) = match outcome {
                Ok(()) => (true, String::new()),
                // A panic's own message, rather than the bare word the
                // endpoint's drop knows.
                Err(m) if m == "panicked" => (false, panics::last().unwrap_or_else(|| m.clone())),
                Err(m) => (false, m.clone()),
            };
            let cause = match self.cause.load(Ordering::SeqCst) {
                NO_CAUSE => None,
                c => Some(c as u32),
            };
            let _ = control::write(&mut *c, &Ctl::Finished { ok, message, cause });
            let _ = c.shutdown(std::net::Shutdown::Write);
        }
        *lock(&CONTROL) = None;
        if let Some(f) = lock(&self.after).take() {
            f();
        }
    }
}

/// The message of the last panic in this process, for the launcher: a
/// panic unwinding out of `main` drops the world communicator, whose
/// endpoint knows only that it is closing because of a panic.
mod panics {
    use std::sync::{Mutex, Once};

    static LAST: Mutex<Option<String>> = Mutex::new(None);

    /// Record every panic's message (once per process; the hook that was
    /// installed before still runs after this one).
    pub(super) fn record() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let what = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                    .unwrap_or_default();
                *super::lock(&LAST) = Some(format!("panicked{at}: {what}"));
                previous(info);
            }));
        });
    }

    /// The last panic's message, if any.
    pub(super) fn last() -> Option<String> {
        super::lock(&LAST).clone()
    }
}
