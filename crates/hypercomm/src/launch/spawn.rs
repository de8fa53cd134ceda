//! [`spawn`]: PICL's `open0` + `load0`, a host program starting its own
//! nodes (TCP on loopback) and running the launcher's machinery itself.

use super::join::{connect_rendezvous, io_err, join_job, JoinSpec};
use super::{claim, job, monitor};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::transport::TransportKind;
use std::ffi::OsString;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Start `n` node processes running `program` with `args` and return a
/// communicator whose host is this process (PICL `open0` + `load0`). The
/// nodes call [`init`](crate::init); their output reaches this process's stdout/stderr
/// with `[rank]` prefixes. See the module docs.
pub fn spawn<S: AsRef<std::ffi::OsStr>>(
    n: usize,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[S],
) -> Result<Comm> {
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "spawn",
            what: "a job needs at least one node (n = 0)".into(),
        });
    }
    claim()?;
    let (secret, jobid) = job::new_identity()?;
    let rv = job::listen(
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        &secret,
        &jobid,
        n + 1,
    )?;
    let vars = job::JobVars {
        nodes: n,
        host: true,
        transport: TransportKind::Tcp,
        rendezvous: rv.addr,
        secret: secret.clone(),
        job: jobid.clone(),
        env: Vec::new(),
        inherit: Vec::new(),
        ssh: Vec::new(),
        // The host is this process: it keeps its standard input.
        stdin_to: None,
        own_groups: false,
    };
    let mut argv: Vec<OsString> = vec![program.as_ref().to_os_string()];
    argv.extend(args.iter().map(|a| a.as_ref().to_os_string()));
    let here = super::ssh::Place::Here { bind: None };
    let mut pids = vec![None; n + 1];
    let mut forwarders = Vec::new();
    for (ep, pid) in pids.iter_mut().enumerate().take(n) {
        let p = job::Proc {
            ep,
            argv: &argv,
            place: &here,
        };
        match job::start(&p, &vars, true, &rv.sender) {
            Ok((id, fw)) => {
                *pid = Some(id);
                forwarders.extend(fw);
            }
            Err(e) => {
                for id in pids.iter().flatten() {
                    monitor::kill(*id, libc::SIGKILL);
                }
                return Err(e);
            }
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let m = monitor::Monitor::new(monitor::MonitorSetup {
        nodes: n,
        host: true,
        pids: pids.clone(),
        remote: Vec::new(),
        starter: None,
        timeout: None,
        interrupted: None,
        stop: stop.clone(),
        verbose: true,
        transport: TransportKind::Tcp,
    });
    let events = rv.events;
    let handle = std::thread::Builder::new()
        .name("hypercomm-spawn-monitor".into())
        .spawn(move || m.run(&events))
        .map_err(|e| io_err("spawn", e))?;
    let bg = Arc::new(monitor::Background {
        stop,
        handle: Mutex::new(Some(handle)),
    });
    let after: Box<dyn FnOnce() + Send> = Box::new(move || {
        bg.finish();
        super::output::join(forwarders);
    });
    let joined = connect_rendezvous(&rv.addr.to_string(), &secret, &jobid, n).and_then(|ctl| {
        join_job(
            ctl,
            JoinSpec {
                kind: TransportKind::Tcp,
                endpoint: n,
                nodes: n,
                host: true,
                bind: None,
                secret: secret.clone(),
                job: jobid.clone(),
                after_finish: Some(after),
            },
        )
    });
    joined.inspect_err(|_| {
        for id in pids.iter().flatten() {
            monitor::kill(*id, libc::SIGKILL);
        }
    })
}
