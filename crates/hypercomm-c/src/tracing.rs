//! The end of a traced run (PICL close0): every rank's records reach the
//! host, which writes the file named by traceenable.

use crate::state::{err, CResult};
use hypercomm::trace::{self, Output};
use hypercomm::{Comm, Rank};
use std::path::PathBuf;

/// Tag of the trace streams on the library's own communicator.
const STREAMS: u32 = 1;

/// Collective over `aux` (every processor calls it in close0): end this
/// rank's tracing and gather all records at the host (at node 0 when the
/// job has none); the host writes `file` (verbose or compact) when
/// traceenable named one. Without a file the records are dropped, as
/// PICL's host drops them.
pub(crate) fn collect(aux: &Comm, file: Option<(PathBuf, bool)>) -> CResult<()> {
    let mine = trace::end_rank()
        .map(|s| trace::streams_to_text(&[s]))
        .unwrap_or_default();
    let collector = if aux.has_host() {
        Rank::Host
    } else {
        Rank::Node(0)
    };
    if aux.me() != collector {
        return aux.send(mine.as_bytes(), collector, STREAMS).map_err(err);
    }
    let mut texts = vec![mine];
    for r in 0..aux.size() {
        if Rank::Node(r) == collector {
            continue;
        }
        let (b, _) = aux.recv_vec::<u8>(r, STREAMS).map_err(err)?;
        texts.push(String::from_utf8_lossy(&b).into_owned());
    }
    let Some((path, verbose)) = file else {
        return Ok(());
    };
    let mut streams = Vec::new();
    for t in texts.iter().filter(|t| !t.is_empty()) {
        streams.extend(trace::streams_from_text(t).map_err(err)?);
    }
    let merged = trace::merge_streams(streams);
    let out = if verbose {
        Output::PiclVerbose
    } else {
        Output::PiclCompact
    };
    trace::write_file(&path, &merged, out).map_err(err)
}
