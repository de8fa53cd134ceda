//! The manuals' example programs in C and Fortran 77 (`examples/c/`,
//! `examples/fortran/`), compiled here with `cc -Wall -Werror` and
//! `gfortran -Wall` against the headers and the static library, run under
//! the `hypercomm` launcher over shared memory and TCP, their output
//! checked against the manuals' values; a traced PICL program whose trace
//! file `hypercomm trace report` opens.
//!
//! Expected values come from the manuals (the CMMD scans: 4 9 7 6 →
//! upward exclusive add 0 4 13 20 …) or are computed here from the
//! problem's definition (the shifts, the normalized vector).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod common;
use common::{have, profile_dir};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Build the static library and the launcher for this profile (once); the
/// directory the programs are built in.
fn built() -> &'static PathBuf {
    static B: OnceLock<PathBuf> = OnceLock::new();
    B.get_or_init(|| {
        common::cargo_build(&["hypercomm-c", "hypercomm-cli"]);
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hypercomm-c-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fn lib() -> Vec<String> {
    vec![
        profile_dir()
            .join("libhypercomm_c.a")
            .to_string_lossy()
            .into_owned(),
        "-lpthread".into(),
        "-ldl".into(),
        "-lm".into(),
    ]
}

fn check(what: &str, out: Output) -> String {
    let so = String::from_utf8_lossy(&out.stdout).into_owned();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{so}\n{se}",
        out.status
    );
    so
}

/// Compile a C source of `examples/c` (or a path) into the build folder.
fn cc(src: &Path, name: &str, knr: bool) -> PathBuf {
    cc_observed(src, name, knr, None)
}

/// `cc` with, when `observer` is given, one of the `tests/programs/observe_*`
/// files linked in with `-Wl,--wrap=` of the routines it names (`(file,
/// [routine …])`): the manual's program unchanged, the test seeing what it
/// computes.
fn cc_observed(src: &Path, name: &str, knr: bool, observer: Option<(&str, &[&str])>) -> PathBuf {
    let exe = built().join(name);
    let mut c = Command::new("cc");
    c.args(["-Wall", "-Werror"]);
    if knr {
        // The PICL figures' `main()` is K&R C (implicit int, no return).
        c.args(["-Wno-implicit-int", "-Wno-return-type"]);
    }
    c.arg("-I").arg(root().join("crates/hypercomm-c/include"));
    c.arg(src);
    if let Some((file, wrapped)) = observer {
        c.arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/programs")
                .join(file),
        );
        c.arg(format!("-Wl,--wrap={}", wrapped.join(",--wrap=")));
    }
    c.args(lib()).arg("-o").arg(&exe);
    check(&format!("cc {}", src.display()), c.output().expect("cc"));
    exe
}

/// `gfortran -Wall` against the static library, without a warning.
fn gfortran(src: &Path, name: &str) -> PathBuf {
    let exe = built().join(name);
    let mut c = Command::new("gfortran");
    c.arg("-Wall")
        .arg("-I")
        .arg(root().join("crates/hypercomm-c/include"))
        .arg(src)
        .args(lib())
        .arg("-o")
        .arg(&exe);
    let out = c.output().expect("gfortran");
    let warnings = String::from_utf8_lossy(&out.stderr).into_owned();
    check(&format!("gfortran {}", src.display()), out);
    assert!(!warnings.contains("Warning"), "{warnings}");
    exe
}

fn example_c(name: &str, knr: bool) -> PathBuf {
    cc(&root().join(format!("examples/c/{name}.c")), name, knr)
}

fn example_c_observed(name: &str, observer: &str, wrapped: &[&str]) -> PathBuf {
    cc_observed(
        &root().join(format!("examples/c/{name}.c")),
        name,
        true,
        Some((observer, wrapped)),
    )
}

/// Run `args` under the launcher with `transport`: its output.
fn launch(transport: &str, args: &[&str]) -> Output {
    let h = profile_dir().join("hypercomm");
    Command::new("timeout")
        .arg("300")
        .arg(h)
        .args(["run", "--transport", transport])
        .args(args)
        .current_dir(built())
        .output()
        .expect("launcher")
}

/// Run `args` under the launcher with `transport`, which must succeed: its
/// standard output.
fn run(transport: &str, args: &[&str]) -> String {
    check(&format!("hypercomm run {args:?}"), launch(transport, args))
}

/// The text after `[r] ` of rank r's lines.
fn lines_of(out: &str, rank: &str) -> Vec<String> {
    let p = format!("[{rank}] ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&p))
        .map(str::to_string)
        .collect()
}

#[test]
fn picl_figures_1_and_2_ring_pairwise_sums() {
    if !have(&["cc"]) {
        return;
    }
    let host = example_c_observed("picl_fig1_host", "observe_fig1.c", &["recv0", "close0"]);
    let node = example_c("picl_fig2_node", true);
    // Figure 1's data are N = 1024 ones in blocks of M = N / P; Figure 2's
    // node j sums neighbours: results[k] = data[k] + data[k+1] (the last
    // with the right neighbour's first), so every result is 2.
    let (n, p) = (1024usize, 32usize);
    let data = vec![1.0f64; n];
    let result: Vec<f64> = (0..n).map(|k| data[k] + data[(k + 1) % n]).collect();
    let want = format!(
        "results: {p} blocks from {p} nodes once each, {n} values, min {} max {} sum {}",
        result.iter().cloned().fold(f64::INFINITY, f64::min),
        result.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        result.iter().sum::<f64>()
    );
    // Figure 1 allocates 32 nodes and loads "nodeprogram".
    std::fs::copy(node, built().join("nodeprogram")).unwrap();
    for t in ["shm", "tcp"] {
        let out = run(
            t,
            &[
                "-n",
                "32",
                "--host",
                host.to_str().unwrap(),
                "--",
                "./nodeprogram",
            ],
        );
        for r in 0..32 {
            let l = lines_of(&out, &r.to_string());
            assert_eq!(l.len(), 1, "{t}: node {r}:\n{out}");
            let rest = l[0].strip_prefix(&format!("node {r} took ")).unwrap();
            let secs: f64 = rest
                .strip_suffix(" seconds to finish")
                .unwrap()
                .parse()
                .unwrap();
            assert!(secs >= 0.0);
        }
        let h = lines_of(&out, "host");
        assert!(
            h.len() == 2 && h[0].starts_with("host took "),
            "{t}:\n{out}"
        );
        assert!(h[0].ends_with(" seconds to finish"));
        assert_eq!(h[1], want, "{t}:\n{out}");
    }
    // The manual's own model: the host started by hand, load0 starting the
    // 32 copies of "nodeprogram" (TCP on loopback).
    let out = Command::new("timeout")
        .arg("300")
        .arg(&host)
        .current_dir(built())
        .output()
        .unwrap();
    let out = check("the host started by hand", out);
    for r in 0..32 {
        let want = format!("[{r}] node {r} took ");
        assert!(
            out.lines().any(|l| l.starts_with(&want)),
            "node {r}:\n{out}"
        );
    }
    assert!(out.contains("host took "), "{out}");
    assert!(out.lines().any(|l| l == want), "{out}");
}

#[test]
fn picl_figures_3_and_4_speedup_sweep() {
    if !have(&["cc"]) {
        return;
    }
    let host = example_c("picl_fig3_host", true);
    let node = example_c_observed(
        "picl_fig4_node",
        "observe_fig4.c",
        &["setarc0", "bcast0", "close0"],
    );
    std::fs::copy(node, built().join("node")).unwrap();
    for t in ["shm", "tcp"] {
        // Figure 3 allocates 64 nodes and sweeps p = 1, 2, 4, … 64 with
        // n = 100; a node takes part in the steps that include it (setarc0
        // waits for them), then gets p = 0.
        let out = run(
            t,
            &["-n", "64", "--host", host.to_str().unwrap(), "--", "./node"],
        );
        assert!(!out.contains("error"), "{out}");
        for r in 0..64usize {
            let steps: String = (0..7)
                .map(|k| 1usize << k)
                .filter(|&p| p > r)
                .map(|p| format!(" p{p}/n100"))
                .collect();
            assert_eq!(
                lines_of(&out, &r.to_string()),
                vec![format!("sweep:{steps} p0")],
                "{t}:\n{out}"
            );
        }
    }
}

#[test]
fn cmmd_reductions_and_scans_give_the_manuals_values() {
    if !have(&["cc"]) {
        return;
    }
    let exe = example_c("cmmd_scans", false);
    // Seed 004, sections 9.1 and 9.4.
    let reduce = [26, 26, 26, 26];
    let up_ex = [0, 4, 13, 20];
    let down_in = [26, 22, 13, 6];
    let seg_in = [4, 13, 7, 13];
    let by_segment = [0, 4, 0, 5];
    let by_start = [0, 4, 4, 5];
    for t in ["shm", "tcp"] {
        let out = run(t, &["-n", "4", exe.to_str().unwrap()]);
        for r in 0..4 {
            let want = format!(
                "node {r}: reduce {} upward-exclusive {} downward-inclusive {} segmented-inclusive {} umax-segment-bit {} umax-start-bit {}",
                reduce[r], up_ex[r], down_in[r], seg_in[r], by_segment[r], by_start[r]
            );
            assert_eq!(lines_of(&out, &r.to_string()), vec![want], "{t}:\n{out}");
        }
    }
}

#[test]
fn cmmd_circular_and_end_off_shifts() {
    if !have(&["cc"]) {
        return;
    }
    let exe = example_c("cmmd_shifts", false);
    for t in ["shm", "tcp"] {
        for n in [1usize, 4, 5] {
            let out = run(t, &["-n", &n.to_string(), exe.to_str().unwrap()]);
            let block = |r: usize| format!("{} {} {}", 10 * r + 1, 10 * r + 2, 10 * r + 3);
            for r in 0..n {
                let left = (r + n - 1) % n;
                let end_off = if r == 0 {
                    "0 0 0".to_string()
                } else {
                    block(r - 1)
                };
                assert_eq!(
                    lines_of(&out, &r.to_string()),
                    vec![
                        format!("node {r}: circular {}", block(left)),
                        format!("node {r}: end-off {end_off}")
                    ],
                    "{t} n={n}:\n{out}"
                );
            }
        }
    }
}

#[test]
fn ipsc_normalize_in_fortran() {
    if !have(&["gfortran"]) {
        return;
    }
    let exe = gfortran(
        &root().join("examples/fortran/ipsc_normalize.f"),
        "ipsc_normalize",
    );
    // X(j) = mod(37 j, 11) - 5 for j = 0 … 11, normalized.
    let x: Vec<f64> = (0..12).map(|j| ((37 * j) % 11) as f64 - 5.0).collect();
    let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    for t in ["shm", "tcp"] {
        let out = run(t, &["-n", "4", exe.to_str().unwrap()]);
        let l = lines_of(&out, "0");
        assert_eq!(l.len(), 14, "{t}:\n{out}");
        let num = |s: &str| -> f64 { s.split_whitespace().last().unwrap().parse().unwrap() };
        assert!((num(&l[0]) - norm).abs() < 1e-12 * norm, "{}", l[0]);
        assert_eq!(num(&l[1]), 96.0, "count in bytes");
        for (i, line) in l[2..].iter().enumerate() {
            assert!((num(line) - x[i] / norm).abs() < 1e-15, "{line}");
        }
    }
}

#[test]
fn a_traced_picl_program_writes_a_file_the_report_opens() {
    if !have(&["cc"]) {
        return;
    }
    let exe = cc(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/trace_ring.c"),
        "trace_ring",
        false,
    );
    for t in ["shm", "tcp"] {
        let file = built().join(format!("ring-{t}.trace"));
        let _ = std::fs::remove_file(&file);
        let e = exe.to_str().unwrap();
        run(
            t,
            &["-n", "3", "--host", e, file.to_str().unwrap(), "--", e],
        );
        let text = std::fs::read_to_string(&file).unwrap();
        let tr = hypercomm::trace::picl::parse(&text).unwrap();
        let nodes: std::collections::BTreeSet<i32> = tr.records.iter().map(|r| r.node).collect();
        assert_eq!(nodes.into_iter().collect::<Vec<_>>(), vec![-32768, 0, 1, 2]);
        assert!(text.contains("trace_message") && text.contains("ring done"));
        assert!(text.contains("send clock"), "{text}");
        // tracemark's type is the user's integer, a negative one too.
        let marks: Vec<(i32, i64)> = tr
            .records
            .iter()
            .filter_map(|r| match r.kind {
                hypercomm::trace::Kind::TraceMark { mark } => Some((r.node, mark)),
                _ => None,
            })
            .collect();
        assert!(
            marks.contains(&(-32768, -7)) && marks.contains(&(-32768, 1)),
            "{marks:?}"
        );
        let html = built().join(format!("ring-{t}.html"));
        let out = Command::new(profile_dir().join("hypercomm"))
            .args(["trace", "report"])
            .arg(&file)
            .arg("-o")
            .arg(&html)
            .output()
            .unwrap();
        check("hypercomm trace report", out);
        assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    }
}

#[test]
fn cmmd_host_routines_broadcast_distribute_reduce_and_gather() {
    if !have(&["cc"]) {
        return;
    }
    let exe = cc(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/cmmd_host.c"),
        "cmmd_host",
        false,
    );
    let e = exe.to_str().unwrap();
    for t in ["shm", "tcp"] {
        let out = run(t, &["-n", "4", "--host", e, "--", e]);
        // 4 + 9 + 7 + 6 on the host and every node (seed 004, 9.3).
        assert_eq!(
            lines_of(&out, "host"),
            vec!["host: sum 26 gathered 2 22 42 62"],
            "{t}:\n{out}"
        );
        for r in 0..4 {
            assert_eq!(
                lines_of(&out, &r.to_string()),
                vec![format!("node {r}: bc 42 element {} sum 26", 10 * r + 1)],
                "{t}:\n{out}"
            );
        }
    }
}

#[test]
fn cmmd_vector_messages_row_column_and_transpose() {
    if !have(&["cc"]) {
        return;
    }
    let exe = example_c("cmmd_vectors", false);
    // A[i][j] = 6i + j: the top row, the first column, the transpose.
    let join = |v: Vec<usize>| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let row = join((0..6).collect());
    let col = join((0..4).map(|i| 6 * i).collect());
    let tr = join(
        (0..6)
            .flat_map(|j| (0..4).map(move |i| 6 * i + j))
            .collect(),
    );
    for t in ["shm", "tcp"] {
        let out = run(t, &["-n", "2", exe.to_str().unwrap()]);
        assert_eq!(
            lines_of(&out, "1"),
            vec![
                format!("row: {row}"),
                format!("column: {col}"),
                format!("transpose: {tr}")
            ],
            "{t}:\n{out}"
        );
    }
}

/// Run under the launcher, expecting failure: (stdout, stderr).
fn run_failing(args: &[&str]) -> (String, String) {
    let out = Command::new("timeout")
        .arg("120")
        .arg(profile_dir().join("hypercomm"))
        .arg("run")
        .args(args)
        .current_dir(built())
        .output()
        .expect("launcher");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn errors_name_the_routine_and_the_node_and_stop_the_job_or_are_syslogged() {
    if !have(&["cc"]) {
        return;
    }
    let exe = cc(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/errors.c"),
        "errors",
        false,
    );
    let e = exe.to_str().unwrap();
    // PICL: a message that does not fit stops the job, naming recv0 and node 1.
    let out = Command::new(profile_dir().join("hypercomm"))
        .args(["run", "-n", "2", e, "recv0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("PICL error in recv0 on node 1"), "{err}");
    // CMMD: a combiner not allowed for the type is a fatal error.
    let (_, err) = run_failing(&["-n", "2", e, "combiner"]);
    assert!(
        err.contains("CMMD error in CMMD_reduce_float on node"),
        "{err}"
    );
    assert!(err.contains("not allowed for float"), "{err}");
    // Found before the call joined the job: the node is the launcher's.
    assert!(
        err.contains("on node 0: ") || err.contains("on node 1: "),
        "{err}"
    );
    // iPSC: GCAT syslogs in capitals, beginning with its name, and returns.
    let (out, err) = run_failing(&["-n", "1", e, "gcat"]);
    assert!(out.contains("gcat returned on node 0"), "{out}");
    assert!(err.contains("GCAT: BUFFER LENGTH EXCEEDED"), "{err}");
    // The host is no participant of GOP or GCAT (seed 000, section 8).
    let out = launch(
        "shm",
        &["-n", "1", "--host", e, "hostgop", "--", e, "hostgop"],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let out = check("errors hostgop", out);
    assert!(out.contains("gop and gcat returned on the host"), "{out}");
    assert!(err.contains("GOP: CALLED BY NON PARTICIPANT"), "{err}");
    assert!(err.contains("GCAT: CALLED BY NON PARTICIPANT"), "{err}");
    // PICL: g*0 on the host with a node as the root "never makes sense"
    // (seed 003): named, the job stopped.
    let (_, err) = run_failing(&["-n", "1", "--host", e, "hostgsum", "--", e, "hostgsum"]);
    assert!(err.contains("PICL error in gsum0 on the host"), "{err}");
    assert!(
        err.contains("on the host the root must be the host (-32768)"),
        "{err}"
    );
}

#[test]
fn cmmd_from_fortran_77_every_kind_of_routine() {
    if !have(&["gfortran"]) {
        return;
    }
    let exe = gfortran(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/cmmd_fortran.f"),
        "cmmd_fortran",
    );
    // The manual's values, node r contributing v[r] (seed 004, 9.3).
    let v = [4i64, 9, 7, 6];
    let n = v.len();
    let half = |r: usize| v[r] as f64 / 2.0;
    let e = exe.to_str().unwrap();
    for t in ["shm", "tcp"] {
        let out = run(t, &["-n", "4", "--host", e, "--", e]);
        let gathered: Vec<String> = (0..n).map(|r| (2 * (10 * r + 1)).to_string()).collect();
        assert_eq!(
            lines_of(&out, "host"),
            vec![format!(
                "host: sum {} gathered {}",
                v.iter().sum::<i64>(),
                gathered.join(" ")
            )],
            "{t}:\n{out}"
        );
        let concat: Vec<String> = (0..n).map(|r| (r * r).to_string()).collect();
        for r in 0..n {
            let left = (r + n - 1) % n;
            let scan: i64 = v[..r].iter().sum();
            let dscan: f64 = (r..n).map(half).sum();
            let min = (0..n).map(half).fold(f64::INFINITY, f64::min);
            assert_eq!(
                lines_of(&out, &r.to_string()),
                vec![
                    format!(
                        "node {r}: max {} umax {} scan {scan} min {min:.1} fsum {:.1} dscan {dscan:.1}",
                        v.iter().max().unwrap(),
                        n - 1,
                        v.iter().sum::<i64>() as f64
                    ),
                    format!(
                        "node {r}: swap 1 {} ring 1 {} from {left} bytes 4",
                        100 + (r ^ 1),
                        10 * left
                    ),
                    format!("node {r}: concat {} or 1", concat.join(" ")),
                    format!(
                        "node {r}: bc 42 element {} sum {}",
                        10 * r + 1,
                        v.iter().sum::<i64>()
                    ),
                ],
                "{t}:\n{out}"
            );
        }
    }
}

/// `INCLUDE 'cmmd_fort.h'` gives Fortran 77 CMMD's named constants and
/// its functions' result types (seed 004, 1.3: the same calling sequences
/// as C), so the manual's `CMMD_REDUCE_INT(X, CMMD_COMBINER_MAX)` works
/// as written, without a warning under `-Wall`.
#[test]
fn cmmd_named_constants_from_fortran_77() {
    if !have(&["gfortran"]) {
        return;
    }
    let exe = gfortran(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/cmmd_fort_include.f"),
        "cmmd_fort_include",
    );
    let v = [4i64, 9, 7, 6];
    let out = run("shm", &["-n", "4", exe.to_str().unwrap()]);
    let or = v.iter().fold(0, |a, b| a | b);
    let min = v.iter().min().unwrap() / 2;
    for r in 0..4 {
        let exscan: i64 = v[..r].iter().sum();
        assert_eq!(
            lines_of(&out, &r.to_string()),
            [format!(
                "node {r}: max 9 or {or} exscan {exscan} min {min}.0 any -1"
            )],
            "{out}"
        );
    }
}

#[test]
fn ipsc_broadcast_and_gop_with_the_host_in_fortran() {
    if !have(&["gfortran"]) {
        return;
    }
    let exe = gfortran(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/ipsc_host.f"),
        "ipsc_host",
    );
    let e = exe.to_str().unwrap();
    // The host's message: the squares 1 … 100 (40 bytes); every node gets
    // all of it in its 64-byte buffer, GOP sums (node + 1, that sum).
    let n = 4usize;
    let sum: i64 = (1..=10).map(|i| i * i).sum();
    let want = vec![
        format!(
            "host: gop {:.1} {:.1} from 0 bytes 16",
            (1..=n).sum::<usize>() as f64,
            (n as i64 * sum) as f64
        ),
        format!("host: got{}", format!(" 40 {sum}").repeat(n)),
    ];
    for t in ["shm", "tcp"] {
        let out = launch(t, &["-n", "4", "--host", e, "--", e]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let so = check("ipsc_host", out);
        assert_eq!(lines_of(&so, "host"), want, "{t}:\n{so}\n{err}");
        assert!(err.lines().any(|l| l.ends_with("HOST: DONE")), "{t}: {err}");
    }
}

/// `cube_edges` with `mode` on `n` nodes over shared memory: standard
/// output and standard error.
fn cube_edges(n: usize, mode: &str) -> (String, String) {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/cube_edges.c");
        cc(&src, "cube_edges", false)
    });
    let out = launch("shm", &["-n", &n.to_string(), exe.to_str().unwrap(), mode]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (check(&format!("cube_edges {mode} on {n}"), out), err)
}

#[test]
fn ipsc_broadcast_and_gcat_reach_every_node_short_of_a_full_cube() {
    if !have(&["cc"]) {
        return;
    }
    for n in [3usize, 5, 6, 7] {
        // GSENDW/GRECVW from every root: each other node gets each message
        // once, with its length (the string and its NUL).
        let (out, err) = cube_edges(n, "bcast");
        for me in 0..n {
            let want: Vec<String> = (0..n)
                .filter(|&r| r != me)
                .map(|r| format!("root {r}: 'from {r}' cnt {}", format!("from {r}").len() + 1))
                .collect();
            assert_eq!(
                lines_of(&out, &me.to_string()),
                want,
                "{n} nodes:\n{out}\n{err}"
            );
        }
        assert!(!err.contains("GRECVW"), "{err}");
        // GCAT at every root: blocks in the exclusive-or order of the cube
        // holding the nodes, the missing nodes skipped.
        let (out, err) = cube_edges(n, "gcat");
        let cube = n.next_power_of_two();
        for root in 0..n {
            let cat: String = (0..cube)
                .map(|k| k ^ root)
                .filter(|&m| m < n)
                .map(|m| ((b'a' + m as u8) as char).to_string().repeat(m % 2 + 1))
                .collect();
            let line = format!("gcat root {root}: '{cat}' cnt {}", cat.len());
            assert!(
                lines_of(&out, &root.to_string()).contains(&line),
                "{n} nodes, want {line}:\n{out}\n{err}"
            );
        }
        assert!(!err.contains("GCAT"), "{err}");
    }
}

#[test]
fn ipsc_gop_and_gcat_leave_each_node_its_subtrees_partial_result() {
    if !have(&["cc"]) {
        return;
    }
    // Seed 000, sections 3 and 4: "For all other processes, X [BUF]
    // contains the partial result for their subtrees". Node `rel` (its
    // number exclusive-or the root's) of GOP's tree has the children
    // `rel ^ bit` for every bit above its highest one, so its subtree is
    // every `e` that agrees with `rel` up to that bit; in GCAT's tree the
    // children are `rel + bit` for every bit below its lowest one, so its
    // subtree is `rel .. rel + lowest bit`, concatenated in that order.
    for n in [2usize, 4, 8] {
        let (out, err) = cube_edges(n, "partials");
        for me in 0..n {
            let mut want = Vec::new();
            for root in 0..n {
                let rel = me ^ root;
                let gop: Vec<usize> = match rel.checked_ilog2() {
                    None => (0..n).collect(),
                    Some(h) => (0..n).filter(|e| e % (2 << h) == rel).collect(),
                };
                let node = |e: usize| e ^ root;
                let sum: usize = gop.iter().map(|&e| node(e) + 1).sum();
                let squares: usize = gop.iter().map(|&e| node(e) * node(e)).sum();
                let max = gop.iter().map(|&e| node(e) * 5 % 7).max().unwrap();
                let span = if rel == 0 {
                    n
                } else {
                    1 << rel.trailing_zeros()
                };
                let cat: String = (rel..rel + span)
                    .map(|e| {
                        ((b'a' + node(e) as u8) as char)
                            .to_string()
                            .repeat(node(e) % 2 + 1)
                    })
                    .collect();
                want.push(format!("gop + root {root}: {sum} {squares}"));
                want.push(format!("gop M root {root}: {max}"));
                want.push(format!("gcat root {root}: '{cat}' cnt {}", cat.len()));
            }
            assert_eq!(lines_of(&out, &me.to_string()), want, "{n} nodes:\n{err}");
        }
        assert!(!err.contains("GOP") && !err.contains("GCAT"), "{err}");
    }
}

#[test]
fn ipsc_and_cmmd_report_what_a_short_buffer_or_a_bad_root_did() {
    if !have(&["cc"]) {
        return;
    }
    // LRECVW: "LRECVW: TRUNCATED MESSAGE" (seed 000, section 8); the first
    // 8 bytes are kept, the count is the message's 16.
    let (out, err) = cube_edges(2, "lrecvw");
    assert_eq!(
        lines_of(&out, "1"),
        ["lrecvw cnt 16 from 0 kept '01234567'"]
    );
    assert!(err.contains("LRECVW: TRUNCATED MESSAGE"), "{err}");
    // GINV inverts GRAY on every int, negative ones included.
    let (out, _) = cube_edges(1, "gray");
    for v in [i32::MIN, -5, -1, 0, 1, 6, i32::MAX] {
        assert!(out.contains(&format!("ginv(gray({v})) = {v}\n")), "{out}");
    }
    // GOP with root −1: syslogged, and nobody gets the sum (3 = 1 + 2).
    let (out, err) = cube_edges(2, "gop");
    assert_eq!(lines_of(&out, "0"), ["gop x 1"], "{err}");
    assert_eq!(lines_of(&out, "1"), ["gop x 2"], "{err}");
    assert!(
        err.contains("GOP: ROOT -1 IS NOT A NODE OF THIS SUBCUBE"),
        "{err}"
    );
    // GOP and GCAT where each node names itself the root: check mode
    // names the root on every node, and nobody waits; then a GCAT whose
    // result outgrows the root's 2 bytes: syslogged there, what fits kept.
    let (out, err) = cube_edges(4, "badroots");
    for me in 0..4 {
        let lines = lines_of(&out, &me.to_string());
        assert_eq!(lines[0], format!("gop x {} gcat cnt 1", me + 1), "{err}");
    }
    assert_eq!(lines_of(&out, "0")[1], "gcat root 0: 'ab' cnt 2", "{err}");
    assert_eq!(
        err.matches("GOP: THE ROOT DIFFERS BETWEEN THE NODES (0 AND 3)")
            .count(),
        4,
        "{err}"
    );
    assert_eq!(err.matches("GCAT: THE ROOT DIFFERS").count(), 4, "{err}");
    assert_eq!(
        err.matches("GCAT: BUFFER LENGTH EXCEEDED").count(),
        1,
        "{err}"
    );
    // CMMD_send_and_receive: FALSE when the partner took 8 of the 16 bytes
    // (seed 004, 4.3), and CMMD_bytes_sent says 8.
    let (out, err) = cube_edges(2, "sar");
    assert_eq!(lines_of(&out, "0"), ["sar r 0 sent 8 received 4"], "{err}");
    assert!(lines_of(&out, "1")[0].ends_with("got 'ABCDEFGH'"), "{out}");
}

/// `tests/programs/send_semantics.c`, built once.
fn send_semantics_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/send_semantics.c");
        cc(&src, "send_semantics", false)
    })
}

/// `tests/programs/send_semantics.c` under the launcher with `transport`.
fn send_semantics(transport: &str, args: &[&str]) -> (String, String) {
    let exe = send_semantics_exe().to_str().unwrap();
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "PROG" { exe } else { a })
        .collect();
    let out = launch(transport, &args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (check(&format!("send_semantics {args:?}"), out), err)
}

/// The manuals' sends and broadcasts as their users write them. PICL's
/// split-phase broadcast after setarc0: the nodes recv0, then bcast1
/// (seed 003, bcast1: "every node processor in use must first call recv0,
/// then bcast1"), from the host and from a node. send0 is "blocking and
/// asynchronous": it returns once the message is on its way, so nodes that
/// each send a long message before receiving, or send one to themselves,
/// do not wait for each other; SENDW and LSENDW likewise. bcast0 runs on
/// the library's own context, so a recv0 of any type just before it takes
/// the user's message, not the broadcast's (SPEC §3). SPGRCW into a short
/// buffer keeps what fits, as the seed's RECVW does, and syslogs; SPGSNW
/// names a negative target as it is.
#[test]
fn picl_and_ipsc_sends_and_broadcasts_as_the_manuals_use_them() {
    if !have(&["cc"]) {
        return;
    }
    let (out, err) = send_semantics(
        "shm",
        &["-n", "4", "--host", "PROG", "host", "--", "PROG", "node"],
    );
    for r in 0..4 {
        assert_eq!(
            lines_of(&out, &r.to_string()),
            ["from host: 'from the host'", "from node 1: 'from node 1'"],
            "node {r}:\n{out}\n{err}"
        );
    }
    for (transport, n) in [("shm", 2usize), ("shm", 3), ("tcp", 3)] {
        for case in ["exchange", "sendw"] {
            let (out, err) = send_semantics(transport, &["-n", &n.to_string(), "PROG", case]);
            for r in 0..n {
                assert_eq!(
                    lines_of(&out, &r.to_string()),
                    ["next: right", "self: right"],
                    "{case} on {n} over {transport}, node {r}:\n{out}\n{err}"
                );
            }
        }
    }
    let (out, err) = send_semantics("shm", &["-n", "3", "PROG", "wildcard"]);
    assert_eq!(
        lines_of(&out, "1"),
        ["recv0(-1): 99 of type 1 from 2", "bcast0: 4242"],
        "{out}\n{err}"
    );
    for r in ["0", "2"] {
        assert_eq!(lines_of(&out, r), ["bcast0: 4242"], "{out}\n{err}");
    }
    let (out, err) = send_semantics("shm", &["-n", "2", "PROG", "spgrcw"]);
    assert_eq!(
        lines_of(&out, "1"),
        ["spgrcw cnt 16 kept '01234567........'"],
        "{out}\n{err}"
    );
    assert!(err.contains("SPGRCW: TRUNCATED MESSAGE"), "{err}");
    assert!(
        err.contains("SPGSNW: TARGET -1 (LIST ENTRY 1) IS NOT A NODE"),
        "{err}"
    );
}

/// A PICL node program run by hand: open0 makes it the host (seed 003: the
/// host loads the nodes), so its first receive fails, naming the routine
/// and saying why (the nodes are not running: load0, or `hypercomm run`)
/// rather than "communication is not open" right after open0 succeeded.
#[test]
fn a_picl_node_program_run_by_hand_is_told_to_load_its_nodes() {
    if !have(&["cc"]) {
        return;
    }
    let out = Command::new("timeout")
        .arg("60")
        .arg(send_semantics_exe())
        .arg("unlaunched")
        .env_remove("HYPERCOMM_RANK")
        .output()
        .expect("running the program");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!stdout.contains("recv0 returned"), "{stdout}");
    assert!(
        stderr.contains("PICL error in recv0 on the host"),
        "{stderr}"
    );
    assert!(stderr.contains("call load0"), "{stderr}");
    assert!(stderr.contains("hypercomm run -n 4"), "{stderr}");
}
