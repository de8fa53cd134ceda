//! Normalize a distributed vector (seed 000, section 10, the iPSC
//! communication utilities' example problem).
//!
//! A vector X of N = P·M elements is distributed over P nodes, node r
//! holding X(r·M+1 … r·M+M). Each node computes the sum of squares of its
//! part; the contributions are summed at the root, node 0 (GOP with a
//! root), which takes the square root and broadcasts the norm (GSENDW /
//! GRECVW); every node divides its part by the norm, and the normalized
//! vector is concatenated in rank order at node 0 (GCAT).
//!
//! The data are integer-valued, so the sum of squares is exact whatever
//! the order of the additions and the output can be compared bit for bit
//! with a serial normalization: `X(j) = ((37·j) mod 11) − 5` for
//! j = 0 … N−1. Node 0 prints
//!
//! ```text
//! norm: <‖X‖ as f64, Rust {:?} format>
//! y: <the N normalized elements, {:?} format, space-separated>
//! ```
//!
//! Usage: `ipsc_normalize [P [M]]` (defaults 4 and 3), e.g.
//! `cargo run -p hypercomm --example ipsc_normalize -- 8 5`.

use hypercomm::collective::Sum;
use hypercomm::Comm;
use std::error::Error;

/// Element j of the global vector.
fn x(j: usize) -> f64 {
    ((37 * j) % 11) as f64 - 5.0
}

fn node(comm: &Comm, m: usize) -> hypercomm::Result<Option<String>> {
    let me = comm.rank();
    let root = 0usize;
    let mut part: Vec<f64> = (me * m..(me + 1) * m).map(x).collect();
    // 1. Local dot product.
    let dot: f64 = part.iter().map(|v| v * v).sum();
    // 2. Sum the local contributions at the root (GOP).
    let total = comm.reduce(&[dot], Sum, root)?;
    // 3. The root takes the square root and broadcasts the norm (GSENDW/GRECVW).
    let mut norm = [total.map_or(0.0, |t| t[0].sqrt())];
    comm.bcast(&mut norm, root)?;
    // 4. Local normalization.
    for v in &mut part {
        *v /= norm[0];
    }
    // 5. Concatenate in rank order at the root (GCAT).
    let y = comm.gather(&part, root)?;
    Ok(y.map(|y| {
        let ys: Vec<String> = y.iter().map(|v| format!("{v:?}")).collect();
        format!("norm: {:?}\ny: {}", norm[0], ys.join(" "))
    }))
}

fn arg(i: usize, default: usize, what: &str) -> Result<usize, Box<dyn Error>> {
    let v = match std::env::args().nth(i) {
        Some(a) => a
            .parse()
            .map_err(|e| format!("{what} must be a positive integer, not {a:?}: {e}"))?,
        None => default,
    };
    if v == 0 {
        return Err(format!("{what} must be at least 1").into());
    }
    Ok(v)
}

fn main() -> Result<(), Box<dyn Error>> {
    let p = arg(1, 4, "the number of nodes P")?;
    let m = arg(2, 3, "the elements per node M")?;
    let out = hypercomm::run(p, |comm| node(comm, m))?;
    println!("{}", out[0].as_ref().expect("node 0 is the root"));
    Ok(())
}
