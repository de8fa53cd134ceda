//! Matrix-vector product and inner product with one-to-all broadcast and
//! single-node accumulation (seed 001, Kumar et al., "Basic Communication
//! Operations", the matrix-vector example of one-to-all broadcast and
//! accumulation).
//!
//! The N×N matrix A is striped by columns over P nodes (node r owns the
//! column block r of `even_counts`: the first N mod P nodes get one column
//! more). Node 0 owns the vector x and broadcasts it (one-to-all
//! broadcast); node r computes the partial product of its columns with its
//! part of x, a full-length vector; the partial vectors are summed at node
//! 0 (single-node accumulation, a reduce): y = A·x. Then y is broadcast and
//! every node computes its part of the inner product x·y, combined by an
//! allreduce.
//!
//! All values are integers (`A(i,j) = ((3i + 5j) mod 7) − 3`,
//! `x(j) = (j mod 5) + 1`), so the results are exact. Node 0 prints
//!
//! ```text
//! y: <N integers>
//! x.y: <integer>
//! ```
//!
//! Usage: `kumar_matvec [P [N]]` (defaults 4 and 10).

use hypercomm::collective::Sum;
use hypercomm::Comm;
use std::error::Error;

fn a(i: usize, j: usize) -> i64 {
    ((3 * i + 5 * j) % 7) as i64 - 3
}

fn xv(j: usize) -> i64 {
    (j % 5) as i64 + 1
}

fn node(comm: &Comm, n: usize) -> hypercomm::Result<Option<String>> {
    let (me, p) = (comm.rank(), comm.size());
    // My columns: block `me` of an even split of 0..n.
    let lo = me * (n / p) + me.min(n % p);
    let hi = lo + n / p + usize::from(me < n % p);
    // 1. Node 0 broadcasts x.
    let mut x: Vec<i64> = if me == 0 {
        (0..n).map(xv).collect()
    } else {
        vec![0; n]
    };
    comm.bcast(&mut x, 0usize)?;
    // 2. Partial product of my columns.
    let partial: Vec<i64> = (0..n)
        .map(|i| (lo..hi).map(|j| a(i, j) * x[j]).sum())
        .collect();
    // 3. Accumulate at node 0: y = A x.
    let y = comm.reduce(&partial, Sum, 0usize)?;
    // 4. Inner product x.y: broadcast y, local part over my block, allreduce.
    let mut yb = y.clone().unwrap_or_else(|| vec![0; n]);
    comm.bcast(&mut yb, 0usize)?;
    let local: i64 = (lo..hi).map(|j| x[j] * yb[j]).sum();
    let dot = comm.allreduce(&[local], Sum)?[0];
    Ok(y.map(|y| {
        let ys: Vec<String> = y.iter().map(|v| v.to_string()).collect();
        format!("y: {}\nx.y: {dot}", ys.join(" "))
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
    let n = arg(2, 10, "the matrix order N")?;
    let out = hypercomm::run(p, |comm| node(comm, n))?;
    println!("{}", out[0].as_ref().expect("node 0 prints"));
    Ok(())
}
