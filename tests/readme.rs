//! Documentation that cannot rot: every shell command in README.md's `sh`
//! blocks runs, as written, in a fresh copy of the repository (its tracked
//! files, its own `target/`), and must succeed. The `rust` blocks are
//! compiled and run as doctests (`ReadmeDoctests` in the crate root).
//!
//! A command that cannot run on one machine (other machines, a Slurm
//! cluster, an install) is listed in [`EXCUSED`] with the reason and the
//! test that covers it instead; a command neither run nor excused fails
//! the test, so a new command in the README is either tried or explained.
//! Each block runs as one `sh -e` script, so variables set on one line
//! are seen by the next, as when a reader pastes the block.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Commands (by prefix, after the block's leading spaces) not run here.
const EXCUSED: &[(&str, &str)] = &[
    (
        "cargo test --workspace --release",
        "the suite this test is part of",
    ),
    (
        "hypercomm run -n 8 --hosts node1,node2",
        "needs machines node1 and node2 (tests/ssh.rs runs ranks over sshd on loopback)",
    ),
    (
        "hypercomm run -n 8 --hostfile hosts.txt",
        "needs the machines of a hosts.txt (tests/ssh.rs)",
    ),
    (
        "salloc ",
        "needs a Slurm cluster (tests/slurm.rs starts one on loopback)",
    ),
    ("sbatch ", "needs a Slurm cluster (tests/slurm.rs)"),
    (
        "apt-get install",
        "installs system packages (.ci/run does, as root)",
    ),
    (
        "cargo build --release --features hypercomm/mpi",
        "builds the reader's own program (tests/mpi.rs builds the feature)",
    ),
    (
        "mpirun -n 4 ./target/release/prog",
        "prog is the reader's program (tests/mpi.rs runs the examples so)",
    ),
    (
        "hypercomm run --transport mpi -n 4 ./target/release/prog",
        "prog is the reader's program (tests/mpi.rs)",
    ),
];

/// A fenced block of README.md: its language and its lines.
struct Block {
    lang: String,
    line: usize,
    text: Vec<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, l) in readme.lines().enumerate() {
        if let Some(rest) = l.strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    open = Some(Block {
                        lang: rest.trim().to_string(),
                        line: i + 1,
                        text: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = open.as_mut() {
            b.text.push(l.to_string());
        }
    }
    assert!(open.is_none(), "README.md has an unclosed ``` block");
    out
}

/// Why `cmd` is not run here, if it is excused.
fn excused(cmd: &str) -> Option<&'static str> {
    let cmd = cmd.trim_start();
    EXCUSED
        .iter()
        .find(|(prefix, _)| cmd.starts_with(prefix))
        .map(|&(_, why)| why)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's tracked files copied to a fresh directory whose
/// `target/` is `target/readme` of this checkout (fresh in CI, reused
/// between local runs).
fn fresh_copy() -> PathBuf {
    let root = root().canonicalize().unwrap();
    let dir = root.join("target/readme-checkout");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let files = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("git ls-files");
    assert!(files.status.success(), "git ls-files failed");
    for f in files.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let rel = Path::new(std::str::from_utf8(f).unwrap());
        let from = root.join(rel);
        if !from.exists() {
            continue; // deleted in the working tree
        }
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    let target = root.join("target/readme");
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("target")).unwrap();
    dir
}

#[test]
fn every_readme_command_is_run_or_excused() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let all = blocks(&readme);
    assert!(
        all.iter().any(|b| b.lang == "rust"),
        "README.md shows Rust code"
    );
    let dir = fresh_copy();
    let mut ran = 0;
    let mut seen_excuses = Vec::new();
    for b in all.iter().filter(|b| b.lang == "sh") {
        // A batch script (`#!/bin/sh` with #SBATCH lines) is Slurm's.
        if b.text.first().is_some_and(|l| l.starts_with("#!")) {
            assert!(
                b.text.iter().any(|l| l.starts_with("#SBATCH")),
                "README.md line {}: a script block that is not a Slurm batch script",
                b.line
            );
            continue;
        }
        let mut script = String::from("set -e\n");
        for l in &b.text {
            let cmd = l.trim();
            if cmd.is_empty() || cmd.starts_with('#') {
                continue;
            }
            if let Some(why) = excused(cmd) {
                seen_excuses.push(why);
                continue;
            }
            script.push_str(cmd);
            script.push('\n');
            ran += 1;
        }
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(&dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .output()
            .expect("running sh");
        assert!(
            out.status.success(),
            "README.md line {}: the block failed ({}):\n{script}\nstdout:\n{}\nstderr:\n{}",
            b.line,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        ran >= 10,
        "only {ran} README commands ran: the blocks were not found"
    );
    readme_example_runs_both_ways(&dir, &all);
    // Every excuse is still needed: a command that left the README takes
    // its excuse with it.
    for (prefix, why) in EXCUSED {
        assert!(
            seen_excuses.contains(why),
            "the excuse for `{prefix}` matches no README command any more"
        );
    }
}

/// The README's first Rust example, unchanged, as a program: as threads,
/// and as processes under the launcher over shared memory and TCP (its
/// `run(4, …)` joins the job; its own `assert_eq!` checks the tokens).
fn readme_example_runs_both_ways(dir: &Path, all: &[Block]) {
    let first = all.iter().find(|b| b.lang == "rust").unwrap();
    let src = dir.join("crates/hypercomm/examples/readme.rs");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(&src, first.text.join("\n")).unwrap();
    let script = "set -e
cargo build --release -p hypercomm --example readme -p hypercomm-cli
target/release/examples/readme
target/release/hypercomm run -n 4 target/release/examples/readme
target/release/hypercomm run -n 4 --transport tcp target/release/examples/readme
! target/release/hypercomm run -n 2 target/release/examples/readme 2> mismatch.txt
grep -q 'start it with 4 processes' mismatch.txt
";
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("running sh");
    assert!(
        out.status.success(),
        "the README example (line {}) as threads and as processes:\nstdout:\n{}\nstderr:\n{}\nmismatch:\n{}",
        first.line,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(dir.join("mismatch.txt")).unwrap_or_default()
    );
}

#[test]
fn examples_readme_indexes_every_example() {
    let dir = root().join("examples");
    let index = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut missing = Vec::new();
    for sub in ["", "c", "fortran"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            let listed = match p.extension().and_then(|x| x.to_str()) {
                Some("rs") => index.contains(&format!("`{}`", name.trim_end_matches(".rs"))),
                Some("c") | Some("f") => index.contains(&format!("`{sub}/{name}`")),
                _ => true,
            };
            if !listed {
                missing.push(p.display().to_string());
            }
        }
    }
    assert!(missing.is_empty(), "not in examples/README.md: {missing:?}");
}

/// The threads-only library's dependencies: at most 10 crates, and the
/// count README.md states.
#[test]
fn a_threads_only_build_has_the_crates_the_readme_counts() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "hypercomm", "--no-default-features"])
        .args(["-e", "normal", "--prefix", "none", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut crates: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    crates.sort();
    crates.dedup();
    assert!(crates.len() <= 10, "{crates:?}");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let stated = format!("# {} crates, hypercomm included", crates.len());
    assert!(
        readme.contains(&stated),
        "README.md should say `{stated}`: the tree is {crates:?}"
    );
}

#[test]
fn excuses_match_by_prefix_only() {
    assert_eq!(
        excused("  salloc -N 2 -n 8 srun ./prog"),
        Some("needs a Slurm cluster (tests/slurm.rs starts one on loopback)")
    );
    assert_eq!(excused("cargo run --release --example hello"), None);
    assert_eq!(
        excused("target/release/hypercomm run -n 4 ./cmmd_scans"),
        None
    );
}
