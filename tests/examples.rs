//! Runs the real example programs (`examples/hello.rs`,
//! `examples/cmmd_shifts.rs`, `examples/cmmd_vectors.rs`) as processes and
//! checks what they print against values computed here, independently of
//! the library and of the examples' own code:
//!
//! * `hello`: the token after one lap is `n(n-1)/2`, and each node's
//!   greeting carries the running sum of the ranks before it;
//! * `cmmd_shifts`: the blocks after the circular and end-off shifts are a
//!   serial rotation / shift of the concatenated global array;
//! * `cmmd_vectors`: the row, the column, the transpose (by index
//!   arithmetic), the two re-chunking cases (from a small reference
//!   implementation of the CMMD rule: gather `selem_len` bytes every
//!   `sstride`, lay the packed stream into `delem_len`-byte elements every
//!   `dstride`) and the stride-0 repetition.
//!
//! The binaries live next to this test's executable
//! (`target/<profile>/examples/<name>`). `cargo test --test examples` does
//! not build examples, so when run by cargo the test first runs
//! `cargo build --examples` for the same target directory and profile
//! (a no-op when they are current); otherwise the binaries must already be
//! there. Every run is killed after 60 s.

mod common;

use common::procs::{run_example, stdout_of};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------
// hello
// ---------------------------------------------------------------------------

/// The lines `hello n` must print, computed serially.
fn expected_hello(n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut token = 0u64; // node 0 starts the token at 0
    for r in 0..n {
        let before = token;
        token += r as u64;
        lines.push(format!(
            "hello from node {r} of {n}: token {before} -> {token}"
        ));
    }
    let lap = n * (n - 1) / 2;
    assert_eq!(token, lap as u64, "the test's own arithmetic");
    lines.push(format!("token after one lap: {lap}"));
    lines
}

#[test]
fn hello_token_sum_and_greetings_in_rank_order() {
    for n in [1usize, 2, 4, 7] {
        let out = stdout_of("hello", &[&n.to_string()]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines, expected_hello(n), "hello {n}: whole output");
    }
}

#[test]
fn hello_defaults_to_four_nodes() {
    let out = stdout_of("hello", &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, expected_hello(4));
    assert_eq!(lines.last(), Some(&"token after one lap: 6"));
}

#[test]
fn hello_rejects_bad_node_counts() {
    for arg in ["0", "four", "-3"] {
        let run = run_example("hello", &[arg]);
        assert!(
            !run.status.success(),
            "`hello {arg}` should fail, printed:\n{}",
            run.stdout
        );
        assert!(
            run.stderr.contains("number of nodes"),
            "`hello {arg}` should explain the error, stderr:\n{}",
            run.stderr
        );
    }
}

// ---------------------------------------------------------------------------
// cmmd_shifts
// ---------------------------------------------------------------------------

/// Elements per node in `cmmd_shifts`.
const BLOCK: usize = 3;

/// Parse `[1, -2, 3]`.
fn parse_list(s: &str) -> Vec<i64> {
    let inner = s
        .trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or_else(|| panic!("not a list: {s:?}"));
    inner
        .split(',')
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            t.trim()
                .parse()
                .unwrap_or_else(|e| panic!("bad number {t:?}: {e}"))
        })
        .collect()
}

/// The per-node `(before, after)` blocks of the section whose header starts
/// with `header`; checks the ranks are listed in order.
fn shift_section(out: &str, header: &str, n: usize) -> Vec<(Vec<i64>, Vec<i64>)> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with(header));
    let head = lines
        .next()
        .unwrap_or_else(|| panic!("no section {header:?} in:\n{out}"));
    assert!(head.contains(&format!("on {n} nodes")), "header: {head}");
    let rows: Vec<_> = lines.take_while(|l| !l.trim().is_empty()).collect();
    assert_eq!(rows.len(), n, "one line per node in {header:?}:\n{out}");
    rows.iter()
        .enumerate()
        .map(|(r, line)| {
            let rest = line
                .strip_prefix(&format!("node {r}: before "))
                .unwrap_or_else(|| panic!("expected node {r} in line {line:?}"));
            let (before, after) = rest
                .split_once(" after ")
                .unwrap_or_else(|| panic!("no 'after' in line {line:?}"));
            (parse_list(before), parse_list(after))
        })
        .collect()
}

#[test]
fn shifts_match_a_serial_rotation() {
    for n in [1usize, 2, 4, 5] {
        let args: Vec<String> = if n == 4 {
            vec![] // the manual's 4 nodes are the default
        } else {
            vec![n.to_string()]
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = stdout_of("cmmd_shifts", &args);

        // The distributed array as the example documents it: node r holds
        // 10r+1, 10r+2, 10r+3.
        let global: Vec<i64> = (0..n as i64)
            .flat_map(|r| (1..=BLOCK as i64).map(move |k| 10 * r + k))
            .collect();
        let blocks =
            |v: &[i64]| -> Vec<Vec<i64>> { v.chunks(BLOCK).map(<[i64]>::to_vec).collect() };

        // Circular: every block moves one node to the right, the last wraps.
        let mut rotated = global.clone();
        rotated.rotate_right(BLOCK);
        // End-off: the boundary value -1 enters at node 0, the last block
        // falls off the end.
        let mut shifted = vec![-1; BLOCK];
        shifted.extend_from_slice(&global[..global.len() - BLOCK]);

        for (header, expected) in [
            ("circular shift", blocks(&rotated)),
            ("end-off shift", blocks(&shifted)),
        ] {
            let got = shift_section(&out, header, n);
            for (r, (before, after)) in got.iter().enumerate() {
                assert_eq!(
                    before,
                    &blocks(&global)[r],
                    "n={n} {header}: node {r} before"
                );
                assert_eq!(after, &expected[r], "n={n} {header}: node {r} after");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// cmmd_vectors
// ---------------------------------------------------------------------------

/// A printed byte: a number, or `.` for a byte nothing wrote.
type Cell = Option<u8>;

fn parse_cells<'a>(tokens: impl Iterator<Item = &'a str>) -> Vec<Cell> {
    tokens
        .map(|t| match t {
            "." => None,
            t => Some(t.parse().unwrap_or_else(|e| panic!("bad cell {t:?}: {e}"))),
        })
        .collect()
}

/// The table printed under the line starting with `header`.
fn table(out: &str, header: &str) -> Vec<Vec<Cell>> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "no section {header:?} in:\n{out}");
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| parse_cells(l.split_whitespace()))
        .collect()
}

/// The strip labelled `label` in the section whose header starts with
/// `header` (e.g. `source` in `re-chunk case 1`).
fn strip(out: &str, header: &str, label: &str) -> Vec<Cell> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "no section {header:?} in:\n{out}");
    let line = lines
        .take_while(|l| !l.trim().is_empty())
        .find(|l| l.split_whitespace().next() == Some(label))
        .unwrap_or_else(|| panic!("no {label:?} line in section {header:?}:\n{out}"));
    parse_cells(line.split_whitespace().skip(1))
}

fn known(rows: Vec<Vec<u8>>) -> Vec<Vec<Cell>> {
    rows.into_iter()
        .map(|r| r.into_iter().map(Some).collect())
        .collect()
}

/// One re-chunking geometry: the sender's and the receiver's.
struct Geometry {
    selem_len: usize,
    sstride: usize,
    selem_cnt: usize,
    delem_len: usize,
    dstride: usize,
    delem_cnt: usize,
}

/// The sender's buffer as in the manual's figures: element e (from 1) fills
/// `selem_len` bytes of each stride, the rest is empty.
fn rechunk_source(g: &Geometry) -> Vec<Cell> {
    (0..g.selem_cnt * g.sstride)
        .map(|i| (i % g.sstride < g.selem_len).then_some((i / g.sstride + 1) as u8))
        .collect()
}

/// The CMMD rule, byte by byte: the k-th byte of the packed stream (byte
/// `k % selem_len` of source element `k / selem_len`) lands in byte
/// `k % delem_len` of destination element `k / delem_len`.
fn rechunk_reference(g: &Geometry, source: &[Cell]) -> Vec<Cell> {
    let total = (g.selem_cnt * g.selem_len).min(g.delem_cnt * g.delem_len);
    let mut dest = vec![None; g.delem_cnt * g.dstride];
    for k in 0..total {
        let from = (k / g.selem_len) * g.sstride + k % g.selem_len;
        let to = (k / g.delem_len) * g.dstride + k % g.delem_len;
        dest[to] = source[from];
    }
    dest
}

/// The example's two cases (manual lines 651-680; the counts are the
/// example's, chosen so that both sides cover the same bytes).
const CASE_1: Geometry = Geometry {
    selem_len: 5,
    sstride: 8,
    selem_cnt: 4,
    delem_len: 2,
    dstride: 3,
    delem_cnt: 10,
};
const CASE_2: Geometry = Geometry {
    selem_len: 2,
    sstride: 5,
    selem_cnt: 6,
    delem_len: 3,
    dstride: 4,
    delem_cnt: 4,
};

/// Run `cmmd_vectors` once for all the vector tests.
fn vectors_output() -> &'static str {
    static OUT: OnceLock<String> = OnceLock::new();
    OUT.get_or_init(|| stdout_of("cmmd_vectors", &[]))
}

/// The manual's 4×6 matrix: each byte holds its address, A[i][j] = 6i + j.
fn matrix_a() -> Vec<Vec<u8>> {
    (0..4u8)
        .map(|i| (0..6u8).map(|j| 6 * i + j).collect())
        .collect()
}

#[test]
fn vectors_matrix_row_and_column() {
    let out = vectors_output();
    assert_eq!(table(out, "A: 4x6"), known(matrix_a()), "matrix A");

    // CMMD_send (5, DEFAULT_MSG_TAG, &A, 6): the top row.
    assert_eq!(
        table(out, "row send"),
        known(vec![matrix_a()[0].clone()]),
        "row"
    );

    // CMMD_send_v (3, DEFAULT_MSG_TAG, &A, 1, 6, 4) received with the same
    // geometry: column 0 in place, nothing else written.
    let expected: Vec<Vec<Cell>> = (0..4u8)
        .map(|i| {
            (0..6)
                .map(|j| (j == 0).then_some(6 * i))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(table(out, "column send"), expected, "column");
}

#[test]
fn vectors_transpose_through_mismatched_geometry() {
    // T is 6×4 with T[j][i] = A[i][j] = 6i + j.
    let expected: Vec<Vec<u8>> = (0..6u8)
        .map(|j| (0..4u8).map(|i| 6 * i + j).collect())
        .collect();
    assert_eq!(
        table(vectors_output(), "transpose"),
        known(expected),
        "transpose"
    );
}

#[test]
fn vectors_rechunking_follows_the_cmmd_rule() {
    let out = vectors_output();
    for (header, g) in [("re-chunk case 1", &CASE_1), ("re-chunk case 2", &CASE_2)] {
        let head = out
            .lines()
            .find(|l| l.starts_with(header))
            .unwrap_or_else(|| panic!("no section {header:?}"));
        let geometry = format!(
            "selem_len {}, sstride {} -> delem_len {}, dstride {}",
            g.selem_len, g.sstride, g.delem_len, g.dstride
        );
        assert!(
            head.contains(&geometry),
            "{header}: header {head:?} lacks {geometry:?}"
        );
        let source = rechunk_source(g);
        assert_eq!(strip(out, header, "source"), source, "{header}: source");
        assert_eq!(
            strip(out, header, "destination"),
            rechunk_reference(g, &source),
            "{header}: destination"
        );
    }

    // Against the manual's own figures where they are legible. Case 2
    // (line 680): 1 1 2 _ 2 3 3 _ 4 4 ...
    let d2 = strip(out, "re-chunk case 2", "destination");
    let figure: Vec<Cell> = vec![
        Some(1),
        Some(1),
        Some(2),
        None,
        Some(2),
        Some(3),
        Some(3),
        None,
        Some(4),
        Some(4),
    ];
    assert_eq!(d2[..figure.len()], figure[..], "manual figure, case 2");
    // Case 1's figure (line 665) is garbled after its first three cells
    // (SPEC section 11): 1 1 _ ...; the rule gives 1 1 _ 1 1 _ 1 2 _ 2 2 _.
    let d1 = strip(out, "re-chunk case 1", "destination");
    let rule: Vec<Cell> = [1, 1, 0, 1, 1, 0, 1, 2, 0, 2, 2, 0]
        .iter()
        .map(|&b| (b != 0).then_some(b))
        .collect();
    assert_eq!(d1[..rule.len()], rule[..], "case 1, first four elements");
}

#[test]
fn vectors_stride_zero_repeats_one_element() {
    // Row 1 of A (6..=11), elem_len 6, stride 0, count 4: four copies.
    let expected = vec![matrix_a()[1].clone(); 4];
    assert_eq!(
        table(vectors_output(), "stride 0"),
        known(expected),
        "stride 0"
    );
}

// ---------------------------------------------------------------------------
// picl_ring (PICL Figures 1 and 2)
// ---------------------------------------------------------------------------

#[test]
fn picl_ring_sums_consecutive_pairs_around_the_ring() {
    for (p, n) in [(1usize, 8usize), (4, 1024), (5, 35)] {
        let out = stdout_of("picl_ring", &[&p.to_string(), &n.to_string()]);
        let mut nodes: Vec<usize> = out
            .lines()
            .filter_map(|l| l.strip_prefix("node "))
            .map(|l| {
                let (r, rest) = l.split_once(' ').expect("node <r> took ...");
                assert!(rest.starts_with("took ") && rest.ends_with(" seconds to finish"));
                r.parse().unwrap()
            })
            .collect();
        nodes.sort_unstable();
        assert_eq!(
            nodes,
            (0..p).collect::<Vec<_>>(),
            "one timing line per node:\n{out}"
        );
        assert!(out.lines().any(|l| l.starts_with("host took ")), "{out}");
        assert!(
            out.lines()
                .any(|l| l == format!("results: {n} sums, 0 wrong")),
            "{out}"
        );
    }
}

// ---------------------------------------------------------------------------
// examples/README.md's launcher commands
// ---------------------------------------------------------------------------

/// The launcher commands of examples/README.md's `sh` block.
fn readme_commands() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/README.md");
    let text = std::fs::read_to_string(path).expect("examples/README.md");
    let block = text
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("examples/README.md has an sh block of launcher commands")
        .0;
    block.lines().map(str::to_owned).collect()
}

/// Every example (but `spawn`, which starts its own processes) has a
/// launcher command in examples/README.md, and each command runs as
/// written (with this profile's binaries) and succeeds: the node counts
/// and hosts it gives are the ones the programs need.
#[test]
fn the_readme_launcher_commands_run_every_example() {
    use common::procs::{example_bin, hypercomm_bin, run_limited};
    let commands = readme_commands();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let Some(name) = p.file_name().unwrap().to_str().unwrap().strip_suffix(".rs") else {
            continue;
        };
        let bin = format!("target/release/examples/{name}");
        assert!(
            name == "spawn" || commands.iter().any(|c| c.ends_with(&bin)),
            "examples/README.md has no launcher command for {name}"
        );
    }
    for line in &commands {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "target/release/hypercomm", "{line}");
        let mut cmd = std::process::Command::new(hypercomm_bin());
        for w in &words[1..] {
            match w.strip_prefix("target/release/examples/") {
                Some(name) => cmd.arg(example_bin(name)),
                None => cmd.arg(w),
            };
        }
        cmd.env("HYPERCOMM_TIMEOUT", "30")
            .env_remove("HYPERCOMM_RANK");
        let out = run_limited(cmd, std::time::Duration::from_secs(120));
        assert!(out.status.success(), "{line}:\n{}", out.both());
    }
}
