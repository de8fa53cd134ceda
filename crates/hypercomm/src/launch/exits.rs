//! How the launcher names ranks and describes how processes ended, and
//! the one signal call it makes.

use std::process::ExitStatus;

/// `rank 3` or `host`.
pub(crate) fn label(ep: usize, nodes: usize, host: bool) -> String {
    if host && ep == nodes {
        "host".to_string()
    } else {
        format!("rank {ep}")
    }
}

/// The name of a signal number.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    format!("signal {name} ({sig})")
}

/// How a process ended, in words, and the exit code the launcher should
/// pass on (`None`: success).
pub(crate) fn describe_exit(status: ExitStatus) -> (String, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        (
            format!("was killed by {}", signal_name(sig)),
            Some(128 + sig),
        )
    } else {
        match status.code() {
            Some(0) => ("exited normally".into(), None),
            Some(c) => (format!("exited with code {c}"), Some(c)),
            None => ("ended in an unknown way".into(), Some(1)),
        }
    }
}

/// How a rank started over ssh ended, from its ssh's status: the remote
/// shell reports a death by signal as `128 + n`; 255 is ssh's own failure.
/// (The monitor's label names the host.)
pub(crate) fn describe_remote_exit(status: ExitStatus) -> (String, Option<i32>) {
    match status.code() {
        Some(255) => (
            "could not be started over ssh, or ssh lost its connection (ssh exited with code 255; its message, if any, is above)".into(),
            Some(255),
        ),
        Some(c) if c > 128 && c < 128 + 65 => {
            (format!("was killed by {}", signal_name(c - 128)), Some(c))
        }
        _ => describe_exit(status),
    }
}

/// Send `sig` to `pid`, and to its process group when it leads one (the
/// launcher's ranks: what they started stops with them).
pub(crate) fn kill(pid: u32, sig: i32) {
    let pid = pid as libc::pid_t;
    // SAFETY: getpgid(2) and kill(2) with a pid we started and have not
    // yet reaped (the monitor stops signalling a child once its exit was
    // seen), so neither it nor its group can be another's.
    unsafe {
        if libc::getpgid(pid) == pid {
            libc::kill(-pid, sig);
        } else {
            libc::kill(pid, sig);
        }
    }
}
