//! Bitwise-reproducible reductions.
//!
//! Floating-point addition is not associative, so the bits of a sum depend
//! on the bracketing. Every algorithm in this crate keeps *rank order*, but
//! they bracket differently (recursive doubling folds pairs first, the ring
//! starts anywhere, …). For results whose bits depend only on the inputs and
//! p — whatever algorithm, topology or transport would otherwise have been
//! chosen — use the functions here. They reduce over the canonical interval
//! tree of [`crate::tree`], whose bracketing is fixed by p alone:
//! [`canonical_fold`] is the serial reference, e.g. for p = 5
//! `(((x0⊕x1)⊕(x2⊕x3))⊕x4)`. The root does not change it, and each element
//! of a vector is bracketed the same way (the executor must combine
//! elementwise, in order, without reassociating). Source: SPEC.md section 4
//! ("reproducible mode", beyond the seeds).
//!
//! cost: reduce (ts + tw·m)·⌈log2 p⌉; allreduce twice that

use crate::schedule::Schedule;
pub use crate::tree::canonical_fold;

/// Reproducible reduce to `root` (it is [`crate::reduce_binomial()`]).
pub fn reduce_reproducible(rank: usize, p: usize, root: usize, count: usize) -> Schedule {
    crate::reduce_binomial::reduce_binomial(rank, p, root, count)
}

/// Reproducible allreduce (it is [`crate::allreduce_reduce_bcast()`]).
pub fn allreduce_reproducible(rank: usize, p: usize, count: usize) -> Schedule {
    crate::allreduce_reduce_bcast::allreduce_reduce_bcast(rank, p, count)
}

/// Cost of [`allreduce_reproducible`] in the seed-001 model.
pub fn cost(p: usize, m_bytes: usize, ts: f64, tw: f64) -> f64 {
    crate::allreduce_reduce_bcast::cost(p, m_bytes, ts, tw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::simulate;

    fn bracket(a: &String, b: &String) -> String {
        format!("({a}+{b})")
    }

    #[test]
    fn bracketing_is_canonical_for_every_root() {
        for p in 1..=33 {
            let names: Vec<String> = (0..p).map(|r| r.to_string()).collect();
            let want = canonical_fold(&names, &bracket);
            for root in 0..p {
                let scheds: Vec<Schedule> =
                    (0..p).map(|r| reduce_reproducible(r, p, root, 2)).collect();
                let init = (0..p)
                    .map(|r| {
                        let out = if r == root { 2 } else { 0 };
                        (vec![Some(r.to_string()); 2], vec![None; out])
                    })
                    .collect();
                let out = simulate(&scheds, init, &bracket).unwrap();
                assert_eq!(
                    out[root].output,
                    vec![Some(want.clone()); 2],
                    "p={p} root={root}"
                );
            }
            let scheds: Vec<Schedule> = (0..p).map(|r| allreduce_reproducible(r, p, 1)).collect();
            let init = (0..p)
                .map(|r| (vec![Some(r.to_string())], vec![None]))
                .collect();
            let out = simulate(&scheds, init, &bracket).unwrap();
            for b in out {
                assert_eq!(b.output, vec![Some(want.clone())]);
            }
        }
    }

    #[test]
    fn recursive_doubling_brackets_differently() {
        // Why this module exists: p = 5 recursive doubling gives ((0+1)+2)+(3+4).
        let p = 5;
        let scheds: Vec<Schedule> = (0..p)
            .map(|r| crate::allreduce_recursive_doubling(r, p, 1))
            .collect();
        let init = (0..p)
            .map(|r| (vec![Some(r.to_string())], vec![None]))
            .collect();
        let out = simulate(&scheds, init, &bracket).unwrap();
        assert_eq!(out[0].output[0].as_deref(), Some("(((0+1)+2)+(3+4))"));
        let names: Vec<String> = (0..p).map(|r| r.to_string()).collect();
        assert_eq!(canonical_fold(&names, &bracket), "(((0+1)+(2+3))+4)");
    }
}
