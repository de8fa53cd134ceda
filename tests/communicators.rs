//! Communicators (SPEC section 3): `dup`, `split`, `subcube`, `prefix`, with
//! and without a host. Membership and numbering are checked against a
//! serial computation; every derived communicator's messages are isolated
//! from every other's, wildcards included; contexts are distinct.

mod common;

use common::{launch, launch_with_host, watchdog, Threads};
use hypercomm::{Comm, Error, Rank, Status, ANY_SOURCE, ANY_TAG};
use proptest::prelude::*;
use std::collections::HashSet;

type L = Threads;

fn node(r: usize) -> Rank {
    Rank::Node(r)
}

/// Receive `count` u32 values with ANY_SOURCE/ANY_TAG on `comm`, sorted.
fn drain_any(comm: &Comm, count: usize) -> hypercomm::Result<Vec<u32>> {
    let mut v = Vec::with_capacity(count);
    for _ in 0..count {
        let (x, st) = comm.recv::<u32>(ANY_SOURCE, ANY_TAG)?;
        assert_eq!(st.tag, 5);
        v.push(x);
    }
    v.sort_unstable();
    Ok(v)
}

/// A ring within `comm`: every member sends `value` to the next rank and
/// returns what the previous rank sent, with the status.
fn ring(comm: &Comm, value: u64) -> hypercomm::Result<(u64, Status)> {
    let (r, s) = (comm.rank(), comm.size());
    let mut b = [0u64];
    let st = comm.send_recv(&[value], (r + 1) % s, 77, &mut b, (r + s - 1) % s, 77)?;
    Ok((b[0], st))
}

// ------------------------------------------------------------------ isolation

#[test]
fn wildcard_never_crosses_dup() {
    watchdog("wildcard_never_crosses_dup", || {
        launch::<L, _, _>(3, |comm| {
            let d = comm.dup();
            assert_ne!(d.context(), comm.context());
            assert_eq!((d.rank(), d.size()), (comm.rank(), comm.size()));
            let r = comm.rank() as u32;
            // The parent's messages go first, with the same tag.
            comm.send(&[100 + r], 0, 5)?;
            d.send(&[200 + r], 0, 5)?;
            if r == 0 {
                assert_eq!(drain_any(&d, 3)?, [200, 201, 202]);
                assert_eq!(d.iprobe(ANY_SOURCE, ANY_TAG)?, None);
                assert_eq!(drain_any(comm, 3)?, [100, 101, 102]);
                assert_eq!(comm.iprobe(ANY_SOURCE, ANY_TAG)?, None);
            }
            Ok(())
        })
        .unwrap();
    });
}

/// Each communicator has a global OR flag of its own: a bit set through a
/// split half reaches neither the world's flag nor the other half's, and
/// a bit set through the world reaches every rank of it, also after the
/// same rank set its bit through a half.
#[test]
fn global_or_is_per_communicator() {
    watchdog("global_or_is_per_communicator", || {
        launch::<L, _, _>(4, |comm| {
            let half = comm.split(Some((comm.rank() / 2) as u32), 0)?.unwrap();
            if comm.rank() == 0 {
                half.set_global_or(true);
            }
            comm.barrier()?;
            if comm.rank() == 1 {
                common::poll_until(common::OP_TIMEOUT, "rank 0's bit in the half", || {
                    half.get_global_or()
                });
            }
            comm.barrier()?;
            assert!(!comm.get_global_or(), "a half's bit is not the world's");
            assert_eq!(half.get_global_or(), comm.rank() < 2);
            comm.barrier()?;
            if comm.rank() == 0 {
                comm.set_global_or(true);
            }
            common::poll_until(common::OP_TIMEOUT, "rank 0's bit in the world", || {
                comm.get_global_or()
            });
            comm.barrier()?;
            Ok::<_, Error>(())
        })
        .unwrap();
    });
}

#[test]
fn wildcard_never_crosses_split() {
    watchdog("wildcard_never_crosses_split", || {
        launch::<L, _, _>(4, |comm| {
            let r = comm.rank();
            let child = comm.split(Some(r as u32 % 2), 0)?.expect("has a color");
            // Parent ranks 0 and 1 are rank 0 of the two halves.
            assert_eq!(child.rank(), r / 2);
            assert_eq!(child.size(), 2);
            let v = r as u32;
            for dst in [0usize, 1] {
                comm.send(&[100 + v], dst, 5)?;
            }
            child.send(&[200 + v], 0, 5)?;
            if r < 2 {
                // Child first, though the parent's messages arrived earlier.
                let want: Vec<u32> = (0..4).filter(|q| q % 2 == v).map(|q| 200 + q).collect();
                assert_eq!(drain_any(&child, 2)?, want);
                assert_eq!(child.iprobe(ANY_SOURCE, ANY_TAG)?, None);
                assert_eq!(drain_any(comm, 4)?, [100, 101, 102, 103]);
                assert_eq!(comm.iprobe(ANY_SOURCE, ANY_TAG)?, None);
            }
            Ok(())
        })
        .unwrap();
    });
}

// ---------------------------------------------------------------------- split

/// Serial reference: the members of `color`, as old ranks ordered by
/// (key, old rank).
fn split_members(input: &[(Option<u32>, i64)], color: u32) -> Vec<usize> {
    let mut m: Vec<(i64, usize)> = input
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| *c == Some(color))
        .map(|(r, &(_, k))| (k, r))
        .collect();
    m.sort_unstable();
    m.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn split_orders_by_key_then_rank() {
    watchdog("split_orders_by_key_then_rank", || {
        let strategy = (1usize..=7).prop_flat_map(|n| {
            proptest::collection::vec((proptest::option::weighted(0.8, 0u32..3), -2i64..3), n)
        });
        let mut runner = common::runner(32);
        runner
            .run(&strategy, |input| {
                let n = input.len();
                let out = launch::<L, _, _>(n, |comm| {
                    let r = comm.rank();
                    let (color, key) = input[r];
                    let child = comm.split(color, key)?;
                    let Some(c) = color else {
                        assert!(child.is_none(), "rank {r}: None color gives None");
                        return Ok(None);
                    };
                    let child = child.expect("a color gives a communicator");
                    let members = split_members(&input, c);
                    let me = members.iter().position(|&q| q == r).expect("member");
                    assert_eq!(child.size(), members.len(), "size, rank {r}");
                    assert_eq!(child.rank(), me, "new rank of {r}");
                    assert_eq!(child.me(), node(me));
                    assert!(!child.has_host());
                    // Messages travel by the new numbering.
                    let s = members.len();
                    let (got, st) = ring(&child, r as u64)?;
                    let left = (me + s - 1) % s;
                    assert_eq!(got, members[left] as u64);
                    assert_eq!(st.source, node(left));
                    Ok(Some((c, child.context())))
                })
                .unwrap();
                // One context per color, the same on every member, distinct
                // between colors and from the parent's.
                let mut by_color = std::collections::HashMap::new();
                for (c, ctx) in out.into_iter().flatten() {
                    assert_eq!(*by_color.entry(c).or_insert(ctx), ctx, "color {c}");
                }
                let ctxs: HashSet<u64> = by_color.values().copied().collect();
                assert_eq!(ctxs.len(), by_color.len(), "distinct contexts per color");
                assert!(!ctxs.contains(&0), "differs from the world context");
                Ok(())
            })
            .unwrap();
    });
}

#[test]
fn split_with_host() {
    watchdog("split_with_host", || {
        // Nodes: color r % 2, key -r (reverse order). Host: color 1.
        // Color 1 = nodes {1, 3} + host, ordered 3, 1. Color 0 = {0, 2}, ordered 2, 0.
        let (host, nodes) = launch_with_host::<L, _, _, _, _>(
            4,
            |comm| {
                let c = comm.split(Some(1), 0)?.expect("host has a color");
                assert!(c.is_host() && c.has_host());
                assert_eq!(c.me(), Rank::Host);
                assert_eq!(c.size(), 2);
                c.send(&[30u32], 0, 1)?; // node 3
                c.send(&[10u32], 1, 1)?; // node 1
                let (v, st) = c.recv::<u32>(ANY_SOURCE, 2)?;
                assert_eq!(st.source, node(0));
                assert_eq!(v, 3);
                // A second split without the host.
                assert!(comm.split(None, 0)?.is_none());
                Ok(c.context())
            },
            |comm| {
                let r = comm.rank();
                let c = comm.split(Some(r as u32 % 2), -(r as i64))?.expect("color");
                let want_rank = [1, 1, 0, 0][r];
                assert_eq!((c.rank(), c.size()), (want_rank, 2), "rank {r}");
                if r % 2 == 1 {
                    assert!(c.has_host());
                    let (v, st) = c.recv::<u32>(Rank::Host, 1)?;
                    assert_eq!(v, r as u32 * 10);
                    assert_eq!(st.source, Rank::Host);
                    if c.rank() == 0 {
                        c.send(&[r as u32], Rank::Host, 2)?;
                    }
                } else {
                    assert!(!c.has_host());
                    assert!(matches!(
                        c.send(&[1u8], Rank::Host, 0),
                        Err(Error::InvalidRank { .. })
                    ));
                }
                let c2 = comm.split(Some(0), r as i64)?.expect("color 0");
                assert!(!c2.has_host());
                assert_eq!((c2.rank(), c2.size()), (r, 4));
                let (got, _) = ring(&c2, r as u64)?;
                assert_eq!(got, ((r + 3) % 4) as u64);
                Ok(if r % 2 == 1 { Some(c.context()) } else { None })
            },
        )
        .unwrap();
        assert_eq!(nodes[1], Some(host));
        assert_eq!(nodes[3], Some(host));
    });
}

// -------------------------------------------------------------------- subcube

#[test]
fn subcube_membership_and_isolation() {
    watchdog("subcube_membership_and_isolation", || {
        for n in [8usize, 6] {
            for d in 0..=3u32 {
                let out = launch::<L, _, _>(n, |comm| {
                    let r = comm.rank();
                    let sub = comm.subcube(d)?;
                    // Serial reference: the ranks that agree with r in all
                    // but the low d bits, numbered by those bits.
                    let members: Vec<usize> = (0..n).filter(|q| q >> d == r >> d).collect();
                    let me = members.iter().position(|&q| q == r).expect("member");
                    assert_eq!(me, r % (1 << d));
                    assert_eq!(sub.size(), members.len(), "n {n} d {d} rank {r}");
                    assert_eq!(sub.rank(), me);
                    assert!(!sub.has_host());
                    let (got, st) = ring(&sub, r as u64)?;
                    let s = members.len();
                    assert_eq!(got, members[(me + s - 1) % s] as u64);
                    assert_eq!(st.source, node((me + s - 1) % s));
                    // Isolation: the same tag on both, parent first.
                    comm.send(&[r as u32], 0, 5)?;
                    sub.send(&[r as u32], 0, 5)?;
                    if me == 0 {
                        let want: Vec<u32> = members.iter().map(|&q| q as u32).collect();
                        assert_eq!(drain_any(&sub, s)?, want);
                        assert_eq!(sub.iprobe(ANY_SOURCE, ANY_TAG)?, None);
                    }
                    if r == 0 {
                        let want: Vec<u32> = (0..n as u32).collect();
                        assert_eq!(drain_any(comm, n)?, want);
                    }
                    Ok((r >> d, sub.context()))
                })
                .unwrap();
                // Same subcube, same context; different subcubes, different.
                for a in &out {
                    for b in &out {
                        assert_eq!(a.0 == b.0, a.1 == b.1, "n {n} d {d}: {a:?} {b:?}");
                    }
                }
            }
        }
    });
}

// --------------------------------------------------------------------- prefix

#[test]
fn prefix_membership_with_host() {
    watchdog("prefix_membership_with_host", || {
        const N: usize = 5;
        let (host, nodes) = launch_with_host::<L, _, _, _, _>(
            N,
            |comm| {
                let mut ctxs = Vec::new();
                for k in 1..=N {
                    let p = comm.prefix(k)?.expect("the host is in every prefix");
                    assert!(p.is_host() && p.has_host());
                    assert_eq!(p.size(), k);
                    // Each member node sends on the world first, then on p.
                    let mut seen = Vec::new();
                    for _ in 0..k {
                        let (v, st) = p.recv::<u32>(ANY_SOURCE, ANY_TAG)?;
                        assert_eq!(st.tag, k as u32);
                        assert_eq!(Rank::Node(v as usize), st.source);
                        seen.push(v);
                    }
                    seen.sort_unstable();
                    assert_eq!(seen, (0..k as u32).collect::<Vec<_>>());
                    assert_eq!(p.iprobe(ANY_SOURCE, ANY_TAG)?, None);
                    for _ in 0..k {
                        let (v, _) = comm.recv::<u32>(ANY_SOURCE, k as u32)?;
                        assert_eq!(v, 1000);
                    }
                    ctxs.push(p.context());
                }
                Ok(ctxs)
            },
            |comm| {
                let r = comm.rank();
                let mut ctxs = Vec::new();
                for k in 1..=N {
                    let p = comm.prefix(k)?;
                    if r >= k {
                        assert!(p.is_none(), "node {r} is not in prefix({k})");
                        ctxs.push(None);
                        continue;
                    }
                    let p = p.expect("node below k");
                    assert_eq!((p.rank(), p.size()), (r, k));
                    assert!(p.has_host() && !p.is_host());
                    comm.send(&[1000u32], Rank::Host, k as u32)?;
                    p.send(&[r as u32], Rank::Host, k as u32)?;
                    ctxs.push(Some(p.context()));
                }
                Ok(ctxs)
            },
        )
        .unwrap();
        let distinct: HashSet<u64> = host.iter().copied().collect();
        assert_eq!(distinct.len(), N);
        for (r, ctxs) in nodes.iter().enumerate() {
            for (i, c) in ctxs.iter().enumerate() {
                if let Some(c) = c {
                    assert_eq!(*c, host[i], "node {r}, prefix({})", i + 1);
                }
            }
        }
    });
}

// ------------------------------------------------------------------- contexts

#[test]
fn nested_chains_have_distinct_contexts() {
    watchdog("nested_chains_have_distinct_contexts", || {
        const N: usize = 4;
        let out = launch::<L, _, _>(N, |comm| {
            let r = comm.rank();
            let a = comm.dup();
            let b = a.dup();
            let c = comm.dup();
            let s = b.split(Some(0), 0)?.expect("color 0");
            let s2 = s.dup();
            let s3 = s2.split(Some(7), -(r as i64))?.expect("color 7");
            let p = comm.prefix(N)?.expect("all nodes");
            let p2 = comm.prefix(N)?.expect("all nodes");
            let pd = p.dup();
            let same_group = [
                comm.context(),
                a.context(),
                b.context(),
                c.context(),
                s.context(),
                s2.context(),
                s3.context(),
                p.context(),
                p2.context(),
                pd.context(),
            ];
            // Group-dependent ones.
            let e = comm.split(Some(r as u32 % 2), 0)?.expect("color");
            let sub = comm.subcube(1)?;
            let sub2 = comm.subcube(1)?;
            let mut all: Vec<u64> = same_group.to_vec();
            all.extend([e.context(), sub.context(), sub2.context()]);
            let distinct: HashSet<u64> = all.iter().copied().collect();
            assert_eq!(distinct.len(), all.len(), "rank {r}: {all:x?}");
            assert!(all.iter().all(|c| c % 2 == 0), "user contexts are even");
            // a and c are copies of one parent: same tag, no crossing.
            let right = (r + 1) % N;
            a.send(&[1u32], right, 5)?;
            c.send(&[2u32], right, 5)?;
            s3.send(&[3u32], 0, 5)?;
            assert_eq!(c.recv::<u32>(ANY_SOURCE, ANY_TAG)?.0, 2);
            assert_eq!(a.recv::<u32>(ANY_SOURCE, ANY_TAG)?.0, 1);
            if s3.rank() == 0 {
                // Reverse key order: node 3 is rank 0 of s3.
                assert_eq!(r, 3);
                assert_eq!(drain_any(&s3, N)?, [3, 3, 3, 3]);
            }
            Ok(same_group)
        })
        .unwrap();
        for r in 1..N {
            assert_eq!(
                out[r], out[0],
                "rank {r} derived the same contexts as rank 0"
            );
        }
    });
}

/// `Cart::shift` by any displacement, `isize::MAX` and `isize::MIN`
/// included: a periodic axis wraps it, a line has no rank past its edge
/// (the displacement used to overflow: a panic in a debug build, a wrong
/// rank in a release build).
#[test]
fn cartesian_shifts_by_any_displacement_wrap_or_leave_without_overflow() {
    let out = hypercomm::run(3, |comm| {
        let ring = comm.cartesian(&[3], &[true])?.expect("in the grid");
        let line = comm.cartesian(&[3], &[false])?.expect("in the grid");
        let me = ring.coords()[0] as i128;
        let at = |d: i128| Some((me + d).rem_euclid(3) as usize);
        for disp in [isize::MAX, isize::MIN, isize::MIN + 1, -4, 5] {
            let s = ring.shift(0, disp);
            assert_eq!(s.dest, at(disp as i128), "dest of {disp}");
            assert_eq!(s.source, at(-(disp as i128)), "source of {disp}");
            assert_eq!(ring.neighbour(0, disp), at(disp as i128), "{disp}");
            let s = line.shift(0, disp);
            assert_eq!((s.dest, s.source), (None, None), "{disp} on a line");
        }
        Ok::<_, Error>(ring.shift(0, 1).dest)
    })
    .unwrap();
    assert_eq!(out, vec![Some(1), Some(2), Some(0)]);
}
