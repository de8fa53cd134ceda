//! Collectives on the thread transport against serial computations:
//! every operation × algorithm × n ∈ {1,2,3,4,5,7,8,13,16} × count ∈ {0,1,64,4099}.

use hypercomm::collective::{BitXor, Max, Min, Prod, Sum, UserOp};
use hypercomm::{run, Algorithm, CollOpts, Error, Rank};

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
