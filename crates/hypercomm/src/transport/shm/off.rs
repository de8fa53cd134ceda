//! The shared-memory transport in a build without it: the `shm` feature is
//! off, or the system is not Linux (the segment is a `memfd`, waits are
//! futexes, peers are watched through pidfds). The kind still exists and
//! says how to get it; see `transport/off.rs`.

crate::transport::off::absent!(
    ShmEndpoint,
    if cfg!(target_os = "linux") {
        "this program was built without the shared-memory transport: enable the `shm` feature of hypercomm (on by default), or use --transport tcp"
    } else {
        "the shared-memory transport is Linux only: use --transport tcp (or threads) on this system"
    }
);

/// Environment variable naming the inherited descriptor of the segment
/// (unused in this build; the launcher's environment contract names it).
pub const SHM_FD: &str = "HYPERCOMM_SHM_FD";
