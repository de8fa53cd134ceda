//! The options a check-mode signature states (`task.rs`): those of the
//! call ([`CollOpts`](super::CollOpts): forced algorithm, reproducible
//! mode, segment size) and those of its communicator (the topology
//! setting, PICL setarc0, and whether calls go to the transport library's
//! collectives). They decide how a call is carried out — which schedule,
//! and whether on messages, on the shared-memory board or in the library
//! — so participants that disagree about them would exchange wrong data
//! or wait for each other for ever; in check mode they fail instead,
//! told which option differs on which ranks.
//!
//! Eight bytes of the signature: the forced algorithm as a 16-bit digest
//! of its name (named again from the registry for the message), flags,
//! the topology setting (kind and ring order) and the segment size.

use hypercomm_algo::{Algorithm, Topology};

/// What a signature says about the options in force for a call: those of
/// the call (forced algorithm, reproducible mode, segment size) and those
/// of its communicator (topology setting, library collectives). Every
/// participant that states them must state the same: they decide the
/// schedule, and whether the call runs on messages, on the board or in
/// the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Opts {
    /// The forced algorithm ([`algorithm_code`]; 0: `Auto`).
    pub(crate) algorithm: u16,
    /// [`REPRODUCIBLE`], [`SEGMENTED`], [`NATIVE`], [`ANY_OPTS`].
    pub(crate) flags: u8,
    /// The topology setting: its kind, bit 4 Gray order, bit 5 backward.
    pub(crate) topology: u8,
    /// The segment size in bytes when given ([`SEGMENTED`]), at most
    /// `u32::MAX`.
    pub(crate) segment: u32,
}

/// [`Opts::flags`]: reproducible mode.
const REPRODUCIBLE: u8 = 1;
/// [`Opts::flags`]: a segment size was given.
const SEGMENTED: u8 = 2;

/// The flags ([`REPRODUCIBLE`], [`SEGMENTED`]) and the segment size (at
/// most `u32::MAX`, 0 when not given) of a call with options `o`, as its
/// [`Check`](super::call::Check) keeps them.
pub(crate) fn call_flags(o: &super::CollOpts) -> (u8, u32) {
    let mut flags = u8::from(o.reproducible);
    let mut segment = 0;
    if let Some(b) = o.segment_bytes {
        flags |= SEGMENTED;
        segment = u32::try_from(b).unwrap_or(u32::MAX);
    }
    (flags, segment)
}
/// [`Opts::flags`]: the communicator hands calls to the library.
const NATIVE: u8 = 4;
/// [`Opts::flags`]: this participant states no options (any match).
const ANY_OPTS: u8 = 0x80;

impl Opts {
    /// The options of a participant whose part does not depend on them
    /// (the host of a call rooted at it): they match any.
    pub(crate) const ANY: Opts = Opts {
        algorithm: 0,
        flags: ANY_OPTS,
        topology: 0,
        segment: 0,
    };

    /// The options of a call whose check says `call`'s own, on a
    /// communicator with topology setting `topology` and library
    /// collectives `native`.
    pub(crate) fn of(call: &super::call::Check, topology: Topology, native: bool) -> Opts {
        let [kind, gray, forward] = super::legacy::topo_code(topology);
        Opts {
            algorithm: algorithm_code(call.algorithm),
            flags: call.flags & (REPRODUCIBLE | SEGMENTED) | if native { NATIVE } else { 0 },
            topology: kind | gray << 4 | (forward ^ 1) << 5,
            segment: call.segment,
        }
    }

    /// The differences of `self` (one participant's) from `base` (the
    /// reference's), as "what mine vs theirs", or nothing when either
    /// states no options.
    pub(super) fn differences(&self, base: &Opts) -> Vec<String> {
        let mut f = Vec::new();
        if (self.flags | base.flags) & ANY_OPTS != 0 {
            return f;
        }
        if self.algorithm != base.algorithm {
            f.push(format!(
                "algorithm {} vs {}",
                algorithm_name(self.algorithm),
                algorithm_name(base.algorithm)
            ));
        }
        let on = |o: &Opts, flag: u8| if o.flags & flag != 0 { "on" } else { "off" };
        if (self.flags ^ base.flags) & REPRODUCIBLE != 0 {
            f.push(format!(
                "reproducible {} vs {}",
                on(self, REPRODUCIBLE),
                on(base, REPRODUCIBLE)
            ));
        }
        if (self.flags ^ base.flags) & SEGMENTED != 0 || self.segment != base.segment {
            let seg = |o: &Opts| {
                if o.flags & SEGMENTED == 0 {
                    "not given".to_string()
                } else {
                    format!("{} bytes", o.segment)
                }
            };
            f.push(format!("segment_bytes {} vs {}", seg(self), seg(base)));
        }
        if self.topology != base.topology {
            f.push(format!(
                "topology {} vs {}",
                topology_name(self.topology),
                topology_name(base.topology)
            ));
        }
        if (self.flags ^ base.flags) & NATIVE != 0 {
            f.push(format!(
                "library collectives {} vs {}",
                on(self, NATIVE),
                on(base, NATIVE)
            ));
        }
        f
    }
}

/// A forced algorithm as a signature states it: 0 for `Auto`, else a
/// 16-bit digest of its name (FNV-1a, folded), never 0. The registered
/// names, `native` and `board` have distinct digests (a test says so).
pub(crate) fn algorithm_code(a: Algorithm) -> u16 {
    if a == Algorithm::Auto {
        return 0;
    }
    let h = a.name().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    ((h ^ h >> 16 ^ h >> 32 ^ h >> 48) as u16).max(1)
}

/// The name of the algorithm whose [`algorithm_code`] is `code`.
fn algorithm_name(code: u16) -> String {
    if code == 0 {
        return "auto".into();
    }
    [Algorithm::Native, Algorithm::Board]
        .into_iter()
        .chain(hypercomm_algo::registry::all().map(|e| e.algorithm))
        .find(|&a| algorithm_code(a) == code)
        .map_or_else(
            || format!("unregistered (code {code:#06x})"),
            |a| a.name().to_string(),
        )
}

/// The name of a topology setting as [`Opts::topology`] states it.
fn topology_name(t: u8) -> String {
    let gray = t >> 4 & 1;
    let forward = (t >> 5 & 1) ^ 1;
    match super::legacy::topo_decode([t & 0xf, gray, forward]) {
        Some(Topology::Auto) => "auto".into(),
        Some(Topology::Hypercube) => "hypercube".into(),
        Some(Topology::Full) => "full".into(),
        Some(Topology::Mesh2D) => "2-D mesh".into(),
        Some(Topology::Ring(o) | Topology::BiRing(o)) => format!(
            "{} ({} order, {})",
            if t & 0xf == 3 {
                "ring"
            } else {
                "bidirectional ring"
            },
            if o.gray { "Gray" } else { "natural" },
            if o.forward { "forward" } else { "backward" }
        ),
        None => format!("unknown ({t:#04x})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_codes_are_distinct_and_named() {
        let mut all: Vec<Algorithm> = [Algorithm::Native, Algorithm::Board]
            .into_iter()
            .chain(hypercomm_algo::registry::all().map(|e| e.algorithm))
            .collect();
        all.sort();
        all.dedup();
        let mut codes: Vec<u16> = all.iter().map(|&a| algorithm_code(a)).collect();
        assert!(codes.iter().all(|&c| c != 0));
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len(), "two algorithms share a code");
        for a in all {
            assert_eq!(algorithm_name(algorithm_code(a)), a.name());
        }
        assert_eq!(algorithm_code(Algorithm::Auto), 0);
        assert_eq!(algorithm_name(0), "auto");
    }
}
