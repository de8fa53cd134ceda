//! Clocks of separate processes (`hypercomm run`): every process counts time
//! from its own start, so its records must be moved onto node 0's clock by
//! the offset measured at trace start (SPEC section 7). The odd ranks start
//! their clocks 300 ms late, so without the correction their records sit
//! 300 ms too early and ranks leave collectives long before others enter;
//! every rank's trace starts at the common origin (clock zero).

use crate::common::procs::{hypercomm_bin, run_limited};
use crate::tmp;
use hypercomm::trace::{self, Kind, Trace, HOST_ID};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Set in the processes the launcher starts (the test binary itself).
const CHILD: &str = "HYPERCOMM_TRACE_CLOCKS_CHILD";
const TEST: &str = "clocks::collectives_of_processes_overlap_on_one_clock";

/// What every process runs: collectives of the nodes entered in turn by a
/// late node, which then sends the host (if any) a message.
fn child() -> hypercomm::Result<()> {
    let rank: usize = std::env::var("HYPERCOMM_RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    if rank % 2 == 1 {
        std::thread::sleep(Duration::from_millis(300));
    }
    // The process's clock starts here (its first reading).
    let _ = hypercomm::clock();
    let comm = hypercomm::init()?;
    for round in 0..4 {
        let late = round % comm.size();
        if comm.is_host() {
            comm.recv::<u32>(late, 1u32)?;
            continue;
        }
        if comm.rank() == late {
            std::thread::sleep(Duration::from_millis(20));
        }
        comm.barrier()?;
        comm.allreduce(&[round as u64], hypercomm::prelude::Sum)?;
        if comm.rank() == late && comm.has_host() {
            comm.send(&[round as u32], hypercomm::Rank::Host, 1)?;
        }
    }
    hypercomm::finalize(comm)
}

/// Run the child under the launcher (`args` before the program) with
/// tracing to `dir/s.trace`; the raw files written.
fn traced_run(dir: &Path, args: &[&str]) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let me = std::env::current_exe().unwrap();
    let test_args = [TEST, "--exact", "--test-threads=1"];
    let mut c = Command::new(hypercomm_bin());
    c.args(["run", "-n", "4", "--timeout", "60"]).args(args);
    if args.contains(&"--host") {
        c.arg(&me).args(test_args).arg("--");
    }
    c.arg(&me)
        .args(test_args)
        .env(CHILD, "1")
        .env("HYPERCOMM_TRACE", dir.join("s.trace"))
        .env("HYPERCOMM_TRACE_LEVEL", "2,1,1")
        .env_remove("HYPERCOMM_RANK");
    let out = run_limited(c, Duration::from_secs(90));
    assert!(out.status.success(), "{}", out.both());
    let mut raws: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "raw"))
        .collect();
    raws.sort();
    raws
}

/// Each node's uncertainty of its measured offsets (ns): the true offset
/// lies within half the round trip of the exchange it was taken from
/// (Cristian), at start and at exit; node 0 is the reference (0).
fn uncertainty(raws: &[PathBuf]) -> BTreeMap<i32, i64> {
    let mut u = BTreeMap::new();
    for p in raws {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        for s in v["streams"].as_array().unwrap() {
            let node = s["node"].as_i64().unwrap() as i32;
            assert_eq!(
                s["shared"],
                false,
                "{}: processes share no clock",
                p.display()
            );
            assert!(
                s["start"].is_array(),
                "{}: offset measured at start",
                p.display()
            );
            let rtt = ["start", "end"]
                .iter()
                .filter_map(|k| s[k][2].as_i64())
                .max()
                .unwrap();
            u.insert(node, rtt / 2 + 1);
        }
    }
    u
}

/// For every collective instance: no node leaves it (block_end) before
/// another node entered it (block_begin), up to the two nodes' offset
/// uncertainties, plus the largest one once more for the merge's repair of
/// a receive that an error put before its send (it only delays a rank).
fn check_overlap(t: &Trace, u: &BTreeMap<i32, i64>) -> usize {
    type Ends = (Vec<(i64, i32)>, Vec<(i64, i32)>);
    let mut blocks: BTreeMap<(i64, i64), Ends> = BTreeMap::new();
    for r in &t.records {
        match r.kind {
            Kind::BlockBegin {
                block_type,
                location_type,
                ..
            } => blocks
                .entry((block_type, location_type))
                .or_default()
                .0
                .push((r.time, r.node)),
            Kind::BlockEnd {
                block_type,
                location_type,
                ..
            } => blocks
                .entry((block_type, location_type))
                .or_default()
                .1
                .push((r.time, r.node)),
            _ => {}
        }
    }
    let worst = u.values().copied().max().unwrap_or(0);
    for (key, (begins, ends)) in &blocks {
        for &(b, bn) in begins {
            for &(e, en) in ends {
                let tol = u[&bn] + u[&en] + worst;
                assert!(
                    b - e <= tol,
                    "collective {key:?}: node {bn} enters at {b} ns, {} ns after node {en} left \
                     (tolerance {tol} ns)",
                    b - e
                );
            }
        }
    }
    blocks.len()
}

#[test]
fn collectives_of_processes_overlap_on_one_clock() {
    if std::env::var_os(CHILD).is_some() {
        child().unwrap();
        return;
    }
    let mut runs = BTreeMap::new();
    for (name, args) in [
        ("shm", &["--transport", "shm"][..]),
        ("tcp", &["--transport", "tcp"][..]),
        ("shm-host", &["--transport", "shm", "--host"][..]),
        ("tcp-host", &["--transport", "tcp", "--host"][..]),
    ] {
        let dir = tmp(&format!("clocks-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        let raws = traced_run(&dir, args);
        let host = args.contains(&"--host");
        assert_eq!(raws.len(), 4 + host as usize, "{name}: {raws:?}");
        let u = uncertainty(&raws);
        assert_eq!(u.contains_key(&HOST_ID), host, "{name}");
        let t = trace::read_files(&raws).unwrap();
        assert!(
            check_overlap(&t, &u) >= 8,
            "{name}: barriers and allreduces"
        );
        // Every rank's trace starts at the common origin (PICL: trace_start
        // is always at clock zero), up to the offsets' uncertainty.
        let worst = u.values().copied().max().unwrap();
        let starts: Vec<_> = t
            .records
            .iter()
            .filter(|r| matches!(r.kind, Kind::TraceStart(_)))
            .collect();
        assert_eq!(starts.len(), u.len(), "{name}");
        for r in starts {
            assert!(r.time <= worst, "{name}: {r:?} (tolerance {worst} ns)");
        }
        runs.insert(name, raws);
    }
    // Files of two runs are not merged as one: the host's file of a run
    // with a host beside the node files of a run without one (as files
    // left in place by an earlier run are), and one node's file twice.
    let mut mixed = runs["shm"].clone();
    mixed.push(runs["shm-host"].last().unwrap().clone());
    let e = trace::read_files(&mixed).unwrap_err().to_string();
    assert!(
        e.contains("from another run") && e.contains("and a host"),
        "{e}"
    );
    let mut twice = runs["tcp"].clone();
    twice.push(runs["shm"][2].clone());
    let e = trace::read_files(&twice).unwrap_err().to_string();
    assert!(
        e.contains("node 2's stream is in") && e.contains("clocks-tcp"),
        "{e}"
    );
}
