//! One rank's life: its transport built on its own thread, its engine and
//! world communicator ([`start_rank`]), its body run with panics and errors
//! caught, and its endpoint closed with the outcome.
//!
//! Every start mode goes through here: the threads of [`crate::run`](fn@crate::run), a
//! launched process ([`crate::init`]), a Slurm task, a spawning host, a
//! rank of [`super::run_processes`].

use crate::comm::Comm;
use crate::engine::{env_settings, Engine};
use crate::error::BoxError;
use crate::error::{Error, Result, Source};
use crate::trace;
use crate::transport::{AnyTransport, Builder, Fault, Transport};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Build the transport `builder` describes on this thread and return the
/// world communicator of the rank it is: nodes are endpoints `0..n`, the
/// host (when `host`) endpoint `n`. The communicator belongs to the calling
/// thread; dropping its last handle closes the endpoint (see
/// [`crate::finalize`]).
///
/// This is how a transport from outside the crate runs a rank, e.g. under
/// [`crate::run_on`]'s threads or a test's own.
pub fn start_rank(builder: Box<dyn Builder>, host: bool) -> Result<Comm> {
    let t = builder.build()?;
    rank_over(t, host, false)
}

/// The rank over an endpoint: its engine (with the `HYPERCOMM_TIMEOUT`
/// default) and world communicator. `managed`: the job runner, not the
/// rank, closes the endpoint (threads of `run`), so `finalize` only ends
/// tracing.
pub(crate) fn rank_over(t: AnyTransport, host: bool, managed: bool) -> Result<Comm> {
    let endpoints = t.endpoints();
    if host && endpoints < 2 {
        return Err(Error::InvalidArgument {
            op: "start_rank",
            what: format!("a job with a host needs at least 2 endpoints, this one has {endpoints}"),
        });
    }
    let nodes = endpoints - host as usize;
    let mut engine = Engine::new(t, env_settings()?);
    engine.managed = managed;
    Ok(Comm::world(Rc::new(engine), nodes, host))
}

/// How one rank ended, and the job-wide fault its endpoint saw last (an
/// abort by some endpoint), if any.
pub(crate) struct Ended<R> {
    pub(crate) outcome: Outcome<R>,
    pub(crate) fault: Option<Fault>,
}

/// How one rank's body ended.
pub(crate) enum Outcome<R> {
    /// Its body returned this.
    Ok(R),
    /// Failed; `primary` is false when the failure is a consequence of
    /// another rank's (PeerFailed or Aborted); `seq` orders failures in time.
    Failed {
        message: String,
        source: Option<Source>,
        primary: bool,
        seq: usize,
    },
}

/// A panic's payload as text.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

/// Run a rank of a job of threads: build its endpoint, run `f` with its
/// world communicator (traced when the job is), close the endpoint with the
/// outcome. `order` numbers failures in time across the job's ranks.
pub(crate) fn run_rank<R, E: Into<BoxError>>(
    builder: Box<dyn Builder>,
    host: bool,
    order: &AtomicUsize,
    tr: &Option<Arc<trace::JobTrace>>,
    f: impl FnOnce(&Comm) -> std::result::Result<R, E>,
) -> Ended<R> {
    let comm = match builder.build().and_then(|t| rank_over(t, host, true)) {
        Ok(c) => c,
        Err(e) => {
            return Ended {
                outcome: Outcome::Failed {
                    message: e.to_string(),
                    source: Some(Source::new(e)),
                    primary: true,
                    seq: order.fetch_add(1, Ordering::SeqCst),
                },
                fault: None,
            }
        }
    };
    let res = catch_unwind(AssertUnwindSafe(|| {
        super::trace::rank_begin(tr, &comm)?;
        f(&comm).map_err(Into::into)
    }));
    let ok = matches!(res, Ok(Ok(_)));
    super::trace::rank_end(tr, &comm, ok);
    let t = &comm.engine().t;
    let fault = t.fault();
    let (message, source, primary) = match res {
        Ok(Ok(v)) => {
            t.close(Ok(()));
            return Ended {
                outcome: Outcome::Ok(v),
                fault,
            };
        }
        Ok(Err(e)) => {
            let e: BoxError = e;
            let secondary = e.downcast_ref::<Error>().is_some_and(Error::is_consequence);
            (e.to_string(), Some(Source::from(e)), !secondary)
        }
        Err(p) => (panic_message(&*p), None, true),
    };
    let seq = order.fetch_add(1, Ordering::SeqCst);
    t.close(Err(message.clone()));
    Ended {
        outcome: Outcome::Failed {
            message,
            source,
            primary,
            seq,
        },
        fault,
    }
}
