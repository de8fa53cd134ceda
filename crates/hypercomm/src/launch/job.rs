//! Starting a job's processes: the engine of `hypercomm run` and of
//! [`spawn`](crate::spawn).
//!
//! [`run_job`] creates the secret and job id, opens the rendezvous
//! listener, starts every process with the variables of the environment
//! contract ([`crate::launch`]), forwards their output line by line with a
//! `[rank]` / `[host]` prefix, and runs the monitor until every process has
//! ended: the failure that caused the others (see the monitor's docs on
//! whom it blames: a rank's own panic or error, a death by signal, an
//! abort) is printed first with the rank and the reason, and its exit code
//! is the launcher's; the other ranks get a grace period to notice, then
//! SIGTERM, then SIGKILL. SIGINT and SIGTERM to the launcher stop the
//! whole job.
//!
//! Not done yet: remote hosts over ssh (`--hosts` names local addresses:
//! each rank listens on its address, but every process runs on this
//! machine), stdin forwarding.

use super::env;
use super::monitor::{self, Event, Monitor, MonitorSetup, Rendezvous, Verdict};
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::transport::tcp::auth::{random_bytes, to_hex, SECRET_LEN};
use crate::transport::TransportKind;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

/// What to start.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Number of node processes.
    pub nodes: usize,
    /// The node program and its arguments.
    pub program: Vec<OsString>,
    /// The host program and its arguments, if the job has one.
    pub host_program: Option<Vec<OsString>>,
    /// Transport between the processes.
    pub transport: TransportKind,
    /// Addresses the ranks listen on, assigned round-robin (`--hosts`);
    /// empty: the rendezvous address.
    pub hosts: Vec<IpAddr>,
    /// Address of the rendezvous listener (default: loopback, or the first
    /// of `hosts`).
    pub listen: Option<IpAddr>,
    /// Stop the job after this long.
    pub timeout: Option<Duration>,
    /// Prefix every output line with `[rank] ` / `[host] `.
    pub prefix: bool,
    /// Extra environment variables for every process.
    pub env: Vec<(OsString, OsString)>,
    /// Stop the job on SIGINT, SIGTERM and SIGHUP to this process (the
    /// launcher command does; a program running [`super::run_processes`]
    /// keeps its own signal handling).
    pub signals: bool,
    /// Print what went wrong on stderr (`hypercomm: rank 2 exited with …`).
    pub verbose: bool,
}

impl JobSpec {
    /// `nodes` processes of `program` (program and arguments) over the
    /// shared-memory transport, output prefixed, no host, no time limit,
    /// signals handled, failures reported on stderr.
    pub fn new(nodes: usize, program: Vec<OsString>) -> JobSpec {
        JobSpec {
            nodes,
            program,
            host_program: None,
            transport: TransportKind::Shm,
            hosts: Vec::new(),
            listen: None,
            timeout: None,
            prefix: true,
            env: Vec::new(),
            signals: true,
            verbose: true,
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// The exit code the launcher should return (0: every process succeeded).
    pub code: i32,
    /// What went wrong first, if anything (already printed on stderr).
    pub failure: Option<String>,
    /// The rank that went wrong first, when one did.
    pub culprit: Option<Rank>,
    /// What each endpoint reported as its result (ranks of
    /// [`super::run_processes`]).
    pub(crate) results: Vec<Option<Vec<u8>>>,
}

fn io_err(op: &str, e: impl std::fmt::Display) -> Error {
    Error::Io {
        op: op.to_string(),
        message: e.to_string(),
    }
}

/// Per-job identity: a fresh secret and a job id.
pub(crate) fn new_identity() -> Result<(Vec<u8>, String)> {
    let secret: [u8; SECRET_LEN] =
        random_bytes().map_err(|e| io_err("making the job secret", e))?;
    let tag: [u8; 4] = random_bytes().map_err(|e| io_err("making the job id", e))?;
    let job = format!("{}-{}", std::process::id(), to_hex(&tag));
    Ok((secret.to_vec(), job))
}

/// Copy `r` to our stdout or stderr line by line, prefixed.
fn forward(
    r: impl Read + Send + 'static,
    prefix: Option<String>,
    to_stderr: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let mut out = Vec::with_capacity(line.len() + 10);
            if let Some(p) = &prefix {
                out.extend_from_slice(p.as_bytes());
            }
            out.extend_from_slice(&line);
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(&out)
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(&out).and_then(|_| o.flush())
            };
        }
    })
}

/// One process to start.
pub(crate) struct Proc<'a> {
    pub(crate) ep: usize,
    pub(crate) argv: &'a [OsString],
    pub(crate) bind: Option<IpAddr>,
}

/// The common variables of a job.
pub(crate) struct JobVars {
    pub(crate) nodes: usize,
    pub(crate) host: bool,
    pub(crate) transport: TransportKind,
    pub(crate) rendezvous: SocketAddr,
    pub(crate) secret: Vec<u8>,
    pub(crate) job: String,
    /// Variables the transport asked for, and the user's.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Descriptors every process inherits.
    pub(crate) inherit: Vec<i32>,
}

/// Start one process with the contract's environment; its output is
/// forwarded and its exit reported on `events`. Returns its pid and the
/// forwarding threads.
pub(crate) fn start(
    p: &Proc<'_>,
    vars: &JobVars,
    prefix: bool,
    events: &Sender<Event>,
) -> Result<(u32, Vec<std::thread::JoinHandle<()>>)> {
    let Some((prog, args)) = p.argv.split_first() else {
        return Err(Error::InvalidArgument {
            op: "hypercomm run",
            what: "no program given".into(),
        });
    };
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .env(env::RANK, p.ep.to_string())
        .env(env::NODES, vars.nodes.to_string())
        .env(env::HOST, if vars.host { "1" } else { "0" })
        .env(env::TRANSPORT, vars.transport.name())
        .env(env::RENDEZVOUS, vars.rendezvous.to_string())
        .env(env::SECRET, to_hex(&vars.secret))
        .env(env::JOB, &vars.job)
        .env_remove(env::SHM_FD)
        .env_remove(env::BIND)
        .envs(vars.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(b) = p.bind {
        cmd.env(env::BIND, b.to_string());
    }
    let inherit = vars.inherit.clone();
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe system calls (prctl, fcntl) on plain integers.
    unsafe {
        cmd.pre_exec(move || {
            // Die with the launcher (its thread that started us).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            for &fd in &inherit {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| {
        io_err(
            "starting a process",
            format!("{}: {e}", std::path::Path::new(prog).display()),
        )
    })?;
    let pid = child.id();
    let label = monitor::label(p.ep, vars.nodes, vars.host);
    let tag = if label == "host" {
        "[host] ".to_string()
    } else {
        format!("[{}] ", p.ep)
    };
    let mut fw = Vec::new();
    if let Some(o) = child.stdout.take() {
        fw.push(forward(o, prefix.then(|| tag.clone()), false));
    }
    if let Some(e) = child.stderr.take() {
        fw.push(forward(e, prefix.then(|| tag.clone()), true));
    }
    let tx = events.clone();
    let ep = p.ep;
    std::thread::spawn(move || {
        if let Ok(status) = child.wait() {
            let _ = tx.send(Event::Exited { ep, status });
        }
    });
    Ok((pid, fw))
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only stores to an atomic, which is
        // async-signal-safe; the sigaction struct is fully initialised.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Open the rendezvous listener on `ip` (port chosen by the system).
pub(crate) fn listen(ip: IpAddr, secret: &[u8], job: &str, endpoints: usize) -> Result<Rendezvous> {
    let l = TcpListener::bind((ip, 0))
        .map_err(|e| io_err("opening the rendezvous listener", format!("{ip}: {e}")))?;
    monitor::serve(l, secret.to_vec(), job.to_string(), endpoints)
        .map_err(|e| io_err("starting the rendezvous", e))
}

/// Run a whole job (the `hypercomm run` command): start the processes,
/// forward their output, propagate failures, wait for the end. Installs
/// handlers for SIGINT, SIGTERM and SIGHUP that stop the job cleanly.
pub fn run_job(spec: &JobSpec) -> Result<JobOutcome> {
    if spec.nodes == 0 {
        return Err(Error::InvalidArgument {
            op: "hypercomm run",
            what: "-n must be at least 1".into(),
        });
    }
    if spec.program.is_empty() {
        return Err(Error::InvalidArgument {
            op: "hypercomm run",
            what: "no program given".into(),
        });
    }
    let host = spec.host_program.is_some();
    let endpoints = spec.nodes + host as usize;
    let prepared = spec.transport.setup().prepare(endpoints)?;
    let (secret, job) = new_identity()?;
    let ip = spec
        .listen
        .or_else(|| spec.hosts.first().copied())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let rv = listen(ip, &secret, &job, endpoints)?;
    if spec.signals {
        install_signal_handlers();
    }
    let mut extra: Vec<(OsString, OsString)> = prepared
        .env
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    extra.extend(spec.env.iter().cloned());
    let vars = JobVars {
        nodes: spec.nodes,
        host,
        transport: spec.transport,
        rendezvous: rv.addr,
        secret,
        job,
        env: extra,
        inherit: {
            use std::os::fd::AsRawFd;
            prepared.inherit.iter().map(|f| f.as_raw_fd()).collect()
        },
    };
    let mut pids = vec![None; endpoints];
    let mut forwarders = Vec::new();
    let bind_of = |ep: usize| {
        if spec.hosts.is_empty() {
            None
        } else {
            Some(spec.hosts[ep % spec.hosts.len()])
        }
    };
    let mut started = Ok(());
    for (ep, slot) in pids.iter_mut().enumerate() {
        let argv = if ep == spec.nodes {
            spec.host_program.as_deref().unwrap_or_default()
        } else {
            &spec.program
        };
        let p = Proc {
            ep,
            argv,
            bind: bind_of(ep),
        };
        match start(&p, &vars, spec.prefix, &rv.sender) {
            Ok((pid, fw)) => {
                *slot = Some(pid);
                forwarders.extend(fw);
            }
            Err(e) => {
                started = Err(e);
                break;
            }
        }
    }
    if let Err(e) = started {
        for pid in pids.iter().flatten() {
            monitor::kill(*pid, libc::SIGKILL);
        }
        return Err(e);
    }
    let m = Monitor::new(MonitorSetup {
        nodes: spec.nodes,
        host,
        pids,
        timeout: spec.timeout,
        interrupted: spec.signals.then_some(&INTERRUPTED),
        stop: Arc::new(AtomicBool::new(false)),
        verbose: spec.verbose,
    });
    let Verdict {
        code,
        failure,
        culprit,
        results,
    } = m.run(&rv.events);
    for f in forwarders {
        let _ = f.join();
    }
    drop(prepared);
    let culprit = culprit.map(|ep| {
        if host && ep == spec.nodes {
            Rank::Host
        } else {
            Rank::Node(ep)
        }
    });
    Ok(JobOutcome {
        code,
        failure,
        culprit,
        results,
    })
}
