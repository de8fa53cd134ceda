//! What the tests of the C and Fortran interfaces share: the profile's
//! target directory, building the static library (and the launcher) for
//! it, and the compilers they need.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>`.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Build `packages` for this profile (`cargo test` builds only the rlib
/// of hypercomm-c, not the static library C programs link with).
pub(crate) fn cargo_build(packages: &[&str]) {
    let prof = profile_dir();
    let Ok(cargo) = std::env::var("CARGO") else {
        return;
    };
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--offline"]);
    for p in packages {
        c.args(["-p", p]);
    }
    c.arg("--target-dir").arg(prof.parent().unwrap());
    if prof.file_name().and_then(|s| s.to_str()) == Some("release") {
        c.arg("--release");
    }
    let out = c.output().expect("cargo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether every one of `tools` (compilers, `nm`) runs. When one does not,
/// the test is skipped with a message, unless `HYPERCOMM_REQUIRE_CC=1`
/// (set by `.ci/run`, which installs them), which makes it a failure.
pub(crate) fn have(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            Command::new(t)
                .arg("--version")
                .output()
                .map_or(true, |o| !o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("HYPERCOMM_REQUIRE_CC").as_deref() != Ok("1"),
        "{} not found and HYPERCOMM_REQUIRE_CC=1",
        missing.join(", ")
    );
    eprintln!(
        "skipped: {} not installed (apt-get install gcc g++ gfortran binutils)",
        missing.join(", ")
    );
    false
}
