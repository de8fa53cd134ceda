//! Starting a job of threads: [`run`] and [`run_with_host`].
//!
//! Each rank runs on its own thread of this process over the thread
//! transport. A rank that panics or returns an error is marked failed; the
//! others' operations that need it fail with [`Error::PeerFailed`] (or
//! [`Error::Aborted`] after [`Comm::abort`]), and `run` returns an error
//! naming the rank that failed first, with its message.

use crate::comm::Comm;
use crate::engine::{env_timeout, Engine};
use crate::error::{Error, Result};
use crate::rank::Rank;
use crate::trace;
use crate::transport::{AnyTransport, ThreadJob, Transport};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The error type a rank's closure may return: anything that converts into a
/// boxed error (`hypercomm::Error`, `String`, `anyhow::Error`, `io::Error`…).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How one rank ended.
enum Outcome<R> {
    Ok(R),
    /// Failed; `primary` is false when the failure is a consequence of
    /// another rank's (PeerFailed or Aborted); `seq` orders failures in time.
    Failed {
        message: String,
        primary: bool,
        seq: usize,
    },
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

#[allow(clippy::too_many_arguments)]
fn run_rank<R, E: Into<BoxError>>(
    job: &Arc<ThreadJob>,
    ep: usize,
    nodes: usize,
    host: bool,
    timeout: Option<std::time::Duration>,
    order: &AtomicUsize,
    tr: &Option<Arc<trace::JobTrace>>,
    f: impl FnOnce(&Comm) -> std::result::Result<R, E>,
) -> Outcome<R> {
    let t = job.endpoint(ep);
    let engine = Rc::new(Engine::new(AnyTransport::Thread(t), timeout));
    let comm = Comm::world(engine.clone(), nodes, host);
    let res = catch_unwind(AssertUnwindSafe(|| {
        trace::rank_begin(tr, &comm)?;
        f(&comm).map_err(Into::into)
    }));
    let ok = matches!(res, Ok(Ok(_)));
    trace::rank_end(tr, &comm, ok);
    let outcome = match res {
        Ok(Ok(v)) => {
            engine.t.close(Ok(()));
            return Outcome::Ok(v);
        }
        Ok(Err(e)) => {
            let e: BoxError = e;
            let secondary = matches!(
                e.downcast_ref::<Error>(),
                Some(Error::PeerFailed { .. } | Error::Aborted { .. })
            );
            (e.to_string(), !secondary)
        }
        Err(p) => (panic_message(&*p), true),
    };
    let seq = order.fetch_add(1, Ordering::SeqCst);
    engine.t.close(Err(outcome.0.clone()));
    Outcome::Failed {
        message: outcome.0,
        primary: outcome.1,
        seq,
    }
}

/// Pick the error that explains the run: an abort, else the earliest primary
/// failure, else the earliest failure.
fn verdict<R>(job: &ThreadJob, nodes: usize, outcomes: &[(Rank, &Outcome<R>)]) -> Option<Error> {
    if let Some((ep, message)) = job.abort_info() {
        let rank = if ep == nodes {
            Rank::Host
        } else {
            Rank::Node(ep)
        };
        return Some(Error::Aborted { rank, message });
    }
    let mut best: Option<(bool, usize, Rank, &str)> = None;
    for (rank, o) in outcomes {
        if let Outcome::Failed {
            message,
            primary,
            seq,
        } = o
        {
            let key = (!*primary, *seq);
            if best.is_none_or(|b| key < (!b.0, b.1)) {
                best = Some((*primary, *seq, *rank, message));
            }
        }
    }
    best.map(|(_, _, rank, message)| Error::RankFailed {
        rank,
        message: message.to_string(),
    })
}

/// Run `n` ranks as threads of this process and return each rank's result in
/// rank order (the embedded default: no launcher, no set-up).
///
/// ```
/// let squares = hypercomm::run(4, |comm| Ok::<_, hypercomm::Error>(comm.rank() * comm.rank())).unwrap();
/// assert_eq!(squares, vec![0, 1, 4, 9]);
/// ```
pub fn run<R, E, F>(n: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    E: Into<BoxError>,
    F: Fn(&Comm) -> std::result::Result<R, E> + Sync,
{
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "run",
            what: "a job needs at least one node (n = 0)".into(),
        });
    }
    let timeout = env_timeout()?;
    let tr = trace::job_begin(n, false)?;
    let job = ThreadJob::new(n);
    let order = AtomicUsize::new(0);
    let outcomes: Vec<Outcome<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (job, f, order, tr) = (&job, &f, &order, &tr);
                std::thread::Builder::new()
                    .name(format!("hypercomm-rank-{i}"))
                    .spawn_scoped(s, move || run_rank(job, i, n, false, timeout, order, tr, f))
                    .expect("spawning a rank thread")
            })
            .collect();
        handles.into_iter().map(join).collect()
    });
    let r = finish(&job, outcomes, None::<Outcome<()>>).map(|(v, _)| v);
    trace::job_end(tr)?;
    r
}

fn join<R>(h: std::thread::ScopedJoinHandle<'_, Outcome<R>>) -> Outcome<R> {
    h.join().unwrap_or_else(|p| Outcome::Failed {
        message: panic_message(&*p),
        primary: true,
        seq: usize::MAX,
    })
}

fn finish<R, H>(
    job: &ThreadJob,
    nodes: Vec<Outcome<R>>,
    host: Option<Outcome<H>>,
) -> Result<(Vec<R>, Option<H>)> {
    let mut view: Vec<(Rank, &Outcome<R>)> = Vec::new();
    for (i, o) in nodes.iter().enumerate() {
        view.push((Rank::Node(i), o));
    }
    // The host's outcome participates with the same rules.
    let host_fail = match &host {
        Some(Outcome::Failed {
            message,
            primary,
            seq,
        }) => Some(Outcome::<R>::Failed {
            message: message.clone(),
            primary: *primary,
            seq: *seq,
        }),
        _ => None,
    };
    if let Some(h) = &host_fail {
        view.push((Rank::Host, h));
    }
    if let Some(e) = verdict(job, nodes.len(), &view) {
        return Err(e);
    }
    let v = nodes
        .into_iter()
        .map(|o| match o {
            Outcome::Ok(v) => v,
            Outcome::Failed { .. } => unreachable!("no failures"),
        })
        .collect();
    let h = host.map(|o| match o {
        Outcome::Ok(v) => v,
        Outcome::Failed { .. } => unreachable!("no failures"),
    });
    Ok((v, h))
}

/// Run `n` nodes and a host ([`Rank::Host`]) as threads. The host runs
/// `host_fn`, the nodes `node_fn`; returns the host's result and the nodes'
/// results in rank order.
pub fn run_with_host<H, R, EH, EN, FH, FN>(
    n: usize,
    host_fn: FH,
    node_fn: FN,
) -> Result<(H, Vec<R>)>
where
    H: Send,
    R: Send,
    EH: Into<BoxError>,
    EN: Into<BoxError>,
    FH: FnOnce(&Comm) -> std::result::Result<H, EH> + Send,
    FN: Fn(&Comm) -> std::result::Result<R, EN> + Sync,
{
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "run_with_host",
            what: "a job needs at least one node (n = 0)".into(),
        });
    }
    let timeout = env_timeout()?;
    let tr = trace::job_begin(n, true)?;
    let job = ThreadJob::new(n + 1);
    let order = AtomicUsize::new(0);
    let (nodes, host) = std::thread::scope(|s| {
        let (jobr, orderr, trr) = (&job, &order, &tr);
        let hh = std::thread::Builder::new()
            .name("hypercomm-host".into())
            .spawn_scoped(s, move || {
                run_rank(jobr, n, n, true, timeout, orderr, trr, host_fn)
            })
            .expect("spawning the host thread");
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (job, f, order, tr) = (&job, &node_fn, &order, &tr);
                std::thread::Builder::new()
                    .name(format!("hypercomm-rank-{i}"))
                    .spawn_scoped(s, move || run_rank(job, i, n, true, timeout, order, tr, f))
                    .expect("spawning a rank thread")
            })
            .collect();
        let nodes: Vec<Outcome<R>> = handles.into_iter().map(join).collect();
        (nodes, join(hh))
    });
    let r = finish(&job, nodes, Some(host));
    trace::job_end(tr)?;
    let (v, h) = r?;
    Ok((h.expect("host outcome"), v))
}
