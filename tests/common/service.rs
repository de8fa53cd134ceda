//! A system service a test binary needs (sshd, a Slurm cluster), started
//! once by a script in `tests/scripts/` for the whole test binary and
//! stopped when the binary exits, whatever happens in the tests.
//!
//! The script takes `start DIR ARGS...` and `stop DIR`; everything the
//! service keeps lives in DIR, a fresh temporary directory. The tests of
//! the binary take turns (the returned guard), so jobs do not overlap.
//!
//! Services need root and Debian packages; `.ci/run` installs them and sets
//! the spec's `require` variable, which turns their absence into a failure.
//! Elsewhere the tests say they are skipped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// What a service needs and how to start it.
pub(crate) struct ServiceSpec {
    /// The name in messages and in the directory's name.
    pub(crate) name: &'static str,
    /// The script, relative to `tests/scripts/`.
    pub(crate) script: &'static str,
    /// Programs that must be installed (found on `PATH` or in `/usr/sbin`).
    pub(crate) programs: &'static [&'static str],
    /// How to install them, for the message when they are missing.
    pub(crate) install: &'static str,
    /// The variable that makes a missing service a failure.
    pub(crate) require: &'static str,
    /// Arguments after `start DIR`.
    pub(crate) args: fn() -> Vec<OsString>,
}

/// A started service.
pub(crate) struct Service {
    /// Its directory.
    pub(crate) dir: PathBuf,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/scripts")
        .join(name)
}

/// Stops the service when the test process ends.
struct Stop {
    script: PathBuf,
    dir: PathBuf,
}

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .arg("stop")
            .arg(&self.dir)
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static STOP: Mutex<Option<Stop>> = Mutex::new(None);

extern "C" fn stop_at_exit() {
    if let Ok(mut s) = STOP.lock() {
        s.take();
    }
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args([
            "-c",
            &format!("command -v {program} || test -x /usr/sbin/{program}"),
        ])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn start(spec: &ServiceSpec) -> Result<Service, String> {
    let missing: Vec<&str> = spec
        .programs
        .iter()
        .copied()
        .filter(|p| !installed(p))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} not installed ({})",
            missing.join(", "),
            spec.install
        ));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!("a test {} needs root", spec.name));
    }
    let dir = std::env::temp_dir().join(format!("hypercomm-{}-{}", spec.name, std::process::id()));
    let s = script(spec.script);
    let out = Command::new(&s)
        .arg("start")
        .arg(&dir)
        .args((spec.args)())
        .output()
        .map_err(|e| format!("running {}: {e}", s.display()))?;
    // Stopped when the test binary exits, whatever happens in the tests.
    *STOP.lock().unwrap_or_else(|p| p.into_inner()) = Some(Stop {
        script: s,
        dir: dir.clone(),
    });
    // SAFETY: registers a plain extern "C" function with no arguments.
    unsafe { libc::atexit(stop_at_exit) };
    if !out.status.success() {
        return Err(format!(
            "the test {} did not start:\n{}{}",
            spec.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Service { dir })
}

/// Start the service once per test binary (or say why not); every test
/// holds the returned guard while it uses the service. `None`: skipped.
pub(crate) fn service(spec: &ServiceSpec) -> Option<(MutexGuard<'static, ()>, &'static Service)> {
    static ONE: Mutex<()> = Mutex::new(());
    static S: OnceLock<Result<Service, String>> = OnceLock::new();
    let guard = ONE.lock().unwrap_or_else(|p| p.into_inner());
    match S.get_or_init(|| start(spec)) {
        Ok(s) => Some((guard, s)),
        Err(why) => {
            if std::env::var_os(spec.require).is_some() {
                panic!("{why}");
            }
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}
