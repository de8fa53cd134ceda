//! Hello, ring: the smallest complete hypercomm program with a host.
//!
//! `n` nodes (first command-line argument, default 4) and one host run as
//! threads of this process through [`hypercomm::run_with_host`], the
//! host/node model of all the seed libraries (SPEC section 1).
//!
//! * A token goes once around the ring of nodes: node 0 starts it at 0, every
//!   node adds its own rank and passes it to `(rank + 1) % n`, so it comes
//!   back to node 0 as `0 + 1 + … + (n - 1) = n(n-1)/2`.
//! * Every node sends the host a greeting saying how the token reached it and
//!   how it left; node 0 also reports the token after the lap.
//! * The host receives the greetings by source, in rank order, and prints
//!   them, then the final token. The output is therefore deterministic:
//!
//! ```text
//! hello from node 0 of 4: token 0 -> 0
//! hello from node 1 of 4: token 0 -> 1
//! hello from node 2 of 4: token 1 -> 3
//! hello from node 3 of 4: token 3 -> 6
//! token after one lap: 6
//! ```
//!
//! Run it with `cargo run --release --example hello -- 7`.
//!
//! The same program, unchanged, runs as processes under a launcher:
//! `hypercomm run -n 4 --host target/release/examples/hello --
//! target/release/examples/hello` gives the
//! same lines from the host (prefixed `[host]`), and `hypercomm run -n 4
//! target/release/examples/hello` (no host) has every node print its own
//! greeting and node 0 the token (prefixed with the rank, in whatever order
//! they arrive). `run_with_host` and `run` join the launched job; the node
//! count and whether there is a host come from the job
//! ([`hypercomm::job_shape`]), so the command line's count is not needed.

use hypercomm::{Comm, Rank};
use std::error::Error;

/// Tag of the token travelling around the ring.
const TOKEN: u32 = 0;
/// Tag of a greeting line sent to the host.
const GREETING: u32 = 1;
/// Tag of node 0's final report to the host.
const RESULT: u32 = 2;

/// What every node runs.
fn node(comm: &Comm) -> hypercomm::Result<()> {
    let (me, n) = (comm.rank(), comm.size());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;

    // Node 0 starts the lap; the others add their rank to what arrives.
    let (token_in, token_out) = if me == 0 {
        (0u64, 0u64)
    } else {
        let (t, _) = comm.recv::<u64>(prev, TOKEN)?;
        (t, t + me as u64)
    };
    // With a single node, node 0 sends the token to itself (sends of a few
    // bytes complete without waiting for the receive).
    comm.send(&[token_out], next, TOKEN)?;

    let greeting = format!("hello from node {me} of {n}: token {token_in} -> {token_out}");
    if comm.has_host() {
        comm.send(greeting.as_bytes(), Rank::Host, GREETING)?;
    } else {
        println!("{greeting}");
    }

    if me == 0 {
        let (lap, _) = comm.recv::<u64>(prev, TOKEN)?;
        if comm.has_host() {
            comm.send(&[lap], Rank::Host, RESULT)?;
        } else {
            println!("token after one lap: {lap}");
        }
    }
    Ok(())
}

/// What the host runs: print the greetings in rank order, then the token.
fn host(comm: &Comm) -> Result<(), Box<dyn Error + Send + Sync>> {
    for r in 0..comm.size() {
        let (line, _) = comm.recv_vec::<u8>(r, GREETING)?;
        println!("{}", String::from_utf8(line)?);
    }
    let (lap, _) = comm.recv::<u64>(0, RESULT)?;
    println!("token after one lap: {lap}");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    // Launched: the job's shape. Otherwise: the argument, and a host.
    let (n, with_host) = match hypercomm::job_shape() {
        Some(job) => (job.nodes, job.host),
        None => match std::env::args().nth(1) {
            Some(arg) => (
                arg.parse().map_err(|e| {
                    format!("the number of nodes must be a positive integer, not {arg:?}: {e}")
                })?,
                true,
            ),
            None => (4, true),
        },
    };
    if n == 0 {
        return Err("the number of nodes must be at least 1".into());
    }
    if with_host {
        hypercomm::run_with_host(n, host, node)?;
    } else {
        hypercomm::run(n, node)?;
    }
    Ok(())
}
