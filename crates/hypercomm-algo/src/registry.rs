//! The algorithm registry: one table of every collective algorithm that
//! selection may pick, read by the library, the selector ([`crate::select`]),
//! the benchmark and the tests (NCCL's one tuning table; MPICH's one file
//! per algorithm).
//!
//! Each algorithm file (`src/<collective>_<algorithm>.rs`) declares its own
//! entries next to its generator, `pub const ENTRIES: &[Entry]`: which
//! family it serves, its [`Algorithm`] name, a generator wrapper taking
//! [`Params`], its cost in the seed-001 model, the bytes one rank combines,
//! whether it needs a commutative operator or a core per rank, and the
//! topology settings (PICL setarc0) that select it. The list of modules at
//! the end of this file both declares the modules (as `crate::<module>`) and
//! builds the table, so **adding an algorithm is one file plus one line of
//! that list**. Within a family the entries keep the order of the list, and
//! that order matters: on a near tie the selector takes the one listed
//! first.
//!
//! # What each family's generators read
//!
//! The caller fills one [`Params`] per call and calls
//! [`Entry::generate`]. `me` and `p` are always read (`me < p`); the other
//! fields by family:
//!
//! | family | reads |
//! |---|---|
//! | barrier | nothing else |
//! | bcast | `root`, `count`; star, chain and bidirectional ring `order`; chain and bidirectional ring `segment` |
//! | reduce | `root`, `count` |
//! | allreduce | `count`; ring `order` |
//! | gather | `root`, `counts`; ring `order` |
//! | scatter | `root`, `counts` |
//! | allgather | `counts`; rings `order` |
//! | alltoall | `count` (elements per block) |
//! | alltoallv | `counts` (sent to each), `recv_counts` (received from each) |
//! | reduce_scatter | `counts`; ring `order` |
//! | scan | `count`, `direction`, `inclusion`; chain `segment` |
//!
//! `counts` and `recv_counts` hold one entry per participant (so their
//! length is `p`); the generators of the variable-count families take the
//! number of participants from `counts.len()`. The barrier of the host with
//! its nodes and the lifted operator of segmented scans are the caller's
//! business: the registry only generates schedules.
//!
//! Not done yet: [`crate::bcast_scatter_allgather()`] (never selected so
//! far), the reproducible schedules ([`crate::reproducible`]) and the sparse
//! multicast ([`crate::multicast_spgsnw`]) are not registered; selection
//! reaches them by rules of its own.

use crate::select::TopologyKind;
use crate::{Collective, Direction, Inclusion, RingOrder, Schedule};
use std::fmt;
use std::str::FromStr;

/// A collective algorithm, identified by its name ("binomial", "ring", …),
/// so that a new algorithm needs no enum variant.
///
/// The associated consts (`Algorithm::Ring`, …) are conveniences for the
/// names registered today and keep code written against the former enum
/// compiling, `match` included (they work as patterns, with a `_` arm);
/// any registered name works through [`Algorithm::named`] or
/// [`str::parse`]. [`Algorithm::Auto`] asks selection to choose.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Algorithm(&'static str);

#[allow(non_upper_case_globals)]
impl Algorithm {
    /// Let selection choose (topology setting, measured table, cost model).
    pub const Auto: Algorithm = Algorithm("auto");
    /// Binomial / hypercube spanning tree.
    pub const Binomial: Algorithm = Algorithm("binomial");
    /// Star (PICL full connectivity).
    pub const Star: Algorithm = Algorithm("star");
    /// Pipelined chain along the ring order.
    pub const Chain: Algorithm = Algorithm("chain");
    /// Bidirectional (pipelined) ring.
    pub const BiRing: Algorithm = Algorithm("biring");
    /// Ring (reduce-scatter + allgather for allreduce).
    pub const Ring: Algorithm = Algorithm("ring");
    /// Recursive doubling / dimension exchange.
    pub const RecursiveDoubling: Algorithm = Algorithm("recursive-doubling");
    /// Recursive halving (reduce-scatter).
    pub const RecursiveHalving: Algorithm = Algorithm("recursive-halving");
    /// Reduce-scatter + allgather by halving and doubling.
    pub const Rabenseifner: Algorithm = Algorithm("rabenseifner");
    /// Reduce to one rank, then broadcast.
    pub const ReduceBcast: Algorithm = Algorithm("reduce-bcast");
    /// Bruck's algorithm.
    pub const Bruck: Algorithm = Algorithm("bruck");
    /// Pairwise exchange.
    pub const Pairwise: Algorithm = Algorithm("pairwise");
    /// Dissemination barrier.
    pub const Dissemination: Algorithm = Algorithm("dissemination");
    /// Tree barrier.
    pub const Tree: Algorithm = Algorithm("tree");

    /// The algorithm called `name`. Any name can be made; only registered
    /// ones (see [`names`]) are found by [`find`] and accepted by
    /// [`str::parse`].
    pub const fn named(name: &'static str) -> Algorithm {
        Algorithm(name)
    }

    /// Its name, as `hypercomm bench` and the registry spell it.
    pub const fn name(self) -> &'static str {
        self.0
    }
}

impl Default for Algorithm {
    fn default() -> Self {
        Algorithm::Auto
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The error of parsing an [`Algorithm`] name that is neither "auto" nor
/// registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseAlgorithmError {
    name: String,
}

impl fmt::Display for ParseAlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown algorithm {:?}; known: auto", self.name)?;
        for n in known_names() {
            write!(f, ", {n}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseAlgorithmError {}

impl FromStr for Algorithm {
    type Err = ParseAlgorithmError;

    /// "auto" or the name of any registered algorithm.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == Algorithm::Auto.name() {
            return Ok(Algorithm::Auto);
        }
        all()
            .map(|e| e.algorithm)
            .find(|a| a.name() == s)
            .ok_or_else(|| ParseAlgorithmError { name: s.to_owned() })
    }
}

/// Every registered name once, in registry order.
fn known_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for e in all() {
        if !v.contains(&e.algorithm.name()) {
            v.push(e.algorithm.name());
        }
    }
    v
}

/// The arguments of one call's schedule, filled once by the caller for
/// whatever entry it runs (see the module doc for the fields each family
/// reads; the others are ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params<'a> {
    /// This participant, `0..p`.
    pub me: usize,
    /// The number of participants.
    pub p: usize,
    /// The root participant of rooted collectives.
    pub root: usize,
    /// Elements of fixed-count collectives (the vector, or one block of an
    /// all-to-all).
    pub count: usize,
    /// Elements per participant of variable-count collectives (for
    /// all-to-allv: the elements this participant sends to each).
    pub counts: &'a [usize],
    /// All-to-allv only: the elements this participant receives from each.
    pub recv_counts: &'a [usize],
    /// Segment length in elements of pipelined algorithms (0 is taken as 1).
    pub segment: usize,
    /// The ring order of ring and chain algorithms (PICL setarc0).
    pub order: RingOrder,
    /// Direction of scans.
    pub direction: Direction,
    /// Inclusive or exclusive scans.
    pub inclusion: Inclusion,
}

impl Params<'static> {
    /// Participant `me` of `p`, with everything else empty or default: root
    /// 0, count 0, no counts, segment 1, natural ring order, an upward
    /// inclusive scan. Fill in the rest with struct update syntax.
    pub const fn new(me: usize, p: usize) -> Params<'static> {
        Params {
            me,
            p,
            root: 0,
            count: 0,
            counts: &[],
            recv_counts: &[],
            segment: 1,
            order: RingOrder::NATURAL,
            direction: Direction::Upward,
            inclusion: Inclusion::Inclusive,
        }
    }
}

/// One registered algorithm of one collective family.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The family it serves (a collective whose [`Collective::family`] is
    /// itself).
    pub collective: Collective,
    /// Its name.
    pub algorithm: Algorithm,
    /// The schedule of one participant.
    pub generate: fn(&Params<'_>) -> Schedule,
    /// Its time in the seed-001 model for `p` participants and `m` bytes
    /// counted as [`Collective`] documents, with start-up `ts` and per-byte
    /// `tw` (seconds).
    pub cost: fn(p: usize, m: usize, ts: f64, tw: f64) -> f64,
    /// The bytes one participant combines with the operator (0 for
    /// collectives that do not reduce); the selector adds this times the
    /// combine cost per byte.
    pub combined: fn(p: usize, m: usize) -> f64,
    /// It combines contributions out of rank order, so it needs a
    /// commutative operator.
    pub commutative_only: bool,
    /// It is pipelined: it only pays off when its stages run at the same
    /// time, which needs a core per rank.
    pub pipelined: bool,
    /// The topology settings (PICL setarc0) that select it.
    pub topologies: &'static [TopologyKind],
}

impl Entry {
    /// The schedule of participant `params.me` (calls the `generate` field).
    pub fn generate(&self, params: &Params<'_>) -> Schedule {
        (self.generate)(params)
    }

    /// Its cost in the seed-001 model (calls the `cost` field).
    pub fn cost(&self, p: usize, m: usize, ts: f64, tw: f64) -> f64 {
        (self.cost)(p, m, ts, tw)
    }
}

/// [`Entry::combined`] of collectives that do not reduce: nothing.
pub fn combines_nothing(_p: usize, _m: usize) -> f64 {
    0.0
}

/// [`Entry::combined`] of algorithms that combine the whole vector at each
/// of ⌈log2 p⌉ steps (recursive doubling, the binomial tree).
pub fn combines_per_step(p: usize, m: usize) -> f64 {
    let steps = (p.max(1) as f64).log2().ceil();
    m as f64 * steps
}

/// [`Entry::combined`] of algorithms that combine one block per step,
/// (p-1)/p of the vector in all (ring, recursive halving, Rabenseifner).
/// Without the combine term the formulas tie recursive doubling and the
/// ring for 2 ranks, which measure 1.3-2x apart for large vectors.
pub fn combines_share(p: usize, m: usize) -> f64 {
    let share = (p.saturating_sub(1)) as f64 / p.max(1) as f64;
    m as f64 * share
}

/// Every entry, in registry order.
pub fn all() -> impl Iterator<Item = &'static Entry> {
    TABLE.iter().flat_map(|es| es.iter())
}

/// The entries of `c`'s family ([`Collective::family`]), in registry order
/// (the order the selector breaks near ties in). Empty for the multicast.
pub fn entries(c: Collective) -> impl Iterator<Item = &'static Entry> {
    let family = c.family();
    all().filter(move |e| e.collective == family)
}

/// The entry of algorithm `a` for `c`'s family, if it is registered.
pub fn find(c: Collective, a: Algorithm) -> Option<&'static Entry> {
    entries(c).find(|e| e.algorithm == a)
}

/// The names of the algorithms of `c`'s family, in registry order.
pub fn names(c: Collective) -> impl Iterator<Item = &'static str> {
    entries(c).map(|e| e.algorithm.name())
}

/// Calls `$then!` with the list of algorithm modules, so that the one list
/// declares the modules (in lib.rs) and builds [`TABLE`] (here).
macro_rules! algorithm_modules {
    ($then:ident) => {
        $then! {
            // The registry list: one line per algorithm file, grouped by
            // family; within a family the first listed wins near ties.
            barrier_dissemination,
            barrier_tree,
            barrier_star,
            bcast_binomial,
            bcast_star,
            bcast_chain,
            bcast_ring,
            reduce_binomial,
            reduce_star,
            allreduce_recursive_doubling,
            allreduce_ring,
            allreduce_rabenseifner,
            allreduce_reduce_bcast,
            gather_binomial,
            gather_star,
            gather_ring,
            scatter_binomial,
            scatter_star,
            allgather_recursive_doubling,
            allgather_ring,
            allgather_bruck,
            alltoall_pairwise,
            alltoall_bruck,
            reduce_scatter_recursive_halving,
            reduce_scatter_ring,
            scan_recursive_doubling,
            scan_chain,
        }
    };
}

/// Declares the algorithm modules (invoked in lib.rs, at the crate root).
macro_rules! declare_modules {
    ($($m:ident),* $(,)?) => {
        $(pub mod $m;)*
    };
}

/// Builds the table from every module's `ENTRIES`.
macro_rules! entry_table {
    ($($m:ident),* $(,)?) => {
        /// Every module's entries, in registry order.
        static TABLE: &[&[Entry]] = &[$(crate::$m::ENTRIES),*];

        /// The registered modules' names (their files are `src/<name>.rs`).
        #[cfg(test)]
        static MODULES: &[&str] = &[$(stringify!($m)),*];
    };
}

algorithm_modules!(entry_table);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::TopologyKind;

    /// Families: every collective that is its own family.
    fn families() -> impl Iterator<Item = Collective> {
        Collective::ALL.into_iter().filter(|c| c.family() == *c)
    }

    #[test]
    fn entries_are_unique_and_under_their_family() {
        let all: Vec<&Entry> = all().collect();
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.collective.family(), e.collective, "{e:?}");
            for f in &all[..i] {
                assert!(
                    (f.collective, f.algorithm) != (e.collective, e.algorithm),
                    "{} {} is registered twice",
                    e.collective,
                    e.algorithm
                );
            }
            assert_ne!(e.algorithm, Algorithm::Auto);
        }
        for c in Collective::ALL {
            assert!(entries(c).all(|e| e.collective == c.family()));
            assert_eq!(entries(c).next().is_none(), c == Collective::Multicast);
        }
    }

    /// The candidates and their order the library has selected from so far
    /// (the first listed wins near ties, so the order is part of the
    /// behaviour).
    #[test]
    fn candidate_order_is_kept() {
        use Collective as C;
        let want: &[(C, &[&str])] = &[
            (C::Barrier, &["dissemination", "tree", "star"]),
            (C::Bcast, &["binomial", "star", "chain", "biring"]),
            (C::Reduce, &["binomial", "star"]),
            (
                C::Allreduce,
                &["recursive-doubling", "ring", "rabenseifner", "reduce-bcast"],
            ),
            (C::Gather, &["binomial", "star", "ring"]),
            (C::Scatter, &["binomial", "star"]),
            (
                C::Allgather,
                &["recursive-doubling", "ring", "biring", "bruck"],
            ),
            (C::Alltoall, &["pairwise", "bruck"]),
            (C::Alltoallv, &["pairwise"]),
            (C::ReduceScatter, &["recursive-halving", "ring"]),
            (C::Scan, &["recursive-doubling", "chain"]),
            (C::Multicast, &[]),
        ];
        for (c, names_want) in want {
            // Algorithms registered since may stand between them.
            let mut now = names(*c);
            assert!(
                names_want.iter().all(|w| now.any(|n| n == *w)),
                "{c}: {:?} in this order",
                names_want
            );
        }
        assert_eq!(want.len(), families().count());
        assert_eq!(
            names(C::Gatherv).collect::<Vec<_>>(),
            names(C::Gather).collect::<Vec<_>>()
        );
        assert_eq!(names(C::SegmentedScan).count(), 2);
    }

    /// Every topology setting selects exactly one algorithm of every family
    /// that has algorithms.
    #[test]
    fn each_setting_selects_one_entry() {
        for c in families().filter(|&c| c != Collective::Multicast) {
            for k in TopologyKind::ALL {
                let n = entries(c).filter(|e| e.topologies.contains(&k)).count();
                assert_eq!(n, 1, "{c} {k:?}");
            }
        }
    }

    #[test]
    fn costs_are_finite_and_not_negative() {
        for e in all() {
            for p in 1..=64 {
                for m in [0, 1, 8, 4099, 1 << 20, 1 << 30] {
                    for (ts, tw) in [(0.5e-6, 0.1e-9), (10e-6, 0.35e-9), (0.0, 0.0)] {
                        let t = e.cost(p, m, ts, tw);
                        assert!(
                            t.is_finite() && t >= 0.0,
                            "{} {e:?} p={p} m={m}: {t}",
                            e.collective
                        );
                    }
                    let b = (e.combined)(p, m);
                    assert!(
                        b.is_finite() && b >= 0.0,
                        "{} {e:?} p={p} m={m}: {b}",
                        e.collective
                    );
                }
            }
        }
    }

    #[test]
    fn names_parse_back() {
        for e in all() {
            let a: Algorithm = e.algorithm.name().parse().unwrap();
            assert_eq!(a, e.algorithm);
            assert_eq!(a.to_string(), e.algorithm.name());
            assert_eq!(format!("{a:?}"), e.algorithm.name());
            assert_eq!(Algorithm::named(e.algorithm.name()), a);
        }
        assert_eq!("auto".parse::<Algorithm>(), Ok(Algorithm::Auto));
        assert_eq!(Algorithm::default(), Algorithm::Auto);
        let err = "Ring".parse::<Algorithm>().unwrap_err().to_string();
        assert!(
            err.contains("\"Ring\"") && err.contains("auto, dissemination, tree, star, binomial"),
            "{err}"
        );
        assert!("".parse::<Algorithm>().is_err());
    }

    /// The names `hypercomm bench` and `bench/sweep_table.py` use, and the
    /// consts that keep code written against the former enum compiling,
    /// `match` included.
    #[test]
    fn consts_are_the_bench_names_and_work_as_patterns() {
        let consts = [
            (Algorithm::Auto, "auto"),
            (Algorithm::Binomial, "binomial"),
            (Algorithm::Star, "star"),
            (Algorithm::Chain, "chain"),
            (Algorithm::BiRing, "biring"),
            (Algorithm::Ring, "ring"),
            (Algorithm::RecursiveDoubling, "recursive-doubling"),
            (Algorithm::RecursiveHalving, "recursive-halving"),
            (Algorithm::Rabenseifner, "rabenseifner"),
            (Algorithm::ReduceBcast, "reduce-bcast"),
            (Algorithm::Bruck, "bruck"),
            (Algorithm::Pairwise, "pairwise"),
            (Algorithm::Dissemination, "dissemination"),
            (Algorithm::Tree, "tree"),
        ];
        for (a, n) in consts {
            assert_eq!(a.name(), n);
            assert_eq!(n.parse::<Algorithm>(), Ok(a));
        }
        let kind = |a: Algorithm| match a {
            Algorithm::Auto => 0,
            Algorithm::Ring | Algorithm::BiRing => 1,
            Algorithm::Binomial => 2,
            _ => 3,
        };
        assert_eq!(kind(Algorithm::named("ring")), 1);
        assert_eq!(kind("biring".parse().unwrap()), 1);
        assert_eq!(kind(Algorithm::Binomial), 2);
        assert_eq!(kind(Algorithm::Bruck), 3);
        assert_eq!(kind(Algorithm::default()), 0);
    }

    #[test]
    fn find_goes_by_family() {
        let e = find(Collective::Allgatherv, Algorithm::BiRing).unwrap();
        assert_eq!(e.collective, Collective::Allgather);
        assert!(e.pipelined);
        assert!(find(Collective::Alltoall, Algorithm::Star).is_none());
        assert!(find(Collective::Alltoallv, Algorithm::Bruck).is_none());
        assert!(find(Collective::Bcast, Algorithm::Auto).is_none());
        assert!(find(Collective::Multicast, Algorithm::Binomial).is_none());
        let x = Params {
            root: 2,
            count: 5,
            ..Params::new(1, 4)
        };
        let e = find(Collective::Bcast, Algorithm::Binomial).unwrap();
        assert_eq!(e.generate(&x), crate::bcast_binomial(1, 4, 2, 5));
    }

    /// `cargo fmt` does not follow modules declared by a macro
    /// (rustfmt#3253), so the registered files are checked here; fix with
    /// `rustfmt --edition 2021 crates/hypercomm-algo/src/<file>.rs`.
    /// Skipped when rustfmt is not installed.
    #[test]
    fn registered_files_are_formatted() {
        use std::process::Command;
        let rustfmt = std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".into());
        let installed = Command::new(&rustfmt)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            eprintln!("rustfmt not found: registered files not checked");
            return;
        }
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src/");
        let files: Vec<String> = MODULES.iter().map(|m| format!("{src}{m}.rs")).collect();
        // The workspace edition; --check only reads the files.
        let out = Command::new(&rustfmt)
            .args(["--check", "--edition", "2021"])
            .args(&files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "registered files need rustfmt:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
