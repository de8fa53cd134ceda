//! `hypercomm bench`: OSU-style micro-benchmarks.
//!
//! Method (OSU micro-benchmarks): warm-up iterations, then timed iterations
//! whose count falls with the message size; `latency` is half the round trip
//! of a ping-pong between ranks 0 and 1; `bw` sends a window of 64
//! non-blocking messages and waits for a one-byte acknowledgement. Each
//! figure is the median (or, with `--stat min`, the minimum) of `--repeat`
//! runs; the repeats go round all variants in turn.
//!
//! Collectives (`allreduce`, `reduce`, `bcast`, `allgather`, `alltoall`,
//! `barrier`) follow OSU too: warm-up, a barrier, then each call timed
//! alone with an untimed barrier after it (barriers themselves run back to
//! back), and the maximum over ranks of each rank's average;
//! `--all-algorithms` measures
//! every algorithm next to `auto` in one run and labels auto's line with
//! the algorithm it ran (`allreduce:auto=ring`, from
//! [`Comm::chosen_algorithm`]); `--rotate` changes which variant runs
//! first, and `--interleave` runs all repeats of all variants of a size
//! in one job, taking turns (jobs differ: each places its threads anew).
//! `--min-time-ms` raises the number of timed
//! calls until a run lasts that long (timed from the warm-up, agreed by
//! all ranks), so that one descheduling of a rank does not dominate a run
//! of a few large calls.
//!
//! With `--transport shm` or `tcp` every measurement runs in fresh
//! processes: the command re-executes itself once per rank
//! ([`hypercomm::launch::Processes`], keyed by the measurement; a copy
//! skips every other measurement and stays quiet), and rank 0's figures
//! come back to the parent as its result.
//!
//! `halo` measures the grid layer's halo exchange (`bench_halo.rs`).
//!
//! A progress bar on standard error follows long runs (`--progress`).

use crate::bench_sizes::{default_sizes, iters_for};
use crate::out::outln;
use clap::{Args, ValueEnum};
use hypercomm::collective::{registry, Max, Sum};
use hypercomm::launch::Processes;
use hypercomm::{Algorithm, CollOpts, Collective, Comm, Error, TransportKind};
use std::time::Instant;

/// Options of `hypercomm bench`.
#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Which benchmark.
    #[arg(value_enum)]
    op: Op,
    /// Transport: `thread` (ranks are threads of this process), `shm`
    /// (ranks are processes on this machine, over shared memory) or `tcp`
    /// (processes over TCP on loopback); the benchmark starts the
    /// processes by re-executing itself.
    #[arg(long, value_enum, default_value = "thread")]
    pub(crate) transport: TransportKind,
    /// Number of ranks.
    #[arg(short = 'n', long, default_value_t = 2)]
    pub(crate) n: usize,
    /// Message sizes in bytes, comma separated (default: powers of two 0 B … 4 MiB).
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<usize>>,
    /// Timed iterations for small messages (scaled down for large ones).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) iters: usize,
    /// Repeat each measurement this many times (going round all variants
    /// in turn) and report the statistic --stat of the repeats.
    #[arg(long, default_value_t = 5)]
    pub(crate) repeat: usize,
    /// Statistic over the repeats: `median` (the typical run) or `min` (the
    /// least disturbed run: on a shared machine other work only ever slows
    /// a run down).
    #[arg(long, value_enum, default_value = "median")]
    pub(crate) stat: Stat,
    /// Collectives: run at least this many milliseconds of timed calls per
    /// measurement (the count is raised from --iters, estimated from the
    /// warm-up and agreed by all ranks; 0: --iters alone).
    #[arg(long, default_value_t = 0.0)]
    min_time_ms: f64,
    /// Rotate the order of the variants: repeat r starts with variant
    /// (ROTATE + r) mod count (0: auto first), so that no variant always
    /// runs first after a change of size. A sweep in rounds of one repeat
    /// passes the round number.
    #[arg(long, default_value_t = 0)]
    rotate: usize,
    /// Collectives: run all repeats of all variants of a size in one job
    /// (one set of ranks), the variants taking turns as with --rotate, so
    /// that every variant meets the same placement of ranks and the same
    /// state of the machine. Without it each repeat of each variant is a
    /// job of its own.
    #[arg(long)]
    interleave: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: Format,
    /// Collectives: force one algorithm (names as printed by --all-algorithms).
    #[arg(long)]
    algorithm: Option<Algorithm>,
    /// Collectives: measure every algorithm and auto, one line each
    /// (the op column reads `op:algorithm`, and `op:auto=algorithm` for
    /// auto, naming the algorithm auto ran).
    #[arg(long)]
    all_algorithms: bool,
    /// Collectives: switch off check mode (the signature exchange before each call).
    #[arg(long)]
    no_check: bool,
    /// Trace every run (PICL compact) into this file: measures the cost of
    /// tracing (levels from --trace-level).
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// Trace levels e,c,m with --trace.
    #[arg(long, default_value = "3,3,3", value_parser = trace_levels)]
    trace_level: hypercomm::trace::Levels,
    /// Progress bar on standard error: `auto` (when it is a terminal),
    /// `always` or `never`.
    #[arg(long, value_enum, default_value = "auto")]
    progress: crate::progress::When,
    /// Halo: axes of the grid (2 or 3).
    #[arg(long, default_value_t = 2)]
    pub(crate) dim: usize,
    /// Halo: points per axis.
    #[arg(long, default_value_t = 1024)]
    pub(crate) side: usize,
    /// Halo: exchange width (and halo allocated).
    #[arg(long, default_value_t = 1)]
    pub(crate) width: usize,
    /// Halo: f64 fields exchanged together.
    #[arg(long, default_value_t = 1)]
    pub(crate) fields: usize,
    /// Halo, between threads: which axes write faces straight into the
    /// neighbours' arrays (`auto`: faces of rows and planes), `always`,
    /// `never` (packed messages, as between processes).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) in_place: hypercomm::grid::InPlace,
}

/// `--trace-level`: three PICL levels `e,c,m`.
fn trace_levels(s: &str) -> Result<hypercomm::trace::Levels, String> {
    hypercomm::trace::parse_levels(s).ok_or_else(|| "want three levels e,c,m".into())
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Op {
    /// Ping-pong half round trip (µs).
    Latency,
    /// Unidirectional bandwidth with a window of 64 (MB/s).
    Bw,
    /// Bidirectional bandwidth: both ranks send a window of 64 (MB/s, both
    /// directions counted).
    Bibw,
    /// Ownership hand-off: a `Vec` ping-ponged with send_vec/recv_vec (MB/s,
    /// bytes moved one way per half round trip; no copy between threads).
    Handoff,
    /// Baseline: one thread copying the same sizes with memcpy (MB/s).
    Memcpy,
    /// Allreduce of f64 with Sum (µs, max over ranks).
    Allreduce,
    /// Reduce of f64 with Sum to rank 0 (µs, max over ranks).
    Reduce,
    /// Broadcast from rank 0 (µs, max over ranks).
    Bcast,
    /// Allgather; the size is each rank's contribution (µs, max over ranks).
    Allgather,
    /// All-to-all; the size is each block (µs, max over ranks).
    Alltoall,
    /// Barrier (µs, max over ranks; sizes are ignored).
    Barrier,
    /// Halo exchange of the grid layer (µs per exchange, max over ranks),
    /// with the same bytes copied by memcpy beside it: see --dim, --side,
    /// --width, --fields.
    Halo,
    /// Cost of recording one message event at trace levels 3,3,3, without
    /// any communication or scheduling noise: one rank issues the hook events
    /// of a send and a receive, traced minus untraced (ns per message event;
    /// sizes are ignored).
    TraceCost,
}

impl Op {
    pub(crate) fn is_collective(self) -> bool {
        matches!(
            self,
            Op::Allreduce | Op::Reduce | Op::Bcast | Op::Allgather | Op::Alltoall | Op::Barrier
        )
    }
}

/// The algorithms of `op`'s collective, in the registry's order: the
/// names `--algorithm` accepts and `--all-algorithms` measures.
fn algorithms_for(op: Op) -> Vec<Algorithm> {
    collective_kind(op)
        .map(|c| registry::entries(c).map(|e| e.algorithm).collect())
        .unwrap_or_default()
}

/// One collective measurement: seconds per call, the maximum over ranks of
/// each rank's average (OSU). With `min_time` > 0 s the number of timed
/// calls is raised so that they last about that long.
fn collective(
    comm: &Comm,
    op: Op,
    size: usize,
    (iters, warm): (usize, usize),
    min_time: f64,
    opts: &CollOpts,
) -> Result<f64, Error> {
    let n = comm.size();
    let elems = (size / 8).max(if size == 0 { 0 } else { 1 });
    let input = vec![1.0f64; elems];
    let mut output = vec![0.0f64; elems];
    let bytes_in = vec![1u8; size];
    let mut gathered = vec![0u8; size * n];
    let blocks_in = vec![2u8; size * n];
    let mut blocks_out = vec![0u8; size * n];
    let mut bcast_buf = vec![1u8; size]; // the root's: written memory, not the zero page
    let mut one = |comm: &Comm| -> Result<(), Error> {
        match op {
            Op::Allreduce => comm.allreduce_into_with(&input, &mut output, Sum, opts),
            Op::Reduce => {
                let out: &mut [f64] = if comm.rank() == 0 {
                    &mut output
                } else {
                    &mut []
                };
                comm.reduce_into_with(&input, out, Sum, 0usize, opts)
            }
            Op::Bcast => comm.bcast_with(&mut bcast_buf, 0usize, opts),
            Op::Allgather => comm.allgather_into_with(&bytes_in, &mut gathered, opts),
            Op::Alltoall => comm.alltoall_into_with(&blocks_in, &mut blocks_out, opts),
            Op::Barrier => comm.barrier_with(opts),
            _ => unreachable!("not a collective"),
        }
    };
    let t0 = Instant::now();
    for _ in 0..warm {
        one(comm)?;
    }
    let mut iters = iters;
    if min_time > 0.0 {
        // The slowest rank's warm-up time per call decides, so that every
        // rank runs the same number of calls.
        let per_call = comm.allreduce(&[t0.elapsed().as_secs_f64() / warm as f64], Max)?[0];
        let want = (min_time / per_call.max(1e-9)).ceil() as usize;
        iters = iters.max(want.min(1_000_000));
    }
    // Untimed barriers: the library's own when the timed calls are (OSU's are MPI_Barrier).
    let mut between = CollOpts::default();
    if opts.algorithm == Algorithm::Native {
        between.algorithm = Algorithm::Native;
    }
    comm.barrier_with(&between)?;
    let mut timed = std::time::Duration::ZERO;
    if let Op::Barrier = op {
        let t0 = Instant::now();
        for _ in 0..iters {
            one(comm)?;
        }
        timed = t0.elapsed();
    } else {
        // As OSU: each call is timed alone and followed by an untimed
        // barrier, so a root cannot run ahead of its receivers (back-to-back
        // broadcasts measured the receivers' growing backlog instead).
        for _ in 0..iters {
            let t = Instant::now();
            one(comm)?;
            timed += t.elapsed();
            comm.barrier_with(&between)?;
        }
    }
    let mine = timed.as_secs_f64() / iters as f64;
    let worst = comm.allreduce(&[mine], Max)?;
    Ok(worst[0])
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub(crate) enum Stat {
    /// The middle of the repeats.
    Median,
    /// The smallest time (the largest rate) of the repeats.
    Min,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub(crate) enum Format {
    /// Aligned table.
    Table,
    /// `op<TAB>n<TAB>bytes<TAB>value<TAB>unit`
    Tsv,
}

/// The statistic of the repeats; `rate` figures (MB/s) are better when
/// larger, so their `min` is the largest.
pub(crate) fn summary(mut v: Vec<f64>, stat: Stat, rate: bool) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match (stat, rate) {
        (Stat::Median, _) => v[v.len() / 2],
        (Stat::Min, false) => v[0],
        (Stat::Min, true) => v[v.len() - 1],
    }
}

/// The collective `op` measures, for [`Comm::chosen_algorithm`].
fn collective_kind(op: Op) -> Option<Collective> {
    Some(match op {
        Op::Allreduce => Collective::Allreduce,
        Op::Reduce => Collective::Reduce,
        Op::Bcast => Collective::Bcast,
        Op::Allgather => Collective::Allgather,
        Op::Alltoall => Collective::Alltoall,
        Op::Barrier => Collective::Barrier,
        _ => return None,
    })
}

/// One ping-pong measurement: seconds per half round trip on rank 0.
fn latency(comm: &Comm, size: usize, iters: usize, warm: usize) -> Result<f64, Error> {
    let mut buf = vec![0u8; size];
    let me = comm.rank();
    let mut t0 = Instant::now();
    for i in 0..iters + warm {
        if i == warm {
            t0 = Instant::now();
        }
        if me == 0 {
            comm.send(&buf, 1, 1)?;
            comm.recv_into(&mut buf, 1, 1)?;
        } else if me == 1 {
            comm.recv_into(&mut buf, 0, 1)?;
            comm.send(&buf, 0, 1)?;
        }
    }
    Ok(t0.elapsed().as_secs_f64() / (2.0 * iters as f64))
}

/// One bandwidth measurement: bytes per second on rank 0 (both directions
/// counted when `bidir`).
fn bandwidth(
    comm: &Comm,
    size: usize,
    iters: usize,
    warm: usize,
    bidir: bool,
) -> Result<f64, Error> {
    const WINDOW: usize = 64;
    let me = comm.rank();
    let sbuf = vec![7u8; size];
    let mut rbufs = vec![vec![0u8; size]; WINDOW];
    let mut t0 = Instant::now();
    for i in 0..iters + warm {
        if i == warm {
            t0 = Instant::now();
        }
        if me < 2 {
            let peer = 1 - me;
            hypercomm::scope(|s| -> Result<(), Error> {
                let mut reqs = Vec::with_capacity(2 * WINDOW);
                if me == 1 || bidir {
                    for b in rbufs.iter_mut() {
                        reqs.push(comm.irecv(s, b, peer, 2)?);
                    }
                }
                if me == 0 || bidir {
                    for _ in 0..WINDOW {
                        reqs.push(comm.isend(s, &sbuf, peer, 2)?);
                    }
                }
                hypercomm::wait_all(reqs)?;
                Ok(())
            })?;
            if me == 0 {
                comm.recv::<u8>(1, 3)?;
            } else {
                comm.send(&[1u8], 0, 3)?;
            }
        }
    }
    let dirs = if bidir { 2 } else { 1 };
    Ok((size * WINDOW * iters * dirs) as f64 / t0.elapsed().as_secs_f64())
}

/// Hand-off rate: bytes per second one way, ping-ponging one owned vector.
fn handoff(comm: &Comm, size: usize, iters: usize, warm: usize) -> Result<f64, Error> {
    let me = comm.rank();
    let mut v = vec![3u8; size];
    let mut t0 = Instant::now();
    for i in 0..iters + warm {
        if i == warm {
            t0 = Instant::now();
        }
        if me == 0 {
            comm.send_vec(std::mem::take(&mut v), 1, 4)?;
            v = comm.recv_vec::<u8>(1, 4)?.0;
        } else if me == 1 {
            let (w, _) = comm.recv_vec::<u8>(0, 4)?;
            comm.send_vec(w, 0, 4)?;
        }
    }
    Ok((size * 2 * iters) as f64 / t0.elapsed().as_secs_f64())
}

/// ns per message event added by recording at levels 3,3,3 (one sample).
fn trace_cost(iters: usize) -> Result<f64, String> {
    use hypercomm::trace::{self, Config, Output};
    use hypercomm::trace::{hook, Event};
    let body = move |_: &Comm| {
        let t0 = Instant::now();
        for i in 0..iters as u32 {
            hook(Event::Send {
                dst: 1,
                tag: i,
                len: 8,
                coll: false,
            });
            hook(Event::Done);
            hook(Event::RecvBegin {
                tag: Some(i),
                coll: false,
            });
            hook(Event::Recv {
                src: 1,
                tag: i,
                len: 8,
                coll: false,
            });
            hook(Event::Done);
        }
        Ok::<_, Error>(t0.elapsed().as_nanos() as f64 / (2.0 * iters as f64))
    };
    let off = hypercomm::run(1, body).map_err(|e| e.to_string())?[0];
    let path =
        std::env::temp_dir().join(format!("hypercomm-trace-cost-{}.raw", std::process::id()));
    let mut cfg = Config::new(&path, Output::Raw);
    cfg.buffer = 4 << 20;
    trace::enable(cfg);
    let on = hypercomm::run(1, body);
    trace::disable();
    let _ = std::fs::remove_file(&path);
    Ok(on.map_err(|e| e.to_string())?[0] - off)
}

/// memcpy rate on one thread between two buffers of `size` bytes.
fn memcpy_rate(size: usize, iters: usize) -> f64 {
    let src = vec![5u8; size];
    let mut dst = vec![0u8; size];
    let t0 = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    }
    (size * iters) as f64 / t0.elapsed().as_secs_f64()
}

pub(crate) fn main(a: BenchArgs) -> Result<(), String> {
    // As a rank of another job, each measurement's own job would join it again.
    if hypercomm::launch::is_launched() && !Processes::is_copy() {
        return Err(format!(
            "bench starts the ranks it measures itself (-n {}, --transport {}): run `hypercomm bench` on its own, not as the program of a job (hypercomm run, mpirun or srun)",
            a.n, a.transport
        ));
    }
    if a.repeat == 0 || a.iters == 0 {
        return Err("--iters and --repeat must be at least 1".into());
    }
    if a.transport == TransportKind::Sim {
        return Err(
            "--transport sim: bench measures wall-clock time on a real transport; the simulator predicts instead: hypercomm sim OP -p N (or hypercomm sim run for a program)"
                .into(),
        );
    }
    if let Op::Halo = a.op {
        return crate::bench_halo::main(&a);
    }
    if !(a.min_time_ms >= 0.0 && a.min_time_ms.is_finite()) {
        return Err(format!("--min-time-ms {}: want 0 or more", a.min_time_ms));
    }
    if let Some(path) = &a.trace {
        let mut cfg = hypercomm::trace::Config::new(path, hypercomm::trace::Output::PiclCompact);
        cfg.levels = a.trace_level;
        cfg.buffer = 4 << 20;
        hypercomm::trace::enable(cfg);
    }
    let sizes = match (&a.sizes, a.op) {
        (Some(s), _) => s.clone(),
        (None, Op::Barrier | Op::TraceCost) => vec![0],
        (None, Op::Allgather | Op::Alltoall) => default_sizes()
            .into_iter()
            .filter(|&s| s <= 1 << 20)
            .collect(),
        (None, _) => default_sizes(),
    };
    let (name, unit) = match a.op {
        Op::Latency => ("latency", "us"),
        Op::Bw => ("bw", "MB/s"),
        Op::Bibw => ("bibw", "MB/s"),
        Op::Handoff => ("handoff", "MB/s"),
        Op::Memcpy => ("memcpy", "MB/s"),
        Op::Allreduce => ("allreduce", "us"),
        Op::Reduce => ("reduce", "us"),
        Op::Bcast => ("bcast", "us"),
        Op::Allgather => ("allgather", "us"),
        Op::Alltoall => ("alltoall", "us"),
        Op::Barrier => ("barrier", "us"),
        Op::TraceCost => ("trace-cost", "ns"),
        Op::Halo => unreachable!("measured by bench_halo"),
    };
    crate::bench_sizes::check_memory(&a, a.op, name, &sizes)?;
    // A collective on one rank sends nothing: it measures the call's own
    // cost (e.g. under callgrind).
    let min_n = if a.op.is_collective() { 1 } else { 2 };
    if a.n < min_n {
        return Err(format!(
            "-n {}: {name} needs at least {min_n} rank{}",
            a.n,
            if min_n == 1 { "" } else { "s" }
        ));
    }
    // The variants to measure: (label, algorithm).
    let mut variants: Vec<(String, Algorithm)> = vec![(name.to_string(), Algorithm::Auto)];
    if a.op.is_collective() {
        let mut known = algorithms_for(a.op);
        // Every collective here also has the board (threads, shm) and the
        // MPI library's own (mpi); elsewhere the call says why not.
        known.extend([Algorithm::Board, Algorithm::Native]);
        if let Some(alg) = a.algorithm {
            let x = known.iter().find(|x| **x == alg).ok_or_else(|| {
                let names: Vec<&str> = known.iter().map(|x| x.name()).collect();
                format!(
                    "--algorithm {alg} is not one of {} for {name}",
                    names.join(", ")
                )
            })?;
            variants = vec![(format!("{name}:{x}"), *x)];
        } else if a.all_algorithms {
            variants.extend(
                known
                    .iter()
                    .filter(|x| !matches!(**x, Algorithm::Native | Algorithm::Board))
                    .map(|x| (format!("{name}:{x}"), *x)),
            );
        }
    } else if a.algorithm.is_some() || a.all_algorithms {
        return Err(format!(
            "--algorithm and --all-algorithms apply to collectives, not {name}"
        ));
    }
    // The copies started for the ranks of shm and tcp measurements print
    // nothing: their output would reach this terminal.
    let quiet = Processes::is_copy();
    if a.format == Format::Table && !quiet {
        outln!(
            "# hypercomm bench {name}, transport {}, n = {}",
            a.transport,
            a.n
        )?;
        outln!("{:<28} {:>10}  {:>12}", "variant", "bytes", unit)?;
    }
    // Ranks started by this command (shm) draw no bar of their own.
    let when = if Processes::is_copy() {
        crate::progress::When::Never
    } else {
        a.progress
    };
    if a.interleave && !a.op.is_collective() {
        return Err(format!("--interleave applies to collectives, not {name}"));
    }
    let jobs_per_size = if a.interleave {
        1
    } else {
        a.repeat * variants.len()
    };
    let mut progress = crate::progress::Progress::new(sizes.len() * jobs_per_size, when);
    for &size in &sizes {
        let (iters, warm) = match a.op {
            Op::Bw | Op::Bibw => {
                let (i, w) = iters_for(size, a.iters / 50 + 1);
                (i.max(5), w)
            }
            op if op.is_collective() => {
                let (i, w) = iters_for(size * a.n, a.iters / 10 + 1);
                (i.max(10), w)
            }
            _ => iters_for(size, a.iters),
        };
        // Which algorithm auto runs at this size, asked of rank 0 in a job
        // like the measured ones (its index in `algorithms_for`).
        let auto_label = match collective_kind(a.op) {
            Some(kind) if a.all_algorithms => {
                // The registry's algorithms, and what is not a schedule
                // (the board, the transport library's own).
                let mut known = algorithms_for(a.op);
                known.extend([Algorithm::Board, Algorithm::Native]);
                let check = !a.no_check;
                let key = format!("{name}:auto/{size}/choice");
                // The reductions run on f64 elements (see `collective`).
                let bytes = match a.op {
                    Op::Allreduce | Op::Reduce => (size / 8).max(usize::from(size != 0)) * 8,
                    _ => size,
                };
                let ix = run_ranks(a.transport, a.n, &key, |comm| {
                    comm.set_check(check);
                    let alg = comm.chosen_algorithm(kind, bytes, &CollOpts::default(), true)?;
                    Ok(known
                        .iter()
                        .position(|x| *x == alg)
                        .map_or(-1.0, |i| i as f64))
                })?;
                let alg = known
                    .get(ix as usize)
                    .filter(|_| ix >= 0.0)
                    .map_or("?", |x| x.name());
                format!("{name}:auto={alg}")
            }
            _ => name.to_string(),
        };
        // The first job at a new size runs slower (measured: a 256 KiB
        // allreduce on 2 ranks 15 µs, first after 32 KiB 45-400 µs, whichever
        // variant comes first), so one untimed job of the first variant
        // settles the process before any is timed.
        if a.op.is_collective() {
            let opts = CollOpts {
                algorithm: variants[a.rotate % variants.len()].1,
                ..Default::default()
            };
            let check = !a.no_check;
            let key = format!("{name}:settle/{size}");
            run_ranks(a.transport, a.n, &key, |comm| {
                comm.set_check(check);
                collective(comm, a.op, size, (warm, warm), 0.0, &opts)
            })?;
        }
        // Repeats go round all variants in turn, so that drift of the
        // machine over time touches every variant alike.
        let mut all: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        // The order the variants take turns in: repeat r starts with
        // variant (rotate + r) mod count.
        let order: Vec<usize> = (0..a.repeat)
            .flat_map(|rep| {
                let first = (a.rotate + rep) % variants.len();
                (first..variants.len()).chain(0..first)
            })
            .collect();
        if a.interleave {
            progress.step(&format!("{name} {size} B, all variants"));
            let check = !a.no_check;
            let key = format!("{name}:interleaved/{size}");
            let figs = run_ranks_many(a.transport, a.n, &key, order.len(), |comm| {
                comm.set_check(check);
                order
                    .iter()
                    .map(|&i| {
                        let opts = CollOpts {
                            algorithm: variants[i].1,
                            ..Default::default()
                        };
                        collective(comm, a.op, size, (iters, warm), a.min_time_ms / 1e3, &opts)
                    })
                    .collect()
            })?;
            for (&i, v) in order.iter().zip(figs) {
                all[i].push(v);
            }
        }
        // Otherwise each turn is a job of its own.
        let separate: &[usize] = if a.interleave { &[] } else { &order };
        for &i in separate {
            let (label, alg) = &variants[i];
            let samples = &mut all[i];
            progress.step(&format!("{label} {size} B"));
            let op = a.op;
            if let Op::Memcpy = op {
                samples.push(memcpy_rate(size, iters));
                continue;
            }
            if let Op::TraceCost = op {
                samples.push(trace_cost(iters.max(100_000))?);
                continue;
            }
            let opts = CollOpts {
                algorithm: *alg,
                ..Default::default()
            };
            let check = !a.no_check;
            let key = format!("{label}/{size}/{}", samples.len());
            let r = run_ranks(a.transport, a.n, &key, |comm| {
                comm.set_check(check);
                match op {
                    Op::Latency => latency(comm, size, iters, warm),
                    Op::Bw => bandwidth(comm, size, iters, warm, false),
                    Op::Bibw => bandwidth(comm, size, iters, warm, true),
                    Op::Handoff => handoff(comm, size, iters, warm),
                    _ => collective(comm, op, size, (iters, warm), a.min_time_ms / 1e3, &opts),
                }
            })?;
            samples.push(r);
        }
        // The figures go out with the bar erased (it shares the terminal).
        progress.suspend(|| -> Result<(), String> {
            for ((label, alg), samples) in variants.iter().zip(all) {
                let v = summary(samples, a.stat, !matches!(unit, "us" | "ns"));
                let label = if *alg == Algorithm::Auto && label == name {
                    &auto_label
                } else {
                    label
                };
                let value = match unit {
                    "us" => v * 1e6,
                    "ns" => v,
                    _ => v / 1e6,
                };
                match a.format {
                    _ if quiet => {}
                    Format::Table => outln!("{label:<28} {size:>10}  {value:>12.3}")?,
                    Format::Tsv => outln!("{label}\t{}\t{size}\t{value:.3}\t{unit}", a.n)?,
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Run one measurement on `n` ranks over `transport`; rank 0's figure.
///
/// For `shm` and `tcp` the ranks are processes: this command again, started
/// for the measurement `key`; a copy skips every other measurement
/// (returning 0 without running it) and exits after its own.
fn run_ranks<F>(transport: TransportKind, n: usize, key: &str, f: F) -> Result<f64, String>
where
    F: Fn(&Comm) -> Result<f64, Error> + Sync,
{
    run_ranks_many(transport, n, key, 1, |comm| f(comm).map(|v| vec![v])).map(|v| v[0])
}

/// As [`run_ranks`], for a measurement that yields `count` figures (rank
/// 0's list).
pub(crate) fn run_ranks_many<F>(
    transport: TransportKind,
    n: usize,
    key: &str,
    count: usize,
    f: F,
) -> Result<Vec<f64>, String>
where
    F: Fn(&Comm) -> Result<Vec<f64>, Error> + Sync,
{
    let mut ranks = if transport == TransportKind::Thread {
        hypercomm::run(n, f).map_err(|e| e.to_string())?
    } else {
        let r = Processes::new(n)
            .transport(transport)
            .key(key)
            .quiet()
            .run(f)
            .map_err(|e| e.to_string())?;
        if r.is_empty() {
            // A copy started for another measurement: skip this one.
            return Ok(vec![0.0; count]);
        }
        r
    };
    let v = ranks.swap_remove(0);
    if v.len() == count {
        Ok(v)
    } else {
        Err(format!(
            "{key}: rank 0 gave {} figures, want {count}",
            v.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_repeats() {
        let v = vec![3.0, 1.0, 9.0, 2.0, 5.0];
        assert_eq!(summary(v.clone(), Stat::Median, false), 3.0);
        assert_eq!(summary(v.clone(), Stat::Min, false), 1.0);
        // A rate is better when larger: its least disturbed run is the largest.
        assert_eq!(summary(v, Stat::Min, true), 9.0);
    }

    #[test]
    fn every_collective_names_its_kind() {
        for op in [
            Op::Allreduce,
            Op::Reduce,
            Op::Bcast,
            Op::Allgather,
            Op::Alltoall,
            Op::Barrier,
        ] {
            assert!(op.is_collective());
            assert!(collective_kind(op).is_some());
            assert!(!algorithms_for(op).is_empty());
        }
        assert!(collective_kind(Op::Latency).is_none());
    }
}
