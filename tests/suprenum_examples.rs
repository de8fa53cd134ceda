//! The SUPRENUM examples against their serial runs: `suprenum_poisson`
//! (Jacobi and red-black Gauss–Seidel) and `suprenum_multigrid` (a V-cycle
//! with agglomerated coarse levels) on 1, 2, 4, 6 and 9 ranks — square and
//! non-square process grids — and on prime counts (a 1-D process grid),
//! as threads and as processes over shared memory under `hypercomm run`
//! with the same program as host.
//!
//! The reference is each example's `--serial` mode: the same method on
//! plain arrays, without the library. Every line — the solution, the sweep
//! counts, the last change and the residuals — must be equal to the last
//! bit (the Poisson residual is an exact sum, rounded once).

mod common;

use common::procs::{example_bin, hypercomm_bin, run_limited, stdout_of};
use std::process::Command;
use std::time::Duration;

/// Compare a run's output with the serial one: equal lines.
fn same(what: &str, serial: &str, got: &str) {
    assert_eq!(serial, got, "{what}\nserial:\n{serial}\ngot:\n{got}");
}

/// Under the launcher over shared memory, the program as host and nodes.
fn launched(name: &str, n: usize, args: &[&str]) -> String {
    let bin = example_bin(name);
    let mut cmd = Command::new(hypercomm_bin());
    cmd.args([
        "run",
        "-n",
        &n.to_string(),
        "--transport",
        "shm",
        "--no-prefix",
        "--timeout",
        "120",
        "--host",
    ])
    .arg(&bin)
    .args(args)
    .arg("--")
    .arg(&bin)
    .args(args)
    .env("HYPERCOMM_TIMEOUT", "60")
    .env_remove("HYPERCOMM_RANK");
    let out = run_limited(cmd, Duration::from_secs(150));
    assert!(
        out.status.success(),
        "{name} -n {n} {args:?}:\n{}",
        out.both()
    );
    out.stdout
}

fn check(name: &str, counts: &[usize], args: &[&str]) {
    let mut serial_args = args.to_vec();
    serial_args.push("--serial");
    let serial = stdout_of(name, &serial_args);
    for &n in counts {
        let mut a = vec![n.to_string()];
        a.extend(args.iter().map(|s| s.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        same(
            &format!("{name} {a:?} as threads"),
            &serial,
            &stdout_of(name, &a),
        );
    }
    for &n in counts {
        same(
            &format!("{name} {args:?} on {n} processes"),
            &serial,
            &launched(name, n, args),
        );
    }
}

#[test]
fn poisson_equals_the_serial_run_threads_and_shm() {
    check(
        "suprenum_poisson",
        &[1, 2, 4, 6, 9, 7],
        &["nx=33", "ny=25", "maxit=150"],
    );
}

#[test]
fn poisson_stops_on_the_tolerance_like_the_serial_run() {
    check(
        "suprenum_poisson",
        &[3, 4, 5],
        &["nx=17", "ny=13", "tol=1e-9", "maxit=3000"],
    );
}

#[test]
fn multigrid_equals_the_serial_v_cycle_threads_and_shm() {
    check("suprenum_multigrid", &[1, 2, 4, 6, 9, 7], &[]);
}

#[test]
fn multigrid_agglomerates_coarse_levels_onto_fewer_ranks() {
    // 9 ranks: 3 × 3, then 3 × 1 (a factor 3 on the thin axis), then one.
    let log = {
        let out = common::procs::run_example("suprenum_multigrid", &["9", "--levels"]);
        assert!(out.status.success(), "{}", out.both());
        out.stderr
    };
    let levels: Vec<&str> = log.lines().filter(|l| l.starts_with("level")).collect();
    assert_eq!(
        levels,
        vec![
            "level 1: 33 x 17 points on [3, 3] ranks",
            "level 2: 17 x 9 points on [3, 1] ranks",
            "level 3: 9 x 5 points on [1, 1] ranks",
            "level 4: 5 x 3 points on [1, 1] ranks",
        ]
    );
    // A grid taller than wide, on a prime count (a 1-D process grid).
    check("suprenum_multigrid", &[5], &["nx=33", "ny=65", "cycles=3"]);
}

#[test]
fn bad_arguments_are_explained() {
    let out = common::procs::run_example("suprenum_multigrid", &["--nx", "20"]);
    assert!(
        !out.status.success() && out.stderr.contains("2^k + 1"),
        "{}",
        out.both()
    );
    let out = common::procs::run_example("suprenum_poisson", &["0"]);
    assert!(
        !out.status.success() && out.stderr.contains("at least 1"),
        "{}",
        out.both()
    );
}
