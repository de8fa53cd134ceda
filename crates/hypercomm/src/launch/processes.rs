//! Ranks as processes of this same program: [`run_processes`] and
//! [`Processes`].
//!
//! The parent starts `n` copies of the running executable (same arguments
//! unless told otherwise) as one job of the chosen transport, through the
//! launcher's engine ([`super::job::run_job`]: output forwarded with
//! `[rank]` prefixes, failures named, a time limit). Each copy runs the
//! program from `main` again; the variable `HYPERCOMM_PROCESSES_KEY` tells
//! it which call it was started for. At that call it joins the job, runs
//! the closure as its rank, sends the result (serialised with postcard) to
//! the parent over its control connection and exits; a call with another
//! key returns an empty result at once, so a program may make several
//! calls in sequence (the benchmark does, one per measurement) as long as
//! it reaches them in the same order with the same arguments.
//!
//! A call's key is its source location plus how many times this process
//! has made a call there, which is the same in the parent and its copies
//! when the program is deterministic up to the call. Programs whose calls
//! are not (tests run in parallel threads by the test harness) name each
//! call with [`Processes::key`].

use super::job::{run_job, JobSpec};
use super::join::report_result;
use super::rank::panic_message;
use crate::comm::Comm;
use crate::error::BoxError;
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::transport::{Transport, TransportKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::Duration;

/// The variable naming the call a rank process was started for.
pub(crate) const KEY: &str = "HYPERCOMM_PROCESSES_KEY";

/// How a rank of [`Processes::ends`] ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RankEnd<R> {
    /// Which rank.
    pub rank: Rank,
    /// Its result, when it delivered one.
    pub result: Option<R>,
}

/// A job of ranks that are processes of this program; see the module docs.
///
/// ```no_run
/// use hypercomm::launch::Processes;
/// use hypercomm::TransportKind;
/// let sums = Processes::new(4)
///     .transport(TransportKind::Shm)
///     .run(|comm| comm.allreduce(&[comm.rank() as u64], hypercomm::collective::Sum))
///     .unwrap();
/// assert!(sums.iter().all(|s| s == &vec![6]));
/// ```
#[derive(Debug, Clone)]
pub struct Processes {
    nodes: usize,
    kind: TransportKind,
    args: Option<Vec<OsString>>,
    env: Vec<(OsString, OsString)>,
    key: Option<String>,
    timeout: Option<Duration>,
    prefix: bool,
    verbose: bool,
}

/// Calls made so far at each source location (for default keys).
static CALLS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

#[track_caller]
fn default_key() -> String {
    let at = std::panic::Location::caller();
    let site = format!("{}:{}:{}", at.file(), at.line(), at.column());
    let mut m = CALLS.lock().unwrap_or_else(|p| p.into_inner());
    let k = m
        .get_or_insert_with(HashMap::new)
        .entry(site.clone())
        .or_insert(0);
    *k += 1;
    format!("{site}#{k}")
}

/// A rank's body, as the job runs it.
type RankFn<'a, H, R> = dyn Fn(&Comm) -> std::result::Result<Either<H, R>, BoxError> + 'a;

/// What a rank process sends back.
#[derive(Serialize, Deserialize)]
pub(crate) enum Either<H, R> {
    /// The host's result.
    Host(H),
    /// A node's result.
    Node(R),
}

impl Processes {
    /// Whether this process is a rank copy started by a [`Processes`] call
    /// (a program may keep quiet in its copies: their output reaches the
    /// parent's terminal).
    pub fn is_copy() -> bool {
        std::env::var_os(KEY).is_some()
    }

    /// `nodes` rank processes over shared memory, this program's own
    /// arguments, output prefixed with `[rank]`, no time limit.
    pub fn new(nodes: usize) -> Processes {
        Processes {
            nodes,
            kind: TransportKind::Shm,
            args: None,
            env: Vec::new(),
            key: None,
            timeout: None,
            prefix: true,
            verbose: true,
        }
    }

    /// The transport between the processes (`shm` or `tcp`).
    pub fn transport(mut self, kind: TransportKind) -> Processes {
        self.kind = kind;
        self
    }

    /// The arguments the copies get instead of this process's own.
    pub fn args<I, S>(mut self, args: I) -> Processes
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// An extra environment variable for every copy.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Processes {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Name this call (instead of its source location and count).
    pub fn key(mut self, key: impl Into<String>) -> Processes {
        self.key = Some(key.into());
        self
    }

    /// Stop the job (and fail) if it runs longer than `d`.
    pub fn timeout(mut self, d: Duration) -> Processes {
        self.timeout = Some(d);
        self
    }

    /// Do not prefix the copies' output with their rank, and do not report
    /// failures on stderr (the returned error still says what happened).
    pub fn quiet(mut self) -> Processes {
        self.prefix = false;
        self.verbose = false;
        self
    }

    /// Run `f` on every rank; their results in rank order. See
    /// [`run_processes`].
    #[track_caller]
    pub fn run<R, E, F>(self, f: F) -> Result<Vec<R>>
    where
        R: Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> std::result::Result<R, E>,
    {
        let key = match self.key.clone() {
            Some(k) => k,
            None => default_key(),
        };
        let (_, nodes) = self.launch::<(), R>(key, false, &|c: &Comm| {
            f(c).map(Either::Node).map_err(Into::into)
        })?;
        Ok(nodes)
    }

    /// Run `node_fn` on `n` nodes and `host_fn` on a host process (also a
    /// copy of this program); the host's result and the nodes' in rank
    /// order.
    #[track_caller]
    pub fn run_with_host<H, R, EH, EN, FH, FN>(
        self,
        host_fn: FH,
        node_fn: FN,
    ) -> Result<(H, Vec<R>)>
    where
        H: Serialize + DeserializeOwned,
        R: Serialize + DeserializeOwned,
        EH: Into<BoxError>,
        EN: Into<BoxError>,
        FH: Fn(&Comm) -> std::result::Result<H, EH>,
        FN: Fn(&Comm) -> std::result::Result<R, EN>,
    {
        let key = match self.key.clone() {
            Some(k) => k,
            None => default_key(),
        };
        let (host, nodes) = self.launch::<H, R>(key, true, &|c: &Comm| {
            if c.is_host() {
                host_fn(c).map(Either::Host).map_err(Into::into)
            } else {
                node_fn(c).map(Either::Node).map_err(Into::into)
            }
        })?;
        match host {
            Some(h) => Ok((h, nodes)),
            // A copy started for another call.
            None if std::env::var_os(KEY).is_some() => Err(not_this_call()),
            None => Err(Error::Protocol("the host delivered no result".into())),
        }
    }

    /// Run `f` on every rank and say how each ended, whatever happened to
    /// the job: the ranks' results where they delivered one, and the
    /// job's failure (`Err` only when the job could not be run at all).
    #[track_caller]
    pub fn ends<R, E, F>(self, f: F) -> Result<(Vec<RankEnd<R>>, Option<Error>)>
    where
        R: Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> std::result::Result<R, E>,
    {
        let key = match self.key.clone() {
            Some(k) => k,
            None => default_key(),
        };
        if let Some(mine) = std::env::var_os(KEY) {
            if mine != *key {
                return Ok((Vec::new(), None));
            }
            rank_process::<(), R>(&|c: &Comm| f(c).map(Either::Node).map_err(Into::into));
        }
        let (ends, failure) = self.parent::<(), R>(&key, false)?;
        let ends = ends
            .into_iter()
            .map(|(rank, r)| RankEnd {
                rank,
                result: match r {
                    Some(Either::Node(v)) => Some(v),
                    _ => None,
                },
            })
            .collect();
        Ok((ends, failure))
    }

    fn launch<H, R>(
        self,
        key: String,
        host: bool,
        f: &RankFn<'_, H, R>,
    ) -> Result<(Option<H>, Vec<R>)>
    where
        H: Serialize + DeserializeOwned,
        R: Serialize + DeserializeOwned,
    {
        if let Some(mine) = std::env::var_os(KEY) {
            if mine != *key {
                return Ok((None, Vec::new()));
            }
            rank_process(f);
        }
        let (ends, failure) = self.parent::<H, R>(&key, host)?;
        if let Some(e) = failure {
            return Err(e);
        }
        let mut nodes = Vec::with_capacity(self.nodes);
        let mut h = None;
        for (rank, r) in ends {
            match r {
                Some(Either::Node(v)) => nodes.push(v),
                Some(Either::Host(v)) => h = Some(v),
                None => {
                    return Err(Error::RankFailed {
                        rank,
                        message: "it ended without delivering a result".into(),
                        source: None,
                    })
                }
            }
        }
        Ok((h, nodes))
    }

    /// Start the job and collect what every rank sent.
    #[allow(clippy::type_complexity)]
    fn parent<H, R>(
        &self,
        key: &str,
        host: bool,
    ) -> Result<(Vec<(Rank, Option<Either<H, R>>)>, Option<Error>)>
    where
        H: DeserializeOwned,
        R: DeserializeOwned,
    {
        if self.nodes == 0 {
            return Err(Error::InvalidArgument {
                op: "run_processes",
                what: "a job needs at least one node (n = 0)".into(),
            });
        }
        let exe = std::env::current_exe()
            .map_err(|e| Error::io("run_processes: finding this program's executable", e))?;
        let mut program = vec![exe.into_os_string()];
        match &self.args {
            Some(a) => program.extend(a.iter().cloned()),
            None => program.extend(std::env::args_os().skip(1)),
        }
        let mut spec = JobSpec::new(self.nodes, program.clone());
        spec.host_program = host.then_some(program);
        spec.transport = self.kind;
        spec.timeout = self.timeout;
        spec.prefix = self.prefix;
        spec.verbose = self.verbose;
        spec.signals = false;
        spec.env = self.env.clone();
        spec.env.push((KEY.into(), key.into()));
        let out = run_job(&spec)?;
        let endpoints = self.nodes + host as usize;
        let mut ends = Vec::with_capacity(endpoints);
        for ep in 0..endpoints {
            let rank = if host && ep == self.nodes {
                Rank::Host
            } else {
                Rank::Node(ep)
            };
            let r = match out.results.get(ep).and_then(Option::as_ref) {
                Some(bytes) => Some(postcard::from_bytes(bytes).map_err(|e| {
                    Error::Protocol(format!("{rank} sent a result that does not decode: {e}"))
                })?),
                None => None,
            };
            ends.push((rank, r));
        }
        let failure = out.failure.map(|message| match out.culprit {
            Some(rank) => Error::RankFailed {
                rank,
                // The launcher's sentence names the rank already, and the
                // error says "{rank} failed: " itself.
                message: message
                    .strip_prefix(&format!("{rank} failed: "))
                    .map_or_else(|| message.clone(), str::to_string),
                source: None,
            },
            None => Error::Io {
                op: "run_processes".into(),
                message,
                source: None,
            },
        });
        Ok((ends, failure))
    }
}

fn not_this_call() -> Error {
    Error::InvalidArgument {
        op: "run_processes",
        what: "this process is a rank of another call".into(),
    }
}

/// The rank side: join, run, report, exit. Never returns.
fn rank_process<H: Serialize, R: Serialize>(f: &RankFn<'_, H, R>) -> ! {
    let comm = match super::init() {
        Ok(c) => c,
        Err(e) => {
            say!("hypercomm: joining the job failed: {e}");
            std::process::exit(1)
        }
    };
    let res = catch_unwind(AssertUnwindSafe(|| f(&comm)));
    let failed = |message: String, code: i32| -> ! {
        comm.engine().t.close(Err(message));
        std::process::exit(code)
    };
    match res {
        Ok(Ok(v)) => {
            let sent = postcard::to_stdvec(&v)
                .map_err(|e| Error::Protocol(format!("encoding the result: {e}")))
                .and_then(report_result);
            if let Err(e) = sent {
                say!("hypercomm: {e}");
                failed(e.to_string(), 1)
            }
            match super::finalize(comm) {
                Ok(()) => std::process::exit(0),
                Err(e) => {
                    say!("hypercomm: {e}");
                    std::process::exit(1)
                }
            }
        }
        Ok(Err(e)) => {
            say!("hypercomm: {}: {e}", comm.me());
            failed(e.to_string(), 1)
        }
        Err(p) => failed(panic_message(&*p), 101),
    }
}

/// Run `f` on `n` ranks that are processes of this program over transport
/// `kind`; their results in rank order (see the module docs). In a rank
/// process started for another call, returns an empty vector at once.
///
/// ```no_run
/// let r = hypercomm::launch::run_processes(3, hypercomm::TransportKind::Tcp, |comm| {
///     Ok::<_, hypercomm::Error>(comm.rank() * 10)
/// })
/// .unwrap();
/// if !r.is_empty() {
///     assert_eq!(r, vec![0, 10, 20]);
/// }
/// ```
#[track_caller]
pub fn run_processes<R, E, F>(n: usize, kind: TransportKind, f: F) -> Result<Vec<R>>
where
    R: Serialize + DeserializeOwned,
    E: Into<BoxError>,
    F: Fn(&Comm) -> std::result::Result<R, E>,
{
    Processes::new(n).transport(kind).run(f)
}
