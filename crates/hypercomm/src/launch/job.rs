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
//! Hosts (`--hosts`) are dealt out to the ranks round-robin. A host that
//! is this machine (a loopback address, `localhost`, its own name) runs its
//! ranks here, listening on that address; any other host runs them over
//! ssh ([`super::ssh`]), and then the rendezvous and this machine's ranks
//! listen on the interface that routes to the first remote host (or
//! `--interface`), so that every rank can reach every other.
//!
//! Standard input goes, when [`JobSpec::stdin`] asks (the launcher
//! command does), to the host program, or to node 0 when there is none, as
//! `mpirun` gives it to rank 0: that process inherits it. The others read
//! an empty input.
//!
//! Not done yet: standard input for a process started over ssh (ssh's own
//! input carries the job's secret and then watches for the launcher's end).

pub use crate::engine::parse_timeout;

use super::env;
pub use super::exits::signal_name;
use super::monitor::{self, Event, Monitor, MonitorSetup, Rendezvous, Verdict};
use super::output::{self, Label};
use super::ssh::{self, Place};
use crate::error::io_err;
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::transport::tcp::auth::{random_bytes, to_hex, SECRET_LEN};
use crate::transport::TransportKind;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};
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
    /// Hosts the ranks run on, assigned round-robin (`--hosts`): addresses
    /// or names. This machine's (loopback, `localhost`, its own name) run
    /// here and listen on that address; others are reached over `ssh`.
    /// Empty: every rank here, on the rendezvous address.
    pub hosts: Vec<String>,
    /// The command that reaches a remote host (program and options; the
    /// host and the remote command are appended). Default: `ssh`.
    pub ssh: Vec<OsString>,
    /// Address of the rendezvous listener (default: loopback, the first of
    /// `hosts` when all are this machine's, else the interface that routes
    /// to the first remote host).
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
    /// Give this process's standard input to the host program, or to node
    /// 0 without one (when it runs on this machine); every other process
    /// reads an empty input. Off: every process reads an empty input.
    pub stdin: bool,
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
            ssh: vec!["ssh".into()],
            listen: None,
            timeout: None,
            prefix: true,
            env: Vec::new(),
            signals: true,
            verbose: true,
            stdin: false,
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

/// Per-job identity: a fresh secret and a job id.
pub(crate) fn new_identity() -> Result<(Vec<u8>, String)> {
    let secret: [u8; SECRET_LEN] =
        random_bytes().map_err(|e| io_err("making the job secret", e))?;
    let tag: [u8; 4] = random_bytes().map_err(|e| io_err("making the job id", e))?;
    let job = format!("{}-{}", std::process::id(), to_hex(&tag));
    Ok((secret.to_vec(), job))
}

/// One process to start.
pub(crate) struct Proc<'a> {
    pub(crate) ep: usize,
    pub(crate) argv: &'a [OsString],
    pub(crate) place: &'a Place,
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
    /// The command that reaches a remote host.
    pub(crate) ssh: Vec<OsString>,
    /// The endpoint that inherits this process's standard input, if any.
    pub(crate) stdin_to: Option<usize>,
    /// Start each process here in a process group of its own, so that
    /// stopping it stops what it started too (`sh -c 'prog; true'`). Not
    /// the one that reads a terminal: it stays in the foreground.
    pub(crate) own_groups: bool,
}

/// The contract's variables for endpoint `ep` (without the secret).
fn contract(ep: usize, vars: &JobVars, bind: Option<IpAddr>) -> Vec<(OsString, OsString)> {
    let mut v: Vec<(OsString, OsString)> = vec![
        (env::RANK.into(), ep.to_string().into()),
        (env::NODES.into(), vars.nodes.to_string().into()),
        (env::HOST.into(), (if vars.host { "1" } else { "0" }).into()),
        (env::TRANSPORT.into(), vars.transport.name().into()),
        (env::RENDEZVOUS.into(), vars.rendezvous.to_string().into()),
        (env::JOB.into(), vars.job.clone().into()),
    ];
    if let Some(b) = bind {
        v.push((env::BIND.into(), b.to_string().into()));
    }
    v
}

/// Start one process with the contract's environment, here or over ssh;
/// its output is forwarded and its exit reported on `events`. Returns its
/// pid (for a remote rank, its ssh's) and the forwarding threads.
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
    let (mut cmd, secret_on_stdin) = match p.place {
        Place::Here { bind } => {
            let mut cmd = Command::new(prog);
            cmd.args(args)
                .env_remove(env::SHM_FD)
                .env_remove(env::BIND)
                .envs(contract(p.ep, vars, *bind))
                .env(env::SECRET, to_hex(&vars.secret))
                .envs(vars.env.iter().map(|(k, v)| (k, v)))
                .stdin(if vars.stdin_to == Some(p.ep) {
                    Stdio::inherit()
                } else {
                    Stdio::null()
                });
            (cmd, false)
        }
        Place::Ssh { host, .. } => {
            let Some((ssh, opts)) = vars.ssh.split_first() else {
                return Err(Error::InvalidArgument {
                    op: "hypercomm run",
                    what: "--ssh: empty command".into(),
                });
            };
            let mut remote_vars = ssh::forwarded_env(&[env::SECRET, env::BIND, env::SHM_FD]);
            remote_vars.retain(|(k, _)| !vars.env.iter().any(|(j, _)| j == k));
            remote_vars.extend(contract(p.ep, vars, None));
            remote_vars.extend(vars.env.iter().cloned());
            remote_vars.push((ssh::WATCH_STDIN.into(), "1".into()));
            let dir = std::env::current_dir().ok();
            let line = ssh::remote_command(dir.as_deref(), env::SECRET, &remote_vars, p.argv);
            let mut cmd = Command::new(ssh);
            cmd.args(opts).arg(host).arg(line).stdin(Stdio::piped());
            (cmd, true)
        }
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let inherit = vars.inherit.clone();
    let reads_tty = vars.stdin_to == Some(p.ep) && std::io::stdin().is_terminal();
    let own_group = vars.own_groups && matches!(p.place, Place::Here { .. }) && !reads_tty;
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe system calls (prctl, setpgid, fcntl) on plain
    // integers.
    unsafe {
        cmd.pre_exec(move || {
            // Die with the launcher (its thread that started us); other
            // systems have no such request, and the monitor's kill on its
            // way out is all there is.
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if own_group {
                libc::setpgid(0, 0);
            }
            for &fd in &inherit {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
    let started = cmd.get_program().to_os_string();
    let mut child = cmd.spawn().map_err(|e| {
        io_err(
            "starting a process",
            format!("{}: {e}", std::path::Path::new(&started).display()),
        )
    })?;
    // A remote rank's secret: one line on ssh's stdin, which then stays
    // open until the process ends (its end stops the remote rank).
    let stdin = match (secret_on_stdin, child.stdin.take()) {
        (true, Some(mut w)) => {
            let mut line = to_hex(&vars.secret).into_bytes();
            line.push(b'\n');
            // A failure shows as ssh's own exit, named by the monitor.
            let _ = w.write_all(&line).and_then(|_| w.flush());
            Some(w)
        }
        _ => None,
    };
    let pid = child.id();
    let label = monitor::label(p.ep, vars.nodes, vars.host);
    let tag = if label == "host" {
        "[host] ".to_string()
    } else {
        format!("[{}] ", p.ep)
    };
    let mut fw = Vec::new();
    if let Some(o) = child.stdout.take() {
        fw.push(output::forward(o, Label::fixed(prefix, &tag), false));
    }
    if let Some(e) = child.stderr.take() {
        fw.push(output::forward(e, Label::fixed(prefix, &tag), true));
    }
    let tx = events.clone();
    let ep = p.ep;
    std::thread::spawn(move || {
        let status = child.wait();
        drop(stdin);
        if let Ok(status) = status {
            let _ = tx.send(Event::Exited { ep, status });
        }
    });
    Ok((pid, fw))
}

/// The number of the last of SIGINT, SIGTERM or SIGHUP this process
/// received (0: none), once [`install_signal_handlers`] ran.
static INTERRUPTED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Route SIGINT, SIGTERM and SIGHUP to the [`INTERRUPTED`] number instead
/// of their default action (once per process; later jobs share it).
/// signal-hook's handler only stores to the atomic.
fn install_signal_handlers() -> &'static AtomicUsize {
    INTERRUPTED.get_or_init(|| {
        let flag = Arc::new(AtomicUsize::new(0));
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // Registration fails only for signals that cannot be caught.
            let _ = signal_hook::flag::register_usize(sig, Arc::clone(&flag), sig as usize);
        }
        flag
    })
}

/// How a program run by [`run_program`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramEnd {
    /// It ended by itself with this status.
    Status(std::process::ExitStatus),
    /// This process received the signal (SIGINT, SIGTERM or SIGHUP) and
    /// stopped the program; the convention for the exit code is 128 + it.
    Interrupted(i32),
}

/// Run one program to its end with the launcher's handling of SIGINT,
/// SIGTERM and SIGHUP (`hypercomm sim run`): on one of them the program is
/// sent SIGTERM, and SIGKILL if it is still there the launcher's grace period
/// later; it dies with this process too (Linux). The command then exits with
/// 128 + the signal, as `hypercomm run` does.
pub fn run_program(cmd: &mut Command) -> std::io::Result<ProgramEnd> {
    use std::sync::atomic::Ordering;
    let interrupted = install_signal_handlers();
    // SAFETY: the closure runs between fork and exec and makes one
    // async-signal-safe system call on plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let mut termed: Option<std::time::Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(match termed {
                None => ProgramEnd::Status(status),
                Some(_) => ProgramEnd::Interrupted(interrupted.load(Ordering::Relaxed) as i32),
            });
        }
        if interrupted.load(Ordering::Relaxed) != 0 {
            match termed {
                None => {
                    // Not yet reaped: try_wait above saw it running.
                    super::exits::kill(child.id(), libc::SIGTERM);
                    termed = Some(std::time::Instant::now());
                }
                Some(t) if t.elapsed() >= monitor::KILL_AFTER => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Open the rendezvous listener on `ip` (port chosen by the system).
pub(crate) fn listen(ip: IpAddr, secret: &[u8], job: &str, endpoints: usize) -> Result<Rendezvous> {
    let l = TcpListener::bind((ip, 0))
        .map_err(|e| io_err("opening the rendezvous listener", format!("{ip}: {e}")))?;
    monitor::serve(l, secret.to_vec(), job.to_string(), endpoints)
        .map_err(|e| io_err("starting the rendezvous", e))
}

/// Where every endpoint runs, and the address of the rendezvous: see the
/// module docs.
fn placement(spec: &JobSpec, endpoints: usize) -> Result<(Vec<Place>, IpAddr)> {
    let bad = |what: String| Error::InvalidArgument {
        op: "hypercomm run",
        what,
    };
    if spec.hosts.is_empty() || spec.transport == TransportKind::Mpi {
        // (An MPI job's hosts are mpirun's business; the rendezvous must
        // still be reachable from them.)
        let remote = spec.hosts.iter().find(|h| !ssh::is_here(h));
        let ip = match (spec.listen, remote) {
            (Some(ip), _) => ip,
            (None, Some(r)) => ssh::resolve(r)
                .and_then(|to| ssh::route_to(to).map_err(|e| e.to_string()))
                .map_err(|e| bad(format!("--hosts: {e}; give --interface IP")))?,
            (None, None) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        return Ok((vec![Place::Here { bind: None }; endpoints], ip));
    }
    let remote = spec.hosts.iter().find(|h| !ssh::is_here(h));
    let listen = match (spec.listen, remote) {
        (Some(ip), _) => ip,
        (None, Some(r)) => {
            let to = ssh::resolve(r).map_err(|e| {
                bad(format!(
                    "--hosts: {e}; give --interface IP (the address the other hosts reach this machine on)"
                ))
            })?;
            ssh::route_to(to).map_err(|e| {
                bad(format!(
                    "--hosts: no interface of this machine routes to {r} ({to}): {e}"
                ))
            })?
        }
        (None, None) => ssh::resolve(&spec.hosts[0]).map_err(|e| bad(format!("--hosts: {e}")))?,
    };
    if let Some(r) = remote {
        if spec.transport != TransportKind::Tcp {
            return Err(bad(format!(
                "--hosts: {r} is another machine (reached over ssh), and the {} transport works within one machine; use --transport tcp",
                spec.transport.name()
            )));
        }
    }
    // A host given slots comes once per slot: it is looked up once.
    let mut known: std::collections::HashMap<&str, Place> = Default::default();
    let mut per_host = Vec::with_capacity(spec.hosts.len());
    for h in &spec.hosts {
        if let Some(p) = known.get(h.as_str()) {
            per_host.push(p.clone());
            continue;
        }
        let place = if ssh::is_here(h) {
            let bind = if remote.is_some() {
                listen
            } else {
                ssh::resolve(h).map_err(|e| bad(format!("--hosts: {e}")))?
            };
            Place::Here { bind: Some(bind) }
        } else {
            Place::Ssh {
                host: h.clone(),
                addr: ssh::resolve(h).ok(),
            }
        };
        known.insert(h, place.clone());
        per_host.push(place);
    }
    let places = (0..endpoints)
        .map(|ep| {
            if ep >= spec.nodes {
                // The host program runs here, with the launcher.
                Place::Here { bind: Some(listen) }
            } else {
                per_host[ep % per_host.len()].clone()
            }
        })
        .collect();
    Ok((places, listen))
}

/// Start every endpoint's process (each here or over ssh); on a failure,
/// kill the ones started.
fn start_all(
    spec: &JobSpec,
    vars: &JobVars,
    places: &[Place],
    events: &Sender<Event>,
    pids: &mut [Option<u32>],
    forwarders: &mut Vec<std::thread::JoinHandle<()>>,
) -> Result<()> {
    for ep in 0..pids.len() {
        let argv = if ep == spec.nodes {
            spec.host_program.as_deref().unwrap_or_default()
        } else {
            &spec.program
        };
        let p = Proc {
            ep,
            argv,
            place: &places[ep],
        };
        match start(&p, vars, spec.prefix, events) {
            Ok((pid, fw)) => {
                pids[ep] = Some(pid);
                forwarders.extend(fw);
            }
            Err(e) => {
                for pid in pids.iter().flatten() {
                    monitor::kill(*pid, libc::SIGKILL);
                }
                return Err(e);
            }
        }
    }
    Ok(())
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
    let (places, ip) = placement(spec, endpoints)?;
    let (secret, job) = new_identity()?;
    let rv = listen(ip, &secret, &job, endpoints)?;
    let interrupted = spec.signals.then(install_signal_handlers);
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
        ssh: spec.ssh.clone(),
        // The host is the endpoint after the nodes.
        stdin_to: spec.stdin.then_some(if host { spec.nodes } else { 0 }),
        own_groups: spec.signals,
    };
    let mut pids = vec![None; endpoints];
    let mut forwarders = Vec::new();
    let mut starter = None;
    if spec.transport == TransportKind::Mpi {
        let (name, pid, fw) = super::mpirun::start(spec, &vars, &rv.sender)?;
        starter = Some((name, pid));
        forwarders = fw;
    } else {
        start_all(spec, &vars, &places, &rv.sender, &mut pids, &mut forwarders)?;
    }
    let m = Monitor::new(MonitorSetup {
        nodes: spec.nodes,
        host,
        pids,
        starter,
        remote: places
            .iter()
            .map(|p| match p {
                Place::Ssh { host, .. } => Some(host.clone()),
                Place::Here { .. } => None,
            })
            .collect(),
        timeout: spec.timeout,
        interrupted,
        stop: Arc::new(AtomicBool::new(false)),
        verbose: spec.verbose,
        transport: spec.transport,
    });
    let Verdict {
        code,
        failure,
        culprit,
        results,
    } = m.run(&rv.events);
    output::join(forwarders);
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
