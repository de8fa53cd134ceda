//! Processes started by the launcher (`hypercomm run`), by `spawn` and by a
//! faked Slurm step, over TCP: output forwarding, failure propagation
//! (`kill -9`, abort, Ctrl-C), refusal of foreign clients, distinct
//! addresses, collective selection agreed across hosts and CPU affinities,
//! and the command's help. Every process is run under a time
//! limit; the launcher itself also gets `--timeout`.

mod common;

use common::procs::{
    assert_every_rank_reports_the_deadlock, example_bin, hello_lines, hypercomm_bin, run_limited,
    sorted_lines, Output,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const LIMIT: Duration = Duration::from_secs(60);

fn launcher() -> Command {
    let mut c = Command::new(hypercomm_bin());
    c.arg("run").env("HYPERCOMM_TIMEOUT", "30");
    c
}

fn run(mut cmd: Command) -> Output {
    cmd.env_remove("HYPERCOMM_RANK");
    run_limited(cmd, LIMIT)
}

fn pid_alive(pid: u32) -> bool {
    // A reaped process has no /proc entry; a zombie would still count.
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn pids_in(out: &str) -> Vec<u32> {
    out.lines()
        .filter_map(|l| l.split("] pid ").nth(1))
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// A launcher whose stdout is read line by line while it runs.
struct Live {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Live {
    fn start(mut cmd: Command) -> Live {
        let mut child = cmd
            .env_remove("HYPERCOMM_RANK")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the launcher");
        let out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Live {
            child,
            lines: rx,
            seen: Vec::new(),
            stderr,
        }
    }

    /// Wait for a line containing `what`.
    fn wait_for(&mut self, what: &str) -> String {
        if let Some(l) = self.seen.iter().find(|l| l.contains(what)) {
            return l.clone();
        }
        let end = Instant::now() + LIMIT;
        while let Ok(l) = self
            .lines
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            self.seen.push(l.clone());
            if l.contains(what) {
                return l;
            }
        }
        let _ = self.child.kill();
        panic!("no line with {what:?}; got:\n{}", self.seen.join("\n"));
    }

    /// Wait for the launcher to end; returns (exit status, stdout, stderr).
    fn finish(mut self) -> (std::process::ExitStatus, String, String) {
        let end = Instant::now() + LIMIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!(
                    "the launcher did not end; output so far:\n{}",
                    self.seen.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(l);
        }
        (status, self.seen.join("\n"), self.stderr.join().unwrap())
    }
}

// ---------------------------------------------------------------- hello

#[test]
fn hello_runs_as_processes_over_tcp() {
    let hello = example_bin("hello");
    for n in [1usize, 2, 4] {
        let mut c = launcher();
        c.args(["-n", &n.to_string(), "--transport", "tcp"])
            .arg(&hello);
        let out = run(c);
        assert!(out.status.success(), "hello -n {n}:\n{}", out.both());
        assert_eq!(
            sorted_lines(&out.stdout),
            hello_lines(n, true),
            "{}",
            out.both()
        );
    }
}

/// `-np N`, as `mpirun` users type it, is the node count, and so are the
/// value attached (`-n3`, `-n=3`, `-np3`, `-np=3`); the same words after
/// the program are the program's own.
#[test]
fn mpirun_np_spelling_starts_that_many_ranks() {
    for spelling in [
        &["-np", "3"][..],
        &["-n3"],
        &["-n=3"],
        &["-np3"],
        &["-np=3"],
    ] {
        let mut c = launcher();
        c.args(spelling)
            .args(["--transport", "shm"])
            .arg(example_bin("hello"))
            .args(["-np", "-n2"]);
        let out = run(c);
        assert!(out.status.success(), "{spelling:?}: {}", out.both());
        assert_eq!(
            sorted_lines(&out.stdout),
            hello_lines(3, true),
            "{spelling:?}: {}",
            out.both()
        );
    }
}

/// Standard input reaches rank 0, as mpirun gives it; the other ranks read
/// an empty input. mpirun's `--oversubscribe` is accepted on the way; an
/// option the launcher does not know is named instead of being taken for
/// the program; a host program's arguments may start with dashes.
#[test]
fn stdin_goes_to_rank_0_and_options_are_read_as_mpirun_users_write_them() {
    let script = r#"printf 'a\nb\nc\n' | "$0" run -n 2 --oversubscribe sh -c 'echo lines=$(wc -l); exec "$0"' "$1""#;
    let mut c = Command::new("sh");
    c.args(["-c", script])
        .arg(hypercomm_bin())
        .arg(example_bin("hello"))
        .env("HYPERCOMM_TIMEOUT", "30");
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    assert!(out.stdout.contains("[0] lines=3\n"), "{}", out.both());
    assert!(out.stdout.contains("[1] lines=0\n"), "{}", out.both());
    let mut c = launcher();
    c.args(["-n", "2", "--bind-to", "core"])
        .arg(example_bin("hello"));
    let out = run(c);
    assert_eq!(out.status.code(), Some(2), "{}", out.both());
    assert!(
        out.stderr.contains("unknown option --bind-to"),
        "{}",
        out.both()
    );
    // The host program's arguments run to `--`, dashes and all.
    let hello = example_bin("hello");
    let mut c = launcher();
    c.args([
        "-n",
        "2",
        "--host",
        "sh",
        "-c",
        r#"echo got "$1"; exec "$0""#,
    ])
    .arg(&hello)
    .args(["--nx", "--"])
    .arg(&hello);
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    assert!(out.stdout.contains("[host] got --nx\n"), "{}", out.both());
}

/// `-x NAME=VALUE` and `-x NAME` (this shell's value) reach every rank; an
/// unset `-x NAME` is an error that names it, before anything starts.
#[test]
fn exported_variables_reach_every_rank() {
    let script = format!(
        "echo x=$HC_X y=$HC_Y; exec {}",
        example_bin("hello").display()
    );
    let mut c = launcher();
    c.args([
        "-n", "2", "-x", "HC_X=a=b", "-x", "HC_Y", "sh", "-c", &script,
    ])
    .env("HC_Y", "two words");
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    for r in 0..2 {
        let want = format!("[{r}] x=a=b y=two words");
        assert!(out.stdout.contains(&want), "{want}:\n{}", out.both());
    }
    let mut c = launcher();
    c.args(["-n", "2", "-x", "HC_SURELY_UNSET_HERE", "sh", "-c", &script])
        .env_remove("HC_SURELY_UNSET_HERE");
    let out = run(c);
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr.contains("-x HC_SURELY_UNSET_HERE: not set here"),
        "{}",
        out.both()
    );
    assert!(!out.stdout.contains("x="), "{}", out.both());
}

/// Open MPI's `--host a,b` names machines; ours starts a host program, and
/// when that program does not exist the error says which option was meant.
#[test]
fn an_mpirun_style_host_list_is_pointed_to_hosts() {
    let mut c = launcher();
    c.args(["--host", "node1,node2", "-n", "2"])
        .arg(example_bin("hello"));
    let out = run(c);
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr
            .contains("--host node1,node2: no such program. --host starts a host program"),
        "{}",
        out.both()
    );
    assert!(out.stderr.contains("are --hosts (or -H"), "{}", out.both());
}

#[test]
fn hello_with_a_host_process_prints_in_rank_order() {
    let hello = example_bin("hello");
    let mut c = launcher();
    c.args(["-n", "4", "--host"])
        .arg(&hello)
        .arg("--")
        .arg(&hello);
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    let want = [
        "[host] hello from node 0 of 4: token 0 -> 0",
        "[host] hello from node 1 of 4: token 0 -> 1",
        "[host] hello from node 2 of 4: token 1 -> 3",
        "[host] hello from node 3 of 4: token 3 -> 6",
        "[host] token after one lap: 6",
    ];
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        want,
        "{}",
        out.both()
    );
    // Without prefixes.
    let mut c = launcher();
    c.args(["-n", "3", "--no-prefix", "--host"])
        .arg(&hello)
        .arg("--")
        .arg(&hello);
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    assert_eq!(
        out.stdout.lines().last(),
        Some("token after one lap: 3"),
        "{}",
        out.both()
    );
    assert!(!out.stdout.contains('['), "{}", out.both());
}

/// The same hello over shared memory, with and without a host.
#[test]
fn hello_runs_as_processes_over_shm() {
    let hello = example_bin("hello");
    let mut c = launcher();
    c.args(["-n", "4", "--transport", "shm"]).arg(&hello);
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    assert_eq!(
        sorted_lines(&out.stdout),
        hello_lines(4, true),
        "{}",
        out.both()
    );
    let mut c = launcher();
    c.args(["-n", "4", "--transport", "shm", "--host"])
        .arg(&hello)
        .arg("--")
        .arg(&hello);
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    assert_eq!(
        out.stdout.lines().last(),
        Some("[host] token after one lap: 6"),
        "{}",
        out.both()
    );
}

// ------------------------------------------------------------- failures

#[test]
fn kill_9_of_a_rank_is_reported_and_the_job_is_stopped() {
    const V: usize = 2;
    let mut c = launcher();
    c.args(["-n", "4", "--timeout", "50"])
        .arg(example_bin("faults"))
        .args(["victim", &V.to_string()]);
    let mut live = Live::start(c);
    live.wait_for("victim ready");
    let victim_pid: u32 = live
        .seen
        .iter()
        .find_map(|l| l.strip_prefix(&format!("[{V}] pid ")))
        .and_then(|p| p.trim().parse().ok())
        .expect("the victim printed its pid");
    // Let the others block on the victim, then kill it.
    std::thread::sleep(Duration::from_millis(300));
    let killed_at = unix_ms();
    Command::new("kill")
        .args(["-9", &victim_pid.to_string()])
        .status()
        .expect("kill -9");
    let (status, stdout, stderr) = live.finish();
    let all = format!("--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    assert!(!status.success(), "{all}");
    assert_eq!(status.code(), Some(128 + 9), "{all}");
    assert!(
        stderr.contains(&format!("rank {V} was killed by signal SIGKILL (9)")),
        "{all}"
    );
    for r in (0..4).filter(|&r| r != V) {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("[{r}] rank {r} detected ")))
            .unwrap_or_else(|| panic!("rank {r} reported nothing:\n{all}"));
        assert!(
            line.contains(&format!("PeerFailed {{ rank: Node({V}) }}")),
            "{line}"
        );
        let at: u128 = line.rsplit(" at ").next().unwrap().parse().unwrap();
        assert!(
            at.saturating_sub(killed_at) < 1000,
            "rank {r} noticed after {} ms: {line}",
            at - killed_at
        );
    }
    for pid in pids_in(&stdout) {
        assert!(!pid_alive(pid), "process {pid} was left behind:\n{all}");
    }
}

/// After `kill -9` of rank 2, every survivor's error names rank 2 — also
/// the ranks that were waiting on a neighbour that exited after noticing
/// (rank 0 waits on rank 1, which waits on rank 2; rank 3 waits on rank
/// 0): 20 of 20 runs on shared memory and on TCP.
#[test]
fn kill_9_every_survivor_names_the_killed_rank() {
    const V: usize = 2;
    const RUNS: usize = 20;
    for transport in ["shm", "tcp"] {
        for run in 0..RUNS {
            let mut c = launcher();
            c.args(["-n", "4", "--timeout", "50", "--transport", transport])
                .arg(example_bin("faults"))
                .args(["chain", &V.to_string()]);
            let mut live = Live::start(c);
            live.wait_for("victim ready");
            let victim_pid: u32 = live
                .seen
                .iter()
                .find_map(|l| l.strip_prefix(&format!("[{V}] pid ")))
                .and_then(|p| p.trim().parse().ok())
                .expect("the victim printed its pid");
            Command::new("kill")
                .args(["-9", &victim_pid.to_string()])
                .status()
                .expect("kill -9");
            let (status, stdout, stderr) = live.finish();
            let all = format!(
                "{transport} run {run}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
            );
            assert_eq!(status.code(), Some(128 + 9), "{all}");
            let first = stderr
                .lines()
                .find(|l| l.starts_with("hypercomm: "))
                .unwrap_or_default();
            assert!(
                first.contains(&format!("rank {V} was killed by signal SIGKILL (9)")),
                "{all}"
            );
            for r in (0..4).filter(|&r| r != V) {
                let line = stdout
                    .lines()
                    .find(|l| l.starts_with(&format!("[{r}] rank {r} detected ")))
                    .unwrap_or_else(|| panic!("rank {r} reported nothing:\n{all}"));
                assert!(
                    line.contains(&format!("PeerFailed {{ rank: Node({V}) }}")),
                    "rank {r} blamed another rank: {line}\n{all}"
                );
            }
        }
    }
}

/// When one rank panics under the launcher, the launcher names it and
/// exits with its code (101), whatever the other ranks do on noticing —
/// panic as well (`expect`) or exit with an error — and whether or not a
/// backtrace slows the panicking rank down: 50 of 50 runs with and 50 of
/// 50 without `RUST_BACKTRACE`, over shared memory and TCP alternately.
#[test]
fn a_panicking_rank_is_named_and_its_exit_code_passed_on() {
    const P: usize = 3;
    const RUNS: usize = 50;
    for backtrace in [false, true] {
        for k in 0..RUNS {
            let transport = if k % 2 == 0 { "shm" } else { "tcp" };
            let mut c = launcher();
            c.args(["-n", "4", "--timeout", "50", "--transport", transport])
                .arg(example_bin("faults"))
                .args(["panic", &P.to_string()]);
            if backtrace {
                c.env("RUST_BACKTRACE", "1");
            } else {
                c.env_remove("RUST_BACKTRACE");
            }
            let out = run(c);
            let all = format!("backtrace {backtrace}, {transport} run {k}\n{}", out.both());
            assert_eq!(out.status.code(), Some(101), "{all}");
            let first = out
                .stderr
                .lines()
                .find(|l| l.starts_with("hypercomm: "))
                .unwrap_or_default();
            assert!(
                first.starts_with(&format!("hypercomm: rank {P} failed: panicked at "))
                    && first.contains(&format!("rank {P} panics on purpose"))
                    && first.contains("exit code 101"),
                "{all}"
            );
        }
    }
}

/// A deadlock of rank processes (every rank receives from its right
/// neighbour, nobody sends), with no timeout set: every rank reports it
/// within seconds, naming what it and every other rank waits for, over
/// TCP (where the ranks must ask each other) as over shared memory, and
/// the job ends.
#[test]
fn a_deadlock_of_processes_is_reported_by_every_rank() {
    const N: usize = 3;
    for transport in ["tcp", "shm"] {
        let mut c = launcher();
        c.env("HYPERCOMM_TIMEOUT", "")
            .args([
                "-n",
                &N.to_string(),
                "--timeout",
                "50",
                "--transport",
                transport,
            ])
            .arg(example_bin("faults"))
            .arg("deadlock");
        let out = run(c);
        let all = format!("{transport}:\n{}", out.both());
        assert_every_rank_reports_the_deadlock(&out, N, |r| format!("[{r}] "), &all);
        assert!(out.elapsed < Duration::from_secs(20), "{all}");
    }
}

#[test]
fn abort_is_printed_and_ends_every_rank() {
    let mut c = launcher();
    c.args(["-n", "4", "--timeout", "50"])
        .arg(example_bin("faults"))
        .args(["abort", "1"]);
    let out = run(c);
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr
            .contains("rank 1 aborted the job: rank 1 gives up: the matrix is singular"),
        "{}",
        out.both()
    );
    for r in [0, 2, 3] {
        assert!(
            out.stdout.contains(&format!(
                "[{r}] rank {r} ended with Aborted {{ rank: Node(1), message: \"rank 1 gives up: the matrix is singular\" }}"
            )),
            "rank {r}:\n{}",
            out.both()
        );
    }
    assert!(out.elapsed < Duration::from_secs(20), "{:?}", out.elapsed);
    for pid in pids_in(&out.stdout) {
        assert!(!pid_alive(pid), "process {pid} was left behind");
    }
}

/// Ctrl-C, SIGTERM and SIGHUP to the launcher stop the whole job; it exits
/// with 128 + the signal (the shell's convention: 130 after Ctrl-C) and
/// says which signal stopped it. Nothing is left running.
#[test]
fn ctrl_c_stops_the_whole_job() {
    for (sig, name, code) in [
        ("-INT", "SIGINT", 130),
        ("-TERM", "SIGTERM", 143),
        ("-HUP", "SIGHUP", 129),
    ] {
        let mut c = launcher();
        c.args(["-n", "3"])
            .arg(example_bin("faults"))
            .args(["wait-file", "/nonexistent/never"]);
        let mut live = Live::start(c);
        for r in 0..3 {
            live.wait_for(&format!("[{r}] rendezvous"));
        }
        let pid = live.child.id();
        Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap();
        let (status, stdout, stderr) = live.finish();
        assert_eq!(status.code(), Some(code), "{sig}: {stderr}");
        assert!(
            stderr.contains(&format!("interrupted by signal {name}")),
            "{sig}: {stderr}"
        );
        let pids: Vec<u32> = stdout
            .lines()
            .filter_map(|l| l.split("] process ").nth(1))
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        assert_eq!(pids.len(), 3, "{sig}: {stdout}");
        for p in pids {
            assert!(!pid_alive(p), "{sig}: process {p} was left behind");
        }
    }
}

/// A rank started through a shell that does not `exec` it (`sh -c 'prog;
/// true'`): --timeout stops the shell, the launcher ends with 124 although
/// the program it left behind still holds its output and its connection,
/// and that program ends with the launcher.
#[test]
fn timeout_ends_a_job_whose_ranks_left_their_program_behind() {
    let prog = example_bin("faults");
    let script = format!(
        "{} wait-file /nonexistent/never & echo pid $!; wait",
        prog.display()
    );
    let mut c = launcher();
    c.args(["-n", "2", "--timeout", "3", "sh", "-c", &script]);
    let t = Instant::now();
    let out = run(c);
    let took = t.elapsed();
    let pids: Vec<i32> = pids_in(&out.stdout).iter().map(|&p| p as i32).collect();
    common::procs::gone_within(&pids, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(124), "{}", out.both());
    assert_eq!(pids.len(), 2, "{}", out.both());
    assert!(
        took < Duration::from_secs(15),
        "took {took:?}: {}",
        out.both()
    );
}

/// `hypercomm sim run` stops its program on SIGTERM or SIGINT, as the
/// launcher stops its ranks, and exits with 128 + the signal; nothing is
/// left running.
#[test]
fn signals_to_sim_run_stop_its_program() {
    for (sig, code) in [("-TERM", 143), ("-INT", 130)] {
        let mut c = Command::new(hypercomm_bin());
        c.args(["sim", "run", "sh", "-c", "echo pid $$; exec sleep 60"]);
        let mut live = Live::start(c);
        let line = live.wait_for("pid ");
        let pid: u32 = line.trim_start_matches("pid ").trim().parse().unwrap();
        assert!(pid_alive(pid), "{sig}: {line}");
        Command::new("kill")
            .args([sig, &live.child.id().to_string()])
            .status()
            .unwrap();
        let (status, _, stderr) = live.finish();
        assert_eq!(status.code(), Some(code), "{sig}: {stderr}");
        assert!(stderr.contains("interrupted"), "{sig}: {stderr}");
        let gone = Instant::now() + Duration::from_secs(5);
        while pid_alive(pid) && Instant::now() < gone {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !pid_alive(pid),
            "{sig}: the program (pid {pid}) is still running"
        );
    }
}

#[test]
fn a_rank_that_exits_with_an_error_is_named() {
    // A node program that is not a hypercomm program at all and fails.
    let mut c = launcher();
    c.args(["-n", "2", "sh", "-c", "exit $((HYPERCOMM_RANK + 5))"]);
    let out = run(c);
    assert!(!out.status.success());
    assert!(
        out.stderr.contains("rank 0 exited with code 5")
            || out.stderr.contains("rank 1 exited with code 6"),
        "{}",
        out.both()
    );
}

#[test]
fn a_process_that_never_joins_is_reported() {
    // `true` exits 0 without calling init: the job never formed, and the
    // launcher must not report success.
    let mut c = launcher();
    c.args(["-n", "2", "true"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(1), "{}", out.both());
    assert!(
        out.stderr.contains("exited without joining the job"),
        "{}",
        out.both()
    );
}

// ------------------------------------------------------------- security

/// Connects to `addr` and tries to join without the secret.
fn foreign_client(addr: &str) {
    // 1. Garbage.
    let mut s = TcpStream::connect(addr).expect("connecting to the rendezvous");
    let _ = s.write_all(b"GET / HTTP/1.0\r\n\r\n-------------------------------------");
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 64];
    assert!(
        matches!(s.read(&mut buf), Ok(0) | Err(_)),
        "garbage must get nothing back"
    );
    // 2. A well-formed greeting and a forged proof.
    let mut s = TcpStream::connect(addr).unwrap();
    let mut hello = b"HCAUTH1\0".to_vec();
    hello.extend_from_slice(&[7u8; 32]);
    s.write_all(&hello).unwrap();
    let mut reply = [0u8; 64];
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.read_exact(&mut reply)
        .expect("the server proves itself first");
    let mut forged = 0u32.to_le_bytes().to_vec();
    forged.extend_from_slice(&[0u8; 32]);
    s.write_all(&forged).unwrap();
    assert!(
        matches!(s.read(&mut buf), Ok(0) | Err(_)),
        "a forged proof is refused"
    );
}

#[test]
fn foreign_clients_are_refused_and_the_job_completes() {
    let dir = std::env::temp_dir().join(format!("hypercomm-foreign-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let mut c = launcher();
    c.args(["-n", "3", "--timeout", "50"])
        .arg(example_bin("faults"))
        .arg("wait-file")
        .arg(&dir);
    let mut live = Live::start(c);
    let line = live.wait_for("[0] rendezvous ");
    let addr = line.rsplit(' ').next().unwrap().to_string();
    foreign_client(&addr);
    std::fs::write(&dir, b"go").unwrap();
    let (status, stdout, stderr) = live.finish();
    let _ = std::fs::remove_file(&dir);
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("refused a rendezvous connection"),
        "{stderr}"
    );
    assert!(stdout.contains("[0] token 3"), "{stdout}");
}

// ------------------------------------------------- distinct addresses

fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", cmd])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Two network namespaces joined by a veth pair (10.77.x.1 and 10.77.x.2);
/// removed on drop.
struct Netns {
    a: String,
    b: String,
}

impl Netns {
    fn create() -> Option<Netns> {
        let id = std::process::id() % 10000;
        let (a, b) = (format!("hca{id}"), format!("hcb{id}"));
        let (va, vb) = (format!("hcva{id}"), format!("hcvb{id}"));
        let net = format!("10.77.{}", id % 250);
        let ok = sh(&format!("ip netns add {a}"))
            && sh(&format!("ip netns add {b}"))
            && sh(&format!(
                "ip link add {va} netns {a} type veth peer name {vb} netns {b}"
            ))
            && sh(&format!("ip -n {a} addr add {net}.1/24 dev {va}"))
            && sh(&format!("ip -n {b} addr add {net}.2/24 dev {vb}"))
            && sh(&format!(
                "ip -n {a} link set {va} up && ip -n {a} link set lo up"
            ))
            && sh(&format!(
                "ip -n {b} link set {vb} up && ip -n {b} link set lo up"
            ));
        let ns = Netns { a, b };
        ok.then_some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        sh(&format!("ip netns del {}", self.a));
        sh(&format!("ip netns del {}", self.b));
    }
}

/// TCP between distinct addresses: in two network namespaces joined by a
/// veth pair when `ip netns` works (root, as in CI), else between
/// 127.0.0.2 and 127.0.0.3 on loopback. Ranks alternate between the two.
///
/// The namespaces are two "hosts" that the launcher reaches with a custom
/// `--ssh` command entering the host's namespace instead of logging in
/// (Open MPI's `plm_rsh_agent` in spirit): the launcher's own remote-start
/// path, with the secret on stdin and the rank watching it.
#[test]
fn tcp_across_distinct_addresses() {
    let faults = example_bin("faults");
    if let Some(ns) = Netns::create() {
        let id = std::process::id() % 10000;
        let net = format!("10.77.{}", id % 250);
        // `agent HOST COMMAND`: run COMMAND in HOST's namespace, as ssh
        // would run it on HOST.
        let agent = std::env::temp_dir().join(format!("hypercomm-netns-agent-{id}"));
        std::fs::write(
            &agent,
            format!(
                "#!/bin/sh\ncase \"$1\" in {net}.1) ns={};; {net}.2) ns={};; *) echo \"no host $1\" >&2; exit 255;; esac\necho \"in $ns\"\nexec ip netns exec $ns sh -c \"$2\"\n",
                ns.a, ns.b
            ),
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns.a])
            .arg(hypercomm_bin())
            .args(["run", "-n", "4", "--timeout", "50", "--ssh"])
            .arg(&agent)
            .arg("--hosts")
            .arg(format!("{net}.1,{net}.2"))
            .arg(&faults)
            .arg("where")
            .env("HYPERCOMM_TIMEOUT", "30");
        let out = run(c);
        let _ = std::fs::remove_file(&agent);
        assert!(out.status.success(), "{}", out.both());
        for r in 0..4 {
            let ns = if r % 2 == 0 { &ns.a } else { &ns.b };
            assert!(
                out.stdout.contains(&format!("[{r}] in {ns}")),
                "{}",
                out.both()
            );
            // The launcher listens where it reaches the first host.
            assert!(
                out.stdout
                    .contains(&format!("[{r}] bind  rendezvous {net}.1:")),
                "{}",
                out.both()
            );
        }
        assert!(out.stdout.contains("[0] token 4"), "{}", out.both());
        eprintln!("ran across network namespaces {} and {}", ns.a, ns.b);
    } else {
        eprintln!("ip netns unavailable (not root?): using 127.0.0.2 and 127.0.0.3");
        let out = where_job(&["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"]);
        assert!(out.status.success(), "{}", out.both());
        assert!(
            out.stdout
                .contains("[1] bind 127.0.0.3 rendezvous 127.0.0.2:"),
            "{}",
            out.both()
        );
        assert!(out.stdout.contains("[0] token 4"), "{}", out.both());
    }
}

/// `faults where` (each rank prints where it listens, then passes a token
/// around) launched with `args`.
fn where_job(args: &[&str]) -> Output {
    let mut c = launcher();
    c.args(args)
        .args(["--timeout", "50"])
        .arg(example_bin("faults"))
        .arg("where");
    run(c)
}

/// A hostfile's slot counts (Open MPI's `slots=N` and MPICH's `host:N`,
/// also on `--hosts`; the options under mpirun's names too) place that
/// many consecutive ranks on a host; ranks beyond the slots start again
/// from the first host. A bad count is named
/// with its file and line, and nothing starts.
#[test]
fn hostfile_slots_place_consecutive_ranks() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hc-hostfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts");
    let path = file.to_str().unwrap();
    let placed = |out: &Output, ips: &[u8]| {
        assert!(out.status.success(), "{}", out.both());
        for (rank, ip) in ips.iter().enumerate() {
            let want = format!("[{rank}] bind 127.0.0.{ip} rendezvous");
            assert!(out.stdout.contains(&want), "{want}:\n{}", out.both());
        }
        let token = format!("[0] token {}", ips.len());
        assert!(out.stdout.contains(&token), "{}", out.both());
    };
    std::fs::write(&file, "# two hosts\n127.0.0.2 slots=3\n127.0.0.3:1 # one\n").unwrap();
    placed(
        &where_job(&["-n", "5", "--hostfile", path]),
        &[2, 2, 2, 3, 2],
    );
    // The same counts on the command line (`mpirun --host`'s form).
    let out = where_job(&["-n", "3", "-H", "127.0.0.3:2,127.0.0.2"]);
    placed(&out, &[3, 3, 2]);

    std::fs::write(&file, "127.0.0.2 slots=3\n127.0.0.3 slots=none\n").unwrap();
    let out = where_job(&["-n", "2", "--machinefile", path]);
    assert!(!out.status.success(), "{}", out.both());
    let want = format!("{path}: line 2: slots=none");
    assert!(out.stderr.contains(&want), "{want}:\n{}", out.both());
    assert!(!out.stdout.contains("bind"), "{}", out.both());
    let _ = std::fs::remove_dir_all(&dir);
}

// ----------------------------------------------------------- Slurm, spawn

/// A faked Slurm step of 3 tasks on loopback runs `hello` (no host: every
/// task prints its own greeting).
#[test]
fn slurm_bootstrap_without_the_launcher() {
    let hello = example_bin("hello");
    let job = (std::process::id() as u64 * 7919 + unix_ms() as u64) % 1_000_000;
    let kids: Vec<Child> = (0..3)
        .map(|i| {
            Command::new(&hello)
                .env_remove("HYPERCOMM_RANK")
                .env("SLURM_PROCID", i.to_string())
                .env("SLURM_NTASKS", "3")
                .env("SLURM_STEP_NODELIST", "localhost")
                .env("SLURM_JOB_ID", job.to_string())
                .env("SLURM_STEP_ID", "0")
                .env("HYPERCOMM_TIMEOUT", "30")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let end = Instant::now() + LIMIT;
    let mut lines = Vec::new();
    for mut k in kids {
        while k.try_wait().unwrap().is_none() {
            assert!(Instant::now() < end, "a Slurm task hung");
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        lines.extend(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string),
        );
    }
    lines.sort();
    let want: Vec<String> = hello_lines(3, true)
        .into_iter()
        .map(|l| l.split_once("] ").unwrap().1.to_string())
        .collect();
    let mut want = want;
    want.sort();
    assert_eq!(lines, want);
}

/// A host program started by hand spawns its nodes (PICL load0).
#[test]
fn spawn_starts_nodes_from_a_host_program() {
    let mut c = Command::new(example_bin("spawn"));
    c.arg("3").env("HYPERCOMM_TIMEOUT", "30");
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    let want = [
        "hello from node 0 of 3: token 0 -> 0",
        "hello from node 1 of 3: token 0 -> 1",
        "hello from node 2 of 3: token 1 -> 3",
        "token after one lap: 3",
    ];
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        want,
        "{}",
        out.both()
    );
}

// ----------------------------------------------------------------- help

#[test]
fn run_help_documents_every_option() {
    let mut c = Command::new(hypercomm_bin());
    c.args(["run", "--help"]);
    let out = run(c);
    assert!(out.status.success());
    for opt in [
        "-n, --np",
        "--host",
        "--transport",
        "--hosts",
        "--hostfile",
        "--interface",
        "--timeout",
        "--no-prefix",
        "-x <NAME[=VALUE]>",
        "PROG",
    ] {
        assert!(
            out.stdout.contains(opt),
            "{opt} missing from:\n{}",
            out.stdout
        );
    }
}

// ---------------------------------------------------------------- tracing

/// `HYPERCOMM_TRACE` traces an unchanged program run as processes: each
/// process writes its raw stream, `hypercomm trace convert` merges them, and
/// the merged PICL file has every node's records with each receive after
/// its send.
#[test]
fn tracing_processes_over_tcp_and_shm() {
    let hello = example_bin("hello");
    for transport in ["tcp", "shm"] {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hc-proc-trace-{}-{transport}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("job");
        let mut c = launcher();
        c.args(["-n", "3", "--transport", transport])
            .arg(&hello)
            .env("HYPERCOMM_TRACE", &base)
            .env("HYPERCOMM_TRACE_LEVEL", "3,3,3");
        let out = run(c);
        assert!(
            out.status.success(),
            "traced hello over {transport}:\n{}",
            out.both()
        );
        common::procs::check_ring_trace(&dir, 3, transport);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `faults choices` launched with `args`: each rank's algorithm choices,
/// collective by collective and size by size, in rank order, and the cores
/// each says it may use. Asserts the job succeeded and every rank's
/// collectives matched a serial fold.
fn choices_job(args: &[&str], extra: &[&str]) -> (Vec<String>, Vec<usize>) {
    let mut c = launcher();
    c.args(args)
        .args(["--timeout", "50"])
        .arg(example_bin("faults"))
        .arg("choices")
        .args(extra);
    let out = run(c);
    assert!(out.status.success(), "{}", out.both());
    let mut rows: Vec<(usize, usize, String)> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let rest = l.split("] rank ").nth(1)?;
            let (rank, rest) = rest.split_once(" cores ")?;
            let (cores, choices) = rest.split_once(" choices ")?;
            Some((rank.parse().ok()?, cores.parse().ok()?, choices.to_string()))
        })
        .collect();
    rows.sort();
    let n = rows.len();
    for r in 0..n {
        assert!(
            out.stdout.contains(&format!("] rank {r} sums ok")),
            "rank {r}: {}",
            out.both()
        );
    }
    let cores = rows.iter().map(|r| r.1).collect();
    (rows.into_iter().map(|r| r.2).collect(), cores)
}

/// Collective selection must choose alike on every rank, or the ranks run
/// different schedules of one call: a false mismatch, a hang or wrong
/// data. Its inputs are agreed when the job starts, so ranks on hosts with
/// different rank counts (3 on 127.0.0.1, 1 on 127.0.0.2) and ranks that
/// may use different numbers of cores (rank 0 pinned to one) still choose
/// the same algorithm for every collective at every size, and get the
/// serial fold's answers.
#[test]
fn ranks_choose_the_same_algorithms_whatever_their_host_or_cores() {
    let (choices, _) = choices_job(
        &[
            "-n",
            "4",
            "--transport",
            "tcp",
            "--hosts",
            "127.0.0.1:3,127.0.0.2:1",
        ],
        &[],
    );
    assert_eq!(choices.len(), 4);
    for (r, c) in choices.iter().enumerate() {
        assert_eq!(c, &choices[0], "rank {r} chose differently from rank 0");
    }
    let machine = std::thread::available_parallelism().map_or(1, |c| c.get());
    for kind in ["shm", "tcp"] {
        let (choices, cores) = choices_job(&["-n", "2", "--transport", kind], &["pin"]);
        assert_eq!(choices.len(), 2, "{kind}");
        assert_eq!(cores[0], 1, "{kind}: rank 0 runs on one core");
        if machine >= 2 {
            assert!(cores[1] >= 2, "{kind}: rank 1 is not pinned");
        }
        assert_eq!(choices[1], choices[0], "{kind}: rank 1 chose differently");
    }
}

#[test]
fn threads_the_system_refuses_end_the_job_with_an_error_not_a_hang() {
    // Without a launcher `hypercomm::run(n, …)` starts n threads. Under an
    // address-space limit the system refuses some of them: the ranks
    // already started must not wait for ever for the ones that never ran,
    // and the error must say which rank could not start and what to do.
    let faults = example_bin("faults");
    let mut cmd = Command::new("timeout");
    cmd.args([
        "120",
        "sh",
        "-c",
        "ulimit -v 300000; exec \"$0\" threads 2000",
    ])
    .arg(&faults);
    let out = run(cmd);
    assert!(out.status.success(), "{}", out.both());
    assert!(
        out.stdout
            .contains("threads error: I/O error in run: could not start the thread of rank"),
        "{}",
        out.both()
    );
    assert!(out.stdout.contains("run fewer ranks"), "{}", out.both());
    // The same program with threads to spare: the allreduce is the serial
    // sum of the ranks.
    let out = run({
        let mut c = Command::new(&faults);
        c.args(["threads", "50"]);
        c
    });
    assert!(
        out.stdout.contains(&format!("threads sum {}", 49 * 50 / 2)),
        "{}",
        out.both()
    );
}
