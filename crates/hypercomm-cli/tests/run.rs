//! `hypercomm run` with programs that are not hypercomm programs (`true`,
//! `sh`): what it says about its options, bad values and processes that
//! never join, and how it ends when its own standard error is gone. The
//! launcher with real ranks is tested in the workspace's tests/processes.rs.

use std::process::{Command, Output, Stdio};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .arg("run")
        .args(args)
        .env_remove("HYPERCOMM_RANK")
        .stdin(Stdio::null())
        .output()
        .expect("hypercomm runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The help paragraph of option `opt` (its line and the lines after it, up
/// to the next option).
fn help_of(help: &str, opt: &str) -> String {
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(opt));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("{opt} is not in:\n{help}"));
    let rest: Vec<&str> = lines
        .take_while(|l| !l.trim_start().starts_with('-'))
        .collect();
    format!("{first}\n{}", rest.join("\n"))
}

#[test]
fn every_option_has_its_own_help() {
    let o = run(&["--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let ssh = help_of(&help, "--ssh <CMD>");
    let interface = help_of(&help, "--interface <IP>");
    assert!(ssh.contains("reaches a remote host"), "{ssh}");
    assert!(
        !ssh.contains("rendezvous"),
        "--ssh has --interface's help:\n{ssh}"
    );
    assert!(interface.contains("rendezvous"), "{interface}");
    // Every option says something.
    for line in help.lines().filter(|l| l.trim_start().starts_with("--")) {
        let opt = line.split_whitespace().next().unwrap();
        let para = help_of(&help, line.trim_start());
        assert!(
            para.split_whitespace().count() > 2,
            "{opt} has no help:\n{para}"
        );
    }
}

#[test]
fn a_timeout_too_long_for_a_duration_is_an_error_naming_it() {
    for (t, says) in [
        ("1e300", "too long a timeout"),
        ("1e20", "too long a timeout"),
        ("-1", "not a positive number of seconds"),
        ("soon", "not a positive number of seconds"),
    ] {
        let o = run(&["-n", "2", "--timeout", t, "true"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--timeout {t}: {err}");
        assert!(err.contains(&format!("{t:?}")), "--timeout {t}: {err}");
        assert!(err.contains(says), "--timeout {t}: {err}");
        assert!(!err.contains("panicked"), "--timeout {t}: {err}");
    }
}

#[test]
fn options_with_an_empty_attached_value_are_named() {
    for (args, opt) in [
        (&["-np=", "true"][..], "-np="),
        (&["-n=", "true"][..], "-n="),
    ] {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{opt} has no value")),
            "{args:?}: {err}"
        );
        assert!(!err.contains("unknown option"), "{args:?}: {err}");
    }
}

#[test]
fn more_ranks_than_shared_memory_takes_is_named_as_a_limit() {
    let o = run(&["-n", "4097", "true"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 4096"), "{err}");
    assert!(err.contains("not 4097"), "{err}");
    assert!(!err.contains("I/O error"), "{err}");
}

/// A program that never joins is named, and the library feature it lacks
/// is the one of the job's transport.
#[test]
fn a_program_that_never_joins_is_told_the_feature_of_its_transport() {
    for (transport, other) in [("shm", "tcp"), ("tcp", "shm")] {
        let o = run(&["-n", "2", "--transport", transport, "true"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{transport}: {err}");
        assert!(err.contains("rank 0 exited without joining"), "{err}");
        assert!(
            err.contains(&format!("without the library's `{transport}` feature")),
            "{transport}: {err}"
        );
        assert!(!err.contains(&format!("`{other}`")), "{transport}: {err}");
    }
}

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

/// A rank that leaves a process behind holding its output (`daemon &`)
/// does not keep the launcher: once every rank has ended, the launcher
/// forwards what is left and exits with the job's code instead of waiting
/// for that process (Ctrl-C and --timeout could not end it either).
#[test]
fn a_process_left_behind_holding_the_output_does_not_keep_the_launcher() {
    let t = std::time::Instant::now();
    let o = run(&["-n", "1", "sh", "-c", "sleep 30 & echo $!; exit 3"]);
    let took = t.elapsed();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    if let Some(pid) = out.trim().strip_prefix("[0] ") {
        let _ = Command::new("kill").arg(pid).status();
    }
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(out.starts_with("[0] "), "the rank's line was lost: {out:?}");
    assert!(
        took < std::time::Duration::from_secs(10),
        "the launcher waited {took:?} for the process left behind"
    );
}

/// `-x` cannot replace a variable the launcher gives each process (a rank
/// told another's place used to fail in `init` with a panic-like message
/// far from its cause); ordinary variables pass.
#[test]
fn x_refuses_the_variables_the_launcher_sets_itself() {
    for var in ["HYPERCOMM_RANK=5", "HYPERCOMM_NODES", "HYPERCOMM_SECRET=00"] {
        let o = run(&["-n", "2", "-x", var, "true"]);
        let err = stderr(&o);
        let name = var.split('=').next().unwrap();
        assert!(!o.status.success(), "-x {var}: {err}");
        assert!(
            err.contains(&format!("-x {var}"))
                && err.contains(&format!("{name} is set by the launcher")),
            "-x {var}: {err}"
        );
    }
    let o = run(&[
        "-n",
        "1",
        "-x",
        "MY_SETTING=3",
        "sh",
        "-c",
        "test \"$MY_SETTING\" = 3",
    ]);
    assert!(
        !stderr(&o).contains("set by the launcher"),
        "{}",
        stderr(&o)
    );
}
