//! The `hypercomm` command: launcher, benchmarks, trace tools and simulator.
//!
//! Available now: `hypercomm run` (the launcher; shm and TCP transports,
//! remote hosts over ssh),
//! `hypercomm bench` (point-to-point, collectives and the grid layer's halo
//! exchange on threads, shm and TCP) and
//! `hypercomm trace` (convert, stats, report). Planned, and saying so when
//! called: `sim` (predict on a simulated machine).

mod bench;
mod bench_halo;
mod progress;
mod run;
mod trace;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// hypercomm: portable, instrumented message passing.
#[derive(Parser)]
#[command(name = "hypercomm", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start N ranks of a program as processes (like mpirun).
    #[command(long_about = run::LONG_ABOUT)]
    Run(run::RunArgs),
    /// OSU-style micro-benchmarks (point-to-point, collectives, halo exchange; threads, shm, tcp).
    Bench(bench::BenchArgs),
    /// Convert, summarise and report traces (PICL, Chrome/Perfetto, HTML).
    Trace(trace::TraceArgs),
    /// Predict a program or collective on a simulated machine. Not yet available.
    Sim {
        /// Everything after `sim`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn not_yet(what: &str) -> ExitCode {
    eprintln!(
        "hypercomm {what}: not yet available in this version. \
         Run programs as threads with hypercomm::run(n, |comm| ...) meanwhile."
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(a) => match run::main(a) {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("hypercomm run: {e}");
                ExitCode::from(2)
            }
        },
        Command::Trace(a) => match trace::main(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hypercomm trace: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Sim { .. } => not_yet("sim"),
        Command::Bench(a) => match bench::main(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hypercomm bench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
