//! The collectives suite: every operation × algorithm × n × count against
//! serial computations (bcast, reduce, allreduce, gather(v), allgather(v),
//! scatter(v), all-to-all(v), reduce-scatter(v), the twelve scan variants),
//! every topology setting, host roots, the sparse multicast, non-blocking
//! forms, reproducible mode (bitwise identical across algorithms and
//! topologies, equal to the canonical bracketing), isolation from user
//! wildcard receives, mismatches reported on every rank, and a property test
//! over random counts, roots and operators (one of them non-commutative).
//!
//! Written once as functions generic over a [`Matrix`] launcher and
//! instantiated per transport with [`collectives_suite!`] under the same
//! test names, as the conformance suite is:
//!
//! ```ignore
//! mod thread {
//!     crate::common::collectives::collectives_suite!(crate::common::Threads);
//! }
//! ```
//!
//! The launcher says which job sizes and element counts the matrix covers
//! ([`Matrix::NS`], [`Matrix::COUNTS`]): all of them on threads, fewer where
//! every job is a set of processes. Expected values are computed serially
//! here (segmented scans with the CMMD reference
//! `hypercomm_algo::segmented::segmented_scan_serial`), never copied from
//! a run. Results cross process boundaries, so what a rank returns is plain
//! data (pairs instead of `Loc`, `Option<usize>` instead of `Rank`, an
//! error's kind and text instead of the `Error`).

// Serial references index by rank and element on purpose.
#![allow(clippy::needless_range_loop)]

use super::procs::ProcTransport;
use super::{launch, launch_with_host, Launcher, Processes, Threads};
use hypercomm::collective::registry;
use hypercomm::collective::{
    BitXor, Direction, Inclusion, Max, Min, Prod, Scan, Segmentation, Sum, UserOp,
};
use hypercomm::{Algorithm, CollOpts, Collective, Error, Rank};
use hypercomm_algo::segmented::segmented_scan_serial;

/// A launcher with the sizes of the operation × algorithm matrix it runs:
/// every job size in `NS` with every element count in `COUNTS`. (Tests of
/// particular cases keep their own small sets on every transport.)
pub(crate) trait Matrix: Launcher {
    /// Job sizes (nodes).
    const NS: &'static [usize];
    /// Elements per rank (the nominal count of variable-count tests).
    const COUNTS: &'static [usize];
}

/// Threads: the full matrix.
impl Matrix for Threads {
    const NS: &'static [usize] = &[1, 2, 3, 4, 5, 7, 8, 13, 16];
    const COUNTS: &'static [usize] = &[0, 1, 64, 4099];
}

/// Processes (17 of them run every test body, and each job is a split of
/// their world): powers of two and not, the smallest and the largest job,
/// with every count.
impl<L: Matrix> Matrix for crate::common::Unchecked<L> {
    const NS: &'static [usize] = L::NS;
    const COUNTS: &'static [usize] = L::COUNTS;
}

impl<T: ProcTransport> Matrix for Processes<T> {
    const NS: &'static [usize] = &[1, 2, 3, 5, 8, 16];
    const COUNTS: &'static [usize] = &[0, 1, 64, 4099];
}

/// Instantiate the whole collectives suite for a [`Matrix`] launcher type,
/// one `#[test]` per case, run through [`Launcher::test`]; the property test
/// goes into a nested `props` module, as it always was. (Unused in the
/// suites that include `common` for its other helpers.)
#[allow(unused_macros)]
macro_rules! collectives_suite {
    ($launcher:ty) => {
        $crate::common::collectives::collectives_suite!(@tests $launcher;
            bcast_all_algorithms,
            reduce_and_allreduce_all_algorithms,
            non_commutative_operator_keeps_rank_order,
            ring_allreduce_refuses_a_non_commutative_operator,
            barrier_and_host_variants,
            host_rooted_mismatches_fail_every_participant,
            host_rooted_call_without_a_host_fails_every_rank,
            host_reduce_with_a_node_root_is_an_error,
            mismatch_is_an_error_on_every_rank,
            four_nonblocking_collectives_outstanding,
            gather_and_gatherv_all_algorithms,
            allgather_and_allgatherv_all_algorithms,
            scatter_and_scatterv_all_algorithms,
            alltoall_and_alltoallv_all_algorithms,
            reduce_scatter_all_algorithms,
            scans_all_variants_and_algorithms,
            scan_and_exscan_shorthands,
            every_topology_setting_runs_every_operation,
            host_rooted_gather_and_scatter,
            sparse_multicast_reaches_exactly_the_targets,
            multicast_bad_targets_and_type_mismatch,
            nonblocking_gather_scatter_allgather_alltoall_reduce_scatter_scan,
            nonblocking_variable_count_collectives,
            nonblocking_variable_counts_that_disagree_fail_everywhere,
            nonblocking_calls_with_bad_arguments_name_themselves,
            reproducible_mode_is_bitwise_identical_across_algorithms_and_topologies,
            user_wildcard_receives_never_take_collective_traffic,
            mismatches_of_new_collectives_are_errors_on_every_rank,
            options_that_differ_are_mismatches_on_every_rank,
            equal_non_default_options_match_a_serial_fold,
            traced_and_untraced_ranks_meet
        );
        mod props {
            // The launcher type may be named relative to the enclosing module.
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn random_counts_roots_and_operators() {
                <$launcher as $crate::common::Launcher>::test(
                    "props::random_counts_roots_and_operators",
                    $crate::common::collectives::props::random_counts_roots_and_operators::<
                        $launcher,
                    >,
                );
            }

            #[test]
            fn random_variable_counts_nonblocking() {
                <$launcher as $crate::common::Launcher>::test(
                    "props::random_variable_counts_nonblocking",
                    $crate::common::collectives::props::random_variable_counts_nonblocking::<
                        $launcher,
                    >,
                );
            }
        }
    };
    (@tests $launcher:ty; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                <$launcher as $crate::common::Launcher>::test(
                    stringify!($name),
                    $crate::common::collectives::$name::<$launcher>,
                );
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use collectives_suite;

/// The bodies of [`collectives_suite`] that check results rather than
/// check mode, for a launcher with check mode off
/// ([`Unchecked`](crate::common::Unchecked)): `full` on threads, `short`
/// (the common operations and the property test) where a job is costly.
#[allow(unused_macros)]
macro_rules! unchecked_suite {
    (full $launcher:ty) => {
        $crate::common::collectives::unchecked_suite!(short $launcher);
        $crate::common::collectives::collectives_suite!(@tests $launcher;
            non_commutative_operator_keeps_rank_order,
            barrier_and_host_variants,
            four_nonblocking_collectives_outstanding,
            gather_and_gatherv_all_algorithms,
            scatter_and_scatterv_all_algorithms,
            reduce_scatter_all_algorithms,
            scans_all_variants_and_algorithms,
            scan_and_exscan_shorthands,
            every_topology_setting_runs_every_operation,
            host_rooted_gather_and_scatter,
            sparse_multicast_reaches_exactly_the_targets,
            nonblocking_gather_scatter_allgather_alltoall_reduce_scatter_scan,
            nonblocking_variable_count_collectives,
            reproducible_mode_is_bitwise_identical_across_algorithms_and_topologies,
            user_wildcard_receives_never_take_collective_traffic,
            equal_non_default_options_match_a_serial_fold
        );
    };
    (short $launcher:ty) => {
        $crate::common::collectives::collectives_suite!(@tests $launcher;
            bcast_all_algorithms,
            reduce_and_allreduce_all_algorithms,
            allgather_and_allgatherv_all_algorithms,
            alltoall_and_alltoallv_all_algorithms
        );
        #[test]
        fn random_counts_roots_and_operators() {
            <$launcher as $crate::common::Launcher>::test(
                "random_counts_roots_and_operators",
                $crate::common::collectives::props::random_counts_roots_and_operators::<$launcher>,
            );
        }
    };
}
#[allow(unused_imports)]
pub(crate) use unchecked_suite;

/// A rank as plain data (`None` is the host), to cross processes.
fn rank_out(r: Rank) -> Option<usize> {
    r.node()
}

/// The rank [`rank_out`] gave.
fn rank_in(r: Option<usize>) -> Rank {
    r.map_or(Rank::Host, Rank::Node)
}

/// `Auto` and every algorithm the registry has for `c` (so an algorithm
/// registered later is tested here without an edit).
fn algs(c: Collective) -> Vec<Algorithm> {
    std::iter::once(Algorithm::Auto)
        .chain(registry::entries(c).map(|e| e.algorithm))
        .collect()
}

/// [`algs`] without the algorithms that need a commutative operator.
fn algs_keeping_order(c: Collective) -> Vec<Algorithm> {
    std::iter::once(Algorithm::Auto)
        .chain(
            registry::entries(c)
                .filter(|e| !e.commutative_only)
                .map(|e| e.algorithm),
        )
        .collect()
}

fn opts(a: Algorithm) -> CollOpts {
    CollOpts {
        algorithm: a,
        ..Default::default()
    }
}

/// Input element i of rank r (integer-valued, distinct per rank).
fn val(r: usize, i: usize) -> i64 {
    ((r * 7919 + i * 104_729) % 1000) as i64 - 300
}

pub(crate) fn bcast_all_algorithms<L: Matrix>() {
    for a in algs(Collective::Bcast) {
        for &n in L::NS {
            for &count in L::COUNTS {
                let root = n / 2;
                let out = launch::<L, _, _>(n, |comm| {
                    let mut buf: Vec<i64> = if comm.rank() == root {
                        (0..count).map(|i| val(root, i)).collect()
                    } else {
                        vec![0; count]
                    };
                    comm.bcast_with(&mut buf, root, &opts(a))?;
                    Ok::<_, Error>(buf)
                })
                .unwrap();
                let want: Vec<i64> = (0..count).map(|i| val(root, i)).collect();
                for (r, got) in out.iter().enumerate() {
                    assert_eq!(got, &want, "bcast {a:?} n={n} count={count} rank {r}");
                }
            }
        }
    }
}

pub(crate) fn reduce_and_allreduce_all_algorithms<L: Matrix>() {
    for &n in L::NS {
        for &count in L::COUNTS {
            let serial_sum: Vec<i64> = (0..count)
                .map(|i| (0..n).map(|r| val(r, i)).sum())
                .collect();
            let serial_max: Vec<i64> = (0..count)
                .map(|i| (0..n).map(|r| val(r, i)).max().unwrap())
                .collect();
            for a in algs(Collective::Reduce) {
                let root = (n * 2) / 3;
                let out = launch::<L, _, _>(n, |comm| {
                    let input: Vec<i64> = (0..count).map(|i| val(comm.rank(), i)).collect();
                    let mut o = vec![0i64; if comm.rank() == root { count } else { 0 }];
                    comm.reduce_into_with(&input, &mut o, Sum, root, &opts(a))?;
                    Ok::<_, Error>(o)
                })
                .unwrap();
                assert_eq!(out[root], serial_sum, "reduce {a:?} n={n} count={count}");
            }
            for a in algs(Collective::Allreduce) {
                let out = launch::<L, _, _>(n, |comm| {
                    let input: Vec<i64> = (0..count).map(|i| val(comm.rank(), i)).collect();
                    let mut s = vec![0i64; count];
                    comm.allreduce_into_with(&input, &mut s, Sum, &opts(a))?;
                    let mut m = vec![0i64; count];
                    comm.allreduce_into_with(&input, &mut m, Max, &opts(a))?;
                    Ok::<_, Error>((s, m))
                })
                .unwrap();
                for (r, (s, m)) in out.iter().enumerate() {
                    assert_eq!(
                        s, &serial_sum,
                        "allreduce sum {a:?} n={n} count={count} rank {r}"
                    );
                    assert_eq!(
                        m, &serial_max,
                        "allreduce max {a:?} n={n} count={count} rank {r}"
                    );
                }
            }
        }
    }
}

/// A rank that records a trace runs its blocking collectives as tasks; the
/// others run them straight on their blocking receives. Both send the same
/// messages with the same tags, so a job where only the even ranks trace
/// (each process its own recorder; threads share one switch, so all of
/// them take the task path there) computes what a serial fold does, with
/// check mode on and off, and a mismatch is still found on every rank.
pub(crate) fn traced_and_untraced_ranks_meet<L: Matrix>() {
    use hypercomm::trace::{self, Config, Output};
    for &n in L::NS.iter().filter(|&&n| (2..=5).contains(&n)) {
        let count = 100;
        let serial_sum: Vec<i64> = (0..count)
            .map(|i| (0..n).map(|r| val(r, i)).sum())
            .collect();
        let all: Vec<i64> = (0..n)
            .flat_map(|r| (0..count).map(move |i| val(r, i)))
            .collect();
        for check in [true, false] {
            let out = launch::<L, _, _>(n, |comm| {
                comm.set_check(check);
                let me = comm.rank();
                let traced = me % 2 == 0;
                if traced {
                    let cfg = Config::new("unused", Output::PiclVerbose);
                    trace::begin_rank(&cfg, me as i32, n, false);
                }
                let r = (|| {
                    let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
                    let mut sum = vec![0i64; count];
                    comm.allreduce_into(&input, &mut sum, Sum)?;
                    let mut b = if me == n - 1 {
                        input.clone()
                    } else {
                        vec![0; count]
                    };
                    comm.bcast(&mut b, n - 1)?;
                    let gathered = comm.allgather(&input)?;
                    comm.barrier()?;
                    // Rank 0 gives another count: every rank fails alike
                    // in check mode.
                    let mismatch = if check {
                        let mine = vec![1i64; if me == 0 { 3 } else { 4 }];
                        let mut o = vec![0i64; mine.len()];
                        match comm.allreduce_into(&mine, &mut o, Sum) {
                            Err(Error::CollectiveMismatch(_)) => true,
                            other => panic!("rank {me}: expected a mismatch, got {other:?}"),
                        }
                    } else {
                        false
                    };
                    Ok::<_, Error>((sum, b, gathered, mismatch))
                })();
                if traced {
                    trace::end_rank();
                }
                r
            })
            .unwrap();
            let want_b: Vec<i64> = (0..count).map(|i| val(n - 1, i)).collect();
            for (r, (sum, b, gathered, mismatch)) in out.iter().enumerate() {
                let at = format!("n={n} check={check} rank {r}");
                assert_eq!(sum, &serial_sum, "allreduce {at}");
                assert_eq!(b, &want_b, "bcast {at}");
                assert_eq!(gathered, &all, "allgather {at}");
                assert_eq!(*mismatch, check, "mismatch {at}");
            }
        }
    }
}

pub(crate) fn non_commutative_operator_keeps_rank_order<L: Matrix>() {
    // Affine maps x -> a*x + b composed in rank order: (a, b) pairs as u64 wrapping.
    for &n in L::NS {
        for a in algs_keeping_order(Collective::Allreduce) {
            let out = launch::<L, _, _>(n, |comm| {
                comm.set_topology(hypercomm::Topology::Ring(Default::default()));
                let r = comm.rank() as u64;
                let input: Vec<hypercomm::collective::Loc<u64, u64>> = (0..5)
                    .map(|i| hypercomm::collective::Loc {
                        value: r + 2 + i,
                        index: 3 * r + 1 + i,
                    })
                    .collect();
                let op = UserOp::ordered(
                    |p: hypercomm::collective::Loc<u64, u64>,
                     q: hypercomm::collective::Loc<u64, u64>| {
                        hypercomm::collective::Loc {
                            value: p.value.wrapping_mul(q.value),
                            index: q.value.wrapping_mul(p.index).wrapping_add(q.index),
                        }
                    },
                );
                let mut o = input.clone();
                comm.allreduce_into_with(&input, &mut o, op, &opts(a))?;
                let pairs: Vec<(u64, u64)> = o.iter().map(|l| (l.value, l.index)).collect();
                Ok::<_, Error>(pairs)
            })
            .unwrap();
            for i in 0..5u64 {
                let (mut av, mut bv) = (1u64, 0u64);
                for r in 0..n as u64 {
                    let (a2, b2) = (r + 2 + i, 3 * r + 1 + i);
                    av = av.wrapping_mul(a2);
                    bv = a2.wrapping_mul(bv).wrapping_add(b2);
                }
                for o in &out {
                    assert_eq!(o[i as usize], (av, bv), "{a:?} n={n}");
                }
            }
        }
    }
}

pub(crate) fn ring_allreduce_refuses_a_non_commutative_operator<L: Matrix>() {
    let out = launch::<L, _, _>(3, |comm| {
        let op = UserOp::ordered(|a: u32, b: u32| a.wrapping_mul(31).wrapping_add(b));
        let e = comm
            .allreduce_into_with(&[1u32], &mut [0u32], op, &opts(Algorithm::Ring))
            .unwrap_err();
        Ok::<_, Error>(e.to_string())
    })
    .unwrap();
    assert!(out.iter().all(|m| m.contains("commutative")), "{out:?}");
}

pub(crate) fn barrier_and_host_variants<L: Matrix>() {
    for &n in L::NS {
        launch::<L, _, _>(n, |comm| {
            comm.barrier()?;
            comm.barrier_with(&opts(Algorithm::Tree))?;
            comm.barrier_with(&opts(Algorithm::Star))?;
            Ok::<_, Error>(())
        })
        .unwrap();
        let (h, nodes) = launch_with_host::<L, _, _, _, _>(
            n,
            |host| {
                let mut b = vec![5u32, 6, 7];
                host.bcast(&mut b, Rank::Host)?;
                host.barrier_with_host()?;
                let r = host.reduce(&[0u32; 3], Sum, Rank::Host)?.unwrap();
                Ok::<_, Error>(r)
            },
            |comm| {
                let mut b = vec![0u32; 3];
                comm.bcast(&mut b, Rank::Host)?;
                comm.barrier_with_host()?;
                let v: Vec<u32> = b.iter().map(|x| x * (comm.rank() as u32 + 1)).collect();
                comm.reduce(&v, Sum, Rank::Host)?;
                Ok::<_, Error>(b)
            },
        )
        .unwrap();
        let tri = (n * (n + 1) / 2) as u32;
        assert_eq!(h, vec![5 * tri, 6 * tri, 7 * tri]);
        assert!(nodes.iter().all(|b| b == &vec![5, 6, 7]));
    }
}

/// How long a mismatch may take to reach every participant (the issue
/// promises "within a second"; the operations themselves would wait for
/// the suite's 30-second timeout).
const MISMATCH_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Run `f`, returning its error's kind and text and whether it came within
/// [`MISMATCH_WITHIN`]; an `Ok` is reported as such.
fn timed_err(f: impl FnOnce() -> hypercomm::Result<()>) -> (String, String, bool) {
    let t = std::time::Instant::now();
    let r = f();
    let fast = t.elapsed() < MISMATCH_WITHIN;
    match r {
        Ok(()) => ("Ok".into(), String::new(), fast),
        Err(e) => (kind_of(&e), e.to_string(), fast),
    }
}

fn kind_of(e: &Error) -> String {
    match e {
        Error::CollectiveMismatch(_) => "CollectiveMismatch",
        Error::InvalidArgument { .. } => "InvalidArgument",
        Error::InvalidRank { .. } => "InvalidRank",
        Error::Timeout { .. } => "Timeout",
        Error::PeerFailed { .. } => "PeerFailed",
        _ => "other",
    }
    .to_string()
}

/// Host-rooted calls are checked like node ones: the host's length, its
/// operation or root differing from the nodes', or a node's length
/// differing from the others', is an error on every participant — the
/// host included — within a second, and the communicator stays usable.
pub(crate) fn host_rooted_mismatches_fail_every_participant<L: Matrix>() {
    for n in [1usize, 2, 5] {
        let (h, nodes) = launch_with_host::<L, _, _, _, _>(
            n,
            |host| {
                let mut errs = Vec::new();
                // 1. bcast: the host's length differs.
                errs.push(timed_err(|| host.bcast(&mut [1u32, 2, 3, 4], Rank::Host)));
                // 2. scatter: the host's input is not n blocks of the nodes' length.
                let all: Vec<u32> = (0..3 * n as u32).collect();
                errs.push(timed_err(|| host.scatter_into(&all, &mut [], Rank::Host)));
                // 3. scatterv: the host's counts differ.
                let counts = vec![1usize; n];
                errs.push(timed_err(|| {
                    host.scatterv_into(&vec![9u32; n], &counts, &mut [], Rank::Host)
                }));
                // 4. the host broadcasts while the nodes reduce to it.
                errs.push(timed_err(|| host.bcast(&mut [1u32, 2], Rank::Host)));
                // 5. the host gathers while the nodes scatter from it.
                let mut g = vec![0u32; 2 * n];
                errs.push(timed_err(|| host.gather_into(&[], &mut g, Rank::Host)));
                // 6. reduce: the host's length differs.
                let mut r = vec![0u32; 3];
                errs.push(timed_err(|| host.reduce_into(&[], &mut r, Sum, Rank::Host)));
                // 7. scatter with a wrong length at node 0 only.
                let all: Vec<u32> = (0..2 * n as u32).collect();
                errs.push(timed_err(|| host.scatter_into(&all, &mut [], Rank::Host)));
                // 8. the host reduces (learning the length) while the nodes
                // gather to it.
                errs.push(timed_err(|| {
                    host.reduce(&[0u32; 0], Sum, Rank::Host).map(|_| ())
                }));
                let mut ok = vec![7u32, 8, 9];
                host.bcast(&mut ok, Rank::Host)?;
                let sum = host.reduce(&[0u32; 0], Sum, Rank::Host)?;
                Ok::<_, Error>((errs, sum))
            },
            |comm| {
                let mut errs = Vec::new();
                let mut b = vec![0u32; 3];
                errs.push(timed_err(|| comm.bcast(&mut b, Rank::Host)));
                let mut s = vec![0u32; 2];
                errs.push(timed_err(|| comm.scatter_into(&[], &mut s, Rank::Host)));
                let counts = vec![2usize; n];
                errs.push(timed_err(|| {
                    comm.scatterv_into(&[], &counts, &mut s, Rank::Host)
                }));
                errs.push(timed_err(|| {
                    comm.reduce_into(&[1u32, 2], &mut [], Sum, Rank::Host)
                }));
                errs.push(timed_err(|| comm.scatter_into(&[], &mut s, Rank::Host)));
                errs.push(timed_err(|| {
                    comm.reduce_into(&[1u32, 2], &mut [], Sum, Rank::Host)
                }));
                let mut s7 = vec![0u32; if comm.rank() == 0 { 3 } else { 2 }];
                errs.push(timed_err(|| comm.scatter_into(&[], &mut s7, Rank::Host)));
                errs.push(timed_err(|| comm.gather_into(&[1u32], &mut [], Rank::Host)));
                let mut ok = vec![0u32; 3];
                comm.bcast(&mut ok, Rank::Host)?;
                comm.reduce(&[comm.rank() as u32 + 1], Sum, Rank::Host)?;
                Ok::<_, Error>((errs, ok))
            },
        )
        .unwrap();
        let (host_errs, sum) = h;
        assert_eq!(sum, Some(vec![(n * (n + 1) / 2) as u32]), "n={n}");
        let mut all = vec![("host".to_string(), host_errs)];
        for (r, (errs, ok)) in nodes.into_iter().enumerate() {
            assert_eq!(ok, vec![7, 8, 9], "n={n} node {r}");
            all.push((format!("node {r}"), errs));
        }
        for (who, errs) in &all {
            assert_eq!(errs.len(), 8, "n={n} {who}");
            for (i, (kind, text, fast)) in errs.iter().enumerate() {
                let case = i + 1;
                assert!(
                    kind == "CollectiveMismatch"
                        || (kind == "InvalidArgument" && who == "host" && case == 2),
                    "n={n} {who}, case {case}: {kind}: {text}"
                );
                assert!(
                    *fast,
                    "n={n} {who}, case {case}: not within a second: {text}"
                );
            }
            // What was wrong is named: the operations of case 4, the
            // counts of case 6.
            assert!(
                errs[3].1.contains("operation bcast vs reduce")
                    || errs[3].1.contains("operation reduce vs bcast"),
                "n={n} {who}: {}",
                errs[3].1
            );
            assert!(errs[5].1.contains("count"), "n={n} {who}: {}", errs[5].1);
        }
    }
}

/// A host-rooted call on a communicator without a host is an error on
/// every rank (it used to fail on node 0 only for a reduce and return
/// `Ok` on the others).
pub(crate) fn host_rooted_call_without_a_host_fails_every_rank<L: Matrix>() {
    for n in [1usize, 3] {
        let r = launch::<L, _, _>(n, |comm| {
            let mut out = Vec::new();
            let mut o = vec![0u32; 2];
            out.push(timed_err(|| {
                comm.reduce_into(&[1u32, 2], &mut o, Sum, Rank::Host)
            }));
            out.push(timed_err(|| {
                comm.reduce(&[1u32, 2], Sum, Rank::Host).map(|_| ())
            }));
            out.push(timed_err(|| comm.bcast(&mut o, Rank::Host)));
            out.push(timed_err(|| comm.gather_into(&[1u32], &mut o, Rank::Host)));
            out.push(timed_err(|| comm.gather(&[1u32], Rank::Host).map(|_| ())));
            out.push(timed_err(|| comm.gatherv(&[1u32], Rank::Host).map(|_| ())));
            out.push(timed_err(|| comm.scatter_into(&[], &mut o, Rank::Host)));
            out.push(timed_err(|| {
                comm.scatterv(&[0u32; 0], &[], Rank::Host).map(|_| ())
            }));
            // The communicator still works.
            comm.barrier()?;
            Ok::<_, Error>(out)
        })
        .unwrap();
        for (rank, out) in r.iter().enumerate() {
            for (i, (kind, text, fast)) in out.iter().enumerate() {
                assert_eq!(
                    kind, "InvalidArgument",
                    "n={n} rank {rank} call {i}: {text}"
                );
                assert!(
                    text.contains("no host"),
                    "n={n} rank {rank} call {i}: {text}"
                );
                assert!(*fast, "n={n} rank {rank} call {i}");
            }
        }
    }
}

/// The host calling `reduce` with a node as the root is an error, not a
/// vector of whatever host-bound traffic came next (it used to read the
/// nodes' next host+nodes barrier as its result); the host may go on, and
/// the communicator stays usable. (`tests/failures.rs` propagates the
/// error and checks that every rank then ends with one.)
pub(crate) fn host_reduce_with_a_node_root_is_an_error<L: Matrix>() {
    for n in [1usize, 3] {
        let (h, nodes) = launch_with_host::<L, _, _, _, _>(
            n,
            |host| {
                let e = host.reduce(&[1.0f64], Sum, 0usize);
                host.barrier_with_host()?;
                Ok::<_, Error>(format!("{e:?}"))
            },
            |comm| {
                let r = comm.reduce(&[1.0f64], Sum, 0usize)?;
                comm.barrier_with_host()?;
                Ok::<_, Error>(r)
            },
        )
        .unwrap();
        assert!(
            h.starts_with("Err(InvalidArgument { op: \"reduce\"") && h.contains("host"),
            "n={n}: {h}"
        );
        assert_eq!(nodes[0], Some(vec![n as f64]), "n={n}");
    }
}

pub(crate) fn mismatch_is_an_error_on_every_rank<L: Matrix>() {
    for n in [2usize, 3, 5] {
        let r = launch::<L, _, _>(n, |comm| {
            let root = if comm.rank() == n - 1 { 1 } else { 0 };
            let mut b = vec![0u8; 4];
            let e = comm.bcast(&mut b, root).unwrap_err();
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        for m in &r {
            assert!(m.contains("root"), "{m}");
            assert!(m.contains(&format!("rank {}", n - 1)), "{m}");
        }
        let r = launch::<L, _, _>(n, |comm| {
            let count = if comm.rank() == 0 { 3 } else { 4 };
            let e = comm.allreduce(&vec![1.0f64; count], Min).unwrap_err();
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("count")), "{r:?}");
        let r = launch::<L, _, _>(n, |comm| {
            let e = if comm.rank() == 0 {
                comm.allreduce(&[1u32], Prod).unwrap_err()
            } else {
                comm.allreduce(&[1u32], BitXor).unwrap_err()
            };
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("operator")), "{r:?}");
    }
}

pub(crate) fn four_nonblocking_collectives_outstanding<L: Matrix>() {
    for &n in L::NS {
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            let mut b = vec![if me == 0 { 42u64 } else { 0 }; 100];
            let input = vec![me as u64 + 1; 50];
            let mut sum = vec![0u64; 50];
            let mut red = vec![0u64; if me == n - 1 { 50 } else { 0 }];
            let mut mx = vec![0u64; 50];
            hypercomm::scope(|s| -> Result<(), Error> {
                let r1 = comm.ibcast(s, &mut b, 0)?;
                let r2 = comm.iallreduce(s, &input, &mut sum, Sum)?;
                let r3 = comm.ireduce(s, &input, &mut red, Sum, n - 1)?;
                let r4 = comm.iallreduce(s, &input, &mut mx, Max)?;
                let r5 = comm.ibarrier(s)?;
                // Wait in a rank-dependent order: progress must not depend on it.
                if me % 2 == 0 {
                    r5.wait()?;
                    r4.wait()?;
                    r3.wait()?;
                    r2.wait()?;
                    r1.wait()?;
                } else {
                    r1.wait()?;
                    r2.wait()?;
                    r3.wait()?;
                    r4.wait()?;
                    r5.wait()?;
                }
                Ok(())
            })?;
            Ok::<_, Error>((b, sum, red, mx))
        })
        .unwrap();
        let total = (n * (n + 1) / 2) as u64;
        for (r, (b, sum, red, mx)) in out.iter().enumerate() {
            assert!(b.iter().all(|&x| x == 42), "n={n}");
            assert!(sum.iter().all(|&x| x == total), "n={n}");
            assert!(mx.iter().all(|&x| x == n as u64), "n={n}");
            if r == n - 1 {
                assert!(red.iter().all(|&x| x == total), "n={n}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Gather, allgather, scatter, all-to-all, reduce-scatter, scans (issue 3)
// ---------------------------------------------------------------------------

/// Variable count of rank r for a test of nominal `count`: 0..=count, zeros
/// included.
fn vc(r: usize, count: usize) -> usize {
    (count + r * 7) % (count + 1)
}

/// Rank r's block for a variable-count test.
fn vblock(r: usize, count: usize) -> Vec<i64> {
    (0..vc(r, count)).map(|i| val(r, i)).collect()
}

fn concat(blocks: impl Iterator<Item = Vec<i64>>) -> Vec<i64> {
    blocks.flatten().collect()
}

pub(crate) fn gather_and_gatherv_all_algorithms<L: Matrix>() {
    for a in algs(Collective::Gather) {
        for &n in L::NS {
            for &count in L::COUNTS {
                let root = n / 2;
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
                    let mut g = vec![0i64; if me == root { n * count } else { 0 }];
                    comm.gather_into_with(&input, &mut g, root, &opts(a))?;
                    let mine = vblock(me, count);
                    let total = vcounts.iter().sum();
                    let mut gv = vec![0i64; if me == root { total } else { 0 }];
                    comm.gatherv_into_with(&mine, &mut gv, &vcounts, root, &opts(a))?;
                    let learnt = comm.gatherv(&mine, n - 1)?;
                    Ok::<_, Error>((g, gv, learnt))
                })
                .unwrap();
                let want = concat((0..n).map(|r| (0..count).map(|i| val(r, i)).collect()));
                let want_v = concat((0..n).map(|r| vblock(r, count)));
                let (g, gv, _) = &out[root];
                assert_eq!(g, &want, "gather {a:?} n={n} count={count}");
                assert_eq!(gv, &want_v, "gatherv {a:?} n={n} count={count}");
                let (data, counts) = out[n - 1].2.clone().expect("root has the result");
                assert_eq!((data, counts), (want_v.clone(), vcounts.clone()));
                for (r, (_, _, l)) in out.iter().enumerate() {
                    assert_eq!(l.is_some(), r == n - 1);
                }
            }
        }
    }
}

pub(crate) fn allgather_and_allgatherv_all_algorithms<L: Matrix>() {
    for a in algs(Collective::Allgather) {
        for &n in L::NS {
            for &count in L::COUNTS {
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
                    let mut g = vec![0i64; n * count];
                    comm.allgather_into_with(&input, &mut g, &opts(a))?;
                    let mine = vblock(me, count);
                    let mut gv = vec![0i64; vcounts.iter().sum()];
                    comm.allgatherv_into_with(&mine, &mut gv, &vcounts, &opts(a))?;
                    let learnt = comm.allgatherv(&mine)?;
                    Ok::<_, Error>((g, gv, learnt))
                })
                .unwrap();
                let want = concat((0..n).map(|r| (0..count).map(|i| val(r, i)).collect()));
                let want_v = concat((0..n).map(|r| vblock(r, count)));
                for (r, (g, gv, (l, lc))) in out.iter().enumerate() {
                    assert_eq!(g, &want, "allgather {a:?} n={n} count={count} rank {r}");
                    assert_eq!(gv, &want_v, "allgatherv {a:?} n={n} count={count} rank {r}");
                    assert_eq!((l, lc), (&want_v, &vcounts), "allgatherv learnt, rank {r}");
                }
            }
        }
    }
}

pub(crate) fn scatter_and_scatterv_all_algorithms<L: Matrix>() {
    for a in algs(Collective::Scatter) {
        for &n in L::NS {
            for &count in L::COUNTS {
                let root = (n * 2) / 3;
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let all: Vec<i64> = if me == root {
                        concat((0..n).map(|r| (0..count).map(|i| val(r, i)).collect()))
                    } else {
                        Vec::new()
                    };
                    let mut s = vec![0i64; count];
                    comm.scatter_into_with(&all, &mut s, root, &opts(a))?;
                    let allv: Vec<i64> = if me == root {
                        concat((0..n).map(|r| vblock(r, count)))
                    } else {
                        Vec::new()
                    };
                    let mut sv = vec![0i64; vcounts[me]];
                    comm.scatterv_into_with(&allv, &vcounts, &mut sv, root, &opts(a))?;
                    let c: &[usize] = if me == 0 { &vcounts } else { &[] };
                    let allv0: Vec<i64> = if me == 0 {
                        concat((0..n).map(|r| vblock(r, count)))
                    } else {
                        Vec::new()
                    };
                    let learnt = comm.scatterv(&allv0, c, 0usize)?;
                    Ok::<_, Error>((s, sv, learnt))
                })
                .unwrap();
                for (r, (s, sv, l)) in out.iter().enumerate() {
                    let want: Vec<i64> = (0..count).map(|i| val(r, i)).collect();
                    assert_eq!(s, &want, "scatter {a:?} n={n} count={count} rank {r}");
                    assert_eq!(sv, &vblock(r, count), "scatterv {a:?} n={n} rank {r}");
                    assert_eq!(l, &vblock(r, count), "scatterv learnt n={n} rank {r}");
                }
            }
        }
    }
}

pub(crate) fn alltoall_and_alltoallv_all_algorithms<L: Matrix>() {
    // Block sent from r to q: element i = val(r * 100 + q, i).
    let block = |r: usize, q: usize, len: usize| -> Vec<i64> {
        (0..len).map(|i| val(r * 100 + q, i)).collect()
    };
    let sc = |r: usize, q: usize, count: usize| (count + r * 5 + q * 3) % (count + 1);
    for a in algs(Collective::Alltoall) {
        for &n in L::NS {
            for &count in L::COUNTS {
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let input = concat((0..n).map(|q| block(me, q, count)));
                    let mut o = vec![0i64; n * count];
                    comm.alltoall_into_with(&input, &mut o, &opts(a))?;
                    let mut v = None;
                    if a == Algorithm::Auto || registry::find(Collective::Alltoallv, a).is_some() {
                        let send: Vec<usize> = (0..n).map(|q| sc(me, q, count)).collect();
                        let recv: Vec<usize> = (0..n).map(|q| sc(q, me, count)).collect();
                        let input = concat((0..n).map(|q| block(me, q, send[q])));
                        let mut ov = vec![0i64; recv.iter().sum()];
                        comm.alltoallv_into_with(&input, &send, &mut ov, &recv, &opts(a))?;
                        let learnt = comm.alltoallv(&input, &send)?;
                        v = Some((ov, learnt));
                    }
                    Ok::<_, Error>((o, v))
                })
                .unwrap();
                for (r, (o, v)) in out.iter().enumerate() {
                    let want = concat((0..n).map(|q| block(q, r, count)));
                    assert_eq!(o, &want, "alltoall {a:?} n={n} count={count} rank {r}");
                    if let Some((ov, (l, lc))) = v {
                        let recv: Vec<usize> = (0..n).map(|q| sc(q, r, count)).collect();
                        let want = concat((0..n).map(|q| block(q, r, recv[q])));
                        assert_eq!(ov, &want, "alltoallv n={n} count={count} rank {r}");
                        assert_eq!((l, lc), (&want, &recv), "alltoallv learnt rank {r}");
                    }
                }
            }
        }
    }
}

pub(crate) fn reduce_scatter_all_algorithms<L: Matrix>() {
    let mut cases: Vec<(Algorithm, bool)> = algs(Collective::ReduceScatter)
        .into_iter()
        .map(|a| (a, false))
        .collect();
    cases.push((Algorithm::Auto, true));
    for (a, repro) in cases {
        for &n in L::NS {
            for &count in L::COUNTS {
                let o = CollOpts {
                    algorithm: a,
                    reproducible: repro,
                    ..Default::default()
                };
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let vtotal: usize = vcounts.iter().sum();
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let input: Vec<f64> = (0..n * count).map(|i| val(me, i) as f64).collect();
                    let mut b = vec![0f64; count];
                    comm.reduce_scatter_into_with(&input, &mut b, Sum, &o)?;
                    let input: Vec<i64> = (0..vtotal).map(|i| val(me, i)).collect();
                    let mut v = vec![0i64; vcounts[me]];
                    comm.reduce_scatterv_into_with(&input, &vcounts, &mut v, Max, &o)?;
                    Ok::<_, Error>((b, v))
                })
                .unwrap();
                let mut off = 0;
                for (r, (b, v)) in out.iter().enumerate() {
                    let want: Vec<f64> = (r * count..(r + 1) * count)
                        .map(|i| (0..n).map(|q| val(q, i) as f64).sum())
                        .collect();
                    assert_eq!(
                        b, &want,
                        "reduce_scatter {a:?} repro={repro} n={n} rank {r}"
                    );
                    let want: Vec<i64> = (off..off + vcounts[r])
                        .map(|i| (0..n).map(|q| val(q, i)).max().unwrap())
                        .collect();
                    off += vcounts[r];
                    assert_eq!(
                        v, &want,
                        "reduce_scatterv {a:?} n={n} count={count} rank {r}"
                    );
                }
            }
        }
    }
}

/// Every scan variant: (direction, inclusion, segmentation).
fn scan_variants() -> Vec<(Direction, Inclusion, Segmentation)> {
    let mut v = Vec::new();
    for d in [Direction::Upward, Direction::Downward] {
        for i in [Inclusion::Inclusive, Inclusion::Exclusive] {
            for s in [
                Segmentation::None,
                Segmentation::SegmentBit,
                Segmentation::StartBit,
            ] {
                v.push((d, i, s));
            }
        }
    }
    v
}

/// Segment bit of rank r in the scan tests.
fn sbit(r: usize) -> bool {
    r % 3 == 1 || r == 4
}

pub(crate) fn scans_all_variants_and_algorithms<L: Matrix>() {
    let variants = scan_variants();
    let add = |a: &i64, b: &i64| a.wrapping_add(*b);
    for &n in L::NS {
        for &count in L::COUNTS {
            let bits: Vec<bool> = (0..n).map(sbit).collect();
            // Serial reference per variant, element by element.
            let want: Vec<Vec<Vec<i64>>> = variants
                .iter()
                .map(|&(d, i, s)| {
                    let mut per_rank = vec![vec![0i64; count]; n];
                    for e in 0..count {
                        let vals: Vec<i64> = (0..n).map(|r| val(r, e)).collect();
                        let res = segmented_scan_serial(&vals, &bits, &add, &0, d, i, s);
                        for r in 0..n {
                            per_rank[r][e] = res[r];
                        }
                    }
                    per_rank
                })
                .collect();
            for a in algs(Collective::Scan) {
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
                    let mut res = Vec::new();
                    for &(direction, inclusion, segmentation) in &variants {
                        let sc = Scan {
                            direction,
                            inclusion,
                            segmentation,
                            bit: sbit(me),
                        };
                        let mut o = vec![-1i64; count];
                        comm.scan_into_with(&input, &mut o, Sum, &sc, &opts(a))?;
                        res.push(o);
                    }
                    Ok::<_, Error>(res)
                })
                .unwrap();
                for (k, v) in variants.iter().enumerate() {
                    for r in 0..n {
                        assert_eq!(
                            out[r][k], want[k][r],
                            "scan {v:?} {a:?} n={n} count={count} rank {r}"
                        );
                    }
                }
            }
        }
    }
}

pub(crate) fn scan_and_exscan_shorthands<L: Matrix>() {
    for &n in L::NS {
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank() as u32;
            let s = comm.scan(&[me + 1, 2 * me], Sum)?;
            let e = comm.exscan(&[me + 1], Max)?;
            let f = comm.scan(&[me as f32 + 0.5], Sum)?;
            Ok::<_, Error>((s, e, f))
        })
        .unwrap();
        for (r, (s, e, f)) in out.iter().enumerate() {
            let r32 = r as u32;
            assert_eq!(s, &vec![(r32 + 1) * (r32 + 2) / 2, r32 * (r32 + 1)]);
            assert_eq!(e, &vec![r32]); // max of 1..=r, identity 0 at rank 0
            assert_eq!(f, &vec![(0..=r).map(|q| q as f32 + 0.5).sum::<f32>()]);
        }
    }
}

pub(crate) fn every_topology_setting_runs_every_operation<L: Matrix>() {
    use hypercomm::collective::Topology;
    use hypercomm_algo::RingOrder;
    let tops = [
        Topology::Auto,
        Topology::Hypercube,
        Topology::Full,
        Topology::Ring(RingOrder::NATURAL),
        Topology::Ring(RingOrder::GRAY),
        Topology::Ring(RingOrder {
            gray: false,
            forward: false,
        }),
        Topology::BiRing(RingOrder::GRAY),
        Topology::Mesh2D,
    ];
    for t in tops {
        for n in [1usize, 3, 8, 13] {
            let count = 5;
            let out = launch::<L, _, _>(n, |comm| {
                comm.set_topology(t);
                let me = comm.rank();
                let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
                let g = comm.gather(&input, n - 1)?;
                let ag = comm.allgather(&input)?;
                let all: Vec<i64> = (0..n * count).map(|i| i as i64).collect();
                let mut sc = vec![0i64; count];
                comm.scatter_into(&all, &mut sc, 0usize)?;
                let a2a = comm.alltoall(&all)?;
                let rs = comm.reduce_scatter(&all, Sum)?;
                let s = comm.scan(&input, Sum)?;
                Ok::<_, Error>((g, ag, sc, a2a, rs, s))
            })
            .unwrap();
            let want_cat = concat((0..n).map(|r| (0..count).map(|i| val(r, i)).collect()));
            for (r, (g, ag, sc, a2a, rs, s)) in out.iter().enumerate() {
                let ctx = format!("{t:?} n={n} rank {r}");
                assert_eq!(g.is_some(), r == n - 1, "{ctx}");
                if let Some(g) = g {
                    assert_eq!(g, &want_cat, "{ctx}");
                }
                assert_eq!(ag, &want_cat, "{ctx}");
                let mine: Vec<i64> = (r * count..(r + 1) * count).map(|i| i as i64).collect();
                assert_eq!(sc, &mine, "{ctx}");
                let want_a2a: Vec<i64> = (0..n)
                    .flat_map(|_| (r * count..(r + 1) * count).map(|i| i as i64))
                    .collect();
                assert_eq!(a2a, &want_a2a, "{ctx}");
                let want_rs: Vec<i64> = mine.iter().map(|x| x * n as i64).collect();
                assert_eq!(rs, &want_rs, "{ctx}");
                let want_s: Vec<i64> = (0..count)
                    .map(|i| (0..=r).map(|q| val(q, i)).sum())
                    .collect();
                assert_eq!(s, &want_s, "{ctx}");
            }
        }
    }
}

pub(crate) fn host_rooted_gather_and_scatter<L: Matrix>() {
    for &n in L::NS {
        for count in [0usize, 1, 64] {
            let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
            let all: Vec<i64> = (0..n * count).map(|i| 3 * i as i64 - 7).collect();
            let allv = concat((0..n).map(|r| vblock(r, count)));
            let (h, nodes) = launch_with_host::<L, _, _, _, _>(
                n,
                |host| {
                    let g = host.gather::<i64>(&[], Rank::Host)?.expect("host is root");
                    let mut g2 = vec![0i64; n * count];
                    host.gather_into::<i64>(&[], &mut g2, Rank::Host)?;
                    let gv = host.gatherv::<i64>(&[], Rank::Host)?.expect("root");
                    host.scatter_into(&all, &mut [], Rank::Host)?;
                    host.scatterv(&allv, &vcounts, Rank::Host)?;
                    host.scatterv_into(&allv, &vcounts, &mut [], Rank::Host)?;
                    Ok::<_, Error>((g, g2, gv))
                },
                |comm| {
                    let me = comm.rank();
                    let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
                    assert!(comm.gather(&input, Rank::Host)?.is_none());
                    comm.gather_into(&input, &mut [], Rank::Host)?;
                    assert!(comm.gatherv(&vblock(me, count), Rank::Host)?.is_none());
                    let mut s = vec![0i64; count];
                    comm.scatter_into(&[], &mut s, Rank::Host)?;
                    let sv = comm.scatterv::<i64>(&[], &[], Rank::Host)?;
                    let mut sv2 = vec![0i64; vcounts[me]];
                    comm.scatterv_into(&[], &vcounts, &mut sv2, Rank::Host)?;
                    Ok::<_, Error>((s, sv, sv2))
                },
            )
            .unwrap();
            let want = concat((0..n).map(|r| (0..count).map(|i| val(r, i)).collect()));
            assert_eq!(h.0, want, "gather to host n={n} count={count}");
            assert_eq!(h.1, want, "gather_into to host n={n} count={count}");
            assert_eq!(
                h.2,
                (allv.clone(), vcounts.clone()),
                "gatherv to host n={n}"
            );
            for (r, (s, sv, sv2)) in nodes.iter().enumerate() {
                assert_eq!(
                    s,
                    &all[r * count..(r + 1) * count],
                    "scatter from host n={n}"
                );
                assert_eq!(sv, &vblock(r, count), "scatterv from host n={n} rank {r}");
                assert_eq!(sv2, &vblock(r, count), "scatterv_into from host n={n}");
            }
        }
    }
}

pub(crate) fn sparse_multicast_reaches_exactly_the_targets<L: Matrix>() {
    for &n in L::NS {
        for &count in L::COUNTS {
            for root in [0, n / 2, n - 1] {
                let targets: Vec<usize> = (0..n)
                    .rev()
                    .filter(|&t| t != root && (t % 3 != 1 || count == 0))
                    .collect();
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let got = if me == root {
                        let data: Vec<i64> = (0..count).map(|i| val(root, i)).collect();
                        comm.multicast(&data, &targets)?;
                        None
                    } else if targets.contains(&me) {
                        Some(comm.multicast_recv::<i64>()?)
                    } else {
                        None
                    };
                    // Everyone still agrees on the ordinary collective sequence.
                    let s = comm.allreduce(&[1u32], Sum)?;
                    Ok::<_, Error>((got, s[0]))
                })
                .unwrap();
                let want: Vec<i64> = (0..count).map(|i| val(root, i)).collect();
                for (r, (got, s)) in out.iter().enumerate() {
                    assert_eq!(*s, n as u32);
                    if targets.contains(&r) {
                        assert_eq!(got.as_ref(), Some(&(want.clone(), root)), "n={n} rank {r}");
                    } else {
                        assert!(got.is_none());
                    }
                }
            }
        }
    }
}

pub(crate) fn multicast_bad_targets_and_type_mismatch<L: Matrix>() {
    let r = launch::<L, _, _>(4, |comm| {
        let me = comm.rank();
        if me == 0 {
            let e1 = comm.multicast(&[1u8], &[0]).unwrap_err().to_string();
            let e2 = comm.multicast(&[1u8], &[4, 3]).unwrap_err().to_string();
            let e3 = comm.multicast(&[1u8], &[2, 2]).unwrap_err().to_string();
            comm.multicast(&[1.5f64, 2.5], &[1, 2, 3])?;
            Ok::<_, Error>(vec![e1, e2, e3])
        } else {
            // Every target gets an error, none hangs (forwarding comes
            // first); a node a refused call names validly gets the root's
            // error too (in either order: the data may come through
            // another node).
            let calls = if me == 1 { 1 } else { 2 };
            let mut errs: Vec<String> = (0..calls)
                .map(|_| comm.multicast_recv::<i32>().unwrap_err().to_string())
                .collect();
            errs.sort_by_key(|e| e.contains("i32"));
            Ok(errs)
        }
    })
    .unwrap();
    assert!(r[0][0].contains("root itself"), "{:?}", r[0]);
    assert!(r[0][1].contains("out of range"), "{:?}", r[0]);
    assert!(r[0][2].contains("twice"), "{:?}", r[0]);
    for m in &r[1..] {
        let last = m.last().unwrap();
        assert!(last.contains("multicast") && last.contains("i32"), "{m:?}");
    }
    for (node, why) in [(3, "out of range"), (2, "twice")] {
        let e = &r[node][0];
        assert!(
            e.contains("multicast from rank 0") && e.contains(why),
            "{e}"
        );
    }
}

/// Wait for `reqs` in order on even nodes and in reverse on odd ones (the
/// collectives must not depend on the order their requests are waited in).
fn wait_in_turn(
    me: usize,
    mut reqs: Vec<hypercomm::collective::CollRequest<'_>>,
) -> Result<(), Error> {
    if me % 2 == 1 {
        reqs.reverse();
    }
    reqs.into_iter().try_for_each(|r| r.wait())
}

pub(crate) fn nonblocking_gather_scatter_allgather_alltoall_reduce_scatter_scan<L: Matrix>() {
    for &n in L::NS {
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            let count = 33;
            let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
            let all: Vec<i64> = (0..n * count).map(|i| i as i64 + me as i64).collect();
            let mut ag = vec![0i64; n * count];
            let mut a2a = vec![0i64; n * count];
            let mut sc = vec![0i64; count];
            let mut ex = vec![0i64; count];
            let mut seg = vec![0i64; count];
            let mut g = vec![0i64; if me == 0 { n * count } else { 0 }];
            let mut s = vec![0i64; count];
            let mut rs = vec![0i64; count];
            let seg_scan = Scan {
                direction: Direction::Downward,
                segmentation: Segmentation::StartBit,
                bit: sbit(me),
                ..Scan::default()
            };
            hypercomm::scope(|sc_| -> Result<(), Error> {
                let r1 = comm.iallgather(sc_, &input, &mut ag)?;
                let r2 = comm.ialltoall(sc_, &all, &mut a2a)?;
                let r3 = comm.iscan(sc_, &input, &mut sc, Sum, &Scan::default())?;
                let r4 = comm.iscan(sc_, &input, &mut ex, Sum, &Scan::EXCLUSIVE)?;
                let r5 = comm.iscan(sc_, &input, &mut seg, Sum, &seg_scan)?;
                let r6 = comm.igather(sc_, &input, &mut g, 0)?;
                let r7 = comm.iscatter(sc_, &all, &mut s, n - 1)?;
                let r8 = comm.ireduce_scatter(sc_, &all, &mut rs, Sum)?;
                wait_in_turn(me, vec![r1, r2, r3, r4, r5, r6, r7, r8])
            })?;
            Ok::<_, Error>((ag, a2a, sc, ex, seg, g, s, rs))
        })
        .unwrap();
        let count = 33;
        let cat = concat((0..n).map(|r| (0..count).map(|i| val(r, i)).collect()));
        let bits: Vec<bool> = (0..n).map(sbit).collect();
        let add = |a: &i64, b: &i64| a + b;
        for (r, (ag, a2a, sc, ex, seg, g, s, rs)) in out.iter().enumerate() {
            assert_eq!(ag, &cat);
            let want: Vec<i64> = (0..n)
                .flat_map(|q| (r * count..(r + 1) * count).map(move |i| (i + q) as i64))
                .collect();
            assert_eq!(a2a, &want);
            for i in 0..count {
                assert_eq!(sc[i], (0..=r).map(|q| val(q, i)).sum::<i64>());
                assert_eq!(ex[i], (0..r).map(|q| val(q, i)).sum::<i64>());
                let vals: Vec<i64> = (0..n).map(|q| val(q, i)).collect();
                let want = segmented_scan_serial(
                    &vals,
                    &bits,
                    &add,
                    &0,
                    Direction::Downward,
                    Inclusion::Inclusive,
                    Segmentation::StartBit,
                );
                assert_eq!(seg[i], want[r], "n={n} rank {r} elem {i}");
            }
            if r == 0 {
                assert_eq!(g, &cat);
            }
            let mine: Vec<i64> = (r * count..(r + 1) * count)
                .map(|i| (i + n - 1) as i64)
                .collect();
            assert_eq!(s, &mine);
            let want: Vec<i64> = (r * count..(r + 1) * count)
                .map(|i| (0..n).map(|q| (i + q) as i64).sum())
                .collect();
            assert_eq!(rs, &want);
        }
    }
}

/// What node `from` sends node `to` in the all-to-allv tests.
fn pair_block(from: usize, to: usize) -> Vec<i64> {
    (0..(from + 2 * to) % 4)
        .map(|k| (from * 100 + to * 10 + k) as i64)
        .collect()
}

/// The variable-count collectives started together, waited for in
/// opposite orders on odd and even nodes, against serial results.
pub(crate) fn nonblocking_variable_count_collectives<L: Matrix>() {
    for &n in L::NS {
        let counts: Vec<usize> = (0..n).map(|r| vc(r, 5)).collect();
        let total: usize = counts.iter().sum();
        let offset = |r: usize| counts[..r].iter().sum::<usize>();
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            let mine: Vec<i64> = (0..counts[me]).map(|i| val(me, i)).collect();
            let scattered: Vec<i64> = if me == 0 {
                (0..total).map(|j| 1000 + j as i64).collect()
            } else {
                Vec::new()
            };
            let send_counts: Vec<usize> = (0..n).map(|q| pair_block(me, q).len()).collect();
            let recv_counts: Vec<usize> = (0..n).map(|q| pair_block(q, me).len()).collect();
            let sent: Vec<i64> = (0..n).flat_map(|q| pair_block(me, q)).collect();
            let long: Vec<i64> = (0..total).map(|j| val(me, j)).collect();
            let mut g = vec![0i64; if me == n - 1 { total } else { 0 }];
            let mut sc = vec![0i64; counts[me]];
            let mut ag = vec![0i64; total];
            let mut a2a = vec![0i64; recv_counts.iter().sum()];
            let mut rs = vec![0i64; counts[me]];
            hypercomm::scope(|s| -> Result<(), Error> {
                let reqs = vec![
                    comm.igatherv(s, &mine, &mut g, &counts, n - 1)?,
                    comm.iscatterv(s, &scattered, &counts, &mut sc, 0)?,
                    comm.iallgatherv(s, &mine, &mut ag, &counts)?,
                    comm.ialltoallv(s, &sent, &send_counts, &mut a2a, &recv_counts)?,
                    comm.ireduce_scatterv(s, &long, &counts, &mut rs, Sum)?,
                ];
                wait_in_turn(me, reqs)
            })?;
            Ok::<_, Error>((g, sc, ag, a2a, rs))
        })
        .unwrap();
        let cat = concat((0..n).map(|r| (0..counts[r]).map(|i| val(r, i)).collect()));
        for (r, (g, sc, ag, a2a, rs)) in out.iter().enumerate() {
            if r == n - 1 {
                assert_eq!(g, &cat, "n={n}: gatherv at the root");
            }
            let block = offset(r)..offset(r) + counts[r];
            let want: Vec<i64> = block.clone().map(|j| 1000 + j as i64).collect();
            assert_eq!(sc, &want, "n={n}: scatterv at {r}");
            assert_eq!(ag, &cat, "n={n}: allgatherv at {r}");
            let want: Vec<i64> = (0..n).flat_map(|q| pair_block(q, r)).collect();
            assert_eq!(a2a, &want, "n={n}: alltoallv at {r}");
            let want: Vec<i64> = block.map(|j| (0..n).map(|q| val(q, j)).sum()).collect();
            assert_eq!(rs, &want, "n={n}: reduce_scatterv at {r}");
        }
    }
}

/// Bad counts in a non-blocking variable-count call: an error on the node
/// whose arguments are wrong and on every other node, none waits.
pub(crate) fn nonblocking_variable_counts_that_disagree_fail_everywhere<L: Matrix>() {
    let out = launch::<L, _, _>(3, |comm| {
        let me = comm.rank();
        let counts = [2usize, 1, 3];
        // Node 1 gives an input one element too long.
        let input = vec![me as u32; counts[me] + usize::from(me == 1)];
        let mut output = vec![0u32; 6];
        let e = hypercomm::scope(|s| -> Result<(), Error> {
            comm.iallgatherv(s, &input, &mut output, &counts)?.wait()
        })
        .unwrap_err();
        Ok::<_, Error>(e.to_string())
    })
    .unwrap();
    assert!(out[1].contains("input"), "{out:?}");
    for e in &out {
        assert!(e.contains("allgatherv"), "{out:?}");
    }
}

/// A non-blocking call given bad arguments (one count too many, a root
/// outside the communicator, buffers of the wrong length) fails on every
/// rank at once with an error that names the call the program made
/// (`igatherv`, not the blocking `gatherv` whose checks found it), and the
/// communicator goes on.
pub(crate) fn nonblocking_calls_with_bad_arguments_name_themselves<L: Matrix>() {
    const CALLS: [&str; 7] = [
        "igatherv",
        "iscatterv",
        "iallgatherv",
        "ialltoallv",
        "ireduce_scatterv",
        "ibcast",
        "iallreduce",
    ];
    let out = launch::<L, _, _>(3, |comm| {
        let counts = [1usize, 1, 1, 1];
        let input = vec![7u32; 4];
        let (mut g, mut sc, mut ag, mut a2a, mut rs) =
            (vec![0u32; 4], [0u32], vec![0u32; 4], vec![0u32; 3], [0u32]);
        let (mut b, mut ar) = ([0u32; 2], [0u32; 3]);
        let errs: Vec<Option<Error>> = hypercomm::scope(|s| {
            vec![
                comm.igatherv(s, &input[..1], &mut g, &counts, 0).err(),
                comm.iscatterv(s, &input, &counts, &mut sc, 0).err(),
                comm.iallgatherv(s, &input[..1], &mut ag, &counts).err(),
                comm.ialltoallv(s, &input[..3], &counts, &mut a2a, &counts[..3])
                    .err(),
                comm.ireduce_scatterv(s, &input, &counts, &mut rs, Sum)
                    .err(),
                comm.ibcast(s, &mut b, 5).err(),
                comm.iallreduce(s, &input, &mut ar, Sum).err(),
            ]
        });
        let mut v = [0u32; 1];
        comm.allreduce_into(&[1u32], &mut v, Sum)?;
        let errs: Vec<String> = errs
            .into_iter()
            .map(|e| e.map(|e| e.to_string()).unwrap_or_default())
            .collect();
        Ok::<_, Error>((v[0], errs))
    })
    .unwrap();
    for (rank, (sum, errs)) in out.iter().enumerate() {
        assert_eq!(*sum, 3, "rank {rank}: the communicator goes on");
        for (call, e) in CALLS.iter().zip(errs) {
            assert!(
                e.starts_with(&format!("invalid argument to {call}: "))
                    || e.starts_with(&format!("{call}: ")),
                "rank {rank}, {call}: {e:?}"
            );
        }
    }
}

/// The bits of a rank's allreduce, reduce, scan and reduce-scatter results.
type Bits4 = (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>);

/// Random non-integer data of rank r (a fixed LCG, reproducible).
fn noisy(r: usize, count: usize) -> Vec<f64> {
    let mut x = (r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..count)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let m = (x >> 11) as f64 / (1u64 << 53) as f64;
            (m - 0.5) * 10f64.powi(((x >> 3) % 12) as i32 - 6)
        })
        .collect()
}

pub(crate) fn reproducible_mode_is_bitwise_identical_across_algorithms_and_topologies<L: Matrix>() {
    use hypercomm::collective::Topology;
    use hypercomm_algo::RingOrder;
    let tops = [
        Topology::Auto,
        Topology::Hypercube,
        Topology::Full,
        Topology::Ring(RingOrder::NATURAL),
        Topology::Ring(RingOrder::GRAY),
        Topology::BiRing(RingOrder::NATURAL),
    ];
    let allreduce_algs = algs(Collective::Allreduce);
    let reduce_algs = algs(Collective::Reduce);
    let scan_algs = algs(Collective::Scan);
    let rs_algs = algs(Collective::ReduceScatter);
    for n in [3usize, 5, 8, 13] {
        let count = 257;
        let mut seen: Option<Vec<Bits4>> = None;
        for t in tops {
            let rounds = [&allreduce_algs, &reduce_algs, &scan_algs, &rs_algs]
                .iter()
                .map(|v| v.len())
                .max()
                .unwrap_or(1);
            for k in 0..rounds {
                let out = launch::<L, _, _>(n, |comm| {
                    comm.set_topology(t);
                    let me = comm.rank();
                    let x = noisy(me, count);
                    let ro = |a| CollOpts {
                        algorithm: a,
                        reproducible: true,
                        ..Default::default()
                    };

                    let mut a = vec![0.0; count];
                    comm.allreduce_into_with(
                        &x,
                        &mut a,
                        Sum,
                        &ro(allreduce_algs[k % allreduce_algs.len()]),
                    )?;
                    let mut r = vec![0.0; if me == 1 { count } else { 0 }];
                    comm.reduce_into_with(
                        &x,
                        &mut r,
                        Sum,
                        1usize,
                        &ro(reduce_algs[k % reduce_algs.len()]),
                    )?;
                    let mut s = vec![0.0; count];
                    let sc = Scan::default();
                    comm.scan_into_with(&x, &mut s, Sum, &sc, &ro(scan_algs[k % scan_algs.len()]))?;
                    let xs = noisy(me, count * n);
                    let mut rs = vec![0.0; count];
                    comm.reduce_scatter_into_with(
                        &xs,
                        &mut rs,
                        Sum,
                        &ro(rs_algs[k % rs_algs.len()]),
                    )?;
                    // The same without reproducible mode: may differ in the last bits.
                    let mut free = vec![0.0; count];
                    comm.allreduce_into_with(
                        &x,
                        &mut free,
                        Sum,
                        &opts(allreduce_algs[k % allreduce_algs.len()]),
                    )?;
                    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<u64>>();
                    Ok::<_, Error>(((bits(&a), bits(&r), bits(&s), bits(&rs)), free, a))
                })
                .unwrap();
                let got: Vec<_> = out.iter().map(|o| o.0.clone()).collect();
                // Allreduce: identical on every rank.
                for o in &got {
                    assert_eq!(o.0, got[0].0, "n={n} {t:?} k={k}");
                }
                // And equal to the canonical serial bracketing.
                let want: Vec<u64> = (0..count)
                    .map(|i| {
                        let xs: Vec<f64> = (0..n).map(|r| noisy(r, count)[i]).collect();
                        hypercomm_algo::reproducible::canonical_fold(&xs, &|a, b| a + b).to_bits()
                    })
                    .collect();
                assert_eq!(got[0].0, want, "n={n} {t:?} k={k}");
                assert_eq!(got[1].1, want, "reduce n={n} {t:?} k={k}");
                match &seen {
                    None => seen = Some(got),
                    Some(s) => assert_eq!(s, &got, "n={n} {t:?} k={k}"),
                }
                for (_, free, a) in &out {
                    for (f, a) in free.iter().zip(a) {
                        // Without reproducible mode only closeness is promised.
                        assert!((f - a).abs() <= 1e-9 * (1.0 + a.abs()));
                    }
                }
            }
        }
    }
}

pub(crate) fn user_wildcard_receives_never_take_collective_traffic<L: Matrix>() {
    use hypercomm::{ANY_SOURCE, ANY_TAG};
    for n in [2usize, 3, 5, 8] {
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            let x: Vec<i64> = (0..20).map(|i| val(me, i)).collect();
            let mut user = [0u64; 4];
            let mut ag = vec![0i64; 20 * n];
            let mut sc = vec![0i64; 20];
            let st = hypercomm::scope(|s| -> Result<_, Error> {
                // A wildcard receive posted before any collective traffic.
                let ur = comm.irecv(s, &mut user, ANY_SOURCE, ANY_TAG)?;
                let c1 = comm.iallgather(s, &x, &mut ag)?;
                let c2 = comm.iscan(s, &x, &mut sc, Sum, &Scan::default())?;
                comm.gather(&x, 0usize)?;
                comm.alltoall(&vec![me as i64; n])?;
                comm.scatterv(&vec![me as i64; 20 * n], &vec![20; n], 0usize)?;
                if me == 0 {
                    let data: Vec<u8> = vec![7; 3];
                    comm.multicast(&data, &(1..n).collect::<Vec<_>>())?;
                } else {
                    comm.multicast_recv::<u8>()?;
                }
                // A blocking wildcard receive on rank 0 while the others
                // still have collectives in flight.
                let mut extra = None;
                if me == 0 {
                    let (v, st) = comm.recv::<u64>(ANY_SOURCE, ANY_TAG)?;
                    extra = Some((v, rank_out(st.source), st.tag));
                }
                c1.wait()?;
                c2.wait()?;
                // Only now the user messages: to (me+1) % n, tag 77 + me.
                comm.send(&[me as u64 * 10; 4], (me + 1) % n, 77 + me as u32)?;
                if me == n - 1 {
                    comm.send(&[99u64], 0usize, 5)?;
                }
                let st = ur.wait()?;
                Ok((rank_out(st.source), st.tag, extra))
            })?;
            Ok::<_, Error>((st, user))
        })
        .unwrap();
        for (r, ((src, tag, extra), user)) in out.iter().enumerate() {
            let prev = (r + n - 1) % n;
            assert_eq!(
                (rank_in(*src), *tag),
                (Rank::Node(prev), 77 + prev as u32),
                "n={n}"
            );
            assert_eq!(user, &[prev as u64 * 10; 4]);
            if r == 0 {
                let extra = extra.map(|(v, s, t)| (v, rank_in(s), t));
                assert_eq!(extra, Some((99, Rank::Node(n - 1), 5)));
            }
        }
    }
}

pub(crate) fn mismatches_of_new_collectives_are_errors_on_every_rank<L: Matrix>() {
    for n in [2usize, 3, 5] {
        // gather: different roots.
        let r = launch::<L, _, _>(n, |comm| {
            let root = if comm.rank() == 1 { 1usize } else { 0 };
            let mut o = vec![0u32; 2 * n];
            Ok::<_, Error>(
                comm.gather_into(&[1u32, 2], &mut o, root)
                    .unwrap_err()
                    .to_string(),
            )
        })
        .unwrap();
        assert!(
            r.iter().all(|m| m.contains("root") && m.contains("gather")),
            "{r:?}"
        );
        // scatter: different counts.
        let r = launch::<L, _, _>(n, |comm| {
            let c = if comm.rank() == n - 1 { 3 } else { 2 };
            let mut o = vec![0i16; c];
            let input = vec![0i16; c * n];
            Ok::<_, Error>(
                comm.scatter_into(&input, &mut o, 0usize)
                    .unwrap_err()
                    .to_string(),
            )
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("count")), "{r:?}");
        // gather: different element types.
        let r = launch::<L, _, _>(n, |comm| {
            let e = if comm.rank() == 0 {
                comm.gather(&[1u32], 0usize).unwrap_err()
            } else {
                comm.gather(&[1.0f32], 0usize).unwrap_err()
            };
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("element type")), "{r:?}");
        // scan: different operators, then different directions.
        let r = launch::<L, _, _>(n, |comm| {
            let e = if comm.rank() == 0 {
                comm.scan(&[1i64], Max).unwrap_err()
            } else {
                comm.scan(&[1i64], Sum).unwrap_err()
            };
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("operator")), "{r:?}");
        let r = launch::<L, _, _>(n, |comm| {
            let sc = Scan {
                direction: if comm.rank() == 1 {
                    Direction::Downward
                } else {
                    Direction::Upward
                },
                ..Scan::default()
            };
            Ok::<_, Error>(comm.scan_with(&[1i64], Sum, &sc).unwrap_err().to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("downward")), "{r:?}");
        // scan vs exscan.
        let r = launch::<L, _, _>(n, |comm| {
            let e = if comm.rank() == 0 {
                comm.exscan(&[1u8], Sum).unwrap_err()
            } else {
                comm.scan(&[1u8], Sum).unwrap_err()
            };
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("exscan")), "{r:?}");
        // gatherv: counts given on every node disagree.
        let r = launch::<L, _, _>(n, |comm| {
            let mut counts = vec![1usize; n];
            if comm.rank() == 0 {
                counts[0] = 2;
            }
            let me = comm.rank();
            let mut o = vec![0u64; counts.iter().sum()];
            let input = vec![5u64; counts[me]];
            Ok::<_, Error>(
                comm.gatherv_into(&input, &mut o, &counts, 0usize)
                    .unwrap_err()
                    .to_string(),
            )
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("count")), "{r:?}");
        // gatherv: the same total, counts in another order on one node.
        let r = launch::<L, _, _>(n, |comm| {
            let mut counts: Vec<usize> = (1..=n).collect();
            if comm.rank() == n - 1 {
                counts.reverse();
            }
            let me = comm.rank();
            let mut o = vec![0u64; counts.iter().sum()];
            let input = vec![5u64; counts[me]];
            Ok::<_, Error>(timed_err(|| {
                comm.gatherv_into(&input, &mut o, &counts, 0usize)
            }))
        })
        .unwrap();
        for (k, t, fast) in &r {
            assert_eq!(k, "CollectiveMismatch", "{t}");
            assert!(t.contains("counts") && *fast, "{t}");
        }
        // alltoallv: node 0 expects one element more from node 1 than node
        // 1 sends it; every node fails, not only node 0.
        let r = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            let send = vec![2usize; n];
            let mut recv = vec![2usize; n];
            if me == 0 {
                recv[1] = 3;
            }
            let input = vec![me as u32; 2 * n];
            let mut out = vec![0u32; recv.iter().sum()];
            Ok::<_, Error>(timed_err(|| {
                comm.alltoallv_into(&input, &send, &mut out, &recv)
            }))
        })
        .unwrap();
        for (rank, (k, t, fast)) in r.iter().enumerate() {
            assert_eq!(k, "CollectiveMismatch", "n={n} rank {rank}: {t}");
            assert!(t.contains("recv_counts"), "n={n} rank {rank}: {t}");
            assert!(*fast, "n={n} rank {rank}: {t}");
        }
    }
}

/// Options that decide how a call is carried out — reproducible mode, a
/// forced algorithm, a pipeline's segment size, the topology setting, the
/// library collectives switch — differing between nodes are a mismatch on
/// every participant in check mode, within a second, naming the option
/// and the ranks: blocking, non-blocking and host-rooted calls alike (they
/// used to return wrong sums or wait). Calls that agree work afterwards.
pub(crate) fn options_that_differ_are_mismatches_on_every_rank<L: Matrix>() {
    use hypercomm::collective::Topology;
    use hypercomm_algo::RingOrder;
    // What each case's message must name, and whether the node that
    // differs from node 0 is the last one (else node 1).
    let named = [
        ("reproducible off vs on", false),
        ("algorithm ring vs recursive-doubling", true),
        ("segment_bytes 64 bytes vs 128 bytes", false),
        ("topology ring (Gray order, forward) vs auto", true),
        ("topology ring (Gray order, forward) vs auto", true),
        ("library collectives off vs on", false),
    ];
    for n in [2usize, 3] {
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            let last = me == n - 1;
            let x = [me as i64 + 1];
            let mut o = [0i64];
            let mut errs = Vec::new();
            // 1. Reproducible mode on node 0 only.
            let rep = CollOpts {
                reproducible: me == 0,
                ..CollOpts::default()
            };
            errs.push(timed_err(|| {
                comm.allreduce_into_with(&x, &mut o, Sum, &rep)
            }));
            // 2. Another forced algorithm on the last node.
            let alg = opts(if last {
                Algorithm::Ring
            } else {
                Algorithm::RecursiveDoubling
            });
            errs.push(timed_err(|| {
                comm.allreduce_into_with(&x, &mut o, Sum, &alg)
            }));
            // 3. A pipelined broadcast whose segments differ on node 1.
            let seg = CollOpts {
                algorithm: Algorithm::Chain,
                segment_bytes: Some(if me == 1 { 64 } else { 128 }),
                ..CollOpts::default()
            };
            let mut b = vec![me as u64; 64];
            errs.push(timed_err(|| comm.bcast_with(&mut b, 0usize, &seg)));
            // 4. A topology setting on the last node only; 5. the same,
            // non-blocking.
            if last {
                comm.set_topology(Topology::Ring(RingOrder::GRAY));
            }
            errs.push(timed_err(|| comm.allreduce_into(&x, &mut o, Sum)));
            errs.push(timed_err(|| {
                hypercomm::scope(|s| comm.iallreduce(s, &x, &mut o, Sum)?.wait())
            }));
            comm.set_topology(Topology::Auto);
            // 6. Library collectives on node 0 only (compared on every
            // transport, although only one with a library acts on them).
            comm.set_native_collectives(me == 0);
            errs.push(timed_err(|| comm.allreduce_into(&x, &mut o, Sum)));
            comm.set_native_collectives(false);
            comm.allreduce_into(&x, &mut o, Sum)?;
            Ok::<_, Error>((errs, o[0]))
        })
        .unwrap();
        for (r, (errs, sum)) in out.iter().enumerate() {
            assert_eq!(*sum, (n * (n + 1) / 2) as i64, "n={n} rank {r}");
            assert_eq!(errs.len(), named.len(), "n={n} rank {r}");
            for (case, ((kind, text, fast), (what, last))) in errs.iter().zip(named).enumerate() {
                let at = format!("n={n} rank {r} case {}: {kind}: {text}", case + 1);
                assert_eq!(kind, "CollectiveMismatch", "{at}");
                let who = if last { n - 1 } else { 1 };
                let diff = format!("rank {who} differs from rank 0: options differ ({what}");
                assert!(text.contains(&diff), "{at}");
                assert!(*fast, "not within a second: {at}");
            }
            assert_eq!(errs, &out[0].0, "n={n} rank {r}: every rank says the same");
        }
        // Host-rooted: the nodes disagree about reproducible mode in a
        // reduce to the host; every participant fails, the host too.
        let (h, nodes) = launch_with_host::<L, _, _, _, _>(
            n,
            |host| {
                let e = timed_err(|| host.reduce(&[0u32; 0], Sum, Rank::Host).map(|_| ()));
                let sum = host.reduce(&[0u32; 0], Sum, Rank::Host)?;
                Ok::<_, Error>((e, sum))
            },
            |comm| {
                let rep = CollOpts {
                    reproducible: comm.rank() == 0,
                    ..CollOpts::default()
                };
                let x = [comm.rank() as u32 + 1];
                let e = timed_err(|| comm.reduce_into_with(&x, &mut [], Sum, Rank::Host, &rep));
                comm.reduce(&x, Sum, Rank::Host)?;
                Ok::<_, Error>(e)
            },
        )
        .unwrap();
        let (host_err, sum) = h;
        assert_eq!(sum, Some(vec![(n * (n + 1) / 2) as u32]), "n={n}");
        for (who, (kind, text, fast)) in std::iter::once(("host".to_string(), &host_err)).chain(
            nodes
                .iter()
                .enumerate()
                .map(|(r, e)| (format!("node {r}"), e)),
        ) {
            assert_eq!(kind, "CollectiveMismatch", "n={n} {who}: {text}");
            assert!(
                text.contains("reproducible off vs on"),
                "n={n} {who}: {text}"
            );
            assert!(*fast, "n={n} {who}: not within a second: {text}");
        }
    }
}

/// Equal options other than the defaults pass the check and give what a
/// serial fold gives: reproducible mode with a segment size, a forced
/// pipelined broadcast, a ring topology setting, the library collectives
/// switch, on blocking and non-blocking calls; and a reduce to the host
/// whose host passes no options while the nodes ask for reproducible mode
/// (the host's part does not depend on them).
pub(crate) fn equal_non_default_options_match_a_serial_fold<L: Matrix>() {
    use hypercomm::collective::Topology;
    use hypercomm_algo::RingOrder;
    let count = 100;
    for n in [1usize, 2, 3, 5] {
        let serial_sum: Vec<i64> = (0..count)
            .map(|i| (0..n).map(|r| val(r, i)).sum())
            .collect();
        let serial_max: Vec<i64> = (0..count)
            .map(|i| (0..n).map(|r| val(r, i)).max().unwrap())
            .collect();
        let out = launch::<L, _, _>(n, |comm| {
            let me = comm.rank();
            comm.set_topology(Topology::Ring(RingOrder::GRAY));
            let input: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
            let mut sum = vec![0i64; count];
            let rep = CollOpts {
                reproducible: true,
                segment_bytes: Some(64),
                ..CollOpts::default()
            };
            comm.allreduce_into_with(&input, &mut sum, Sum, &rep)?;
            let mut b = if me == n - 1 {
                input.clone()
            } else {
                vec![0i64; count]
            };
            let chain = CollOpts {
                algorithm: Algorithm::Chain,
                segment_bytes: Some(128),
                ..CollOpts::default()
            };
            comm.bcast_with(&mut b, n - 1, &chain)?;
            let mut isum = vec![0i64; count];
            hypercomm::scope(|s| comm.iallreduce(s, &input, &mut isum, Sum)?.wait())?;
            comm.set_native_collectives(true);
            let mx = comm.allreduce(&input, Max)?;
            comm.set_native_collectives(false);
            comm.set_topology(Topology::Auto);
            Ok::<_, Error>((sum, b, isum, mx))
        })
        .unwrap();
        let want_b: Vec<i64> = (0..count).map(|i| val(n - 1, i)).collect();
        for (r, (sum, b, isum, mx)) in out.iter().enumerate() {
            assert_eq!(sum, &serial_sum, "reproducible allreduce n={n} rank {r}");
            assert_eq!(b, &want_b, "chain bcast n={n} rank {r}");
            assert_eq!(isum, &serial_sum, "iallreduce n={n} rank {r}");
            assert_eq!(mx, &serial_max, "allreduce max n={n} rank {r}");
        }
        let (h, _) = launch_with_host::<L, _, _, _, _>(
            n,
            |host| host.reduce(&[0i64; 0], Sum, Rank::Host),
            |comm| {
                let rep = CollOpts {
                    reproducible: true,
                    ..CollOpts::default()
                };
                let input: Vec<i64> = (0..count).map(|i| val(comm.rank(), i)).collect();
                comm.reduce_into_with(&input, &mut [], Sum, Rank::Host, &rep)
            },
        )
        .unwrap();
        assert_eq!(h, Some(serial_sum), "reduce to the host n={n}");
    }
}

/// The property test (its own module, so that its test is
/// `props::random_counts_roots_and_operators` on every transport).
pub(crate) mod props {
    use super::*;
    use hypercomm::collective::Loc;
    use proptest::prelude::*;

    /// The operators drawn: sum, max, min, xor, and a non-commutative
    /// affine composition (x -> a*x + b, applied in order).
    #[derive(Debug, Clone, Copy)]
    enum OpKind {
        Sum,
        Max,
        Min,
        Xor,
        Affine,
    }

    type LocU = Loc<u64, u64>;

    fn affine(p: LocU, q: LocU) -> LocU {
        Loc {
            value: p.value.wrapping_mul(q.value),
            index: q.value.wrapping_mul(p.index).wrapping_add(q.index),
        }
    }

    fn serial(op: OpKind, a: LocU, b: LocU) -> LocU {
        match op {
            OpKind::Sum => Loc {
                value: a.value.wrapping_add(b.value),
                index: a.index.wrapping_add(b.index),
            },
            OpKind::Max => Loc {
                value: a.value.max(b.value),
                index: a.index.max(b.index),
            },
            OpKind::Min => Loc {
                value: a.value.min(b.value),
                index: a.index.min(b.index),
            },
            OpKind::Xor => Loc {
                value: a.value ^ b.value,
                index: a.index ^ b.index,
            },
            OpKind::Affine => affine(a, b),
        }
    }

    fn user_op(op: OpKind) -> UserOp<LocU> {
        match op {
            OpKind::Affine => UserOp::ordered(affine),
            o => UserOp::commutative(move |a, b| serial(o, a, b)),
        }
    }

    fn elem(r: usize, i: usize, seed: u64) -> LocU {
        let x = seed
            .wrapping_add(r as u64 * 0x9e37_79b9)
            .wrapping_mul(0x2545_f491_4f6c_dd1d)
            .wrapping_add(i as u64 * 7919);
        Loc {
            value: (x >> 20) % 97 + 1,
            index: (x >> 40) % 1013,
        }
    }

    /// A `Loc` as plain data, to cross processes.
    fn pair(l: LocU) -> (u64, u64) {
        (l.value, l.index)
    }

    fn pairs(v: &[LocU]) -> Vec<(u64, u64)> {
        v.iter().copied().map(pair).collect()
    }

    /// Gather, scatter, reduce-scatter, reduce and (segmented) scans with
    /// random job sizes, counts, roots, operators and scan variants: 48
    /// cases. Process launchers give every process the same proptest seed,
    /// so all of them draw the same cases and shrink the same way.
    pub(crate) fn random_counts_roots_and_operators<L: Launcher>() {
        let strategy = (
            1usize..=9,
            0usize..40,
            0usize..100,
            prop_oneof![
                Just(OpKind::Sum),
                Just(OpKind::Max),
                Just(OpKind::Min),
                Just(OpKind::Xor),
                Just(OpKind::Affine)
            ],
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
            0u8..3,
            any::<u16>(),
        );
        let mut runner = crate::common::runner(48);
        runner
            .run(
                &strategy,
                |(n, count, root_pick, op, seed, dir_down, excl, seg, bits)| {
                    let root = root_pick % n;
                    let scan = |me: usize| Scan {
                        direction: if dir_down {
                            Direction::Downward
                        } else {
                            Direction::Upward
                        },
                        inclusion: if excl {
                            Inclusion::Exclusive
                        } else {
                            Inclusion::Inclusive
                        },
                        segmentation: match seg {
                            0 => Segmentation::None,
                            1 => Segmentation::SegmentBit,
                            _ => Segmentation::StartBit,
                        },
                        bit: bits >> me & 1 == 1,
                    };
                    // The identity of affine only.
                    let id = Loc {
                        value: 1u64,
                        index: 0u64,
                    };
                    let out = launch::<L, _, _>(n, |comm| {
                        let me = comm.rank();
                        let x: Vec<LocU> = (0..count).map(|i| elem(me, i, seed)).collect();
                        let uop = user_op(op);
                        let g = comm.gather(&x, root)?;
                        let all: Vec<LocU> = (0..n * count).map(|i| elem(root, i, seed)).collect();
                        let mut s = vec![LocU::default(); count];
                        comm.scatter_into(if me == root { &all } else { &[] }, &mut s, root)?;
                        let xs: Vec<LocU> = (0..n * count).map(|i| elem(me, i, seed)).collect();
                        let rs = comm.reduce_scatter(&xs, uop.clone())?;
                        let red = comm.reduce(&x, uop.clone(), root)?;
                        // Exclusive scans need an identity: use the affine one,
                        // meaningful for the affine operator.
                        let sc = if excl && !matches!(op, OpKind::Affine) {
                            None
                        } else {
                            Some(comm.scan_with(&x, uop.clone().with_identity(id), &scan(me))?)
                        };
                        Ok::<_, Error>((
                            g.as_deref().map(pairs),
                            pairs(&s),
                            pairs(&rs),
                            red.as_deref().map(pairs),
                            sc.as_deref().map(pairs),
                        ))
                    })
                    .unwrap();
                    let fold =
                        |xs: &[LocU]| xs.iter().copied().reduce(|a, b| serial(op, a, b)).unwrap();
                    for (r, (g, s, rs, red, sc)) in out.iter().enumerate() {
                        if r == root {
                            let want: Vec<LocU> = (0..n)
                                .flat_map(|q| (0..count).map(move |i| elem(q, i, seed)))
                                .collect();
                            prop_assert_eq!(g.as_ref(), Some(&pairs(&want)));
                            let want: Vec<LocU> = (0..count)
                                .map(|i| {
                                    fold(&(0..n).map(|q| elem(q, i, seed)).collect::<Vec<_>>())
                                })
                                .collect();
                            prop_assert_eq!(red.as_ref(), Some(&pairs(&want)));
                        }
                        prop_assert_eq!(
                            s,
                            &(r * count..(r + 1) * count)
                                .map(|i| pair(elem(root, i, seed)))
                                .collect::<Vec<_>>()
                        );
                        let want: Vec<LocU> = (r * count..(r + 1) * count)
                            .map(|i| fold(&(0..n).map(|q| elem(q, i, seed)).collect::<Vec<_>>()))
                            .collect();
                        prop_assert_eq!(rs, &pairs(&want));
                        if let Some(sc) = sc {
                            let bitv: Vec<bool> = (0..n).map(|q| scan(q).bit).collect();
                            let f = |a: &LocU, b: &LocU| serial(op, *a, *b);
                            for i in 0..count {
                                let vals: Vec<LocU> = (0..n).map(|q| elem(q, i, seed)).collect();
                                let s = scan(r);
                                let want = segmented_scan_serial(
                                    &vals,
                                    &bitv,
                                    &f,
                                    &id,
                                    s.direction,
                                    s.inclusion,
                                    s.segmentation,
                                );
                                prop_assert_eq!(sc[i], pair(want[r]), "rank {} elem {}", r, i);
                            }
                        }
                    }
                    Ok(())
                },
            )
            .unwrap();
    }
    /// A small count drawn from `seed` for the pair (a, b), 0 to `below - 1`.
    fn drawn(seed: u64, a: usize, b: usize, below: u64) -> usize {
        let x = seed
            .wrapping_add((a as u64) << 32 | b as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((x >> 33) % below) as usize
    }

    /// The non-blocking variable-count collectives with random job sizes,
    /// counts (zeros included), roots and operators, started together and
    /// waited for in either order, against serial results: 32 cases.
    pub(crate) fn random_variable_counts_nonblocking<L: Launcher>() {
        let strategy = (
            1usize..=9,
            0usize..100,
            prop_oneof![Just(OpKind::Sum), Just(OpKind::Max), Just(OpKind::Affine)],
            any::<u64>(),
        );
        let mut runner = crate::common::runner(32);
        runner
            .run(&strategy, |(n, root_pick, op, seed)| {
                let root = root_pick % n;
                let counts: Vec<usize> = (0..n).map(|q| drawn(seed, q, n, 12)).collect();
                let total: usize = counts.iter().sum();
                let at = |r: usize| counts[..r].iter().sum::<usize>();
                let sends = |a: usize, b: usize| drawn(seed, a, b + 64, 6);
                let out = launch::<L, _, _>(n, |comm| {
                    let me = comm.rank();
                    let mine: Vec<LocU> = (0..counts[me]).map(|i| elem(me, i, seed)).collect();
                    let all: Vec<LocU> = if me == root {
                        (0..total).map(|i| elem(n + root, i, seed)).collect()
                    } else {
                        Vec::new()
                    };
                    let long: Vec<LocU> = (0..total).map(|i| elem(me, i, seed)).collect();
                    let send_counts: Vec<usize> = (0..n).map(|q| sends(me, q)).collect();
                    let recv_counts: Vec<usize> = (0..n).map(|q| sends(q, me)).collect();
                    let sent: Vec<LocU> = (0..n)
                        .flat_map(|q| (0..sends(me, q)).map(move |i| elem(me, q * 100 + i, seed)))
                        .collect();
                    let zero = LocU::default();
                    let mut g = vec![zero; if me == root { total } else { 0 }];
                    let mut sc = vec![zero; counts[me]];
                    let mut ag = vec![zero; total];
                    let mut a2a = vec![zero; recv_counts.iter().sum()];
                    let mut rs = vec![zero; counts[me]];
                    hypercomm::scope(|s| -> Result<(), Error> {
                        let reqs = vec![
                            comm.igatherv(s, &mine, &mut g, &counts, root)?,
                            comm.iscatterv(s, &all, &counts, &mut sc, root)?,
                            comm.iallgatherv(s, &mine, &mut ag, &counts)?,
                            comm.ialltoallv(s, &sent, &send_counts, &mut a2a, &recv_counts)?,
                            comm.ireduce_scatterv(s, &long, &counts, &mut rs, user_op(op))?,
                        ];
                        wait_in_turn(me, reqs)
                    })?;
                    Ok::<_, Error>((pairs(&g), pairs(&sc), pairs(&ag), pairs(&a2a), pairs(&rs)))
                })
                .unwrap();
                let cat: Vec<(u64, u64)> = (0..n)
                    .flat_map(|q| (0..counts[q]).map(move |i| pair(elem(q, i, seed))))
                    .collect();
                for (r, (g, sc, ag, a2a, rs)) in out.iter().enumerate() {
                    if r == root {
                        prop_assert_eq!(g, &cat);
                    }
                    let block = at(r)..at(r) + counts[r];
                    let want: Vec<_> = block
                        .clone()
                        .map(|i| pair(elem(n + root, i, seed)))
                        .collect();
                    prop_assert_eq!(sc, &want);
                    prop_assert_eq!(ag, &cat);
                    let want: Vec<_> = (0..n)
                        .flat_map(|q| {
                            (0..sends(q, r)).map(move |i| pair(elem(q, r * 100 + i, seed)))
                        })
                        .collect();
                    prop_assert_eq!(a2a, &want);
                    let want: Vec<_> = block
                        .map(|i| {
                            let v: Vec<LocU> = (0..n).map(|q| elem(q, i, seed)).collect();
                            pair(v.into_iter().reduce(|a, b| serial(op, a, b)).unwrap())
                        })
                        .collect();
                    prop_assert_eq!(rs, &want, "n={} counts {:?}", n, &counts);
                }
                Ok(())
            })
            .unwrap();
    }
}
