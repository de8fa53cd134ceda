//! Collective operation codes: what a check-mode signature and a trace
//! block record say a call is, and their names in messages. This file
//! imports nothing, so the schedule memo can key on an operation without
//! depending on the collectives.

/// Collective operation codes (check signatures, trace block records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Barrier = 1,
    Bcast = 2,
    Reduce = 3,
    Allreduce = 4,
    Gather = 5,
    Allgather = 6,
    Scatter = 7,
    Alltoall = 8,
    ReduceScatter = 9,
    Scan = 10,
    Exscan = 11,
    Gatherv = 12,
    Allgatherv = 13,
    Scatterv = 14,
    Alltoallv = 15,
    SegScan = 17,
}

/// Names of collective operations by code (for mismatch messages; 16 is
/// the multicast, which has no signature of its own).
pub(crate) fn op_name(code: u8) -> &'static str {
    match code {
        1 => "barrier",
        2 => "bcast",
        3 => "reduce",
        4 => "allreduce",
        5 => "gather",
        6 => "allgather",
        7 => "scatter",
        8 => "alltoall",
        9 => "reduce_scatter",
        10 => "scan",
        11 => "exscan",
        12 => "gatherv",
        13 => "allgatherv",
        14 => "scatterv",
        15 => "alltoallv",
        16 => "multicast",
        17 => "segmented scan",
        _ => "collective",
    }
}
