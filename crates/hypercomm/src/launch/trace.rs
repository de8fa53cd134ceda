//! A traced job's ranks: the clock exchange with node 0 at start and exit
//! (over the engine, on a private context), and starting and ending each
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
/// Exchanges per measurement.
const SYNC_ROUNDS: u32 = 8;

/// Measure this rank's clock offset to node 0 of `comm` (`round`
/// distinguishes start and exit). Node 0 answers every other member in turn.
fn measure(comm: &Comm, clock: &dyn TimeSource, round: u32) -> Result<Option<Offset>> {
    let e = comm.engine();
    let g = comm.group();
    let root = g.eps[0];
    let me = e.me();
    let timeout = Some(Duration::from_secs(30));
    let send = |to: u32, tag: u32, v: i64| -> Result<()> {
        let b = v.to_le_bytes();
        // SAFETY: 8 bytes go eagerly (copied); the buffer outlives the call.
        let id = unsafe { e.start_send(g, to, SYNC_CTX, tag, &b, false)? };
        if let Some(id) = id {
            e.wait_req(id, timeout, "trace clock sync")?;
        }
        Ok(())
    };
    let recv = |from: u32, tag: u32| -> Result<i64> {
        let mut b = [0u8; 8];
        let m = Match {
            ctx: SYNC_CTX,
            src: Some(from),
            tag: Some(tag),
        };
        e.recv(
            g,
            m,
            &mut b,
            Layout::Contiguous,
            timeout,
            "trace clock sync",
        )?;
        Ok(i64::from_le_bytes(b))
    };
    if me == root {
        for m in g.members().filter(|&m| m != root) {
            for k in 0..SYNC_ROUNDS {
                let tag = round * 64 + k;
                recv(m, tag)?;
                send(m, tag, clock.now_ns())?;
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
        send(root, tag, t0)?;
        let tr = recv(root, tag)?;
        let t1 = clock.now_ns();
        samples.push((t0, tr, t1));
    }
    Ok(trace::clock::best_offset(&samples))
}

/// Start tracing on this rank (called by the job runner after the world
/// communicator exists; `init()` calls it too). Measures the clock offset
/// (when configured), installs the recorder, writes trace_start and open.
pub(crate) fn rank_begin(job: &Option<Arc<JobTrace>>, comm: &Comm) -> Result<()> {
    let Some(job) = job else { return Ok(()) };
    let start = if job.syncs() && comm.size() + comm.has_host() as usize > 1 {
        measure(comm, job.clock(), 0)?
    } else {
        None
    };
    job.rank_begin(comm.me().to_picl(), comm.is_host(), start);
    Ok(())
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
