//! A test program for the process tests (`tests/processes.rs`), started by
//! `hypercomm run`. The first argument picks a scenario:
//!
//! * `victim V`: every rank prints its pid; the nodes other than `V`
//!   repeatedly send to `V` and wait for its echo; after 50 echoes `V`
//!   prints `victim ready` and stops answering (the test then kills it).
//!   The others print `rank R detected <error> at <unix ms>` and exit 3.
//! * `abort A`: after a first exchange rank `A` aborts with a message; every
//!   other rank is blocked in a receive and prints how it ended, then exits
//!   4 (or 0 if its operation did not fail, which the test rejects).
//! * `wait-file PATH`: every rank prints its pid (`process N`) and the
//!   rendezvous address, then all
//!   wait until `PATH` exists (node 0 polls and then releases the others
//!   with a message), exchange a token around the ring and exit 0.
//! * `where`: prints the variables of the environment contract that say
//!   where the rank listens, then runs a ring.
//! * `chain V`: after a first ring, rank `V` prints `victim ready` and
//!   sleeps (the test kills it); every other rank R waits for a message
//!   from rank R+1 (mod n), so rank V-1 notices V's death itself and the
//!   others see a neighbour end because of it. Each prints
//!   `rank R detected <error> at <unix ms>` and exits 3.
//! * `panic P`: after a first ring, rank `P` panics; every other rank R
//!   waits for rank R+1 (mod n) and treats a failure as a program written
//!   from the manuals would: even ranks `expect` (and so panic too), odd
//!   ones return the error from `main` (exit code 1).
//! * `ssh`: prints whether it was started by an ssh server (`ssh yes`) and
//!   how many processes of this machine carry the job's secret in their
//!   arguments (`secret-in-args 0`, which the test demands), then runs a
//!   ring.
//!
//! * `choices [pin]`: every rank prints the cores it may use and the
//!   algorithm its collectives would choose, collective by collective and
//!   size by size (`rank R cores C choices N of DIGEST`, the choices in
//!   full on standard error), then checks an allreduce
//!   of 256 KiB and an allgather against a serial fold (`rank R sums ok`).
//!   With `pin`, rank 0 first runs itself again under `taskset -c 0`, so
//!   that the ranks differ in the cores they may use.
//!
//! * `threads N`, run without a launcher: `hypercomm::run` with `N`
//!   threads, each adding its rank in an allreduce; prints `threads sum S`
//!   or `threads error: <error>`, and exits 0 either way (the test limits
//!   the threads the process may start).
//!
//! Not a user example: it exists to be killed, aborted and probed.

use hypercomm::{Comm, Error, Rank, ANY_SOURCE};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn ring(comm: &Comm) -> hypercomm::Result<u64> {
    let (me, n) = (comm.rank(), comm.size());
    let mut t = [0u64];
    if n == 1 {
        return Ok(0);
    }
    if me == 0 {
        comm.send(&[1u64], 1, 9)?;
        comm.recv_into(&mut t, n - 1, 9)?;
    } else {
        comm.recv_into(&mut t, me - 1, 9)?;
        comm.send(&[t[0] + 1], (me + 1) % n, 9)?;
    }
    Ok(t[0])
}

fn victim(comm: &Comm, v: usize) -> i32 {
    let me = comm.rank();
    println!("pid {}", std::process::id());
    if me == v {
        for _ in 0..50 * (comm.size() - 1) {
            let (x, st) = comm.recv::<u64>(ANY_SOURCE, 1).expect("victim recv");
            comm.send(&[x], st.source, 2).expect("victim echo");
        }
        println!("victim ready");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let mut i = 0u64;
    loop {
        let r = comm
            .send(&[i], v, 1)
            .and_then(|_| comm.recv::<u64>(v, 2).map(|_| ()));
        if let Err(e) = r {
            println!("rank {me} detected {e:?} at {}", now_ms());
            return 3;
        }
        i += 1;
    }
}

fn abort(comm: &Comm, a: usize) -> i32 {
    let me = comm.rank();
    println!("pid {}", std::process::id());
    ring(comm).expect("first ring");
    if me == a {
        std::thread::sleep(Duration::from_millis(200));
        let e = comm.abort(&format!("rank {a} gives up: the matrix is singular"));
        println!("rank {me} aborted: {e}");
        return 4;
    }
    match comm.recv::<u8>(ANY_SOURCE, 5) {
        Ok(_) => {
            println!("rank {me} was not stopped by the abort");
            0
        }
        Err(e @ Error::Aborted { .. }) => {
            println!("rank {me} ended with {e:?}");
            4
        }
        Err(e) => {
            println!("rank {me} ended with another error {e:?}");
            5
        }
    }
}

fn chain(comm: &Comm, v: usize) -> i32 {
    let (me, n) = (comm.rank(), comm.size());
    println!("pid {}", std::process::id());
    ring(comm).expect("first ring");
    if me == v {
        println!("victim ready");
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    match comm.recv::<u64>((me + 1) % n, 7) {
        Ok(_) => {
            println!("rank {me} got a message nobody sent");
            5
        }
        Err(e) => {
            println!("rank {me} detected {e:?} at {}", now_ms());
            3
        }
    }
}

/// Every rank receives from its right neighbour, which never sends: a
/// deadlock, reported on every rank (with no timeout set) after the time
/// printed. Every rank then finishes cleanly (so that under `mpirun` the
/// first to exit with the error code stops none that has yet to print).
fn deadlock(comm: &Comm) -> i32 {
    let (me, n) = (comm.rank(), comm.size());
    ring(comm).expect("first ring");
    let t = std::time::Instant::now();
    match comm.recv::<u64>((me + 1) % n, 9) {
        Ok(_) => {
            println!("rank {me} got a message nobody sent");
            5
        }
        Err(e) => {
            println!("rank {me} after {} ms: {e}", t.elapsed().as_millis());
            6
        }
    }
}

fn panic_at(comm: &Comm, p: usize) -> i32 {
    let (me, n) = (comm.rank(), comm.size());
    ring(comm).expect("first ring");
    if me == p {
        std::thread::sleep(Duration::from_millis(50));
        panic!("rank {p} panics on purpose");
    }
    let got = comm.recv::<u64>((me + 1) % n, 7);
    if me % 2 == 0 {
        got.expect("a message from my neighbour");
        0
    } else {
        match got {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("rank {me}: {e}");
                1
            }
        }
    }
}

fn wait_file(comm: &Comm, path: &str) -> i32 {
    println!("process {}", std::process::id());
    println!(
        "rendezvous {}",
        std::env::var("HYPERCOMM_RENDEZVOUS").unwrap_or_default()
    );
    if comm.rank() == 0 {
        while !std::path::Path::new(path).exists() {
            std::thread::sleep(Duration::from_millis(20));
        }
        for r in 1..comm.size() {
            comm.send(&[1u8], r, 3).expect("release");
        }
    } else {
        comm.recv::<u8>(0, 3).expect("released");
    }
    let t = ring(comm).expect("ring");
    println!("token {t}");
    0
}

/// How many processes have `secret` in their command line.
fn secret_in_args(secret: &str) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .filter(|c| c.windows(secret.len()).any(|w| w == secret.as_bytes()))
        .count()
}

/// Rank 0 of `choices pin`: run again on one core (the launcher's
/// environment, pipes and pid stay; only the affinity changes), before it
/// joins the job.
fn pin_rank_zero(args: &[String]) {
    use std::os::unix::process::CommandExt;
    let pinned = std::env::var_os("FAULTS_PINNED").is_some();
    // Our launcher's rank variable, else Open MPI's or MPICH's.
    let rank = ["HYPERCOMM_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok());
    if pinned || rank.as_deref() != Some("0") {
        return;
    }
    let err = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .args(args)
        .env("FAULTS_PINNED", "1")
        .exec();
    eprintln!("cannot run taskset: {err}");
    std::process::exit(5);
}

/// What every collective would run at sizes from 8 B to 4 MiB, then two
/// collectives checked against a serial fold.
fn choices(comm: &Comm) -> i32 {
    use hypercomm::{CollOpts, Collective};
    let me = comm.rank();
    let mut line = Vec::new();
    for c in Collective::ALL {
        for shift in (3..=22).step_by(3) {
            let a = comm
                .chosen_algorithm(c, 1 << shift, &CollOpts::default(), true)
                .map(|a| a.to_string())
                .unwrap_or_else(|e| format!("error({e})"));
            line.push(format!("{}@{}={a}", c.name(), 1usize << shift));
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    // A digest on standard output, one short line (an MPI launcher's
    // output forwarding splits and interleaves lines longer than a pipe
    // writes at once); the choices in full on standard error.
    let all = line.join(",");
    let digest = all.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    eprintln!("rank {me} chose {all}");
    println!(
        "rank {me} cores {cores} choices {} of {digest:016x}",
        line.len()
    );
    let p = comm.size();
    let mut ok = true;
    // 4 KiB to 256 KiB: the sizes where the ranks' choices have differed.
    for n in [512usize, 4 << 10, 32 << 10] {
        let v: Vec<u64> = (0..n).map(|i| (i * (me + 3)) as u64).collect();
        let want = |i: usize| (0..p).map(|r| (i * (r + 3)) as u64).sum::<u64>();
        let mut sum = vec![0u64; n];
        match comm.allreduce_into(&v, &mut sum, hypercomm::prelude::Sum) {
            Ok(()) => ok &= (0..n).all(|i| sum[i] == want(i)),
            Err(e) => {
                println!("rank {me} allreduce of {n} failed: {e}");
                ok = false;
            }
        }
        let mut all = vec![0u64; n * p];
        match comm.allgather_into(&v, &mut all) {
            Ok(()) => ok &= (0..n * p).all(|k| all[k] == ((k % n) * (k / n + 3)) as u64),
            Err(e) => {
                println!("rank {me} allgather of {n} failed: {e}");
                ok = false;
            }
        }
    }
    println!("rank {me} sums {}", if ok { "ok" } else { "wrong" });
    if ok {
        0
    } else {
        6
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("choices")
        && args.get(2).map(String::as_str) == Some("pin")
    {
        pin_rank_zero(&args);
    }
    if args.get(1).map(String::as_str) == Some("threads") {
        let n: usize = args[2].parse().expect("a number of threads");
        let r = hypercomm::run(n, |c| {
            c.allreduce_one(c.rank() as u64, hypercomm::collective::Sum)
        });
        match r {
            Ok(v) => println!("threads sum {}", v[0]),
            Err(e) => println!("threads error: {e}"),
        }
        return;
    }
    let comm = hypercomm::init().expect("init");
    assert!(comm.me() != Rank::Host, "this program has no host part");
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let num = |i: usize| arg(i).parse::<usize>().expect("a rank number");
    let code = match arg(1).as_str() {
        "victim" => victim(&comm, num(2)),
        "abort" => abort(&comm, num(2)),
        "chain" => chain(&comm, num(2)),
        "panic" => panic_at(&comm, num(2)),
        "deadlock" => deadlock(&comm),
        "wait-file" => wait_file(&comm, &arg(2)),
        "choices" => choices(&comm),
        "where" => {
            println!(
                "bind {} rendezvous {}",
                std::env::var("HYPERCOMM_BIND").unwrap_or_default(),
                std::env::var("HYPERCOMM_RENDEZVOUS").unwrap_or_default()
            );
            let t = ring(&comm).expect("ring");
            println!("token {t}");
            0
        }
        "ssh" => {
            let ssh = std::env::var_os("SSH_CONNECTION").is_some();
            println!("ssh {}", if ssh { "yes" } else { "no" });
            let secret = std::env::var("HYPERCOMM_SECRET").unwrap_or_default();
            assert!(!secret.is_empty(), "a launched rank knows its secret");
            println!("secret-in-args {}", secret_in_args(&secret));
            let t = ring(&comm).expect("ring");
            println!("token {t}");
            0
        }
        other => {
            eprintln!("unknown scenario {other:?}");
            2
        }
    };
    if code == 0 || (arg(1) == "deadlock" && code == 6) {
        hypercomm::finalize(comm).expect("finalize");
    }
    std::process::exit(code);
}
