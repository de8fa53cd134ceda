//! Build script: with the `mpi` feature, compile the MPI transport's C shim
//! (`src/transport/mpi/shim.c`) against the system's `mpi.h` and link the
//! MPI library. The flags come from the MPI compiler wrapper — `mpicc`, or
//! the one named by `HYPERCOMM_MPICC` or `MPICC` — asked the way each MPI
//! answers: Open MPI's `-showme:compile` / `-showme:link`, MPICH's and
//! Intel MPI's `-compile_info` / `-link_info`, or `-show`. No bindings are
//! generated (no libclang). Without the feature it does nothing.
//!
//! It also sets `cfg(processes)`: jobs of processes (the launcher, spawn,
//! `run_processes`, Slurm, ssh) need the `tcp` feature, whose connections
//! carry the launcher's control channel, and a unix system (signals,
//! process groups, `fork`'s hooks). Elsewhere the TCP transport still
//! builds, for ranks as threads over loopback.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(processes)");
    if std::env::var_os("CARGO_FEATURE_TCP").is_some()
        && std::env::var_os("CARGO_CFG_UNIX").is_some()
    {
        println!("cargo::rustc-cfg=processes");
    }
    #[cfg(feature = "mpi")]
    mpi::build();
}

#[cfg(feature = "mpi")]
mod mpi {
    use std::process::Command;

    const SHIM: &str = "src/transport/mpi/shim.c";

    fn wrapper() -> String {
        for var in ["HYPERCOMM_MPICC", "MPICC"] {
            println!("cargo:rerun-if-env-changed={var}");
            if let Ok(v) = std::env::var(var) {
                if !v.trim().is_empty() {
                    return v.trim().to_string();
                }
            }
        }
        "mpicc".to_string()
    }

    fn ask(mpicc: &str, args: &[&str]) -> Option<String> {
        let out = Command::new(mpicc).args(args).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!s.is_empty()).then_some(s)
    }

    /// (compile flags, link flags) as words.
    fn flags(mpicc: &str) -> Result<(Vec<String>, Vec<String>), String> {
        let words = |s: String| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        if let (Some(c), Some(l)) = (
            ask(mpicc, &["-showme:compile"]),
            ask(mpicc, &["-showme:link"]),
        ) {
            return Ok((words(c), words(l)));
        }
        // These print the whole command: drop the compiler's name.
        let tail = |s: String| words(s).into_iter().skip(1).collect::<Vec<_>>();
        if let (Some(c), Some(l)) = (ask(mpicc, &["-compile_info"]), ask(mpicc, &["-link_info"])) {
            return Ok((tail(c), tail(l)));
        }
        if let Some(s) = ask(mpicc, &["-show"]) {
            let all = tail(s);
            return Ok((all.clone(), all));
        }
        Err(format!(
            "the `mpi` feature needs an MPI development package, and `{mpicc}` could not be run \
             or did not say its flags. Install one (Debian/Ubuntu: `apt-get install libopenmpi-dev` \
             or `apt-get install libmpich-dev`), or name the MPI compiler wrapper with \
             HYPERCOMM_MPICC=/path/to/mpicc."
        ))
    }

    pub(super) fn build() {
        println!("cargo:rerun-if-changed={SHIM}");
        let mpicc = wrapper();
        let (compile, link) = match flags(&mpicc) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let mut b = cc::Build::new();
        b.file(SHIM).warnings(true);
        for f in &compile {
            if let Some(dir) = f.strip_prefix("-I") {
                b.include(dir);
            } else if let Some(d) = f.strip_prefix("-D") {
                match d.split_once('=') {
                    Some((k, v)) => b.define(k, v),
                    None => b.define(d, None),
                };
            } else if f == "-pthread" {
                b.flag(f);
            }
        }
        b.compile("hypercomm_mpi_shim");
        for f in &link {
            if let Some(dir) = f.strip_prefix("-L") {
                // (Programs find the library where the system's loader
                // looks, or through LD_LIBRARY_PATH as a module system
                // sets it: a library's build script cannot add an rpath to
                // its users' programs.)
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(lib) = f.strip_prefix("-l") {
                println!("cargo:rustc-link-lib={lib}");
            }
        }
    }
}
