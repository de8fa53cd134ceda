//! Forwarding the processes' output to the launcher's own stdout and
//! stderr, line by line, each line labelled with its rank.

use std::io::{BufRead, BufReader, Read, Write};

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

/// Copy `r` to our stdout (or stderr) line by line, labelled.
pub(crate) fn forward(
    r: impl Read + Send + 'static,
    label: Label,
    to_stderr: bool,
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
            let out = label.apply(&line);
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(&out)
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(&out).and_then(|_| o.flush())
            };
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
