//! Host lists: `--hosts a,b:2` and hostfiles, with slot counts.
//!
//! A host given `N` slots takes `N` consecutive ranks before the next host
//! takes any (Open MPI's mapping by slot); a host without a count has one
//! slot. When the job has more ranks than slots, the list starts again from
//! its first host (as MPICH does; Open MPI would refuse). The result is the
//! list with every host repeated by its slot count, which the launcher
//! deals out round-robin, and which `mpirun --host` reads the same way.
//!
//! A hostfile has one host per line, `#` starting a comment, in Open MPI's
//! form (`node1 slots=4`, `max_slots=` accepted and ignored) or MPICH's
//! (`node1:4`).
//!
//! Not done yet: ranges of names (`node[1-4]`), per-host rank counts that
//! differ from slots (Open MPI's `--map-by`).

/// A slot count: a positive whole number no larger than [`MAX_SLOTS`].
const MAX_SLOTS: usize = 1 << 16;

fn slots(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_SLOTS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a slot count (a whole number from 1 to {MAX_SLOTS})"
        )),
    }
}

/// `host` or `host:N` (MPICH's and Open MPI's `--host` form): the host and
/// its slots when counted. An address with more than one colon (IPv6) has
/// no count.
fn host_and_slots(entry: &str) -> Result<(&str, Option<usize>), String> {
    match entry.split_once(':') {
        Some((host, n)) if !n.contains(':') => {
            if host.is_empty() {
                return Err(format!("`{entry}` names no host"));
            }
            Ok((host, Some(slots(n)?)))
        }
        _ => Ok((entry, None)),
    }
}

fn repeat(out: &mut Vec<String>, host: &str, n: usize) {
    out.extend(std::iter::repeat_n(host.to_string(), n));
}

/// The hosts of `--hosts` entries (`host` or `host:N`), each repeated by
/// its slot count; blank entries are skipped, but entries that name no
/// host at all (`--hosts ,`) are an error, as an empty hostfile is.
pub fn expand_hosts(entries: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for e in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let (host, n) = host_and_slots(e).map_err(|m| format!("--hosts: {m}"))?;
        repeat(&mut out, host, n.unwrap_or(1));
    }
    if out.is_empty() && !entries.is_empty() {
        return Err(format!("--hosts {:?} names no host", entries.join(",")));
    }
    Ok(out)
}

/// The hosts of a hostfile's text, each repeated by its slot count. The
/// error names the line (from 1) and what was wrong with it; a file that
/// names no host is an error too.
pub fn parse_hostfile(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        let at = |m: String| format!("line {}: {m}", i + 1);
        let (host, mut n) = host_and_slots(first).map_err(at)?;
        for w in words {
            match w.split_once('=') {
                Some(("slots", v)) if n.is_none() => {
                    n = Some(slots(v).map_err(|m| at(format!("slots={v}: {m}")))?);
                }
                Some(("slots", _)) => {
                    return Err(at(format!("`{w}`: {host}'s slots are given twice")));
                }
                Some(("max_slots", v)) => {
                    slots(v).map_err(|m| at(format!("max_slots={v}: {m}")))?;
                }
                _ => {
                    return Err(at(format!(
                        "`{w}` after {host}: expected `slots=N` (or `max_slots=N`)"
                    )))
                }
            }
        }
        repeat(&mut out, host, n.unwrap_or(1));
    }
    if out.is_empty() {
        return Err("names no host (one per line, `#` starts a comment)".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn hostfile_forms() {
        let text = "# cluster\nnode1 slots=3\n\nnode2:2   # two\n  node3 \nnode4 slots=1 max_slots=8\n::1\n";
        assert_eq!(
            parse_hostfile(text).unwrap(),
            v(&["node1", "node1", "node1", "node2", "node2", "node3", "node4", "::1"])
        );
    }

    #[test]
    fn hostfile_errors_name_the_line() {
        for (text, want) in [
            ("a\nb slots=0\n", "line 2: slots=0"),
            ("a slots=x\n", "line 1: slots=x"),
            ("a\n\nb cores=2\n", "line 3: `cores=2` after b"),
            ("a:0\n", "line 1: `0` is not a slot count"),
            (
                "a:2 slots=3\n",
                "line 1: `slots=3`: a's slots are given twice",
            ),
            (":3\n", "line 1: `:3` names no host"),
            ("# only a comment\n\n", "names no host"),
        ] {
            let e = parse_hostfile(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn host_list_counts() {
        assert_eq!(
            expand_hosts(&v(&["a:2", " b ", "", "fe80::1"])).unwrap(),
            v(&["a", "a", "b", "fe80::1"])
        );
        let e = expand_hosts(&v(&["a:-1"])).unwrap_err();
        assert!(e.contains("--hosts: `-1` is not a slot count"), "{e}");
        assert_eq!(expand_hosts(&[]).unwrap(), Vec::<String>::new());
        for blank in [v(&[""]), v(&["", " "])] {
            let e = expand_hosts(&blank).unwrap_err();
            assert!(e.contains("names no host"), "{blank:?}: {e}");
        }
    }
}
