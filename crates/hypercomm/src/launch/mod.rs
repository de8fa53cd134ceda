//! Processes: [`init`], [`finalize`], [`spawn`], the launcher's engine and
//! Slurm bootstrap.
//!
//! The same program body runs in every start mode (SPEC section 1):
//!
//! ```no_run
//! fn body(comm: &hypercomm::Comm) -> hypercomm::Result<()> {
//!     println!("rank {} of {}", comm.rank(), comm.size());
//!     Ok(())
//! }
//! fn main() -> hypercomm::Result<()> {
//!     if hypercomm::launch::is_launched() {
//!         // `hypercomm run -n 4 ./prog`, srun, or started alone (size 1).
//!         let comm = hypercomm::init()?;
//!         body(&comm)?;
//!         hypercomm::finalize(comm)
//!     } else {
//!         hypercomm::run(4, body).map(|_| ())
//!     }
//! }
//! ```
//!
//! ## How `init()` finds its job
//!
//! 1. **Under the launcher** ([`env::RANK`] is set): join the job described
//!    by the environment contract below.
//! 2. **Under Slurm** (`SLURM_PROCID`, `SLURM_NTASKS` and
//!    `SLURM_STEP_NODELIST` or `SLURM_NODELIST` are set, and
//!    `HYPERCOMM_NO_SLURM` is not): TCP without our launcher. Task 0 opens
//!    the rendezvous on the **first host of the step's node list**, port
//!    `10000 + (SLURM_JOB_ID · 1000 + SLURM_STEP_ID) mod 20000` (below Linux's ephemeral range) (or the
//!    `ip:port` in `HYPERCOMM_RENDEZVOUS` when set); every task connects to
//!    it (retrying for up to 60 s), reports its listening address and gets
//!    the table. The secret is `HYPERCOMM_SECRET` when the user exported
//!    one (srun passes the environment on), otherwise it is derived from
//!    the job and step ids and the user id — enough to keep jobs apart, not
//!    a defence against another user who knows the job id, so export a
//!    random `HYPERCOMM_SECRET` on shared clusters. Tasks are nodes; a
//!    Slurm job has no host.
//! 3. **Alone**: a world of one node and no host (an MPI singleton).
//!
//! ## The environment contract (launcher → each process)
//!
//! | variable | value |
//! |---|---|
//! | `HYPERCOMM_RANK` | endpoint index: nodes `0..n`, the host `n` |
//! | `HYPERCOMM_NODES` | `n` |
//! | `HYPERCOMM_HOST` | `1` if the job has a host, else `0` |
//! | `HYPERCOMM_TRANSPORT` | `shm` or `tcp` |
//! | `HYPERCOMM_RENDEZVOUS` | `ip:port` of the launcher's rendezvous listener |
//! | `HYPERCOMM_SECRET` | the per-job secret, 32 random bytes in hex |
//! | `HYPERCOMM_JOB` | the job id |
//! | `HYPERCOMM_BIND` | optional: the IP this endpoint listens on (`--hosts`) |
//! | `HYPERCOMM_SHM_FD` | shm only: an inherited descriptor of the memfd segment made by `transport::shm::create_segment(endpoints)` |
//!
//! Every process, whatever the transport, first opens a **control
//! connection** to the rendezvous, authenticates with the secret
//! (challenge-response HMAC, see `transport::tcp::auth`; the endpoint index
//! is the client id), sends `Hello { endpoint, addr }` and waits for the
//! `Table` of all endpoints' addresses (empty strings for shm). The
//! connection then stays open: an endpoint reports `Abort` and `Finished`
//! on it, the launcher sends `Aborted` and `PeerFailed` (see
//! `launch::control`). TCP endpoints then connect to each other directly.
//!
//! ## Ending
//!
//! Call [`finalize`] when done, or just drop the communicator: dropping the
//! last handle of a process's world communicator (normally at the end of
//! `main`) closes the endpoint cleanly (a goodbye to every peer, then up to
//! 5 s for the peers' goodbyes so that nothing in flight is lost), or as
//! failed when the thread is panicking. A process that exits without
//! either (`std::process::exit`, a signal) is reported to its peers as
//! failed. Under [`run`](crate::run) the threads are closed by `run`, and
//! `finalize` does nothing.
//!
//! ## Spawn
//!
//! [`spawn`] is PICL's `open0` + `load0`: a host program started by hand
//! starts `n` node processes of a program and gets a communicator with
//! itself as the host. It runs the launcher's machinery in the calling
//! process (rendezvous, output forwarding with `[rank]` prefixes, failure
//! monitoring); the nodes are TCP endpoints on loopback. Finishing the host
//! waits (up to a grace period) for the nodes to end. Nodes receive
//! SIGTERM if the thread that spawned them exits, so call `spawn` from the
//! thread that uses the communicator (it must anyway).
//!
//! Not done yet: ssh for remote `--hosts`, spawning more nodes into a
//! running job (MPI `Comm_spawn` with inter-communicators).

pub(crate) mod control;
pub mod env;
pub mod job;
pub(crate) mod monitor;
pub(crate) mod slurm;

use crate::comm::Comm;
use crate::engine::{env_timeout, Engine};
use crate::error::{Error, Result};
use crate::transport::tcp::{auth, tune, TcpEndpoint, TcpSetup};
use crate::transport::{AnyTransport, ThreadJob, Transport};
use control::Ctl;
use env::{JobEnv, TransportKind};
use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an endpoint keeps trying to reach the rendezvous.
const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(60);

static JOINED: AtomicBool = AtomicBool::new(false);

fn io_err(op: &str, e: impl std::fmt::Display) -> Error {
    Error::Io {
        op: op.to_string(),
        message: e.to_string(),
    }
}

/// True when this process was started as part of a job (by the launcher or
/// by Slurm), i.e. when [`init`] will join a job of more than itself.
pub fn is_launched() -> bool {
    std::env::var_os(env::RANK).is_some() || slurm::SlurmEnv::detect().is_some()
}

/// Join the job this process belongs to and return its world communicator:
/// under `hypercomm run` from the environment, under Slurm by its own
/// rendezvous, and alone as a world of size 1. See the module docs.
///
/// May be called once per process (under the launcher or Slurm); the
/// communicator belongs to the calling thread.
pub fn init() -> Result<Comm> {
    if std::env::var_os(env::RANK).is_some() {
        claim()?;
        let e = JobEnv::from_env()?;
        return join(&e);
    }
    if let Some(s) = slurm::SlurmEnv::detect() {
        claim()?;
        return slurm::join(&s?);
    }
    singleton()
}

fn claim() -> Result<()> {
    if JOINED.swap(true, Ordering::SeqCst) {
        return Err(Error::InvalidArgument {
            op: "hypercomm::init",
            what: "this process has already joined its job (init or spawn was called before)"
                .into(),
        });
    }
    Ok(())
}

fn singleton() -> Result<Comm> {
    let job = ThreadJob::new(1);
    let engine = Engine::new(AnyTransport::Thread(job.endpoint(0)), env_timeout()?);
    Ok(Comm::world(Rc::new(engine), 1, false))
}

/// Leave the job cleanly: every peer is told this process finished (the
/// same happens when the last handle of the communicator is dropped). Under
/// [`run`](crate::run) it does nothing.
pub fn finalize(comm: Comm) -> Result<()> {
    let e = comm.engine();
    match &e.t {
        AnyTransport::Thread(_) => Ok(()),
        t => {
            let aborted = e.t.aborted();
            t.close(Ok(()));
            match aborted {
                Some((ep, message)) => Err(Error::Aborted {
                    rank: comm.group().rank(ep as u32),
                    message,
                }),
                None => Ok(()),
            }
        }
    }
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

/// Over an authenticated control connection: open this endpoint's listener,
/// say hello, get the table and connect to every peer.
pub(crate) fn join_tcp(
    mut ctl: TcpStream,
    me: usize,
    endpoints: usize,
    bind: Option<IpAddr>,
    secret: &[u8],
    job: &str,
) -> Result<TcpEndpoint> {
    let ip = match bind {
        Some(ip) => ip,
        None => ctl
            .local_addr()
            .map_err(|e| io_err("joining the job", e))?
            .ip(),
    };
    let listener = TcpListener::bind((ip, 0)).map_err(|e| {
        io_err(
            "joining the job",
            format!("endpoint {me} cannot listen on {ip}: {e}"),
        )
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| io_err("joining the job", e))?;
    control::write(
        &mut ctl,
        &Ctl::Hello {
            endpoint: me as u32,
            addr: addr.to_string(),
        },
    )
    .map_err(|e| io_err("joining the job", e))?;
    let table = match control::read(&mut ctl) {
        Ok(Some(Ctl::Table { addrs })) => addrs,
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
        Err(e) => {
            return Err(io_err(
                "joining the job",
                format!("waiting for the address table: {e}"),
            ))
        }
    };
    if table.len() != endpoints {
        return Err(Error::Protocol(format!(
            "the address table has {} entries for a job of {endpoints} endpoints",
            table.len()
        )));
    }
    let addrs = table
        .iter()
        .map(|a| {
            a.parse::<SocketAddr>()
                .map_err(|_| Error::Protocol(format!("bad address {a:?} in the table")))
        })
        .collect::<Result<Vec<_>>>()?;
    TcpEndpoint::establish(TcpSetup {
        me,
        addrs,
        listener,
        secret: secret.to_vec(),
        job: job.to_string(),
        control: Some(ctl),
    })
}

/// A world communicator over an established TCP endpoint.
pub(crate) fn world_over(t: TcpEndpoint, nodes: usize, host: bool) -> Result<Comm> {
    let engine = Engine::new(AnyTransport::Tcp(t), env_timeout()?);
    Ok(Comm::world(Rc::new(engine), nodes, host))
}

/// The shared-memory join: attach to the inherited segment, then say hello
/// (no address) and wait for the table, so that every endpoint is attached
/// (its pid known to the others) before anyone sends. The control
/// connection stays with the endpoint (abort and finish reports, the
/// launcher's failure notices).
fn join_shm(e: &JobEnv, mut ctl: TcpStream) -> Result<Comm> {
    use crate::transport::shm::{fd_from_env, ShmEndpoint};
    let endpoints = e.nodes + e.host as usize;
    if e.shm_fd.is_none() {
        return Err(Error::InvalidArgument {
            op: "hypercomm::init",
            what: "HYPERCOMM_TRANSPORT is shm but HYPERCOMM_SHM_FD is not set".into(),
        });
    }
    let fd = fd_from_env()?;
    let t = ShmEndpoint::attach(fd, endpoints, e.endpoint)?;
    control::write(
        &mut ctl,
        &Ctl::Hello {
            endpoint: e.endpoint as u32,
            addr: String::new(),
        },
    )
    .map_err(|err| io_err("joining the job", err))?;
    match control::read(&mut ctl) {
        Ok(Some(Ctl::Table { addrs })) if addrs.len() == endpoints => {}
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
                "expected the table of {endpoints} endpoints from the rendezvous, got {other:?}"
            )))
        }
        Err(err) => {
            return Err(io_err(
                "joining the job",
                format!("waiting for the table: {err}"),
            ))
        }
    }
    t.set_control(ctl)?;
    let engine = Engine::new(AnyTransport::Shm(t), env_timeout()?);
    Ok(Comm::world(Rc::new(engine), e.nodes, e.host))
}

/// Join a launched job from its environment.
fn join(e: &JobEnv) -> Result<Comm> {
    let endpoints = e.nodes + e.host as usize;
    let ctl = connect_rendezvous(&e.rendezvous, &e.secret, &e.job, e.endpoint)?;
    match e.transport {
        TransportKind::Tcp => {
            let t = join_tcp(ctl, e.endpoint, endpoints, e.bind, &e.secret, &e.job)?;
            world_over(t, e.nodes, e.host)
        }
        TransportKind::Shm => join_shm(e, ctl),
    }
}

/// Start `n` node processes running `program` with `args` and return a
/// communicator whose host is this process (PICL `open0` + `load0`). The
/// nodes call [`init`]; their output reaches this process's stdout/stderr
/// with `[rank]` prefixes. See the module docs.
pub fn spawn<S: AsRef<std::ffi::OsStr>>(
    n: usize,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[S],
) -> Result<Comm> {
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "spawn",
            what: "a job needs at least one node (n = 0)".into(),
        });
    }
    claim()?;
    let (secret, jobid) = job::new_identity()?;
    let rv = job::listen(
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        &secret,
        &jobid,
        n + 1,
    )?;
    let vars = job::JobVars {
        nodes: n,
        host: true,
        transport: TransportKind::Tcp,
        rendezvous: rv.addr,
        secret: secret.clone(),
        job: jobid.clone(),
        shm_fd: None,
    };
    let mut argv: Vec<OsString> = vec![program.as_ref().to_os_string()];
    argv.extend(args.iter().map(|a| a.as_ref().to_os_string()));
    let mut pids = vec![None; n + 1];
    let mut forwarders = Vec::new();
    for (ep, pid) in pids.iter_mut().enumerate().take(n) {
        let p = job::Proc {
            ep,
            argv: &argv,
            bind: None,
        };
        match job::start(&p, &vars, true, &rv.sender) {
            Ok((id, fw)) => {
                *pid = Some(id);
                forwarders.extend(fw);
            }
            Err(e) => {
                for id in pids.iter().flatten() {
                    monitor::kill(*id, libc::SIGKILL);
                }
                return Err(e);
            }
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let m = monitor::Monitor::new(monitor::MonitorSetup {
        nodes: n,
        host: true,
        pids: pids.clone(),
        timeout: None,
        interrupted: None,
        stop: stop.clone(),
        verbose: true,
    });
    let events = rv.events;
    let handle = std::thread::Builder::new()
        .name("hypercomm-spawn-monitor".into())
        .spawn(move || m.run(&events))
        .map_err(|e| io_err("spawn", e))?;
    let bg = Arc::new(monitor::Background {
        stop,
        handle: Mutex::new(Some(handle)),
    });
    let joined = connect_rendezvous(&rv.addr.to_string(), &secret, &jobid, n)
        .and_then(|ctl| join_tcp(ctl, n, n + 1, None, &secret, &jobid));
    let t = match joined {
        Ok(t) => t,
        Err(e) => {
            for id in pids.iter().flatten() {
                monitor::kill(*id, libc::SIGKILL);
            }
            bg.finish();
            return Err(e);
        }
    };
    t.on_close(Box::new(move || {
        bg.finish();
        for f in forwarders {
            let _ = f.join();
        }
    }));
    world_over(t, n, true)
}
