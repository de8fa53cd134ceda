//! CMMD reductions and scans (seed 004, "Global Operations": reduce, scan,
//! segmented scans by `segment_bit` and `start_bit`), on the manual's own
//! values, with a host that collects and prints every node's result.
//!
//! Four nodes hold 4 9 7 6 (add) and the unsigned 4 1 5 2 (max). The host
//! prints one line per operation with the four nodes' results in rank
//! order (SPEC.md section 10):
//!
//! ```text
//! reduce add to host: 26
//! upward exclusive add: 0 4 13 20
//! downward inclusive add: 26 22 13 6
//! segment_bit upward inclusive add, bits 1 0 1 0: 4 13 7 13
//! segment_bit upward exclusive max, bits 0 0 1 0: 0 4 0 5
//! start_bit upward exclusive max, bits 0 0 1 0: 0 4 4 5
//! ```
//!
//! The first element of an exclusive segment gets the operator's identity,
//! which for unsigned max is 0. Every result reaches the host with a gather
//! to the host (CMMD gather_from_nodes). Run it with
//! `cargo run -p hypercomm --example cmmd_scans`.

use hypercomm::collective::{Direction, Inclusion, Max, Scan, Segmentation, Sum};
use hypercomm::{Comm, Rank};
use std::error::Error;

const ADD_VALUES: [i32; 4] = [4, 9, 7, 6];
const MAX_VALUES: [u32; 4] = [4, 1, 5, 2];
const ADD_BITS: [bool; 4] = [true, false, true, false];
const MAX_BITS: [bool; 4] = [false, false, true, false];

/// The scans, in the order the host prints them (label, operands).
const LINES: [&str; 5] = [
    "upward exclusive add",
    "downward inclusive add",
    "segment_bit upward inclusive add, bits 1 0 1 0",
    "segment_bit upward exclusive max, bits 0 0 1 0",
    "start_bit upward exclusive max, bits 0 0 1 0",
];

fn node(comm: &Comm) -> hypercomm::Result<()> {
    let me = comm.rank();
    let (a, m) = (ADD_VALUES[me], MAX_VALUES[me]);
    comm.reduce(&[a], Sum, Rank::Host)?;
    let up_ex = Scan {
        inclusion: Inclusion::Exclusive,
        ..Scan::default()
    };
    let down_in = Scan {
        direction: Direction::Downward,
        ..Scan::default()
    };
    let seg_in = Scan {
        segmentation: Segmentation::SegmentBit,
        bit: ADD_BITS[me],
        ..Scan::default()
    };
    let seg_ex = Scan {
        inclusion: Inclusion::Exclusive,
        segmentation: Segmentation::SegmentBit,
        bit: MAX_BITS[me],
        ..Scan::default()
    };
    let start_ex = Scan {
        segmentation: Segmentation::StartBit,
        ..seg_ex
    };
    let results = [
        i64::from(comm.scan_with(&[a], Sum, &up_ex)?[0]),
        i64::from(comm.scan_with(&[a], Sum, &down_in)?[0]),
        i64::from(comm.scan_with(&[a], Sum, &seg_in)?[0]),
        i64::from(comm.scan_with(&[m], Max, &seg_ex)?[0]),
        i64::from(comm.scan_with(&[m], Max, &start_ex)?[0]),
    ];
    for r in results {
        comm.gather(&[r], Rank::Host)?;
    }
    Ok(())
}

fn host(comm: &Comm) -> hypercomm::Result<()> {
    let total = comm
        .reduce(&[0i32], Sum, Rank::Host)?
        .expect("host is the root");
    println!("reduce add to host: {}", total[0]);
    for label in LINES {
        let all: Vec<i64> = comm.gather(&[], Rank::Host)?.expect("host is the root");
        let s: Vec<String> = all.iter().map(|v| v.to_string()).collect();
        println!("{label}: {}", s.join(" "));
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    hypercomm::run_with_host(4, host, node)?;
    Ok(())
}
