//! `hypercomm bench`: its help names every option, `--format tsv` prints
//! `op<TAB>n<TAB>bytes<TAB>value<TAB>unit` lines, the progress bar stays
//! off a pipe unless asked for, and bad input is an error, not a panic.

use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .arg("bench")
        .args(args)
        .output()
        .expect("hypercomm runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_documents_every_option() {
    let out = bench(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for opt in [
        "--transport",
        "-n",
        "--sizes",
        "--iters",
        "--repeat",
        "--format",
        "--algorithm",
        "--all-algorithms",
        "--no-check",
        "--trace",
        "--trace-level",
        "--progress",
        "--stat",
        "--min-time-ms",
        "--rotate",
        "--interleave",
        "--dim",
        "--side",
        "--width",
        "--fields",
    ] {
        assert!(help.contains(opt), "--help does not mention {opt}:\n{help}");
    }
    for op in [
        "latency",
        "bw",
        "bibw",
        "allreduce",
        "reduce",
        "bcast",
        "allgather",
        "alltoall",
        "barrier",
        "halo",
    ] {
        assert!(help.contains(op), "--help does not list the {op} benchmark");
    }
}

/// Checks one TSV line and returns its fields.
fn tsv_line(l: &str) -> (String, usize, usize, f64, String) {
    let f: Vec<&str> = l.split('\t').collect();
    assert_eq!(f.len(), 5, "not five tab-separated fields: {l:?}");
    let value: f64 = f[3].parse().expect("value is a number");
    assert!(value.is_finite() && value > 0.0, "value {value} in {l:?}");
    assert!(f[4] == "us" || f[4] == "MB/s", "unit {:?}", f[4]);
    (
        f[0].to_string(),
        f[1].parse().expect("n is a number"),
        f[2].parse().expect("bytes is a number"),
        value,
        f[4].to_string(),
    )
}

#[test]
fn tsv_lines_have_the_documented_format() {
    let out = bench(&[
        "latency", "-n", "2", "--sizes", "8,4096", "--iters", "200", "--repeat", "1", "--format",
        "tsv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<(String, usize, usize, f64, String)> =
        text(&out.stdout).lines().map(tsv_line).collect();
    let sizes: Vec<usize> = lines.iter().map(|l| l.2).collect();
    assert_eq!(sizes, [8, 4096]);
    assert!(lines
        .iter()
        .all(|l| l.0 == "latency" && l.1 == 2 && l.4 == "us"));

    let out = bench(&[
        "bw", "-n", "2", "--sizes", "65536", "--iters", "200", "--repeat", "1", "--format", "tsv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let l = tsv_line(text(&out.stdout).trim());
    assert_eq!((l.0.as_str(), l.2, l.4.as_str()), ("bw", 65536, "MB/s"));
}

/// `halo`: the exchange and its memcpy baseline, one TSV line each, on
/// threads and on shm processes; a bad dimension is an error.
#[test]
fn halo_prints_the_exchange_and_its_memcpy_baseline() {
    for (transport, dim, side) in [("thread", "2", "64"), ("shm", "3", "16")] {
        let out = bench(&[
            "halo",
            "--transport",
            transport,
            "-n",
            "4",
            "--dim",
            dim,
            "--side",
            side,
            "--width",
            "2",
            "--fields",
            "3",
            "--iters",
            "50",
            "--repeat",
            "1",
            "--format",
            "tsv",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let lines: Vec<_> = text(&out.stdout).lines().map(tsv_line).collect();
        let label = format!("halo{dim}d-w2-f3");
        let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(
            names,
            [label.clone(), format!("{label}:memcpy")],
            "{transport}"
        );
        assert!(lines
            .iter()
            .all(|l| l.1 == 4 && l.2 == side.parse::<usize>().unwrap() && l.4 == "us"));
    }
    let out = bench(&["halo", "--dim", "4"]);
    assert!(!out.status.success() && text(&out.stderr).contains("--dim 4"));
}

/// `--interleave`: one job per size runs every variant in turn; each variant
/// still gets its own line, auto's naming the algorithm it ran. Over shm
/// rank 0 (a process) hands back one figure per turn.
#[test]
fn interleaved_variants_each_get_a_line() {
    for transport in ["thread", "shm"] {
        let out = bench(&[
            "allreduce",
            "--transport",
            transport,
            "-n",
            "2",
            "--sizes",
            "8,4096",
            "--iters",
            "50",
            "--repeat",
            "2",
            "--all-algorithms",
            "--interleave",
            "--format",
            "tsv",
        ]);
        assert!(out.status.success(), "{transport}: {}", text(&out.stderr));
        let lines: Vec<_> = text(&out.stdout).lines().map(tsv_line).collect();
        // auto and the four allreduce algorithms, at each of two sizes.
        assert_eq!(lines.len(), 10, "{transport}: {lines:?}");
        for (size, group) in [8, 4096].iter().zip(lines.chunks(5)) {
            assert!(group.iter().all(|l| l.2 == *size && l.1 == 2));
            assert!(group[0].0.starts_with("allreduce:auto="), "{group:?}");
            let mut names: Vec<&str> = group[1..].iter().map(|l| l.0.as_str()).collect();
            names.sort_unstable();
            assert_eq!(
                names,
                [
                    "allreduce:rabenseifner",
                    "allreduce:recursive-doubling",
                    "allreduce:reduce-bcast",
                    "allreduce:ring"
                ]
            );
        }
    }
}

#[test]
fn progress_bar_only_where_asked() {
    let args = [
        "barrier", "-n", "2", "--iters", "100", "--repeat", "2", "--format", "tsv",
    ];
    // stderr is a pipe here: `auto` draws nothing.
    let quiet = bench(&args);
    assert!(quiet.status.success());
    assert!(
        !text(&quiet.stderr).contains('['),
        "bar drawn into a pipe: {:?}",
        text(&quiet.stderr)
    );
    let mut forced_args = args.to_vec();
    forced_args.extend(["--progress", "always"]);
    let forced = bench(&forced_args);
    assert!(forced.status.success());
    let err = text(&forced.stderr);
    assert!(err.contains("1/2") && err.contains("2/2"), "{err:?}");
    // The figures themselves are untouched by the bar.
    assert_eq!(text(&forced.stdout).lines().count(), 1);
    tsv_line(text(&forced.stdout).trim());
}

/// `--algorithm board` forces the shared-memory board that `auto=board`
/// names: on threads the call runs and its line says so; over TCP, which
/// has no board, the error says why, naming the failed rank once.
#[test]
fn the_board_can_be_forced_where_it_exists() {
    let forced = |op: &str, more: &[&str]| {
        let mut args = vec![op, "-n", "2", "--sizes", "8", "--iters", "20"];
        args.extend(["--algorithm", "board"]);
        args.extend(more);
        bench(&args)
    };
    let ok = forced("allreduce", &["--format", "tsv"]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let (op, n, bytes, us, unit) = tsv_line(text(&ok.stdout).trim());
    assert_eq!(
        (op.as_str(), n, bytes, unit.as_str()),
        ("allreduce:board", 2, 8, "us")
    );
    assert!(us > 0.0);
    let tcp = forced("bcast", &["--transport", "tcp"]);
    assert!(!tcp.status.success());
    let err = text(&tcp.stderr);
    assert!(
        err.contains("algorithm board: only the world communicator"),
        "{err}"
    );
    // The failing rank is named once, not "rank 0 failed: rank 0 failed: …".
    assert!(!err.contains("failed: rank"), "{err}");
}

/// Values that are not one of an option's names are clap's usage errors
/// (exit code 2); combinations checked by the benchmark exit with 1.
#[test]
fn bad_input_is_a_clear_error() {
    for (args, says, code) in [
        (
            &["latency", "--transport", "carrier-pigeon"][..],
            "invalid value 'carrier-pigeon'",
            2,
        ),
        (
            &["latency", "--transport", "sim"][..],
            "--transport sim: bench measures wall-clock time on a real transport",
            1,
        ),
        (
            &["allreduce", "--algorithm", "telepathy"][..],
            "unknown algorithm \"telepathy\"",
            2,
        ),
        (
            &["barrier", "--trace-level", "9"][..],
            "invalid value '9' for '--trace-level",
            2,
        ),
        // Levels are 0..3.
        (
            &["barrier", "--trace-level", "9,9,9"][..],
            "invalid value '9,9,9' for '--trace-level",
            2,
        ),
        (
            &["barrier", "--trace-level=-1,-1,-1"][..],
            "invalid value '-1,-1,-1' for '--trace-level",
            2,
        ),
        // Buffers larger than the machine are refused before they are
        // allocated (which would abort the command).
        (
            &[
                "bw",
                "--sizes",
                "99999999999999",
                "--iters",
                "1",
                "--repeat",
                "1",
            ][..],
            "--sizes 99999999999999: bw on 2 ranks would need about",
            1,
        ),
        (
            &[
                "allgather",
                "--sizes",
                "8,18446744073709551615",
                "--repeat",
                "1",
            ][..],
            "--sizes 18446744073709551615: allgather",
            1,
        ),
        (
            &[
                "halo",
                "--iters",
                "10",
                "--repeat",
                "1",
                "--side",
                "100000000",
            ][..],
            "--side 100000000: halo",
            1,
        ),
        (
            &["halo", "--dim", "3", "--repeat", "1", "--side", "100000000"][..],
            "more than this machine's memory",
            1,
        ),
        (&["latency", "-n", "1"][..], "-n 1", 1),
        (&["barrier", "-n", "0"][..], "-n 0", 1),
        (
            &["latency", "--algorithm", "ring"][..],
            "--algorithm and --all-algorithms apply to collectives",
            1,
        ),
        (
            &["bcast", "--algorithm", "dissemination"][..],
            "--algorithm dissemination is not one of",
            1,
        ),
        (&["latency", "--repeat", "0"][..], "--repeat", 1),
        (&["latency", "--interleave"][..], "--interleave", 1),
    ] {
        let out = bench(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The names a bad one is told about include every name accepted.
    let err = text(&bench(&["allreduce", "--algorithm", "telepathy"]).stderr);
    for name in ["auto", "native", "board", "ring"] {
        assert!(err.contains(&format!(" {name},")), "{name}: {err}");
    }
}

/// Run as the program of a `hypercomm run` job, bench says that it starts
/// its own ranks (each rank used to fail at its second measurement with
/// "already joined its job", after printing a header).
#[test]
fn under_hypercomm_run_it_says_to_run_it_on_its_own() {
    let exe = env!("CARGO_BIN_EXE_hypercomm");
    let out = Command::new(exe)
        .args([
            "run", "-n", "2", "--", exe, "bench", "latency", "--sizes", "8",
        ])
        .output()
        .expect("hypercomm runs");
    let err = text(&out.stderr);
    let all = format!("{}{err}", text(&out.stdout));
    assert!(!out.status.success(), "{all}");
    assert!(
        err.contains("bench starts the ranks it measures itself") && err.contains("hypercomm run"),
        "{all}"
    );
    assert!(!all.contains("already joined"), "{all}");
}
