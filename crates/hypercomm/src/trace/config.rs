//! How a trace is configured: output format, buffer policy, levels, and
//! what a rank can ask about its tracing.

use super::clock::{Monotonic, TimeSource};
use super::event::Levels;
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// The most records a rank's trace buffer holds: 2^24 (1 GiB of 64-byte
/// records); a larger [`Config::buffer`] is taken as this.
pub const MAX_BUFFER: usize = 1 << 24;

/// Output format of a trace file.
///
/// With the `clap` feature it is a `clap::ValueEnum` (`--to`), with the
/// names and aliases [`Output::parse`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Output {
    /// PICL verbose text.
    #[cfg_attr(feature = "clap", value(alias = "picl", alias = "verbose"))]
    PiclVerbose,
    /// PICL compact text.
    #[cfg_attr(feature = "clap", value(alias = "compact"))]
    PiclCompact,
    /// Chrome Trace Event Format JSON (Perfetto, chrome://tracing).
    #[cfg_attr(feature = "clap", value(alias = "json", alias = "perfetto"))]
    Chrome,
    /// Self-contained HTML report.
    #[cfg_attr(feature = "clap", value(alias = "report"))]
    Html,
    /// Our raw per-rank streams (JSON), nanosecond times and clock
    /// corrections; what separate processes write for `trace convert`.
    Raw,
}

impl Output {
    /// Parse a format name (`picl-verbose`, `picl-compact`, `chrome`,
    /// `html`, `raw`; also `verbose`, `compact`, `json`).
    pub fn parse(s: &str) -> Option<Output> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "picl-verbose" | "picl" | "verbose" => Output::PiclVerbose,
            "picl-compact" | "compact" => Output::PiclCompact,
            "chrome" | "json" | "perfetto" => Output::Chrome,
            "html" | "report" => Output::Html,
            "raw" => Output::Raw,
            _ => return None,
        })
    }
}

/// What to do when a rank's buffer is full (PICL tracenode's `flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Stop recording (a `trace_stop` record); statistics go on. PICL's
    /// choice for performance measurements (no flush perturbs the run).
    Stop,
    /// Hand the buffer to the collector and go on (a `trace_flush` record
    /// marks the time it took). Our default: nothing is lost.
    #[default]
    Flush,
}

/// Which ranks of a traced job record (PICL starts tracing on the host with
/// tracehost and on each node with tracenode, independently: the host
/// only, some nodes only, or any mix).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Ranks {
    /// Every rank, the host included.
    #[default]
    All,
    /// The host (when `host`) and the listed nodes.
    Only {
        /// Whether the host records.
        host: bool,
        /// The nodes that record.
        nodes: Vec<usize>,
    },
}

impl Ranks {
    /// Only the host (PICL tracehost without tracenode).
    pub fn host_only() -> Ranks {
        Ranks::Only {
            host: true,
            nodes: Vec::new(),
        }
    }

    /// Only these nodes, not the host (PICL tracenode on some nodes).
    pub fn nodes(nodes: impl IntoIterator<Item = usize>) -> Ranks {
        Ranks::Only {
            host: false,
            nodes: nodes.into_iter().collect(),
        }
    }

    /// Whether node `node` (the host when `host`) records.
    pub fn includes(&self, node: usize, host: bool) -> bool {
        match self {
            Ranks::All => true,
            Ranks::Only { host: h, nodes } => {
                if host {
                    *h
                } else {
                    nodes.contains(&node)
                }
            }
        }
    }
}

/// Tracing configuration.
#[derive(Clone)]
pub struct Config {
    /// The output file.
    pub path: PathBuf,
    /// Its format.
    pub output: Output,
    /// Initial levels (PICL tracelevel).
    pub levels: Levels,
    /// Buffer size per rank, in records (at least 16, at most
    /// [`MAX_BUFFER`]; 64 bytes each).
    pub buffer: usize,
    /// What to do when the buffer is full.
    pub policy: Policy,
    /// Measure clock offsets to rank 0 at start and exit.
    pub sync: bool,
    /// Where timestamps come from.
    pub clock: Arc<dyn TimeSource>,
    /// Which ranks record (default: all).
    pub ranks: Ranks,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("path", &self.path)
            .field("output", &self.output)
            .field("levels", &self.levels)
            .field("buffer", &self.buffer)
            .field("policy", &self.policy)
            .field("sync", &self.sync)
            .field("ranks", &self.ranks)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Levels 3,3,3, a buffer of 64 Ki records per rank (4 MiB, allocated
    /// and touched at trace start), flush policy (nothing is lost; each
    /// flush is marked by a `trace_flush` record), synchronised clocks, the
    /// monotonic clock.
    pub fn new(path: impl Into<PathBuf>, output: Output) -> Config {
        Config {
            path: path.into(),
            output,
            levels: Levels::all(3),
            buffer: 1 << 16,
            policy: Policy::Flush,
            sync: true,
            clock: Arc::new(Monotonic),
            ranks: Ranks::All,
        }
    }

    /// From `HYPERCOMM_TRACE=path[:format]` and `HYPERCOMM_TRACE_LEVEL=e,c,m`
    /// (also `HYPERCOMM_TRACE_BUFFER=records`, `HYPERCOMM_TRACE_POLICY=stop|flush`).
    /// `Ok(None)` when `HYPERCOMM_TRACE` is unset or empty.
    pub fn from_env() -> Result<Option<Config>> {
        let get = |k: &str| std::env::var(k).ok().filter(|s| !s.trim().is_empty());
        let Some(spec) = get("HYPERCOMM_TRACE") else {
            return Ok(None);
        };
        let bad = |op: &'static str, what: String| Error::InvalidArgument { op, what };
        let (path, output) = match spec.rsplit_once(':') {
            Some((p, f)) if Output::parse(f).is_some() && !p.is_empty() => {
                (p.to_string(), Output::parse(f).expect("checked"))
            }
            // A plain word after the last colon is meant as a format (a
            // path's own colon, `C:\t`, is followed by a separator).
            Some((p, f))
                if !p.is_empty()
                    && !f.is_empty()
                    && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                return Err(bad(
                    "HYPERCOMM_TRACE",
                    format!(
                        "{spec:?}: {f:?} is not a trace format \
                         (picl-verbose, picl-compact, chrome, html or raw)"
                    ),
                ));
            }
            _ => (spec.clone(), Output::PiclVerbose),
        };
        let mut c = Config::new(path, output);
        if let Some(l) = get("HYPERCOMM_TRACE_LEVEL") {
            c.levels = parse_levels(&l).ok_or_else(|| {
                bad(
                    "HYPERCOMM_TRACE_LEVEL",
                    format!("{l:?} is not e,c,m (three integers 0..3)"),
                )
            })?;
        }
        if let Some(b) = get("HYPERCOMM_TRACE_BUFFER") {
            c.buffer = b.trim().parse().map_err(|_| {
                bad(
                    "HYPERCOMM_TRACE_BUFFER",
                    format!("{b:?} is not a number of records"),
                )
            })?;
            if c.buffer > MAX_BUFFER {
                return Err(bad(
                    "HYPERCOMM_TRACE_BUFFER",
                    format!(
                        "{} records is more than a rank's buffer holds ({MAX_BUFFER} records of 64 bytes, 1 GiB)",
                        c.buffer
                    ),
                ));
            }
        }
        if let Some(p) = get("HYPERCOMM_TRACE_POLICY") {
            c.policy = match p.trim() {
                "stop" => Policy::Stop,
                "flush" => Policy::Flush,
                _ => {
                    return Err(bad(
                        "HYPERCOMM_TRACE_POLICY",
                        format!("{p:?} is neither stop nor flush"),
                    ))
                }
            };
        }
        Ok(Some(c))
    }
}

/// Parse `e,c,m`: three levels, each 0..=3; `None` for anything else.
pub fn parse_levels(s: &str) -> Option<Levels> {
    let v: Vec<i32> = s
        .split(',')
        .map(|x| x.trim().parse::<i32>().ok().filter(|l| (0..=3).contains(l)))
        .collect::<Option<_>>()?;
    match v[..] {
        [event, compstats, commstats] => Some(Levels {
            event,
            compstats,
            commstats,
        }),
        _ => None,
    }
}

/// What [`info`](super::info) reports (PICL traceinfo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Info {
    /// Lower bound on the records that still fit in the buffer (0 when not
    /// tracing, stopped or exited).
    pub remaining: usize,
    /// Current levels.
    pub levels: Levels,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_three_integers_from_0_to_3() {
        assert_eq!(
            parse_levels("3, 0,2"),
            Some(Levels {
                event: 3,
                compstats: 0,
                commstats: 2
            })
        );
        for bad in [
            "9,9,9", "-1,-1,-1", "4,0,0", "0,0,-1", "1,2", "1,2,3,0", "a,b,c",
        ] {
            assert_eq!(parse_levels(bad), None, "{bad}");
        }
    }
}
