//! Ring allreduce: ring reduce-scatter followed by ring allgather.
//!
//! The vector is cut into p blocks. In p-1 steps each participant passes a
//! partial block to its ring successor and adds its own contribution to the
//! block arriving from its predecessor, so position i ends with block i+1
//! fully reduced; p-1 more steps circulate the finished blocks. Bandwidth
//! optimal for long vectors. **Requires a commutative operator** (the
//! contributions of a block are combined in ring order starting after its
//! owner). Source: Patarasuk & Yuan 2009; Kumar (seed 001) all-to-all
//! broadcast on a ring; PICL ring topologies via [`RingOrder`] (seed 003).
//!
//! cost: 2·(p-1)·ts + 2·((p-1)/p)·tw·m

use crate::entry::{combines_share, Entry};
use crate::ring::{reduce_scatter_phase, RingOrder};
use crate::schedule::{copy, displs, even_counts, input, output, recv, send, Buf, Schedule};
use crate::topology::TopologyKind;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p` (buffers as in
/// [`crate::allreduce_recursive_doubling()`]); commutative operators only.
pub fn allreduce_ring(rank: usize, p: usize, count: usize, order: RingOrder) -> Schedule {
    let mut s = Schedule::new();
    let counts = even_counts(count, p);
    let d = displs(&counts);
    let block = |q: usize| output(d[q], counts[q]);
    // 1. Output = my contribution.
    s.push(vec![copy(input(0, count), output(0, count))]);
    // 2. Reduce-scatter: position i ends owning block (i + 1) mod p, which is
    //    the block "owned" by position i+1 in reduce_scatter_phase's terms
    //    shifted by one: use block(q+1) as position q's block.
    let t = s.add_temp(counts.first().copied().unwrap_or(0));
    let shifted = |q: usize| block((q + 1) % p);
    reduce_scatter_phase(&mut s, rank, p, order, &shifted, Buf::Temp(t));
    // 3. Allgather: step st sends block i+1-st, receives block i-st.
    let i = order.position(rank, p);
    let next = order.next(rank, p);
    let prev = order.prev(rank, p);
    for st in 0..p.saturating_sub(1) {
        let sb = block((i + 1 + p - st) % p);
        let rb = block((i + p - st) % p);
        s.push(vec![send(next, sb), recv(prev, rb)]);
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let f = (p - 1) as f64;
    2.0 * f * ts + 2.0 * f / p as f64 * tw * m_bytes as f64
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Allreduce,
    algorithm: Algorithm::Ring,
    generate: |x| allreduce_ring(x.me, x.p, x.count, x.order),
    cost,
    combined: combines_share,
    commutative_only: true,
    pipelined: false,
    topologies: &[TopologyKind::Ring, TopologyKind::BiRing],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_allreduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, _, count) in standard_cases(false) {
            for order in [
                RingOrder::NATURAL,
                RingOrder {
                    gray: true,
                    forward: false,
                },
            ] {
                check_allreduce(p, count, Order::Commutative, &|r| {
                    allreduce_ring(r, p, count, order)
                })
                .unwrap_or_else(|e| panic!("p={p} count={count}: {e}"));
            }
        }
        assert_eq!(cost(4, 400, 1.0, 1.0), 6.0 + 600.0);
    }
}
