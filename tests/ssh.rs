//! `hypercomm run --hosts` over a real OpenSSH server: a private sshd
//! (fresh host and user keys, public-key logins only) started on this
//! machine by `tests/scripts/sshd.sh` on loopback and on the machine's own
//! non-loopback address, and stopped after the tests (`common::service`).
//!
//! The two "hosts" of a job are `127.0.0.1` (ranks started directly) and
//! the non-loopback address (ranks started through sshd, which the ranks
//! confirm by `SSH_CONNECTION`). The job's secret must not appear in any
//! process's arguments; a host ssh cannot reach is named; a remote rank
//! killed is named with its host and nothing is left; killing the
//! launcher itself stops the remote ranks.
//!
//! Needs root and Debian's `openssh-server` (and the client); `.ci/run`
//! installs it and sets `HYPERCOMM_REQUIRE_SSH=1`, which turns its absence
//! into a failure. Elsewhere the tests say they are skipped.

mod common;

use common::procs::{example_bin, gone_within, hypercomm_bin, run_limited};
use common::service::{service, Service, ServiceSpec};
use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::Command;
use std::sync::{mpsc, MutexGuard, OnceLock};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// This machine's first non-loopback IPv4 address that is up: the second
/// "host".
fn other_address() -> Ipv4Addr {
    static A: OnceLock<Ipv4Addr> = OnceLock::new();
    *A.get_or_init(|| {
        let mut found = None;
        // SAFETY: getifaddrs fills a list we walk read-only and free once.
        unsafe {
            let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
            assert_eq!(libc::getifaddrs(&mut list), 0, "getifaddrs failed");
            let mut p = list;
            while !p.is_null() {
                let ifa = &*p;
                let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
                if up
                    && !ifa.ifa_addr.is_null()
                    && (*ifa.ifa_addr).sa_family as i32 == libc::AF_INET
                {
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                    if !ip.is_loopback() && found.is_none() {
                        found = Some(ip);
                    }
                }
                p = ifa.ifa_next;
            }
            libc::freeifaddrs(list);
        }
        found.expect("this machine has no non-loopback IPv4 address to act as a second host")
    })
}

/// A free port for the server.
fn port() -> u16 {
    static P: OnceLock<u16> = OnceLock::new();
    *P.get_or_init(|| {
        TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    })
}

const SSHD: ServiceSpec = ServiceSpec {
    name: "sshd",
    script: "sshd.sh",
    programs: &["sshd", "ssh", "ssh-keygen"],
    install: "apt-get install openssh-server openssh-client",
    require: "HYPERCOMM_REQUIRE_SSH",
    args: || {
        vec![
            OsString::from(port().to_string()),
            "127.0.0.1".into(),
            other_address().to_string().into(),
        ]
    },
};

/// The server and the ssh command that reaches it.
struct Sshd(&'static Service);

impl Sshd {
    fn ssh(&self) -> String {
        std::fs::read_to_string(self.0.dir.join("ssh"))
            .expect("the server's ssh command")
            .trim()
            .to_string()
    }

    /// `hypercomm run -n N --hosts 127.0.0.1,OTHER --ssh CMD PROG ARGS`.
    fn run(&self, n: usize, ssh: &str, prog: &Path, args: &[&str]) -> Command {
        self.run_with(n, ssh, &[], prog, args)
    }

    /// [`Sshd::run`] with more of the launcher's options.
    fn run_with(&self, n: usize, ssh: &str, opts: &[&str], prog: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(hypercomm_bin());
        c.env("HYPERCOMM_TIMEOUT", "30")
            .env_remove("HYPERCOMM_RANK")
            .args(["run", "-n", &n.to_string(), "--hosts"])
            .arg(format!("127.0.0.1,{}", other_address()))
            .args(["--ssh", ssh])
            .args(opts)
            .arg(prog)
            .args(args);
        c
    }
}

fn sshd() -> Option<(MutexGuard<'static, ()>, Sshd)> {
    service(&SSHD).map(|(g, s)| (g, Sshd(s)))
}

/// The lines rank `r` printed (prefix `[r] ` removed).
fn lines_of(out: &str, r: usize) -> Vec<String> {
    let p = format!("[{r}] ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&p))
        .map(str::to_string)
        .collect()
}

#[test]
fn four_ranks_over_two_hosts_one_reached_through_sshd() {
    let Some((_g, s)) = sshd() else { return };
    let out = run_limited(s.run(4, &s.ssh(), &example_bin("faults"), &["ssh"]), LIMIT);
    assert!(out.status.success(), "{}", out.both());
    for r in 0..4 {
        let remote = r % 2 == 1;
        let token = if r == 0 { 4 } else { r };
        assert_eq!(
            lines_of(&out.stdout, r),
            vec![
                format!("ssh {}", if remote { "yes" } else { "no" }),
                "secret-in-args 0".to_string(),
                format!("token {token}"),
            ],
            "rank {r}: {}",
            out.both()
        );
    }
}

#[test]
fn the_hello_example_runs_over_ssh() {
    let Some((_g, s)) = sshd() else { return };
    let out = run_limited(s.run(5, &s.ssh(), &example_bin("hello"), &[]), LIMIT);
    assert!(out.status.success(), "{}", out.both());
    // hello passes a token around the ring, each node adding its rank.
    let mut token = 0;
    for r in 0..5 {
        let before = token;
        token += r;
        let want = format!("hello from node {r} of 5: token {before} -> {token}");
        assert!(
            lines_of(&out.stdout, r).contains(&want),
            "{want}: {}",
            out.both()
        );
    }
    assert!(
        lines_of(&out.stdout, 0).contains(&"token after one lap: 10".to_string()),
        "{}",
        out.both()
    );
}

#[test]
fn a_host_ssh_cannot_reach_is_named() {
    let Some((_g, s)) = sshd() else { return };
    // The same command, to a port where nothing listens.
    let closed = TcpListener::bind(("0.0.0.0", 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let ssh = s
        .ssh()
        .replace(&format!("-p {}", port()), &format!("-p {closed}"));
    let out = run_limited(s.run(4, &ssh, &example_bin("faults"), &["ssh"]), LIMIT);
    assert!(!out.status.success(), "{}", out.both());
    let host = other_address().to_string();
    assert!(
        out.stderr
            .contains(&format!("rank 1 (on {host}) could not be started over ssh")),
        "{}",
        out.both()
    );
    // ssh's own message reaches the user with the rank's prefix.
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("[1] ssh:") && l.contains(&host)),
        "{}",
        out.both()
    );
}

/// `faults victim 1` on 4 ranks over the two hosts, ready.
fn victim_job(s: &Sshd) -> (std::process::Child, Vec<i32>, mpsc::Receiver<String>) {
    common::procs::victim_job(
        s.run(4, &s.ssh(), &example_bin("faults"), &["victim", "1"]),
        4,
        1,
        LIMIT,
    )
}

#[test]
fn a_remote_rank_killed_is_named_with_its_host_and_nothing_is_left() {
    let Some((_g, s)) = sshd() else { return };
    let (mut child, pids, _rx) = victim_job(&s);
    assert_eq!(pids.len(), 4);
    let (status, err) = common::procs::kill_and_wait(&mut child, pids[1], LIMIT);
    assert_eq!(status.code(), Some(128 + 9), "{err}");
    let host = other_address().to_string();
    assert!(
        err.contains(&format!(
            "rank 1 (on {host}) was killed by signal SIGKILL (9)"
        )),
        "{err}"
    );
    gone_within(&pids, Duration::from_secs(10));
}

#[test]
fn killing_the_launcher_stops_the_remote_ranks() {
    let Some((_g, s)) = sshd() else { return };
    let (mut child, pids, _rx) = victim_job(&s);
    // No chance to clean up: the local ranks die with their parent, the
    // remote ones when their ssh connection ends.
    child.kill().expect("killing the launcher");
    let _ = child.wait();
    gone_within(&pids, Duration::from_secs(15));
}

#[test]
fn the_rendezvous_listens_on_the_interface_that_reaches_the_remote_host() {
    let Some((_g, s)) = sshd() else { return };
    let out = run_limited(
        s.run(2, &s.ssh(), &example_bin("faults"), &["where"]),
        LIMIT,
    );
    assert!(out.status.success(), "{}", out.both());
    let host = IpAddr::V4(other_address());
    // The local rank listens where the remote one can reach it, not on
    // loopback; the remote rank uses its connection's own address.
    let r0 = lines_of(&out.stdout, 0);
    let r1 = lines_of(&out.stdout, 1);
    assert!(
        r0[0].starts_with(&format!("bind {host} rendezvous {host}:")),
        "{}",
        out.both()
    );
    assert!(
        r1[0].starts_with(&format!("bind  rendezvous {host}:")),
        "{}",
        out.both()
    );
}

/// `-x NAME=VALUE` and `-x NAME` give remote ranks variables that do not
/// travel otherwise (only `HYPERCOMM_*` does), and the local rank too.
#[test]
fn exported_variables_reach_remote_ranks() {
    let Some((_g, s)) = sshd() else { return };
    let script = format!(
        "echo x=$HC_X y=$HC_Y z=$HC_Z; exec {}",
        example_bin("hello").display()
    );
    let mut c = s.run_with(
        2,
        &s.ssh(),
        &["-x", "HC_X=one two", "-x", "HC_Y"],
        Path::new("sh"),
        &["-c", &script],
    );
    c.env("HC_Y", "it's").env("HC_Z", "local only");
    let out = run_limited(c, LIMIT);
    assert!(out.status.success(), "{}", out.both());
    assert_eq!(
        lines_of(&out.stdout, 0)[0],
        "x=one two y=it's z=local only",
        "{}",
        out.both()
    );
    assert_eq!(
        lines_of(&out.stdout, 1)[0],
        "x=one two y=it's z=",
        "{}",
        out.both()
    );
}
