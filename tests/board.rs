//! Small collectives through the shared-memory board (barrier, bcast,
//! reduce, allreduce, allgather, all-to-all on the world communicator,
//! threads and shm; one exchange of up to 4 KiB a node among at most 8
//! nodes, a reduce's fan-in of as much without check mode, else a fan-in
//! and fan-out of up to 1 KiB): results
//! against serial folds, with check mode on and off,
//! with more ranks than cores; check-mode mismatches between a call on the
//! board and one on messages; what selection says; deadlocks, departed
//! peers and timeouts in a board wait. Shared memory runs both as threads
//! sharing one segment (`run_on`) and as real processes.

mod common;

use common::watchdog;
use hypercomm::collective::{Loc, Max, Sum, UserOp};
use hypercomm::launch::Processes;
use hypercomm::{Algorithm, CollOpts, Collective, Comm, Error, TransportKind};
use std::time::{Duration, Instant};

type Affine = Loc<u64, u64>;

fn board() -> CollOpts {
    CollOpts {
        algorithm: Algorithm::Board,
        ..CollOpts::default()
    }
}

/// Input element `i` of rank `r` in iteration `it`.
fn val(r: usize, i: usize, it: usize) -> i64 {
    ((r * 7919 + i * 104_729 + it * 31) % 2001) as i64 - 1000
}

/// The affine map `x -> a x + b` of rank `r`, element `i`.
fn affine(r: usize, i: usize, it: usize) -> Affine {
    Loc {
        value: (r + 2 + i + it) as u64,
        index: (3 * r + 1 + i) as u64,
    }
}

/// Composition in rank order (does not commute).
fn compose(p: Affine, q: Affine) -> Affine {
    Loc {
        value: p.value.wrapping_mul(q.value),
        index: q.value.wrapping_mul(p.index).wrapping_add(q.index),
    }
}

/// Whether a barrier, allreduce, allgather and all-to-all of `comm` run
/// as one exchange on the board (at most 8 nodes): then each node's part
/// may be 4 KiB; else what node 0 hands out may be 1 KiB.
fn exchange(comm: &Comm) -> bool {
    comm.size() <= 8
}

/// `iters` rounds of every board collective with rotating roots and
/// counts up to what the board takes, each checked against a serial fold;
/// returns how many results were checked.
fn rounds(comm: &Comm, iters: usize, opts: &CollOpts) -> Result<usize, Error> {
    let (me, n) = (comm.rank(), comm.size());
    // Bytes of the board's buffer an exchange, or a reduce's fan-in, may
    // fill.
    let most = if exchange(comm) { 4096 } else { 1024 };
    let mut checked = 0;
    for it in 0..iters {
        let count = [0usize, 1, 3, 17, 128][it % 5];
        let root = (it * 7) % n;
        // Allreduce, sum (up to all the board takes).
        let wide = (count * most / 1024).min(most / 8);
        let input: Vec<i64> = (0..wide).map(|i| val(me, i, it)).collect();
        let mut out = vec![0i64; wide];
        comm.allreduce_into_with(&input, &mut out, Sum, opts)?;
        let want: Vec<i64> = (0..wide)
            .map(|i| (0..n).map(|r| val(r, i, it)).sum())
            .collect();
        assert_eq!(out, want, "allreduce sum, iteration {it}, rank {me}");
        // Reduce, max, to a rotating root (up to all the board takes).
        let input: Vec<i64> = (0..wide).map(|i| val(me, i, it)).collect();
        let mut out = vec![0i64; if me == root { wide } else { 0 }];
        comm.reduce_into_with(&input, &mut out, Max, root, opts)?;
        if me == root {
            let want: Vec<i64> = (0..wide)
                .map(|i| (0..n).map(|r| val(r, i, it)).max().unwrap())
                .collect();
            assert_eq!(out, want, "reduce max, iteration {it}, root {root}");
        }
        // Allreduce and reduce with an operator that does not commute
        // (64 affine maps are 1 KiB).
        let k = count.min(64);
        let maps: Vec<Affine> = (0..k).map(|i| affine(me, i, it)).collect();
        let serial: Vec<Affine> = (0..k)
            .map(|i| (1..n).fold(affine(0, i, it), |acc, r| compose(acc, affine(r, i, it))))
            .collect();
        let mut got = vec![Loc { value: 0, index: 0 }; k];
        comm.allreduce_into_with(&maps, &mut got, UserOp::ordered(compose), opts)?;
        assert!(
            got == serial,
            "ordered allreduce, iteration {it}, rank {me}"
        );
        let mut got = vec![Loc { value: 0, index: 0 }; if me == root { k } else { 0 }];
        comm.reduce_into_with(&maps, &mut got, UserOp::ordered(compose), root, opts)?;
        if me == root {
            assert!(got == serial, "ordered reduce, iteration {it}, root {root}");
        }
        // Broadcast from the root.
        let mut buf: Vec<i64> = if me == root {
            (0..count).map(|i| val(root, i, it) * 3).collect()
        } else {
            vec![7; count]
        };
        comm.bcast_with(&mut buf, root, opts)?;
        let want: Vec<i64> = (0..count).map(|i| val(root, i, it) * 3).collect();
        assert_eq!(buf, want, "bcast, iteration {it}, root {root}, rank {me}");
        comm.barrier_with(opts)?;
        // Allgather and all-to-all: in an exchange each node gives a block
        // (allgather) or a row of n blocks; else node 0 hands out every
        // block, n of them (allgather) or n rows of n.
        let (gather_most, a2a_most) = if exchange(comm) {
            (most, most / n)
        } else {
            (most / n, most / (n * n))
        };
        let blk = (gather_most / 8).min(count * most / 1024);
        let mine: Vec<i64> = (0..blk).map(|i| val(me, i, it)).collect();
        let mut all = vec![0i64; blk * n];
        comm.allgather_into_with(&mine, &mut all, opts)?;
        let want: Vec<i64> = (0..n)
            .flat_map(|r| (0..blk).map(move |i| val(r, i, it)))
            .collect();
        assert_eq!(all, want, "allgather, iteration {it}, rank {me}");
        let blk = (a2a_most / 8).min(count * most / 1024);
        // Block q of node r's row is for node q.
        let cell = |r: usize, q: usize, i: usize| val(r * 31 + q, i, it);
        let row: Vec<i64> = (0..n)
            .flat_map(|q| (0..blk).map(move |i| cell(me, q, i)))
            .collect();
        let mut col = vec![0i64; blk * n];
        comm.alltoall_into_with(&row, &mut col, opts)?;
        let want: Vec<i64> = (0..n)
            .flat_map(|r| (0..blk).map(move |i| cell(r, me, i)))
            .collect();
        assert_eq!(col, want, "alltoall, iteration {it}, rank {me}");
        // Blocks of a few bytes: a node's block starts inside a word.
        let b = 1 + count % 3;
        let row: Vec<u8> = (0..n * b).map(|i| (me * 37 + i * 11 + it) as u8).collect();
        let mut col = vec![0u8; n * b];
        comm.alltoall_into_with(&row, &mut col, opts)?;
        let want: Vec<u8> = (0..n)
            .flat_map(|r| (me * b..(me + 1) * b).map(move |i| (r * 37 + i * 11 + it) as u8))
            .collect();
        assert_eq!(
            col, want,
            "alltoall of {b}-byte blocks, iteration {it}, rank {me}"
        );
        checked += 7;
    }
    Ok(checked)
}

/// Every rank ran every round (check mode `check`).
fn all_rounds(kind: TransportKind, n: usize, iters: usize, check: bool) {
    let out = hypercomm::run_on(kind, n, |comm| {
        comm.set_check(check);
        // Selection takes the board for these calls.
        for c in [
            Collective::Barrier,
            Collective::Bcast,
            Collective::Reduce,
            Collective::Allreduce,
        ] {
            let a = comm.chosen_algorithm(c, 1024, &CollOpts::default(), true)?;
            assert_eq!(a, Algorithm::Board, "{c:?} on {n} ranks");
        }
        // An allgather's block and an all-to-all's block: in an exchange
        // each node's part (a block, a row of n) fills at most 4 KiB; else
        // what node 0 hands out (n blocks, n rows) at most 1 KiB.
        let auto = CollOpts::default();
        let (gather_most, a2a_most, most) = if exchange(comm) {
            (4096, 4096 / n, 4096)
        } else {
            (1024 / n, 1024 / (n * n), 1024)
        };
        let a = comm.chosen_algorithm(Collective::Allgather, gather_most, &auto, true)?;
        assert_eq!(a, Algorithm::Board, "allgather on {n} ranks");
        let a = comm.chosen_algorithm(Collective::Alltoall, a2a_most, &auto, true)?;
        assert_eq!(a, Algorithm::Board, "alltoall on {n} ranks");
        if n > 1 {
            let a = comm.chosen_algorithm(Collective::Allgather, gather_most + 1, &auto, true)?;
            assert_ne!(a, Algorithm::Board, "allgather on {n} ranks, one byte more");
        }
        // A reduce is an exchange in check mode (at most 8 nodes), else a
        // fan-in to its root, whose inputs may be as large as an
        // exchange's parts up to 8 nodes; a broadcast, above 8 nodes, a
        // fan-out.
        let reduce_most = if n <= 8 { 4096 } else { 1024 };
        for (c, m) in [
            (Collective::Allreduce, most),
            (Collective::Bcast, most),
            (Collective::Reduce, reduce_most),
        ] {
            let a = comm.chosen_algorithm(c, m + 8, &auto, true)?;
            assert_ne!(a, Algorithm::Board, "{c:?}: {} bytes do not fit", m + 8);
        }
        let forced = rounds(comm, iters, &board())?;
        let auto = rounds(comm, iters / 4 + 1, &CollOpts::default())?;
        Ok::<_, Error>(forced + auto)
    })
    .unwrap();
    assert!(
        out.iter().all(|&c| c == 7 * (iters + iters / 4 + 1)),
        "{out:?}"
    );
}

#[test]
fn threads_board_collectives_match_serial_folds() {
    watchdog("board_threads", || {
        for n in [1, 2, 3, 4, 5, 7, 16] {
            let iters = if n > 8 { 40 } else { 120 };
            all_rounds(TransportKind::Thread, n, iters, true);
            all_rounds(TransportKind::Thread, n, iters, false);
        }
    });
}

#[test]
fn shm_segment_board_collectives_match_serial_folds() {
    watchdog("board_shm_threads", || {
        for n in [2, 3, 5] {
            all_rounds(TransportKind::Shm, n, 60, true);
            all_rounds(TransportKind::Shm, n, 60, false);
        }
    });
}

/// Real processes over shared memory: 4 of them (more than the cores of a
/// small machine), check mode on and off.
#[test]
fn shm_processes_board_collectives_match_serial_folds() {
    let test = "shm_processes_board_collectives_match_serial_folds";
    let out = Processes::new(4)
        .transport(TransportKind::Shm)
        .key(test)
        .args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .timeout(Duration::from_secs(120))
        .run(|comm| {
            let comm = comm.with_timeout(Some(Duration::from_secs(30)));
            let mut total = 0;
            for check in [true, false] {
                comm.set_check(check);
                let a =
                    comm.chosen_algorithm(Collective::Allreduce, 8, &CollOpts::default(), true)?;
                assert_eq!(a, Algorithm::Board);
                total += rounds(&comm, 150, &board())?;
                total += rounds(&comm, 30, &CollOpts::default())?;
            }
            Ok::<_, Error>(total)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out, vec![2 * 7 * 180; 4]);
}

/// `iters` rounds of the lending calls (allgather, all-to-all, bcast,
/// reduce with an operator that does not commute) with pieces of 32 KiB
/// and more, each checked against a serial fold; returns how many results
/// were checked.
fn lend_rounds(comm: &Comm, iters: usize, opts: &CollOpts) -> Result<usize, Error> {
    let (me, n) = (comm.rank(), comm.size());
    let mut checked = 0;
    for it in 0..iters {
        // 32 KiB, a little more, 512 KiB and 2 MiB of i64 (the reduce's
        // maps then fill 512 KiB or 2 MiB: split among the nodes, the
        // larger in more than one piece per node).
        let count = [4096usize, 4099, 65536, 262150][it % 4];
        let root = (it * 5 + 1) % n;
        let mine: Vec<i64> = (0..count).map(|i| val(me, i, it)).collect();
        let mut all = vec![0i64; count * n];
        comm.allgather_into_with(&mine, &mut all, opts)?;
        let want: Vec<i64> = (0..n)
            .flat_map(|r| (0..count).map(move |i| val(r, i, it)))
            .collect();
        assert!(all == want, "lent allgather, iteration {it}, rank {me}");
        // All-to-all of odd-sized byte blocks: each starts inside a word.
        let blk = (32 << 10) + 3 + it % 5;
        let cell = |r: usize, q: usize, i: usize| (r * 131 + q * 17 + i * 7 + it) as u8;
        let row: Vec<u8> = (0..n)
            .flat_map(|q| (0..blk).map(move |i| cell(me, q, i)))
            .collect();
        let mut col = vec![0u8; blk * n];
        comm.alltoall_into_with(&row, &mut col, opts)?;
        let want: Vec<u8> = (0..n)
            .flat_map(|r| (0..blk).map(move |i| cell(r, me, i)))
            .collect();
        assert!(col == want, "lent alltoall, iteration {it}, rank {me}");
        let mut buf: Vec<i64> = if me == root {
            (0..count).map(|i| val(root, i, it) * 5).collect()
        } else {
            vec![3; count]
        };
        comm.bcast_with(&mut buf, root, opts)?;
        assert!(
            buf.iter()
                .enumerate()
                .all(|(i, &v)| v == val(root, i, it) * 5),
            "lent bcast, iteration {it}, root {root}, rank {me}"
        );
        let k = count / 2;
        let maps: Vec<Affine> = (0..k).map(|i| affine(me, i, it)).collect();
        let mut got = vec![Loc { value: 0, index: 0 }; if me == root { k } else { 0 }];
        comm.reduce_into_with(&maps, &mut got, UserOp::ordered(compose), root, opts)?;
        if me == root {
            let serial: Vec<Affine> = (0..k)
                .map(|i| (1..n).fold(affine(0, i, it), |acc, r| compose(acc, affine(r, i, it))))
                .collect();
            assert!(
                got == serial,
                "lent ordered reduce, iteration {it}, root {root}"
            );
        }
        checked += 4;
    }
    Ok(checked)
}

/// Pieces of 32 KiB and more are lent on shared memory (read with
/// `process_vm_readv`), here in a segment shared by threads, check mode on
/// and off; selection names the board for them there (except a one-way
/// piece that fits a ring: a reduce's input, a broadcast's buffer between
/// two nodes, below 128 KiB) and not on threads, and forcing it on threads
/// says why.
#[test]
fn shm_lends_large_pieces() {
    watchdog("board_lends", || {
        for n in [2, 3] {
            let out = hypercomm::run_on(TransportKind::Shm, n, |comm| {
                let mut total = 0;
                for check in [true, false] {
                    comm.set_check(check);
                    let auto = CollOpts::default();
                    for c in [Collective::Allgather, Collective::Bcast, Collective::Reduce] {
                        let streams = c == Collective::Reduce || (c == Collective::Bcast && n == 2);
                        let a = comm.chosen_algorithm(c, 32 << 10, &auto, true)?;
                        assert_eq!(
                            a == Algorithm::Board,
                            !streams,
                            "{c:?} of 32 KiB on shm, {n} nodes: {a:?}"
                        );
                        let a = comm.chosen_algorithm(c, 128 << 10, &auto, true)?;
                        assert_eq!(a, Algorithm::Board, "{c:?} of 128 KiB on shm");
                    }
                    total += lend_rounds(comm, 8, &board())?;
                    total += lend_rounds(comm, 4, &auto)?;
                }
                Ok::<_, Error>(total)
            })
            .unwrap();
            assert_eq!(out, vec![2 * 4 * 12; n]);
        }
        hypercomm::run_on(TransportKind::Thread, 2, |comm| {
            let a =
                comm.chosen_algorithm(Collective::Allgather, 32 << 10, &CollOpts::default(), true)?;
            assert_ne!(a, Algorithm::Board, "threads have no lends");
            let e = comm
                .bcast_with(&mut vec![0u8; 32 << 10], 0, &board())
                .unwrap_err();
            assert!(e.to_string().contains("32768 bytes"), "{e}");
            Ok::<_, Error>(())
        })
        .unwrap();
    });
}

/// Lends among real processes (3 of them), check mode on and off, and a
/// lent call against a call on the board's buffers in check mode.
#[test]
fn shm_processes_lend_large_pieces() {
    let test = "shm_processes_lend_large_pieces";
    let out = Processes::new(3)
        .transport(TransportKind::Shm)
        .key(test)
        .args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .timeout(Duration::from_secs(120))
        .run(|comm| {
            let comm = comm.with_timeout(Some(Duration::from_secs(30)));
            let mut total = 0;
            for check in [true, false] {
                comm.set_check(check);
                total += lend_rounds(&comm, 12, &board())?;
            }
            // A lent call against a call on the board's buffers, in check
            // mode: both meet the mismatch.
            comm.set_check(true);
            let me = comm.rank();
            let count = if me == 1 { 8 } else { 8192 };
            let mut all = vec![0i64; count * 3];
            let e = comm
                .allgather_into(&vec![1i64; count], &mut all)
                .unwrap_err();
            assert!(e.to_string().contains("count"), "{e}");
            comm.barrier()?;
            Ok::<_, Error>(total)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out, vec![2 * 4 * 12; 3]);
}

/// In check mode, a call on the board and one on messages (too large for
/// the board, or another collective) meet: every rank gets the mismatch,
/// naming what differs, and the job goes on with calls that agree.
#[test]
fn check_mode_finds_a_mismatch_between_board_and_messages() {
    watchdog("board_mismatch", || {
        let out = hypercomm::run(3, |comm| {
            let me = comm.rank();
            let mut texts = Vec::new();
            // Rank 1's count does not fit the board: its call runs on messages.
            let count = if me == 1 { 300 } else { 1 };
            let mut o = vec![0i64; count];
            let e = comm
                .allreduce_into(&vec![1i64; count], &mut o, Sum)
                .unwrap_err();
            texts.push(e.to_string());
            // An allgather against a barrier.
            let e = if me == 2 {
                let mut all = vec![0u8; 3];
                comm.allgather_into(&[1u8], &mut all)
                    .map(|_| ())
                    .unwrap_err()
            } else {
                comm.barrier().unwrap_err()
            };
            texts.push(e.to_string());
            // A broadcast whose roots differ, all on the board.
            let mut b = [me as u32; 2];
            let e = comm.bcast(&mut b, if me == 0 { 0 } else { 1 }).unwrap_err();
            texts.push(e.to_string());
            // And then calls that agree work, on the board and on messages.
            let mut s = [0u64; 1];
            comm.allreduce_into(&[me as u64 + 1], &mut s, Sum)?;
            let mut big = vec![0u64; 1000];
            comm.allreduce_into(&vec![me as u64; 1000], &mut big, Sum)?;
            assert_eq!((s[0], big[999]), (6, 3));
            comm.barrier()?;
            Ok::<_, Error>(texts)
        })
        .unwrap();
        for (r, texts) in out.iter().enumerate() {
            assert!(texts[0].contains("count"), "rank {r}: {}", texts[0]);
            assert!(texts[0].contains("rank 1"), "rank {r}: {}", texts[0]);
            assert!(texts[1].contains("allgather"), "rank {r}: {}", texts[1]);
            assert!(texts[1].contains("barrier"), "rank {r}: {}", texts[1]);
            assert!(texts[2].contains("root"), "rank {r}: {}", texts[2]);
            assert_eq!(texts, &out[0], "every rank says the same");
        }
    });
}

/// An allgather or an all-to-all in check mode compares the signatures as
/// it reads the other nodes' blocks: counts or element types that differ,
/// every call on the board, are the same mismatch on every rank, and the
/// calls after it agree and deliver.
#[test]
fn check_mode_finds_a_mismatch_inside_an_allgather_and_an_alltoall() {
    watchdog("board_gather_mismatch", || {
        let out = hypercomm::run(3, |comm| {
            let me = comm.rank();
            let mut texts = Vec::new();
            // Rank 2 gives two elements, the others one.
            let count = if me == 2 { 2 } else { 1 };
            let mut all = vec![0u32; 3 * count];
            let e = comm.allgather_into(&vec![7u32; count], &mut all);
            texts.push(e.unwrap_err().to_string());
            // Rank 0 sends u16 blocks, the others u8.
            let e = if me == 0 {
                let mut o = [0u16; 3];
                comm.alltoall_into(&[1u16; 3], &mut o)
            } else {
                let mut o = [0u8; 3];
                comm.alltoall_into(&[1u8; 3], &mut o)
            };
            texts.push(e.unwrap_err().to_string());
            let mut g = [0u32; 3];
            comm.allgather_into(&[me as u32 + 1], &mut g)?;
            let mut t = [0u32; 3];
            let row = [10 * me as u32, 10 * me as u32 + 1, 10 * me as u32 + 2];
            comm.alltoall_into(&row, &mut t)?;
            Ok::<_, Error>((texts, g, t))
        })
        .unwrap();
        for (r, (texts, g, t)) in out.iter().enumerate() {
            assert!(texts[0].contains("count 2 vs 1"), "rank {r}: {}", texts[0]);
            assert!(texts[0].contains("rank 2"), "rank {r}: {}", texts[0]);
            assert!(texts[1].contains("element type"), "rank {r}: {}", texts[1]);
            assert_eq!(texts, &out[0].0, "every rank says the same");
            assert_eq!(g, &[1, 2, 3]);
            let r = r as u32;
            assert_eq!(t, &[r, 10 + r, 20 + r]);
        }
    });
}

/// Check mode on some ranks only: a rank with it on finds the board slot
/// of a rank with it off holding no signature, and says so (set_check
/// must agree) instead of listing an operation called "collective" and a
/// count of 0; the rank with it off still gets the right sum.
#[test]
fn a_rank_with_check_mode_off_is_named() {
    watchdog("board_check_off", || {
        let out = hypercomm::run(2, |comm| {
            comm.set_check(comm.rank() == 1);
            let mut o = [0u64; 4];
            let r = comm.allreduce_into(&[comm.rank() as u64 + 1; 4], &mut o, Sum);
            Ok::<_, Error>((r.map_err(|e| e.to_string()), o))
        })
        .unwrap();
        assert_eq!(out[0], (Ok(()), [3; 4]), "rank 0, check mode off");
        let e = out[1].0.as_ref().unwrap_err();
        assert!(e.contains("allreduce: rank 0 stated no signature"), "{e}");
        assert!(e.contains("set_check"), "{e}");
    });
}

/// Calls whose options differ between the nodes so that some run on the
/// board and the others on messages (reproducible mode and a topology
/// setting keep a call off the board; forcing an algorithm takes it off or
/// on): in check mode every node gets the mismatch, naming the option,
/// instead of reading a board buffer that holds a signature but no data
/// (the others' allreduce used to return 9 where 10 was right). Returns
/// every case's message; then calls that agree work, with the right sums.
fn option_mismatches(comm: &Comm) -> Result<Vec<String>, Error> {
    use hypercomm::Topology;
    let (me, n) = (comm.rank(), comm.size());
    let x = [me as u64 + 1];
    let mut o = [0u64];
    let mut texts = Vec::new();
    let expect = |r: Result<(), Error>, what: &str, texts: &mut Vec<String>| match r {
        Err(Error::CollectiveMismatch(t)) => {
            assert!(t.contains(what), "rank {me} of {n}: {t}");
            texts.push(t);
        }
        other => panic!("rank {me} of {n}, {what}: expected a mismatch, got {other:?}"),
    };
    // Reproducible mode on node 0 only: its allreduce runs on messages,
    // the others' on the board.
    let rep = CollOpts {
        reproducible: me == 0,
        ..CollOpts::default()
    };
    let r = comm.allreduce_into_with(&x, &mut o, Sum, &rep);
    expect(r, "reproducible off vs on", &mut texts);
    // The same for a broadcast, node 1 reproducible.
    let rep = CollOpts {
        reproducible: me == 1,
        ..CollOpts::default()
    };
    let r = comm.bcast_with(&mut [me as u8; 4], 0usize, &rep);
    expect(r, "reproducible on vs off", &mut texts);
    // A topology setting on the last node only.
    if me == n - 1 {
        comm.set_topology(Topology::Hypercube);
    }
    let r = comm.allreduce_into(&x, &mut o, Sum);
    comm.set_topology(Topology::Auto);
    expect(r, "topology hypercube vs auto", &mut texts);
    // The board forced on node 0, recursive doubling on the others.
    let alg = CollOpts {
        algorithm: if me == 0 {
            Algorithm::Board
        } else {
            Algorithm::RecursiveDoubling
        },
        ..CollOpts::default()
    };
    let r = comm.allreduce_into_with(&x, &mut o, Sum, &alg);
    expect(r, "algorithm recursive-doubling vs board", &mut texts);
    // Calls that agree: on the board, then on messages.
    let sum = (n * (n + 1) / 2) as u64;
    comm.allreduce_into(&x, &mut o, Sum)?;
    assert_eq!(o[0], sum, "rank {me} of {n}: board allreduce");
    let rep = CollOpts {
        reproducible: true,
        ..CollOpts::default()
    };
    comm.allreduce_into_with(&x, &mut o, Sum, &rep)?;
    assert_eq!(o[0], sum, "rank {me} of {n}: reproducible allreduce");
    comm.barrier()?;
    Ok(texts)
}

/// [`option_mismatches`] on threads (one exchange up to 8 nodes, a fan-in
/// and fan-out with 9) and on shared memory (threads sharing a segment).
#[test]
fn check_mode_finds_options_that_differ_between_board_and_messages() {
    watchdog("board_option_mismatch", || {
        for (kind, n) in [
            (TransportKind::Thread, 2),
            (TransportKind::Thread, 3),
            (TransportKind::Thread, 9),
            (TransportKind::Shm, 2),
            (TransportKind::Shm, 3),
        ] {
            let out = hypercomm::run_on(kind, n, |comm| {
                comm.set_check(true);
                option_mismatches(comm)
            })
            .unwrap();
            for (r, texts) in out.iter().enumerate() {
                assert_eq!(texts.len(), 4, "{kind:?}, {n} ranks, rank {r}");
                assert_eq!(
                    texts, &out[0],
                    "{kind:?}, {n} ranks: every rank says the same"
                );
            }
        }
    });
}

/// [`option_mismatches`] among real processes over shared memory.
#[test]
fn shm_processes_find_options_that_differ_between_board_and_messages() {
    let test = "shm_processes_find_options_that_differ_between_board_and_messages";
    let out = Processes::new(3)
        .transport(TransportKind::Shm)
        .key(test)
        .args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .timeout(Duration::from_secs(120))
        .run(|comm| {
            let comm = comm.with_timeout(Some(Duration::from_secs(30)));
            comm.set_check(true);
            option_mismatches(&comm).map(|t| t.len())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out, vec![4; 3]);
}

/// In check mode, a bcast or reduce against a barrier or allreduce, with
/// node 0 on either side: every rank gets the same mismatch, and calls
/// that agree work afterwards. Up to 8 nodes every call is one exchange;
/// with 9, each is a fan-in to node 0 and a fan-out.
#[test]
fn check_mode_finds_a_mismatch_between_rooted_and_symmetric_calls() {
    watchdog("board_mismatch_flows", || {
        for n in [2, 3, 5, 9] {
            let out = hypercomm::run(n, |comm| {
                comm.set_check(true);
                let me = comm.rank();
                let mut texts = Vec::new();
                for fans in [0, 1] {
                    // Rank `fans` broadcasts; the others are in a barrier.
                    let e = if me == fans {
                        comm.bcast(&mut [7u8; 3], 0).unwrap_err()
                    } else {
                        comm.barrier().unwrap_err()
                    };
                    texts.push(e.to_string());
                    // The others reduce; rank `fans` allreduces.
                    let mut o = [0u32; 2];
                    let e = if me == fans {
                        comm.allreduce_into(&[1u32, 2], &mut o, Sum).unwrap_err()
                    } else {
                        let out: &mut [u32] = if me == 0 { &mut o } else { &mut [] };
                        comm.reduce_into(&[1u32, 2], out, Sum, 0).unwrap_err()
                    };
                    texts.push(e.to_string());
                }
                let mut s = [0u64; 1];
                comm.allreduce_into(&[me as u64 + 1], &mut s, Sum)?;
                assert_eq!(s[0], (n * (n + 1) / 2) as u64);
                let mut b = [me as u16; 5];
                comm.bcast(&mut b, n - 1)?;
                assert_eq!(b, [(n - 1) as u16; 5]);
                comm.barrier()?;
                Ok::<_, Error>(texts)
            })
            .unwrap();
            for (r, texts) in out.iter().enumerate() {
                for (k, t) in texts.iter().enumerate() {
                    assert!(
                        t.contains("mismatch") || t.contains("differ"),
                        "{n} ranks, rank {r}, call {k}: {t}"
                    );
                }
                assert!(
                    texts[0].contains("bcast") && texts[0].contains("barrier"),
                    "{}",
                    texts[0]
                );
                assert!(
                    texts[1].contains("reduce") && texts[1].contains("allreduce"),
                    "{}",
                    texts[1]
                );
                assert_eq!(texts, &out[0], "{n} ranks: every rank says the same");
            }
        }
    });
}

/// The board serves the world communicator only: forcing it elsewhere,
/// or for a call it cannot take, is an error naming why; `Auto` there
/// runs on messages.
#[test]
fn forcing_the_board_where_it_cannot_serve_is_an_error() {
    watchdog("board_refusals", || {
        hypercomm::run(4, |comm| {
            let half = comm
                .split(Some((comm.rank() % 2) as u32), 0)?
                .expect("a member");
            let e = half.barrier_with(&board()).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
            assert!(e.to_string().contains("world communicator"), "{e}");
            assert_ne!(
                half.chosen_algorithm(Collective::Barrier, 0, &CollOpts::default(), true)?,
                Algorithm::Board
            );
            let mut s = [0u32];
            half.allreduce_into(&[1u32], &mut s, Sum)?;
            assert_eq!(s[0], 2);
            let mut big = vec![0u8; 5000];
            let e = comm.bcast_with(&mut big, 0, &board()).unwrap_err();
            assert!(e.to_string().contains("5000 bytes"), "{e}");
            // An allgather's block beyond a buffer (4 nodes: one exchange).
            let mut all = vec![0u8; 4 * 4100];
            let e = comm
                .allgather_into_with(&[1u8; 4100], &mut all, &board())
                .unwrap_err();
            assert!(e.to_string().contains("4100 bytes"), "{e}");
            // An all-to-all's row of 4 blocks beyond a buffer.
            let mut col = vec![0u8; 4 * 1025];
            let e = comm
                .alltoall_into_with(&[1u8; 4 * 1025], &mut col, &board())
                .unwrap_err();
            assert!(e.to_string().contains("4100 bytes"), "{e}");
            let mut g = vec![0u8; if comm.rank() == 0 { 4 } else { 0 }];
            let e = comm
                .gather_into_with(&[1u8], &mut g, 0, &board())
                .unwrap_err();
            assert!(e.to_string().contains("gather has no board form"), "{e}");
            let e = comm
                .allreduce_into_with(
                    &[1.0f64],
                    &mut [0.0],
                    Sum,
                    &CollOpts {
                        reproducible: true,
                        ..board()
                    },
                )
                .unwrap_err();
            assert!(e.to_string().contains("reproducible"), "{e}");
            assert_eq!("board".parse::<Algorithm>().unwrap(), Algorithm::Board);
            Ok::<_, Error>(())
        })
        .unwrap();
    });
}

/// A barrier on the board that another rank never joins: with no timeout,
/// the deadlock detector ends both (the barrier's wait blocks like any
/// other, and says what it waits for).
#[test]
fn a_board_barrier_against_a_receive_is_a_deadlock() {
    watchdog("board_deadlock", || {
        for kind in [TransportKind::Thread, TransportKind::Shm] {
            let out = hypercomm::run_on(kind, 2, |comm| {
                let comm = comm.with_timeout(None);
                let t = Instant::now();
                let e = if comm.rank() == 0 {
                    comm.barrier().unwrap_err()
                } else {
                    comm.recv::<u8>(0, 1).map(|_| ()).unwrap_err()
                };
                Ok::<_, Error>((e.to_string(), t.elapsed()))
            })
            .unwrap();
            for (r, (e, took)) in out.iter().enumerate() {
                assert!(e.starts_with("deadlock"), "{kind} rank {r}: {e}");
                assert!(
                    e.contains(
                        "rank 0 is in barrier, waiting for rank 1 on the shared-memory board"
                    ),
                    "{kind} rank {r}: {e}"
                );
                assert!(*took < Duration::from_secs(2), "{kind} rank {r}: {took:?}");
            }
        }
    });
}

/// A rank that leaves before a board call fails the others' call naming
/// it; a rank that is late past the timeout fails the waiting one with a
/// timeout that names whom it waited for.
#[test]
fn a_departed_or_late_rank_ends_a_board_wait() {
    watchdog("board_departed", || {
        let out = hypercomm::run(3, |comm| {
            if comm.rank() == 2 {
                return Ok::<_, Error>(String::from("left"));
            }
            let mut s = [0u8];
            Ok(format!(
                "{:?}",
                comm.allreduce_into(&[1u8], &mut s, Sum).unwrap_err()
            ))
        })
        .unwrap();
        for (r, e) in out.iter().take(2).enumerate() {
            assert!(e.contains("PeerFailed"), "rank {r}: {e}");
            assert!(e.contains("Node(2)"), "rank {r}: {e}");
        }
        let out = hypercomm::run(2, |comm| {
            if comm.rank() == 1 {
                std::thread::sleep(Duration::from_millis(600));
                return Ok::<_, Error>(String::new());
            }
            let short = comm.with_timeout(Some(Duration::from_millis(150)));
            Ok(short.barrier().unwrap_err().to_string())
        })
        .unwrap();
        assert!(
            out[0].contains("timed out") || out[0].contains("timeout"),
            "{}",
            out[0]
        );
        assert!(
            out[0].contains("rank 1 on the shared-memory board"),
            "{}",
            out[0]
        );
    });
}

/// A root that broadcasts twice in a row after a call that all took part
/// in: its second broadcast reuses the buffer of the first call, and must
/// wait until every node has read that call's result (one node at a time
/// dawdles before reading, with more threads than cores). A stress test:
/// a reader is rarely preempted inside its read, where a root that did not
/// wait would overwrite what it reads.
#[test]
fn a_root_that_runs_ahead_waits_for_slow_readers() {
    watchdog("board_slow_readers", || {
        let n = 5;
        let out = hypercomm::run(n, |comm| {
            let me = comm.rank();
            for it in 0..1500usize {
                let mut s = [0u64];
                comm.allreduce_into(&[it as u64], &mut s, Sum)?;
                assert_eq!(s[0], (n * it) as u64);
                for k in 0..2u64 {
                    if it % n == me {
                        std::thread::yield_now();
                    }
                    let want: Vec<u64> = (0..128).map(|i| it as u64 * 1000 + k * 300 + i).collect();
                    let mut buf = if me == 0 { want.clone() } else { vec![0; 128] };
                    comm.bcast(&mut buf, 0)?;
                    assert!(buf == want, "iteration {it}, bcast {k}, rank {me}");
                }
            }
            // Without check mode, broadcasts back to back: nothing but the
            // readers' progress holds the root back.
            comm.set_check(false);
            for it in 0..3000usize {
                if it % (n + 1) == me {
                    std::thread::yield_now();
                }
                let want: Vec<u64> = (0..128).map(|i| it as u64 * 7 + i).collect();
                let mut buf = if me == 0 { want.clone() } else { vec![0; 128] };
                comm.bcast(&mut buf, 0)?;
                assert!(buf == want, "unchecked bcast {it}, rank {me}");
            }
            Ok::<_, Error>(())
        })
        .unwrap();
        assert_eq!(out.len(), n);
    });
}
