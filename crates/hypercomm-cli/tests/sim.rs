//! `hypercomm sim`: its help documents every option, its tsv line is the
//! documented columns with the time last (and equal to seed 001's closed
//! form for the seed's algorithm), and bad parameters are errors that say
//! what is wrong.

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .arg("sim")
        .args(args)
        .env_remove("HYPERCOMM_SIM")
        .output()
        .expect("hypercomm runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_documents_every_option() {
    let o = sim(&["--help"]);
    assert!(o.status.success());
    let h = stdout(&o);
    for opt in [
        "--topology",
        "-p, --nodes",
        "--words",
        "--ts",
        "--tw",
        "--th",
        "--routing",
        "--ports",
        "--no-contention",
        "--algorithm",
        "--segment",
        "--format",
        "--trace",
        "--compute",
        "--word-bytes",
        "--transport",
        "[PROGRAM]",
    ] {
        assert!(h.contains(opt), "--help lacks {opt}:\n{h}");
    }
    for value in [
        "bcast",
        "reduce",
        "allgather",
        "scan",
        "allreduce",
        "alltoall",
        "barrier",
        "gather",
        "scatter",
        "run",
        "calibrate",
        "hypercube",
        "mesh-wrap",
        "full",
        "sf",
        "ct",
        "tsv",
    ] {
        assert!(
            h.contains(&format!("- {value}")),
            "--help lacks the value {value}"
        );
    }
    // Every option has a sentence of its own.
    for line in h.lines().filter(|l| l.trim_start().starts_with("--")) {
        let i = h.find(line).expect("the line");
        let next = h[i + line.len()..].lines().nth(1).unwrap_or("");
        assert!(!next.trim().is_empty(), "{line} has no description");
    }
}

#[test]
fn tsv_is_one_line_with_the_time_last() {
    // Hypercube broadcast: (ts + tw·m + th)·log p = (100 + 3·4 + 7)·4.
    let o = sim(&[
        "bcast",
        "--topology",
        "hypercube",
        "-p",
        "16",
        "--words",
        "4",
        "--ts",
        "100",
        "--tw",
        "3",
        "--th",
        "7",
        "--format",
        "tsv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "bcast\thypercube\tsf\t16\t4\t476\n");
    // Mesh all-to-all broadcast with cut-through routing:
    // 2·(ts + th)·(√p − 1) + tw·m·(p − 1) = 2·107·3 + 3·2·15.
    let o = sim(&[
        "allgather",
        "--topology",
        "mesh-wrap",
        "-p",
        "16",
        "--words",
        "2",
        "--ts",
        "100",
        "--tw",
        "3",
        "--th",
        "7",
        "--routing",
        "ct",
        "--format",
        "tsv",
    ]);
    assert_eq!(stdout(&o), "allgather\tmesh-wrap\tct\t16\t2\t732\n");
    // Every operation on every network gives a line of six fields.
    for op in [
        "bcast",
        "reduce",
        "allgather",
        "scan",
        "allreduce",
        "alltoall",
        "barrier",
        "gather",
        "scatter",
    ] {
        for topo in ["hypercube", "ring", "mesh", "mesh-wrap", "full"] {
            let o = sim(&[op, "--topology", topo, "-p", "16", "--format", "tsv"]);
            assert!(o.status.success(), "{op} {topo}: {}", stderr(&o));
            let line = stdout(&o);
            let f: Vec<&str> = line.trim_end().split('\t').collect();
            assert_eq!(f[..5], [op, topo, "sf", "16", "1"], "{line}");
            assert!(f[5].parse::<f64>().unwrap() > 0.0, "{line}");
        }
    }
}

#[test]
fn text_output_names_the_algorithm_and_the_closed_form() {
    let o = sim(&[
        "reduce",
        "--topology",
        "ring",
        "-p",
        "8",
        "--words",
        "10",
        "--ts",
        "20",
        "--tw",
        "1",
    ]);
    let out = stdout(&o);
    assert!(out.contains("algorithm biring"), "{out}");
    assert!(out.contains("predicted time: 120"), "{out}");
    assert!(
        out.contains("closed form: ⌈p/2⌉·(ts + tw·m + th) = 120"),
        "{out}"
    );
}

#[test]
fn the_closed_form_is_shown_only_for_one_port_and_words_are_counted() {
    let args = [
        "bcast",
        "--topology",
        "ring",
        "-p",
        "7",
        "-m",
        "10",
        "--ts",
        "100",
        "--tw",
        "1",
    ];
    // One port: the seed's ⌈p/2⌉·(ts + tw·m) + ⌊p/2⌋·th = 4 · 110.
    let out = stdout(&sim(&args));
    assert!(out.contains("predicted time: 440"), "{out}");
    assert!(
        out.contains("closed form: ⌈p/2⌉·(ts + tw·m) + ⌊p/2⌋·th = 440"),
        "{out}"
    );
    // All ports: both directions of the ring at once, faster than the
    // one-port form, which is then not printed.
    let all: Vec<&str> = args.iter().copied().chain(["--ports", "all"]).collect();
    let out = stdout(&sim(&all));
    assert!(out.contains("predicted time: 430"), "{out}");
    assert!(!out.contains("closed form"), "{out}");
    let out = stdout(&sim(&["reduce", "-p", "4", "-m", "1"]));
    assert!(out.starts_with("reduce of 1 word on a 4-node"), "{out}");
    let out = stdout(&sim(&["barrier", "-p", "4"]));
    assert!(out.starts_with("barrier on a 4-node"), "{out}");
}

#[test]
fn bad_parameters_are_clear_errors() {
    let err = |args: &[&str], want: &str| {
        let o = sim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        let e = stderr(&o);
        assert!(e.contains(want), "{args:?}: {e}");
    };
    err(
        &["bcast", "--topology", "hypercube", "-p", "12"],
        "a hypercube has 2^d nodes; p = 12 is not a power of two (nearest: 8 or 16)",
    );
    err(&["bcast", "-p", "8", "--ts", "-1"], "ts = -1 is not a time");
    err(
        &["bcast", "-p", "8", "--th", "NaN"],
        "th = NaN is not a time",
    );
    err(
        &["bcast", "-p", "8", "--algorithm", "fastest"],
        "unknown algorithm \"fastest\"",
    );
    err(
        &["reduce", "-p", "8", "--algorithm", "pairwise"],
        "reduce has no algorithm pairwise; its algorithms are binomial",
    );
    err(&["bcast"], "-p P (the number of nodes) is required");
    // Machines and schedules beyond the simulator's budget are refused at
    // once, naming the operation, p and the limit, not simulated until
    // memory runs out.
    err(
        &["alltoall", "-p", "536870912", "--topology", "full"],
        "alltoall: p = 536870912 nodes of a full network: its nodes and links would take about 32768 MiB, more than the simulator's budget of 4096 MiB",
    );
    err(
        &["alltoall", "-p", "65536", "--topology", "ring"],
        "alltoall with pairwise: on p = 65536 nodes the schedules would send at least",
    );
    err(
        &["alltoall", "-p", "65536", "--topology", "full"],
        "alltoall with bruck: on p = 65536 nodes the schedules would hold at least",
    );
    // Long paths multiply a schedule's events: an all-to-all of 3 000
    // nodes on a ring would cross 6.75·10^9 links (p · p²/4), and one of
    // 2 048 on a mesh 1.3·10^8 (7.9 GB before it was refused).
    err(
        &["alltoall", "-p", "3000", "--topology", "ring"],
        "alltoall with pairwise: on p = 3000 nodes the messages would cross about 6750000000 links in all",
    );
    err(
        &["alltoall", "-p", "2048", "--topology", "mesh"],
        "the messages would cross about",
    );
    err(&["bcast", "-p", "0"], "at least one node (p = 0)");
    err(
        &["bcast", "-p", "8", "extra"],
        "only `sim run` takes a program",
    );
    err(&["run"], "sim run needs a PROGRAM");
    err(&["run", "--compute", "gpu", "true"], "--compute gpu");
    err(
        &["run", "-p", "12", "--topology", "hypercube", "true"],
        "p = 12 is not a power of two",
    );
    err(&["calibrate", "--transport", "sim"], "not the simulator");
    // Prediction options are refused by `run`, not silently ignored.
    for (opt, val, name) in [
        ("--algorithm", "chain", "--algorithm"),
        ("-m", "100", "-m/--words"),
        ("--segment", "4", "--segment"),
        ("--format", "tsv", "--format"),
    ] {
        err(
            &["run", "-p", "4", opt, val, "true"],
            &format!("{name}: sim run runs the program's own calls"),
        );
    }
    err(
        &["run", "-p", "4", "--transport", "shm", "true"],
        "--transport: sim run runs the program's own calls",
    );
    // And the options of `run` and `calibrate` by predictions.
    for (opt, val, name) in [
        (
            "--trace",
            "y.json",
            "--trace: only `sim run` traces a program",
        ),
        ("--compute", "cpu:3", "--compute: only `sim run`"),
        ("--word-bytes", "4", "--word-bytes: only `sim run`"),
        ("--transport", "shm", "--transport: only `sim calibrate`"),
    ] {
        err(&["bcast", "-p", "4", opt, val], name);
    }
    err(
        &["barrier", "-p", "4", "-m", "10"],
        "-m/--words: a barrier carries no data",
    );
    err(
        &[
            "bcast",
            "-p",
            "8",
            "--algorithm",
            "chain",
            "-m",
            "100",
            "--segment",
            "0",
        ],
        "--segment 0: a segment is at least one element",
    );
    // Costs whose sums would overflow: refused, for predictions and runs.
    for args in [
        &["bcast", "-p", "8", "--ts", "1e308"][..],
        &["bcast", "-p", "8", "--tw", "1e308", "-m", "1000"],
        &["bcast", "-p", "8", "--th", "1e308", "--routing", "ct"],
        &["run", "--tw", "1e308", "--ts", "1", "true"],
    ] {
        err(
            args,
            "is not a time: ts, tw, th and switch are numbers from 0 to 1e100",
        );
    }
    err(
        &["bcast", "-p", "8", "--cores", "3", "--switch", "1e308"],
        "switch = 1e308 is not a time",
    );
    // clap's own errors are clear too.
    let o = sim(&["bcast", "-p", "8", "--topology", "torus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid value 'torus'"),
        "{}",
        stderr(&o)
    );
    let o = sim(&["teleport", "-p", "8"]);
    assert!(stderr(&o).contains("invalid value 'teleport'"));
}

#[test]
fn run_says_when_a_program_simulated_nothing() {
    let o = sim(&["run", "-p", "4", "true"]);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("ran no simulated job"),
        "{}",
        stderr(&o)
    );
}

/// `sim OP ARGS` with standard output `out` (and standard error a pipe).
fn sim_into(args: &[&str], out: std::process::Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .arg("sim")
        .args(args)
        .env_remove("HYPERCOMM_SIM")
        .stdout(out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("hypercomm runs")
}

/// Output that cannot be written (a full disk) ends the command with an
/// error naming standard output; a reader that has gone (a closed pipe,
/// as after `| head -1`) ends it quietly and successfully. Neither panics.
#[test]
fn output_that_cannot_be_written_is_an_error_not_a_panic() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = sim_into(&["bcast", "-p", "8"], full.into())
        .wait_with_output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("writing to standard output"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let mut child = sim_into(&["bcast", "-p", "8"], std::process::Stdio::piped());
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err, "", "nothing on standard error");
}
