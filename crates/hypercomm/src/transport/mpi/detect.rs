//! Whether an MPI launcher started this process (with or without the
//! `mpi` feature: a program built without it says so instead of running
//! as a world of one).

/// Variables an MPI launcher sets in every process it starts: Open MPI's,
/// PMIx's (Open MPI 5, `srun --mpi=pmix`), PMI's (MPICH's Hydra, Intel
/// MPI, `srun --mpi=pmi2`), MVAPICH's.
pub const LAUNCH_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMIX_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALNRANKS",
    "MV2_COMM_WORLD_SIZE",
];

/// Whether an MPI launcher started this process (one of [`LAUNCH_VARS`]
/// is set).
pub fn started_by_mpi() -> bool {
    LAUNCH_VARS.iter().any(|v| std::env::var_os(v).is_some())
}

/// This process's rank in the job, as the MPI launcher says it.
pub fn mpi_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "MV2_COMM_WORLD_RANK",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}
