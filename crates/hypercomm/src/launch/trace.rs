//! A traced job's ranks: the clock exchange with node 0 at start and exit
//! (over the engine, on a private context) and the agreement on the
//! trace's common origin at start, and starting and ending each
//! rank's recorder; for threads of [`crate::run`](fn@crate::run) and for processes
//! ([`crate::init`] / [`crate::finalize`]). The recording itself and the
//! file formats are [`crate::trace`]'s.

use crate::comm::Comm;
use crate::engine::{Layout, Match};
use crate::error::Result;
use crate::trace::{self, JobTrace, Offset, TimeSource};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Private context of the clock exchanges (odd: never a user context).
const SYNC_CTX: u64 = 0x7ace_c10c_0000_0001;
/// Exchanges per measurement (tags `round * 64 + k`; tag `SYNC_ROUNDS`
/// of round 0 carries the trace's origin).
const SYNC_ROUNDS: u32 = 8;
/// How long a clock exchange may wait for its partner.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Send `v` to member `to` of `comm` on the private context.
fn send_time(comm: &Comm, to: u32, tag: u32, v: i64) -> Result<()> {
    let (e, g) = (comm.engine(), comm.group());
    let b = v.to_le_bytes();
    // SAFETY: 8 bytes go eagerly (copied); the buffer outlives the call.
    let id = unsafe { e.start_send(g, to, SYNC_CTX, tag, &b, false)? };
    if let Some(id) = id {
        e.wait_req(id, Some(TIMEOUT), "trace clock sync")?;
    }
    Ok(())
}

/// Receive a time from member `from` of `comm` on the private context.
fn recv_time(comm: &Comm, from: u32, tag: u32) -> Result<i64> {
    let mut b = [0u8; 8];
    let m = Match {
        ctx: SYNC_CTX,
        src: Some(from),
        tag: Some(tag),
    };
    comm.engine().recv(
        comm.group(),
        m,
        &mut b,
        Layout::Contiguous,
        Some(TIMEOUT),
        "trace clock sync",
    )?;
    Ok(i64::from_le_bytes(b))
}

/// Measure this rank's clock offset to node 0 of `comm` (`round`
/// distinguishes start and exit). Node 0 answers every other member in turn.
fn measure(comm: &Comm, clock: &dyn TimeSource, round: u32) -> Result<Option<Offset>> {
    let g = comm.group();
    let root = g.eps[0];
    if comm.engine().me() == root {
        for m in g.members().filter(|&m| m != root) {
            for k in 0..SYNC_ROUNDS {
                let tag = round * 64 + k;
                recv_time(comm, m, tag)?;
                send_time(comm, m, tag, clock.now_ns())?;
            }
        }
        let now = clock.now_ns();
        return Ok(Some(Offset {
            at: now,
            offset: 0,
            rtt: 0,
        }));
    }
    let mut samples = Vec::with_capacity(SYNC_ROUNDS as usize);
    for k in 0..SYNC_ROUNDS {
        let tag = round * 64 + k;
        let t0 = clock.now_ns();
        send_time(comm, root, tag, t0)?;
        let tr = recv_time(comm, root, tag)?;
        let t1 = clock.now_ns();
        samples.push((t0, tr, t1));
    }
    Ok(trace::clock::best_offset(&samples))
}

/// The trace's common origin (PICL: the time at which tracing was
/// initiated), in this rank's clock: node 0 reads its clock once every
/// member's offset is measured and sends that time to every member, which
/// maps it onto its own clock with its offset (`start`; none when the
/// ranks share one clock). Never later than now (a member whose offset
/// error exceeds the message's latency starts at its receipt).
fn agree_origin(
    comm: &Comm,
    clock: &dyn TimeSource,
    start: Option<Offset>,
    shared: bool,
) -> Result<i64> {
    let g = comm.group();
    let root = g.eps[0];
    let tag = SYNC_ROUNDS;
    if comm.engine().me() == root {
        let origin = clock.now_ns();
        for m in g.members().filter(|&m| m != root) {
            send_time(comm, m, tag, origin)?;
        }
        return Ok(origin);
    }
    let at_root = recv_time(comm, root, tag)?;
    let offset = match start {
        Some(o) if !shared => o.offset,
        _ => 0,
    };
    Ok((at_root - offset).min(clock.now_ns()))
}

/// Start tracing on this rank (called by the job runner after the world
/// communicator exists; `init()` calls it too). Measures the clock offset
/// and agrees on the common origin (when configured), installs the
/// recorder, writes trace_start (at the origin) and open.
pub(crate) fn rank_begin(job: &Option<Arc<JobTrace>>, comm: &Comm) -> Result<()> {
    let Some(job) = job else { return Ok(()) };
    job.rank_begin(comm.me().to_picl(), comm.is_host(), || {
        if !job.syncs() || comm.size() + comm.has_host() as usize == 1 {
            return Ok((None, None));
        }
        let start = measure(comm, job.clock(), 0)?;
        let origin = agree_origin(comm, job.clock(), start, job.shares_clock())?;
        // The start offset applies at the origin: corrected, every rank's
        // origin is node 0's.
        Ok((start.map(|o| Offset { at: origin, ..o }), Some(origin)))
    })
}

/// End tracing on this rank: close and trace_exit records, the exit clock
/// measurement (when `ok` and configured), records to the collector.
pub(crate) fn rank_end(job: &Option<Arc<JobTrace>>, comm: &Comm, ok: bool) {
    let Some(job) = job else { return };
    if !JobTrace::recording() {
        return;
    }
    job.rank_end(|| {
        if ok && job.syncs() && comm.size() + comm.has_host() as usize > 1 {
            measure(comm, job.clock(), 1).ok().flatten()
        } else {
            None
        }
    });
}

/// The traced job of this process when its ranks are processes.
static PROCESS_JOB: std::sync::Mutex<Option<Arc<JobTrace>>> = std::sync::Mutex::new(None);

/// For `hypercomm::init()` (ranks as processes): start tracing this
/// process's rank when [`enable`](crate::trace::enable) or `HYPERCOMM_TRACE` asks for it. Every
/// process of the job must call it (the clock measurement talks to node 0).
pub(crate) fn process_begin(comm: &Comm) -> Result<()> {
    let job = trace::process_job_begin(comm.size(), comm.has_host())?;
    rank_begin(&job, comm)?;
    *PROCESS_JOB.lock().unwrap_or_else(|p| p.into_inner()) = job;
    Ok(())
}

/// For `hypercomm::finalize()`: end this rank's tracing (exit clock
/// measurement with node 0 when `ok`) and write `PATH.<node>.raw`. Returns
/// the file written, `None` when not tracing.
pub(crate) fn process_end(comm: &Comm, ok: bool) -> Result<Option<PathBuf>> {
    let job = PROCESS_JOB.lock().unwrap_or_else(|p| p.into_inner()).take();
    if job.is_none() {
        return Ok(None);
    }
    rank_end(&job, comm, ok);
    trace::finish_process(job, comm.me().to_picl()).map(Some)
}
