//! The PICL speedup sweep (seed 003, Figures 3 and 4): the host runs the
//! node program on p = 1, 2, 4, … ≤ P nodes, under every topology setting
//! (PICL setarc0), broadcasts the problem size n from the host (bcast0)
//! and collects the global sum of the nodes' result vectors (gsum0 to the
//! host).
//!
//! For each topology and each p, every member takes `comm.prefix(p)` (the
//! first p nodes and the host; PICL's "processors in use"), sets the
//! topology on it, the host broadcasts n = 100, node r contributes the
//! vector of n elements all equal to r + 1, and the host receives the sum,
//! every element of which must be p(p+1)/2. The host prints one line per
//! run and exits with an error if any sum is wrong:
//!
//! ```text
//! Hypercube p=4 n=100 sum=10 expected=10
//! ```
//!
//! Usage: `picl_sweep [P]` (default 8).

use hypercomm::collective::{RingOrder, Sum, Topology};
use hypercomm::{Comm, Rank};
use std::error::Error;

/// The topology settings swept (PICL setarc0: hypercube, full, rings in
/// natural or Gray order, either direction, uni- or bidirectional).
fn topologies() -> Vec<(&'static str, Topology)> {
    vec![
        ("Auto", Topology::Auto),
        ("Hypercube", Topology::Hypercube),
        ("Full", Topology::Full),
        ("Ring", Topology::Ring(RingOrder::NATURAL)),
        ("GrayRing", Topology::Ring(RingOrder::GRAY)),
        (
            "BackwardRing",
            Topology::Ring(RingOrder {
                gray: false,
                forward: false,
            }),
        ),
        ("BiRing", Topology::BiRing(RingOrder::NATURAL)),
    ]
}

/// p = 1, 2, 4, … ≤ nprocs.
fn sizes(nprocs: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |p| p.checked_mul(2))
        .take_while(|&p| p <= nprocs)
        .collect()
}

fn node(comm: &Comm) -> hypercomm::Result<()> {
    for (_, t) in topologies() {
        for p in sizes(comm.size()) {
            let Some(sub) = comm.prefix(p)? else {
                continue; // not in use this time
            };
            sub.set_topology(t);
            let mut n = [0u32];
            sub.bcast(&mut n, Rank::Host)?;
            let results = vec![sub.rank() as f32 + 1.0; n[0] as usize];
            sub.reduce(&results, Sum, Rank::Host)?;
        }
    }
    Ok(())
}

fn host(comm: &Comm) -> Result<(), String> {
    let mut bad = 0;
    for (name, t) in topologies() {
        for p in sizes(comm.size()) {
            let sub = comm
                .prefix(p)
                .map_err(|e| e.to_string())?
                .expect("the host is in every prefix");
            sub.set_topology(t);
            let mut n = [100u32];
            sub.bcast(&mut n, Rank::Host).map_err(|e| e.to_string())?;
            let sum = sub
                .reduce(&[0f32; 0], Sum, Rank::Host)
                .map_err(|e| e.to_string())?
                .expect("the host is the root");
            let expected = (p * (p + 1) / 2) as f32;
            let ok = sum.len() == n[0] as usize && sum.iter().all(|&v| v == expected);
            bad += usize::from(!ok);
            println!(
                "{name} p={p} n={} sum={} expected={expected}{}",
                sum.len(),
                sum.first().copied().unwrap_or(f32::NAN),
                if ok { "" } else { " WRONG" }
            );
        }
    }
    if bad > 0 {
        return Err(format!("{bad} sums were wrong"));
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let nprocs: usize = match std::env::args().nth(1) {
        Some(a) => a.parse().map_err(|e| {
            format!("the number of nodes must be a positive integer, not {a:?}: {e}")
        })?,
        None => 8,
    };
    if nprocs == 0 {
        return Err("the number of nodes must be at least 1".into());
    }
    hypercomm::run_with_host(nprocs, host, node)?;
    Ok(())
}
