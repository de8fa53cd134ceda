//! `hypercomm run --transport mpi`: the site's `mpirun` starts the ranks,
//! and the launcher keeps its own part of the job.
//!
//! The launcher opens its rendezvous as for any job and runs
//!
//! ```text
//! mpirun -n N [--oversubscribe] --tag-output -x HYPERCOMM_… PROG ARGS    (Open MPI)
//! mpirun -n N -prepend-rank PROG ARGS                                     (MPICH)
//! ```
//!
//! with the environment contract minus `HYPERCOMM_RANK` (each rank's MPI
//! rank is its endpoint). Every rank joins MPI for its messages and the
//! rendezvous for the rest: it reports results, aborts and its finish
//! there, and hears of the others' deaths, so failures are named as on
//! every other transport, and [`crate::launch::Processes`] and
//! `hypercomm bench` run over MPI too. The MPI launcher's tags become our
//! `[rank]` prefixes. Which `mpirun` runs: `HYPERCOMM_MPIRUN`, else the
//! one on `PATH`; which kind it is comes from its `--version`.
//!
//! A host program (`--host`) is a second application context of one
//! process, the job's last MPI rank.
//!
//! Not done yet: `--hosts` is handed to `mpirun` (`--host` / `-hosts`), whose mapping
//! then applies.

use super::env;
use super::job::{JobSpec, JobVars};
use super::monitor::Event;
use super::output::{self, Label};
use crate::error::{Error, Result};
use crate::transport::tcp::auth::to_hex;
use std::ffi::OsString;
#[cfg(target_os = "linux")]
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;

/// The variable naming the `mpirun` to use.
pub const MPIRUN_VAR: &str = "HYPERCOMM_MPIRUN";

/// Which MPI's launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// Open MPI (`mpirun (Open MPI) 4.1.4`).
    OpenMpi,
    /// MPICH's Hydra, and the launchers derived from it.
    Mpich,
}

/// The `mpirun` to run.
pub(crate) fn program() -> String {
    std::env::var(MPIRUN_VAR)
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "mpirun".into())
}

fn launch_err(what: String) -> Error {
    Error::InvalidArgument {
        op: "hypercomm run --transport mpi",
        what,
    }
}

/// Ask `prog --version` which MPI it belongs to.
pub(crate) fn flavour(prog: &str) -> Result<Flavour> {
    let out = Command::new(prog).arg("--version").output().map_err(|e| {
        launch_err(format!(
            "cannot run `{prog}` ({e}): install an MPI (Debian/Ubuntu: apt-get install openmpi-bin, or mpich) or name its launcher with {MPIRUN_VAR}"
        ))
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lower = text.to_lowercase();
    if lower.contains("open mpi") || lower.contains("open-mpi") || lower.contains("openrte") {
        Ok(Flavour::OpenMpi)
    } else if lower.contains("hydra") || lower.contains("mpich") {
        Ok(Flavour::Mpich)
    } else {
        Err(launch_err(format!(
            "`{prog} --version` names neither Open MPI nor MPICH: {}",
            text.lines().next().unwrap_or("").trim()
        )))
    }
}

/// The command line: `mpirun` and its global options, then the nodes'
/// program (`-n NODES PROG ARGS`) and, for a job with a host, a second
/// application context of one process (`: -n 1 HOSTPROG ARGS`), which
/// makes it the last rank.
pub(crate) fn command(prog: &str, fl: Flavour, spec: &JobSpec, forwarded: &[OsString]) -> Command {
    let mut c = Command::new(prog);
    let total = spec.nodes + usize::from(spec.host_program.is_some());
    match fl {
        Flavour::OpenMpi => {
            if total > crate::transport::cores() && spec.hosts.is_empty() {
                c.arg("--oversubscribe");
            }
            c.arg("--tag-output");
            if !spec.hosts.is_empty() {
                c.arg("--host").arg(spec.hosts.join(","));
            }
        }
        Flavour::Mpich => {
            // Hydra passes the whole environment on by default.
            c.arg("-prepend-rank");
            if !spec.hosts.is_empty() {
                c.arg("-hosts").arg(spec.hosts.join(","));
            }
        }
    }
    let context = |c: &mut Command, n: usize, program: &[OsString]| {
        c.arg("-n").arg(n.to_string());
        if fl == Flavour::OpenMpi {
            for v in forwarded {
                c.arg("-x").arg(v);
            }
        }
        c.args(program);
    };
    context(&mut c, spec.nodes, &spec.program);
    if let Some(h) = &spec.host_program {
        c.arg(":");
        context(&mut c, 1, h);
    }
    c
}

/// Start the job's ranks with `mpirun`; its output is forwarded with rank
/// labels, and its end reported on `events`. Returns its pid and the
/// forwarding threads.
pub(crate) fn start(
    spec: &JobSpec,
    vars: &JobVars,
    events: &Sender<Event>,
) -> Result<(String, u32, Vec<std::thread::JoinHandle<()>>)> {
    let prog = program();
    let fl = flavour(&prog)?;
    let contract: Vec<(OsString, OsString)> = vec![
        (env::NODES.into(), vars.nodes.to_string().into()),
        (env::HOST.into(), if vars.host { "1" } else { "0" }.into()),
        (env::TRANSPORT.into(), vars.transport.name().into()),
        (env::RENDEZVOUS.into(), vars.rendezvous.to_string().into()),
        (env::SECRET.into(), to_hex(&vars.secret).into()),
        (env::JOB.into(), vars.job.clone().into()),
    ];
    let mut forwarded: Vec<OsString> = contract.iter().map(|(k, _)| k.clone()).collect();
    forwarded.extend(vars.env.iter().map(|(k, _)| k.clone()));
    let mut cmd = command(&prog, fl, spec, &forwarded);
    cmd.env_remove(env::RANK)
        .env_remove(env::BIND)
        .env_remove(env::SHM_FD)
        .envs(contract)
        .envs(vars.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs between fork and exec and only calls prctl.
    #[cfg(target_os = "linux")]
    unsafe {
        cmd.pre_exec(|| {
            // Die with the launcher; mpirun then ends its ranks.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| launch_err(format!("starting `{prog}`: {e}")))?;
    let pid = child.id();
    let label = Label::MpiTags {
        prefix: spec.prefix,
        host: vars.host.then_some(spec.nodes),
    };
    let mut fw = Vec::new();
    if let Some(o) = child.stdout.take() {
        fw.push(output::forward(o, label.clone(), false));
    }
    let err_fw = child
        .stderr
        .take()
        .map(|e| output::forward_watched(e, label, true, Some(events.clone())));
    let tx = events.clone();
    fw.push(std::thread::spawn(move || {
        if let Ok(status) = child.wait() {
            // What mpirun said last (which rank died how) before its end:
            // its stderr ends with it, or soon after.
            if let Some(h) = err_fw {
                let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
                while !h.is_finished() && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                if h.is_finished() {
                    let _ = h.join();
                }
            }
            let _ = tx.send(Event::StarterExited { status });
        }
    }));
    Ok((prog, pid, fw))
}
