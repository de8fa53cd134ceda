//! The seeds' semantics that the C and Fortran interfaces stand on, each
//! checked against the manual's own rule or numbers (expected values are
//! computed here from the stated rule, never copied from a run):
//!
//! * CMMD negotiated vector receives ("the smaller number of the two is
//!   sent", broken across the receiver's element length), send_and_receive_v
//!   and swap_v;
//! * CMMD short messages: `send_short` returns before the receive, a second
//!   one to the same node waits for the first;
//! * PICL clock0, message0 and sync0 with their `message` / `sync` trace
//!   records; tracing the host only or chosen nodes (tracehost /
//!   tracenode), and starting a rank's tracing in the middle of a run;
//! * PICL bcast1 as a split-phase broadcast (receive, use, forward) on
//!   every topology, with a host root;
//! * PICL setarc0 as the host's announcement to the nodes in use;
//! * iPSC GCAT's exclusive-or order.

use hypercomm::collective::{ConcatOrder, RingOrder, Topology};
use hypercomm::trace::{self, picl, Config, Kind, Output, Ranks};
use hypercomm::{Error, Rank, Source, ANY_SOURCE};
use std::path::PathBuf;
use std::time::Duration;

fn tmp(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hypercomm-fidelity-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The CMMD rule as the manual states it: gather `selem` bytes every
/// `sstride` into a packed stream, keep the first `min(sent, delem × dcount)`
/// bytes, lay them into `delem`-byte elements every `dstride` bytes.
fn cmmd_rule(
    src: &[u8],
    (selem, sstride, scount): (usize, usize, usize),
    dst: &mut [u8],
    (delem, dstride, dcount): (usize, usize, usize),
) -> usize {
    let mut packed = Vec::new();
    for i in 0..scount {
        packed.extend_from_slice(&src[i * sstride..i * sstride + selem]);
    }
    let n = packed.len().min(delem * dcount);
    for (i, b) in packed[..n].iter().enumerate() {
        dst[(i / delem) * dstride + i % delem] = *b;
    }
    n
}

/// Source buffer of the manual's figures: element k (1-based) filled with k.
fn elements(elem: usize, stride: usize, count: usize) -> Vec<u8> {
    let mut b = vec![0u8; stride * count + elem];
    for k in 0..count {
        for j in 0..elem {
            b[k * stride + j] = k as u8 + 1;
        }
    }
    b
}

#[test]
fn negotiated_vector_receive_takes_the_smaller_length_across_element_lengths() {
    // The manual's two re-chunking cases, with a receiver smaller (case 1)
    // and larger (case 2) than the message.
    let cases = [((5, 8, 4), (2, 3, 6)), ((2, 5, 4), (3, 4, 5))];
    for (s, d) in cases {
        let out = hypercomm::run(2, move |comm| -> Result<_, Error> {
            if comm.rank() == 0 {
                let src = elements(s.0, s.1, s.2);
                // A synchronous send learns how much the receiver took.
                let taken = comm.ssend(
                    &hypercomm::p2p::pack_strided(&src, s.0, s.1, s.2)?,
                    1usize,
                    9,
                )?;
                Ok((taken, Vec::new(), 0))
            } else {
                let mut dst = vec![0u8; d.1 * d.2];
                let p = comm.recv_strided_partial(&mut dst, d.0, d.1, d.2, 0usize, 9u32)?;
                Ok((p.received, dst, p.status.len))
            }
        })
        .unwrap();
        let src = elements(s.0, s.1, s.2);
        let mut want = vec![0u8; d.1 * d.2];
        let n = cmmd_rule(&src, s, &mut want, d);
        assert_eq!(out[1].1, want, "case {s:?} -> {d:?}");
        assert_eq!(out[1].0, n, "received count");
        assert_eq!(out[1].2, s.0 * s.2, "the full length is reported");
        assert_eq!(out[0].0, n, "the sender learns the count taken");
    }
}

#[test]
fn send_and_receive_v_shifts_and_swap_v_transposes() {
    let n = 3;
    let out = hypercomm::run(n, |comm| -> Result<_, Error> {
        let me = comm.rank();
        // A 4 x 6 byte matrix per node, entries me*100 + index; send the
        // first column (4 elements, stride 6) right, receive the left
        // neighbour's column as a row of 4 bytes laid every 2 bytes.
        let a: Vec<u8> = (0..24).map(|i| (me * 50 + i) as u8).collect();
        let mut got = vec![0u8; 8];
        let p = comm.send_recv_strided(
            &a,
            (1, 6, 4),
            (me + 1) % n,
            5,
            &mut got,
            (1, 2, 4),
            (me + n - 1) % n,
            5u32,
        )?;
        Ok((got, p.received))
    })
    .unwrap();
    for (me, (got, k)) in out.iter().enumerate() {
        let left = (me + n - 1) % n;
        let want: Vec<u8> = (0..8)
            .map(|i| {
                if i % 2 == 0 {
                    (left * 50 + 6 * (i / 2)) as u8
                } else {
                    0
                }
            })
            .collect();
        assert_eq!(got, &want, "node {me}");
        assert_eq!(*k, 4);
    }
    // swap_v: each of two nodes sends its rows (stride 6) and receives them
    // as columns (element 1, stride 4): a transpose of the 4 x 6 matrix.
    let out = hypercomm::run(2, |comm| -> Result<_, Error> {
        let me = comm.rank();
        let a: Vec<u8> = (0..24).map(|i| (me * 100 + i) as u8).collect();
        let mut t = vec![0u8; 24];
        comm.swap_strided(&a, (6, 6, 4), &mut t, (1, 1, 24), 1 - me, 3)?;
        Ok(t)
    })
    .unwrap();
    for (me, t) in out.iter().enumerate() {
        let peer = 1 - me;
        let want: Vec<u8> = (0..24).map(|i| (peer * 100 + i) as u8).collect();
        assert_eq!(t, &want, "a packed swap keeps the order");
    }
}

#[test]
fn short_sends_return_before_the_receive_and_serialise_per_destination() {
    let out = hypercomm::run(2, |comm| -> Result<_, Error> {
        let comm = comm.with_timeout(Some(Duration::from_secs(20)));
        if comm.rank() == 0 {
            let mut ss = comm.short_sends();
            let too_long = ss.send(1usize, 1, &[0u8; 17]);
            assert!(matches!(too_long, Err(Error::InvalidArgument { .. })));
            // Node 1 receives this only after the message with tag 2 below:
            // a blocking send here would deadlock.
            ss.send(1usize, 1, b"first")?;
            assert_eq!(ss.outstanding(), 1);
            comm.send(&[7u8], 1usize, 2)?;
            // The second short message to node 1 waits until the first was
            // received, then goes.
            ss.send(1usize, 1, b"second")?;
            ss.wait_all()?;
            Ok(Vec::new())
        } else {
            let (x, _) = comm.recv::<u8>(0usize, 2u32)?;
            assert_eq!(x, 7);
            let (a, _) = comm.recv_vec::<u8>(0usize, 1u32)?;
            let (b, _) = comm.recv_vec::<u8>(0usize, 1u32)?;
            Ok([a, b].concat())
        }
    })
    .unwrap();
    assert_eq!(out[1], b"firstsecond");
}

#[test]
fn clock_is_in_seconds_and_monotonic() {
    let a = hypercomm::clock();
    std::thread::sleep(Duration::from_millis(20));
    let b = hypercomm::clock();
    assert!(b - a >= 0.019 && b - a < 5.0, "{a} {b}");
}

fn kinds_of(path: &PathBuf) -> Vec<(i32, Kind)> {
    let text = std::fs::read_to_string(path).unwrap();
    picl::parse(&text)
        .unwrap()
        .records
        .into_iter()
        .map(|r| (r.node, r.kind))
        .collect()
}

#[test]
fn message0_and_sync0_write_message_and_sync_records() {
    let path = tmp("primitives.trace");
    trace::enable(Config::new(&path, Output::PiclVerbose));
    hypercomm::run(3, |comm| -> Result<_, Error> {
        comm.message(&format!("node {} says hello", comm.rank()))?;
        comm.sync()?;
        comm.barrier()
    })
    .unwrap();
    trace::disable();
    let recs = kinds_of(&path);
    for node in 0..3 {
        let mine: Vec<&Kind> = recs.iter().filter(|r| r.0 == node).map(|r| &r.1).collect();
        let msg = mine.iter().position(|k| matches!(k, Kind::Message));
        let sync = mine.iter().position(|k| matches!(k, Kind::Sync));
        assert!(
            msg.is_some() && sync.is_some() && msg < sync,
            "node {node}: {mine:?}"
        );
        // The barrier inside sync0 writes no block; the user's barrier does.
        let blocks = mine
            .iter()
            .filter(|k| matches!(k, Kind::BlockBegin { .. }))
            .count();
        assert_eq!(blocks, 1, "node {node}: {mine:?}");
    }
}

#[test]
fn tracehost_and_tracenode_choose_the_ranks_that_record() {
    for (ranks, want) in [
        (Ranks::host_only(), vec![hypercomm::PICL_HOST]),
        (Ranks::nodes([1, 2]), vec![1, 2]),
        (Ranks::All, vec![0, 1, 2, hypercomm::PICL_HOST]),
    ] {
        let path = tmp("ranks.trace");
        let mut cfg = Config::new(&path, Output::PiclVerbose);
        cfg.ranks = ranks.clone();
        trace::enable(cfg);
        hypercomm::run_with_host(
            3,
            |host| host.barrier_with_host(),
            |comm| comm.barrier_with_host(),
        )
        .unwrap();
        trace::disable();
        let mut nodes: Vec<i32> = kinds_of(&path).iter().map(|r| r.0).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut want = want.clone();
        want.sort_unstable();
        assert_eq!(nodes, want, "{ranks:?}");
    }
}

#[test]
fn a_rank_starts_tracing_in_the_middle_of_a_run() {
    let out = hypercomm::run(2, |comm| -> Result<_, Error> {
        comm.barrier()?; // before tracing: not recorded
        if comm.rank() == 1 {
            trace::level(2, 0, 0);
            trace::begin_rank(&Config::new("unused", Output::PiclVerbose), 1, 2, false);
            trace::mark(42);
        }
        comm.barrier()?;
        Ok(trace::end_rank().map(|s| trace::streams_to_text(&[s])))
    })
    .unwrap();
    assert!(out[0].is_none(), "node 0 never started");
    let streams = trace::streams_from_text(out[1].as_ref().unwrap()).unwrap();
    let t = trace::merge_streams(streams);
    let kinds: Vec<&Kind> = t.records.iter().map(|r| &r.kind).collect();
    assert!(
        matches!(kinds[0], Kind::TraceStart(l) if l.event == 2),
        "{kinds:?}"
    );
    assert!(kinds
        .iter()
        .any(|k| matches!(k, Kind::TraceMark { mark: 42 })));
    assert_eq!(
        kinds
            .iter()
            .filter(|k| matches!(k, Kind::BlockBegin { .. }))
            .count(),
        1,
        "only the barrier after tracenode: {kinds:?}"
    );
    assert!(matches!(kinds.last(), Some(Kind::TraceExit { .. })));
    assert!(!kinds.iter().any(|k| matches!(k, Kind::Open { .. })));
}

fn topologies() -> Vec<Topology> {
    vec![
        Topology::Auto,
        Topology::Hypercube,
        Topology::Full,
        Topology::Ring(RingOrder::NATURAL),
        Topology::Ring(RingOrder {
            gray: false,
            forward: false,
        }),
        Topology::BiRing(RingOrder::NATURAL),
    ]
}

#[test]
fn bcast1_receives_uses_then_forwards_on_every_topology() {
    for t in topologies() {
        for n in [1usize, 2, 5, 8] {
            for root in [0, n - 1] {
                let out = hypercomm::run(n, move |comm| -> Result<_, Error> {
                    comm.set_topology(t);
                    let me = comm.rank();
                    let mut buf = [0u32; 6];
                    let mut len = 3;
                    if me == root {
                        buf[..3].copy_from_slice(&[11, 22, 33]);
                    } else {
                        // PICL: "recv0(buf, bytes, type)" with the broadcast's
                        // type, from whoever forwards it; the buffer is larger.
                        let st = comm.recv_into(&mut buf, ANY_SOURCE, 77u32)?;
                        len = st.len / 4;
                    }
                    // Use the data before forwarding it.
                    let used: u32 = buf[..len].iter().sum::<u32>() + me as u32;
                    comm.bcast_forward(&buf[..len], root, 77)?;
                    Ok((buf[..len].to_vec(), used))
                })
                .unwrap();
                for (me, (b, used)) in out.iter().enumerate() {
                    assert_eq!(b, &[11, 22, 33], "{t:?} n={n} root={root} node {me}");
                    assert_eq!(*used, 66 + me as u32);
                }
            }
        }
    }
    // A host root: the host sends to node 0 only; bcast_recv_into takes
    // the message from the parent.
    let out = hypercomm::run_with_host(
        5,
        |host| host.bcast_forward(&[5u16, 6], Rank::Host, 3),
        |comm| -> Result<_, Error> {
            let mut b = [0u16; 4];
            let st = comm.bcast_recv_into(&mut b, Rank::Host, 3)?;
            comm.bcast_forward(&b[..st.len / 2], Rank::Host, 3)?;
            Ok((b, st.len))
        },
    )
    .unwrap();
    for (b, len) in out.1 {
        assert_eq!((b, len), ([5, 6, 0, 0], 4));
    }
}

#[test]
fn setarc0_announces_the_nodes_in_use_and_the_end() {
    let sizes = [1usize, 2, 4];
    let out = hypercomm::run_with_host(
        4,
        move |host| -> Result<_, Error> {
            let mut sums = Vec::new();
            for (i, &p) in sizes.iter().enumerate() {
                let t = if i % 2 == 0 {
                    Topology::Hypercube
                } else {
                    Topology::Ring(RingOrder::GRAY)
                };
                let sub = host.announce_arch(p, t)?.expect("p > 0");
                assert_eq!((sub.size(), sub.topology()), (p, t));
                let s = sub.reduce(&[0u64; 0], hypercomm::collective::Sum, Rank::Host)?;
                sums.push(s.unwrap()[0]);
            }
            assert!(host.announce_arch(0, Topology::Full)?.is_none());
            Ok(sums)
        },
        |comm| -> Result<_, Error> {
            let mut seen = Vec::new();
            loop {
                let (p, t, sub) = comm.await_arch()?;
                if p == 0 {
                    break;
                }
                let sub = sub.expect("announced to a node in use");
                assert!(comm.rank() < p);
                assert_eq!(sub.topology(), t);
                sub.reduce(
                    &[comm.rank() as u64 + 1],
                    hypercomm::collective::Sum,
                    Rank::Host,
                )?;
                seen.push(p);
            }
            Ok(seen)
        },
    )
    .unwrap();
    assert_eq!(out.0, vec![1, 3, 10]);
    // Node r is used by every announcement with more than r nodes.
    for (r, seen) in out.1.iter().enumerate() {
        let want: Vec<usize> = sizes.iter().copied().filter(|&p| p > r).collect();
        assert_eq!(seen, &want, "node {r}");
    }
}

#[test]
fn gcat_concatenates_in_xor_order_with_a_root_other_than_zero() {
    for root in 0..8usize {
        let out = hypercomm::run(8, move |comm| -> Result<_, Error> {
            let me = comm.rank();
            let mine: Vec<u8> = vec![me as u8; me % 3 + 1];
            let x = comm.gatherv_ordered(&mine, root, ConcatOrder::XorRoot)?;
            let r = comm.gatherv_ordered(&mine, root, ConcatOrder::Rank)?;
            Ok((x, r))
        })
        .unwrap();
        let block = |node: usize| vec![node as u8; node % 3 + 1];
        let xor: Vec<u8> = (0..8).flat_map(|k| block(k ^ root)).collect();
        let rank: Vec<u8> = (0..8).flat_map(block).collect();
        let (x, r) = &out[root];
        assert_eq!(x.as_ref().unwrap().0, xor, "root {root}");
        assert_eq!(
            x.as_ref().unwrap().1,
            (0..8).map(|k| (k ^ root) % 3 + 1).collect::<Vec<_>>()
        );
        assert_eq!(r.as_ref().unwrap().0, rank);
    }
    let _ = Source::Any;
}

#[test]
fn gcat_xor_order_on_nodes_short_of_a_cube_skips_the_missing_ones() {
    // 3, 5, 6 and 7 nodes: the order of the 4- or 8-node cube holding
    // them, less the nodes past the last (5 nodes, root 2: 2, 3, 0, 1, 4).
    let order = |p: usize, root: usize| -> Vec<usize> {
        let cube = if p <= 4 { 4 } else { 8 };
        (0..cube).map(|k| k ^ root).filter(|&n| n < p).collect()
    };
    assert_eq!(order(5, 2), [2, 3, 0, 1, 4]);
    for p in [3usize, 5, 6, 7] {
        for root in 0..p {
            let out = hypercomm::run(p, move |comm| -> Result<_, Error> {
                let me = comm.rank();
                let mine: Vec<u8> = vec![me as u8 + 10; me % 2 + 1];
                comm.gatherv_ordered(&mine, root, ConcatOrder::XorRoot)
            })
            .unwrap();
            let (all, lens) = out[root].clone().expect("the root has the result");
            let nodes = order(p, root);
            let want: Vec<u8> = nodes
                .iter()
                .flat_map(|&n| vec![n as u8 + 10; n % 2 + 1])
                .collect();
            assert_eq!(all, want, "{p} nodes, root {root}");
            assert_eq!(lens, nodes.iter().map(|n| n % 2 + 1).collect::<Vec<_>>());
        }
    }
}

#[test]
fn bcast_receivers_may_have_longer_buffers_and_learn_the_count() {
    // PICL bcast0 / iPSC GRECVW: the root's length may be smaller than the
    // receivers' buffers; the count comes back (GRECVW's CNT).
    for root in [0usize, 3] {
        let out = hypercomm::run(5, move |comm| -> Result<_, Error> {
            let mut buf = if comm.rank() == root {
                vec![7u32, 8, 9]
            } else {
                vec![0u32; 6]
            };
            let n = comm.bcast_varcount(&mut buf, root)?;
            Ok((n, buf))
        })
        .unwrap();
        for (me, (n, buf)) in out.iter().enumerate() {
            assert_eq!(*n, 3, "node {me}");
            assert_eq!(&buf[..3], &[7, 8, 9]);
            if me != root {
                assert_eq!(&buf[3..], &[0, 0, 0], "the rest is untouched");
            }
        }
    }
    let out = hypercomm::run_with_host(
        3,
        |host| host.bcast_varcount(&mut [1.5f64, 2.5], Rank::Host),
        |comm| -> Result<_, Error> {
            let mut b = [0f64; 4];
            let n = comm.bcast_varcount(&mut b, Rank::Host)?;
            Ok((n, b))
        },
    )
    .unwrap();
    assert_eq!(out.0, 2);
    for (n, b) in out.1 {
        assert_eq!((n, b), (2, [1.5, 2.5, 0.0, 0.0]));
    }
    // A buffer shorter than the message: every node is told (check mode).
    let r = hypercomm::run(3, |comm| -> Result<_, Error> {
        let mut b = vec![0u8; if comm.rank() == 2 { 1 } else { 4 }];
        comm.bcast_varcount(&mut b, 0usize)
    });
    assert!(r.is_err());
}

#[test]
fn cmmd_reduce_to_host_returns_the_result_to_the_host_and_every_node() {
    // Seed 004, section 9.3, on the manual's values 4 9 7 6 (the host's
    // operand is ignored: it does not contribute).
    let out = hypercomm::run_with_host(
        4,
        |host| -> Result<_, Error> {
            let a = host.reduce_to_host_and_nodes(&[0i32], hypercomm::collective::Sum)?;
            let b = host.reduce_to_host_and_nodes(&[0i32], hypercomm::collective::Max)?;
            Ok((a[0], b[0]))
        },
        |comm| -> Result<_, Error> {
            let v = [4i32, 9, 7, 6][comm.rank()];
            let a = comm.reduce_to_host_and_nodes(&[v], hypercomm::collective::Sum)?;
            let b = comm.reduce_to_host_and_nodes(&[v], hypercomm::collective::Max)?;
            Ok((a[0], b[0]))
        },
    )
    .unwrap();
    assert_eq!(out.0, (26, 9), "the host");
    assert_eq!(out.1, vec![(26, 9); 4], "every node");
}
