//! Running real processes from tests: the `hypercomm` launcher binary and
//! the example programs (built on demand into this test's target directory
//! and profile, as `tests/examples.rs` does), each under a time limit; and
//! the [`Processes`] launcher, which runs the conformance suite's test
//! bodies as processes of a TCP or shared-memory job.
//!
//! How [`Processes`] works: the test (in the parent test process) starts a
//! job of 16 nodes and a host, all copies of this test binary filtered to
//! the same test, with the library's [`hypercomm::launch::Processes`]. Every
//! process of that job runs the whole test body in lockstep; each
//! `launch(n, f)` inside it becomes a sub-job: the first `n` world nodes
//! (and the world's host, for `launch_with_host`) split off a communicator
//! that looks like a fresh world and run `f`; then all processes exchange
//! the results (serde), so every process continues the body with the same
//! values. Randomised bodies use the same proptest seed in every process
//! (`PROPTEST_RNG_SEED`).

use super::Launcher;
use hypercomm::{BoxError, Comm, Rank, TransportKind};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `target/<profile>`: the directory above this test's `deps/`.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/")
        .to_path_buf()
}

/// Build the launcher and the examples once per test process when cargo
/// runs us.
fn build() -> &'static Result<(), String> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let Ok(cargo) = std::env::var("CARGO") else {
            return Ok(());
        };
        let profile = profile_dir();
        let target_dir = profile.parent().expect("target/<profile> has a parent");
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--quiet",
            "--offline",
            "-p",
            "hypercomm-cli",
            "-p",
            "hypercomm",
            "--bins",
            "--examples",
        ])
        .arg("--target-dir")
        .arg(target_dir);
        match profile.file_name().and_then(|s| s.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
        }
        let out = cmd
            .output()
            .map_err(|e| format!("could not start cargo: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`cargo build` of the launcher and examples failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    })
}

fn built(path: PathBuf) -> PathBuf {
    if let Err(e) = build() {
        panic!("{e}");
    }
    assert!(
        path.is_file(),
        "{} not found: build the launcher and examples (same profile as the tests) first",
        path.display()
    );
    path
}

/// The `hypercomm` launcher binary.
pub(crate) fn hypercomm_bin() -> PathBuf {
    built(profile_dir().join(format!("hypercomm{}", std::env::consts::EXE_SUFFIX)))
}

/// An example binary.
pub(crate) fn example_bin(name: &str) -> PathBuf {
    built(
        profile_dir()
            .join("examples")
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX)),
    )
}

/// What a finished process produced.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

impl Output {
    /// Both streams, for assertion messages.
    pub(crate) fn both(&self) -> String {
        format!(
            "status {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Run `cmd` to the end with its output captured; kill it (and fail) after
/// `limit`.
pub(crate) fn run_limited(mut cmd: Command, limit: Duration) -> Output {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for the child") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let (o, e) = (t_out.join().unwrap(), t_err.join().unwrap());
            panic!(
                "{cmd:?} did not finish within {limit:?}\n--- stdout ---\n{o}\n--- stderr ---\n{e}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        elapsed: start.elapsed(),
    }
}

/// Node processes of every conformance job (the largest test needs 16).
const POOL: usize = 16;
/// A whole conformance test as processes must end within this.
const TEST_LIMIT: Duration = Duration::from_secs(300);

/// Which transport a [`Processes`] job uses; its name is also the name of
/// the test module that instantiates the suite with it.
pub(crate) trait ProcTransport {
    /// The kind.
    const KIND: TransportKind;
    /// A foreign library's transport (see `Launcher::LIBRARY_TRANSPORT`).
    const LIBRARY: bool = false;
}

/// TCP between the processes.
pub(crate) struct Tcp;
impl ProcTransport for Tcp {
    const KIND: TransportKind = TransportKind::Tcp;
}

/// Shared memory between the processes.
pub(crate) struct Shm;
impl ProcTransport for Shm {
    const KIND: TransportKind = TransportKind::Shm;
}

/// The site's MPI between the processes (`mpirun` starts them; a test
/// binary built with the `mpi` feature).
pub(crate) struct Mpi;
impl ProcTransport for Mpi {
    const KIND: TransportKind = TransportKind::Mpi;
    const LIBRARY: bool = true;
}

/// Processes started by `hypercomm run` over transport `T` (TCP by
/// default): a pool of 16 nodes and a host, each `launch` a sub-job split
/// off it. With `WORLD` = `N` > 0 ([`World`]), a job of exactly `N` nodes
/// (and a host if `HOST`) whose bodies run on the job's world
/// communicator itself: the world's context, which over MPI carries
/// point-to-point messages as MPI's own (a path of its own). For the
/// bodies whose every `launch` has `N` nodes (and a host if `HOST`);
/// instantiated in a module `<kind>_world<N>` (`<kind>_world<N>_host`).
pub(crate) struct Processes<
    T: ProcTransport = Tcp,
    const WORLD: usize = 0,
    const HOST: bool = false,
>(std::marker::PhantomData<T>);

/// [`Processes`] on a world of `N` nodes (and a host if `HOST`).
pub(crate) type World<T, const N: usize, const HOST: bool = false> = Processes<T, N, HOST>;

thread_local! {
    static WORLD: RefCell<Option<Comm>> = const { RefCell::new(None) };
    /// Whether the bodies run on the world itself ([`World`]).
    static ON_WORLD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn world() -> Comm {
    WORLD.with(|w| {
        w.borrow()
            .clone()
            .expect("a conformance body runs inside its job (Launcher::test)")
    })
}

const RESULTS: u32 = 77;

/// Every process contributes `mine`; all get everyone's, in world order
/// (nodes, then the host).
fn exchange(world: &Comm, mine: Vec<u8>) -> hypercomm::Result<Vec<Vec<u8>>> {
    let mut members: Vec<Rank> = (0..world.size()).map(Rank::Node).collect();
    if world.has_host() {
        members.push(Rank::Host);
    }
    let root = Rank::Node(0);
    if world.me() == root {
        let mut all = vec![mine];
        for &m in &members[1..] {
            all.push(world.recv_vec::<u8>(m, RESULTS)?.0);
        }
        let packed = postcard::to_stdvec(&all).expect("encoding results");
        for &m in &members[1..] {
            world.send(&packed, m, RESULTS)?;
        }
        Ok(all)
    } else {
        world.send(&mine, root, RESULTS)?;
        let (packed, _) = world.recv_vec::<u8>(root, RESULTS)?;
        Ok(postcard::from_bytes(&packed).expect("decoding results"))
    }
}

type Outcome<R> = Option<Result<R, String>>;

/// Run `f` on the sub-job (when this process is in it) and share results.
fn sub_job<R: Serialize + DeserializeOwned>(
    n: usize,
    with_host: bool,
    f: impl FnOnce(&Comm) -> Result<R, String>,
) -> hypercomm::Result<(Option<R>, Vec<R>)> {
    let world = world();
    let mine: Outcome<R> = if ON_WORLD.with(|w| w.get()) {
        assert!(
            n == world.size() && with_host == world.has_host(),
            "a world job of {} nodes (host: {}) runs only bodies of as many",
            world.size(),
            world.has_host()
        );
        let mine = Some(f(&world));
        // Every body has ended before results travel on the world, so
        // that no receive for any message of a body takes one.
        if with_host {
            world.barrier_with_host()?;
        } else {
            world.barrier()?;
        }
        mine
    } else {
        assert!(
            n <= world.size(),
            "a conformance job of {n} nodes needs a larger pool"
        );
        let color = match world.me() {
            Rank::Node(r) if r < n => Some(0),
            Rank::Host if with_host => Some(0),
            _ => None,
        };
        let key = match world.me() {
            Rank::Node(r) => r as i64,
            Rank::Host => i64::MAX,
        };
        world.split(color, key)?.map(|c| f(&c))
    };
    let bytes = postcard::to_stdvec(&mine).expect("encoding a result");
    let all = exchange(&world, bytes)?;
    let mut nodes = Vec::new();
    let mut host = None;
    for (i, b) in all.iter().enumerate() {
        let o: Outcome<R> = postcard::from_bytes(b).expect("decoding a result");
        let rank = if i < world.size() {
            Rank::Node(i)
        } else {
            Rank::Host
        };
        match o {
            None => {}
            Some(Err(message)) => {
                return Err(hypercomm::Error::RankFailed {
                    rank,
                    message,
                    source: None,
                })
            }
            Some(Ok(v)) if rank == Rank::Host => host = Some(v),
            Some(Ok(v)) => nodes.push(v),
        }
    }
    Ok((host, nodes))
}

/// Run test `name`'s `body` in a job over `T`: the pool (16 nodes and a
/// host; each `launch` a split sub-job), or with `world` = `Some((n,
/// host))` a job of exactly `n` nodes (and a host if `host`) whose bodies
/// run on the world itself (test module `<kind>_world<n>`, with a host
/// `<kind>_world<n>_host`).
fn job_test<T: ProcTransport>(name: &'static str, body: fn(), world: Option<(usize, bool)>) {
    let module = match world {
        None => T::KIND.to_string(),
        Some((n, false)) => format!("{}_world{n}", T::KIND),
        Some((n, true)) => format!("{}_world{n}_host", T::KIND),
    };
    let filter = format!("{module}::{name}");
    // In a copy of this binary (a rank of the job): the body runs with
    // the world the job gives, in lockstep with the others.
    let in_world = |w: &Comm| -> Result<(), String> {
        WORLD.with(|x| *x.borrow_mut() = Some(w.clone()));
        ON_WORLD.with(|x| x.set(world.is_some()));
        body();
        WORLD.with(|x| x.borrow_mut().take());
        Ok(())
    };
    let job = || {
        let job = hypercomm::launch::Processes::new(world.map_or(POOL, |(n, _)| n))
            .transport(T::KIND)
            .key(filter.clone())
            .args([
                filter.as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PROPTEST_RNG_SEED", "20240601")
            .env("HYPERCOMM_TIMEOUT", "60")
            .timeout(TEST_LIMIT);
        match world {
            Some((_, false)) => job.run(in_world).map(|_| ()),
            _ => job.run_with_host(in_world, in_world).map(|_| ()),
        }
    };
    if hypercomm::launch::Processes::is_copy() {
        // Never returns in the copy started for this test.
        let _ = job();
        return;
    }
    // One job of 17 processes at a time is plenty for a small machine.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let r = job();
    assert!(
        r.is_ok(),
        "the job running {name} over {} failed after {:?}: {}",
        T::KIND,
        started.elapsed(),
        r.err().map(|e| e.to_string()).unwrap_or_default()
    );
}

impl<T: ProcTransport, const WORLD: usize, const HOST: bool> Launcher
    for Processes<T, WORLD, HOST>
{
    const LIBRARY_TRANSPORT: bool = T::LIBRARY;

    fn test(name: &'static str, body: fn()) {
        job_test::<T>(name, body, (WORLD > 0).then_some((WORLD, HOST)))
    }

    fn run<R, E, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
    where
        R: Send + Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> Result<R, E> + Sync,
    {
        sub_job(n, false, |c| f(c).map_err(|e| e.into().to_string())).map(|(_, v)| v)
    }

    fn run_with_host<H, R, EH, EN, FH, FN>(
        n: usize,
        host_fn: FH,
        node_fn: FN,
    ) -> hypercomm::Result<(H, Vec<R>)>
    where
        H: Send + Serialize + DeserializeOwned,
        R: Send + Serialize + DeserializeOwned,
        EH: Into<BoxError>,
        EN: Into<BoxError>,
        FH: FnOnce(&Comm) -> Result<H, EH> + Send,
        FN: Fn(&Comm) -> Result<R, EN> + Sync,
    {
        #[derive(serde::Serialize, serde::Deserialize)]
        enum Either<H, R> {
            H(H),
            R(R),
        }
        let (h, nodes) = sub_job::<Either<H, R>>(n, true, |c| {
            if c.is_host() {
                host_fn(c).map(Either::H).map_err(|e| e.into().to_string())
            } else {
                node_fn(c).map(Either::R).map_err(|e| e.into().to_string())
            }
        })?;
        let host = match h {
            Some(Either::H(h)) => h,
            _ => unreachable!("the host's result is the host's"),
        };
        let nodes = nodes
            .into_iter()
            .map(|x| match x {
                Either::R(r) => r,
                Either::H(_) => unreachable!("nodes return node results"),
            })
            .collect();
        Ok((host, nodes))
    }
}

/// Run example `name` with `args` as a process (60 s limit, 30 s operation
/// timeout inside it).
pub(crate) fn run_example(name: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(example_bin(name));
    cmd.args(args)
        .env("HYPERCOMM_TIMEOUT", "30")
        .env_remove("HYPERCOMM_RANK");
    run_limited(cmd, Duration::from_secs(60))
}

/// Run an example that must succeed; return its stdout.
pub(crate) fn stdout_of(name: &str, args: &[&str]) -> String {
    let out = run_example(name, args);
    assert!(
        out.status.success(),
        "`{name} {}` failed:\n{}",
        args.join(" "),
        out.both()
    );
    out.stdout
}

/// Rank and text of an output line with a rank prefix: ours and MPICH's
/// `[R] text`, Open MPI's `--tag-output` `[JOB,R]<stdout>:text`.
pub(crate) fn rank_line(line: &str) -> Option<(usize, &str)> {
    let (tag, text) = line.strip_prefix('[')?.split_once(']')?;
    let rank = tag.rsplit(',').next()?.trim().parse().ok()?;
    let text = text
        .strip_prefix("<stdout>:")
        .or_else(|| text.strip_prefix(' '))
        .unwrap_or(text);
    Some((rank, text))
}

/// Start `cmd` running `faults victim V` on `n` ranks with rank-prefixed
/// output, and wait (within `limit`) until every rank has printed its pid
/// and the victim says it is ready. Returns the launcher, the ranks' pids
/// in rank order and the rest of its standard output, line by line.
pub(crate) fn victim_job(
    mut cmd: Command,
    n: usize,
    victim: usize,
    limit: Duration,
) -> (
    std::process::Child,
    Vec<i32>,
    std::sync::mpsc::Receiver<String>,
) {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the launcher");
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let start = Instant::now();
    let mut pids = vec![None; n];
    let mut ready = false;
    let mut seen = Vec::new();
    while pids.iter().any(Option::is_none) || !ready {
        let line = rx
            .recv_timeout(limit.saturating_sub(start.elapsed()))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("the job did not get ready: {seen:?}")
            });
        if let Some((r, text)) = rank_line(&line) {
            if let Some(p) = text.strip_prefix("pid ") {
                if r < n {
                    pids[r] = Some(p.trim().parse::<i32>().expect("a pid"));
                }
            }
            ready |= r == victim && text == "victim ready";
        }
        seen.push(line);
    }
    (child, pids.into_iter().flatten().collect(), rx)
}

/// Whether process `pid` is running (a zombie has exited; only its
/// parent's wait is missing).
pub(crate) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Wait until none of `pids` is running; fail after `limit`.
pub(crate) fn gone_within(pids: &[i32], limit: Duration) {
    let end = Instant::now() + limit;
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            Instant::now() < end,
            "rank processes still there after {limit:?}: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Check the traces of `hello` on `n` ranks written as `DIR/*.raw` (one
/// stream per process): `hypercomm trace convert` merges them, every node
/// opened its trace and the ring's messages are there. `what` names the
/// run in messages.
pub(crate) fn check_ring_trace(dir: &Path, n: usize, what: &str) {
    let transport = what;
    let mut raws: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "raw"))
        .collect();
    raws.sort();
    assert_eq!(
        raws.len(),
        n,
        "one raw stream per process over {transport}: {raws:?}"
    );
    let verbose = dir.join("job.verbose");
    let mut conv = Command::new(hypercomm_bin());
    conv.args(["trace", "convert"])
        .args(&raws)
        .arg("--to")
        .arg("picl-verbose")
        .arg("-o")
        .arg(&verbose);
    let out = run_limited(conv, Duration::from_secs(60));
    assert!(out.status.success(), "trace convert:\n{}", out.both());
    let text = std::fs::read_to_string(&verbose).unwrap();
    // Every node opened its trace, and the ring's messages are there:
    // each node sends one token (node 0 also receives the last one).
    for node in 0..n {
        assert!(
            text.lines()
                .any(|l| l.starts_with("trace_start") && l.contains(&format!("node {node} "))),
            "trace_start of node {node} over {transport}:\n{text}"
        );
    }
    let sends = text.lines().filter(|l| l.starts_with("send ")).count();
    // A receive that had to wait is written as recv_blocking + recv_waking.
    let recvs = text
        .lines()
        .filter(|l| l.starts_with("recv ") || l.starts_with("recv_waking "))
        .count();
    assert!(
        sends >= n && recvs >= n,
        "{sends} sends, {recvs} receives over {transport}:\n{text}"
    );
    // Without a host the program's only messages are the token's (type 0):
    // the library's own (each process's result to node 0) are not traced.
    let types: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("send "))
        .filter_map(|l| l.split(" type ").nth(1)?.split(' ').next())
        .collect();
    assert!(
        types.iter().all(|&t| t == "0"),
        "send types over {transport}: {types:?}\n{text}"
    );
}

/// Kill `pid` with SIGKILL and wait (within `limit`) for `child`, the job
/// it belongs to, to end. Returns its status and its standard error.
pub(crate) fn kill_and_wait(
    child: &mut std::process::Child,
    pid: i32,
    limit: Duration,
) -> (ExitStatus, String) {
    // SAFETY: kill(2) on a pid a rank of the job printed.
    let r = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(r, 0, "killing {pid}");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for the job") {
            break st;
        }
        assert!(
            start.elapsed() < limit,
            "the job did not end after the kill"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut err)
        .expect("reading stderr");
    (status, err)
}

/// The lines `hello` prints without a host for `n` nodes, sorted; with
/// the launcher's `[rank] ` prefixes when `prefixed`.
pub(crate) fn hello_lines(n: usize, prefixed: bool) -> Vec<String> {
    let pre = |r: usize| {
        if prefixed {
            format!("[{r}] ")
        } else {
            String::new()
        }
    };
    let mut token = 0u64;
    let mut v = Vec::new();
    for r in 0..n {
        let before = token;
        token += r as u64;
        v.push(format!(
            "{}hello from node {r} of {n}: token {before} -> {token}",
            pre(r)
        ));
    }
    v.push(format!(
        "{}token after one lap: {}",
        pre(0),
        n * (n - 1) / 2
    ));
    v.sort();
    v
}

/// The lines of `s`, sorted.
pub(crate) fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// What the `faults` example's `deadlock` scenario must print on each of
/// `n` ranks (every rank receives from its right neighbour with tag 9,
/// nobody sends): `rank R after MS ms: deadlock: …`, after `prefix(R)`
/// (a launcher's rank tag, or nothing), naming every rank's wait, within
/// five seconds.
pub(crate) fn assert_every_rank_reports_the_deadlock(
    out: &Output,
    n: usize,
    prefix: impl Fn(usize) -> String,
    all: &str,
) {
    assert!(!out.status.success(), "{all}");
    for r in 0..n {
        let line = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{}rank {r} after ", prefix(r))))
            .unwrap_or_else(|| panic!("rank {r} reported nothing: {all}"));
        let (ms, e) = line.split_once(" ms: ").expect("a time");
        assert!(e.starts_with("deadlock: "), "rank {r}: {all}");
        for q in 0..n {
            let waits = format!(
                "rank {q} is in recv, waiting for a message from rank {} with tag 9",
                (q + 1) % n
            );
            assert!(e.contains(&waits), "rank {r} does not say {waits:?}: {all}");
        }
        let ms: u64 = ms.parse().expect("milliseconds");
        assert!(ms < 5000, "rank {r} after {ms} ms: {all}");
    }
}
