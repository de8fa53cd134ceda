//! PICL's two trace file formats (manual section 6): verbose (a keyword
//! before every value) and compact (the record code, then the values in the
//! same order). Both are written and read; reading accepts either format
//! line by line, so the two convert into each other losslessly.
//!
//! Line formats (after `clock S US node N`, verbose):
//!
//! ```text
//! trace_start   event E compstats C commstats M
//! open          [allocating N processors]        (host only)
//! load          loading node N
//! send          to D type T lth L
//! recv          from S type T lth L
//! recv_blocking type T
//! recv_waking   from S type T lth L
//! message | sync | close
//! compstats     busy S US idle S US               (compact: idle only)
//! commstats     received N volume V sent N volume V probed P
//! trace_level   event E compstats C commstats M
//! trace_mark    type T
//! trace_message TEXT
//! trace_stop    : ran out of memory                (compact: nothing)
//! trace_flush   finished S US
//! trace_exit    space N
//! block_begin   block_type B location_type L parameter_type P
//! block_end     block_type B location_type L parameter_type P
//! ```
//!
//! Times are written as whole seconds and microseconds (truncated from the
//! recorder's nanoseconds).
//!
//! Not done yet: the `probe` record (code 5, reserved by PICL) and PICL's
//! own post-processing tools' extra line kinds.

use super::event::{code_of, keyword_of, Kind, Levels, Record, Trace};
use std::fmt::Write as _;

/// Which PICL text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Keywords before every value.
    Verbose,
    /// Codes and values only.
    Compact,
}

fn secs(ns: i64) -> (i64, i64) {
    let us = ns.div_euclid(1000);
    (us.div_euclid(1_000_000), us.rem_euclid(1_000_000))
}

/// Write one record as a line (without the newline).
pub fn write_record(out: &mut String, r: &Record, f: Format) {
    let (s, us) = secs(r.time);
    let verbose = f == Format::Verbose;
    if verbose {
        let _ = write!(out, "{} clock {s} {us} node {}", r.kind.keyword(), r.node);
    } else {
        let _ = write!(out, "{} {s} {us} {}", r.kind.code(), r.node);
    }
    // Fields as (keyword, value) pairs; an empty keyword is printed bare.
    let kv = |out: &mut String, k: &str, v: i64| {
        if verbose && !k.is_empty() {
            let _ = write!(out, " {k} {v}");
        } else {
            let _ = write!(out, " {v}");
        }
    };
    match &r.kind {
        Kind::TraceStart(l) | Kind::TraceLevel(l) => {
            kv(out, "event", l.event as i64);
            kv(out, "compstats", l.compstats as i64);
            kv(out, "commstats", l.commstats as i64);
        }
        Kind::Open { allocating } => {
            if let Some(n) = allocating {
                kv(out, "allocating", *n);
                if verbose {
                    out.push_str(" processors");
                }
            }
        }
        Kind::Load { node } => {
            if verbose {
                out.push_str(" loading");
            }
            kv(out, "node", *node);
        }
        Kind::Send { to, tag, len } => {
            kv(out, "to", *to as i64);
            kv(out, "type", *tag);
            kv(out, "lth", *len);
        }
        Kind::Recv { from, tag, len } | Kind::RecvWaking { from, tag, len } => {
            kv(out, "from", *from as i64);
            kv(out, "type", *tag);
            kv(out, "lth", *len);
        }
        Kind::RecvBlocking { tag } => kv(out, "type", *tag),
        Kind::Message | Kind::Sync | Kind::Close => {}
        Kind::Compstats { idle } => {
            let (is, ius) = secs(*idle);
            if verbose {
                // busy = timestamp − idle, in whole microseconds (a
                // record the reader accepts always has one; saturated
                // otherwise).
                let busy = busy_of(r.time, *idle).unwrap_or(i64::MAX);
                let (bs, bus) = secs(busy);
                let _ = write!(out, " busy {bs} {bus} idle {is} {ius}");
            } else {
                let _ = write!(out, " {is} {ius}");
            }
        }
        Kind::Commstats {
            received,
            recv_volume,
            sent,
            sent_volume,
            probed,
        } => {
            kv(out, "received", *received);
            kv(out, "volume", *recv_volume);
            kv(out, "sent", *sent);
            kv(out, "volume", *sent_volume);
            kv(out, "probed", *probed);
        }
        Kind::TraceMark { mark } => kv(out, "type", *mark),
        Kind::TraceMessage { text } => {
            out.push(' ');
            out.push_str(text);
        }
        Kind::TraceStop => {
            if verbose {
                out.push_str(" : ran out of memory");
            }
        }
        Kind::TraceFlush { finished } => {
            let (fs, fus) = secs(*finished);
            if verbose {
                let _ = write!(out, " finished {fs} {fus}");
            } else {
                let _ = write!(out, " {fs} {fus}");
            }
        }
        Kind::TraceExit { space } => kv(out, "space", *space),
        Kind::BlockBegin {
            block_type,
            location_type,
            parameter_type,
        }
        | Kind::BlockEnd {
            block_type,
            location_type,
            parameter_type,
        } => {
            kv(out, "block_type", *block_type);
            kv(out, "location_type", *location_type);
            kv(out, "parameter_type", *parameter_type);
        }
    }
}

/// Write a whole trace, one record per line.
pub fn write(trace: &Trace, f: Format) -> String {
    let mut out = String::with_capacity(trace.records.len() * 48);
    for r in &trace.records {
        write_record(&mut out, r, f);
        out.push('\n');
    }
    out
}

/// A parse error: line number (1-based) and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Line number, from 1.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Tokens of a line with the byte offset after each.
struct Toks<'a> {
    line: &'a str,
    pos: usize,
}

impl<'a> Toks<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.line[self.pos..];
        let start = rest.len() - rest.trim_start().len();
        let rest = &rest[start..];
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.pos += start + end;
        Some(&rest[..end])
    }
    fn rest(&self) -> &'a str {
        let r = &self.line[self.pos..];
        r.strip_prefix(' ').unwrap_or(r)
    }
}

/// Seconds and microseconds (`0..1_000_000`) as nanoseconds, or why not.
fn nanos(s: i64, us: i64, what: &str) -> Result<i64, String> {
    if !(0..1_000_000).contains(&us) {
        return Err(format!("{what}: microseconds {us} not in 0..1000000"));
    }
    s.checked_mul(1_000_000)
        .and_then(|x| x.checked_add(us))
        .and_then(|x| x.checked_mul(1000))
        .ok_or_else(|| format!("{what}: {s} s {us} µs is out of range"))
}

/// The busy time of a compstats record at `time` with `idle`: whole
/// microseconds of the difference, in nanoseconds (`None` out of range).
fn busy_of(time: i64, idle: i64) -> Option<i64> {
    time.div_euclid(1000)
        .checked_sub(idle.div_euclid(1000))?
        .checked_mul(1000)
}

/// A value that must fit 32 bits.
fn int32(v: i64, what: &str) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{what} {v} is out of range"))
}

/// A length or a count, which cannot be negative.
fn count(v: i64, what: &str) -> Result<i64, String> {
    if v < 0 {
        return Err(format!("{what} {v} is negative"));
    }
    Ok(v)
}

/// Parse one line (verbose or compact). `Ok(None)` for a blank line.
pub fn parse_line(line: &str) -> Result<Option<Record>, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut t = Toks { line, pos: 0 };
    let Some(first) = t.next() else {
        return Ok(None);
    };
    let (code, verbose) = match first.parse::<u32>() {
        Ok(c) => (c, false),
        Err(_) => (
            code_of(first).ok_or_else(|| format!("unknown record keyword {first:?}"))?,
            true,
        ),
    };
    if keyword_of(code).is_none() {
        return Err(format!("unknown record code {code}"));
    }
    // In verbose lines, `expect(k)` consumes keyword `k`; in compact lines it
    // does nothing.
    let mut num = |t: &mut Toks, k: &str| -> Result<i64, String> {
        if verbose && !k.is_empty() {
            match t.next() {
                Some(w) if w == k => {}
                other => return Err(format!("expected {k:?}, found {other:?}")),
            }
        }
        let w = t.next().ok_or_else(|| format!("missing value for {k:?}"))?;
        w.parse::<i64>()
            .map_err(|_| format!("{w:?} is not an integer ({k})"))
    };
    let s = num(&mut t, "clock")?;
    let us = t
        .next()
        .ok_or("missing microseconds")?
        .parse::<i64>()
        .map_err(|_| "bad microseconds".to_string())?;
    let time = nanos(s, us, "clock")?;
    let node = int32(num(&mut t, "node")?, "node")?;
    let levels = |t: &mut Toks, num: &mut dyn FnMut(&mut Toks, &str) -> Result<i64, String>| {
        Ok::<_, String>(Levels {
            event: int32(num(t, "event")?, "event")?,
            compstats: int32(num(t, "compstats")?, "compstats")?,
            commstats: int32(num(t, "commstats")?, "commstats")?,
        })
    };
    let kind = match code {
        1 => Kind::TraceStart(levels(&mut t, &mut num)?),
        2 => {
            let save = t.pos;
            match t.next() {
                None => Kind::Open { allocating: None },
                Some(_) => {
                    t.pos = save;
                    let n = num(&mut t, "allocating")?;
                    if verbose && t.next() != Some("processors") {
                        return Err("expected \"processors\"".into());
                    }
                    Kind::Open {
                        allocating: Some(n),
                    }
                }
            }
        }
        3 => {
            if verbose && t.next() != Some("loading") {
                return Err("expected \"loading\"".into());
            }
            Kind::Load {
                node: num(&mut t, "node")?,
            }
        }
        4 => Kind::Send {
            to: int32(num(&mut t, "to")?, "to")?,
            tag: num(&mut t, "type")?,
            len: count(num(&mut t, "lth")?, "lth")?,
        },
        6 | 8 => {
            let (from, tag, len) = (
                int32(num(&mut t, "from")?, "from")?,
                num(&mut t, "type")?,
                count(num(&mut t, "lth")?, "lth")?,
            );
            if code == 6 {
                Kind::Recv { from, tag, len }
            } else {
                Kind::RecvWaking { from, tag, len }
            }
        }
        7 => Kind::RecvBlocking {
            tag: num(&mut t, "type")?,
        },
        9 => Kind::Message,
        10 => Kind::Sync,
        11 => {
            if verbose {
                // busy is derived (timestamp − idle); read and check it.
                let bs = num(&mut t, "busy")?;
                let bus = num(&mut t, "")?;
                let is = num(&mut t, "idle")?;
                let ius = num(&mut t, "")?;
                let idle = nanos(is, ius, "idle")?;
                let busy = nanos(bs, bus, "busy")?;
                match busy_of(time, idle) {
                    Some(b) if b == busy => {}
                    Some(b) => {
                        return Err(format!(
                            "compstats busy {bs} {bus} is not clock − idle ({} µs)",
                            b / 1000
                        ))
                    }
                    None => return Err("compstats: clock − idle is out of range".into()),
                }
                Kind::Compstats { idle }
            } else {
                let is = num(&mut t, "")?;
                let ius = num(&mut t, "")?;
                let idle = nanos(is, ius, "idle")?;
                if busy_of(time, idle).is_none() {
                    return Err("compstats: clock − idle is out of range".into());
                }
                Kind::Compstats { idle }
            }
        }
        12 => Kind::Commstats {
            received: count(num(&mut t, "received")?, "received")?,
            recv_volume: count(num(&mut t, "volume")?, "volume")?,
            sent: count(num(&mut t, "sent")?, "sent")?,
            sent_volume: count(num(&mut t, "volume")?, "volume")?,
            probed: count(num(&mut t, "probed")?, "probed")?,
        },
        13 => Kind::Close,
        14 => Kind::TraceLevel(levels(&mut t, &mut num)?),
        15 => Kind::TraceMark {
            mark: num(&mut t, "type")?,
        },
        16 => {
            let text = t.rest().to_string();
            t.pos = line.len();
            Kind::TraceMessage { text }
        }
        17 => {
            if verbose {
                t.pos = line.len(); // ": ran out of memory"
            }
            Kind::TraceStop
        }
        18 => {
            let fs = num(&mut t, "finished")?;
            let fus = num(&mut t, "")?;
            Kind::TraceFlush {
                finished: nanos(fs, fus, "finished")?,
            }
        }
        19 => Kind::TraceExit {
            space: num(&mut t, "space")?,
        },
        20 | 21 => {
            let (b, l, p) = (
                num(&mut t, "block_type")?,
                num(&mut t, "location_type")?,
                num(&mut t, "parameter_type")?,
            );
            if code == 20 {
                Kind::BlockBegin {
                    block_type: b,
                    location_type: l,
                    parameter_type: p,
                }
            } else {
                Kind::BlockEnd {
                    block_type: b,
                    location_type: l,
                    parameter_type: p,
                }
            }
        }
        c => return Err(format!("unknown record code {c}")),
    };
    if let Some(extra) = t.next() {
        return Err(format!("unexpected {extra:?} at the end of the record"));
    }
    Ok(Some(Record { time, node, kind }))
}

/// Parse a whole PICL file (either format, even mixed).
pub fn parse(text: &str) -> Result<Trace, ParseError> {
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(r)) => records.push(r),
            Ok(None) => {}
            Err(message) => {
                return Err(ParseError {
                    line: i + 1,
                    message,
                })
            }
        }
    }
    Ok(Trace { records })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manual's verbose examples (section 6), OCR slips corrected, one
    /// per record kind; shared with `tests/trace.rs`.
    pub(crate) const MANUAL_EXAMPLES: &str =
        include_str!("../../../../tests/golden/picl_manual_examples.verbose");

    fn manual_verbose() -> Vec<&'static str> {
        MANUAL_EXAMPLES.lines().collect()
    }

    #[test]
    fn manual_examples_read_and_write_back_identically() {
        for line in manual_verbose() {
            let r = parse_line(line).unwrap().unwrap();
            let mut out = String::new();
            write_record(&mut out, &r, Format::Verbose);
            assert_eq!(&out, line);
        }
    }

    #[test]
    fn manual_compact_compstats_example() {
        // Section 6.5: "11 4 66978 23 1 69412" is the verbose example above.
        let v = parse_line("compstats clock 4 66978 node 23 busy 2 997566 idle 1 69412")
            .unwrap()
            .unwrap();
        let mut out = String::new();
        write_record(&mut out, &v, Format::Compact);
        assert_eq!(out, "11 4 66978 23 1 69412");
        assert_eq!(parse_line(&out).unwrap().unwrap(), v);
    }

    #[test]
    fn compact_and_verbose_convert_losslessly() {
        let t = parse(&manual_verbose().join("\n")).unwrap();
        let c = write(&t, Format::Compact);
        let t2 = parse(&c).unwrap();
        assert_eq!(t, t2);
        assert_eq!(
            write(&t2, Format::Verbose),
            manual_verbose().join("\n") + "\n"
        );
        assert_eq!(write(&parse(&c).unwrap(), Format::Compact), c);
    }

    #[test]
    fn bad_lines_are_errors_not_panics() {
        for l in [
            "send clock 1",
            "99 0 0 0",
            "5 0 0 0",
            "bogus clock 0 0 node 1",
            "send clock 0 0 node 1 to x type 1 lth 2",
            "compstats clock 4 66978 node 23 busy 9 0 idle 1 69412",
            "close clock 0 0 node 1 extra",
            // Found by the fuzz target: seconds whose nanoseconds overflow
            // (they used to wrap round to another time).
            "2 33555575555 31 6",
            "close clock 0 1000000 node 1",
            "close clock 0 -1 node 1",
            "close clock 0 0 node 4294967302",
            "send clock 0 0 node 1 to 2147483648 type 1 lth 2",
            "11 9223372036 0 1 -9223372036 0",
            // Lengths and counts are never negative.
            "send clock 0 0 node 1 to 2 type 1 lth -8",
            "recv clock 0 0 node 2 from 1 type 1 lth -8",
            "8 0 0 2 1 1 -1",
            "12 0 0 1 1 8 1 -8 0",
        ] {
            assert!(parse_line(l).is_err(), "{l}");
        }
    }
}
