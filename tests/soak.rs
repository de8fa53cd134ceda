//! Soak: a fixed number of operations among 8 ranks — point-to-point
//! messages of random sizes (0 B to 4 MiB), tags, sources and destinations,
//! each checked against its checksum, mixed with collectives — on threads,
//! shared memory and TCP. Nothing may be lost, duplicated or corrupted,
//! and the resident set may not grow past a bound between an early point
//! of the run and its end.
//!
//! The plan of the whole run is drawn from one seed, so every rank knows
//! what every message is (sender, receiver, tag, length, content) without
//! telling anyone; a receiver takes whatever comes first (any source, any
//! tag) and looks the message up by its sender and tag.

mod common;

use common::{launch, Launcher, Processes, Threads};
use hypercomm::collective::{Max, Sum};
use hypercomm::{scope, wait_all, Comm, Rank, ANY_SOURCE, ANY_TAG};
use std::collections::HashMap;

/// Ranks of the job.
const RANKS: usize = 8;
/// Rounds; each has its messages and its collectives.
const ROUNDS: usize = 60;
/// Messages each rank sends per round.
const PER_RANK: usize = 6;
/// The resident set may grow by at most this much from the end of the
/// warm-up rounds to the end of the run (per process).
const GROWTH_LIMIT: u64 = 96 << 20;
/// Rounds before the first measurement (buffers of every size class have
/// been allocated once).
const WARM_UP: usize = 10;

/// splitmix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One planned message.
#[derive(Debug, Clone, Copy)]
struct Msg {
    src: usize,
    dst: usize,
    tag: u32,
    len: usize,
}

/// A size from 0 B to 4 MiB, small ones most often.
fn size(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=59 => rng.below(257) as usize,
        60..=89 => 257 + rng.below(64 << 10) as usize,
        _ => (64 << 10) + rng.below((4 << 20) - (64 << 10) + 1) as usize,
    }
}

/// Every round's messages, the same on every rank. Tags are unique over
/// the run (a bijection of the message number), so a message is known by
/// its sender and tag.
fn plan() -> Vec<Vec<Msg>> {
    let mut rng = Rng(0x50a4_2026);
    let mut id = 0u64;
    (0..ROUNDS)
        .map(|_| {
            let mut round = Vec::new();
            for src in 0..RANKS {
                for _ in 0..PER_RANK {
                    id += 1;
                    round.push(Msg {
                        src,
                        dst: rng.below(RANKS as u64) as usize,
                        tag: (id.wrapping_mul(0x9E37_79B1) & 0x3fff_ffff) as u32,
                        len: size(&mut rng),
                    });
                }
            }
            round
        })
        .collect()
}

/// The content of the message with `tag` and `len`.
fn content(tag: u32, len: usize) -> Vec<u8> {
    let mut rng = Rng(u64::from(tag) << 20 ^ len as u64);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// FNV-1a, the checksum a receiver compares.
fn checksum(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// This process's resident set in bytes.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("resident pages");
    // SAFETY: sysconf with a valid name has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// What a rank reports.
type Report = (usize, usize, u64, u64);

/// The soak body: (messages received, collectives run, resident set after
/// the warm-up, at the end).
fn soak_rank(comm: &Comm, plan: &[Vec<Msg>]) -> hypercomm::Result<Report> {
    let me = comm.rank();
    let mut received = 0usize;
    let mut collectives = 0usize;
    let mut seen: HashMap<(usize, u32), usize> = HashMap::new();
    let mut rss_warm = 0;
    for (r, round) in plan.iter().enumerate() {
        if r == WARM_UP {
            comm.barrier()?;
            rss_warm = resident();
        }
        let mine: Vec<&Msg> = round.iter().filter(|m| m.src == me).collect();
        let expect: HashMap<(usize, u32), Msg> = round
            .iter()
            .filter(|m| m.dst == me)
            .map(|m| ((m.src, m.tag), *m))
            .collect();
        let out: Vec<Vec<u8>> = mine.iter().map(|m| content(m.tag, m.len)).collect();
        scope(|s| -> hypercomm::Result<()> {
            let mut reqs = Vec::new();
            for (m, data) in mine.iter().zip(&out) {
                reqs.push(comm.isend(s, data.as_slice(), m.dst, m.tag)?);
            }
            for _ in 0..expect.len() {
                let (data, st) = comm.recv_vec::<u8>(ANY_SOURCE, ANY_TAG)?;
                let Rank::Node(src) = st.source else {
                    panic!("a message from the host")
                };
                let m = expect.get(&(src, st.tag)).unwrap_or_else(|| {
                    panic!("rank {me} round {r}: a message nobody planned: {st:?}")
                });
                assert_eq!(data.len(), m.len, "rank {me} round {r}: length of {m:?}");
                assert_eq!(
                    checksum(&data),
                    checksum(&content(m.tag, m.len)),
                    "rank {me} round {r}: checksum of {m:?}"
                );
                *seen.entry((src, st.tag)).or_default() += 1;
                received += 1;
            }
            wait_all(reqs)?;
            Ok(())
        })?;
        // Collectives between the rounds: every rank agrees on how many
        // messages went round so far; a random root broadcasts a random
        // block; the largest message of the round is agreed.
        let total = comm.allreduce(&[received as u64], Sum)?;
        let planned: usize = plan[..=r].iter().map(Vec::len).sum();
        assert_eq!(
            total[0] as usize, planned,
            "rank {me} round {r}: messages lost"
        );
        let root = (r * 5 + 3) % RANKS;
        let len = (r * 7919) % (96 << 10);
        let mut b = if me == root {
            content(r as u32, len)
        } else {
            vec![0u8; len]
        };
        comm.bcast(&mut b, root)?;
        assert_eq!(
            checksum(&b),
            checksum(&content(r as u32, len)),
            "bcast of round {r}"
        );
        let largest = round.iter().map(|m| m.len as u64).max().unwrap_or(0);
        let mine_max = round
            .iter()
            .filter(|m| m.dst == me)
            .map(|m| m.len as u64)
            .max()
            .unwrap_or(0);
        assert_eq!(comm.allreduce(&[mine_max], Max)?[0], largest, "round {r}");
        collectives += 3;
    }
    comm.barrier()?;
    let duplicated: Vec<_> = seen.iter().filter(|(_, &c)| c != 1).collect();
    assert!(
        duplicated.is_empty(),
        "rank {me}: duplicates {duplicated:?}"
    );
    Ok((received, collectives, rss_warm, resident()))
}

fn soak<L: Launcher>() {
    let plan = plan();
    let t = std::time::Instant::now();
    let reports = launch::<L, _, _>(RANKS, |comm| soak_rank(comm, &plan)).unwrap();
    let total: usize = plan.iter().map(Vec::len).sum();
    let volume: usize = plan.iter().flatten().map(|m| m.len).sum();
    let received: usize = reports.iter().map(|r| r.0).sum();
    assert_eq!(received, total, "{reports:?}");
    for (rank, &(got, colls, warm, end)) in reports.iter().enumerate() {
        let want = plan.iter().flatten().filter(|m| m.dst == rank).count();
        assert_eq!(got, want, "rank {rank}");
        assert_eq!(colls, 3 * ROUNDS);
        let growth = end.saturating_sub(warm);
        assert!(
            growth <= GROWTH_LIMIT,
            "rank {rank}: the resident set grew by {} MiB (from {} to {} MiB)",
            growth >> 20,
            warm >> 20,
            end >> 20
        );
    }
    println!(
        "soak: {total} messages ({} MiB) and {} collectives among {RANKS} ranks in {:?}; \
         resident set after warm-up / at the end, MiB: {:?}",
        volume >> 20,
        3 * ROUNDS,
        t.elapsed(),
        reports
            .iter()
            .map(|r| (r.2 >> 20, r.3 >> 20))
            .collect::<Vec<_>>()
    );
}

/// Ranks as threads of this process (they share one resident set).
mod thread {
    #[test]
    fn soak() {
        <crate::Threads as crate::Launcher>::test("soak", crate::soak::<crate::Threads>);
    }
}

/// Ranks as processes over shared memory.
mod shm {
    type L = crate::Processes<crate::common::procs::Shm>;
    #[test]
    fn soak() {
        <L as crate::Launcher>::test("soak", crate::soak::<L>);
    }
}

/// Ranks as processes over TCP.
mod tcp {
    type L = crate::Processes;
    #[test]
    fn soak() {
        <L as crate::Launcher>::test("soak", crate::soak::<L>);
    }
}
