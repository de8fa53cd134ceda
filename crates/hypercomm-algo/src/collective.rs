//! The collective operations, one enum for all of them.
//!
//! Every collective call, check-mode signature, trace record and registry
//! entry names its operation with a [`Collective`]. The numeric codes
//! ([`Collective::code`]) are part of the check-mode signatures exchanged
//! between ranks and of PICL trace records, so they never change; a new
//! collective takes the next free code.
//!
//! Several collectives run the algorithms of another one (gatherv those of
//! gather, exscan those of scan, …): [`Collective::family`] says which, and
//! the registry ([`crate::registry`]) keeps its entries under the family.

use std::fmt;

/// A collective operation. For algorithm selection a message size is
/// counted in bytes as each variant's doc says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Collective {
    /// Barrier (no data).
    Barrier = 1,
    /// Broadcast; bytes are the whole message.
    Bcast = 2,
    /// Reduce to a root; bytes are the whole vector.
    Reduce = 3,
    /// Allreduce; bytes are the whole vector.
    Allreduce = 4,
    /// Gather(v); bytes are one rank's contribution (the average for gatherv).
    Gather = 5,
    /// Allgather(v); bytes are one rank's contribution (the average for
    /// allgatherv).
    Allgather = 6,
    /// Scatter(v); bytes are one rank's block (the average for scatterv).
    Scatter = 7,
    /// All-to-all; bytes are one block.
    Alltoall = 8,
    /// Reduce-scatter(v); bytes are the whole vector.
    ReduceScatter = 9,
    /// Scans (inclusive; the family of every scan); bytes are the vector.
    Scan = 10,
    /// Exclusive scan (runs the scan algorithms); bytes are the vector.
    Exscan = 11,
    /// Variable-count gather (runs the gather algorithms); bytes are the
    /// average of one rank's contribution.
    Gatherv = 12,
    /// Variable-count allgather (runs the allgather algorithms); bytes are
    /// the average of one rank's contribution.
    Allgatherv = 13,
    /// Variable-count scatter (runs the scatter algorithms); bytes are the
    /// average of one rank's block.
    Scatterv = 14,
    /// Variable-count all-to-all (pairwise only: per-rank counts differ, so
    /// the choice must not depend on them).
    Alltoallv = 15,
    /// Sparse multicast to a list of nodes (CMMD/iPSC style; its own
    /// algorithm, [`crate::multicast_spgsnw`], outside the registry).
    Multicast = 16,
    /// Segmented scan (CMMD `segment_bit` / `start_bit`; runs the scan
    /// algorithms with a lifted operator); bytes are the vector.
    SegmentedScan = 17,
}

impl Collective {
    /// Every collective, in code order.
    pub const ALL: [Collective; 17] = [
        Collective::Barrier,
        Collective::Bcast,
        Collective::Reduce,
        Collective::Allreduce,
        Collective::Gather,
        Collective::Allgather,
        Collective::Scatter,
        Collective::Alltoall,
        Collective::ReduceScatter,
        Collective::Scan,
        Collective::Exscan,
        Collective::Gatherv,
        Collective::Allgatherv,
        Collective::Scatterv,
        Collective::Alltoallv,
        Collective::Multicast,
        Collective::SegmentedScan,
    ];

    /// The operation code of check-mode signatures and trace records (1..=17).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The collective with operation code `code`, if there is one.
    pub fn from_code(code: u8) -> Option<Collective> {
        Collective::ALL.iter().copied().find(|c| c.code() == code)
    }

    /// The name used in messages and traces ("barrier", "bcast", …,
    /// "reduce_scatter", …, "segmented scan").
    pub const fn name(self) -> &'static str {
        match self {
            Collective::Barrier => "barrier",
            Collective::Bcast => "bcast",
            Collective::Reduce => "reduce",
            Collective::Allreduce => "allreduce",
            Collective::Gather => "gather",
            Collective::Allgather => "allgather",
            Collective::Scatter => "scatter",
            Collective::Alltoall => "alltoall",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Scan => "scan",
            Collective::Exscan => "exscan",
            Collective::Gatherv => "gatherv",
            Collective::Allgatherv => "allgatherv",
            Collective::Scatterv => "scatterv",
            Collective::Alltoallv => "alltoallv",
            Collective::Multicast => "multicast",
            Collective::SegmentedScan => "segmented scan",
        }
    }

    /// The collective whose algorithms this one runs: gatherv → gather,
    /// allgatherv → allgather, scatterv → scatter, exscan and segmented
    /// scan → scan; every other collective (all-to-allv and multicast
    /// included) is its own family.
    pub const fn family(self) -> Collective {
        match self {
            Collective::Gatherv => Collective::Gather,
            Collective::Allgatherv => Collective::Allgather,
            Collective::Scatterv => Collective::Scatter,
            Collective::Exscan | Collective::SegmentedScan => Collective::Scan,
            c => c,
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_fixed_and_round_trip() {
        for (i, c) in Collective::ALL.iter().enumerate() {
            assert_eq!(usize::from(c.code()), i + 1);
            assert_eq!(Collective::from_code(c.code()), Some(*c));
        }
        assert_eq!(Collective::from_code(0), None);
        assert_eq!(Collective::from_code(18), None);
        assert_eq!(Collective::ReduceScatter.code(), 9);
        assert_eq!(Collective::SegmentedScan.code(), 17);
        assert_eq!(Collective::SegmentedScan.to_string(), "segmented scan");
    }

    #[test]
    fn families_are_fixed_points() {
        for c in Collective::ALL {
            assert_eq!(c.family().family(), c.family());
        }
        assert_eq!(Collective::Exscan.family(), Collective::Scan);
        assert_eq!(Collective::Alltoallv.family(), Collective::Alltoallv);
        assert_eq!(Collective::Multicast.family(), Collective::Multicast);
    }
}
