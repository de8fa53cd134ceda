//! Property tests: random sizes, roots and (per-rank) counts for every
//! generator, checked by the lock-step simulator against serial results.

use crate::check::*;
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

fn counts() -> impl Strategy<Value = (Vec<usize>, usize)> {
    (prop::collection::vec(0usize..6, 1..=24), 0usize..24).prop_map(|(c, r)| {
        let root = r % c.len();
        (c, root)
    })
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn bcast_any((p, root, count) in sized(), seg in 1usize..9, gray: bool, forward: bool) {
        let o = RingOrder { gray, forward };
        ok(check_bcast(p, root, count, &|r| bcast_binomial(r, p, root, count)))?;
        ok(check_bcast(p, root, count, &|r| bcast_chain(r, p, root, count, seg, o)))?;
        ok(check_bcast(p, root, count, &|r| bcast_ring_bidirectional(r, p, root, count, seg, o)))?;
        ok(check_bcast(p, root, count, &|r| bcast_star(r, p, root, count, o)))?;
        ok(check_bcast(p, root, count, &|r| bcast_scatter_allgather(r, p, root, count)))?;
    }

    #[test]
    fn reduce_any((p, root, count) in sized(), gray: bool, forward: bool) {
        let o = RingOrder { gray, forward };
        ok(check_reduce(p, root, count, Order::Exact, &|r| reduce_binomial(r, p, root, count)))?;
        ok(check_reduce(p, root, count, Order::Exact, &|r| reduce_star(r, p, root, count)))?;
        ok(check_allreduce(p, count, Order::Exact, &|r| allreduce_recursive_doubling(r, p, count)))?;
        ok(check_allreduce(p, count, Order::Exact, &|r| allreduce_rabenseifner(r, p, count)))?;
        ok(check_allreduce(p, count, Order::Exact, &|r| allreduce_reduce_bcast(r, p, count)))?;
        ok(check_allreduce(p, count, Order::Commutative, &|r| allreduce_ring(r, p, count, o)))?;
    }

    #[test]
    fn scan_any((p, _root, count) in sized(), seg in 1usize..9, down: bool, excl: bool) {
        let dir = if down { Direction::Downward } else { Direction::Upward };
        let inc = if excl { Inclusion::Exclusive } else { Inclusion::Inclusive };
        ok(check_scan(p, count, dir, inc, &|r| scan_recursive_doubling(r, p, count, dir, inc)))?;
        ok(check_scan(p, count, dir, inc, &|r| scan_chain(r, p, count, dir, inc, seg)))?;
    }

    #[test]
    fn v_collectives_any((c, root) in counts(), gray: bool, forward: bool) {
        let o = RingOrder { gray, forward };
        ok(check_gather(&c, root, &|r| gather_binomial(r, root, &c)))?;
        ok(check_gather(&c, root, &|r| gather_star(r, root, &c)))?;
        ok(check_gather(&c, root, &|r| gather_ring(r, root, &c, o)))?;
        ok(check_scatter(&c, root, &|r| scatter_binomial(r, root, &c)))?;
        ok(check_scatter(&c, root, &|r| scatter_star(r, root, &c)))?;
        ok(check_allgather(&c, &|r| allgather_recursive_doubling(r, &c)))?;
        ok(check_allgather(&c, &|r| allgather_bruck(r, &c)))?;
        ok(check_allgather(&c, &|r| allgather_ring(r, &c, o, false)))?;
        ok(check_allgather(&c, &|r| allgather_ring(r, &c, o, true)))?;
        ok(check_reduce_scatter(&c, Order::Exact, &|r| reduce_scatter_recursive_halving(r, &c)))?;
        ok(check_reduce_scatter(&c, Order::Commutative, &|r| reduce_scatter_ring(r, &c, o)))?;
    }

    #[test]
    fn alltoall_any(p in 1usize..20, count in 0usize..6, seed in prop::collection::vec(0usize..5, 400)) {
        let m: Vec<Vec<usize>> = (0..p).map(|a| (0..p).map(|b| seed[(a * 20 + b) % 400]).collect()).collect();
        let col = |r: usize| -> Vec<usize> { (0..p).map(|q| m[q][r]).collect() };
        ok(check_alltoall(&m, &|r| alltoallv_pairwise(r, &m[r], &col(r))))?;
        let fixed = vec![vec![count; p]; p];
        ok(check_alltoall(&fixed, &|r| alltoall_bruck(r, p, count)))?;
        ok(check_alltoall(&fixed, &|r| alltoall_pairwise(r, p, count)))?;
    }

    #[test]
    fn barrier_any(p in 1usize..70) {
        ok(check_barrier(p, &|r| barrier_dissemination(r, p)))?;
        ok(check_barrier(p, &|r| barrier_tree(r, p)))?;
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
