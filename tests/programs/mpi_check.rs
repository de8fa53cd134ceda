//! A self-checking SPMD program for the MPI transport (and any other): the
//! same binary runs as threads (`mpi_check 4`), under `mpirun -n 4`, under
//! `srun -n 4` or under `hypercomm run --transport mpi -n 4`. Every rank
//! checks point-to-point semantics (sizes across the eager limit, wildcard
//! receives and FIFO order per source, truncation that keeps the message,
//! probe, non-blocking requests) and the collectives with our schedules,
//! with the library's own (where the transport has one) and forced to the
//! library's, each against a serial fold of the inputs; then a count
//! mismatch, and library collectives switched on for node 0 only, that
//! check mode must report on every rank. It prints one line
//! per rank with the number of checks and exits 1 if any failed.
//!
//! Argument: the number of nodes (default 4; under a launcher, the job's
//! size, which the program checks).

use hypercomm::collective::ops::{Max, Min, Sum};
use hypercomm::{scope, Algorithm, CollOpts, Collective, Comm, Error, ANY_SOURCE};
use std::fmt::Debug;

/// The checks of one rank: how many ran, what failed.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Report {
    rank: usize,
    checks: usize,
    failures: Vec<String>,
    library: Option<String>,
}

impl Report {
    fn eq<T: PartialEq + Debug>(&mut self, what: &str, got: T, want: T) {
        self.checks += 1;
        if got != want {
            self.failures.push(format!(
                "rank {}: {what}: got {got:?}, want {want:?}",
                self.rank
            ));
        }
    }
}

/// A deterministic value for rank `r`, element `i`.
fn val(r: usize, i: usize) -> f64 {
    ((r * 7919 + i * 104_729) % 1000) as f64 / 8.0
}

fn p2p(comm: &Comm, rep: &mut Report) -> hypercomm::Result<()> {
    let (me, p) = (comm.rank(), comm.size());
    let (next, prev) = ((me + 1) % p, (me + p - 1) % p);
    // Around the ring, on both sides of the eager limit.
    for (k, len) in [0usize, 1, 2047, 2048, 70_000, 1 << 20]
        .into_iter()
        .enumerate()
    {
        let out: Vec<u64> = (0..len).map(|i| (me * 1_000_003 + i) as u64).collect();
        let mut got = vec![0u64; len];
        let st = comm.send_recv(&out, next, 10 + k as u32, &mut got, prev, 10 + k as u32)?;
        let want: Vec<u64> = (0..len).map(|i| (prev * 1_000_003 + i) as u64).collect();
        rep.eq(
            &format!("ring of {len} u64"),
            (got == want, st.len),
            (true, len * 8),
        );
    }
    // Wildcards: node 0 takes three numbered messages from every other
    // node from any source; each source's arrive in the order sent.
    if me == 0 {
        let mut next_seq = vec![0u32; p];
        for _ in 0..3 * (p - 1) {
            let (v, st) = comm.recv_vec::<u32>(ANY_SOURCE, 20u32)?;
            let src = st.source.node().unwrap_or(usize::MAX);
            rep.eq("wildcard message from a node", src < p && src != 0, true);
            if src < p {
                rep.eq(
                    &format!("FIFO order from {src}"),
                    v,
                    vec![src as u32, next_seq[src]],
                );
                next_seq[src] += 1;
            }
        }
    } else {
        for s in 0..3u32 {
            comm.send(&[me as u32, s], 0usize, 20)?;
        }
    }
    // Truncation keeps the message; probe tells its length.
    if p > 1 {
        if me == 1 {
            comm.send(&[5u16; 10], 0usize, 30)?;
        } else if me == 0 {
            let mut small = [0u16; 4];
            let e = comm.recv_into(&mut small, 1usize, 30u32);
            rep.eq(
                "receive into a short buffer is Truncated",
                matches!(
                    e,
                    Err(Error::Truncated {
                        len: 20,
                        capacity: 8,
                        ..
                    })
                ),
                true,
            );
            let st = comm.probe(1usize, 30u32)?;
            rep.eq("probe after truncation", st.len, 20);
            let mut full = [0u16; 10];
            comm.recv_into(&mut full, 1usize, 30u32)?;
            rep.eq("the message kept", full, [5u16; 10]);
        }
    }
    // Non-blocking: post the receive first, then send, around the ring.
    let big: Vec<u8> = (0..100_000).map(|i| (i + me) as u8).collect();
    let mut inbox = vec![0u8; 100_000];
    scope(|s| {
        let r = comm.irecv(s, &mut inbox, prev, 40u32)?;
        let w = comm.isend(s, &big, next, 40)?;
        w.wait()?;
        r.wait().map(|_| ())
    })?;
    let want: Vec<u8> = (0..100_000).map(|i| (i + prev) as u8).collect();
    rep.eq("irecv/isend of 100 000 bytes", inbox == want, true);
    Ok(())
}

fn collectives(comm: &Comm, rep: &mut Report, opts: &CollOpts, how: &str) -> hypercomm::Result<()> {
    let (me, p) = (comm.rank(), comm.size());
    for n in [1usize, 3, 1000, 40_000] {
        let mine: Vec<f64> = (0..n).map(|i| val(me, i)).collect();
        // Serial folds over every rank's input.
        let sum: Vec<f64> = (0..n)
            .map(|i| (0..p).map(|r| val(r, i)).fold(0.0, |a, b| a + b))
            .collect();
        let max: Vec<f64> = (0..n)
            .map(|i| (0..p).map(|r| val(r, i)).fold(f64::MIN, f64::max))
            .collect();
        let mut out = vec![0.0; n];
        comm.allreduce_into_with(&mine, &mut out, Max, opts)?;
        rep.eq(&format!("{how} allreduce max of {n}"), &out, &max);
        comm.allreduce_into_with(&mine, &mut out, Sum, opts)?;
        let close = out
            .iter()
            .zip(&sum)
            .all(|(a, b)| (a - b).abs() <= 1e-9 * b.abs().max(1.0));
        rep.eq(&format!("{how} allreduce sum of {n}"), close, true);
        let ints: Vec<i32> = (0..n).map(|i| (me * 31 + i) as i32 - 50).collect();
        let imin: Vec<i32> = (0..n)
            .map(|i| (0..p).map(|r| (r * 31 + i) as i32 - 50).min().unwrap())
            .collect();
        let root = p - 1;
        let mut red = vec![0i32; if me == root { n } else { 0 }];
        comm.reduce_into_with(&ints, &mut red, Min, root, opts)?;
        if me == root {
            rep.eq(&format!("{how} reduce min of {n} at {root}"), &red, &imin);
        }
        let mut b: Vec<u64> = if me == 1 % p {
            (0..n as u64).map(|i| i * i).collect()
        } else {
            vec![0; n]
        };
        comm.bcast_with(&mut b, 1 % p, opts)?;
        rep.eq(
            &format!("{how} bcast of {n}"),
            b,
            (0..n as u64).map(|i| i * i).collect::<Vec<_>>(),
        );
        let mut all = vec![0u16; n * p];
        let part: Vec<u16> = (0..n).map(|i| (me * 100 + i) as u16).collect();
        comm.allgather_into_with(&part, &mut all, opts)?;
        let want: Vec<u16> = (0..p)
            .flat_map(|r| (0..n).map(move |i| (r * 100 + i) as u16))
            .collect();
        rep.eq(&format!("{how} allgather of {n}"), all, want);
        let blocks: Vec<u32> = (0..p)
            .flat_map(|to| (0..n).map(move |i| (me * 10_000 + to * 100 + i) as u32))
            .collect();
        let mut got = vec![0u32; n * p];
        comm.alltoall_into_with(&blocks, &mut got, opts)?;
        let want: Vec<u32> = (0..p)
            .flat_map(|from| (0..n).map(move |i| (from * 10_000 + me * 100 + i) as u32))
            .collect();
        rep.eq(&format!("{how} alltoall of {n}"), got, want);
        comm.barrier_with(opts)?;
    }
    Ok(())
}

fn node(comm: &Comm) -> hypercomm::Result<Report> {
    let mut rep = Report {
        rank: comm.rank(),
        library: comm.native_library(),
        ..Report::default()
    };
    p2p(comm, &mut rep)?;
    collectives(comm, &mut rep, &CollOpts::default(), "ours:")?;
    let auto = CollOpts::default();
    let chosen = |c| comm.chosen_algorithm(c, 8, &auto, true);
    rep.eq(
        "native collectives are off by default",
        chosen(Collective::Allreduce)? == Algorithm::Native,
        false,
    );
    comm.set_native_collectives(true);
    for c in [
        Collective::Allreduce,
        Collective::Bcast,
        Collective::Barrier,
    ] {
        rep.eq(
            &format!("{c:?} goes to the library where there is one"),
            chosen(c)? == Algorithm::Native,
            rep.library.is_some(),
        );
    }
    rep.eq(
        "gather stays ours",
        chosen(Collective::Gather)? == Algorithm::Native,
        false,
    );
    collectives(comm, &mut rep, &auto, "native on:")?;
    let forced = CollOpts {
        algorithm: Algorithm::Native,
        ..CollOpts::default()
    };
    if rep.library.is_some() {
        collectives(comm, &mut rep, &forced, "forced native:")?;
    } else {
        let mut out = [0.0f64];
        let e = comm.allreduce_into_with(&[1.0f64], &mut out, Sum, &forced);
        rep.eq(
            "forced native without a library is an error naming it",
            matches!(&e, Err(Error::InvalidArgument { what, .. }) if what.contains("native")),
            true,
        );
    }
    // With check mode off, the front ends take the direct road to the
    // library (collective/native.rs); a malformed call still gets the
    // ordinary road's error, on every rank, before any rank calls MPI.
    comm.set_check(false);
    collectives(comm, &mut rep, &auto, "native on, check off:")?;
    if rep.library.is_some() {
        collectives(comm, &mut rep, &forced, "forced native, check off:")?;
        let mut short = [0.0f64; 1];
        let e = comm.allreduce_into_with(&[1.0f64, 2.0], &mut short, Sum, &forced);
        rep.eq(
            "a short output is the usual error on the direct road too",
            matches!(&e, Err(Error::InvalidArgument { what, .. }) if what.contains("output has 1")),
            true,
        );
        let mut b = [0u8; 4];
        let e = comm.bcast_with(&mut b, comm.size(), &forced);
        rep.eq(
            "a root out of range is the usual error on the direct road too",
            matches!(&e, Err(Error::InvalidRank { .. })),
            true,
        );
    }
    comm.set_check(true);
    // Check mode: node 0 gives a different count; every rank must say so.
    if comm.size() > 1 {
        let n = if comm.rank() == 0 { 2 } else { 3 };
        let r = comm.allreduce(&vec![1.0f64; n], Sum);
        rep.eq(
            "a count mismatch is CollectiveMismatch everywhere",
            matches!(&r, Err(Error::CollectiveMismatch(m)) if m.contains("count")),
            true,
        );
        // Node 0 hands its calls to the library, the others run ours: the
        // check exchanges meet (on our messages) and every rank says so,
        // where the library's exchange and ours used to wait for each other.
        comm.set_native_collectives(comm.rank() == 0);
        let r = comm.allreduce(&[1.0f64], Sum);
        rep.eq(
            "library collectives on node 0 only are CollectiveMismatch everywhere",
            matches!(&r, Err(Error::CollectiveMismatch(m)) if m.contains("library collectives")),
            true,
        );
        comm.set_native_collectives(true);
        let r = comm.allreduce(&[1.0f64], Sum)?;
        rep.eq(
            "an allreduce that agrees works after the mismatch",
            r,
            vec![comm.size() as f64],
        );
    }
    Ok(rep)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a.parse().map_err(|e| format!("node count {a:?}: {e}"))?,
        None => 4,
    };
    let reports = hypercomm::run(n, node)?;
    let mut failed = 0;
    for r in &reports {
        println!(
            "rank {}: {} checks, {} failed, library {}",
            r.rank,
            r.checks,
            r.failures.len(),
            r.library.as_deref().unwrap_or("none")
        );
        for f in &r.failures {
            println!("  {f}");
        }
        failed += r.failures.len();
    }
    if failed > 0 {
        return Err(format!("{failed} checks failed").into());
    }
    Ok(())
}
