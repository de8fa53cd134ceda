//! `hypercomm trace convert`: PICL verbose when `--to` is left out (the
//! format trace files are written in by default), format names and aliases
//! in any case, a bad `--to` is clap's usage error (exit code 2), a
//! reader that closes the pipe early ends the command quietly, and files
//! without records or with bad ones are errors that name them.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A two-node PICL verbose trace: one message, the receiver blocked.
const PICL: &str = "\
trace_start clock 0 0 node 0 event 3 compstats 3 commstats 3
send clock 0 10 node 0 to 1 type 5 lth 8
close clock 0 100 node 0
trace_start clock 0 0 node 1 event 3 compstats 3 commstats 3
recv_blocking clock 0 5 node 1 type 5
recv_waking clock 0 30 node 1 from 0 type 5 lth 8
close clock 0 100 node 1
";

/// A file of its own per call: the tests run in parallel, and a file
/// rewritten while another test reads it reads empty.
fn input() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hypercomm-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(format!("two-{}.trace", NEXT.fetch_add(1, Ordering::SeqCst)));
    std::fs::write(&p, PICL).unwrap();
    p
}

fn convert(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .args(["trace", "convert"])
        .arg(input())
        .args(extra)
        .output()
        .expect("hypercomm runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn convert_without_to_writes_picl_verbose() {
    let out = convert(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The input is already PICL verbose in merged order: it comes back as is.
    assert_eq!(text(&out.stdout), PICL);
}

#[test]
fn convert_takes_names_and_aliases_in_any_case() {
    // PICL compact: the record's numeric code first (send is 4, close 13).
    for to in ["picl-compact", "compact", "COMPACT"] {
        let out = convert(&["--to", to]);
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
        assert_eq!(lines.len(), 7, "{to}");
        assert_eq!(lines[1], "4 0 10 0 1 5 8", "{to}");
        assert_eq!(lines[2], "13 0 100 0", "{to}");
    }
    for to in ["chrome", "json", "Perfetto"] {
        let out = convert(&["--to", to]);
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        let v = text(&out.stdout);
        assert!(
            v.trim_start().starts_with('{') && v.contains("traceEvents"),
            "{to}: {v}"
        );
    }
}

#[test]
fn a_bad_format_is_a_usage_error() {
    let out = convert(&["--to", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("invalid value 'yaml'"), "{err}");
    for name in ["picl-verbose", "picl-compact", "chrome", "html", "raw"] {
        assert!(err.contains(name), "{name} not offered: {err}");
    }
}

/// A PICL verbose trace of `marks` marks on each of two nodes: long
/// output, more than a pipe holds.
fn long_input(marks: usize) -> PathBuf {
    let mut s = String::new();
    for node in 0..2 {
        s += &format!("trace_start clock 0 0 node {node} event 3 compstats 3 commstats 3\n");
        for k in 0..marks {
            s += &format!("trace_mark clock 0 {} node {node} type {k}\n", k + 1);
        }
        s += &format!("close clock 0 {} node {node}\n", marks + 1);
    }
    let p = input().with_extension("long.trace");
    std::fs::write(&p, s).unwrap();
    p
}

/// Run `hypercomm trace ARGS` with standard output a pipe whose reader
/// takes `keep` bytes and then closes it; the exit status and standard
/// error.
fn closed_early(args: &[&std::ffi::OsStr], keep: usize) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .arg("trace")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("hypercomm runs");
    let mut out = child.stdout.take().unwrap();
    let mut got = vec![0u8; keep];
    out.read_exact(&mut got).unwrap();
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap(), err)
}

#[test]
fn a_reader_that_closes_the_pipe_early_ends_the_command_quietly() {
    let long = long_input(20_000);
    let (convert, stats) = (
        std::ffi::OsStr::new("convert"),
        std::ffi::OsStr::new("stats"),
    );
    // `convert` writes ~1 MB: the pipe (64 KiB) fills, its reader goes after
    // one line, the rest of the output meets a closed pipe.
    for to in ["picl-verbose", "picl-compact", "chrome", "html", "raw"] {
        let args = [convert, long.as_os_str(), "--to".as_ref(), to.as_ref()];
        let (status, err) = closed_early(&args, 10);
        assert_eq!(status.code(), Some(0), "convert --to {to}: {err}");
        assert_eq!(err, "", "convert --to {to}: nothing on standard error");
    }
    // `stats` writes a little: its reader is gone before it writes at all.
    let (status, err) = closed_early(&[stats, long.as_os_str()], 0);
    assert_eq!(status.code(), Some(0), "stats: {err}");
    assert_eq!(err, "", "stats: nothing on standard error");
}

/// A file of its own with `text` (see [`input`]).
fn file(name: &str, text: &str) -> PathBuf {
    let p = input().with_file_name(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn files_without_records_or_with_bad_ones_are_errors_naming_them() {
    let raw = |format: &str, records: &str| {
        format!(
            r#"{{"format":"{format}","streams":[{{"node":0,"shared":false,"start":null,"end":null,"records":[{records}]}}]}}"#
        )
    };
    let good = r#""1 0 0 3 3 3","13 1000 0""#;
    let cases = [
        ("empty.trace", String::new(), "holds no trace records"),
        ("blank.trace", "\n\n   \n".into(), "holds no trace records"),
        (
            "garbage.raw",
            raw(
                "hypercomm-trace-raw-1",
                r#""1 0 0 3 3 3","garbage line","13 1000 0""#,
            ),
            "node 0's record 2: not a trace record: \"garbage line\"",
        ),
        (
            "other.raw",
            raw("something-else", good),
            "format \"something-else\" is not a raw trace stream's",
        ),
        (
            "nothing.raw",
            raw("hypercomm-trace-raw-1", ""),
            "no trace records",
        ),
        (
            "bad-line.trace",
            format!("{}garbage line\n", &PICL[..PICL.find('\n').unwrap() + 1]),
            "line 2: ",
        ),
        // A message of negative length (`stats` used to print its bytes).
        (
            "negative-length.trace",
            PICL.replace("to 1 type 5 lth 8", "to 1 type 5 lth -8"),
            "line 2: lth -8 is negative",
        ),
        (
            "negative-length.raw",
            raw("hypercomm-trace-raw-1", r#""1 0 0 3 3 3","4 10 0 1 5 -8""#),
            "node 0's record 2: not a trace record",
        ),
        // The views written for people are not read back, and say so.
        (
            "view.json",
            r#"{"displayTimeUnit":"ns","traceEvents":[]}"#.into(),
            "is a Chrome/Perfetto JSON trace, written for viewing and not read back",
        ),
        (
            "view.html",
            "<!DOCTYPE html>\n<html><body></body></html>\n".into(),
            "is an HTML report, written for viewing and not read back",
        ),
    ];
    for (name, body, want) in cases {
        let p = file(name, &body);
        for sub in ["convert", "stats"] {
            let out = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
                .args(["trace", sub])
                .arg(&p)
                .output()
                .expect("hypercomm runs");
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{sub} {name}: {err}");
            assert!(
                err.contains(&p.display().to_string()),
                "{sub} {name}: {err}"
            );
            assert!(err.contains(want), "{sub} {name}: want {want:?}: {err}");
            assert!(out.stdout.is_empty(), "{sub} {name}: no output");
        }
    }
    // Real views made from a PICL trace are refused alike.
    let picl = file("for-views.trace", PICL);
    for (to, says) in [("chrome", "Chrome/Perfetto JSON"), ("html", "HTML report")] {
        let view = picl.with_extension(to);
        let out = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
            .args(["trace", "convert", "--to", to, "-o"])
            .arg(&view)
            .arg(&picl)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let out = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
            .args(["trace", "stats"])
            .arg(&view)
            .output()
            .unwrap();
        assert!(
            text(&out.stderr).contains(says),
            "{to}: {}",
            text(&out.stderr)
        );
    }
    // The same raw stream with its records intact and the right format is
    // read (the cases above differ from it only where they are bad).
    let ok = file("good.raw", &raw("hypercomm-trace-raw-1", good));
    let out = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .args(["trace", "stats"])
        .arg(&ok)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}
