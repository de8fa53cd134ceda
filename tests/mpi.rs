//! The `mpi` feature against real MPI libraries: Open MPI, and MPICH where
//! it is installed beside it.
//!
//! Each test builds the launcher and the examples with the feature into a
//! target directory of its own per MPI (`target/mpi-openmpi`,
//! `target/mpi-mpich`; once per test process), then runs them the way a
//! user would: `mpirun -n N prog` with no change to the program,
//! `hypercomm run --transport mpi`, and the same binary with no launcher
//! at all (threads). Results are checked against the threads run of the
//! same program and against the checks `mpi_check` makes of every rank
//! (serial folds of the inputs).
//!
//! Needs `mpicc` and `mpirun` (Debian: `libopenmpi-dev` and `openmpi-bin`;
//! MPICH: `libmpich-dev` and `mpich`); the `srun` test also a one-node
//! Slurm (`tests/common/slurm.rs`). `.ci/run` installs them and sets
//! `HYPERCOMM_REQUIRE_MPI=1`, which turns their absence into a failure;
//! elsewhere the tests say they are skipped.

mod common;

use common::procs::{
    assert_every_rank_reports_the_deadlock, example_bin, gone_within, hypercomm_bin, profile_dir,
    run_limited, victim_job, Output,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// One MPI installation: its compiler wrapper and its starter.
struct Mpi {
    name: &'static str,
    mpicc: &'static str,
    mpirun: &'static str,
}

/// Debian names each installation's wrappers `*.openmpi` / `*.mpich`
/// (plain `mpicc` is whichever the alternatives chose).
const OPENMPI: Mpi = Mpi {
    name: "openmpi",
    mpicc: "mpicc.openmpi",
    mpirun: "mpirun.openmpi",
};
const MPICH: Mpi = Mpi {
    name: "mpich",
    mpicc: "mpicc.mpich",
    mpirun: "mpirun.mpich",
};

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

impl Mpi {
    fn present(&self) -> bool {
        on_path(self.mpicc) && on_path(self.mpirun)
    }

    /// Whether to run: present, or absent and allowed to be (said once).
    fn wanted(&self) -> bool {
        if self.present() {
            return true;
        }
        let required = std::env::var_os("HYPERCOMM_REQUIRE_MPI").is_some_and(|v| v == "1");
        assert!(
            !required,
            "HYPERCOMM_REQUIRE_MPI=1 but {} / {} are not on PATH (apt-get install openmpi-bin libopenmpi-dev libmpich-dev mpich)",
            self.mpicc,
            self.mpirun
        );
        eprintln!(
            "skipped: {} not installed ({} / {} not on PATH)",
            self.name, self.mpicc, self.mpirun
        );
        false
    }

    /// The profile directory of this MPI's build of the launcher and the
    /// examples (built on first use).
    fn dir(&self) -> PathBuf {
        static BUILT: [OnceLock<Result<PathBuf, String>>; 2] = [OnceLock::new(), OnceLock::new()];
        let slot = &BUILT[usize::from(self.name == "mpich")];
        let r = slot.get_or_init(|| {
            let profile = profile_dir();
            let target = profile
                .parent()
                .expect("target/<profile> has a parent")
                .join(format!("mpi-{}", self.name));
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args([
                "build",
                "--quiet",
                "--locked",
                "--release",
                "-p",
                "hypercomm-cli",
                "-p",
                "hypercomm",
                "--features",
                "hypercomm/mpi,hypercomm-cli/mpi",
                "--bins",
                "--examples",
            ])
            .arg("--target-dir")
            .arg(&target)
            .env("HYPERCOMM_MPICC", self.mpicc);
            let out = cmd.output().map_err(|e| format!("starting cargo: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "building with --features mpi against {} failed:\n{}",
                    self.name,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(target.join("release"))
        });
        match r {
            Ok(d) => d.clone(),
            Err(e) => panic!("{e}"),
        }
    }

    /// Run the conformance suite and the collectives matrix
    /// (`tests/mpi_conformance.rs`, `tests/mpi_collectives.rs`) built with
    /// the feature against this MPI, in its target directory.
    fn suites(&self) -> Output {
        let target = self.dir();
        let target = target.parent().expect("target/mpi-NAME/release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut c = Command::new(cargo);
        c.args([
            "test",
            "--locked",
            "--release",
            "-p",
            "hypercomm",
            "--features",
            "mpi",
            "--test",
            "mpi_conformance",
            "--test",
            "mpi_collectives",
        ])
        .arg("--target-dir")
        .arg(target)
        .env("HYPERCOMM_MPICC", self.mpicc)
        .env("HYPERCOMM_MPIRUN", self.mpirun);
        env(&mut c);
        run_limited(c, Duration::from_secs(1200))
    }

    fn example(&self, name: &str) -> PathBuf {
        self.dir().join("examples").join(name)
    }

    fn launcher(&self) -> PathBuf {
        self.dir().join("hypercomm")
    }

    /// `mpirun -n N PROG ARGS`, as root where the tests run as root.
    fn mpirun(&self, n: usize, prog: &Path, args: &[&str]) -> Command {
        self.mpirun_with(n, &[], prog, args)
    }

    /// `mpirun -n N OPTIONS PROG ARGS`.
    fn mpirun_with(&self, n: usize, options: &[&str], prog: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(self.mpirun);
        c.args(["-n", &n.to_string()]);
        if self.name == "openmpi" {
            c.arg("--oversubscribe");
        }
        c.args(options).arg(prog).args(args);
        env(&mut c);
        c
    }
}

/// The environment every run gets: Open MPI refuses root without these;
/// no job of ours around.
fn env(c: &mut Command) {
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("HYPERCOMM_TIMEOUT", "60")
        .env_remove("HYPERCOMM_RANK")
        .env_remove("HYPERCOMM_TRANSPORT");
}

/// One lock for every test: MPI jobs oversubscribe the machine already.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static L: std::sync::Mutex<()> = std::sync::Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}

fn sorted(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

/// `mpi_check`'s verdict lines: `p` ranks, every one with no failure and
/// the library named.
fn assert_checked(out: &Output, p: usize, library: &str) {
    assert!(out.status.success(), "{}", out.both());
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| common::procs::rank_line(l).map_or(l, |(_, t)| t))
        .filter(|l| l.starts_with("rank "))
        .collect();
    assert_eq!(lines.len(), p, "{}", out.both());
    for (r, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("rank {r}: ")), "{l}");
        assert!(l.contains(" 0 failed, library "), "{l}");
        assert!(l.contains(library), "{l}");
    }
}

#[test]
fn mpirun_runs_the_checks_on_1_2_4_and_5_ranks() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let prog = OPENMPI.example("mpi_check");
    for p in [1usize, 2, 4, 5] {
        let out = run_limited(OPENMPI.mpirun(p, &prog, &[&p.to_string()]), LIMIT);
        assert_checked(&out, p, "Open MPI");
    }
    // The same binary with no launcher: threads, no library.
    let mut c = Command::new(&prog);
    c.arg("3");
    env(&mut c);
    assert_checked(&run_limited(c, LIMIT), 3, "none");
}

/// Under mpirun, ranks agree on selection's inputs at start-up: with rank
/// 0 pinned to one core and the others not (no binding by mpirun), the
/// three ranks still choose the same algorithm for every collective at
/// every size, and the collectives match a serial fold.
#[test]
fn ranks_of_different_affinity_choose_alike_under_mpirun() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let prog = OPENMPI.example("faults");
    let p = 3;
    let out = run_limited(
        OPENMPI.mpirun_with(p, &["--bind-to", "none"], &prog, &["choices", "pin"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", out.both());
    let mut rows: Vec<(usize, usize, &str)> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("rank ")?;
            let (rank, rest) = rest.split_once(" cores ")?;
            let (cores, choices) = rest.split_once(" choices ")?;
            Some((rank.parse().ok()?, cores.parse().ok()?, choices))
        })
        .collect();
    rows.sort();
    assert_eq!(rows.len(), p, "{}", out.both());
    assert_eq!(rows[0].1, 1, "rank 0 runs on one core: {}", out.both());
    let machine = std::thread::available_parallelism().map_or(1, |c| c.get());
    for (r, row) in rows.iter().enumerate() {
        if r > 0 && machine >= 2 {
            assert!(row.1 >= 2, "rank {r} is not pinned: {}", out.both());
        }
        assert_eq!(row.2, rows[0].2, "rank {r} chose differently from rank 0");
        assert!(
            out.stdout.contains(&format!("rank {r} sums ok")),
            "{}",
            out.both()
        );
    }
}

#[test]
fn mpich_runs_the_checks_too() {
    if !MPICH.wanted() {
        return;
    }
    let _g = serial();
    let prog = MPICH.example("mpi_check");
    for p in [2usize, 4] {
        let out = run_limited(MPICH.mpirun(p, &prog, &[&p.to_string()]), LIMIT);
        assert_checked(&out, p, "MPICH");
    }
    let mut c = Command::new(MPICH.launcher());
    c.args(["run", "--transport", "mpi", "-n", "3"])
        .arg(&prog)
        .arg("3")
        .env("HYPERCOMM_MPIRUN", MPICH.mpirun);
    env(&mut c);
    assert_checked(&run_limited(c, LIMIT), 3, "MPICH");
}

/// The examples and how to start them: (example, processes, arguments,
/// whether the last process is the host of an `init()` program). A
/// `run_with_host` program takes one process more than its nodes by
/// itself.
const EXAMPLES: [(&str, usize, &[&str], bool); 9] = [
    ("hello", 4, &[], false),
    ("cmmd_scans", 5, &[], false),
    ("cmmd_shifts", 4, &[], false),
    ("cmmd_vectors", 6, &[], false),
    ("ipsc_normalize", 4, &[], false),
    ("kumar_matvec", 4, &[], false),
    ("picl_sweep", 5, &["4"], false),
    (
        "suprenum_poisson",
        5,
        &["4", "nx=33", "ny=25", "maxit=150"],
        true,
    ),
    ("suprenum_multigrid", 5, &["4"], true),
];

/// Run every example under `starter` (given the example's path, process
/// count, arguments and host flag) and compare with its threads run.
fn examples_match_threads(starter: impl Fn(&Path, usize, &[&str], bool) -> Command) {
    for (name, n, args, host) in EXAMPLES {
        let prog = OPENMPI.example(name);
        let mut threads = Command::new(&prog);
        threads.args(args);
        env(&mut threads);
        let want = run_limited(threads, LIMIT);
        assert!(want.status.success(), "{name} as threads: {}", want.both());
        let got = run_limited(starter(&prog, n, args, host), LIMIT);
        assert!(
            got.status.success(),
            "{name} on {n} processes: {}",
            got.both()
        );
        assert_eq!(
            sorted(&got.stdout),
            sorted(&want.stdout),
            "{name}: {n} processes and threads differ"
        );
    }
}

/// The seed and grid examples under mpirun print what they print as
/// threads.
#[test]
fn the_examples_run_unchanged_under_mpirun() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    examples_match_threads(|prog, n, args, host| {
        let opts: &[&str] = if host {
            &["-x", "HYPERCOMM_HOST=1"]
        } else {
            &[]
        };
        OPENMPI.mpirun_with(n, opts, prog, args)
    });
}

/// The same under `srun --mpi=pmix` on the one-node Slurm.
#[test]
fn the_examples_run_unchanged_under_srun() {
    if !OPENMPI.wanted() {
        return;
    }
    let Some((_c, cluster)) = common::slurm::cluster() else {
        return;
    };
    let _g = serial();
    examples_match_threads(|prog, n, args, host| {
        let n = n.to_string();
        let mut a = vec!["--mpi=pmix", "--oversubscribe", "--overcommit", "-n", &n];
        let prog = prog.to_str().expect("a UTF-8 path");
        a.push(prog);
        a.extend_from_slice(args);
        let mut c = cluster.srun(&a);
        env(&mut c);
        if host {
            c.env("HYPERCOMM_HOST", "1");
        }
        c
    });
}

/// A job of the wrong size says what it needs on every rank.
#[test]
fn a_job_of_the_wrong_size_says_how_many_processes_to_start() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let out = run_limited(
        OPENMPI.mpirun(3, &OPENMPI.example("cmmd_scans"), &[]),
        LIMIT,
    );
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr
            .contains("asks for 4 nodes and a host, but the job it was started in has 2 nodes and a host: start it with 5 processes"),
        "{}",
        out.both()
    );
}

/// The thread level asked of MPI is the user's to raise: a bad
/// `HYPERCOMM_MPI_THREAD` is an error naming the variable and the choices;
/// `multiple` runs the checks as the default (single) does.
#[test]
fn hypercomm_mpi_thread_sets_the_thread_level() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let prog = OPENMPI.example("mpi_check");
    let with = |level: &str| {
        let mut c = OPENMPI.mpirun_with(2, &["-x", "HYPERCOMM_MPI_THREAD"], &prog, &["2"]);
        c.env("HYPERCOMM_MPI_THREAD", level);
        run_limited(c, LIMIT)
    };
    let out = with("lots");
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr.contains("HYPERCOMM_MPI_THREAD=")
            && out.stderr.contains("lots")
            && out
                .stderr
                .contains("want one of single, funneled, serialized, multiple"),
        "{}",
        out.both()
    );
    assert_checked(&with("multiple"), 2, "Open MPI");
}

/// `hypercomm run --transport mpi` starts mpirun; output carries our rank
/// prefixes.
#[test]
fn hypercomm_run_starts_mpirun() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let mut c = Command::new(OPENMPI.launcher());
    c.args(["run", "--transport", "mpi", "-n", "4"])
        .arg(OPENMPI.example("mpi_check"))
        .arg("4")
        .env("HYPERCOMM_MPIRUN", OPENMPI.mpirun);
    env(&mut c);
    let out = run_limited(c, LIMIT);
    assert_checked(&out, 4, "Open MPI");
    assert!(
        out.stdout.lines().all(|l| l.starts_with("[0] ")),
        "every line comes from rank 0 (it prints the reports): {}",
        out.both()
    );
}

/// A rank killed under plain mpirun: the job ends (no hang) and no rank
/// process is left; under `hypercomm run --transport mpi` the launcher
/// names the rank and the signal.
#[test]
fn a_killed_rank_ends_the_job_and_is_named() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let faults = OPENMPI.example("faults");
    for ours in [false, true] {
        let cmd = if ours {
            let mut c = Command::new(OPENMPI.launcher());
            c.args(["run", "--transport", "mpi", "-n", "4"])
                .arg(&faults)
                .args(["victim", "2"])
                .env("HYPERCOMM_MPIRUN", OPENMPI.mpirun);
            env(&mut c);
            c
        } else {
            // Rank-tagged lines, so the victim's pid is known.
            OPENMPI.mpirun_with(4, &["--tag-output"], &faults, &["victim", "2"])
        };
        let (mut child, pids, _rx) = victim_job(cmd, 4, 2, LIMIT);
        assert_eq!(pids.len(), 4);
        let (status, err) = common::procs::kill_and_wait(&mut child, pids[2], LIMIT);
        assert!(!status.success(), "{err}");
        if ours {
            assert!(
                err.contains("rank 2 was killed by signal SIGKILL (9)"),
                "{err}"
            );
            assert_eq!(status.code(), Some(128 + 9), "{err}");
        }
        gone_within(&pids, Duration::from_secs(15));
    }
}

/// Every rank receives from its right neighbour, nobody sends, no timeout
/// set: under `mpirun` (Open MPI and MPICH) every rank reports the
/// deadlock, naming what every rank waits for, instead of hanging.
#[test]
fn a_deadlock_under_mpirun_is_reported_by_every_rank() {
    const N: usize = 3;
    let _g = serial();
    for mpi in [&OPENMPI, &MPICH] {
        if !mpi.wanted() {
            continue;
        }
        let mut c = mpi.mpirun(N, &mpi.example("faults"), &["deadlock"]);
        c.env("HYPERCOMM_TIMEOUT", "");
        let out = run_limited(c, LIMIT);
        let all = format!("{}:\n{}", mpi.name, out.both());
        assert_every_rank_reports_the_deadlock(&out, N, |_| String::new(), &all);
        assert!(out.elapsed < Duration::from_secs(60), "{all}");
    }
}

/// A timeout over MPI says what the other ranks wait for: rank 2 sleeps
/// outside the library (it cannot answer), rank 1 waits for it, rank 0
/// for rank 1; rank 0's error names rank 1's wait and rank 2's silence.
#[test]
fn a_timeout_under_mpirun_says_what_the_others_wait_for() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let mut c = OPENMPI.mpirun(3, &OPENMPI.example("faults"), &["chain", "2"]);
    c.env("HYPERCOMM_TIMEOUT", "1");
    let out = run_limited(c, LIMIT);
    let all = out.both();
    assert!(!out.status.success(), "{all}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("rank 0 detected Timeout"))
        .unwrap_or_else(|| panic!("rank 0 reported no timeout: {all}"));
    assert!(
        line.contains(
            "endpoint 1: rank 1 is in recv, waiting for a message from rank 2 with tag 7"
        ),
        "{all}"
    );
    assert!(line.contains("endpoint 2: no answer within 1 s"), "{all}");
    assert!(out.elapsed < Duration::from_secs(60), "{all}");
}

/// Without the feature, or without mpirun, `--transport mpi` says what is
/// missing.
#[test]
fn missing_mpi_is_a_clear_error() {
    // A program built without the feature, started for an MPI job.
    let mut c = Command::new(hypercomm_bin());
    c.args(["run", "--transport", "mpi", "-n", "2"])
        .arg(example_bin("hello"));
    env(&mut c);
    let out = run_limited(c, LIMIT);
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr
            .contains("this program was built without MPI: build it with the `mpi` feature"),
        "{}",
        out.both()
    );
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    // A build with the feature, and no mpirun where it is looked for.
    let mut c = Command::new(OPENMPI.launcher());
    c.args(["run", "--transport", "mpi", "-n", "2"])
        .arg(OPENMPI.example("hello"))
        .env("HYPERCOMM_MPIRUN", "/nonexistent/mpirun");
    env(&mut c);
    let out = run_limited(c, LIMIT);
    assert!(!out.status.success(), "{}", out.both());
    assert!(out.stderr.contains("/nonexistent/mpirun"), "{}", out.both());
}

/// `srun --mpi=pmix` on a real one-node Slurm starts the program built
/// with the feature; it joins through MPI (the library's own collectives
/// included) with no change.
#[test]
fn srun_with_pmix_starts_an_mpi_program() {
    if !OPENMPI.wanted() {
        return;
    }
    let Some((_c, cluster)) = common::slurm::cluster() else {
        return;
    };
    let _g = serial();
    let prog = OPENMPI.example("mpi_check");
    for n in [2usize, 4] {
        let mut c = cluster.srun(&[
            "--mpi=pmix",
            "--oversubscribe",
            "--overcommit",
            "-n",
            &n.to_string(),
            prog.to_str().expect("a UTF-8 path"),
            &n.to_string(),
        ]);
        env(&mut c);
        assert_checked(&run_limited(c, LIMIT), n, "Open MPI");
    }
}

/// Tracing over MPI: one raw stream per process, merged by `hypercomm
/// trace convert` as for tcp and shm.
#[test]
fn tracing_writes_one_stream_per_process_that_merge() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hc-mpi-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut c = Command::new(OPENMPI.launcher());
    c.args(["run", "--transport", "mpi", "-n", "3"])
        .arg(OPENMPI.example("hello"))
        .env("HYPERCOMM_MPIRUN", OPENMPI.mpirun)
        .env("HYPERCOMM_TRACE", dir.join("job"))
        .env("HYPERCOMM_TRACE_LEVEL", "3,3,3");
    env(&mut c);
    let out = run_limited(c, LIMIT);
    assert!(out.status.success(), "{}", out.both());
    common::procs::check_ring_trace(&dir, 3, "mpi");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The conformance suite and the collectives matrix (sub-jobs of 1 to 16
/// nodes, with and without a host) over each installed MPI.
#[test]
fn conformance_and_collectives_over_open_mpi() {
    if !OPENMPI.wanted() {
        return;
    }
    let _g = serial();
    let out = OPENMPI.suites();
    assert!(out.status.success(), "{}", out.both());
    assert_suites_ran(&out);
}

/// The same against MPICH.
#[test]
fn conformance_and_collectives_over_mpich() {
    if !MPICH.wanted() {
        return;
    }
    let _g = serial();
    let out = MPICH.suites();
    assert!(out.status.success(), "{}", out.both());
    assert_suites_ran(&out);
}

/// Both suites ran their tests, and none failed.
fn assert_suites_ran(out: &Output) {
    let results: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("test result: "))
        .collect();
    assert_eq!(results.len(), 2, "{}", out.both());
    for r in results {
        let passed: usize = r
            .split_whitespace()
            .nth(3)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            r.contains(" 0 failed") && passed >= 15,
            "{r}\n{}",
            out.both()
        );
    }
}
