//! `hypercomm run` with programs that are not hypercomm programs (`true`,
//! `sh`): what it says about its options, bad values and processes that
//! never join, and how it ends when its own standard error is gone. The
//! launcher with real ranks is tested in the workspace's tests/processes.rs.

use std::process::{Command, Stdio};

/// With its standard output and error a pipe nobody reads (`2>&1 | head
/// -1` after `head` has gone), the launcher still sees its ranks to the
/// end and exits with their code, instead of panicking on its first
/// message.
#[test]
fn a_closed_stderr_does_not_stop_the_launcher() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .args([
            "run",
            "-n",
            "2",
            "sh",
            "-c",
            "sleep 0.2; echo out; echo err >&2; exit 3",
        ])
        .env_remove("HYPERCOMM_RANK")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hypercomm runs");
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{status:?}");
}
