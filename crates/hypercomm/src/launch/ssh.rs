//! Starting ranks on other machines over ssh (`hypercomm run --hosts`).
//!
//! Where a rank runs is a `Place`: on this machine (a loopback address,
//! `localhost` or this machine's own name) or on a named host, reached with
//! the user's ssh command (`ssh` by default, `--ssh CMD` or `HYPERCOMM_SSH`
//! for another, e.g. `ssh -p 2222 -i key`). For a remote rank the launcher
//! runs
//!
//! ```text
//! ssh [options] HOST "sh -c 'cd DIR 2>/dev/null; IFS= read -r HYPERCOMM_SECRET || exit 255;
//!                      export HYPERCOMM_SECRET; env HYPERCOMM_RANK=… PROG ARGS; exit \$?'"
//! ```
//!
//! and writes the job's secret, one line, to ssh's standard input: it never
//! appears in a process's arguments or in a file. The remote shell starts
//! in the launcher's working directory when it exists there (as `mpirun`
//! does), otherwise in the remote home. Variables of the environment
//! contract are passed on `env`'s command line, together with the
//! launcher's own `HYPERCOMM_*` variables (tracing, timeouts),
//! `RUST_BACKTRACE` and the job's own variables (`hypercomm run -x`,
//! [`super::job::JobSpec`]'s `env`); nothing else of the launcher's
//! environment travels.
//!
//! ssh's standard input stays open for the life of the job, and a remote
//! rank (told so by [`WATCH_STDIN`]) watches it: when it ends — the
//! launcher stopped ssh, or died — the rank stops. So the monitor stops a
//! remote rank exactly as a local one, by signalling its (local) ssh
//! process. The shell reports a rank killed by a signal as `128 + n`, which
//! the monitor names as a signal; ssh's own failure (host unreachable,
//! refused key) is exit code 255, which the monitor names as such, with the
//! host, after ssh's message.
//!
//! Not done yet: stdin forwarding (a remote rank's stdin is the watch
//! channel), a login shell that is not POSIX-like (the command is
//! quoted for `sh`).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::net::{IpAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// Set to `1` in a rank started over ssh: stop when standard input ends.
pub const WATCH_STDIN: &str = "HYPERCOMM_WATCH_STDIN";

/// The variable holding the default ssh command (`--ssh` overrides it).
pub const SSH_VAR: &str = "HYPERCOMM_SSH";

/// Where one host's ranks run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// On this machine, listening on `bind` when set.
    Here { bind: Option<IpAddr> },
    /// On `host` (the name as the user gave it, for ssh), whose address
    /// is `addr` when it resolves here.
    Ssh { host: String, addr: Option<IpAddr> },
}

/// Whether `name` (an address or a host name) is this machine as far as
/// starting processes goes: a loopback address, `localhost`, or this
/// machine's host name (short or full).
pub(crate) fn is_here(name: &str) -> bool {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return ip.is_loopback();
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match own_hostname() {
        Some(h) => {
            let short = |s: &str| s.split('.').next().unwrap_or(s).to_ascii_lowercase();
            h.eq_ignore_ascii_case(name) || (!name.contains('.') && short(&h) == short(name))
        }
        None => false,
    }
}

/// This machine's host name.
fn own_hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..end]).ok().map(str::to_string)
}

/// The first address of `name` (an address or a resolvable name).
pub(crate) fn resolve(name: &str) -> std::result::Result<IpAddr, String> {
    if let Ok(ip) = name.parse() {
        return Ok(ip);
    }
    (name, 0)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve host {name:?}: {e}"))?
        .next()
        .map(|a| a.ip())
        .ok_or_else(|| format!("host {name:?} has no address"))
}

/// The address of this machine's interface that routes to `to` (no packet
/// is sent: a UDP socket is only connected).
pub(crate) fn route_to(to: IpAddr) -> std::io::Result<IpAddr> {
    let any: IpAddr = if to.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let s = UdpSocket::bind((any, 0))?;
    s.connect((to, 9))?;
    Ok(s.local_addr()?.ip())
}

/// `s` quoted for a POSIX shell: one word, whatever it contains.
pub(crate) fn quote(s: &OsStr) -> Vec<u8> {
    let b = s.as_bytes();
    let plain = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(c));
    if plain {
        return b.to_vec();
    }
    let mut out = Vec::with_capacity(b.len() + 2);
    out.push(b'\'');
    for &c in b {
        if c == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(c);
        }
    }
    out.push(b'\'');
    out
}

/// The command line the remote login shell runs for one rank: see the
/// module docs. `vars` must not contain the secret (it comes on stdin, into
/// `secret_var`).
pub(crate) fn remote_command(
    dir: Option<&Path>,
    secret_var: &str,
    vars: &[(OsString, OsString)],
    argv: &[OsString],
) -> OsString {
    let mut script: Vec<u8> = Vec::new();
    if let Some(d) = dir {
        script.extend_from_slice(b"cd ");
        script.extend(quote(d.as_os_str()));
        script.extend_from_slice(b" 2>/dev/null; ");
    }
    script.extend_from_slice(
        format!("IFS= read -r {secret_var} || exit 255; export {secret_var}; env").as_bytes(),
    );
    for (k, v) in vars {
        let mut kv = k.clone();
        kv.push("=");
        kv.push(v);
        script.push(b' ');
        script.extend(quote(&kv));
    }
    for a in argv {
        script.push(b' ');
        script.extend(quote(a));
    }
    // Not the last command, so the shell does not exec the program and
    // reports a death by signal as 128 + n (ssh would say 255).
    script.extend_from_slice(b"; exit $?");
    let mut cmd = b"sh -c ".to_vec();
    cmd.extend(quote(OsStr::from_bytes(&script)));
    OsString::from_vec(cmd)
}

/// The launcher's variables that travel to remote ranks: `HYPERCOMM_*`
/// (except the contract's own, which the launcher sets, and the secret)
/// and Rust's backtrace switches.
pub(crate) fn forwarded_env(skip: &[&str]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            (k.starts_with("HYPERCOMM_") && !skip.contains(&k.as_ref()))
                || k == "RUST_BACKTRACE"
                || k == "RUST_LIB_BACKTRACE"
        })
        .collect()
}

/// The ssh command: `--ssh`, else `HYPERCOMM_SSH`, else `ssh`, split on
/// white space (no quoting).
pub fn ssh_command(given: Option<&str>) -> Vec<OsString> {
    let from_env = std::env::var(SSH_VAR).ok();
    let s = given
        .map(str::to_string)
        .or(from_env)
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "ssh".into());
    s.split_whitespace().map(OsString::from).collect()
}

/// In a rank started over ssh: stop this process when standard input ends
/// (the launcher stopped ssh or died). Started by `init` when
/// [`WATCH_STDIN`] is set.
pub(crate) fn watch_stdin() {
    let _ = std::thread::Builder::new()
        .name("hypercomm-watch-stdin".into())
        .spawn(|| {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin().lock();
            loop {
                match stdin.read(&mut sink) {
                    Ok(0) => break,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            // With the connection gone, stderr is a broken pipe.
            say!("hypercomm: the launcher's ssh connection ended; stopping this rank");
            // SAFETY: raise(3) on this process; SIGTERM's default action
            // ends it (a handler the program installed runs instead).
            unsafe {
                libc::raise(libc::SIGTERM);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_a_real_shell() {
        let words: Vec<OsString> = [
            "plain",
            "with space",
            "it's",
            "$HOME",
            "`x`",
            "",
            "a\"b",
            "back\\slash",
            "new\nline",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let mut script = b"printf '%s\\0'".to_vec();
        for w in &words {
            script.push(b' ');
            script.extend(quote(w));
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(OsStr::from_bytes(&script))
            .output()
            .unwrap();
        let got: Vec<OsString> = out
            .stdout
            .split(|&b| b == 0)
            .take(words.len())
            .map(|w| OsString::from_vec(w.to_vec()))
            .collect();
        assert_eq!(got, words);
    }

    #[test]
    fn the_remote_command_reads_the_secret_from_stdin_and_runs_the_program() {
        use std::io::Write;
        let cmd = remote_command(
            Some(Path::new("/")),
            "SECRET_FOR_TEST",
            &[("A_VAR".into(), "two words".into())],
            &[
                "sh".into(),
                "-c".into(),
                "echo \"$SECRET_FOR_TEST|$A_VAR|$(pwd)|$0\"".into(),
                "it's".into(),
            ],
        );
        // The login shell's part: run the command line as a shell does.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"s3cret\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "s3cret|two words|/|it's\n"
        );
        assert!(!cmd.to_string_lossy().contains("s3cret"));
    }

    #[test]
    fn a_death_by_signal_comes_back_as_128_plus_n() {
        let cmd = remote_command(
            None,
            "S",
            &[],
            &["sh".into(), "-c".into(), "kill -9 $$".into()],
        );
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"x\n").unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(128 + 9));
    }

    #[test]
    fn this_machine_is_here_and_others_are_not() {
        assert!(is_here("127.0.0.1"));
        assert!(is_here("127.0.0.3"));
        assert!(is_here("::1"));
        assert!(is_here("localhost"));
        assert!(is_here(&own_hostname().unwrap()));
        assert!(!is_here("192.0.2.77"));
        assert!(!is_here("node-that-is-not-this-one.example"));
    }

    #[test]
    fn the_route_to_loopback_is_loopback() {
        assert!(route_to("127.0.0.1".parse().unwrap())
            .unwrap()
            .is_loopback());
    }
}
