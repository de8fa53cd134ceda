//! Hypercube utilities from the iPSC communication utilities (seed 000,
//! section 9 and the Fortran listing): Gray code and its inverse, BETWEEN
//! (shortest-path ordering) and SPLIT (the fan-out step of the sparse global
//! send SPGSNW).
//!
//! Node numbers are 0-based; lists are 0-based slices where the Fortran
//! used 1-based arrays.

/// The `i`-th entry of the binary reflected Gray code (GRAY: `i XOR i/2`).
/// Consecutive entries are hypercube neighbours.
pub fn gray(i: usize) -> usize {
    i ^ (i >> 1)
}

/// Inverse of [`gray`] (GINV): the position of `n` in the Gray code order.
pub fn gray_inverse(n: usize) -> usize {
    let mut g = n;
    let mut t = n >> 1;
    while t != 0 {
        g ^= t;
        t >>= 1;
    }
    g
}

/// BETWEEN(i, j, k): whether node `j` lies on a shortest path from node `i`
/// to node `k` in the hypercube, i.e. `i⊕k == (i⊕j) + (j⊕k)` (the seed's
/// exact formula; it holds iff the bits where `j` differs from `i` are a
/// subset of those where `k` does, and `j` agrees with `k` elsewhere).
pub fn between(i: usize, j: usize, k: usize) -> bool {
    (i ^ k) == (i ^ j) + (j ^ k)
}

/// SPLIT, exactly as the seed's listing: find a *child* in `list` (a target
/// with no other listed target between `me` and it), then reorder `list` so
/// that the child's descendants (targets `d` with `between(me, child, d)`)
/// come first, the child next, the rest last. Returns `first`, the number of
/// descendants; the child is `list[first]`.
///
/// # Panics
/// If `list` is empty.
pub fn split(me: usize, list: &mut [usize]) -> usize {
    let number = list.len();
    assert!(number > 0, "split of an empty list");
    // 1-based accessors to follow the Fortran line by line.
    let at = |l: &[usize], i: usize| l[i - 1];
    // 1. Find key: a minimal target in the "between" order.
    let mut key = 1;
    for test in 2..=number {
        if between(me, at(list, test), at(list, key)) {
            key = test;
        }
    }
    // 2. Swap key to the front (slot 1 becomes free for the child).
    let child = at(list, key);
    list[key - 1] = list[0];
    // 3. Partition 2..=number: descendants of the child first.
    let mut lo = 2usize;
    let mut hi = number;
    'outer: loop {
        // 30: move lo upward
        while lo <= hi {
            if !between(me, child, at(list, lo)) {
                // 40: move hi downward
                loop {
                    if lo >= hi {
                        break 'outer;
                    }
                    if between(me, child, at(list, hi)) {
                        // 50: swap
                        list.swap(lo - 1, hi - 1);
                        lo += 1;
                        hi -= 1;
                        continue 'outer;
                    }
                    hi -= 1;
                }
            }
            lo += 1;
        }
        break;
    }
    // 4. 60: put the child in the middle.
    let first = lo - 2;
    list[0] = list[first];
    list[first] = child;
    first
}

/// The SPGSNW loop for one sender: given the list of targets `me` is
/// responsible for, the sequence of `(child, child's sub-list)` in the order
/// the seed sends them. Every target appears exactly once, either as a child
/// or in exactly one sub-list.
pub fn spgsnw_fanout(me: usize, targets: &[usize]) -> Vec<(usize, Vec<usize>)> {
    let mut list = targets.to_vec();
    let mut out = Vec::new();
    while !list.is_empty() {
        let first = split(me, &mut list);
        let child = list[first];
        let sub = list[..first].to_vec();
        out.push((child, sub));
        list.drain(..=first);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gray_round_trip_and_adjacency() {
        for i in 0..4096 {
            assert_eq!(gray_inverse(gray(i)), i);
            assert_eq!(gray(gray_inverse(i)), i);
            assert_eq!((gray(i) ^ gray(i + 1)).count_ones(), 1);
        }
        assert_eq!(
            (0..8).map(gray).collect::<Vec<_>>(),
            [0, 1, 3, 2, 6, 7, 5, 4]
        );
    }

    #[test]
    fn between_matches_shortest_path_definition() {
        // j is on a shortest path i -> k iff dist(i,j) + dist(j,k) == dist(i,k).
        let d = |a: usize, b: usize| (a ^ b).count_ones();
        for i in 0..16 {
            for j in 0..16 {
                for k in 0..16 {
                    assert_eq!(
                        between(i, j, k),
                        d(i, j) + d(j, k) == d(i, k),
                        "{i} {j} {k}"
                    );
                }
            }
        }
        assert!(between(0, 1, 3));
        assert!(!between(0, 2, 1));
        assert!(between(5, 5, 7) && between(5, 7, 7));
    }

    #[test]
    fn split_follows_seed_definition() {
        // Exhaustive over small lists: child minimal, descendants first.
        for me in 0..8usize {
            for mask in 1u32..256 {
                let targets: Vec<usize> =
                    (0..8).filter(|&t| t != me && mask >> t & 1 == 1).collect();
                if targets.is_empty() {
                    continue;
                }
                let mut list = targets.clone();
                let first = split(me, &mut list);
                let child = list[first];
                // no other target between me and the child
                for &t in &targets {
                    if t != child {
                        assert!(!between(me, t, child), "me {me} t {t} child {child}");
                    }
                }
                for (i, &t) in list.iter().enumerate() {
                    if i < first {
                        assert!(between(me, child, t));
                    } else if i > first {
                        assert!(!between(me, child, t));
                    }
                }
                let mut a = list.clone();
                a.sort_unstable();
                let mut b = targets.clone();
                b.sort_unstable();
                assert_eq!(a, b, "split must permute");
            }
        }
    }

    #[test]
    fn split_example() {
        // From node 0, targets 3, 1, 6: 1 is a child (nothing between 0 and 1),
        // 3 descends from it; 6 does not.
        let mut l = vec![3, 1, 6];
        let first = split(0, &mut l);
        assert_eq!(first, 1);
        assert_eq!(l, vec![3, 1, 6]);
        let f = spgsnw_fanout(0, &[3, 1, 6]);
        assert_eq!(f, vec![(1, vec![3]), (6, vec![])]);
    }
}
