//! Circular and end-off shifts with `send_recv`, after the CMMD Reference
//! Manual v1.1, section 4.3 "Simultaneous Sends and Receives" (seed
//! `004_b5ce95015238d09d.txt`, lines 774-784 and Figure 3).
//!
//! Every node holds a block of an array distributed over the nodes (node `r`
//! holds `[10r+1, 10r+2, 10r+3]`; the manual's Figure 3 lost its values in
//! the OCR, so the values here are ours), and the blocks move one node to
//! the right:
//!
//! * **Circular shift** (manual note 2, Figure 3 "A circular shift on 4
//!   nodes"): every node sends in one direction and receives from the other
//!   with one [`Comm::send_recv`] (CMMD `send_and_receive`): send to
//!   `rank+1`, receive from `rank-1`, both modulo `n`. Node 0 ends with the
//!   last node's block.
//! * **End-off shift** (manual note 3): sends and receives mixed with
//!   `send_and_receive`. Node 0 only sends (`CMMD_send`) and takes the
//!   boundary value; the middle nodes `send_and_receive`; the last node only
//!   receives (`CMMD_receive`), so its old block falls off the end.
//!
//! The manual uses 4 nodes, the default here; the first command-line argument
//! chooses another `n`. The nodes return their blocks and `main` prints them
//! in rank order, so the output is deterministic:
//!
//! ```text
//! circular shift on 4 nodes: send to rank+1, receive from rank-1
//! node 0: before [1, 2, 3] after [31, 32, 33]
//! ...
//! end-off shift on 4 nodes: boundary value -1 enters at node 0
//! node 0: before [1, 2, 3] after [-1, -1, -1]
//! node 1: before [11, 12, 13] after [1, 2, 3]
//! ...
//! ```

use hypercomm::Comm;
use std::error::Error;

/// Elements per node.
const BLOCK: usize = 3;
/// The value that enters at node 0 in the end-off shift.
const BOUNDARY: i32 = -1;
/// Tag of the shifted blocks.
const SHIFT: u32 = 0;

/// Node `r`'s block before any shift.
fn initial_block(r: usize) -> [i32; BLOCK] {
    let base = 10 * r as i32;
    [base + 1, base + 2, base + 3]
}

/// Circular shift by one node to the right: one `send_recv` on every node.
fn circular_shift(comm: &Comm, block: &[i32; BLOCK]) -> hypercomm::Result<[i32; BLOCK]> {
    let (me, n) = (comm.rank(), comm.size());
    let mut out = [0; BLOCK];
    comm.send_recv(
        block,
        (me + 1) % n,
        SHIFT,
        &mut out,
        (me + n - 1) % n,
        SHIFT,
    )?;
    Ok(out)
}

/// End-off shift by one node to the right, as the manual spells it out for
/// four nodes: the first node sends only, the last receives only.
fn end_off_shift(comm: &Comm, block: &[i32; BLOCK]) -> hypercomm::Result<[i32; BLOCK]> {
    let (me, n) = (comm.rank(), comm.size());
    let first = me == 0;
    let last = me == n - 1;
    let mut out = [BOUNDARY; BLOCK];
    match (first, last) {
        // A single node: nothing to send to, nothing to receive from.
        (true, true) => {}
        // "Node 0: CMMD_send: uses boundary value, sends to node 1".
        (true, false) => comm.send(block, me + 1, SHIFT)?,
        // "Node 3: CMMD_receive: receives from 2".
        (false, true) => {
            comm.recv_into(&mut out, me - 1, SHIFT)?;
        }
        // "Node 1: CMMD_send_and_receive: receives from 0, sends to 2".
        (false, false) => {
            comm.send_recv(block, me + 1, SHIFT, &mut out, me - 1, SHIFT)?;
        }
    }
    Ok(out)
}

/// A node's blocks: initial, after the circular shift, after the end-off one.
type Blocks = ([i32; BLOCK], [i32; BLOCK], [i32; BLOCK]);

fn node(comm: &Comm) -> hypercomm::Result<Blocks> {
    let block = initial_block(comm.rank());
    let circular = circular_shift(comm, &block)?;
    let end_off = end_off_shift(comm, &block)?;
    Ok((block, circular, end_off))
}

fn main() -> Result<(), Box<dyn Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|e| {
            format!("the number of nodes must be a positive integer, not {arg:?}: {e}")
        })?,
        None => 4,
    };
    let results = hypercomm::run(n, node)?;

    println!("circular shift on {n} nodes: send to rank+1, receive from rank-1");
    for (r, (before, after, _)) in results.iter().enumerate() {
        println!("node {r}: before {before:?} after {after:?}");
    }
    println!();
    println!("end-off shift on {n} nodes: boundary value {BOUNDARY} enters at node 0");
    for (r, (before, _, after)) in results.iter().enumerate() {
        println!("node {r}: before {before:?} after {after:?}");
    }
    Ok(())
}
