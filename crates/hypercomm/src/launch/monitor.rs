//! The rendezvous server and job monitor: accepts the endpoints' control
//! connections, hands out the address table, relays aborts and deaths, and
//! (when it started the processes) watches them and stops the job on the
//! first failure.
//!
//! One [`Monitor`] serves the launcher (`hypercomm run`: every endpoint is
//! a child process), a spawning host (`spawn`: the nodes are children, the
//! host is this process) and rank 0 under Slurm (no children: liveness is
//! seen through the control connections only).
//!
//! **Whom to blame.** A failing job usually ends with several ranks
//! failing: the one that failed first and the others, which noticed it
//! and exited — often sooner than the first one, which may still be
//! printing a backtrace. The monitor names the root cause from what the
//! ranks report before it looks at the order of exits ([`Class`]): a
//! rank's own report of a failure (its `Finished` says why — a panic's
//! message, an error — and names no other endpoint as the cause) or a
//! death by a signal nobody in the job sent comes first; then exits with
//! an error code that nothing explains; last the failures that a rank
//! reported as caused by another endpoint being gone. Within a class the
//! earliest wins. The launcher exits with the named rank's own exit code
//! (101 for a Rust panic, 128 + the signal number for a signal).
//!
//! Not done yet: restarting or replacing failed ranks.

use super::control::{self, Ctl};
pub(crate) use super::exits::{describe_exit, describe_remote_exit, kill, label, signal_name};
use crate::transport::tcp::{auth, tune};
use crate::transport::TransportKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// After the first failure or abort, how long the other ranks get to notice
/// and exit by themselves before they are sent SIGTERM.
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// How long after the first failure the launcher waits before naming a
/// root cause it has evidence of (a rank's own failure report, a death by
/// signal), so that it is named rather than the peers that noticed it and
/// exited first. Without such evidence the verdict waits for the end of
/// the job.
pub(crate) const WINDOW: Duration = Duration::from_millis(300);
/// After the last child ended, how long its control connections may stay
/// open (its last reports are read well within it).
const LINGER: Duration = Duration::from_secs(1);
/// After SIGTERM, how long before SIGKILL.
pub(crate) const KILL_AFTER: Duration = Duration::from_secs(1);

/// Something the monitor learns.
pub(crate) enum Event {
    /// An endpoint authenticated and said hello (stream: for writing to it).
    Joined {
        ep: usize,
        addr: String,
        /// The cores its process may use.
        cores: u32,
        stream: TcpStream,
    },
    /// A control message from an endpoint.
    Ctl { ep: usize, msg: Ctl },
    /// An endpoint's control connection ended.
    CtlClosed { ep: usize },
    /// A child process ended.
    Exited { ep: usize, status: ExitStatus },
    /// The process that started the endpoints (`mpirun`) ended.
    StarterExited { status: ExitStatus },
    /// The starter said that rank `ep` was killed by signal `signal`
    /// (Open MPI: "noticed that process rank 2 … exited on signal 9").
    StarterSaid { ep: usize, signal: i32 },
}

/// The listening half of a rendezvous.
pub(crate) struct Rendezvous {
    pub(crate) addr: SocketAddr,
    pub(crate) events: Receiver<Event>,
    pub(crate) sender: Sender<Event>,
}

/// Start accepting control connections on `listener` for a job of
/// `endpoints` endpoints.
pub(crate) fn serve(
    listener: TcpListener,
    secret: Vec<u8>,
    job: String,
    endpoints: usize,
) -> std::io::Result<Rendezvous> {
    let addr = listener.local_addr()?;
    let (tx, rx) = mpsc::channel();
    let sender = tx.clone();
    std::thread::Builder::new()
        .name("hypercomm-rendezvous".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                let (secret, job, tx) = (secret.clone(), job.clone(), tx.clone());
                let _ = std::thread::Builder::new()
                    .name("hypercomm-rendezvous-conn".into())
                    .spawn(move || {
                        let peer = s
                            .peer_addr()
                            .map(|a| a.to_string())
                            .unwrap_or_else(|_| "?".into());
                        let id = match auth::server(&mut s, &secret, &job) {
                            Ok(id) if (id as usize) < endpoints => id as usize,
                            Ok(id) => {
                                say!("hypercomm: refused a rendezvous connection from {peer}: endpoint {id} is not part of this job");
                                return;
                            }
                            Err(e) => {
                                say!("hypercomm: refused a rendezvous connection from {peer}: {e}");
                                return;
                            }
                        };
                        tune(&s);
                        let (addr, cores) = match control::read(&mut s) {
                            Ok(Some(Ctl::Hello { endpoint, addr, cores })) if endpoint as usize == id => (addr, cores),
                            // Closed before its hello: it could not make its
                            // transport and says why itself.
                            Ok(None) => return,
                            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                                say!("hypercomm: endpoint {id} ({peer}) said a hello this launcher cannot read ({e}); are the launcher and the program built from the same hypercomm version? closing");
                                return;
                            }
                            other => {
                                say!("hypercomm: endpoint {id} ({peer}) did not say hello properly ({other:?}); closing");
                                return;
                            }
                        };
                        let Ok(w) = s.try_clone() else { return };
                        if tx.send(Event::Joined { ep: id, addr, cores, stream: w }).is_err() {
                            return;
                        }
                        loop {
                            match control::read(&mut s) {
                                Ok(Some(msg)) => {
                                    if tx.send(Event::Ctl { ep: id, msg }).is_err() {
                                        return;
                                    }
                                }
                                _ => {
                                    let _ = tx.send(Event::CtlClosed { ep: id });
                                    return;
                                }
                            }
                        }
                    });
            }
        })?;
    Ok(Rendezvous {
        addr,
        events: rx,
        sender,
    })
}

/// How the monitor should behave.
pub(crate) struct MonitorSetup {
    pub(crate) nodes: usize,
    pub(crate) host: bool,
    /// Child pid of each endpoint (`None`: not a child of ours).
    pub(crate) pids: Vec<Option<u32>>,
    /// The remote host of each endpoint started over ssh (its pid is its
    /// ssh's); empty or `None`: started here.
    pub(crate) remote: Vec<Option<String>>,
    /// The process that started every endpoint (`mpirun`), when one did:
    /// its name and pid. The endpoints are then seen only through their
    /// control connections.
    pub(crate) starter: Option<(String, u32)>,
    /// Stop the whole job after this long.
    pub(crate) timeout: Option<Duration>,
    /// Set from a signal handler to the signal's number (Ctrl-C: SIGINT).
    pub(crate) interrupted: Option<&'static AtomicUsize>,
    /// Set when the job should end now (a spawning host finished): the
    /// children get [`GRACE`] to exit, then are stopped.
    pub(crate) stop: Arc<AtomicBool>,
    /// Print diagnostics (the launcher) or stay quiet (Slurm rank 0).
    pub(crate) verbose: bool,
    /// The job's transport (its feature is named when a rank never joins).
    pub(crate) transport: TransportKind,
}

/// How much a failure says about the cause of a job's failure, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// The endpoint's own failure: it reported one (a panic, an error of
    /// its own) or it died by a signal nobody in the job sent.
    Own,
    /// An exit with an error code, or a lost connection, and no report.
    Unexplained,
    /// It reported that it failed because another endpoint was gone.
    Consequence,
}

/// The evidence that one endpoint failed.
#[derive(Debug, Clone)]
struct Candidate {
    class: Class,
    /// When it was first seen, among the failures of the job.
    seq: usize,
    what: String,
    code: i32,
}

/// The monitor's verdict.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// Exit code for the launcher (0: success).
    pub(crate) code: i32,
    /// What went wrong first, when something did.
    pub(crate) failure: Option<String>,
    /// The endpoint that went wrong first, when one did.
    pub(crate) culprit: Option<usize>,
    /// What each endpoint reported with `Ctl::Result`.
    pub(crate) results: Vec<Option<Vec<u8>>>,
}

/// The running monitor.
pub(crate) struct Monitor {
    setup: MonitorSetup,
    writers: Vec<Option<TcpStream>>,
    addrs: Vec<Option<String>>,
    /// The fewest cores any endpoint said it may use.
    cores: u32,
    table_sent: bool,
    exited: Vec<bool>,
    ctl_closed: Vec<bool>,
    finished: Vec<bool>,
    failure: Option<(String, i32, Option<usize>)>,
    aborted: bool,
    results: Vec<Option<Vec<u8>>>,
    teardown: Option<Instant>,
    /// Per endpoint, the evidence of its failure, until one is named.
    candidates: Vec<Option<Candidate>>,
    /// Failures seen so far (orders the candidates in time).
    seen: usize,
    /// Per endpoint: what it reported as the cause of its failure (the
    /// endpoint it found gone), from its `Finished`.
    causes: Vec<Option<u32>>,
    /// Per endpoint: whether it reported a failure of its own.
    own_failure: Vec<bool>,
    /// Per endpoint: its exit code, once it exited with one.
    exit_codes: Vec<Option<i32>>,
    decide_at: Option<Instant>,
    term_sent: Option<Instant>,
    killed: bool,
    stopping_quietly: bool,
    starter_exited: bool,
    /// The starter's exit status, judged once every joined endpoint's
    /// control connection has ended (their last reports read) or at the
    /// deadline.
    starter_pending: Option<(ExitStatus, Instant)>,
    /// Ranks of a starter's job (mpirun) whose control connection closed
    /// before they finished, in order, and when to report them if the
    /// starter does not end first (it tells how they ended).
    lost: Vec<usize>,
    lost_at: Option<Instant>,
    /// What the starter said of a rank's death (rank, signal).
    starter_said: Option<(usize, i32)>,
    /// When the last child ended.
    all_exited_at: Option<Instant>,
}

impl Monitor {
    pub(crate) fn new(setup: MonitorSetup) -> Monitor {
        let endpoints = setup.pids.len();
        Monitor {
            setup,
            writers: (0..endpoints).map(|_| None).collect(),
            addrs: vec![None; endpoints],
            cores: u32::MAX,
            table_sent: false,
            exited: vec![false; endpoints],
            ctl_closed: vec![false; endpoints],
            finished: vec![false; endpoints],
            failure: None,
            aborted: false,
            results: vec![None; endpoints],
            teardown: None,
            candidates: (0..endpoints).map(|_| None).collect(),
            seen: 0,
            causes: vec![None; endpoints],
            own_failure: vec![false; endpoints],
            exit_codes: vec![None; endpoints],
            decide_at: None,
            term_sent: None,
            killed: false,
            stopping_quietly: false,
            starter_exited: false,
            starter_pending: None,
            lost: Vec::new(),
            lost_at: None,
            starter_said: None,
            all_exited_at: None,
        }
    }

    fn label(&self, ep: usize) -> String {
        let l = label(ep, self.setup.nodes, self.setup.host);
        match self.remote(ep) {
            Some(h) => format!("{l} (on {h})"),
            None => l,
        }
    }

    fn remote(&self, ep: usize) -> Option<&str> {
        self.setup.remote.get(ep).and_then(|h| h.as_deref())
    }

    fn say(&self, msg: &str) {
        if self.setup.verbose {
            say!("hypercomm: {msg}");
        }
    }

    fn broadcast(&mut self, except: usize, m: &Ctl) {
        for (i, w) in self.writers.iter_mut().enumerate() {
            if i != except {
                if let Some(w) = w {
                    let _ = control::write(w, m);
                }
            }
        }
    }

    /// Record evidence that `ep` failed. Its peers are told at once (the
    /// first time); which failure is named as *the* cause is decided later
    /// (see [`Class`]): a rank's own report of a failure or a death by
    /// signal, [`WINDOW`] after the first failure, or else at the end of
    /// the job, so that the peers that noticed a failure and exited first
    /// are not blamed for it.
    fn fail(&mut self, ep: usize, what: String, code: i32, class: Class) {
        if self.failure.is_some() || self.aborted {
            if self.candidates[ep].is_none() {
                self.say(&what);
            }
            return;
        }
        let now = Instant::now();
        match &mut self.candidates[ep] {
            Some(c) => {
                // More evidence about the same endpoint: the better
                // classification and text win, the first time stays.
                if class < c.class {
                    c.class = class;
                    c.what = what;
                }
                if c.code == 1 && code != 1 {
                    c.code = code;
                }
            }
            None => {
                self.broadcast(
                    ep,
                    &Ctl::PeerFailed {
                        endpoint: ep as u32,
                        message: what.clone(),
                    },
                );
                self.candidates[ep] = Some(Candidate {
                    class,
                    seq: self.seen,
                    what,
                    code,
                });
                self.seen += 1;
                self.teardown.get_or_insert(now + GRACE);
            }
        }
        if class == Class::Own {
            self.decide_at.get_or_insert(now + WINDOW);
        }
    }

    /// The class of a failure of `ep` seen as an exit or a lost connection.
    fn exit_class(&self, ep: usize, by_signal: bool) -> Class {
        if self.causes[ep].is_some() {
            Class::Consequence
        } else if by_signal || self.own_failure[ep] {
            Class::Own
        } else {
            Class::Unexplained
        }
    }

    /// Name the primary failure among the candidates and print them all,
    /// the primary first.
    fn decide(&mut self) {
        if self.failure.is_some() {
            return;
        }
        let mut c: Vec<(usize, Candidate)> = self
            .candidates
            .iter_mut()
            .enumerate()
            .filter_map(|(ep, c)| c.take().map(|c| (ep, c)))
            .collect();
        if c.is_empty() {
            return;
        }
        c.sort_by_key(|(_, c)| (c.class, c.seq));
        let (ep, first) = c.remove(0);
        // The culprit's own exit code, when it has exited with one.
        let code = self.exit_codes[ep].unwrap_or(first.code);
        let what = match self.exit_codes[ep] {
            Some(x)
                if !first.what.contains("exited with code") && !first.what.contains("killed") =>
            {
                format!("{} (exit code {x})", first.what)
            }
            _ => first.what,
        };
        self.say(&what);
        for (_, other) in &c {
            self.say(&other.what);
        }
        self.failure = Some((what, code, Some(ep)));
    }

    fn signal_all(&mut self, sig: i32) {
        if let Some((_, pid)) = &self.setup.starter {
            if !self.starter_exited {
                kill(*pid, sig);
            }
        }
        for (ep, pid) in self.setup.pids.iter().enumerate() {
            if let Some(pid) = pid {
                if !self.exited[ep] {
                    kill(*pid, sig);
                }
            }
        }
    }

    fn done(&self) -> bool {
        if self.setup.starter.is_some() {
            // Every endpoint that joined has said all it will say.
            return self.starter_exited
                && self.starter_pending.is_none()
                && (0..self.writers.len())
                    .all(|ep| self.writers[ep].is_none() || self.ctl_closed[ep]);
        }
        let children = self.setup.pids.iter().any(|p| p.is_some());
        let all_exited = self
            .setup
            .pids
            .iter()
            .enumerate()
            .all(|(ep, p)| p.is_none() || self.exited[ep]);
        if children {
            // A child that joined may have reported its result just before
            // it exited: its control connection's end (read after every
            // message on it) says that nothing more will come; one open
            // [`LINGER`] later is a process's that a child left behind.
            all_exited
                && ((0..self.writers.len())
                    .all(|ep| self.writers[ep].is_none() || self.ctl_closed[ep])
                    || self.all_exited_at.is_some_and(|t| t.elapsed() >= LINGER))
        } else {
            self.ctl_closed.iter().all(|&c| c)
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Joined {
                ep,
                addr,
                cores,
                stream,
            } => {
                self.writers[ep] = Some(stream);
                self.addrs[ep] = Some(addr);
                self.cores = self.cores.min(cores);
                if !self.table_sent && self.addrs.iter().all(|a| a.is_some()) {
                    let addrs: Vec<String> = self
                        .addrs
                        .iter()
                        .map(|a| a.clone().unwrap_or_default())
                        .collect();
                    let cores = self.cores;
                    self.broadcast(usize::MAX, &Ctl::Table { addrs, cores });
                    self.table_sent = true;
                }
            }
            Event::Ctl { ep, msg } => match msg {
                Ctl::Abort { message } if !self.aborted && self.failure.is_none() => {
                    self.candidates.iter_mut().for_each(|c| *c = None);
                    self.aborted = true;
                    let text = format!("{} aborted the job: {message}", self.label(ep));
                    self.say(&text);
                    self.failure = Some((text, 1, Some(ep)));
                    self.broadcast(
                        ep,
                        &Ctl::Aborted {
                            endpoint: ep as u32,
                            message,
                        },
                    );
                    self.teardown.get_or_insert(Instant::now() + GRACE);
                }
                Ctl::Result { bytes } => self.results[ep] = Some(bytes),
                Ctl::Finished { ok, message, cause } => {
                    self.finished[ep] = true;
                    self.causes[ep] = cause.filter(|&c| (c as usize) < self.causes.len());
                    if !ok {
                        self.own_failure[ep] = cause.is_none();
                        let what = match cause {
                            Some(c) => format!(
                                "{} failed because {} was gone: {message}",
                                self.label(ep),
                                self.label(c as usize)
                            ),
                            None => format!("{} failed: {message}", self.label(ep)),
                        };
                        let class = self.exit_class(ep, false);
                        let code = self.exit_codes[ep].unwrap_or(1);
                        self.fail(ep, what, code, class);
                    } else if let (Some(c), Some(_)) = (self.candidates[ep].as_mut(), cause) {
                        // It exited with an error before this report came.
                        c.class = Class::Consequence;
                    }
                }
                _ => {}
            },
            Event::CtlClosed { ep } => {
                self.ctl_closed[ep] = true;
                if self.setup.starter.is_some() && !self.finished[ep] && !self.starter_exited {
                    // mpirun's ranks: the first to go is the likely cause,
                    // and mpirun's status (soon) says how it ended.
                    self.lost.push(ep);
                    self.lost_at.get_or_insert(Instant::now() + WINDOW + WINDOW);
                } else if self.setup.pids[ep].is_none() && !self.finished[ep] {
                    let what = format!(
                        "{} lost its connection to the rendezvous without finishing",
                        self.label(ep)
                    );
                    let class = self.exit_class(ep, false);
                    self.fail(ep, what, 1, class);
                }
            }
            Event::StarterExited { status } => {
                // A rank's last reports (its result, `Finished`) may still
                // be on their way through its control connection: judge
                // when they are read.
                // (A rank already lost or named by the starter is judged
                // at once, as before.)
                self.starter_exited = true;
                if self.lost.is_empty() && self.starter_said.is_none() {
                    self.starter_pending = Some((status, Instant::now() + WINDOW + WINDOW));
                } else {
                    self.starter_ended(status);
                }
            }
            Event::StarterSaid { ep, signal } => {
                if ep < self.writers.len() {
                    self.starter_said.get_or_insert((ep, signal));
                }
            }
            Event::Exited { ep, status } => {
                self.exited[ep] = true;
                let mut pids = self.setup.pids.iter().enumerate();
                if pids.all(|(e, p)| p.is_none() || self.exited[e]) {
                    self.all_exited_at.get_or_insert_with(Instant::now);
                }
                let (how, code) = match self.remote(ep) {
                    Some(_) => describe_remote_exit(status),
                    None => describe_exit(status),
                };
                let stopped_by_us = self.term_sent.is_some() || self.stopping_quietly;
                if let (Some(code), false) = (code, stopped_by_us) {
                    self.exit_codes[ep] = Some(code);
                }
                match code {
                    Some(code) if !stopped_by_us => {
                        use std::os::unix::process::ExitStatusExt;
                        let what = format!("{} {how}", self.label(ep));
                        // Over ssh, the remote shell's 128 + n.
                        let by_signal = status.signal().is_some()
                            || (self.remote(ep).is_some() && code > 128 && code < 128 + 65);
                        let class = self.exit_class(ep, by_signal);
                        self.fail(ep, what, code, class);
                    }
                    Some(_) => {}
                    None => {
                        if self.writers[ep].is_none()
                            && !self.table_sent
                            && self.setup.pids.iter().any(|p| p.is_some())
                        {
                            // Exited cleanly without ever joining: the others
                            // would wait for it, and a program that never
                            // joins runs alone (a job of one, or threads)
                            // while the launcher believes it runs a job.
                            let what = format!(
                                "{} exited without joining the job: it never called hypercomm::init or run (it is not a hypercomm program, or one built without the library's `{}` feature that went on after init's error)",
                                self.label(ep),
                                self.setup.transport.name()
                            );
                            self.fail(ep, what, 1, Class::Unexplained);
                        }
                    }
                }
            }
        }
    }

    /// The starter (`mpirun`) ended: a failure unless every endpoint
    /// finished and it exited normally.
    fn starter_ended(&mut self, status: ExitStatus) {
        let name = self
            .setup
            .starter
            .as_ref()
            .map_or("the starter".to_string(), |(n, _)| n.clone());
        let stopped_by_us = self.term_sent.is_some() || self.stopping_quietly;
        let (how, code) = describe_exit(status);
        if let Some((ep, sig)) = self.starter_said {
            // The starter named the rank and the signal.
            self.lost.clear();
            let what = format!(
                "{} was killed by {} ({name} reports)",
                self.label(ep),
                signal_name(sig)
            );
            let class = self.exit_class(ep, true);
            self.fail(ep, what, 128 + sig, class);
            return;
        }
        if let Some(&first) = self.lost.first() {
            // mpirun reports a rank killed by signal n as 128 + n.
            let (what, code, signal) = match code {
                Some(c) if c > 128 && c < 128 + 65 => (
                    format!(
                        "{} ended first without finishing; {name} exited with code {c}: a rank was killed by {}",
                        self.label(first),
                        signal_name(c - 128)
                    ),
                    c,
                    true,
                ),
                _ => (
                    format!(
                        "{} ended first without finishing; {name} {how}",
                        self.label(first)
                    ),
                    code.unwrap_or(1),
                    false,
                ),
            };
            self.lost.clear();
            let class = self.exit_class(first, signal);
            self.fail(first, what, code, class);
            return;
        }
        let never: Vec<usize> = (0..self.writers.len())
            .filter(|&ep| self.writers[ep].is_none())
            .collect();
        let unfinished: Vec<usize> = (0..self.writers.len())
            .filter(|&ep| self.writers[ep].is_some() && !self.finished[ep])
            .collect();
        let list = |v: &[usize]| {
            v.iter()
                .map(|&ep| self.label(ep))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(&first) = never.first() {
            let what = format!("{name} {how} before {} joined the job", list(&never));
            let class = self.exit_class(first, false);
            self.fail(first, what, code.unwrap_or(1), class);
        } else if let Some(&first) = unfinished.first() {
            let what = format!("{name} {how} before {} finished", list(&unfinished));
            let class = self.exit_class(first, false);
            self.fail(first, what, code.unwrap_or(1), class);
        } else if let (Some(c), false) = (code, stopped_by_us) {
            if self.failure.is_none() && !self.aborted {
                let what = format!("{name} {how}");
                self.say(&what);
                self.failure = Some((what, c, None));
            }
        }
    }

    /// Run until the job is over; returns the verdict.
    pub(crate) fn run(mut self, events: &Receiver<Event>) -> Verdict {
        let start = Instant::now();
        let mut timed_out = false;
        let mut interrupted = false;
        while !self.done() {
            match events.recv_timeout(Duration::from_millis(50)) {
                Ok(ev) => self.handle(ev),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            if let Some((status, deadline)) = self.starter_pending {
                let all_read = (0..self.writers.len())
                    .all(|ep| self.writers[ep].is_none() || self.ctl_closed[ep]);
                if all_read || now >= deadline {
                    self.starter_pending = None;
                    self.starter_ended(status);
                }
            }
            if self.lost_at.is_some_and(|t| now >= t) {
                self.lost_at = None;
                for ep in std::mem::take(&mut self.lost) {
                    let what = format!(
                        "{} lost its connection to the rendezvous without finishing",
                        self.label(ep)
                    );
                    let class = self.exit_class(ep, false);
                    self.fail(ep, what, 1, class);
                }
            }
            if self.decide_at.is_some_and(|t| now >= t) {
                self.decide();
            }
            if let Some(flag) = self.setup.interrupted {
                let sig = flag.load(Ordering::SeqCst) as i32;
                if sig != 0 && !interrupted {
                    interrupted = true;
                    let what = format!("interrupted by {}", signal_name(sig));
                    self.say(&format!("{what}; stopping the job"));
                    self.failure.get_or_insert((what, 128 + sig, None));
                    self.signal_all(libc::SIGTERM);
                    self.term_sent = Some(now);
                }
            }
            if let Some(t) = self.setup.timeout {
                if now - start >= t && !timed_out {
                    timed_out = true;
                    let what = format!(
                        "the job did not finish within {} s; stopping it",
                        t.as_secs_f64()
                    );
                    self.say(&what);
                    self.failure.get_or_insert((what, 124, None));
                    self.signal_all(libc::SIGTERM);
                    self.term_sent = Some(now);
                }
            }
            if self.setup.stop.load(Ordering::SeqCst) && !self.stopping_quietly {
                self.stopping_quietly = true;
                self.teardown.get_or_insert(now + GRACE);
            }
            if let Some(t) = self.teardown {
                if now >= t && self.term_sent.is_none() {
                    self.signal_all(libc::SIGTERM);
                    self.term_sent = Some(now);
                }
            }
            if let Some(t) = self.term_sent {
                if now >= t + KILL_AFTER && !self.killed {
                    self.signal_all(libc::SIGKILL);
                    self.killed = true;
                }
            }
        }
        self.decide();
        let results = std::mem::take(&mut self.results);
        match self.failure {
            Some((what, code, culprit)) => Verdict {
                // The culprit's own exit code once it is known (a rank that
                // reported its failure may exit after the verdict).
                code: match culprit.and_then(|ep| self.exit_codes[ep]) {
                    Some(c) if c != 0 => c,
                    _ if code == 0 => 1,
                    _ => code,
                },
                failure: Some(what),
                culprit,
                results,
            },
            None => Verdict {
                code: 0,
                failure: None,
                culprit: None,
                results,
            },
        }
    }
}

/// A monitor running on its own thread (spawn, Slurm rank 0).
pub(crate) struct Background {
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) handle: Mutex<Option<std::thread::JoinHandle<Verdict>>>,
}

impl Background {
    /// Ask the job to end and wait for the monitor (children get [`GRACE`]
    /// to exit by themselves, then SIGTERM, then SIGKILL).
    pub(crate) fn finish(&self) -> Option<Verdict> {
        self.stop.store(true, Ordering::SeqCst);
        let h = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
        h.and_then(|h| h.join().ok())
    }
}
