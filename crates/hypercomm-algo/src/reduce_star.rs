//! Star reduce (PICL "full connectivity"): every participant sends its
//! vector straight to the root, which combines them in rank order.
//!
//! The root receives the lower ranks from root-1 down to 0 (each combined on
//! the left) and then the higher ranks root+1 … p-1 (each on the right), one
//! message per round, so the result is x0 ⊕ … ⊕ x(p-1) for any associative
//! operator. Source: PICL `gsum0`/`gcomb0` with top = 2 (seed 003).
//!
//! cost: (p - 1)·(ts + tw·m)

use crate::entry::Entry;
use crate::schedule::{copy, input, output, recv, reduce, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p` (buffers as in [`crate::reduce_binomial()`]).
pub fn reduce_star(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    let mut s = Schedule::new();
    if rank != root {
        // 1. Non-root: one send.
        s.push(vec![send(root, input(0, count))]);
        return s;
    }
    let tmp = temp(s.add_temp(count), 0, count);
    let acc = output(0, count);
    // 2. Root: start from its own vector.
    s.push(vec![copy(input(0, count), acc)]);
    // 3. Prepend the lower ranks, nearest first; append the higher ranks.
    for q in (0..root).rev() {
        s.push(vec![recv(q, tmp), reduce(tmp, acc, true)]);
    }
    for q in root + 1..p {
        s.push(vec![recv(q, tmp), reduce(tmp, acc, false)]);
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    p.saturating_sub(1) as f64 * (ts + tw * m_bytes as f64)
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Reduce,
    algorithm: Algorithm::Star,
    generate: |x| reduce_star(x.me, x.p, x.root, x.count),
    cost,
    // The root combines p-1 whole vectors.
    combined: |p, m| m as f64 * p.saturating_sub(1) as f64,
    commutative_only: false,
    pipelined: false,
    topologies: &[TopologyKind::Full],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_reduce(p, root, count, Order::Exact, &|r| {
                reduce_star(r, p, root, count)
            })
            .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
        assert_eq!(cost(3, 4, 1.0, 1.0), 10.0);
    }
}
