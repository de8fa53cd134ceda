//! Collectives on the thread transport against serial computations:
//! every operation × algorithm × n ∈ {1,2,3,4,5,7,8,13,16} × count ∈ {0,1,64,4099}.

use hypercomm::collective::{
    BitXor, Direction, Inclusion, Max, Min, Prod, Scan, Segmentation, Sum, UserOp,
};
use hypercomm::{run, Algorithm, CollOpts, Error, Rank};
use hypercomm_algo::segmented::segmented_scan_serial;

const NS: [usize; 9] = [1, 2, 3, 4, 5, 7, 8, 13, 16];
const COUNTS: [usize; 4] = [0, 1, 64, 4099];

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

#[test]
fn bcast_all_algorithms() {
    for a in [
        Algorithm::Auto,
        Algorithm::Binomial,
        Algorithm::Star,
        Algorithm::Chain,
        Algorithm::BiRing,
    ] {
        for n in NS {
            for count in COUNTS {
                let root = n / 2;
                let out = run(n, |comm| {
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

#[test]
fn reduce_and_allreduce_all_algorithms() {
    for n in NS {
        for count in COUNTS {
            let serial_sum: Vec<i64> = (0..count)
                .map(|i| (0..n).map(|r| val(r, i)).sum())
                .collect();
            let serial_max: Vec<i64> = (0..count)
                .map(|i| (0..n).map(|r| val(r, i)).max().unwrap())
                .collect();
            for a in [Algorithm::Auto, Algorithm::Binomial, Algorithm::Star] {
                let root = (n * 2) / 3;
                let out = run(n, |comm| {
                    let input: Vec<i64> = (0..count).map(|i| val(comm.rank(), i)).collect();
                    let mut o = vec![0i64; if comm.rank() == root { count } else { 0 }];
                    comm.reduce_into_with(&input, &mut o, Sum, root, &opts(a))?;
                    Ok::<_, Error>(o)
                })
                .unwrap();
                assert_eq!(out[root], serial_sum, "reduce {a:?} n={n} count={count}");
            }
            for a in [
                Algorithm::Auto,
                Algorithm::RecursiveDoubling,
                Algorithm::Ring,
                Algorithm::Rabenseifner,
                Algorithm::ReduceBcast,
            ] {
                let out = run(n, |comm| {
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

#[test]
fn non_commutative_operator_keeps_rank_order() {
    // Affine maps x -> a*x + b composed in rank order: (a, b) pairs as u64 wrapping.
    for n in NS {
        for a in [
            Algorithm::Auto,
            Algorithm::RecursiveDoubling,
            Algorithm::Rabenseifner,
            Algorithm::ReduceBcast,
        ] {
            let out = run(n, |comm| {
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
                Ok::<_, Error>(o)
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
                    assert_eq!(
                        (o[i as usize].value, o[i as usize].index),
                        (av, bv),
                        "{a:?} n={n}"
                    );
                }
            }
        }
    }
}

#[test]
fn ring_allreduce_refuses_a_non_commutative_operator() {
    let out = run(3, |comm| {
        let op = UserOp::ordered(|a: u32, b: u32| a.wrapping_mul(31).wrapping_add(b));
        let e = comm
            .allreduce_into_with(&[1u32], &mut [0u32], op, &opts(Algorithm::Ring))
            .unwrap_err();
        Ok::<_, Error>(e.to_string())
    })
    .unwrap();
    assert!(out.iter().all(|m| m.contains("commutative")), "{out:?}");
}

#[test]
fn barrier_and_host_variants() {
    for n in NS {
        run(n, |comm| {
            comm.barrier()?;
            comm.barrier_with(&opts(Algorithm::Tree))?;
            Ok::<_, Error>(())
        })
        .unwrap();
        let (h, nodes) = hypercomm::run_with_host(
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

#[test]
fn mismatch_is_an_error_on_every_rank() {
    for n in [2usize, 3, 5] {
        let r = run(n, |comm| {
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
        let r = run(n, |comm| {
            let count = if comm.rank() == 0 { 3 } else { 4 };
            let e = comm.allreduce(&vec![1.0f64; count], Min).unwrap_err();
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        assert!(r.iter().all(|m| m.contains("count")), "{r:?}");
        let r = run(n, |comm| {
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

#[test]
fn four_nonblocking_collectives_outstanding() {
    for n in NS {
        let out = run(n, |comm| {
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

#[test]
fn gather_and_gatherv_all_algorithms() {
    for a in [
        Algorithm::Auto,
        Algorithm::Binomial,
        Algorithm::Star,
        Algorithm::Ring,
    ] {
        for n in NS {
            for count in COUNTS {
                let root = n / 2;
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let out = run(n, |comm| {
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

#[test]
fn allgather_and_allgatherv_all_algorithms() {
    for a in [
        Algorithm::Auto,
        Algorithm::RecursiveDoubling,
        Algorithm::Ring,
        Algorithm::BiRing,
        Algorithm::Bruck,
    ] {
        for n in NS {
            for count in COUNTS {
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let out = run(n, |comm| {
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

#[test]
fn scatter_and_scatterv_all_algorithms() {
    for a in [Algorithm::Auto, Algorithm::Binomial, Algorithm::Star] {
        for n in NS {
            for count in COUNTS {
                let root = (n * 2) / 3;
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let out = run(n, |comm| {
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

#[test]
fn alltoall_and_alltoallv_all_algorithms() {
    // Block sent from r to q: element i = val(r * 100 + q, i).
    let block = |r: usize, q: usize, len: usize| -> Vec<i64> {
        (0..len).map(|i| val(r * 100 + q, i)).collect()
    };
    let sc = |r: usize, q: usize, count: usize| (count + r * 5 + q * 3) % (count + 1);
    for a in [Algorithm::Auto, Algorithm::Pairwise, Algorithm::Bruck] {
        for n in NS {
            for count in COUNTS {
                let out = run(n, |comm| {
                    let me = comm.rank();
                    let input = concat((0..n).map(|q| block(me, q, count)));
                    let mut o = vec![0i64; n * count];
                    comm.alltoall_into_with(&input, &mut o, &opts(a))?;
                    let mut v = None;
                    if a != Algorithm::Bruck {
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

#[test]
fn reduce_scatter_all_algorithms() {
    for (a, repro) in [
        (Algorithm::Auto, false),
        (Algorithm::RecursiveHalving, false),
        (Algorithm::Ring, false),
        (Algorithm::Auto, true),
    ] {
        for n in NS {
            for count in COUNTS {
                let o = CollOpts {
                    algorithm: a,
                    reproducible: repro,
                    ..Default::default()
                };
                let vcounts: Vec<usize> = (0..n).map(|r| vc(r, count)).collect();
                let vtotal: usize = vcounts.iter().sum();
                let out = run(n, |comm| {
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

#[test]
fn scans_all_variants_and_algorithms() {
    let variants = scan_variants();
    let add = |a: &i64, b: &i64| a.wrapping_add(*b);
    for n in NS {
        for count in COUNTS {
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
            for a in [
                Algorithm::Auto,
                Algorithm::RecursiveDoubling,
                Algorithm::Chain,
            ] {
                let out = run(n, |comm| {
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

#[test]
fn scan_and_exscan_shorthands() {
    for n in NS {
        let out = run(n, |comm| {
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
