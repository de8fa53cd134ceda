//! A one-node Slurm cluster for tests (munged, slurmctld, slurmd started by
//! `tests/scripts/slurm.sh` once per test binary and stopped after it).

use super::service::{service, Service, ServiceSpec};
use std::path::PathBuf;
use std::process::Command;
use std::sync::MutexGuard;

/// The running cluster: its directory (configuration, state, logs).
pub(crate) struct Cluster(&'static Service);

impl Cluster {
    pub(crate) fn conf(&self) -> PathBuf {
        self.0.dir.join("slurm.conf")
    }

    /// `srun --quiet --kill-on-bad-exit=1 ARGS` against this cluster.
    pub(crate) fn srun(&self, args: &[&str]) -> Command {
        let mut c = Command::new("srun");
        c.env("SLURM_CONF", self.conf())
            .env("HYPERCOMM_TIMEOUT", "30")
            .env_remove("HYPERCOMM_RANK")
            .args(["--quiet", "--kill-on-bad-exit=1"])
            .args(args);
        c
    }
}

const SLURM: ServiceSpec = ServiceSpec {
    name: "slurm",
    script: "slurm.sh",
    programs: &["srun", "slurmctld", "slurmd", "munged"],
    install: "apt-get install slurm-wlm munge",
    require: "HYPERCOMM_REQUIRE_SLURM",
    args: Vec::new,
};

/// The cluster (started once for this binary), or `None`: skipped.
pub(crate) fn cluster() -> Option<(MutexGuard<'static, ()>, Cluster)> {
    service(&SLURM).map(|(g, s)| (g, Cluster(s)))
}
