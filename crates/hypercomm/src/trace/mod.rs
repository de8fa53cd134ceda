//! Execution tracing (SPEC section 7; PICL manual sections 5 and 6).
//!
//! ## Use
//!
//! ```no_run
//! use hypercomm::trace::{self, Config, Output};
//! trace::enable(Config::new("run.trace", Output::PiclVerbose)); // for jobs this thread starts
//! hypercomm::run(4, |comm| {
//!     trace::mark(1);                      // PICL tracemark
//!     comm.barrier()?;                     // block_begin / block_end records
//!     trace::message("phase 1 done");      // PICL tracemsg
//!     Ok::<_, hypercomm::Error>(())
//! }).unwrap();                             // run.trace is written when the job ends
//! ```
//!
//! An unchanged program is traced with `HYPERCOMM_TRACE=path[:format]`
//! (format `picl-verbose` (default), `picl-compact`, `chrome`, `html` or
//! `raw`) and `HYPERCOMM_TRACE_LEVEL=e,c,m` (default `3,3,3`).
//!
//! | PICL | here |
//! |---|---|
//! | traceenable(file, verbose), tracehost/tracenode(size, flush, sync) | [`enable`] with a [`Config`] |
//! | tracelevel(e, c, m) | [`level`] |
//! | traceinfo | [`info`] |
//! | tracemark(type) | [`mark`] |
//! | tracemsg(string) | [`message`] |
//! | traceflush | [`flush`] |
//! | traceexit | [`exit`] |
//!
//! ## How it is put together
//!
//! * [`event`]: the records (PICL's kinds and codes); [`picl`]: verbose and
//!   compact text, written and read; [`chrome`]: Trace Event Format JSON for
//!   Perfetto; [`report`]: statistics and the self-contained HTML report.
//! * The engine and the collectives emit [`event::Event`]s through
//!   one hook; a per-rank recorder (thread-local, bounded buffer, PICL's
//!   stop or flush policy) turns them into records.
//! * [`clock`]: pluggable time source, offsets to rank 0 measured at start
//!   and exit, the common origin every rank's trace_start is at, causal
//!   merge.
//! * Per job: ranks hand their records to the job's collector; when the job
//!   ends the streams are corrected, merged and written in the chosen
//!   format. A job whose ranks are separate processes (`hypercomm::init`)
//!   starts each rank's stream after joining and ends it before leaving;
//!   each process writes one raw stream file (`PATH.<node>.raw`:
//!   nanosecond records plus its measured clock offsets, [`finish_process`]),
//!   and `hypercomm trace convert PATH.*.raw --to …` corrects and merges
//!   them. The clock exchange with node 0 that needs a communicator is the
//!   launch layer's (`launch/trace.rs`). Threads of one process share its
//!   clock (no offset applied); separate processes never do, whatever
//!   their clock, so their measured offsets are always applied.
//!
//! ## What may import what
//!
//! `trace/` sits just above the transports: the engine calls its recorder
//! hook ([`hook`], [`Event`]); it imports nothing from the engine,
//! communicators, collectives or launch.
//!
//! Which ranks record is [`Config::ranks`] (PICL's tracehost / tracenode
//! at job start); a program can also start one rank's recording itself at
//! any time with [`begin_rank`] and take its records with [`end_rank`]
//! (tracehost / tracenode called later, as the C API does). The `message`
//! and `sync` records come from `Comm::message` and `Comm::sync`.
//!
//! Not done yet: probes are counted, not recorded; the process launcher's `load` records;
//! the per-process files are merged by `trace convert`, not collected by
//! rank 0 at exit.

#[cfg(feature = "trace")]
pub mod chrome;
pub mod clock;
mod config;
pub mod event;
pub mod picl;
pub(crate) mod recorder;
pub mod report;

pub use clock::{Manual, Monotonic, TimeSource};
pub use config::{parse_levels, Config, Info, Output, Policy, Ranks, MAX_BUFFER};
pub use event::{Event, Kind, Levels, Record, Trace, HOST_ID};
pub use recorder::hook;

use crate::error::{Error, Result};
pub use clock::Offset;
pub use clock::RankStream;
use recorder::{Collector, RankRec};
use std::cell::RefCell;
#[cfg(feature = "trace")]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

thread_local! {
    /// Configuration for the jobs this thread starts.
    static CONFIG: RefCell<Option<Config>> = const { RefCell::new(None) };
    /// Levels set by [`level`] while not tracing (PICL keeps them).
    static PENDING_LEVELS: RefCell<Option<Levels>> = const { RefCell::new(None) };
}

/// Trace the jobs this thread starts (`hypercomm::run`, `run_with_host`,
/// `hypercomm::init`) with `cfg` (PICL traceenable + tracenode). Overrides
/// `HYPERCOMM_TRACE`.
pub fn enable(cfg: Config) {
    CONFIG.with(|c| *c.borrow_mut() = Some(cfg));
}

/// Stop tracing the jobs this thread starts.
pub fn disable() {
    CONFIG.with(|c| *c.borrow_mut() = None);
}

/// Set the levels (PICL tracelevel); recorded as a `trace_level` record
/// when this rank traces, remembered otherwise.
pub fn level(event: i32, compstats: i32, commstats: i32) {
    let l = Levels {
        event,
        compstats,
        commstats,
    };
    if recorder::with(|r| r.set_levels(l)).is_none() {
        PENDING_LEVELS.with(|p| *p.borrow_mut() = Some(l));
    }
}

/// Record a user mark (PICL tracemark).
pub fn mark(mark: i32) {
    recorder::with(|r| r.mark(mark));
}

/// Write a line of text into the trace at once (PICL tracemsg; at most 80
/// characters are kept, control characters become spaces).
pub fn message(text: &str) {
    recorder::with(|r| r.message(text));
}

/// Hand this rank's buffered records to the trace file now (PICL traceflush).
pub fn flush() {
    recorder::with(|r| r.flush_now());
}

/// Stop this rank's tracing (PICL traceexit): final statistics and a
/// `trace_exit` record.
pub fn exit() {
    recorder::with(|r| r.exit());
}

/// Remaining buffer space and levels (PICL traceinfo).
pub fn info() -> Info {
    recorder::with(|r| r.info()).unwrap_or_else(|| Info {
        remaining: 0,
        levels: PENDING_LEVELS.with(|p| p.borrow().unwrap_or_default()),
    })
}

/// Whether this rank records now.
pub fn is_tracing() -> bool {
    recorder::with(|r| !r.exited).unwrap_or(false)
}

/// The tracing state of one job (shared by its ranks).
pub struct JobTrace {
    cfg: Config,
    collector: Arc<Collector>,
    nodes: usize,
    host: bool,
    /// The ranks are separate processes: each reads its own clock, however
    /// shared the clock is among one process's threads.
    processes: bool,
}

impl std::fmt::Debug for JobTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobTrace")
            .field("cfg", &self.cfg)
            .field("nodes", &self.nodes)
            .field("host", &self.host)
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}

/// The tracing of a job about to start with `nodes` nodes (and a host):
/// from [`enable`] on this thread, else from the environment. `Ok(None)`
/// when not tracing (or built without the `trace` feature).
pub fn job_begin(nodes: usize, host: bool) -> Result<Option<Arc<JobTrace>>> {
    job_begin_clocked(nodes, host, None)
}

/// [`job_begin`] for a job with a clock of its own (a simulator's virtual
/// time): its records take their times from `clock`, and the ranks do not
/// measure clock offsets (they share that clock).
pub fn job_begin_clocked(
    nodes: usize,
    host: bool,
    clock: Option<Arc<dyn TimeSource>>,
) -> Result<Option<Arc<JobTrace>>> {
    begin(nodes, host, clock, false)
}

/// [`job_begin`] for the rank of this process in a job whose ranks are
/// separate processes (`hypercomm::init`): no two ranks read the same
/// clock, so their measured offsets are always applied.
pub(crate) fn process_job_begin(nodes: usize, host: bool) -> Result<Option<Arc<JobTrace>>> {
    begin(nodes, host, None, true)
}

fn begin(
    nodes: usize,
    host: bool,
    clock: Option<Arc<dyn TimeSource>>,
    processes: bool,
) -> Result<Option<Arc<JobTrace>>> {
    if !cfg!(feature = "trace") {
        return Ok(None);
    }
    let cfg = match CONFIG.with(|c| c.borrow().clone()) {
        Some(c) => Some(c),
        None => Config::from_env()?,
    };
    let Some(mut cfg) = cfg else { return Ok(None) };
    #[cfg(feature = "trace")]
    writable(&cfg.path)?;
    if let Some(l) = PENDING_LEVELS.with(|p| p.borrow_mut().take()) {
        cfg.levels = l;
    }
    if let Some(c) = clock {
        cfg.clock = c;
        cfg.sync = false;
    }
    Ok(Some(Arc::new(JobTrace {
        cfg,
        collector: Arc::new(Collector::default()),
        nodes,
        host,
        processes,
    })))
}

impl JobTrace {
    #[cfg(feature = "trace")]
    /// The job's shape, as raw files record it.
    fn shape(&self) -> raw::Shape {
        raw::Shape {
            nodes: self.nodes,
            host: self.host,
        }
    }

    /// Whether the ranks measure their clock offsets to node 0.
    pub(crate) fn syncs(&self) -> bool {
        self.cfg.sync
    }

    /// The job's clock.
    pub(crate) fn clock(&self) -> &dyn TimeSource {
        &*self.cfg.clock
    }

    /// Whether all ranks read one clock, so that no offset is applied:
    /// threads of one process with a [shared](TimeSource::shared) clock;
    /// never separate processes.
    pub(crate) fn shares_clock(&self) -> bool {
        !self.processes && self.cfg.clock.shared()
    }

    /// Start recording on this thread as PICL node `node` (the host when
    /// `host`): allocates the recorder, then runs `sync` (every rank runs
    /// it, recording or not: the clock offset measured at start and the
    /// job's common origin in this rank's clock, if any), then installs the
    /// recorder and writes trace_start (at the origin) and open. The buffer
    /// is allocated first so that its cost is not part of the trace.
    pub(crate) fn rank_begin(
        &self,
        node: i32,
        host: bool,
        sync: impl FnOnce() -> Result<(Option<Offset>, Option<i64>)>,
    ) -> Result<()> {
        let rec = self
            .cfg
            .ranks
            .includes(node.max(0) as usize, host)
            .then(|| RankRec::new(&self.cfg, node, self.nodes as u32, self.collector.clone()));
        let (start, origin) = sync()?;
        let Some(mut r) = rec else { return Ok(()) };
        r.start_offset = start;
        r.start(host.then_some(self.nodes as i64), host, origin);
        recorder::install(r);
        Ok(())
    }

    /// Whether this thread is recording for a job.
    pub(crate) fn recording() -> bool {
        recorder::with(|_| ()).is_some()
    }

    /// Stop recording on this thread: close and trace_exit records, the
    /// clock offset measured at exit (`end`, taken by `measure_end` while
    /// the close record is already written), records to the collector.
    pub(crate) fn rank_end(&self, measure_end: impl FnOnce() -> Option<Offset>) {
        let Some(mut r) = recorder::uninstall() else {
            return;
        };
        r.close();
        let end = measure_end();
        r.finish(end, self.shares_clock());
    }
}

thread_local! {
    /// The trace this thread started with [`begin_rank`].
    static STANDALONE: RefCell<Option<JobTrace>> = const { RefCell::new(None) };
}

/// Start recording on this thread now, as PICL node `node` of a job of
/// `nodes` nodes (the host when `host`), whatever the job's own tracing
/// (PICL tracehost / tracenode called by the program, not at job start):
/// a `trace_start` record with the current levels (those of [`level`]
/// when it was called before), and the buffer size and policy of `cfg`
/// (its path and format are not used: [`end_rank`] returns the records).
/// Does nothing when this thread already records.
pub fn begin_rank(cfg: &Config, node: i32, nodes: usize, host: bool) {
    if !cfg!(feature = "trace") || recorder::with(|_| ()).is_some() {
        return;
    }
    let mut cfg = cfg.clone();
    if let Some(l) = PENDING_LEVELS.with(|p| p.borrow_mut().take()) {
        cfg.levels = l;
    }
    let job = JobTrace {
        cfg,
        collector: Arc::new(Collector::default()),
        nodes,
        host,
        processes: false,
    };
    let mut r = RankRec::new(&job.cfg, node, nodes as u32, job.collector.clone());
    r.start_later();
    recorder::install(r);
    STANDALONE.with(|s| *s.borrow_mut() = Some(job));
}

/// End what [`begin_rank`] started on this thread: a `close` record (unless
/// [`exit`] came first), `trace_exit`, and this rank's records as a stream
/// for [`merge_streams`]. `None` when [`begin_rank`] was not called.
pub fn end_rank() -> Option<RankStream> {
    let job = STANDALONE.with(|s| s.borrow_mut().take())?;
    if let Some(mut r) = recorder::uninstall() {
        r.close();
        r.finish(None, job.cfg.clock.shared());
    }
    let mut streams = std::mem::take(
        &mut *job
            .collector
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    streams.pop()
}

#[cfg(feature = "trace")]
/// Streams as text (the raw format of `PATH.<node>.raw` files), to move
/// them between processes.
pub fn streams_to_text(streams: &[RankStream]) -> String {
    raw_string(streams)
}

#[cfg(feature = "trace")]
/// Streams from [`streams_to_text`]'s text.
pub fn streams_from_text(text: &str) -> Result<Vec<RankStream>> {
    let bad = |what: String| Error::InvalidArgument {
        op: "trace streams",
        what,
    };
    let r: raw::Raw = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    r.into_streams().map_err(bad)
}

/// Merge the streams of several ranks into one causal trace.
pub fn merge_streams(streams: Vec<RankStream>) -> Trace {
    clock::merge(streams)
}

/// The job's streams, merged (corrected, sorted, causal).
pub fn job_trace(job: &JobTrace) -> Trace {
    let streams = std::mem::take(
        &mut *job
            .collector
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    clock::merge(streams)
}

/// End of a job of threads in a build without the `trace` feature: such a
/// job is never traced.
#[cfg(not(feature = "trace"))]
pub fn job_end(_job: Option<Arc<JobTrace>>) -> Result<()> {
    Ok(())
}

/// End of a job whose ranks are separate processes, in a build without
/// the `trace` feature: no job is traced.
#[cfg(not(feature = "trace"))]
pub fn finish_process(_job: Option<Arc<JobTrace>>, _node: i32) -> Result<PathBuf> {
    Err(Error::InvalidArgument {
        op: "trace::finish_process",
        what: "this program was built without the `trace` feature of hypercomm".into(),
    })
}

/// End of a job whose ranks are threads of this process: merge and write
/// the configured file.
#[cfg(feature = "trace")]
pub fn job_end(job: Option<Arc<JobTrace>>) -> Result<()> {
    let Some(job) = job else { return Ok(()) };
    if job.cfg.output == Output::Raw {
        let streams = job
            .collector
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        return write_raw(&job.cfg.path, &streams, Some(job.shape()));
    }
    let t = job_trace(&job);
    write_file(&job.cfg.path, &t, job.cfg.output)
}

#[cfg(feature = "trace")]
/// End of a job whose ranks are separate processes: this process writes its
/// raw stream to `PATH.<node>.raw` (node `host` for the host), to be merged
/// by `hypercomm trace convert PATH.*.raw --to …`.
pub fn finish_process(job: Option<Arc<JobTrace>>, node: i32) -> Result<PathBuf> {
    let job = job.ok_or(Error::InvalidArgument {
        op: "trace::finish_process",
        what: "this job is not traced".into(),
    })?;
    let name = if node == HOST_ID {
        "host".to_string()
    } else {
        node.to_string()
    };
    let mut p = job.cfg.path.clone().into_os_string();
    p.push(format!(".{name}.raw"));
    let p = PathBuf::from(p);
    let streams = job
        .collector
        .streams
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    write_raw(&p, &streams, Some(job.shape()))?;
    Ok(p)
}

#[cfg(feature = "trace")]
/// Whether the trace can be written where `path` says (its directory, or
/// beside it the per-process raw files), checked before the job starts: a
/// long run should not learn at its end that its trace is lost.
fn writable(path: &Path) -> Result<()> {
    let bad = |e: &dyn std::fmt::Display| io_err("trace", path, e);
    if path.as_os_str().is_empty() {
        return Err(Error::InvalidArgument {
            op: "trace",
            what: "the trace file's path is empty".into(),
        });
    }
    if path.is_dir() {
        return Err(bad(&"is a directory, not a file to write the trace to"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(&format_args!(
            "cannot write the trace: directory {} does not exist",
            dir.display()
        )));
    }
    // Open without truncating (a file that exists keeps its contents until
    // the job writes it); one that did not exist is removed again.
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| bad(&format_args!("cannot write the trace: {e}")))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(feature = "trace")]
fn io_err(op: &'static str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op,
        what: format!("{}: {e}", path.display()),
    }
}

#[cfg(feature = "trace")]
/// Render a merged trace in a format.
pub fn render(t: &Trace, output: Output) -> String {
    match output {
        Output::PiclVerbose => picl::write(t, picl::Format::Verbose),
        Output::PiclCompact => picl::write(t, picl::Format::Compact),
        Output::Chrome => chrome::write(t),
        Output::Html => report::html(t),
        Output::Raw => raw_string(&[RankStream {
            node: 0,
            records: t.records.clone(),
            correction: Default::default(),
        }]),
    }
}

#[cfg(feature = "trace")]
/// Write a merged trace to a file.
pub fn write_file(path: &Path, t: &Trace, output: Output) -> Result<()> {
    std::fs::write(path, render(t, output)).map_err(|e| io_err("trace write", path, e))
}

#[cfg(feature = "trace")]
fn raw_string(streams: &[RankStream]) -> String {
    raw_text(streams, None)
}

#[cfg(feature = "trace")]
fn raw_text(streams: &[RankStream], job: Option<raw::Shape>) -> String {
    serde_json::to_string(&raw::Raw::from_streams(streams, job)).expect("serialisable")
}

#[cfg(feature = "trace")]
fn write_raw(path: &Path, streams: &[RankStream], job: Option<raw::Shape>) -> Result<()> {
    std::fs::write(path, raw_text(streams, job)).map_err(|e| io_err("trace write", path, e))
}

#[cfg(feature = "trace")]
/// What one trace file holds.
enum FileTrace {
    /// A PICL file's records (one clock already).
    Picl(Trace),
    /// A raw file's per-rank streams, and its job's shape when it says.
    Raw(Vec<RankStream>, Option<raw::Shape>),
}

#[cfg(feature = "trace")]
/// Read one trace file: PICL text, or raw streams (JSON). An empty or
/// blank file, a PICL file without records, a line or raw record that is
/// not a record, and a raw file of another format are errors naming the
/// file (and the line or record).
fn read_one(p: &Path) -> Result<FileTrace> {
    let text = std::fs::read_to_string(p).map_err(|e| io_err("trace read", p, e))?;
    let empty = || io_err("trace read", p, "holds no trace records");
    if text.trim().is_empty() {
        return Err(empty());
    }
    let head = text.trim_start();
    let view =
        if head.starts_with('[') || (head.starts_with('{') && head.contains("\"traceEvents\"")) {
            Some("a Chrome/Perfetto JSON trace")
        } else if head.len() >= 9 && head[..9].eq_ignore_ascii_case("<!doctype")
            || head.starts_with("<html")
        {
            Some("an HTML report")
        } else {
            None
        };
    if let Some(view) = view {
        return Err(io_err(
            "trace read",
            p,
            format!(
                "is {view}, written for viewing and not read back: give the PICL trace (verbose or compact) or the raw streams it was made from"
            ),
        ));
    }
    if head.starts_with('{') {
        let r: raw::Raw = serde_json::from_str(&text).map_err(|e| io_err("trace read", p, e))?;
        // A process whose rank did not record writes a file without
        // records: fine, as long as some file of the job has some.
        let shape = r.shape();
        let streams = r.into_streams().map_err(|e| io_err("trace read", p, e))?;
        return Ok(FileTrace::Raw(streams, shape));
    }
    let t = picl::parse(&text).map_err(|e| io_err("trace read", p, e))?;
    if t.records.is_empty() {
        return Err(empty());
    }
    Ok(FileTrace::Picl(t))
}

#[cfg(feature = "trace")]
/// Read trace files (PICL verbose or compact, or raw streams) and merge them
/// into one causal trace. A single PICL file is returned as it is. An
/// empty file, files without any record, and anything that is not a record
/// (a PICL line, a raw stream's record, a raw file's format) are errors
/// naming the file and the line or record. So are raw files of different
/// runs (jobs of other sizes, as files left from an earlier run are), a
/// stream of a node its job does not have, and one node's stream in two
/// files.
pub fn read_files(paths: &[PathBuf]) -> Result<Trace> {
    let mut streams: Vec<RankStream> = Vec::new();
    let mut picl_only = Vec::new();
    let mut runs = Runs::default();
    for p in paths {
        match read_one(p)? {
            // One PICL file is taken as it is (record order kept: lossless).
            FileTrace::Picl(t) if paths.len() == 1 => return Ok(t),
            FileTrace::Picl(t) => picl_only.extend(t.records),
            FileTrace::Raw(s, shape) => {
                runs.check(p, &s, shape)?;
                streams.extend(s)
            }
        }
    }
    if picl_only.is_empty() && streams.iter().all(|s| s.records.is_empty()) {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::InvalidArgument {
            op: "trace read",
            what: format!("{}: no trace records", names.join(", ")),
        });
    }
    let had_picl = !picl_only.is_empty();
    // PICL records are already on one clock: split them by node.
    let mut nodes: Vec<i32> = picl_only.iter().map(|r| r.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    for n in nodes {
        let records = picl_only.iter().filter(|r| r.node == n).cloned().collect();
        streams.push(RankStream {
            node: n,
            records,
            correction: clock::Correction {
                shared: true,
                ..Default::default()
            },
        });
    }
    // PICL files keep their times; raw streams are normalised.
    let origin = if streams.iter().all(|s| s.correction.shared) && had_picl {
        Some(0)
    } else {
        None
    };
    Ok(clock::merge_from(streams, origin))
}

#[cfg(feature = "trace")]
/// What the raw files read so far said of their job and nodes, to find
/// files of different runs merged by mistake.
#[derive(Default)]
struct Runs {
    /// The first file that named its job, and the job.
    first: Option<(PathBuf, raw::Shape)>,
    /// Each node's stream read so far, and its file.
    nodes: Vec<(i32, PathBuf)>,
}

#[cfg(feature = "trace")]
impl Runs {
    fn check(&mut self, p: &Path, streams: &[RankStream], shape: Option<raw::Shape>) -> Result<()> {
        let bad = |what: String| Err(io_err("trace read", p, what));
        if let Some(shape) = shape {
            match &self.first {
                Some((q, first)) if *first != shape => {
                    return bad(format!(
                        "from another run than {}: {shape}, not {first} \
                         (files left from an earlier run? merge one run's files only)",
                        q.display()
                    ))
                }
                Some(_) => {}
                None => self.first = Some((p.to_path_buf(), shape)),
            }
            if let Some(s) = streams.iter().find(|s| !shape.has(s.node)) {
                return bad(format!("a stream of node {} in {shape}", s.node));
            }
        }
        for s in streams {
            if let Some((_, q)) = self.nodes.iter().find(|(n, _)| *n == s.node) {
                return bad(format!(
                    "node {}'s stream is in {} too (one run's files, each once)",
                    s.node,
                    q.display()
                ));
            }
            self.nodes.push((s.node, p.to_path_buf()));
        }
        Ok(())
    }
}

#[cfg(feature = "trace")]
mod raw;
