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
//! Not done yet: restarting or replacing failed ranks.

use super::control::{self, Ctl};
use crate::transport::tcp::{auth, tune};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// After the first failure or abort, how long the other ranks get to notice
/// and exit by themselves before they are sent SIGTERM.
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// How long after the first failure the launcher waits before naming the
/// cause (so that a rank killed by a signal is named rather than the peers
/// that noticed its death and exited first).
pub(crate) const WINDOW: Duration = Duration::from_millis(300);
/// After SIGTERM, how long before SIGKILL.
pub(crate) const KILL_AFTER: Duration = Duration::from_secs(1);

/// Something the monitor learns.
pub(crate) enum Event {
    /// An endpoint authenticated and said hello (stream: for writing to it).
    Joined {
        ep: usize,
        addr: String,
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
                                eprintln!("hypercomm: refused a rendezvous connection from {peer}: endpoint {id} is not part of this job");
                                return;
                            }
                            Err(e) => {
                                eprintln!("hypercomm: refused a rendezvous connection from {peer}: {e}");
                                return;
                            }
                        };
                        tune(&s);
                        let addr = match control::read(&mut s) {
                            Ok(Some(Ctl::Hello { endpoint, addr })) if endpoint as usize == id => addr,
                            // Closed before its hello: it could not make its
                            // transport and says why itself.
                            Ok(None) => return,
                            other => {
                                eprintln!("hypercomm: endpoint {id} ({peer}) did not say hello properly ({other:?}); closing");
                                return;
                            }
                        };
                        let Ok(w) = s.try_clone() else { return };
                        if tx.send(Event::Joined { ep: id, addr, stream: w }).is_err() {
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

/// `rank 3` or `host`.
pub(crate) fn label(ep: usize, nodes: usize, host: bool) -> String {
    if host && ep == nodes {
        "host".to_string()
    } else {
        format!("rank {ep}")
    }
}

/// The name of a signal number.
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    format!("signal {name} ({sig})")
}

/// How a process ended, in words, and the exit code the launcher should
/// pass on (`None`: success).
pub(crate) fn describe_exit(status: ExitStatus) -> (String, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        (
            format!("was killed by {}", signal_name(sig)),
            Some(128 + sig),
        )
    } else {
        match status.code() {
            Some(0) => ("exited normally".into(), None),
            Some(c) => (format!("exited with code {c}"), Some(c)),
            None => ("ended in an unknown way".into(), Some(1)),
        }
    }
}

/// How a rank started over ssh ended, from its ssh's status: the remote
/// shell reports a death by signal as `128 + n`; 255 is ssh's own failure.
/// (The monitor's label names the host.)
pub(crate) fn describe_remote_exit(status: ExitStatus) -> (String, Option<i32>) {
    match status.code() {
        Some(255) => (
            "could not be started over ssh, or ssh lost its connection (ssh exited with code 255; its message, if any, is above)".into(),
            Some(255),
        ),
        Some(c) if c > 128 && c < 128 + 65 => {
            (format!("was killed by {}", signal_name(c - 128)), Some(c))
        }
        _ => describe_exit(status),
    }
}

/// Send `sig` to `pid`.
pub(crate) fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid we started and have not yet reaped (the
    // monitor stops signalling a child once its exit was seen).
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
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
    /// Set from a signal handler (Ctrl-C).
    pub(crate) interrupted: Option<&'static AtomicBool>,
    /// Set when the job should end now (a spawning host finished): the
    /// children get [`GRACE`] to exit, then are stopped.
    pub(crate) stop: Arc<AtomicBool>,
    /// Print diagnostics (the launcher) or stay quiet (Slurm rank 0).
    pub(crate) verbose: bool,
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
    table_sent: bool,
    exited: Vec<bool>,
    ctl_closed: Vec<bool>,
    finished: Vec<bool>,
    failure: Option<(String, i32, Option<usize>)>,
    aborted: bool,
    results: Vec<Option<Vec<u8>>>,
    teardown: Option<Instant>,
    /// Failures seen but not yet attributed: (class, order, text, code,
    /// endpoint).
    candidates: Vec<(u8, usize, String, i32, usize)>,
    decide_at: Option<Instant>,
    term_sent: Option<Instant>,
    killed: bool,
    stopping_quietly: bool,
    starter_exited: bool,
    /// Ranks of a starter's job (mpirun) whose control connection closed
    /// before they finished, in order, and when to report them if the
    /// starter does not end first (it tells how they ended).
    lost: Vec<usize>,
    lost_at: Option<Instant>,
}

impl Monitor {
    pub(crate) fn new(setup: MonitorSetup) -> Monitor {
        let endpoints = setup.pids.len();
        Monitor {
            setup,
            writers: (0..endpoints).map(|_| None).collect(),
            addrs: vec![None; endpoints],
            table_sent: false,
            exited: vec![false; endpoints],
            ctl_closed: vec![false; endpoints],
            finished: vec![false; endpoints],
            failure: None,
            aborted: false,
            results: vec![None; endpoints],
            teardown: None,
            candidates: Vec::new(),
            decide_at: None,
            term_sent: None,
            killed: false,
            stopping_quietly: false,
            starter_exited: false,
            lost: Vec::new(),
            lost_at: None,
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
            eprintln!("hypercomm: {msg}");
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

    /// Record a failure of `ep`. Its peers are told at once; which failure
    /// is reported as *the* cause is decided [`WINDOW`] after the first one,
    /// preferring deaths by signal (`signal`) to exits with an error code,
    /// which are often just the peers noticing the death first.
    fn fail(&mut self, ep: usize, what: String, code: i32, signal: bool) {
        if self.failure.is_some() || self.aborted {
            self.say(&what);
            return;
        }
        self.broadcast(
            ep,
            &Ctl::PeerFailed {
                endpoint: ep as u32,
                message: what.clone(),
            },
        );
        let seq = self.candidates.len();
        self.candidates.push((!signal as u8, seq, what, code, ep));
        let now = Instant::now();
        self.decide_at.get_or_insert(now + WINDOW);
        self.teardown.get_or_insert(now + GRACE);
    }

    /// Name the primary failure among the candidates and print them all.
    fn decide(&mut self) {
        if self.candidates.is_empty() || self.failure.is_some() {
            return;
        }
        let mut c = std::mem::take(&mut self.candidates);
        c.sort_by_key(|x| (x.0, x.1));
        for (_, _, what, _, _) in &c {
            self.say(what);
        }
        let (_, _, what, code, ep) = c.swap_remove(0);
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
            // message on it) says that nothing more will come.
            all_exited
                && (0..self.writers.len())
                    .all(|ep| self.writers[ep].is_none() || self.ctl_closed[ep])
        } else {
            self.ctl_closed.iter().all(|&c| c)
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Joined { ep, addr, stream } => {
                self.writers[ep] = Some(stream);
                self.addrs[ep] = Some(addr);
                if !self.table_sent && self.addrs.iter().all(|a| a.is_some()) {
                    let addrs: Vec<String> = self
                        .addrs
                        .iter()
                        .map(|a| a.clone().unwrap_or_default())
                        .collect();
                    self.broadcast(usize::MAX, &Ctl::Table { addrs });
                    self.table_sent = true;
                }
            }
            Event::Ctl { ep, msg } => match msg {
                Ctl::Abort { message } if !self.aborted && self.failure.is_none() => {
                    self.candidates.clear();
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
                Ctl::Finished { ok, message } => {
                    self.finished[ep] = true;
                    if !ok && self.setup.pids[ep].is_none() {
                        let what = format!("{} failed: {message}", self.label(ep));
                        self.fail(ep, what, 1, false);
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
                    self.fail(ep, what, 1, false);
                }
            }
            Event::StarterExited { status } => {
                self.starter_exited = true;
                self.starter_ended(status);
            }
            Event::Exited { ep, status } => {
                self.exited[ep] = true;
                let (how, code) = match self.remote(ep) {
                    Some(_) => describe_remote_exit(status),
                    None => describe_exit(status),
                };
                let stopped_by_us = self.term_sent.is_some() || self.stopping_quietly;
                match code {
                    Some(code) if !stopped_by_us => {
                        use std::os::unix::process::ExitStatusExt;
                        let what = format!("{} {how}", self.label(ep));
                        // Over ssh, the remote shell's 128 + n.
                        let by_signal = status.signal().is_some()
                            || (self.remote(ep).is_some() && code > 128 && code < 128 + 65);
                        self.fail(ep, what, code, by_signal);
                    }
                    Some(_) => {}
                    None => {
                        if self.writers[ep].is_none()
                            && !self.table_sent
                            && self.setup.pids.iter().any(|p| p.is_some())
                        {
                            // Exited before joining while others may wait for it:
                            // only a failure if somebody did join.
                            if self.writers.iter().any(|w| w.is_some()) {
                                let what =
                                    format!("{} exited before joining the job", self.label(ep));
                                self.fail(ep, what, 1, false);
                            }
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
            self.fail(first, what, code, signal);
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
            self.fail(first, what, code.unwrap_or(1), false);
        } else if let Some(&first) = unfinished.first() {
            let what = format!("{name} {how} before {} finished", list(&unfinished));
            self.fail(first, what, code.unwrap_or(1), false);
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
            if self.lost_at.is_some_and(|t| now >= t) {
                self.lost_at = None;
                for ep in std::mem::take(&mut self.lost) {
                    let what = format!(
                        "{} lost its connection to the rendezvous without finishing",
                        self.label(ep)
                    );
                    self.fail(ep, what, 1, false);
                }
            }
            if self.decide_at.is_some_and(|t| now >= t) {
                self.decide();
            }
            if let Some(flag) = self.setup.interrupted {
                if flag.load(Ordering::SeqCst) && !interrupted {
                    interrupted = true;
                    self.say("interrupted; stopping the job");
                    self.failure
                        .get_or_insert(("interrupted".into(), 130, None));
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
                code: if code == 0 { 1 } else { code },
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
