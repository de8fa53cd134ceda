//! `hypercomm run`: the launcher (like `mpirun`).

use clap::Args;
use hypercomm::launch::hosts::{expand_hosts, parse_hostfile};
use hypercomm::launch::job::{parse_timeout, run_job, JobSpec};
use hypercomm::TransportKind;
use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The long help of `hypercomm run`.
pub(crate) const LONG_ABOUT: &str = "Start N node processes of PROG (and optionally a host program), connect them into one job and forward their output.

Every process finds its rank with hypercomm::init(). Output lines are prefixed with `[rank] ` (`[host] ` for the host). When a process exits with a non-zero code, is killed by a signal, or aborts, the launcher names it and says why, stops the others (after a 2 s grace period: SIGTERM, then SIGKILL one second later) and exits non-zero: the rank's exit code, 128 + signal, 1 for an abort, 124 for --timeout. Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the whole job; the launcher then exits with 128 + that signal (130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP). Standard input goes to the host program, or to rank 0 without one (a process started over ssh reads none).";

/// Start N node processes of PROG (and optionally a host program),
/// connect them into one job and forward their output.
///
/// Every process finds its rank with `hypercomm::init()`. Output lines are
/// prefixed with `[rank] ` (`[host] ` for the host). When a process exits
/// with a non-zero code, is killed by a signal, or aborts, the launcher
/// names it and says why, stops the others (after a 2 s grace period:
/// SIGTERM, then SIGKILL one second later) and exits non-zero (the rank's
/// exit code, 128 + signal, 1 for an abort, 124 for --timeout). Ctrl-C,
/// SIGTERM and SIGHUP stop the whole job, and the launcher exits with 128 +
/// that signal (130 after Ctrl-C).
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  hypercomm run -n 4 target/release/examples/hello\n  hypercomm run -n 8 --host ./host_prog --transport tcp ./node_prog input.dat\n  hypercomm run -n 2 --hosts 127.0.0.2,127.0.0.3 ./prog\n  hypercomm run -n 8 --hosts node1,node2 --ssh \"ssh -p 2222\" $PWD/prog"
)]
pub(crate) struct RunArgs {
    /// Number of node processes (ranks 0..N); `-np N`, as for mpirun,
    /// works too.
    #[arg(short = 'n', long = "np", value_name = "N")]
    nodes: usize,

    /// Also start a host program (rank `host`, PICL's host process). Its
    /// arguments follow it up to `--`, dashes and all, e.g. `--host ./h
    /// --nx 9 -- ./node --nx 9`; without `--`, up to the next option
    /// (`--host ./h -n 4 ./node`).
    #[arg(long, value_name = "PROG", num_args = 1.., allow_hyphen_values = true, value_terminator = "--")]
    host: Option<Vec<OsString>>,

    /// Transport between the processes: `shm` (shared memory, one
    /// machine; the default) or `tcp` (the default with --hosts or
    /// --hostfile, and the one to use across machines).
    #[arg(long, value_enum)]
    transport: Option<TransportKind>,

    /// Comma-separated hosts (names or addresses) the ranks run on,
    /// round-robin; `HOST:N` gives a host N slots (N consecutive ranks, as
    /// `mpirun --host`), and the list starts again when the ranks outnumber
    /// the slots. This machine's (a loopback address, `localhost`, its
    /// own name) start here and listen on that address; any other host is
    /// reached over ssh (see --ssh), with the program at the same path and
    /// the same working directory when it exists there. Default: every
    /// rank here, on loopback.
    #[arg(
        short = 'H',
        long,
        value_name = "A,B,...",
        value_delimiter = ',',
        conflicts_with = "hostfile"
    )]
    hosts: Vec<String>,

    /// A file of hosts, one per line (`#` starts a comment), each with an
    /// optional slot count in Open MPI's form (`node1 slots=4`) or MPICH's
    /// (`node1:4`); same meaning as --hosts. `-f` and `--machinefile` are
    /// MPICH's names for it.
    #[arg(short = 'f', long, visible_alias = "machinefile", value_name = "FILE")]
    hostfile: Option<PathBuf>,

    /// The command that reaches a remote host, split on white space (the
    /// host and the remote command are appended), e.g.
    /// `--ssh "ssh -p 2222 -i ~/.ssh/cluster"`. Default: $HYPERCOMM_SSH,
    /// else `ssh`. The job's secret goes to its standard input, never on a
    /// command line.
    #[arg(long, value_name = "CMD")]
    ssh: Option<String>,

    /// The address the launcher's rendezvous (and this machine's ranks in
    /// a job with remote hosts) listen on: an interface's IP that the other
    /// hosts reach. Default: loopback; the first of --hosts when all are
    /// this machine; the interface that routes to the first remote host.
    #[arg(long, value_name = "IP")]
    interface: Option<IpAddr>,

    /// Stop the whole job if it runs longer than S seconds (exit code 124).
    /// Per-operation timeouts are set with HYPERCOMM_TIMEOUT, which the
    /// processes inherit.
    #[arg(long, value_name = "S", value_parser = parse_timeout)]
    timeout: Option<Duration>,

    /// Give every rank the environment variable NAME: `-x NAME=VALUE`, or
    /// `-x NAME` for this shell's value (as mpirun's -x); repeatable. Ranks
    /// on this machine inherit the launcher's environment anyway; to ranks
    /// started over ssh only HYPERCOMM_* variables and these travel.
    #[arg(short = 'x', value_name = "NAME[=VALUE]")]
    export: Vec<String>,

    /// Do not prefix output lines with the rank.
    #[arg(long)]
    no_prefix: bool,

    /// The node program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROG ARGS"
    )]
    program: Vec<OsString>,
}

pub(crate) fn main(a: RunArgs) -> Result<i32, String> {
    let mut names = expand_hosts(&a.hosts)?;
    if let Some(f) = &a.hostfile {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        names.extend(parse_hostfile(&text).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    let transport = a.transport.unwrap_or(if names.is_empty() {
        TransportKind::Shm
    } else {
        TransportKind::Tcp
    });
    let mut spec = JobSpec::new(a.nodes, a.program);
    if let Some(h) = a.host.as_ref().and_then(|v| v.first()) {
        if !program_exists(h) {
            return Err(format!(
                "--host {}: no such program. --host starts a host program (PICL's host process); the machines the ranks run on are --hosts (or -H, as mpirun's --host)",
                h.to_string_lossy()
            ));
        }
    }
    spec.host_program = a.host;
    spec.transport = transport;
    spec.hosts = names;
    spec.ssh = hypercomm::launch::ssh::ssh_command(a.ssh.as_deref());
    spec.listen = a.interface;
    spec.timeout = a.timeout;
    spec.prefix = !a.no_prefix;
    spec.stdin = true;
    spec.env = exports(&a.export)?;
    let out = run_job(&spec).map_err(|e| e.to_string())?;
    Ok(out.code)
}

/// The variables the launcher gives each process itself: `-x` cannot
/// replace them (a rank told another's place fails to join).
const LAUNCHER_SETS: [&str; 9] = {
    use hypercomm::launch::env::*;
    [
        RANK, NODES, HOST, TRANSPORT, RENDEZVOUS, SECRET, JOB, BIND, SHM_FD,
    ]
};

/// The variables of `-x NAME=VALUE` and `-x NAME` (this environment's
/// value; an error when it has none).
fn exports(given: &[String]) -> Result<Vec<(OsString, OsString)>, String> {
    given
        .iter()
        .map(|x| {
            let (name, value) = match x.split_once('=') {
                Some((n, v)) => (n, Some(OsString::from(v))),
                None => (x.as_str(), None),
            };
            let bad = name.is_empty()
                || name.starts_with(|c: char| c.is_ascii_digit())
                || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
            if bad {
                return Err(format!(
                    "-x {x}: `{name}` is not a variable name (letters, digits and _, not starting with a digit)"
                ));
            }
            if LAUNCHER_SETS.contains(&name) {
                return Err(format!(
                    "-x {x}: {name} is set by the launcher for each process (its part in the job) and cannot be given"
                ));
            }
            let value = match value {
                Some(v) => v,
                None => std::env::var_os(name)
                    .ok_or_else(|| format!("-x {name}: not set here (give -x {name}=VALUE)"))?,
            };
            Ok((OsString::from(name), value))
        })
        .collect()
}

/// Whether `prog` names a program that can be started: a path that exists,
/// or a bare name found on `PATH`.
fn program_exists(prog: &std::ffi::OsStr) -> bool {
    let p = std::path::Path::new(prog);
    if p.components().count() > 1 || p.is_absolute() {
        return p.exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
}
