//! How a communicator maps the job's endpoints to its ranks.

use crate::error::Error;
use crate::rank::Rank;
use std::sync::Arc;

/// How a communicator maps endpoints to its ranks (shared by the engine and
/// `Comm`).
#[derive(Debug)]
pub(crate) struct Group {
    /// Endpoint of each node rank (shared: every collective call names
    /// its participants by it).
    pub(crate) eps: Arc<[u32]>,
    /// Endpoint of the host, if the communicator has one.
    pub(crate) host: Option<u32>,
    /// Rank of every endpoint of the job (`None`: not a member).
    pub(crate) rank_of: Vec<Option<Rank>>,
}

impl Group {
    pub(crate) fn new(eps: Vec<u32>, host: Option<u32>, endpoints: usize) -> Group {
        let mut rank_of = vec![None; endpoints];
        for (r, &e) in eps.iter().enumerate() {
            rank_of[e as usize] = Some(Rank::Node(r));
        }
        if let Some(h) = host {
            rank_of[h as usize] = Some(Rank::Host);
        }
        Group {
            eps: eps.into(),
            host,
            rank_of,
        }
    }
    pub(crate) fn rank(&self, ep: u32) -> Rank {
        self.rank_of
            .get(ep as usize)
            .copied()
            .flatten()
            .unwrap_or(Rank::Node(ep as usize))
    }
    pub(crate) fn members(&self) -> impl Iterator<Item = u32> + '_ {
        self.eps.iter().copied().chain(self.host)
    }
}

/// Translate endpoint numbers in an engine error into ranks of `g`.
pub(crate) fn map_err(e: Error, g: &Group) -> Error {
    match e {
        Error::Truncated {
            from: Rank::Node(ep),
            tag,
            len,
            capacity,
        } => Error::Truncated {
            from: g.rank(ep as u32),
            tag,
            len,
            capacity,
        },
        Error::PeerFailed {
            rank: Rank::Node(ep),
        } if g.rank_of.get(ep).is_some() => Error::PeerFailed {
            rank: g.rank(ep as u32),
        },
        e => e,
    }
}
