//! The shared-memory transport with real processes.
//!
//! Each test runs its ranks as processes of this test binary
//! ([`hypercomm::launch::Processes`]: the launcher's engine starts them with
//! a shared segment and collects every rank's result); a rank runs the
//! role the test names and returns its result as text. The job has a time
//! limit, so a hang fails the test.

use hypercomm::launch::{Processes, RankEnd};
use hypercomm::{scope, wait_all, Comm, Error, Rank, TransportKind, ANY_SOURCE, ANY_TAG};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the rank that kills itself writes the time (ms) it did.
const KILL_FILE: &str = "HC_SHM_TEST_KILL_FILE";

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

// ------------------------------------------------------------ the ranks

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
                4041,
                5000,
                8128,
                8129,
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
        "windows_both_ways" => {
            // Windows of mid-size sends both ways at once: the first of a
            // window streams through the ring, the rest find it full and
            // are read with a single copy (from 32 KiB) or queue.
            let other = 1 - me;
            let sizes = [20_000usize, 40_000, 70_000, 130_000];
            for round in 0..5 {
                let out: Vec<Vec<u8>> = (0..24)
                    .map(|i| pattern(me * 1000 + round * 100 + i, sizes[i % 4]))
                    .collect();
                let mut back: Vec<Vec<u8>> = (0..24).map(|i| vec![0u8; sizes[i % 4]]).collect();
                scope(|s| {
                    let mut reqs = Vec::new();
                    for b in back.iter_mut() {
                        reqs.push(comm.irecv(s, b, other, 9)?);
                    }
                    for d in &out {
                        reqs.push(comm.isend(s, d, other, 9)?);
                    }
                    wait_all(reqs).map(|_| ())
                })?;
                for (i, b) in back.iter().enumerate() {
                    let want = pattern(other * 1000 + round * 100 + i, sizes[i % 4]);
                    assert!(*b == want, "round {round}, message {i} differs");
                }
            }
            Ok("ok".into())
        }
        "streams_to_wildcards" => {
            // Two senders stream mid-size messages (through the ring, one
            // slot after another) into receives posted for any source and
            // any tag: each receive gets one whole message, and the
            // receives matched from one sender get its messages in order.
            let sizes = [20_000usize, 60_000, 100_000];
            let per = 12;
            if me == 0 {
                let mut bufs: Vec<Vec<u8>> = (0..2 * per).map(|_| vec![0u8; 100_000]).collect();
                let st = scope(|s| {
                    let mut reqs = Vec::new();
                    for b in bufs.iter_mut() {
                        reqs.push(comm.irecv(s, b, ANY_SOURCE, ANY_TAG)?);
                    }
                    comm.send(&[1u8], 1, 1)?;
                    comm.send(&[1u8], 2, 1)?;
                    wait_all(reqs)
                })?;
                let mut next = [0u32; 3];
                for (b, st) in bufs.iter().zip(&st) {
                    let Rank::Node(src) = st.source else {
                        panic!("a message from {:?}", st.source)
                    };
                    assert_eq!(st.tag, next[src], "message from {src} out of order");
                    next[src] += 1;
                    let want = pattern(src * 1000 + st.tag as usize, sizes[st.tag as usize % 3]);
                    assert_eq!(st.len, want.len());
                    assert!(
                        b[..st.len] == want[..],
                        "message {} from {src} differs",
                        st.tag
                    );
                }
                assert_eq!(next, [0, per as u32, per as u32]);
            } else {
                comm.recv::<u8>(0, 1)?;
                let out: Vec<Vec<u8>> = (0..per)
                    .map(|i| pattern(me * 1000 + i, sizes[i % 3]))
                    .collect();
                scope(|s| {
                    let mut reqs = Vec::new();
                    for (i, d) in out.iter().enumerate() {
                        reqs.push(comm.isend(s, d, 0, i as u32)?);
                    }
                    wait_all(reqs).map(|_| ())
                })?;
            }
            Ok("ok".into())
        }
        "stream_withdrawn_midway" => {
            // A receive times out while a long message streams into its
            // buffer (the sender stops feeding the ring for a while): the
            // message is not lost, and the next receive gets all of it.
            // Once through a request, once through a blocking receive.
            let len = 1 << 20;
            let quick = comm.with_timeout(Some(Duration::from_millis(150)));
            for (round, tag) in [(0usize, 5u32), (1, 6)] {
                let data = pattern(round, len);
                if me == 0 {
                    comm.recv::<u8>(1, 1)?;
                    scope(|s| {
                        let r = comm.isend(s, &data, 1, tag)?;
                        // Not in any call: the ring is not refilled.
                        std::thread::sleep(Duration::from_millis(600));
                        comm.recv::<u8>(1, 2)?;
                        r.wait().map(|_| ())
                    })?;
                } else {
                    let mut first = vec![0u8; len];
                    let err = if round == 0 {
                        scope(|s| {
                            let r = quick.irecv(s, &mut first, 0, tag)?;
                            comm.send(&[1u8], 0, 1)?;
                            r.wait()
                        })
                    } else {
                        comm.send(&[1u8], 0, 1)?;
                        quick.recv_into(&mut first, 0, tag)
                    };
                    match err {
                        Err(Error::Timeout { .. }) => {}
                        other => panic!("round {round}: the receive ended with {other:?}"),
                    }
                    let mut whole = vec![0u8; len];
                    let st = comm.recv_into(&mut whole, 0, tag)?;
                    assert_eq!(st.len, len);
                    assert!(whole == data, "round {round}: the message differs");
                    comm.send(&[1u8], 0, 2)?;
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
            // fails; rank 2 kills itself with SIGKILL after half a second,
            // writing the time to the file the test names first.
            let (right, left) = ((me + 1) % n, (me + n - 1) % n);
            let out = vec![me as u8; 70_000];
            let mut inb = vec![0u8; 70_000];
            let start = Instant::now();
            loop {
                if me == 2 && start.elapsed() > Duration::from_millis(500) {
                    let file = std::env::var(KILL_FILE).expect("the file for the time of death");
                    std::fs::write(file, now_ms().to_string()).expect("writing the time");
                    // SAFETY: kill(2) on our own pid with SIGKILL: the
                    // process ends here, as a `kill -9` from outside would.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                }
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
        "deadlock" => {
            // Every rank receives first, from its right neighbour.
            let t = Instant::now();
            match comm.recv::<u64>((me + 1) % n, 1) {
                Ok(_) => Ok("received a message nobody sent".into()),
                Err(e) => Ok(format!("{} ms: {e}", t.elapsed().as_millis())),
            }
        }
        "chains" => {
            // Pipelined chains of 2 MiB: segments under the single-copy
            // threshold stream through the ring, and the reader taking the
            // last slot of one wakes its sender without a frame.
            use hypercomm::{collective::Sum, Algorithm, CollOpts};
            let opts = CollOpts {
                algorithm: Algorithm::Chain,
                ..CollOpts::default()
            };
            // No deadline: only waits without one take part in deadlock
            // detection (the job's own time limit still ends a hang).
            let comm = &comm.with_timeout(None);
            let count = 1 << 18;
            for i in 0..150 {
                let mut b: Vec<f64> = if me == 0 {
                    (0..count).map(|k| (k + i) as f64).collect()
                } else {
                    vec![0.0; count]
                };
                comm.bcast_with(&mut b, 0usize, &opts)?;
                assert!(b.iter().enumerate().all(|(k, &x)| x == (k + i) as f64));
                let x = vec![me as f64 + 1.0; count];
                let mut out = vec![0.0; if me == 0 { count } else { 0 }];
                comm.reduce_into_with(&x, &mut out, Sum, 0usize, &opts)?;
                assert!(out.iter().all(|&v| v == (n * (n + 1) / 2) as f64));
            }
            Ok("ok".into())
        }
        other => panic!("unknown role {other}"),
    }
}

// ------------------------------------------------------------ the parent

/// A job of `nodes` rank processes (and a host) running `role`, started by
/// the test `test` (whose copies run it again and become the ranks).
fn job(test: &str, nodes: usize, env: &[(&str, &str)]) -> Processes {
    let mut p = Processes::new(nodes)
        .transport(TransportKind::Shm)
        .key(test)
        .args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .timeout(Duration::from_secs(120));
    for (k, v) in env {
        p = p.env(k, v);
    }
    p
}

/// Every rank's result; the role must succeed everywhere.
fn run_ok(test: &str, role: &str, nodes: usize, host: bool, env: &[(&str, &str)]) -> Vec<String> {
    let body = |c: &Comm| role_body(role, &c.with_timeout(Some(Duration::from_secs(30))));
    if host {
        let (h, mut v) = job(test, nodes, env)
            .run_with_host(body, body)
            .unwrap_or_else(|e| panic!("{role}: {e}"));
        v.push(h);
        v
    } else {
        job(test, nodes, env)
            .run(body)
            .unwrap_or_else(|e| panic!("{role}: {e}"))
    }
}

/// How every rank ended: its role's result or error (with the time it saw
/// the error), and the job's failure.
type Ends = (Vec<RankEnd<Result<String, (u128, String)>>>, Option<Error>);

fn run_ends(test: &str, role: &str, nodes: usize, env: &[(&str, &str)]) -> Ends {
    job(test, nodes, env)
        .quiet()
        .ends(|c| {
            let r = role_body(role, &c.with_timeout(Some(Duration::from_secs(30))));
            Ok::<_, Error>(r.map_err(|e| (now_ms(), format!("{e:?}"))))
        })
        .unwrap_or_else(|e| panic!("{role}: {e}"))
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
    let r = run_ok("ping_pong_all_sizes", "ping_pong", 2, false, &[]);
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn ping_pong_without_single_copy() {
    // The fallback: large messages through the ring slots.
    let r = run_ok(
        "ping_pong_without_single_copy",
        "ping_pong",
        2,
        false,
        &[("HYPERCOMM_SHM_CMA", "0")],
    );
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn ordering_probe_and_wildcards() {
    assert_eq!(
        run_ok(
            "ordering_probe_and_wildcards",
            "ordering_wildcards",
            3,
            false,
            &[]
        ),
        ["ok", "sent", "sent"]
    );
}

#[test]
fn truncation_keeps_message_and_zero_length() {
    let r = run_ok(
        "truncation_keeps_message_and_zero_length",
        "truncation_zero",
        2,
        false,
        &[],
    );
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn large_message_64mib() {
    let r = run_ok("large_message_64mib", "large_64mib", 2, false, &[]);
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn ten_thousand_outstanding_isends() {
    let r = run_ok(
        "ten_thousand_outstanding_isends",
        "isends_10000",
        2,
        false,
        &[],
    );
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn windows_of_mid_size_sends_both_ways() {
    let r = run_ok(
        "windows_of_mid_size_sends_both_ways",
        "windows_both_ways",
        2,
        false,
        &[],
    );
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn streams_into_wildcard_receives_keep_order() {
    let r = run_ok(
        "streams_into_wildcard_receives_keep_order",
        "streams_to_wildcards",
        3,
        false,
        &[],
    );
    assert_eq!(r, ["ok", "ok", "ok"]);
}

/// Without single-copy reads every long message streams through the ring.
#[test]
fn a_stream_outlives_the_receive_that_timed_out() {
    let r = run_ok(
        "a_stream_outlives_the_receive_that_timed_out",
        "stream_withdrawn_midway",
        2,
        false,
        &[("HYPERCOMM_SHM_CMA", "0")],
    );
    assert_eq!(r, ["ok", "ok"]);
}

#[test]
fn ring_of_8_processes_on_few_cores() {
    let t0 = Instant::now();
    let r = run_ok("ring_of_8_processes_on_few_cores", "ring", 8, false, &[]);
    eprintln!("8-process ring, 300 laps: {:?}", t0.elapsed());
    let want: Vec<String> = (0..8u64)
        .map(|r| if r == 0 { 299 * 8 + 7 } else { 299 * 8 + r - 1 })
        .map(|v| v.to_string())
        .collect();
    assert_eq!(r, want);
}

#[test]
fn host_and_nodes() {
    let r = run_ok("host_and_nodes", "host", 3, true, &[]);
    assert_eq!(r, ["ok", "ok", "ok", "30"]);
}

#[test]
fn abort_reaches_every_rank() {
    let (ends, failure) = run_ends("abort_reaches_every_rank", "abort", 3, &[]);
    assert_eq!(ends.len(), 3);
    for e in &ends {
        let got = e
            .result
            .clone()
            .unwrap_or_else(|| panic!("{:?} gave nothing", e.rank));
        let (_, err) = got.expect_err("every rank sees the abort");
        assert!(
            err.contains("Aborted") && err.contains("boom from rank 1") && err.contains("Node(1)"),
            "{:?}: {err}",
            e.rank
        );
    }
    let failure = failure.expect("the job failed").to_string();
    assert!(
        failure.contains("rank 1 aborted the job: boom from rank 1"),
        "{failure}"
    );
}

/// A deadlock of shared-memory processes (every rank receives first) ends
/// on every rank with the deadlock error within a second, with no timeout
/// set, naming what every rank waits for.
#[test]
fn deadlock_is_an_error_on_every_rank_by_default() {
    let r = job("deadlock_is_an_error_on_every_rank_by_default", 4, &[])
        .env("HYPERCOMM_TIMEOUT", "")
        .run(|c| role_body("deadlock", c))
        .unwrap_or_else(|e| panic!("deadlock: {e}"));
    for (me, text) in r.iter().enumerate() {
        let (ms, e) = text
            .split_once(" ms: ")
            .unwrap_or_else(|| panic!("rank {me}: {text}"));
        assert!(e.starts_with("deadlock: "), "rank {me}: {text}");
        assert!(
            e.contains(&format!(
                "rank {me} waits in recv for a message from rank {}",
                (me + 1) % 4
            )),
            "rank {me}: {text}"
        );
        for q in 0..4 {
            assert!(
                e.contains(&format!(
                    "endpoint {q}: rank {q} is in recv, waiting for a message from rank {}",
                    (q + 1) % 4
                )),
                "rank {me} does not say what rank {q} waits for: {text}"
            );
        }
        let ms: u64 = ms.parse().expect("milliseconds");
        assert!(ms < 1000, "rank {me} after {ms} ms");
    }
}

#[test]
fn kill_9_is_reported_within_a_second() {
    let before = dev_shm();
    let file = std::env::temp_dir().join(format!("hc-shm-kill-{}", std::process::id()));
    let file_s = file.to_string_lossy().into_owned();
    let (ends, failure) = run_ends(
        "kill_9_is_reported_within_a_second",
        "exchange_forever",
        4,
        &[(KILL_FILE, &file_s)],
    );
    let killed_at: u128 = std::fs::read_to_string(&file)
        .expect("the victim wrote its time of death")
        .trim()
        .parse()
        .expect("a time");
    let _ = std::fs::remove_file(&file);
    let victim = 2;
    assert_eq!(
        ends[victim].result, None,
        "the killed rank delivers nothing"
    );
    let failure = failure.expect("the job failed").to_string();
    assert!(
        failure.contains("rank 2") && failure.contains("SIGKILL"),
        "{failure}"
    );
    for e in ends.iter().filter(|e| e.rank != Rank::Node(victim)) {
        let got = e
            .result
            .clone()
            .unwrap_or_else(|| panic!("{:?} gave nothing", e.rank));
        let (at, what) = got.expect_err("the survivors see the death");
        assert!(what.contains("PeerFailed"), "{:?}: {what}", e.rank);
        let delay = at.saturating_sub(killed_at);
        eprintln!("{:?}: {what} after {delay} ms", e.rank);
        assert!(delay < 1000, "{:?} noticed after {delay} ms", e.rank);
    }
    // Nothing is left in /dev/shm (the segment is a memfd).
    assert_eq!(dev_shm(), before);
}

#[test]
fn chains_of_streamed_segments_are_not_taken_for_deadlocks() {
    // Ranks that do not run whenever they could: two threads of the parent
    // keep both cores busy. The deadlock detector once saw the sender
    // blocked and every frame taken, while the reader's taking of the last
    // slot was waking the sender, and ended the job.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let parent = std::env::var("HYPERCOMM_RANK").is_err();
    let r = std::thread::scope(|s| {
        if parent {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
            }
        }
        // The burners stop however the job ends (a failed one panics).
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = Stop(&stop);
        run_ok(
            "chains_of_streamed_segments_are_not_taken_for_deadlocks",
            "chains",
            2,
            false,
            &[],
        )
    });
    assert_eq!(r, ["ok", "ok"]);
}
