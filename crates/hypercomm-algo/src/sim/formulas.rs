//! Seed 001's closed forms, written from the seed (independently of the
//! simulator), for the table in the [module docs](super) and the tests
//! that hold the simulator to them.

use super::network::{Costs, Network, Routing};
use crate::Collective;

/// One entry of the table: an operation on a network with a routing, the
/// machines it holds for, and its time.
#[derive(Debug, Clone, Copy)]
pub struct Form {
    /// The operation.
    pub op: Collective,
    /// The network.
    pub network: Network,
    /// The routing.
    pub routing: Routing,
    /// The formula, as the table writes it.
    pub text: &'static str,
    /// The machines it holds for, in words.
    pub domain: &'static str,
    /// Whether it holds for `p` nodes.
    pub holds: fn(usize) -> bool,
    /// Its time for `p` nodes, messages of `m` words and costs `c`.
    pub time: fn(usize, f64, Costs) -> f64,
}

fn log2(p: usize) -> f64 {
    f64::from(p.trailing_zeros())
}

/// √p when p is a square.
fn sqrt(p: usize) -> Option<usize> {
    let q = (p as f64).sqrt().round() as usize;
    (q * q == p).then_some(q)
}

fn pow2(p: usize) -> bool {
    p >= 2 && p.is_power_of_two()
}

fn any(p: usize) -> bool {
    p >= 2
}

fn square(p: usize) -> bool {
    sqrt(p).is_some_and(|q| q >= 2)
}

fn square_pow2(p: usize) -> bool {
    sqrt(p).is_some_and(pow2)
}

fn q(p: usize) -> f64 {
    sqrt(p).expect("a square") as f64
}

fn half_up(n: f64) -> f64 {
    (n / 2.0).ceil()
}

fn half_down(n: f64) -> f64 {
    (n / 2.0).floor()
}

macro_rules! form {
    ($op:ident, $net:ident, $r:ident, $text:expr, $domain:expr, $holds:expr, |$p:ident, $m:ident, $c:ident| $t:expr) => {
        Form {
            op: Collective::$op,
            network: Network::$net,
            routing: Routing::$r,
            text: $text,
            domain: $domain,
            holds: $holds,
            time: |$p: usize, $m: f64, $c: Costs| -> f64 {
                let _ = (&$p, &$m, &$c);
                $t
            },
        }
    };
}

/// The table (see the module docs): every operation seed 001 treats, on
/// its three networks, with both routings.
pub const FORMS: &[Form] = &[
    // One-to-all broadcast.
    form!(
        Bcast,
        Ring,
        StoreAndForward,
        "⌈p/2⌉·(ts + tw·m) + ⌊p/2⌋·th",
        "p ≥ 2",
        any,
        |p, m, c| half_up(p as f64) * (c.ts + c.tw * m) + half_down(p as f64) * c.th
    ),
    form!(
        Bcast,
        Ring,
        CutThrough,
        "(ts + tw·m)·log p + th·(p − 1)",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m) * log2(p) + c.th * (p - 1) as f64
    ),
    form!(
        Bcast,
        MeshWrap,
        StoreAndForward,
        "2·(⌈√p/2⌉·(ts + tw·m) + ⌊√p/2⌋·th)",
        "p = q², q ≥ 2",
        square,
        |p, m, c| 2.0 * (half_up(q(p)) * (c.ts + c.tw * m) + half_down(q(p)) * c.th)
    ),
    form!(
        Bcast,
        MeshWrap,
        CutThrough,
        "(ts + tw·m)·log p + 2·th·(√p − 1)",
        "p = q², q = 2^d",
        square_pow2,
        |p, m, c| (c.ts + c.tw * m) * log2(p) + 2.0 * c.th * (q(p) - 1.0)
    ),
    form!(
        Bcast,
        Hypercube,
        StoreAndForward,
        "(ts + tw·m + th)·log p",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m + c.th) * log2(p)
    ),
    form!(
        Bcast,
        Hypercube,
        CutThrough,
        "(ts + tw·m + th)·log p",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m + c.th) * log2(p)
    ),
    // Single-node accumulation.
    form!(
        Reduce,
        Ring,
        StoreAndForward,
        "⌈p/2⌉·(ts + tw·m + th)",
        "p ≥ 2",
        any,
        |p, m, c| half_up(p as f64) * (c.ts + c.tw * m + c.th)
    ),
    form!(
        Reduce,
        Ring,
        CutThrough,
        "(ts + tw·m)·log p + th·(p − 1)",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m) * log2(p) + c.th * (p - 1) as f64
    ),
    form!(
        Reduce,
        MeshWrap,
        StoreAndForward,
        "2·⌈√p/2⌉·(ts + tw·m + th)",
        "p = q², q ≥ 2",
        square,
        |p, m, c| 2.0 * half_up(q(p)) * (c.ts + c.tw * m + c.th)
    ),
    form!(
        Reduce,
        MeshWrap,
        CutThrough,
        "(ts + tw·m)·log p + 2·th·(√p − 1)",
        "p = q², q = 2^d",
        square_pow2,
        |p, m, c| (c.ts + c.tw * m) * log2(p) + 2.0 * c.th * (q(p) - 1.0)
    ),
    form!(
        Reduce,
        Hypercube,
        StoreAndForward,
        "(ts + tw·m + th)·log p",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m + c.th) * log2(p)
    ),
    form!(
        Reduce,
        Hypercube,
        CutThrough,
        "(ts + tw·m + th)·log p",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m + c.th) * log2(p)
    ),
    // All-to-all broadcast.
    form!(
        Allgather,
        Ring,
        StoreAndForward,
        "(ts + tw·m + th)·(p − 1)",
        "p ≥ 2",
        any,
        |p, m, c| (c.ts + c.tw * m + c.th) * (p - 1) as f64
    ),
    form!(
        Allgather,
        Ring,
        CutThrough,
        "(ts + tw·m + th)·(p − 1)",
        "p ≥ 2",
        any,
        |p, m, c| (c.ts + c.tw * m + c.th) * (p - 1) as f64
    ),
    form!(
        Allgather,
        MeshWrap,
        StoreAndForward,
        "2·(ts + th)·(√p − 1) + tw·m·(p − 1)",
        "p = q², q ≥ 2",
        square,
        |p, m, c| 2.0 * (c.ts + c.th) * (q(p) - 1.0) + c.tw * m * (p - 1) as f64
    ),
    form!(
        Allgather,
        MeshWrap,
        CutThrough,
        "2·(ts + th)·(√p − 1) + tw·m·(p − 1)",
        "p = q², q ≥ 2",
        square,
        |p, m, c| 2.0 * (c.ts + c.th) * (q(p) - 1.0) + c.tw * m * (p - 1) as f64
    ),
    form!(
        Allgather,
        Hypercube,
        StoreAndForward,
        "(ts + th)·log p + tw·m·(p − 1)",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.th) * log2(p) + c.tw * m * (p - 1) as f64
    ),
    form!(
        Allgather,
        Hypercube,
        CutThrough,
        "(ts + th)·log p + tw·m·(p − 1)",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.th) * log2(p) + c.tw * m * (p - 1) as f64
    ),
    // Prefix sums.
    form!(
        Scan,
        Ring,
        StoreAndForward,
        "(ts + tw·m + th)·(p − 1)",
        "p ≥ 2",
        any,
        |p, m, c| (c.ts + c.tw * m + c.th) * (p - 1) as f64
    ),
    form!(
        Scan,
        Ring,
        CutThrough,
        "(ts + tw·m + th)·(p − 1)",
        "p ≥ 2",
        any,
        |p, m, c| (c.ts + c.tw * m + c.th) * (p - 1) as f64
    ),
    form!(
        Scan,
        MeshWrap,
        StoreAndForward,
        "2·(ts + tw·m + th)·(√p − 1)",
        "p = q², q ≥ 2",
        square,
        |p, m, c| 2.0 * (c.ts + c.tw * m + c.th) * (q(p) - 1.0)
    ),
    form!(
        Scan,
        MeshWrap,
        CutThrough,
        "2·(ts + tw·m + th)·(√p − 1)",
        "p = q², q ≥ 2",
        square,
        |p, m, c| 2.0 * (c.ts + c.tw * m + c.th) * (q(p) - 1.0)
    ),
    form!(
        Scan,
        Hypercube,
        StoreAndForward,
        "(ts + tw·m + th)·log p",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m + c.th) * log2(p)
    ),
    form!(
        Scan,
        Hypercube,
        CutThrough,
        "(ts + tw·m + th)·log p",
        "p = 2^d",
        pow2,
        |p, m, c| (c.ts + c.tw * m + c.th) * log2(p)
    ),
];

/// The table's entry for `op` (by its family) on `network` with
/// `routing`, if it has one.
pub fn closed_form(op: Collective, network: Network, routing: Routing) -> Option<&'static Form> {
    FORMS
        .iter()
        .find(|f| f.op == op.family() && f.network == network && f.routing == routing)
}
