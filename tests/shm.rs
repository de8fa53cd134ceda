//! The shared-memory transport with real processes.
//!
//! Each test creates a segment in this (parent) process, lets children
//! inherit it, and re-executes this test binary once per rank with
//! `HC_SHM_TEST_ROLE` naming what the child does (`child_entry` runs the
//! role and exits). A child prints `RESULT <text>` or `ERROR <ms> <error>`
//! (milliseconds since the epoch, to time failure detection); the parent
//! checks every line. A watchdog kills the whole job if it hangs.

use hypercomm::transport::shm::{create_segment, fd_from_env, run_process, share_with_children};
use hypercomm::{scope, wait_all, Comm, Error, Rank, ANY_SOURCE, ANY_TAG};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ROLE: &str = "HC_SHM_TEST_ROLE";

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis()
}

fn pattern(k: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ k.wrapping_mul(131) ^ (i >> 8)) as u8)
        .collect()
}

// ------------------------------------------------------------ the children

/// Entry point of a child process (a no-op in the parent's test run).
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let nodes: usize = var("HYPERCOMM_NODES").parse().expect("HYPERCOMM_NODES");
    let host = var("HYPERCOMM_HOST") == "1";
    let me: usize = var("HYPERCOMM_RANK").parse().expect("HYPERCOMM_RANK");
    let fd = fd_from_env().expect("segment descriptor");
    let comm_timeout = Some(Duration::from_secs(30));
    let r = run_process(fd, nodes, host, me, |comm| {
        role_body(&role, &comm.with_timeout(comm_timeout))
    });
    match r {
        Ok(s) => {
            println!("RESULT {s}");
            std::process::exit(0)
        }
        Err(e) => {
            println!("ERROR {} {e:?}", now_ms());
            std::process::exit(3)
        }
    }
}

fn role_body(role: &str, comm: &Comm) -> Result<String, Error> {
    let me = comm.rank();
    let n = comm.size();
    match role {
        "ping_pong" => {
            let sizes = [
                0usize,
                1,
                8,
                100,
                4040,
                5000,
                16_384,
                20_000,
                300_000,
                1 << 20,
            ];
            for (k, &len) in sizes.iter().enumerate() {
                for it in 0..50 {
                    let want = pattern(k * 100 + it, len);
                    if me == 0 {
                        comm.send(&want, 1, k as u32)?;
                        let mut back = vec![0u8; len];
                        let st = comm.recv_into(&mut back, 1, k as u32)?;
                        assert_eq!(st.len, len);
                        assert!(back == want, "echo of {len} bytes differs");
                    } else {
                        let mut b = vec![0u8; len];
                        let st = comm.recv_into(&mut b, 0, ANY_TAG)?;
                        assert_eq!((st.tag, st.len), (k as u32, len));
                        assert!(b == want, "{len} bytes differ");
                        comm.send(&b, 0, k as u32)?;
                    }
                }
            }
            Ok("ok".into())
        }
        "ordering_wildcards" => {
            const M: u64 = 300;
            if me != 0 {
                for i in 0..M {
                    // Mixed sizes: inline, multi-slot and lent (large).
                    let len = [2usize, 700, 3000][i as usize % 3];
                    let mut v = vec![0u64; len];
                    v[0] = me as u64;
                    v[1] = i;
                    comm.send(&v, 0, (i % 3) as u32)?;
                }
                return Ok("sent".into());
            }
            // Tag 2 first from each sender, then the rest by ANY_SOURCE.
            for s in [2usize, 1] {
                for want in (0..M).filter(|i| i % 3 == 2) {
                    let (v, st) = comm.recv_vec::<u64>(s, 2)?;
                    assert_eq!((v[0], v[1]), (s as u64, want));
                    assert_eq!(st.source, Rank::Node(s));
                }
            }
            let mut next = [0u64; 3];
            for _ in 0..2 * (M - M / 3) {
                let st = comm.probe(ANY_SOURCE, ANY_TAG)?;
                let (v, st2) = comm.recv_vec::<u64>(ANY_SOURCE, ANY_TAG)?;
                assert_eq!(st, st2, "probe and receive see the same message");
                let s = st.source.node().expect("a node");
                while next[s] % 3 == 2 {
                    next[s] += 1;
                }
                assert_eq!((v[0], v[1]), (s as u64, next[s]), "order from {s}");
                next[s] += 1;
            }
            assert!(comm.iprobe(ANY_SOURCE, ANY_TAG)?.is_none());
            Ok("ok".into())
        }
        "truncation_zero" => {
            if me == 0 {
                comm.send::<u8>(&[], 1, 1)?;
                comm.send(&pattern(1, 100), 1, 2)?;
                comm.send(&pattern(2, 100_000), 1, 3)?;
            } else {
                let st = comm.recv_into::<u8>(&mut [], 0, 1)?;
                assert_eq!(st.len, 0);
                for (tag, len) in [(2u32, 100usize), (3, 100_000)] {
                    let mut small = vec![0u8; len / 2];
                    match comm.recv_into(&mut small, 0, tag) {
                        Err(Error::Truncated {
                            len: l, capacity, ..
                        }) => {
                            assert_eq!((l, capacity), (len, len / 2))
                        }
                        other => panic!("expected Truncated, got {other:?}"),
                    }
                    let mut big = vec![0u8; len];
                    comm.recv_into(&mut big, 0, tag)?;
                    assert!(big == pattern(tag as usize - 1, len));
                }
            }
            Ok("ok".into())
        }
        "large_64mib" => {
            const LEN: usize = 64 << 20;
            if me == 0 {
                let v: Vec<u64> = (0..LEN as u64 / 8).map(|i| i * 3 + 1).collect();
                comm.send(&v, 1, 0)?;
                // And one handed off by value.
                comm.send_vec(v, 1, 1)?;
            } else {
                let mut v = vec![0u64; LEN / 8];
                comm.recv_into(&mut v, 0, 0)?;
                assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3 + 1));
                let (w, _) = comm.recv_vec::<u64>(0, 1)?;
                assert!(w == v);
            }
            Ok("ok".into())
        }
        "isends_10000" => {
            const K: usize = 10_000;
            if me == 0 {
                let data: Vec<[u64; 2]> = (0..K as u64).map(|i| [i, i * i]).collect();
                scope(|s| {
                    let mut reqs = Vec::with_capacity(K);
                    for d in &data {
                        reqs.push(comm.isend(s, d, 1, 5)?);
                    }
                    wait_all(reqs).map(|_| ())
                })?;
            } else {
                // Let the sender run far ahead (rings fill, queues grow).
                std::thread::sleep(Duration::from_millis(200));
                for i in 0..K as u64 {
                    let mut b = [0u64; 2];
                    comm.recv_into(&mut b, 0, 5)?;
                    assert_eq!(b, [i, i * i]);
                }
            }
            Ok("ok".into())
        }
        "ring" => {
            let laps: u64 = 300;
            let (right, left) = ((me + 1) % n, (me + n - 1) % n);
            let mut last = 0;
            for lap in 0..laps {
                if me == 0 {
                    comm.send(&[lap * n as u64], right, 0)?;
                    let (t, _) = comm.recv::<u64>(left, 0)?;
                    assert_eq!(t, lap * n as u64 + n as u64 - 1);
                    last = t;
                } else {
                    let (t, _) = comm.recv::<u64>(left, 0)?;
                    comm.send(&[t + 1], right, 0)?;
                    last = t;
                }
            }
            Ok(last.to_string())
        }
        "exchange_forever" => {
            // Everybody exchanges with both ring neighbours until a peer
            // fails; the parent kills one rank with SIGKILL meanwhile.
            let (right, left) = ((me + 1) % n, (me + n - 1) % n);
            println!("READY");
            let out = vec![me as u8; 70_000];
            let mut inb = vec![0u8; 70_000];
            loop {
                comm.send_recv(&out, right, 1, &mut inb, left, 1)?;
                comm.send_recv(&out[..10], left, 2, &mut inb[..10], right, 2)?;
            }
        }
        "abort" => {
            if me == 1 {
                std::thread::sleep(Duration::from_millis(200));
                return Err(comm.abort("boom from rank 1"));
            }
            comm.recv::<u64>(ANY_SOURCE, ANY_TAG)?;
            Ok("no".into())
        }
        "host" => {
            if comm.is_host() {
                let mut sum = 0;
                for _ in 0..n {
                    let (v, st) = comm.recv::<u32>(ANY_SOURCE, 1)?;
                    assert_eq!(v as usize, st.source.node().expect("node") * 10);
                    sum += v;
                }
                for r in 0..n {
                    comm.send(&pattern(r, 50_000), r, 2)?;
                }
                Ok(sum.to_string())
            } else {
                comm.send(&[me as u32 * 10], Rank::Host, 1)?;
                let (v, st) = comm.recv_vec::<u8>(Rank::Host, 2)?;
                assert_eq!(st.source, Rank::Host);
                assert!(v == pattern(me, 50_000));
                Ok("ok".into())
            }
        }
        other => panic!("unknown role {other}"),
    }
}

// ------------------------------------------------------------ the parent

struct Job {
    children: Vec<Child>,
}

fn spawn(role: &str, nodes: usize, host: bool, env: &[(&str, &str)]) -> Job {
    let endpoints = nodes + host as usize;
    let fd = create_segment(endpoints).expect("segment");
    share_with_children(&fd).expect("inheritable segment");
    let exe = std::env::current_exe().expect("test binary");
    let children = (0..endpoints)
        .map(|r| {
            let mut c = Command::new(&exe);
            c.args([
                "child_entry",
                "--exact",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env(ROLE, role)
            .env("HYPERCOMM_SHM_FD", fd.as_raw_fd().to_string())
            .env("HYPERCOMM_RANK", r.to_string())
            .env("HYPERCOMM_NODES", nodes.to_string())
            .env("HYPERCOMM_HOST", if host { "1" } else { "0" })
            .env("HYPERCOMM_TRANSPORT", "shm")
            .stdout(Stdio::piped());
            for (k, v) in env {
                c.env(k, v);
            }
            c.spawn().expect("spawning a rank")
        })
        .collect();
    // `fd` closes here: the children hold the segment now.
    Job { children }
}

struct Ended {
    code: Option<i32>,
    out: String,
}

impl Ended {
    fn line(&self, prefix: &str) -> Option<&str> {
        self.out
            .lines()
            .find_map(|l| l.strip_prefix(prefix).map(str::trim))
    }
    fn result(&self) -> &str {
        self.line("RESULT ")
            .unwrap_or_else(|| panic!("no result (exit {:?}): {}", self.code, self.out))
    }
}

impl Job {
    /// Wait for every child; kill them all if `limit` passes.
    fn wait(mut self, limit: Duration) -> Vec<Ended> {
        let end = Instant::now() + limit;
        let mut codes: Vec<Option<Option<i32>>> = vec![None; self.children.len()];
        while codes.iter().any(Option::is_none) {
            for (c, code) in self.children.iter_mut().zip(codes.iter_mut()) {
                if code.is_none() {
                    if let Some(st) = c.try_wait().expect("try_wait") {
                        *code = Some(st.code());
                    }
                }
            }
            if Instant::now() > end {
                for c in &mut self.children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                panic!("job did not finish within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.children
            .iter_mut()
            .zip(codes)
            .map(|(c, code)| {
                let mut out = String::new();
                if let Some(mut s) = c.stdout.take() {
                    let _ = s.read_to_string(&mut out);
                }
                Ended {
                    code: code.expect("ended"),
                    out,
                }
            })
            .collect()
    }
}

fn run_ok(role: &str, nodes: usize, host: bool, env: &[(&str, &str)]) -> Vec<String> {
    let ended = spawn(role, nodes, host, env).wait(Duration::from_secs(120));
    ended
        .iter()
        .enumerate()
        .map(|(r, e)| {
            assert_eq!(e.code, Some(0), "rank {r} of {role}: {}", e.out);
            e.result().to_string()
        })
        .collect()
}

fn dev_shm() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn ping_pong_all_sizes() {
    assert_eq!(run_ok("ping_pong", 2, false, &[]), ["ok", "ok"]);
}

#[test]
fn ping_pong_without_single_copy() {
    // The fallback: large messages through the ring slots.
    let r = run_ok("ping_pong", 2, false, &[("HYPERCOMM_SHM_CMA", "0")]);
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn ordering_probe_and_wildcards() {
    assert_eq!(
        run_ok("ordering_wildcards", 3, false, &[]),
        ["ok", "sent", "sent"]
    );
}

#[test]
fn truncation_keeps_message_and_zero_length() {
    assert_eq!(run_ok("truncation_zero", 2, false, &[]), ["ok", "ok"]);
}

#[test]
fn large_message_64mib() {
    assert_eq!(run_ok("large_64mib", 2, false, &[]), ["ok", "ok"]);
}

#[test]
fn ten_thousand_outstanding_isends() {
    assert_eq!(run_ok("isends_10000", 2, false, &[]), ["ok", "ok"]);
}

#[test]
fn ring_of_8_processes_on_few_cores() {
    let t0 = Instant::now();
    let r = run_ok("ring", 8, false, &[]);
    eprintln!("8-process ring, 300 laps: {:?}", t0.elapsed());
    let want: Vec<String> = (0..8u64)
        .map(|r| if r == 0 { 299 * 8 + 7 } else { 299 * 8 + r - 1 })
        .map(|v| v.to_string())
        .collect();
    assert_eq!(r, want);
}

#[test]
fn host_and_nodes() {
    assert_eq!(run_ok("host", 3, true, &[]), ["ok", "ok", "ok", "30"]);
}

#[test]
fn abort_reaches_every_rank() {
    let ended = spawn("abort", 3, false, &[]).wait(Duration::from_secs(30));
    for (r, e) in ended.iter().enumerate() {
        assert_eq!(e.code, Some(3), "rank {r}: {}", e.out);
        let err = e.line("ERROR ").expect("an error line");
        assert!(
            err.contains("Aborted") && err.contains("boom from rank 1") && err.contains("Node(1)"),
            "rank {r}: {err}"
        );
    }
}

#[test]
fn kill_9_is_reported_within_a_second() {
    let before = dev_shm();
    let mut job = spawn("exchange_forever", 4, false, &[]);
    // Let the exchange run, then kill rank 2 in the middle of it.
    std::thread::sleep(Duration::from_millis(500));
    let victim = 2;
    job.children[victim].kill().expect("kill -9");
    let killed_at = now_ms();
    let ended = job.wait(Duration::from_secs(30));
    assert_eq!(ended[victim].code, None, "killed by a signal");
    for (r, e) in ended.iter().enumerate().filter(|(r, _)| *r != victim) {
        assert_eq!(e.code, Some(3), "rank {r}: {}", e.out);
        let err = e.line("ERROR ").expect("an error line");
        let (at, what) = err.split_once(' ').expect("time and error");
        let at: u128 = at.parse().expect("time");
        assert!(what.contains("PeerFailed"), "rank {r}: {what}");
        let delay = at.saturating_sub(killed_at);
        eprintln!("rank {r}: {what} after {delay} ms");
        assert!(delay < 1000, "rank {r} noticed after {delay} ms");
    }
    // Every process has ended (waited for above) and nothing is left in
    // /dev/shm (the segment is a memfd).
    assert_eq!(dev_shm(), before);
}
