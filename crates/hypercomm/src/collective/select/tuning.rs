//! The measured decision table `Auto` consults before the cost model (Open
//! MPI's coll_tuned fixed decision rules, MPICH's JSON tuning files): per
//! transport, collective, bucket of participant counts and whether the ranks
//! outnumber the cores, the message sizes at which the fastest algorithm
//! changes. A case the table does not cover (another transport, collective
//! or participant count, or the other side of oversubscription) falls back
//! to the ts/tw cost model of [`super`].
//!
//! Sizes are counted as [`super::Collective`] says: the whole
//! message for broadcast and allreduce, one rank's contribution for
//! allgather, one block for all-to-all. A rule's steps are
//! `(up to this many bytes, algorithm)`; a switch between two measured
//! sizes is placed at the power of two halfway between them in log2
//! (rounded down), and the last step covers every larger size.
//!
//! Measured on the thread transport, 2026-11-22 07:43–08:20 UTC, on a
//! 2-vCPU AMD EPYC KVM guest shared with other work: every algorithm of
//! each collective for n = 2 (a core per rank), 4 and 8 (oversubscribed),
//! sizes 8, 512, 4096, 32768, 262144, 1048576 and 4194304 bytes (allgather
//! and all-to-all up to 1048576), by `bench/sweep.sh` (which waits for idle
//! CPUs) in 16 rounds; in each round one job per size runs all variants in
//! turn 15 times (`--interleave`: two variants measured in separate jobs
//! differed by more than the algorithms do), at least 2 ms of calls each,
//! every call timed alone with an untimed barrier after it (OSU). The
//! figure per point is the median over the rounds of each round's median;
//! an algorithm within 3 % of the fastest keeps its place when it won the
//! size below (`--tie`), so that noise between equal algorithms does not
//! become a switch. Earlier tables (separate jobs per variant, the minimum
//! over rounds) are kept in
//! `bench/data/collectives-thread-2026-11-22-table*.tsv.gz`.
//!
//! ```sh
//! bench/sweep.sh target/release/hypercomm OUT 16 --repeat 15 --interleave --min-time-ms 2
//! bench/sweep_table.py --tie 0.03 --rust OUT/round-*.tsv   # the rows below
//! bench/sweep_table.py --tie 0.03 --doc OUT/round-*.tsv    # this list
//! ```
//!
//! The 16 rounds are `bench/data/collectives-thread-2026-11-22-table4.tsv.gz`
//! and `-verify2.tsv.gz` (8 each; the second 8 were taken to check an
//! earlier table derived from the first 8 alone, which missed two points
//! by noise between near-equal algorithms; `sweep_table.py` reads the
//! files like round files).
//!
//! The crossovers this table uses (n = 4 and 8 on 2 cores are
//! oversubscribed; with more cores those counts fall back to the cost
//! model):
//!
//! * allreduce, 2 ranks: recursive-doubling up to 8 KiB, rabenseifner above;
//! * allreduce, 3–4 ranks (oversubscribed): recursive-doubling up to 8 KiB,
//!   rabenseifner up to 2 MiB, ring above;
//! * allreduce, 5–8 ranks (oversubscribed): recursive-doubling up to 8 KiB,
//!   rabenseifner up to 2 MiB, ring above;
//! * bcast, 2 ranks: binomial up to 2 MiB, star above;
//! * bcast, 3–4 ranks (oversubscribed): star up to 1 KiB, biring up to 64
//!   KiB, binomial above;
//! * bcast, 5–8 ranks (oversubscribed): star up to 8 KiB, biring up to 64
//!   KiB, binomial above;
//! * allgather, 2 ranks: recursive-doubling at every size;
//! * allgather, 3–4 ranks (oversubscribed): biring up to 64 KiB, recursive-
//!   doubling above;
//! * allgather, 5–8 ranks (oversubscribed): recursive-doubling at every size;
//! * alltoall, 2 ranks: pairwise at every size;
//! * alltoall, 3–4 ranks (oversubscribed): bruck up to 8 KiB, pairwise above;
//! * alltoall, 5–8 ranks (oversubscribed): bruck up to 8 KiB, pairwise above;
//! * barrier, 2 ranks: dissemination;
//! * barrier, 3–4 ranks (oversubscribed): dissemination;
//! * barrier, 5–8 ranks (oversubscribed): star;
//!
//! Participant counts between the measured ones (3, 5–7) take the rule of
//! the next measured count above; they were not measured.
//!
//! Reduce was measured apart, on 2026-11-23, when Rabenseifner's reduce
//! (reduce-scatter, then gather) joined the binomial tree, which the cost
//! model had chosen at every size: `hypercomm bench reduce
//! --all-algorithms --repeat 3` for n = 2, 4 and 8 over threads and shm,
//! sizes 32 KiB to 4 MiB, two runs each. Rabenseifner's halves each rank's
//! working set and wins on 2 ranks from 4 MiB on threads (433 against
//! 928–940 µs) and from 2 MiB over shm (288–298 against 325–335 µs; 4 MiB
//! 760–768 against 1 382–1 659 µs); with more ranks than cores its extra
//! rounds cost more than they save (4 and 8 ranks lost at every size), so
//! the oversubscribed rows keep the binomial tree for any count:
//!
//! * reduce, 2 ranks: binomial up to 2 MiB (threads) or 1 MiB (shm),
//!   rabenseifner above;
//! * reduce, 3 or more ranks (oversubscribed): binomial at every size.

use super::options::{Algorithm, Collective};

/// The transports the table distinguishes (their kinds).
pub(crate) use crate::transport::TransportKind as Link;

/// One row of the table.
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) link: Link,
    pub(crate) coll: Collective,
    /// Participant counts, inclusive.
    pub(crate) ranks: (usize, usize),
    /// Whether the ranks outnumber the cores.
    pub(crate) oversubscribed: bool,
    /// `(up to bytes, algorithm)`, bytes increasing; the last is `usize::MAX`.
    pub(crate) steps: &'static [(usize, Algorithm)],
}

const fn rule(
    link: Link,
    coll: Collective,
    lo: usize,
    hi: usize,
    oversubscribed: bool,
    steps: &'static [(usize, Algorithm)],
) -> Rule {
    Rule {
        link,
        coll,
        ranks: (lo, hi),
        oversubscribed,
        steps,
    }
}

use Collective as C;
use Link::{Shm, Thread};

/// An algorithm by its registry name (the table is generated from the
/// benchmark's output, which names algorithms so).
const fn alg(name: &'static str) -> Algorithm {
    Algorithm::named(name)
}

/// The decision table (generated by `bench/sweep_table.py --rust`).
pub(crate) const TABLE: &[Rule] = &[
    rule(
        Thread,
        C::Allreduce,
        2,
        2,
        false,
        &[
            (8192, alg("recursive-doubling")),
            (usize::MAX, alg("rabenseifner")),
        ],
    ),
    rule(
        Thread,
        C::Allreduce,
        3,
        4,
        true,
        &[
            (8192, alg("recursive-doubling")),
            (2097152, alg("rabenseifner")),
            (usize::MAX, alg("ring")),
        ],
    ),
    rule(
        Thread,
        C::Allreduce,
        5,
        8,
        true,
        &[
            (8192, alg("recursive-doubling")),
            (2097152, alg("rabenseifner")),
            (usize::MAX, alg("ring")),
        ],
    ),
    rule(
        Thread,
        C::Bcast,
        2,
        2,
        false,
        &[(2097152, alg("binomial")), (usize::MAX, alg("star"))],
    ),
    rule(
        Thread,
        C::Bcast,
        3,
        4,
        true,
        &[
            (1024, alg("star")),
            (65536, alg("biring")),
            (usize::MAX, alg("binomial")),
        ],
    ),
    rule(
        Thread,
        C::Bcast,
        5,
        8,
        true,
        &[
            (8192, alg("star")),
            (65536, alg("biring")),
            (usize::MAX, alg("binomial")),
        ],
    ),
    rule(
        Thread,
        C::Allgather,
        2,
        2,
        false,
        &[(usize::MAX, alg("recursive-doubling"))],
    ),
    rule(
        Thread,
        C::Allgather,
        3,
        4,
        true,
        &[
            (65536, alg("biring")),
            (usize::MAX, alg("recursive-doubling")),
        ],
    ),
    rule(
        Thread,
        C::Allgather,
        5,
        8,
        true,
        &[(usize::MAX, alg("recursive-doubling"))],
    ),
    rule(
        Thread,
        C::Alltoall,
        2,
        2,
        false,
        &[(usize::MAX, alg("pairwise"))],
    ),
    rule(
        Thread,
        C::Alltoall,
        3,
        4,
        true,
        &[(8192, alg("bruck")), (usize::MAX, alg("pairwise"))],
    ),
    rule(
        Thread,
        C::Alltoall,
        5,
        8,
        true,
        &[(8192, alg("bruck")), (usize::MAX, alg("pairwise"))],
    ),
    rule(
        Thread,
        C::Barrier,
        2,
        2,
        false,
        &[(usize::MAX, alg("dissemination"))],
    ),
    rule(
        Thread,
        C::Barrier,
        3,
        4,
        true,
        &[(usize::MAX, alg("dissemination"))],
    ),
    rule(Thread, C::Barrier, 5, 8, true, &[(usize::MAX, alg("star"))]),
    // Reduce (measured apart, see the module docs).
    rule(
        Thread,
        C::Reduce,
        2,
        2,
        false,
        &[
            (2097152, alg("binomial")),
            (usize::MAX, alg("rabenseifner")),
        ],
    ),
    rule(
        Thread,
        C::Reduce,
        3,
        usize::MAX,
        true,
        &[(usize::MAX, alg("binomial"))],
    ),
    rule(
        Shm,
        C::Reduce,
        2,
        2,
        false,
        &[
            (1048576, alg("binomial")),
            (usize::MAX, alg("rabenseifner")),
        ],
    ),
    rule(
        Shm,
        C::Reduce,
        3,
        usize::MAX,
        true,
        &[(usize::MAX, alg("binomial"))],
    ),
];

/// The table's algorithm for `c` with `p` participants and `m` bytes, if a
/// rule covers the case.
pub(crate) fn lookup(
    l: Link,
    c: Collective,
    p: usize,
    m: usize,
    oversubscribed: bool,
) -> Option<Algorithm> {
    let r = TABLE.iter().find(|r| {
        r.link == l
            && r.coll == c
            && (r.ranks.0..=r.ranks.1).contains(&p)
            && r.oversubscribed == oversubscribed
    })?;
    r.steps.iter().find(|s| m <= s.0).map(|s| s.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypercomm_algo::registry;

    #[test]
    fn rules_are_well_formed() {
        for r in TABLE {
            assert!(r.ranks.0 <= r.ranks.1, "{r:?}");
            assert!(!r.steps.is_empty(), "{r:?}");
            // Thresholds strictly increase and the last covers every size.
            assert!(r.steps.windows(2).all(|w| w[0].0 < w[1].0), "{r:?}");
            assert_eq!(r.steps.last().unwrap().0, usize::MAX, "{r:?}");
            // Neighbouring steps name different algorithms.
            assert!(r.steps.windows(2).all(|w| w[0].1 != w[1].1), "{r:?}");
            for &(_, a) in r.steps {
                assert!(registry::find(r.coll, a).is_some(), "{a} in {r:?}");
            }
        }
        // No two rules cover the same case.
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                let same =
                    a.link == b.link && a.coll == b.coll && a.oversubscribed == b.oversubscribed;
                assert!(
                    !same || a.ranks.1 < b.ranks.0 || b.ranks.1 < a.ranks.0,
                    "{a:?} overlaps {b:?}"
                );
            }
        }
    }

    #[test]
    fn spot_checks() {
        let at = |c, p, m, over| lookup(Thread, c, p, m, over);
        use Algorithm as A;
        // Measured: the dissemination barrier wins up to 2 ranks per core,
        // the two-round star beyond; Bruck wins small all-to-all blocks and
        // pairwise large ones with 8 ranks on 2 cores; small allreduce is
        // recursive doubling; the largest broadcast with 8 ranks on 2 cores
        // is binomial.
        assert_eq!(at(C::Barrier, 2, 0, false), Some(A::Dissemination));
        assert_eq!(at(C::Barrier, 4, 0, true), Some(A::Dissemination));
        assert_eq!(at(C::Barrier, 8, 0, true), Some(A::Star));
        for (p, over) in [(2, false), (4, true), (8, true)] {
            assert_eq!(at(C::Allreduce, p, 8, over), Some(A::RecursiveDoubling));
        }
        assert_eq!(at(C::Alltoall, 8, 8, true), Some(A::Bruck));
        assert_eq!(at(C::Alltoall, 8, 1 << 20, true), Some(A::Pairwise));
        assert_eq!(at(C::Bcast, 8, 4 << 20, true), Some(A::Binomial));
        // Reduce: the tree, but for two ranks' largest vectors.
        assert_eq!(at(C::Reduce, 2, 2 << 20, false), Some(A::Binomial));
        assert_eq!(at(C::Reduce, 2, 4 << 20, false), Some(A::Rabenseifner));
        assert_eq!(
            lookup(Link::Shm, C::Reduce, 2, 2 << 20, false),
            Some(A::Rabenseifner)
        );
        assert_eq!(at(C::Reduce, 16, 4 << 20, true), Some(A::Binomial));
        // Unmeasured cases are left to the cost model.
        assert_eq!(at(C::Allreduce, 2, 8, true), None);
        assert_eq!(at(C::Allreduce, 8, 8, false), None);
        assert_eq!(at(C::Allreduce, 9, 8, true), None);
        assert_eq!(at(C::Scan, 8, 8, true), None);
        assert_eq!(lookup(Link::Shm, C::Allreduce, 2, 8, false), None);
        assert_eq!(lookup(Link::Tcp, C::Bcast, 8, 8, true), None);
    }
}
