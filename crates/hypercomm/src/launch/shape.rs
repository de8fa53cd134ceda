//! What a process can learn of its job before joining it: how many nodes,
//! and whether one more process is the host. [`job_shape`] reads it from
//! the starter's environment, so that one program can take its rank count
//! from the job when launched and from its arguments when not.

/// The shape of a launched job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobShape {
    /// Node processes (ranks `0..nodes`).
    pub nodes: usize,
    /// Whether one more process is the host.
    pub host: bool,
    /// What started the job: `"hypercomm run"`, `"mpirun"` or `"srun"`.
    pub started_by: &'static str,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn count(name: &str) -> Option<usize> {
    var(name)?.trim().parse().ok()
}

/// The shape of the job a launcher started this process in — `hypercomm
/// run` (its `-n` and `--host`), `mpirun` or `srun` (their process count;
/// with `HYPERCOMM_HOST=1` the last process is the host) — or `None` when
/// no launcher started it. What [`run`](fn@crate::run) and
/// [`run_with_host`](crate::run_with_host) join must have this shape:
///
/// ```
/// // The node count: the job's when launched, else our own choice.
/// let n = hypercomm::job_shape().map_or(4, |s| s.nodes);
/// let ranks = hypercomm::run(n, |comm| Ok::<_, hypercomm::Error>(comm.rank()))?;
/// # assert_eq!(ranks, vec![0, 1, 2, 3]);
/// # Ok::<(), hypercomm::Error>(())
/// ```
pub fn job_shape() -> Option<JobShape> {
    let host_var = var("HYPERCOMM_HOST").is_some_and(|v| v.trim() == "1");
    if var("HYPERCOMM_RENDEZVOUS").is_some() {
        return Some(JobShape {
            nodes: count("HYPERCOMM_NODES")?,
            host: host_var,
            started_by: "hypercomm run",
        });
    }
    let shaped = |total: usize, started_by| JobShape {
        nodes: total.saturating_sub(usize::from(host_var)),
        host: host_var && total > 1,
        started_by,
    };
    if crate::transport::mpi::started_by_mpi() {
        let total = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"]
            .iter()
            .find_map(|v| count(v))
            .or_else(|| count("SLURM_NTASKS"))?;
        return Some(shaped(total, "mpirun"));
    }
    let slurm_off = var("HYPERCOMM_NO_SLURM").is_some_and(|v| v.trim() != "0");
    if !slurm_off && var("SLURM_PROCID").is_some() {
        let total = count("SLURM_NTASKS").or_else(|| count("SLURM_NPROCS"))?;
        return Some(shaped(total, "srun"));
    }
    None
}
