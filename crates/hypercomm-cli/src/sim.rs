//! `hypercomm sim`: predict on a simulated machine (SPEC.md section 8).
//!
//! * `hypercomm sim <op> -p P [model options]`: simulate one collective
//!   (the seed's algorithm for the network and routing, or `--algorithm`)
//!   on P nodes and print its time, in the unit of ts, tw and th; with
//!   seed 001's closed form beside it when there is one.
//! * `hypercomm sim run [-p P] [model options] PROGRAM [ARGS…]`: run a
//!   hypercomm program (one that starts its ranks with `hypercomm::run`)
//!   on virtual nodes, by `HYPERCOMM_SIM`; print its virtual end time.
//! * `hypercomm sim calibrate --transport thread|shm`: measure ts and tw
//!   of a real transport by ping-pong and a least-squares fit.
//!
//! Not done yet: `sim run` of programs that start processes (`init`);
//! more than one collective per prediction (use the library's
//! `hypercomm::sim::simulate` with `Schedule::then`).

use crate::out::{errln, outln};
use clap::{Args, ValueEnum};
use hypercomm::collective::registry;
use hypercomm::launch::job::{signal_name, ProgramEnd};
use hypercomm::sim::{
    check_algorithm, closed_form, seed_algorithm, simulate_entry, Call, Compute, Config, Costs,
    Model, ModelError, Network, Ports, Routing,
};
use hypercomm::{Algorithm, Collective, TransportKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// What `hypercomm sim` does: an operation to predict, `run` or
/// `calibrate`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum Op {
    /// One-to-all broadcast of M words.
    Bcast,
    /// Single-node accumulation (reduce) of M words to node 0.
    Reduce,
    /// All-to-all broadcast: every node's M words to every node.
    Allgather,
    /// Prefix sums of M words.
    Scan,
    /// Allreduce of M words.
    Allreduce,
    /// All-to-all personalised: M words from every node to every node.
    Alltoall,
    /// Barrier.
    Barrier,
    /// Gather of M words from every node to node 0.
    Gather,
    /// Scatter of M words to every node from node 0.
    Scatter,
    /// Run PROGRAM on virtual nodes.
    Run,
    /// Measure ts and tw of a real transport (--transport).
    Calibrate,
}

/// The network, as `--topology` names it.
#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum Topo {
    /// A hypercube of 2^d nodes (e-cube routing).
    Hypercube,
    /// A ring (the shorter way round).
    Ring,
    /// A 2-D mesh without wrap-around (XY routing; rows × columns as
    /// MPI_Dims_create, row-major).
    Mesh,
    /// A 2-D mesh with wrap-around (a torus).
    MeshWrap,
    /// Fully connected.
    Full,
}

impl Topo {
    fn network(self) -> Network {
        match self {
            Topo::Hypercube => Network::Hypercube,
            Topo::Ring => Network::Ring,
            Topo::Mesh => Network::Mesh,
            Topo::MeshWrap => Network::MeshWrap,
            Topo::Full => Network::Full,
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum Rt {
    /// Store-and-forward: a hop costs th + tw·m.
    Sf,
    /// Cut-through: th per hop, tw·m once.
    Ct,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum PortModel {
    /// One send and one receive at a time per node (seed 001).
    One,
    /// All links at once.
    All,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum Format {
    /// Sentences.
    Text,
    /// One line: op, topology, routing, p, words, time (tab-separated).
    Tsv,
}

/// Options of `hypercomm sim`.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  hypercomm sim bcast --topology hypercube -p 1024 --words 64 --ts 100 --tw 1 --th 5
  hypercomm sim allgather --topology mesh-wrap -p 4096 --words 8 --routing ct --format tsv
  hypercomm sim run -p 1024 --topology hypercube --trace run.html target/release/examples/kumar_matvec 1024 64
  hypercomm sim calibrate --transport shm

Times are plain numbers in any one unit (seconds for `run`); the result is in the same unit.")]
pub(crate) struct SimArgs {
    /// What to do: an operation to predict, `run` a program, or `calibrate`.
    #[arg(value_enum)]
    op: Op,
    /// The network.
    #[arg(long, value_enum, default_value = "hypercube")]
    topology: Topo,
    /// Nodes of the machine (a power of two for a hypercube). `run`: the
    /// machine's size (default: one node per rank of the program).
    #[arg(short = 'p', long = "nodes")]
    nodes: Option<usize>,
    /// Message length M in words (per node for allgather, gather, scatter;
    /// per block for alltoall; default 1); `-m`, seed 001's name for it.
    /// Predictions only.
    #[arg(short = 'm', long)]
    words: Option<usize>,
    /// Start-up time of a message.
    #[arg(long, default_value_t = 1e-6, allow_negative_numbers = true)]
    ts: f64,
    /// Time per word on every link a message crosses.
    #[arg(long, default_value_t = 1e-9, allow_negative_numbers = true)]
    tw: f64,
    /// Time per hop (the header's, with cut-through routing).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    th: f64,
    /// Routing: store-and-forward or cut-through.
    #[arg(long, value_enum, default_value = "sf")]
    routing: Rt,
    /// One port per node (seed 001) or all ports.
    #[arg(long, value_enum, default_value = "one")]
    ports: PortModel,
    /// Cores the nodes share (node v on core v mod N), each doing one
    /// node's start-ups and copies at a time, as when more ranks than cores
    /// run on one machine (default: a core per node, seed 001's machine;
    /// `calibrate` prints this machine's). Predictions only.
    #[arg(long, value_name = "N")]
    cores: Option<usize>,
    /// With --cores: the time a core takes to turn from one node to
    /// another (a context switch), in the unit of ts.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    switch: f64,
    /// Links carry any number of messages at once (no contention).
    #[arg(long)]
    no_contention: bool,
    /// The algorithm (a registered name of the operation's family; default
    /// or `auto`: seed 001's for the network and routing). Predictions only.
    #[arg(long)]
    algorithm: Option<Algorithm>,
    /// Pipelined algorithms: elements per segment, at least 1 (default: the
    /// whole message, as in seed 001). Predictions only.
    #[arg(long)]
    segment: Option<usize>,
    /// Output format of a prediction (default: text). Predictions only.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// `run`: trace the program in virtual time to FILE (PICL verbose; HTML
    /// for *.html, Chrome JSON for *.json).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// `run`: what computation between calls costs: zero, or cpu[:FACTOR]
    /// (measured CPU time times FACTOR).
    #[arg(long, default_value = "zero")]
    compute: String,
    /// `run`: bytes per word.
    #[arg(long, default_value_t = 8.0)]
    word_bytes: f64,
    /// `calibrate`: the transport to measure.
    #[arg(long, value_enum, default_value = "thread")]
    transport: TransportKind,
    /// `run`: the program and its arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    program: Vec<String>,
}

/// The operation's collective.
fn collective(op: Op) -> Option<Collective> {
    Some(match op {
        Op::Bcast => Collective::Bcast,
        Op::Reduce => Collective::Reduce,
        Op::Allgather => Collective::Allgather,
        Op::Scan => Collective::Scan,
        Op::Allreduce => Collective::Allreduce,
        Op::Alltoall => Collective::Alltoall,
        Op::Barrier => Collective::Barrier,
        Op::Gather => Collective::Gather,
        Op::Scatter => Collective::Scatter,
        Op::Run | Op::Calibrate => return None,
    })
}

impl SimArgs {
    fn costs(&self) -> Costs {
        Costs {
            ts: self.ts,
            tw: self.tw,
            th: self.th,
        }
    }

    fn routing(&self) -> Routing {
        match self.routing {
            Rt::Sf => Routing::StoreAndForward,
            Rt::Ct => Routing::CutThrough,
        }
    }

    fn ports(&self) -> Ports {
        match self.ports {
            PortModel::One => Ports::One,
            PortModel::All => Ports::All,
        }
    }
}

pub(crate) fn main(a: SimArgs) -> Result<ExitCode, String> {
    if a.op != Op::Run && !a.program.is_empty() {
        return Err(format!(
            "unexpected arguments {:?}: only `sim run` takes a program",
            a.program
        ));
    }
    match a.op {
        Op::Run => run(&a),
        Op::Calibrate => crate::calibrate::main(a.transport).map(|()| ExitCode::SUCCESS),
        op => {
            let c = collective(op).expect("an operation");
            predict(&a, c).map(|()| ExitCode::SUCCESS)
        }
    }
}

/// Simulate one collective and print its time.
fn predict(a: &SimArgs, c: Collective) -> Result<(), String> {
    // Options of `sim run` and `calibrate` that a prediction would
    // silently ignore.
    for (given, what) in [
        (
            a.trace.is_some(),
            "--trace: only `sim run` traces a program",
        ),
        (
            a.compute != "zero",
            "--compute: only `sim run` runs computation between calls",
        ),
        (
            a.word_bytes != 8.0,
            "--word-bytes: only `sim run` turns a program's bytes into words",
        ),
        (
            a.transport != TransportKind::Thread,
            "--transport: only `sim calibrate` measures a transport",
        ),
        (
            c == Collective::Barrier && a.words.is_some(),
            "-m/--words: a barrier carries no data",
        ),
    ] {
        if given {
            return Err(format!("{what}; a prediction would ignore it"));
        }
    }
    let p = a
        .nodes
        .ok_or("-p P (the number of nodes) is required for a prediction")?;
    let network = a.topology.network();
    let mut model = Model::new(network, p, a.costs()).map_err(|e| match e {
        // The machine alone is beyond the simulator: say for what.
        ModelError::TooBig { .. } => format!("{c}: {e}"),
        e => e.to_string(),
    })?;
    model.routing = a.routing();
    model.ports = a.ports();
    model.contention = !a.no_contention;
    if let Some(cores) = a.cores {
        model = model
            .with_cores(cores, a.switch)
            .map_err(|e| format!("--cores/--switch: {e}"))?;
    } else if a.switch != 0.0 {
        return Err("--switch needs --cores (the cores the nodes share)".into());
    }
    let alg = match a.algorithm.filter(|x| *x != Algorithm::Auto) {
        Some(alg) => {
            check_algorithm(c, alg).map_err(|e| format!("--algorithm: {e}"))?;
            alg
        }
        None => seed_algorithm(c, network, model.routing)
            .ok_or_else(|| format!("no algorithm for {c} on a {network}"))?,
    };
    let entry = registry::find(c, alg).expect("checked");
    if a.segment == Some(0) {
        return Err("--segment 0: a segment is at least one element".into());
    }
    let words = a.words.unwrap_or(1);
    let mut call = Call::new(p, words);
    call.segment = a.segment;
    let started = Instant::now();
    let out = simulate_entry(&model, entry, &call.params(0), 1.0)
        .map_err(|e| format!("{c} with {alg}: {e}"))?;
    let wall = started.elapsed();
    let time = out.time();
    match a.format.unwrap_or(Format::Text) {
        Format::Tsv => outln!(
            "{}\t{}\t{}\t{p}\t{}\t{time}",
            c.name(),
            network,
            model.routing.name(),
            words
        )?,
        Format::Text => {
            outln!(
                "{}{} on a {p}-node {network} ({} routing, {} port{}{}), algorithm {alg}",
                c.name(),
                match (c, words) {
                    (Collective::Barrier, _) => String::new(),
                    (_, 1) => " of 1 word".into(),
                    (_, w) => format!(" of {w} words"),
                },
                model.routing.name(),
                model.ports.name(),
                if model.ports == Ports::One { "" } else { "s" },
                if model.contention {
                    ""
                } else {
                    ", no contention"
                }
            )?;
            if let Some(c) = model.cores() {
                outln!(
                    "  on {c} shared core{} (switch {})",
                    if c == 1 { "" } else { "s" },
                    model.switch()
                )?;
            }
            outln!("  predicted time: {time}")?;
            if let Some(f) = closed_form(c, network, model.routing) {
                let seeds = a.algorithm.is_none_or(|x| x == Algorithm::Auto);
                // The seed's forms are for one port per node.
                let one_port = model.ports == Ports::One;
                if (f.holds)(p)
                    && seeds
                    && a.segment.is_none()
                    && model.cores().is_none()
                    && one_port
                {
                    let want = (f.time)(p, words as f64, model.costs);
                    outln!("  seed 001 closed form: {} = {want}", f.text)?;
                }
            }
            outln!(
                "  {} messages, {} words sent; simulated in {:.3} s ({} events)",
                out.messages,
                out.words,
                wall.as_secs_f64(),
                out.events
            )?;
        }
    }
    Ok(())
}

/// Run a program on the simulator and print its virtual end time.
fn run(a: &SimArgs) -> Result<ExitCode, String> {
    let (prog, args) = a
        .program
        .split_first()
        .ok_or("sim run needs a PROGRAM (and its arguments)")?;
    if a.cores.is_some() {
        return Err(
            "--cores: sim run does not model shared cores yet; it is for predictions".into(),
        );
    }
    // The program chooses its own algorithms, message lengths and
    // segments; these options would be silently ignored.
    for (given, what) in [
        (a.algorithm.is_some(), "--algorithm"),
        (a.words.is_some(), "-m/--words"),
        (a.segment.is_some(), "--segment"),
        (a.format.is_some(), "--format"),
        (a.transport != TransportKind::Thread, "--transport"),
    ] {
        if given {
            return Err(format!(
                "{what}: sim run runs the program's own calls; it is for predictions"
            ));
        }
    }
    let compute = match a.compute.split_once(':') {
        None if a.compute == "zero" => Compute::Zero,
        None if a.compute == "cpu" => Compute::Cpu(1.0),
        Some(("cpu", f)) => Compute::Cpu(
            f.parse()
                .map_err(|_| format!("--compute {}: {f:?} is not a factor", a.compute))?,
        ),
        _ => return Err(format!("--compute {}: use zero or cpu[:FACTOR]", a.compute)),
    };
    let config = Config {
        network: a.topology.network(),
        nodes: a.nodes,
        routing: a.routing(),
        ports: a.ports(),
        costs: a.costs(),
        contention: !a.no_contention,
        word_bytes: a.word_bytes,
        compute,
    };
    // The machine must make sense for some job: check what can be checked
    // (costs, word size, computation, and the size when given) before
    // starting the program.
    config
        .model(a.nodes.unwrap_or(1))
        .map_err(|e| e.to_string())?;
    let report = std::env::temp_dir().join(format!("hypercomm-sim-{}.report", std::process::id()));
    let _ = std::fs::remove_file(&report);
    let mut cmd = std::process::Command::new(prog);
    cmd.args(args)
        .env(hypercomm::sim::ENV, config.to_string())
        .env(hypercomm::sim::REPORT_ENV, &report);
    if let Some(t) = &a.trace {
        let dir = t.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(d) = dir.filter(|d| !d.is_dir()) {
            return Err(format!(
                "--trace {}: the folder {} does not exist",
                t.display(),
                d.display()
            ));
        }
        let spec = match t.extension().and_then(|e| e.to_str()) {
            Some("html") => format!("{}:html", t.display()),
            Some("json") => format!("{}:chrome", t.display()),
            _ => t.display().to_string(),
        };
        cmd.env("HYPERCOMM_TRACE", spec);
    }
    let end = hypercomm::launch::job::run_program(&mut cmd)
        .map_err(|e| format!("could not start {prog:?}: {e}"))?;
    let lines = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    let status = match end {
        ProgramEnd::Status(status) => status,
        ProgramEnd::Interrupted(sig) => {
            errln!(
                "hypercomm sim run: interrupted by {}; {prog} was stopped",
                signal_name(sig)
            );
            return Ok(ExitCode::from((128 + sig).clamp(0, 255) as u8));
        }
    };
    // `start …` when the program started a job (it says why it failed, if
    // it did), `end=…` when one ended.
    if lines.is_empty() {
        errln!("hypercomm sim run: {prog} ran no simulated job (does it start its ranks with hypercomm::run?)");
    }
    for l in lines.lines().filter(|l| l.starts_with("end=")) {
        // end=T ranks=N messages=K words=W
        let field = |k: &str| {
            l.split_whitespace()
                .find_map(|f| f.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .unwrap_or("?")
        };
        errln!(
            "hypercomm sim run: virtual time {} s on {} ranks of a {} ({} messages, {} words)",
            field("end"),
            field("ranks"),
            config.network,
            field("messages"),
            field("words")
        );
    }
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}
