//! The few system calls the transport needs, each behind a small safe
//! function: futex wait/wake on a shared word, `process_vm_readv`, and
//! process liveness through a pidfd.
//!
//! rustix gives typed, safe wrappers for all but one of them (memfd, mmap,
//! futex, pidfd, poll, prctl); `process_vm_readv` is not in rustix, so it
//! comes from libc.
//!
//! Not done yet: a fallback liveness check for kernels without pidfds
//! (before Linux 5.3), where every peer then looks alive until its state word
//! says otherwise.

use rustix::event::{poll, PollFd, PollFlags};
use rustix::process::{pidfd_open, Pid, PidfdFlags};
use rustix::thread::futex;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Block while `*w == val`, at most `timeout` (shared, not private futex:
/// the word lives in memory shared between processes).
pub(super) fn futex_wait(w: &AtomicU32, val: u32, timeout: Duration) {
    let ts = futex::Timespec {
        tv_sec: timeout.as_secs() as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // EAGAIN (value changed), ETIMEDOUT and EINTR all mean "look again".
    let _ = futex::wait(w, futex::Flags::empty(), val, Some(&ts));
}

/// Wake every process blocked on `w`.
pub(super) fn futex_wake(w: &AtomicU32) {
    let _ = futex::wake(w, futex::Flags::empty(), i32::MAX as u32);
}

/// Copy `dst.len()` bytes from address `addr` of process `pid` into `dst`.
pub(super) fn read_remote(pid: i32, addr: usize, dst: &mut [u8]) -> io::Result<()> {
    /// Bytes per system call: big enough to amortise it, small enough that a
    /// long copy notices a failure or abort between chunks.
    const CHUNK: usize = 8 << 20;
    let mut done = 0;
    while done < dst.len() {
        let n = (dst.len() - done).min(CHUNK);
        let local = libc::iovec {
            iov_base: dst[done..].as_mut_ptr().cast(),
            iov_len: n,
        };
        let remote = libc::iovec {
            iov_base: (addr + done) as *mut libc::c_void,
            iov_len: n,
        };
        // SAFETY: `local` describes `n` writable bytes of `dst`, which we
        // borrow mutably; the remote range is validated by the kernel (a bad
        // address gives EFAULT, never a write outside `local`).
        let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "process_vm_readv read nothing",
            ));
        }
        done += r as usize;
    }
    Ok(())
}

/// Whether `process_vm_readv` works here (not blocked by seccomp or missing),
/// and allow peers that are not our ancestors to use it on us (Yama).
pub(super) fn enable_cma() -> bool {
    // Harmless where Yama is absent (EINVAL).
    let _ = rustix::process::set_ptracer(rustix::process::PTracer::Any);
    cma_works()
}

/// Whether `process_vm_readv` works here, tried on this process (which
/// needs no permission), without opening this process to others.
pub(super) fn cma_works() -> bool {
    let src = [0x5au8; 64];
    let mut dst = [0u8; 64];
    let ok = read_remote(
        rustix::process::getpid().as_raw_nonzero().get(),
        src.as_ptr() as usize,
        &mut dst,
    )
    .is_ok();
    ok && dst == src
}

/// A handle on a process to test whether it has ended.
pub(super) fn pidfd(pid: u32) -> io::Result<OwnedFd> {
    let pid = Pid::from_raw(pid as i32)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "pid 0"))?;
    Ok(pidfd_open(pid, PidfdFlags::empty())?)
}

/// Has the process behind `fd` ended (also: a zombie not yet reaped)?
pub(super) fn exited(fd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

/// Has process `pid` ended (opens a pidfd each time: for rare paths)?
pub(super) fn pid_exited(pid: u32) -> bool {
    match pidfd(pid) {
        Ok(fd) => exited(&fd),
        Err(e) => e.raw_os_error() == Some(libc::ESRCH),
    }
}

/// A coarse monotonic clock in nanoseconds (`CLOCK_MONOTONIC_COARSE`: the
/// kernel's last tick, a few milliseconds old at most). It is read from
/// memory without touching the time-stamp counter, several times cheaper
/// than `Instant::now`; good enough to rate-limit liveness checks.
pub(super) fn coarse_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the call cannot fail for this clock.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
