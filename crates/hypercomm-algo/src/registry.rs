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
//! | reduce | `root`, `count`; pipelined ones `segment` |
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

pub use crate::entry::{
    combines_nothing, combines_per_step, combines_share, Algorithm, Entry, Params,
    ParseAlgorithmError,
};
use crate::Collective;
use std::str::FromStr;

impl FromStr for Algorithm {
    type Err = ParseAlgorithmError;

    /// "auto", "native", "board" or the name of any registered algorithm.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        for a in [Algorithm::Auto, Algorithm::Native, Algorithm::Board] {
            if s == a.name() {
                return Ok(a);
            }
        }
        all()
            .map(|e| e.algorithm)
            .find(|a| a.name() == s)
            .ok_or_else(|| ParseAlgorithmError {
                name: s.to_owned(),
                known: known_names(),
            })
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
            bcast_recursive_doubling,
            bcast_mesh,
            reduce_binomial,
            reduce_star,
            reduce_chain,
            reduce_biring,
            reduce_mesh,
            reduce_rabenseifner,
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
            allgather_mesh,
            alltoall_pairwise,
            alltoall_bruck,
            reduce_scatter_recursive_halving,
            reduce_scatter_ring,
            scan_recursive_doubling,
            scan_chain,
            scan_mesh,
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
    use crate::topology::TopologyKind;

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
        assert_eq!(
            names(C::SegmentedScan).collect::<Vec<_>>(),
            names(C::Scan).collect::<Vec<_>>()
        );
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
            err.contains("\"Ring\"")
                && err.contains("auto, native, board, dissemination, tree, star, binomial"),
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
