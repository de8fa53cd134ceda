//! The iPSC MESH embedding (seed 000, section 5 and its listing): a mesh
//! of `dim` dimensions into the hypercube, nearest neighbours preserved.
//!
//! As the listing begins: every linear dimension is rounded up to a power
//! of two (`WORK`); the node number is then read as one bit field per
//! dimension, dimension 1 in the low bits, each field the Gray code of the
//! coordinate along that dimension, so that consecutive coordinates differ
//! in one bit (cube neighbours). The listing stops after the rounding; the
//! rest follows the text: coordinates from the inverse Gray code, −1 for a
//! node outside the mesh (all outputs) and for missing neighbours of a
//! non-periodic boundary. A periodic dimension whose length is not a power
//! of two wraps between its ends, which are then not cube neighbours.
//!
//! This is private to the C interface; it should move onto the library's
//! topology module (`hypercomm::topology`) when that exists.

/// MESH's outputs for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Embedded {
    pub(crate) coords: Vec<i32>,
    pub(crate) pred: Vec<i32>,
    pub(crate) succ: Vec<i32>,
    pub(crate) work: Vec<i32>,
}

fn gray(i: i64) -> i64 {
    i ^ (i >> 1)
}

fn ginv(i: i64) -> i64 {
    let (mut g, mut t) = (i, i);
    loop {
        t >>= 1;
        if t == 0 {
            return g;
        }
        g ^= t;
    }
}

/// Node `me`'s place in a mesh of `lindim` nodes per dimension (`perbc[i]`
/// 1: periodic).
pub(crate) fn embed(me: i32, lindim: &[i32], perbc: &[i32]) -> Embedded {
    let d = lindim.len();
    let work: Vec<i32> = lindim
        .iter()
        .map(|&l| {
            if l > 1 {
                (l as u32).next_power_of_two() as i32
            } else {
                1
            }
        })
        .collect();
    let mut shift = Vec::with_capacity(d);
    let mut s = 0u32;
    for &w in &work {
        shift.push(s);
        s += (w as u32).trailing_zeros();
    }
    let none = Embedded {
        coords: vec![-1; d],
        pred: vec![-1; d],
        succ: vec![-1; d],
        work: work.clone(),
    };
    let me = me as i64;
    if me < 0 || (s < 62 && me >= 1i64 << s) {
        return none;
    }
    let field = |i: usize| (me >> shift[i]) & (work[i] as i64 - 1);
    let coords: Vec<i64> = (0..d).map(|i| ginv(field(i))).collect();
    if (0..d).any(|i| coords[i] >= lindim[i].max(1) as i64) {
        return none;
    }
    let with = |i: usize, c: i64| -> i32 {
        let mask = (work[i] as i64 - 1) << shift[i];
        ((me & !mask) | (gray(c) << shift[i])) as i32
    };
    let mut pred = vec![-1; d];
    let mut succ = vec![-1; d];
    for i in 0..d {
        let (c, l) = (coords[i], lindim[i].max(1) as i64);
        let periodic = perbc.get(i) == Some(&1);
        if c > 0 {
            pred[i] = with(i, c - 1);
        } else if periodic && l > 1 {
            pred[i] = with(i, l - 1);
        }
        if c + 1 < l {
            succ[i] = with(i, c + 1);
        } else if periodic && l > 1 {
            succ[i] = with(i, 0);
        }
    }
    Embedded {
        coords: coords.iter().map(|&c| c as i32).collect(),
        pred,
        succ,
        work,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node of the mesh appears once; neighbours along a dimension
    /// differ in one bit (except a non-power-of-two periodic wrap) and are
    /// each other's predecessor and successor.
    #[test]
    fn mesh_neighbours_are_cube_neighbours_and_consistent() {
        for (lin, per) in [
            (vec![8], vec![1]),
            (vec![5], vec![0]),
            (vec![4, 4], vec![1, 0]),
            (vec![3, 5], vec![1, 1]),
            (vec![2, 3, 4], vec![0, 1, 1]),
        ] {
            let total: i32 = lin.iter().product();
            let size: i32 = lin
                .iter()
                .map(|&l: &i32| (l as u32).next_power_of_two() as i32)
                .product();
            let mut seen = std::collections::HashSet::new();
            for me in 0..size {
                let e = embed(me, &lin, &per);
                if e.coords[0] < 0 {
                    assert!(e.pred.iter().chain(&e.succ).all(|&x| x == -1));
                    continue;
                }
                assert!(seen.insert(e.coords.clone()), "{lin:?}: coordinates twice");
                for i in 0..lin.len() {
                    let (c, l) = (e.coords[i], lin[i]);
                    for (n, back) in [(e.succ[i], true), (e.pred[i], false)] {
                        if n < 0 {
                            assert!(per[i] == 0 && (c == 0 || c == l - 1) || l == 1);
                            continue;
                        }
                        let other = embed(n, &lin, &per);
                        let want = if back { other.pred[i] } else { other.succ[i] };
                        assert_eq!(want, me, "{lin:?} dim {i}: {me} <-> {n}");
                        let wraps = (c == 0 && !back) || (c == l - 1 && back);
                        if !wraps || l.count_ones() == 1 {
                            assert_eq!((me ^ n).count_ones(), 1, "{lin:?}: {me} {n}");
                        }
                    }
                }
            }
            assert_eq!(seen.len() as i32, total);
        }
    }

    /// The seed's one-dimensional case: the ring of GRAY order.
    #[test]
    fn one_dimension_is_the_gray_code_ring() {
        let e = embed(gray(3) as i32, &[8], &[1]);
        assert_eq!(e.coords, vec![3]);
        assert_eq!((e.pred[0], e.succ[0]), (gray(2) as i32, gray(4) as i32));
        assert_eq!(embed(9, &[8], &[0]).coords, vec![-1]);
        assert_eq!(embed(gray(7) as i32, &[8], &[0]).succ, vec![-1]);
        assert_eq!(embed(0, &[8], &[1]).pred, vec![gray(7) as i32]);
        assert_eq!(embed(0, &[5], &[0]).work, vec![8]);
    }
}
