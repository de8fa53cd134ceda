//! Binomial-tree reduce that keeps rank order, for any root.
//!
//! Partial results climb the canonical interval tree ([`crate::tree`]): each
//! subtree is a contiguous interval of ranks, so a representative combines
//! its own interval's partial with the adjacent interval's partial on the
//! correct side, and the root ends with x0 ⊕ x1 ⊕ … ⊕ x(p-1) for any
//! associative operator. With root 0 this is the GOP spanning tree of the
//! iPSC utilities (seed 000, section 3); Kumar's single-node accumulation
//! (seed 001). The bracketing depends only on p (see
//! [`crate::reproducible`]).
//!
//! cost: (ts + tw·m)·⌈log2 p⌉

use crate::entry::{combines_per_step, Entry};
use crate::schedule::{ceil_log2, copy, input, output, recv, reduce, send, temp, Schedule};
use crate::topology::TopologyKind;
use crate::tree::path;
use crate::{Algorithm, Collective};

/// Schedule for `rank` of `p`: Input has `count` elements on every rank; the
/// root's Output (`count` elements) receives the reduction. Non-roots do not
/// touch Output.
pub fn reduce_binomial(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    let mut s = Schedule::new();
    let is_root = rank == root;
    let levels = path(rank, p, root);
    // Scratch only for ranks that receive (the bottom level is theirs).
    let receives = levels.last().is_some_and(|lv| lv.rep == rank);
    let acc = if is_root {
        output(0, count)
    } else if receives {
        temp(s.add_temp(count), 0, count)
    } else {
        input(0, count)
    };
    let tmp = if receives {
        temp(s.add_temp(count), 0, count)
    } else {
        input(0, count)
    };
    let mut have_acc = false;
    // 0. A rank that receives starts from its own vector, in a round of its
    //    own: the copy runs while the first partial is on its way (in the
    //    receive's round it would wait for the message).
    if receives {
        s.push(vec![copy(input(0, count), acc)]);
        have_acc = true;
    }
    // 1. Bottom-up along my path: while I represent the whole interval,
    //    receive the other half's partial and combine it on its side.
    for lv in levels.iter().rev() {
        if lv.rep == rank {
            s.push(vec![
                recv(lv.other_rep, tmp),
                reduce(tmp, acc, lv.other_is_left()),
            ]);
        } else {
            // 2. Otherwise send my partial to the interval's representative; done.
            let src = if have_acc { acc } else { input(0, count) };
            s.push(vec![send(lv.rep, src)]);
            break;
        }
    }
    // 3. p == 1: the result is the input.
    if is_root && !have_acc {
        s.push(vec![copy(input(0, count), acc)]);
    }
    s
}

/// Cost in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    (ts + tw * m_bytes as f64) * f64::from(ceil_log2(p))
}

/// Registry entries (see [`crate::registry`]).
pub const ENTRIES: &[Entry] = &[Entry {
    collective: Collective::Reduce,
    algorithm: Algorithm::Binomial,
    generate: |x| reduce_binomial(x.me, x.p, x.root, x.count),
    cost,
    combined: combines_per_step,
    commutative_only: false,
    pipelined: false,
    topologies: &[
        TopologyKind::Hypercube,
        TopologyKind::Ring,
        TopologyKind::BiRing,
    ],
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_reduce, standard_cases, Order};

    #[test]
    fn all_cases() {
        for (p, root, count) in standard_cases(true) {
            check_reduce(p, root, count, Order::Exact, &|r| {
                reduce_binomial(r, p, root, count)
            })
            .unwrap_or_else(|e| panic!("p={p} root={root} count={count}: {e}"));
        }
        assert_eq!(cost(16, 8, 1.0, 0.5), 20.0);
    }
}
