//! PICL's first example (seed 003, Figures 1 and 2): the host hands out
//! blocks of a vector, every node computes the sums of consecutive pairs of
//! its block, getting the first element of its right neighbour's block
//! around the ring, and the host gathers the results:
//! `new[i] = old[i] + old[(i + 1) mod N]`.
//!
//! The manual's message types are kept: 0 for the block length, 1 for the
//! data, 2 between neighbours, 3 for the results. Node 0 sends to node
//! `(me + P − 1) mod P` (SPEC section 11: the manual's `(me − 1) % P` is −1,
//! "all nodes", for node 0) and the host sends block j from `data[M·j]`
//! (the manual's `P·j` equals it only when P = M).
//!
//! The manual's data are all 1.0; here `old[i] = i mod 7` (exact in `f32`),
//! so the sums are checked: the host prints, after each node's timing line
//! (PICL message0),
//!
//! ```text
//! host took <seconds> seconds to finish
//! results: <N> sums, <wrong> wrong
//! ```
//!
//! Usage: `picl_ring [P [N]]` (defaults 4 and 1024; P must divide N).

use hypercomm::{Comm, Error, Rank, ANY_SOURCE};

fn old(i: usize) -> f32 {
    (i % 7) as f32
}

fn host(comm: &Comm, n: usize) -> hypercomm::Result<usize> {
    let btime = hypercomm::clock();
    let p = comm.size();
    let m = n / p;
    let data: Vec<f32> = (0..n).map(old).collect();
    let mut results = vec![0f32; n];
    let mut block = vec![0f32; m];
    // Send the problem size, then each node's block.
    for j in 0..p {
        comm.send(&[m as i32], j, 0)?;
    }
    for j in 0..p {
        comm.send(&data[m * j..m * j + m], j, 1)?;
    }
    // Receive the results in whatever order they come (recv0 + recvinfo0).
    for _ in 0..p {
        let st = comm.recv_into(&mut block, ANY_SOURCE, 3u32)?;
        let node = st.source.node().expect("results come from nodes");
        results[m * node..m * node + m].copy_from_slice(&block);
    }
    let etime = hypercomm::clock();
    println!("host took {:.6} seconds to finish", etime - btime);
    let wrong = (0..n)
        .filter(|&i| results[i] != old(i) + old((i + 1) % n))
        .count();
    println!("results: {n} sums, {wrong} wrong");
    Ok(wrong)
}

fn node(comm: &Comm) -> hypercomm::Result<()> {
    let (me, p) = (comm.rank(), comm.size());
    let (m, _) = comm.recv::<i32>(Rank::Host, 0u32)?;
    let m = m as usize;
    let mut data = vec![0f32; m];
    comm.recv_into(&mut data, Rank::Host, 1u32)?;
    // Synchronise and time the computational kernel.
    let btime = hypercomm::clock();
    comm.sync()?;
    let left = (me + p - 1) % p;
    comm.send(&data[..1], left, 2)?;
    let mut results = vec![0f32; m];
    for j in 0..m - 1 {
        results[j] = data[j] + data[j + 1];
    }
    let (rightnum, _) = comm.recv::<f32>(ANY_SOURCE, 2u32)?;
    results[m - 1] = data[m - 1] + rightnum;
    let etime = hypercomm::clock();
    comm.message(&format!(
        "node {me} took {:.6} seconds to finish",
        etime - btime
    ))?;
    comm.sync()?;
    comm.send(&results, Rank::Host, 3)
}

fn arg(i: usize, default: usize, what: &str) -> Result<usize, Box<dyn std::error::Error>> {
    match std::env::args().nth(i) {
        None => Ok(default),
        Some(a) => match a.parse::<usize>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!("{what} must be a positive integer, not {a:?}").into()),
        },
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p = arg(1, 4, "the number of nodes P")?;
    let n = arg(2, 1024, "the vector length N")?;
    if n % p != 0 {
        return Err(format!("P = {p} must divide N = {n}").into());
    }
    let (wrong, _) = hypercomm::run_with_host(p, |h| host(h, n), node)?;
    if wrong > 0 {
        return Err(Box::new(Error::Protocol(format!("{wrong} sums are wrong"))));
    }
    Ok(())
}
