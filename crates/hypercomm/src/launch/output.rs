//! Forwarding the processes' output to the launcher's own stdout and
//! stderr, line by line, each line labelled with its rank.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Lines forwarded so far, by every forwarder of this process.
static FORWARDED: AtomicU64 = AtomicU64::new(0);
/// Forwarders writing a line right now (a slow reader of our output may
/// hold them there).
static WRITING: AtomicUsize = AtomicUsize::new(0);

/// How long [`join`] waits for a pipe that has nothing more to read.
const IDLE: Duration = Duration::from_millis(500);

/// Wait for the forwarders of processes that have all ended. What their
/// pipes still hold is read at once; a pipe that stays open and silent
/// [`IDLE`] longer is held by a process they left behind (`sh -c 'daemon
/// & exit 3'`), and its forwarder is left to it: the job is over, and the
/// launcher must not wait for that process (Ctrl-C, `--timeout` and a
/// failing rank would otherwise hang it).
pub(crate) fn join(handles: Vec<JoinHandle<()>>) {
    let mut seen = FORWARDED.load(Ordering::SeqCst);
    let mut quiet_since = Instant::now();
    while handles.iter().any(|h| !h.is_finished()) {
        let now = FORWARDED.load(Ordering::SeqCst);
        if now != seen || WRITING.load(Ordering::SeqCst) > 0 {
            seen = now;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= IDLE {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for h in handles.into_iter().filter(|h| h.is_finished()) {
        let _ = h.join();
    }
}

/// How the lines of one stream are labelled.
#[derive(Debug, Clone)]
pub(crate) enum Label {
    /// Every line gets this prefix (`[3] `, `[host] `), or none.
    Fixed(Option<String>),
    /// The lines come from an MPI launcher that tags them with the rank
    /// (Open MPI's `--tag-output`: `[1,3]<stdout>:`, MPICH's
    /// `-prepend-rank`: `[3] `); they are relabelled `[3] ` (or stripped
    /// when `prefix` is false); the rank `host`, if given, is the host's
    /// (`[host] `).
    MpiTags { prefix: bool, host: Option<usize> },
}

impl Label {
    /// `tag` when `prefix`, else nothing.
    pub(crate) fn fixed(prefix: bool, tag: &str) -> Label {
        Label::Fixed(prefix.then(|| tag.to_string()))
    }

    /// The line as it should appear.
    fn apply(&self, line: &[u8]) -> Vec<u8> {
        match self {
            Label::Fixed(None) => line.to_vec(),
            Label::Fixed(Some(p)) => [p.as_bytes(), line].concat(),
            Label::MpiTags { prefix, host } => match mpi_tag(line) {
                Some((rank, rest)) if *prefix && *host == Some(rank) => {
                    [b"[host] ".as_slice(), rest].concat()
                }
                Some((rank, rest)) if *prefix => [format!("[{rank}] ").as_bytes(), rest].concat(),
                Some((_, rest)) => rest.to_vec(),
                None => line.to_vec(),
            },
        }
    }
}

/// The rank and the rest of a line tagged by an MPI launcher.
pub(crate) fn mpi_tag(line: &[u8]) -> Option<(usize, &[u8])> {
    let rest = line.strip_prefix(b"[")?;
    let close = rest.iter().position(|&b| b == b']')?;
    let inside = std::str::from_utf8(&rest[..close]).ok()?;
    let after = &rest[close + 1..];
    // Open MPI: "[job,rank]<stdout>:" or "<stderr>:" (a space may follow).
    if let Some((_, rank)) = inside.split_once(',') {
        let rank: usize = rank.trim().parse().ok()?;
        let tail = after
            .strip_prefix(b"<stdout>:")
            .or_else(|| after.strip_prefix(b"<stderr>:"))?;
        return Some((rank, tail.strip_prefix(b" ").unwrap_or(tail)));
    }
    // MPICH: "[rank] ".
    let rank: usize = inside.trim().parse().ok()?;
    Some((rank, after.strip_prefix(b" ").unwrap_or(after)))
}

/// The rank and signal of Open MPI's report of a rank killed by a signal:
/// "mpirun noticed that process rank 2 with PID 0 on node vm exited on
/// signal 9 (Killed)."
pub(crate) fn killed_rank(line: &str) -> Option<(usize, i32)> {
    let rest = line.split_once("noticed that process rank ")?.1;
    let (rank, rest) = rest.split_once(' ')?;
    let sig = rest.split_once("exited on signal ")?.1;
    let sig = sig.split(|c: char| !c.is_ascii_digit()).next()?;
    Some((rank.parse().ok()?, sig.parse().ok()?))
}

/// Copy `r` to our stdout (or stderr) line by line, labelled.
pub(crate) fn forward(
    r: impl Read + Send + 'static,
    label: Label,
    to_stderr: bool,
) -> std::thread::JoinHandle<()> {
    forward_watched(r, label, to_stderr, None)
}

/// [`forward`], telling `events` what the starter says of killed ranks.
pub(crate) fn forward_watched(
    r: impl Read + Send + 'static,
    label: Label,
    to_stderr: bool,
    events: Option<std::sync::mpsc::Sender<super::monitor::Event>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            if let Some(tx) = &events {
                if let Some((ep, signal)) = killed_rank(&String::from_utf8_lossy(&line)) {
                    let _ = tx.send(super::monitor::Event::StarterSaid { ep, signal });
                }
            }
            let out = label.apply(&line);
            WRITING.fetch_add(1, Ordering::SeqCst);
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(&out)
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(&out).and_then(|_| o.flush())
            };
            WRITING.fetch_sub(1, Ordering::SeqCst);
            FORWARDED.fetch_add(1, Ordering::SeqCst);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_names_the_killed_rank() {
        assert_eq!(
            killed_rank("mpirun.openmpi noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed)."),
            Some((2, 9))
        );
        assert_eq!(
            killed_rank("mpirun noticed that process rank 13 with PID 4242 on node n01 exited on signal 11 (Segmentation fault)."),
            Some((13, 11))
        );
        assert_eq!(killed_rank("[1,2]<stdout>:rank 2 exited on signal"), None);
    }

    #[test]
    fn mpi_tags_become_our_labels() {
        let l = Label::MpiTags {
            prefix: true,
            host: Some(4),
        };
        assert_eq!(l.apply(b"[1,3]<stdout>:hello\n"), b"[3] hello\n");
        assert_eq!(l.apply(b"[1,12]<stderr>: oops\n"), b"[12] oops\n");
        assert_eq!(l.apply(b"[2] from mpich\n"), b"[2] from mpich\n");
        // mpirun's own lines pass unchanged.
        assert_eq!(l.apply(b"mpirun noticed\n"), b"mpirun noticed\n");
        assert_eq!(l.apply(b"[host] x\n"), b"[host] x\n");
        // The last rank of a job with a host is the host.
        assert_eq!(l.apply(b"[1,4]<stdout>:sum 10\n"), b"[host] sum 10\n");
        let bare = Label::MpiTags {
            prefix: false,
            host: None,
        };
        assert_eq!(bare.apply(b"[1,3]<stdout>:hello\n"), b"hello\n");
    }
}
