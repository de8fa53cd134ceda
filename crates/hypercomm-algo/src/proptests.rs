//! Property tests: every registered algorithm, with random sizes, roots,
//! counts, segments, ring orders and scan kinds, checked by the lock-step
//! simulator against serial results; so a newly registered algorithm is
//! tested without writing a test. The generators outside the registry
//! (scatter-allgather broadcast, reproducible reductions, segmented scans)
//! are checked on their own below.

use crate::check::*;
use crate::entry::{Entry, Params};
use crate::segmented::*;
use crate::*;
use proptest::prelude::*;

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    }
}

fn ok(r: Result<(), String>) -> Result<(), TestCaseError> {
    r.map_err(TestCaseError::fail)
}

fn sized() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..=40, 0usize..40, 0usize..40).prop_map(|(p, r, c)| (p, r % p, c))
}

/// One random call: everything a family's generators may read.
#[derive(Clone, Debug)]
struct Call {
    p: usize,
    root: usize,
    count: usize,
    /// One per participant (zeros included).
    counts: Vec<usize>,
    /// All-to-allv: `matrix[s][d]` elements go from s to d.
    matrix: Vec<Vec<usize>>,
    segment: usize,
    order: RingOrder,
    direction: Direction,
    inclusion: Inclusion,
}

fn call() -> impl Strategy<Value = Call> {
    (1usize..=40)
        .prop_flat_map(|p| {
            (
                Just(p),
                0..p,
                0usize..24,
                prop::collection::vec(0usize..6, p),
                prop::collection::vec(prop::collection::vec(0usize..5, p), p),
                1usize..9,
                (any::<bool>(), any::<bool>()),
                (any::<bool>(), any::<bool>()),
            )
        })
        .prop_map(
            |(p, root, count, counts, matrix, segment, (gray, forward), (down, excl))| Call {
                p,
                root,
                count,
                counts,
                matrix,
                segment,
                order: RingOrder { gray, forward },
                direction: if down {
                    Direction::Downward
                } else {
                    Direction::Upward
                },
                inclusion: if excl {
                    Inclusion::Exclusive
                } else {
                    Inclusion::Inclusive
                },
            },
        )
}

/// Run `e` for call `x` through its family's checker. Reductions by an
/// entry that needs a commutative operator are compared as multisets.
fn check_entry(e: &Entry, x: &Call) -> Result<(), String> {
    let p = x.p;
    let order = if e.commutative_only {
        Order::Commutative
    } else {
        Order::Exact
    };
    let params = |me| Params {
        me,
        p,
        root: x.root,
        count: x.count,
        counts: &x.counts,
        recv_counts: &[],
        segment: x.segment,
        order: x.order,
        direction: x.direction,
        inclusion: x.inclusion,
    };
    let gen = |r: usize| e.generate(&params(r));
    let r = match e.collective {
        Collective::Barrier => check_barrier(p, &gen),
        Collective::Bcast => check_bcast(p, x.root, x.count, &gen),
        Collective::Reduce => check_reduce(p, x.root, x.count, order, &gen),
        Collective::Allreduce => check_allreduce(p, x.count, order, &gen),
        Collective::Gather => check_gather(&x.counts, x.root, &gen),
        Collective::Scatter => check_scatter(&x.counts, x.root, &gen),
        Collective::Allgather => check_allgather(&x.counts, &gen),
        Collective::ReduceScatter => check_reduce_scatter(&x.counts, order, &gen),
        Collective::Alltoall => check_alltoall(&vec![vec![x.count; p]; p], &gen),
        Collective::Alltoallv => {
            let col = |r: usize| -> Vec<usize> { (0..p).map(|q| x.matrix[q][r]).collect() };
            check_alltoall(&x.matrix, &|r| {
                let recv = col(r);
                e.generate(&Params {
                    counts: &x.matrix[r],
                    recv_counts: &recv,
                    ..params(r)
                })
            })
        }
        Collective::Scan => check_scan(p, x.count, x.direction, x.inclusion, &gen),
        c => Err(format!("no checker for the {c} family")),
    };
    r.map_err(|err| format!("{} {}: {err}", e.collective, e.algorithm))
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn every_registered_algorithm(x in call()) {
        for e in registry::all() {
            ok(check_entry(e, &x))?;
        }
    }

    #[test]
    fn unregistered_bcast_and_reductions((p, root, count) in sized()) {
        ok(check_bcast(p, root, count, &|r| bcast_scatter_allgather(r, p, root, count)))?;
        ok(check_reduce(p, root, count, Order::Exact, &|r| {
            reproducible::reduce_reproducible(r, p, root, count)
        }))?;
        ok(check_allreduce(p, count, Order::Exact, &|r| {
            reproducible::allreduce_reproducible(r, p, count)
        }))?;
    }

    #[test]
    fn segmented_chain_schedule_matches_serial(
        vals in prop::collection::vec(0u8..26, 1..24),
        bits_seed in prop::collection::vec(any::<bool>(), 24),
        down: bool, excl: bool, mode in 0u8..3,
    ) {
        let p = vals.len();
        let values: Vec<String> = vals.iter().map(|v| ((b'a' + v) as char).to_string()).collect();
        let bits = &bits_seed[..p];
        let dir = if down { Direction::Downward } else { Direction::Upward };
        let inc = if excl { Inclusion::Exclusive } else { Inclusion::Inclusive };
        let mode = [Segmentation::None, Segmentation::SegmentBit, Segmentation::StartBit][mode as usize];
        let cat = |a: &String, b: &String| format!("{a}{b}");
        let want = segmented_scan_serial(&values, bits, &cat, &String::new(), dir, inc, mode);
        let scheds: Vec<Schedule> =
            (0..p).map(|r| scan_chain(r, p, 1, dir, Inclusion::Exclusive, 1)).collect();
        let init = (0..p)
            .map(|r| (vec![Some(lift(mode, dir, bits[r], values[r].clone()))], vec![None]))
            .collect();
        let comb = |a: &Lifted<String>, b: &Lifted<String>| lifted_combine(a, b, &cat);
        let out = simulate(&scheds, init, &comb).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got: Vec<String> = (0..p)
            .map(|r| segmented_finish(mode, dir, inc, bits[r], &values[r], out[r].output[0].as_ref(), &cat, &String::new()))
            .collect();
        prop_assert_eq!(got, want);
    }
}

/// The registry-driven check catches a wrong schedule: a broadcast entry
/// whose generator ignores the root fails for a root other than 0.
#[test]
fn a_wrong_entry_fails() {
    let wrong = Entry {
        generate: |x| bcast_binomial(x.me, x.p, 0, x.count),
        ..*registry::find(Collective::Bcast, Algorithm::Binomial).unwrap()
    };
    let x = Call {
        p: 5,
        root: 3,
        count: 2,
        counts: vec![1; 5],
        matrix: vec![vec![1; 5]; 5],
        segment: 1,
        order: RingOrder::NATURAL,
        direction: Direction::Upward,
        inclusion: Inclusion::Inclusive,
    };
    assert!(check_entry(&wrong, &x).is_err());
    assert!(check_entry(&wrong, &Call { root: 0, ..x }).is_ok());
}
