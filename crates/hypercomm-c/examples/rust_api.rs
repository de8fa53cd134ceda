//! The Rust API's side of the C API comparison in BENCHMARKS.md (the C side
//! is `crates/hypercomm-c/bench/c_api.c`): an 8-byte ping-pong between
//! nodes 0 and 1 and a sum of one `f64` over all nodes to node 0, timed the
//! same way (median of 5 repetitions of the mean per iteration).
//! Usage: `hypercomm run -n N target/release/examples/rust_api [ITERATIONS]`.

use hypercomm::collective::Sum;

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() -> hypercomm::Result<()> {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let comm = hypercomm::init()?;
    let me = comm.rank();
    let mut msg = [0f64];
    let mut t = Vec::new();
    for _ in 0..5 {
        comm.sync()?;
        let t0 = hypercomm::clock();
        for _ in 0..iters {
            if me == 0 {
                comm.send(&msg, 1usize, 1)?;
                comm.recv_into(&mut msg, hypercomm::ANY_SOURCE, 1u32)?;
            } else if me == 1 {
                comm.recv_into(&mut msg, hypercomm::ANY_SOURCE, 1u32)?;
                comm.send(&msg, 0usize, 1)?;
            }
        }
        t.push((hypercomm::clock() - t0) / iters as f64 * 1e6 / 2.0);
    }
    if me == 0 {
        println!("rust pingpong-8B {:.3} us one-way", median(t));
    }
    let mut t = Vec::new();
    for _ in 0..5 {
        comm.sync()?;
        let t0 = hypercomm::clock();
        for _ in 0..iters / 10 {
            let x = [me as f64];
            let mut out = [0f64];
            let o: &mut [f64] = if me == 0 { &mut out } else { &mut [] };
            comm.reduce_into(&x, o, Sum, 0usize)?;
        }
        t.push((hypercomm::clock() - t0) / (iters / 10) as f64 * 1e6);
    }
    if me == 0 {
        println!("rust reduce-1f64 {:.3} us", median(t));
    }
    hypercomm::finalize(comm)
}
