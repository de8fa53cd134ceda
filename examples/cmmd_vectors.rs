//! Vector (strided) messages, after the CMMD Reference Manual v1.1, section
//! 4.2.1 "Standard Sends and Vector Sends" and "More about Vector Sends"
//! (seed `004_b5ce95015238d09d.txt`, lines 604-680).
//!
//! A vector message gathers `elem_len` bytes every `stride` bytes of the
//! sender's buffer into a packed byte stream; the receiver lays that stream
//! into its own `elem_len`-byte elements every `stride` bytes. The two
//! geometries need not match ([`Comm::send_strided`], [`Comm::recv_strided`];
//! SPEC section 2).
//!
//! Six nodes run, so that the manual's destinations (node 5 for the row,
//! node 3 for the column) exist. Node 0 owns the manual's 4×6 matrix `A` of
//! one-byte elements holding their own addresses 0..23 (lines 623-630) and
//! sends:
//!
//! 1. the top row, as a standard message, to node 5 (`CMMD_send (5,
//!    DEFAULT_MSG_TAG, &A, 6)`, line 633);
//! 2. the first column, as a vector of 4 elements of 1 byte, stride 6, to
//!    node 3 (`CMMD_send_v (3, DEFAULT_MSG_TAG, &A, 1, 6, 4)`, line 636),
//!    which receives it with the same geometry;
//! 3. every row sequentially to node 1, which receives each as a six-element
//!    vector with a stride of 4 and so ends with the transpose (line 639);
//! 4. the two re-chunking cases of "More about Vector Sends" (lines 651-680):
//!    `selem_len = 5, sstride = 8` received as `delem_len = 2, dstride = 3`
//!    (node 2), and `selem_len = 2, sstride = 5` received as
//!    `delem_len = 3, dstride = 4` (node 4). Source elements are numbered
//!    1, 2, 3… as in the manual's figures. The manual's figure of the first
//!    case is garbled by OCR (SPEC section 11); what prints here follows the
//!    stated rule: the packed stream is cut into `delem_len`-byte pieces
//!    placed every `dstride` bytes;
//! 5. a send with stride 0, which repeats one element (line 614): row 1 of
//!    `A` sent four times to node 5, which receives a 4×6 block.
//!
//! Bytes a receive leaves untouched print as `.`; so do the gaps of the
//! re-chunking source buffers. The receivers return what they got and
//! `main` prints it in a fixed order, so the output is deterministic.

use hypercomm::Comm;
use std::error::Error;
use std::fmt::Write as _;

/// Rows and columns of the manual's matrix.
const ROWS: usize = 4;
const COLS: usize = 6;
/// Fill value for bytes that nothing wrote; printed as `.`.
const EMPTY: u8 = 0xFF;
/// Nodes in the job: the manual sends to nodes 3 and 5.
const NODES: usize = 6;

// One tag per message kind.
const ROW: u32 = 1;
const COLUMN: u32 = 2;
const TRANSPOSE: u32 = 3;
const RECHUNK_1: u32 = 4;
const RECHUNK_2: u32 = 5;
const REPEAT: u32 = 6;

/// One re-chunking case of "More about Vector Sends".
struct Rechunk {
    selem_len: usize,
    sstride: usize,
    selem_cnt: usize,
    delem_len: usize,
    dstride: usize,
    delem_cnt: usize,
}

impl Rechunk {
    /// The sender's buffer: element `e` (numbered from 1) fills `selem_len`
    /// bytes at `e * sstride`; the gaps are empty.
    fn source(&self) -> Vec<u8> {
        let mut buf = vec![EMPTY; self.selem_cnt * self.sstride];
        for e in 0..self.selem_cnt {
            let at = e * self.sstride;
            buf[at..at + self.selem_len].fill(e as u8 + 1);
        }
        buf
    }

    /// Length of the receiver's buffer: `delem_cnt` full strides.
    fn dest_len(&self) -> usize {
        self.delem_cnt * self.dstride
    }
}

/// Case 1 (`selem_len > delem_len`): 4 elements of 5 bytes = 20 bytes,
/// received as 10 elements of 2 bytes.
const CASE_1: Rechunk = Rechunk {
    selem_len: 5,
    sstride: 8,
    selem_cnt: 4,
    delem_len: 2,
    dstride: 3,
    delem_cnt: 10,
};

/// Case 2 (`selem_len < delem_len`): 6 elements of 2 bytes = 12 bytes,
/// received as 4 elements of 3 bytes.
const CASE_2: Rechunk = Rechunk {
    selem_len: 2,
    sstride: 5,
    selem_cnt: 6,
    delem_len: 3,
    dstride: 4,
    delem_cnt: 4,
};

/// The parts of the output, in printing order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
enum Part {
    Matrix,
    Row,
    Column,
    Transpose,
    Rechunk1,
    Rechunk2,
    Repeat,
}

/// One byte as a table cell.
fn cell(b: u8) -> String {
    if b == EMPTY {
        ".".to_string()
    } else {
        b.to_string()
    }
}

/// Bytes as a table of `cols` columns, right-aligned.
fn table(bytes: &[u8], cols: usize) -> String {
    let mut s = String::new();
    for row in bytes.chunks(cols) {
        for &b in row {
            write!(s, "{:>3}", cell(b)).expect("writing to a String");
        }
        s.push('\n');
    }
    s
}

/// Bytes as one labelled line, like the manual's buffer figures.
fn strip(label: &str, bytes: &[u8]) -> String {
    let cells: Vec<String> = bytes.iter().map(|&b| cell(b)).collect();
    format!("{label:<12}{}\n", cells.join(" "))
}

/// The manual's matrix: each byte holds its own address.
fn matrix() -> [u8; ROWS * COLS] {
    std::array::from_fn(|i| i as u8)
}

/// Node 0: send everything, and describe what was sent.
fn sender(comm: &Comm) -> hypercomm::Result<Vec<(Part, String)>> {
    let a = matrix();

    // 1. Top row, standard send (CMMD_send (5, DEFAULT_MSG_TAG, &A, 6)).
    comm.send(&a[..COLS], 5, ROW)?;
    // 2. First column: 4 elements of 1 byte, 6 bytes apart.
    comm.send_strided(&a, 1, COLS, ROWS, 3, COLUMN)?;
    // 3. Every row sequentially; the receiver makes it a column.
    for row in a.chunks(COLS) {
        comm.send(row, 1, TRANSPOSE)?;
    }
    // 4. Re-chunking: the sender's geometry differs from the receiver's.
    let (src1, src2) = (CASE_1.source(), CASE_2.source());
    comm.send_strided(
        &src1,
        CASE_1.selem_len,
        CASE_1.sstride,
        CASE_1.selem_cnt,
        2,
        RECHUNK_1,
    )?;
    comm.send_strided(
        &src2,
        CASE_2.selem_len,
        CASE_2.sstride,
        CASE_2.selem_cnt,
        4,
        RECHUNK_2,
    )?;
    // 5. Stride 0: row 1 of A, sent ROWS times.
    comm.send_strided(&a[COLS..], COLS, 0, ROWS, 5, REPEAT)?;

    Ok(vec![
        (
            Part::Matrix,
            format!(
                "A: {ROWS}x{COLS} matrix of bytes on node 0\n{}",
                table(&a, COLS)
            ),
        ),
        (Part::Rechunk1, strip("source", &src1)),
        (Part::Rechunk2, strip("source", &src2)),
    ])
}

/// Receive one re-chunking case from node 0 into a fresh buffer.
fn receive_rechunk(comm: &Comm, case: &Rechunk, tag: u32) -> hypercomm::Result<String> {
    let mut dst = vec![EMPTY; case.dest_len()];
    comm.recv_strided(
        &mut dst,
        case.delem_len,
        case.dstride,
        case.delem_cnt,
        0,
        tag,
    )?;
    Ok(strip("destination", &dst))
}

/// The receivers: each gets its messages from node 0.
fn receiver(comm: &Comm) -> hypercomm::Result<Vec<(Part, String)>> {
    let mut out = Vec::new();
    match comm.rank() {
        1 => {
            // Row i lands as 6 one-byte elements every 4 bytes from byte i:
            // T[j][i] = A[i][j] for the 6×4 matrix T.
            let mut t = [EMPTY; ROWS * COLS];
            for i in 0..ROWS {
                comm.recv_strided(&mut t[i..], 1, ROWS, COLS, 0, TRANSPOSE)?;
            }
            out.push((
                Part::Transpose,
                format!(
                    "transpose: node 0 sends each row sequentially, node 1 receives row i with \
                     recv_strided(&mut T[i..], elem_len 1, stride {ROWS}, count {COLS})\n{}",
                    table(&t, ROWS)
                ),
            ));
        }
        2 => out.push((Part::Rechunk1, receive_rechunk(comm, &CASE_1, RECHUNK_1)?)),
        3 => {
            // Receive with the sender's geometry: the column stays a column.
            let mut m = [EMPTY; ROWS * COLS];
            comm.recv_strided(&mut m, 1, COLS, ROWS, 0, COLUMN)?;
            out.push((
                Part::Column,
                format!(
                    "column send: node 0 send_strided(&A, elem_len 1, stride {COLS}, count {ROWS}) \
                     -> node 3 recv_strided(elem_len 1, stride {COLS}, count {ROWS})\n{}",
                    table(&m, COLS)
                ),
            ));
        }
        4 => out.push((Part::Rechunk2, receive_rechunk(comm, &CASE_2, RECHUNK_2)?)),
        5 => {
            let (row, _) = comm.recv_vec::<u8>(0, ROW)?;
            out.push((
                Part::Row,
                format!(
                    "row send: node 0 send(&A[..{COLS}]) -> node 5 recv\n{}",
                    table(&row, COLS)
                ),
            ));
            let mut m = [EMPTY; ROWS * COLS];
            comm.recv_into(&mut m, 0, REPEAT)?;
            out.push((
                Part::Repeat,
                format!(
                    "stride 0: node 0 send_strided(&A[1][0], elem_len {COLS}, stride 0, count {ROWS}) \
                     -> node 5 recv\n{}",
                    table(&m, COLS)
                ),
            ));
        }
        _ => {}
    }
    Ok(out)
}

fn node(comm: &Comm) -> hypercomm::Result<Vec<(Part, String)>> {
    if comm.rank() == 0 {
        sender(comm)
    } else {
        receiver(comm)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut parts: Vec<(Part, String)> =
        hypercomm::run(NODES, node)?.into_iter().flatten().collect();
    // Stable sort: within a part, node 0's lines (the source) come first.
    parts.sort_by_key(|(part, _)| *part);

    let mut last = None;
    for (part, text) in parts {
        if last != Some(part) {
            if last.is_some() {
                println!();
            }
            match part {
                Part::Rechunk1 => println!(
                    "re-chunk case 1: selem_len {}, sstride {} -> delem_len {}, dstride {} \
                     (node 0 -> node 2)",
                    CASE_1.selem_len, CASE_1.sstride, CASE_1.delem_len, CASE_1.dstride
                ),
                Part::Rechunk2 => println!(
                    "re-chunk case 2: selem_len {}, sstride {} -> delem_len {}, dstride {} \
                     (node 0 -> node 4)",
                    CASE_2.selem_len, CASE_2.sstride, CASE_2.delem_len, CASE_2.dstride
                ),
                _ => {}
            }
            last = Some(part);
        }
        print!("{text}");
    }
    Ok(())
}
