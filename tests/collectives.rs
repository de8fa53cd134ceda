//! Collectives against serial computations (see `tests/common/collectives.rs`):
//! every operation × algorithm × job size × count, under the same test names
//! for every transport. The sizes come from the launcher (`Matrix`): threads
//! run n ∈ {1,2,3,4,5,7,8,13,16} × count ∈ {0,1,64,4099}; shared memory and
//! TCP, where every job is a split of a 17-process world on a possibly small
//! machine, run n ∈ {1,2,3,5,8,16} × count ∈ {0,1,64,4099}.

mod common;

/// Ranks as threads of this process (`hypercomm::run`).
mod thread {
    crate::common::collectives::collectives_suite!(crate::common::Threads);

    /// Check mode off: blocking calls run their schedules directly.
    mod unchecked {
        crate::common::collectives::unchecked_suite!(full
            crate::common::Unchecked<crate::common::Threads>);
    }
}

/// Ranks as processes of this test binary, over shared memory (see
/// `tests/common/procs.rs` for how a test body runs as a job).
mod shm {
    crate::common::collectives::collectives_suite!(
        crate::common::Processes<crate::common::procs::Shm>
    );

    /// Check mode off: blocking calls run their schedules directly.
    mod unchecked {
        crate::common::collectives::unchecked_suite!(short
            crate::common::Unchecked<crate::common::Processes<crate::common::procs::Shm>>);
    }
}

/// Ranks as processes of this test binary, over TCP.
mod tcp {
    crate::common::collectives::collectives_suite!(crate::common::Processes);
}

/// Pipelined chains of large segments between threads, with more threads
/// than cores (two jobs at once): the sender of each segment waits for the
/// receiver to copy it, and the receiver's copy wakes it without a
/// message. The deadlock detector once took that moment — both blocked,
/// no message in flight — for a deadlock and ended the job.
#[test]
fn chains_of_lent_segments_are_not_taken_for_deadlocks() {
    use hypercomm::{Algorithm, CollOpts};
    let opts = CollOpts {
        algorithm: Algorithm::Chain,
        ..CollOpts::default()
    };
    let job = || {
        hypercomm::run(2, |comm| -> hypercomm::Result<()> {
            let n = 1 << 18; // 2 MiB of f64, lent segment by segment
            for i in 0..20 {
                let mut b: Vec<f64> = if comm.rank() == 0 {
                    (0..n).map(|k| (k + i) as f64).collect()
                } else {
                    vec![0.0; n]
                };
                comm.bcast_with(&mut b, 0usize, &opts)?;
                assert!(b.iter().enumerate().all(|(k, &x)| x == (k + i) as f64));
                let x = vec![comm.rank() as f64 + 1.0; n];
                let mut out = vec![0.0; if comm.rank() == 0 { n } else { 0 }];
                comm.reduce_into_with(&x, &mut out, hypercomm::collective::Sum, 0usize, &opts)?;
                assert!(out.iter().all(|&v| v == 3.0));
            }
            Ok(())
        })
    };
    std::thread::scope(|s| {
        let a = s.spawn(job);
        let b = s.spawn(job);
        a.join().expect("first job").expect("first job's ranks");
        b.join().expect("second job").expect("second job's ranks");
    });
}

/// Reduce-scatterv blocks that one node gives differently (the same total,
/// another split) are a mismatch on every node in check mode, as they are
/// for gatherv and scatterv, and the nodes stay in step: the blocks used to
/// go unchecked, so one node failed on a message's length, another waited
/// and a third returned a wrong block.
#[test]
fn reduce_scatterv_counts_that_differ_are_a_mismatch_on_every_rank() {
    use hypercomm::collective::Sum;
    use hypercomm::{Error, TransportKind};
    let n = 3;
    let out = hypercomm::run_on(TransportKind::Thread, n, |comm| {
        let me = comm.rank();
        let counts = if me == 0 { vec![2, 0, 1] } else { vec![1; n] };
        let mut block = vec![0i32; counts[me]];
        let e = comm
            .reduce_scatterv_into(&[1i32; 3], &counts, &mut block, Sum)
            .unwrap_err();
        let after = comm.allreduce(&[1i32], Sum)?;
        Ok::<_, Error>((e, after))
    })
    .unwrap();
    for (r, (e, after)) in out.iter().enumerate() {
        assert!(
            matches!(e, Error::CollectiveMismatch(m) if m.contains("counts")),
            "rank {r}: {e}"
        );
        assert_eq!(after, &[n as i32], "rank {r}");
    }
}

/// Arguments that are invalid on one node only — a forced algorithm the
/// collective does not have, gatherv counts of the wrong length, a root's
/// buffer of the wrong length, a block that is not the node's count — fail
/// that node with its own error and every other node with a mismatch that
/// names it, and the nodes stay in step: the next collective works.
#[test]
fn invalid_arguments_on_one_rank_fail_every_rank_and_keep_them_in_step() {
    use hypercomm::collective::Sum;
    use hypercomm::{CollOpts, Error, TransportKind};
    let n = 3;
    let out = hypercomm::run_on(TransportKind::Thread, n, |comm| {
        let me = comm.rank();
        let mut errs = Vec::new();
        let bruck = CollOpts {
            algorithm: "bruck".parse().unwrap(),
            ..CollOpts::default()
        };
        let opts = if me == 0 { bruck } else { CollOpts::default() };
        errs.push(comm.bcast_with(&mut [1u8; 3], 0usize, &opts));
        let opts_r = if me == 2 {
            CollOpts {
                algorithm: "pairwise".parse().unwrap(),
                ..CollOpts::default()
            }
        } else {
            CollOpts::default()
        };
        let mut r = vec![0i32; if me == 0 { 2 } else { 0 }];
        errs.push(comm.reduce_into_with(&[1i32; 2], &mut r, Sum, 0usize, &opts_r));
        let counts = if me == 1 { vec![1; n + 1] } else { vec![1; n] };
        let mut g = vec![0i32; if me == 0 { n } else { 0 }];
        errs.push(comm.gatherv_into(&[1i32], &mut g, &counts, 0usize));
        let mut g = vec![0i32; if me == 0 { n + 1 } else { 0 }];
        errs.push(comm.gatherv_into(&[1i32], &mut g, &[1; 3], 0usize));
        let mine = vec![1i32; if me == 1 { 2 } else { 1 }];
        errs.push(comm.allgatherv_into(&mine, &mut [0; 3], &[1; 3]));
        let input = vec![1i32; if me == 0 { n + 1 } else { 0 }];
        errs.push(comm.scatterv_into(&input, &[1; 3], &mut [0], 0usize));
        let after = comm.allreduce(&[1i32], Sum)?;
        Ok::<_, Error>((errs, after))
    })
    .unwrap();
    every_rank_failed(&out, &[0, 2, 1, 0, 1, 0], n);
}

/// The same for the forms that learn the counts first (gatherv, scatterv,
/// alltoallv) and for reduce_scatter's block length: an invalid argument
/// on one node — a root out of range, the root's counts of the wrong
/// length, send counts of the wrong length, an input that is not a whole
/// number of blocks — used to leave the other nodes in the count exchange
/// while that node went on, so every later call failed too.
#[test]
fn invalid_arguments_to_count_learning_forms_fail_every_rank_and_keep_them_in_step() {
    use hypercomm::collective::Sum;
    use hypercomm::{Error, TransportKind};
    let n = 3;
    let out = hypercomm::run_on(TransportKind::Thread, n, |comm| {
        let me = comm.rank();
        let mut errs = Vec::new();
        let root = if me == 1 { n } else { 0 };
        errs.push(comm.gatherv(&[1i32], root).map(|_| ()));
        let counts = if me == 0 { vec![1; n + 1] } else { vec![] };
        errs.push(comm.scatterv(&[1i32; 4], &counts, 0usize).map(|_| ()));
        let send = if me == 2 { vec![1; n + 1] } else { vec![1; n] };
        errs.push(comm.alltoallv(&[1i32; 3], &send).map(|_| ()));
        let input = vec![1i32; if me == 1 { n + 1 } else { n }];
        errs.push(comm.reduce_scatter(&input, Sum).map(|_| ()));
        let after = comm.allreduce(&[1i32], Sum)?;
        Ok::<_, Error>((errs, after))
    })
    .unwrap();
    every_rank_failed(&out, &[1, 0, 2, 1], n);
}

/// Call k of every rank's `(results, allreduce after)`: rank `bad[k]` got
/// its own invalid-argument error, every other rank a mismatch naming it,
/// and the allreduce after them all summed `n` ones (the ranks stayed in
/// step).
type Outcomes = Vec<(Vec<Result<(), hypercomm::Error>>, Vec<i32>)>;
fn every_rank_failed(out: &Outcomes, bad: &[usize], n: usize) {
    use hypercomm::Error;
    for (r, (errs, after)) in out.iter().enumerate() {
        assert_eq!(errs.len(), bad.len(), "rank {r}");
        for (k, e) in errs.iter().enumerate() {
            match e {
                Err(Error::InvalidArgument { .. } | Error::InvalidRank { .. }) if r == bad[k] => {}
                Err(Error::CollectiveMismatch(m))
                    if r != bad[k]
                        && m.contains(&format!(
                            "rank {} called it with invalid arguments",
                            bad[k]
                        )) => {}
                other => panic!("call {k}, rank {r}: {other:?}"),
            }
        }
        assert_eq!(after, &[n as i32], "rank {r}");
    }
}

/// A barrier whose forced algorithm differs between nodes is a mismatch on
/// every node in check mode, as it is for every other collective: the
/// barrier's signature used to state no options, so a tree barrier on one
/// node and a dissemination barrier on the others waited for each other
/// until the deadlock detector (or the timeout) ended the job.
#[test]
fn barrier_algorithms_that_differ_are_a_mismatch_on_every_rank() {
    use hypercomm::collective::Sum;
    use hypercomm::{CollOpts, Error, TransportKind};
    for n in [2usize, 3, 5] {
        let out = hypercomm::run_on(TransportKind::Thread, n, |comm| {
            let alg = if comm.rank() == 0 {
                "tree"
            } else {
                "dissemination"
            };
            let opts = CollOpts {
                algorithm: alg.parse().unwrap(),
                ..CollOpts::default()
            };
            let sub = comm.dup();
            let e = [comm.barrier_with(&opts), sub.barrier_with(&opts)];
            let after = sub.allreduce(&[1i32], Sum)?;
            Ok::<_, Error>((e, after))
        })
        .unwrap();
        for (r, (e, after)) in out.iter().enumerate() {
            for e in e {
                assert!(
                    matches!(e, Err(Error::CollectiveMismatch(m)) if m.contains("algorithm")),
                    "n={n} rank {r}: {e:?}"
                );
            }
            assert_eq!(after, &[n as i32], "n={n} rank {r}");
        }
    }
}
