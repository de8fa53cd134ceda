//! The raw stream format (serde): one file per process, `PATH.<node>.raw`,
//! or one for a whole job of threads. JSON: a format tag, the job's shape,
//! and per rank its clock corrections and its records as compact PICL lines
//! with nanosecond times.

use super::clock::{Correction, Offset, RankStream};
use super::event::{Kind, Levels, Record};
use serde::{Deserialize, Serialize};

/// The format tag of raw stream files.
const FORMAT: &str = "hypercomm-trace-raw-1";

#[derive(Serialize, Deserialize)]
pub(super) struct Raw {
    format: String,
    /// The job the streams come from (absent in files of earlier
    /// versions, and in streams moved between processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    job: Option<Shape>,
    streams: Vec<Stream>,
}

/// The shape of the job a raw file comes from: files of one run agree on
/// it, so files left from an earlier run of another size are found out.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Shape {
    /// Its nodes (the host not counted).
    pub(super) nodes: usize,
    /// Whether it has a host.
    pub(super) host: bool,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.nodes == 1 { "" } else { "s" };
        write!(f, "a job of {} node{s}", self.nodes)?;
        if self.host {
            write!(f, " and a host")?;
        }
        Ok(())
    }
}

impl Shape {
    /// Whether `node` (PICL's number, the host −32768) belongs to such a job.
    pub(super) fn has(&self, node: i32) -> bool {
        if node == super::HOST_ID {
            self.host
        } else {
            usize::try_from(node).is_ok_and(|n| n < self.nodes)
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Stream {
    node: i32,
    shared: bool,
    start: Option<[i64; 3]>,
    end: Option<[i64; 3]>,
    /// Compact PICL lines with nanosecond times: `code ns node fields…`.
    records: Vec<String>,
}

fn off(o: Option<Offset>) -> Option<[i64; 3]> {
    o.map(|o| [o.at, o.offset, o.rtt])
}
fn unoff(o: Option<[i64; 3]>) -> Option<Offset> {
    o.map(|[at, offset, rtt]| Offset { at, offset, rtt })
}

impl Raw {
    /// The file of `s`, from a job of shape `job` when known.
    pub(super) fn from_streams(s: &[RankStream], job: Option<Shape>) -> Raw {
        Raw {
            format: FORMAT.into(),
            job,
            streams: s
                .iter()
                .map(|s| Stream {
                    node: s.node,
                    shared: s.correction.shared,
                    start: off(s.correction.start),
                    end: off(s.correction.end),
                    records: s.records.iter().map(line).collect(),
                })
                .collect(),
        }
    }
    /// The job these streams come from, when the file says.
    pub(super) fn shape(&self) -> Option<Shape> {
        self.job
    }
    /// The streams; an error names a wrong format, or the first
    /// record that is not one (its stream's node and its number, from 1).
    pub(super) fn into_streams(self) -> Result<Vec<RankStream>, String> {
        if self.format != FORMAT {
            return Err(format!(
                "format {:?} is not a raw trace stream's ({FORMAT:?})",
                self.format
            ));
        }
        let stream = |s: Stream| {
            let records = s
                .records
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    unline(l).ok_or_else(|| {
                        format!(
                            "node {}'s record {}: not a trace record: {l:?}",
                            s.node,
                            i + 1
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(RankStream {
                node: s.node,
                correction: Correction {
                    start: unoff(s.start),
                    end: unoff(s.end),
                    shared: s.shared,
                },
                records,
            })
        };
        self.streams.into_iter().map(stream).collect()
    }
}

/// A record as a compact PICL line but with the time in nanoseconds as
/// one number (and compstats idle, trace_flush finished in ns).
fn line(r: &Record) -> String {
    // Write with time 0 and patch: reuse the PICL writer for the fields.
    let mut tmp = r.clone();
    tmp.time = 0;
    let ns_field = match &mut tmp.kind {
        Kind::Compstats { idle } => Some(std::mem::take(idle)),
        Kind::TraceFlush { finished } => Some(std::mem::take(finished)),
        _ => None,
    };
    let mut s = String::new();
    super::picl::write_record(&mut s, &tmp, super::picl::Format::Compact);
    // "code 0 0 node fields" -> "code ns node [ns] fields"
    let mut parts = s.splitn(4, ' ');
    let code = parts.next().unwrap_or("");
    let _ = (parts.next(), parts.next());
    let rest = parts.next().unwrap_or("");
    let rest = match ns_field {
        Some(v) => {
            // drop the two zero time words the writer put for the field
            let mut it = rest.splitn(4, ' ');
            let node = it.next().unwrap_or("");
            let _ = (it.next(), it.next());
            format!("{node} {v}")
        }
        None => rest.to_string(),
    };
    format!("{code} {} {rest}", r.time)
}

fn unline(l: &str) -> Option<Record> {
    let mut parts = l.splitn(3, ' ');
    let code: u32 = parts.next()?.parse().ok()?;
    let ns: i64 = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    let rec = if code == 11 || code == 18 {
        let mut it = rest.split(' ');
        let node: i32 = it.next()?.parse().ok()?;
        let v: i64 = it.next()?.parse().ok()?;
        Record {
            time: ns,
            node,
            kind: if code == 11 {
                Kind::Compstats { idle: v }
            } else {
                Kind::TraceFlush { finished: v }
            },
        }
    } else {
        let mut r = super::picl::parse_line(&format!("{code} 0 0 {rest}"))
            .ok()
            .flatten()?;
        r.time = ns;
        r
    };
    let _ = Levels::default();
    Some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_lines_round_trip() {
        for kind in [
            Kind::Compstats { idle: 123_456_789 },
            Kind::TraceFlush { finished: 987 },
            Kind::Send {
                to: -32768,
                tag: 5,
                len: 7,
            },
            Kind::TraceMessage {
                text: "hello  world".into(),
            },
            Kind::Open { allocating: None },
            Kind::TraceStart(Levels::all(2)),
        ] {
            let r = Record {
                time: 1_234_567_891,
                node: 3,
                kind,
            };
            assert_eq!(unline(&line(&r)).unwrap(), r);
        }
    }
}
