//! `hypercomm trace`: convert, summarise and report traces.
//!
//! * `convert IN… [--to picl-verbose|picl-compact|chrome|html|raw] [-o OUT]`:
//!   reads PICL files (verbose or compact) and raw per-process streams
//!   (`PATH.<node>.raw`), merges them into one causal trace and writes it
//!   (to standard output without `-o`) as PICL verbose text unless `--to`
//!   says otherwise (the format `HYPERCOMM_TRACE` writes by default).
//! * `stats IN…`: utilisation per node and per-operation statistics.
//! * `report IN… -o report.html`: the self-contained HTML report.
//!
//! Standard output may be a pipe that its reader closes early (`… | head`):
//! the command then ends quietly with success, as `cat` would, instead of
//! failing on the broken pipe.
//!
//! Not done yet: reading Chrome JSON back; filtering by time or node.

use crate::out::errln;
use clap::{Args, Subcommand};
use hypercomm::trace::{self, Output};
use std::path::PathBuf;

/// Options of `hypercomm trace`.
#[derive(Args)]
pub(crate) struct TraceArgs {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert trace files (merged) into another format.
    Convert {
        /// Input files: PICL verbose/compact, or raw streams.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output format (PICL verbose, the trace files' default, unless given).
        #[arg(long, value_enum, ignore_case = true, default_value = "picl-verbose")]
        to: Output,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Print utilisation and per-operation statistics.
    Stats {
        /// Input files.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Write the HTML report.
    Report {
        /// Input files.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output file.
        #[arg(short, long, default_value = "report.html")]
        output: PathBuf,
    },
}

pub(crate) fn main(a: TraceArgs) -> Result<(), String> {
    match a.cmd {
        Cmd::Convert { inputs, to, output } => {
            let t = trace::read_files(&inputs).map_err(|e| e.to_string())?;
            let text = trace::render(&t, to);
            match output {
                Some(p) => std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display())),
                None => crate::out::text(&text),
            }
        }
        Cmd::Stats { inputs } => {
            let t = trace::read_files(&inputs).map_err(|e| e.to_string())?;
            crate::out::text(&trace::report::stats_text(&t))
        }
        Cmd::Report { inputs, output } => {
            let t = trace::read_files(&inputs).map_err(|e| e.to_string())?;
            std::fs::write(&output, trace::report::html(&t))
                .map_err(|e| format!("{}: {e}", output.display()))?;
            errln!("wrote {}", output.display());
            Ok(())
        }
    }
}
