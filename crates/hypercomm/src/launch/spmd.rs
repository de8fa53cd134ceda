//! [`run`](fn@crate::run) and [`run_with_host`](crate::run_with_host) in a
//! process that a launcher started (`hypercomm run`, `mpirun`, `srun`): one
//! program for threads and for processes.
//!
//! The process joins its job, and the job must have the shape the call
//! asks for (`run(4, …)`: four nodes and no host; `run_with_host(4, …)`:
//! four nodes and a host — under `hypercomm run` its `--host`, under
//! `mpirun` and `srun`, which start no host of their own, the last of five
//! ranks); anything else is an error that says what was asked and what the
//! job is. The process runs the call's closure as its rank. The results
//! then go to one process, the **collector** — the host when there is one,
//! else node 0 — which gets them all in rank order and returns them, so the
//! code after the call runs once, as it does with threads. Every other
//! process leaves the job and exits there (code 0, or 1 when its closure
//! failed). Results cross processes, hence the serde bounds.

pub(crate) use super::processes::Either;
use crate::comm::Comm;
use crate::error::{BoxError, Error, Result};
use crate::rank::Rank;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Tag of the results on the collector's reserved communicator.
const RESULTS: u32 = 0x5e5_0001;

/// A rank's outcome as it travels: its result, or what went wrong.
type Sent<H, R> = std::result::Result<Either<H, R>, String>;

/// The body of one rank.
pub(crate) type Body<'a, H, R> = dyn Fn(&Comm) -> std::result::Result<Either<H, R>, BoxError> + 'a;

/// Join the job with the shape `nodes` + `host` and run `body`; see the
/// module docs. Returns on the collector only.
pub(crate) fn run_launched<H, R>(
    what: &'static str,
    nodes: usize,
    host: bool,
    body: &Body<'_, H, R>,
) -> Result<(Option<H>, Vec<R>)>
where
    H: Serialize + DeserializeOwned,
    R: Serialize + DeserializeOwned,
{
    let comm = super::init_shaped(host)?;
    if comm.size() != nodes || comm.has_host() != host {
        let want = shape(nodes, host);
        let have = shape(comm.size(), comm.has_host());
        let e = Error::InvalidArgument {
            op: what,
            what: format!(
                "the program asks for {want}, but the job it was started in has {have}: start it with {} process{}{}",
                nodes + usize::from(host),
                if nodes + usize::from(host) == 1 { "" } else { "es" },
                if host && !comm.has_host() {
                    " (under hypercomm run, -n with the node count and --host for the host)"
                } else {
                    ""
                }
            ),
        };
        // Every process sees the same mismatch: leave together.
        drop(comm);
        return Err(e);
    }
    let mine: Sent<H, R> = body(&comm).map_err(|e| e.to_string());
    let ok = mine.is_ok();
    // Tracing ends with the body: the results' messages below are the
    // library's, not the program's, and stay out of the trace. Every
    // process ends it here, in the same order (it measures the clocks
    // against node 0 once more); `finalize` then has nothing left to end.
    let traced = super::trace::process_end(&comm, true).map(|_| ());
    let world = comm.dup();
    let collector = if host { Rank::Host } else { Rank::Node(0) };
    if comm.me() != collector {
        let bytes = postcard::to_stdvec(&mine)
            .map_err(|e| Error::Protocol(format!("encoding a result: {e}")))?;
        let sent = world.send(&bytes, collector, RESULTS);
        let left = super::finalize(comm);
        drop(world);
        if let Err(e) = traced.and(sent).and(left) {
            say!("hypercomm: {what}: {e}");
            std::process::exit(1);
        }
        std::process::exit(if ok { 0 } else { 1 });
    }
    let mut ranks: Vec<Rank> = (0..nodes).map(Rank::Node).collect();
    if host {
        ranks.push(Rank::Host);
    }
    let mut host_result = None;
    let mut results = Vec::with_capacity(nodes);
    let mut failure = None;
    let mut mine = Some(mine);
    for r in ranks {
        let got: Sent<H, R> = if r == collector {
            mine.take().unwrap_or_else(|| Err("no result".into()))
        } else {
            let (bytes, _) = world.recv_vec::<u8>(r, RESULTS)?;
            postcard::from_bytes(&bytes).map_err(|e| {
                Error::Protocol(format!("{r} sent a result that does not decode: {e}"))
            })?
        };
        match got {
            Ok(Either::Host(h)) => host_result = Some(h),
            Ok(Either::Node(v)) => results.push(v),
            Err(message) => {
                failure.get_or_insert(Error::RankFailed {
                    rank: r,
                    message,
                    source: None,
                });
            }
        }
    }
    drop(world);
    super::finalize(comm)?;
    traced?;
    match failure {
        Some(e) => Err(e),
        None => Ok((host_result, results)),
    }
}

fn shape(nodes: usize, host: bool) -> String {
    format!(
        "{nodes} node{}{}",
        if nodes == 1 { "" } else { "s" },
        if host { " and a host" } else { " and no host" }
    )
}
