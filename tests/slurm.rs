//! Programs started by a real Slurm: a one-node cluster (munged, slurmctld,
//! slurmd) started on this machine by `tests/scripts/slurm.sh` for the
//! duration of the tests and stopped after them (`common::service`), and
//! `srun` starting the ranks, which join through the Slurm bootstrap of
//! `hypercomm::init()` (TCP, rendezvous at task 0).
//!
//! The cluster needs root and Debian's `slurm-wlm` and `munge`; `.ci/run`
//! installs them and sets `HYPERCOMM_REQUIRE_SLURM=1`, which turns their
//! absence into a failure. Elsewhere the tests say they are skipped.

mod common;

use common::procs::{example_bin, hello_lines, run_limited, sorted_lines, Output};
use common::slurm::cluster;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(90);

fn check_ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}:\n{}", out.both());
}

#[test]
fn srun_starts_hello_on_two_tasks_and_on_more_tasks_than_cores() {
    let Some((_g, c)) = cluster() else { return };
    let hello = example_bin("hello");
    let hello = hello.to_str().expect("a UTF-8 path");
    let out = run_limited(c.srun(&["-n", "2", hello]), LIMIT);
    check_ok(&out, "srun -n 2 hello");
    assert_eq!(
        sorted_lines(&out.stdout),
        hello_lines(2, false),
        "{}",
        out.both()
    );
    let out = run_limited(
        c.srun(&["--oversubscribe", "--overcommit", "-n", "5", hello]),
        LIMIT,
    );
    check_ok(&out, "srun -n 5 hello");
    assert_eq!(
        sorted_lines(&out.stdout),
        hello_lines(5, false),
        "{}",
        out.both()
    );
}

#[test]
fn a_rank_killed_under_srun_is_named_by_the_survivors_and_nothing_is_left() {
    let Some((_g, c)) = cluster() else { return };
    let faults = example_bin("faults");
    let mut child = c
        .srun(&[
            "--oversubscribe",
            "--overcommit",
            "-n",
            "4",
            "--label",
            faults.to_str().expect("a UTF-8 path"),
            "victim",
            "2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting srun");
    let start = Instant::now();
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // `srun --label` prefixes "N: "; each rank prints its pid first.
    let mut pids = [None; 4];
    let mut lines = Vec::new();
    let mut ready = false;
    while !ready {
        let line = rx
            .recv_timeout(LIMIT.saturating_sub(start.elapsed()))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("the job did not get ready: {lines:?}")
            });
        let (rank, text) = line.split_once(": ").expect("a labelled line");
        let rank: usize = rank.trim().parse().expect("a task number");
        if let Some(p) = text.strip_prefix("pid ") {
            pids[rank] = Some(p.trim().parse::<i32>().expect("a pid"));
        }
        ready = text == "victim ready";
        lines.push(line);
    }
    let victim = pids[2].expect("the victim printed its pid");
    // SAFETY: kill(2) on a pid the victim printed; the job is alive (the
    // victim sleeps after printing that it is ready).
    assert_eq!(unsafe { libc::kill(victim, libc::SIGKILL) }, 0);
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for srun") {
            break s;
        }
        assert!(start.elapsed() < LIMIT, "srun did not end after the kill");
        std::thread::sleep(Duration::from_millis(50));
    };
    lines.extend(rx.try_iter());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(!status.success(), "the job must fail: {lines:?}");
    // Slurm names the task that died.
    assert!(err.contains("task 2"), "srun's report: {err}");
    // Every survivor saw the failure of a peer.
    for r in [0usize, 1, 3] {
        let detected = lines
            .iter()
            .find(|l| l.starts_with(&format!("{r}: rank {r} detected")))
            .unwrap_or_else(|| panic!("rank {r} did not report: {lines:?}"));
        assert!(
            detected.contains("PeerFailed") && detected.contains("Node(2)"),
            "{detected}"
        );
    }
    // No rank process is left behind.
    std::thread::sleep(Duration::from_millis(500));
    for p in pids.iter().flatten() {
        assert!(
            !Path::new(&format!("/proc/{p}")).exists(),
            "process {p} is still there"
        );
    }
}
