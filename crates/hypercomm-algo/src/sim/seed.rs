//! Which algorithm stands for an operation on a network: seed 001's where
//! it has one, otherwise the one the matching topology setting selects;
//! and the arguments of one call with messages of m words.

use super::network::{Network, Routing};
use crate::entry::Params;
use crate::registry;
use crate::ring::RingOrder;
use crate::select::by_topology;
use crate::topology::Topology;
use crate::{Algorithm, Collective};

/// The algorithm that runs `c` on `network` with `routing` when none is
/// named: seed 001's for the operations it treats (one-to-all broadcast,
/// single-node accumulation, all-to-all broadcast, prefix sums), else the
/// one the topology setting of the same name selects (the ring's for a
/// ring, [`Topology::Mesh2D`]'s for both meshes).
///
/// | operation | hypercube | ring, SF | ring, CT | mesh, SF | mesh, CT | full |
/// |---|---|---|---|---|---|---|
/// | bcast | binomial | biring | recursive-doubling | mesh | recursive-doubling | binomial |
/// | reduce | binomial | biring | binomial | mesh | binomial | binomial |
/// | allgather | recursive-doubling | ring | ring | mesh | mesh | recursive-doubling |
/// | scan | recursive-doubling | chain | chain | mesh | mesh | recursive-doubling |
///
/// With store-and-forward routing the seed's ring and mesh algorithms send
/// to neighbours only (Figures 3.2, 3.4, 3.10, 3.11); with cut-through
/// routing the one-to-all broadcast halves the distance each step (Figure
/// 3.6), and the accumulation is its dual (the binomial tree from the
/// nearest partner out).
pub fn seed_algorithm(c: Collective, network: Network, routing: Routing) -> Option<Algorithm> {
    use Collective as C;
    use Network as N;
    let ct = routing == Routing::CutThrough;
    let mesh = matches!(network, N::Mesh | N::MeshWrap);
    let a = match (c.family(), network) {
        (C::Bcast, N::Ring) | (C::Bcast, N::Mesh | N::MeshWrap) if ct => {
            Algorithm::RecursiveDoubling
        }
        (C::Bcast, N::Ring) => Algorithm::BiRing,
        (C::Bcast | C::Reduce, _) if mesh && !ct => Algorithm::named("mesh"),
        (C::Reduce, N::Ring) if !ct => Algorithm::BiRing,
        (C::Bcast | C::Reduce, _) => Algorithm::Binomial,
        (C::Allgather | C::Scan, _) if mesh => Algorithm::named("mesh"),
        (C::Allgather, N::Ring) => Algorithm::Ring,
        (C::Scan, N::Ring) => Algorithm::Chain,
        (C::Allgather | C::Scan, _) => Algorithm::RecursiveDoubling,
        _ => {
            let setting = match network {
                N::Hypercube => Topology::Hypercube,
                N::Ring => Topology::Ring(RingOrder::NATURAL),
                N::Mesh | N::MeshWrap => Topology::Mesh2D,
                N::Full => Topology::Full,
            };
            return by_topology(c, setting);
        }
    };
    Some(a)
}

/// The arguments of one call of a collective on `p` participants with
/// messages of `m` elements, as seed 001 counts them: the vector of a
/// broadcast, reduction or scan, each participant's block of a gather,
/// scatter or all-to-all broadcast, one block of an all-to-all. Root 0,
/// natural ring order, an upward inclusive scan; pipelined algorithms send
/// the message whole unless a `segment` is given (`None`).
#[derive(Debug, Clone)]
pub struct Call {
    /// Participants.
    pub p: usize,
    /// Elements per message, as above.
    pub m: usize,
    /// Pipeline segment in elements (`None`: the whole message).
    pub segment: Option<usize>,
    counts: Vec<usize>,
}

impl Call {
    /// A call on `p` participants with messages of `m` elements.
    pub fn new(p: usize, m: usize) -> Call {
        Call {
            p,
            m,
            segment: None,
            counts: vec![m; p],
        }
    }

    /// The [`Params`] of participant `me`.
    pub fn params(&self, me: usize) -> Params<'_> {
        Params {
            me,
            p: self.p,
            root: 0,
            count: self.m,
            counts: &self.counts,
            recv_counts: &self.counts,
            segment: self.segment.unwrap_or(self.m).max(1),
            ..Params::new(me, self.p)
        }
    }
}

/// Whether `a` is registered for `c`, with the names that are when not.
pub fn check_algorithm(c: Collective, a: Algorithm) -> Result<(), String> {
    if registry::find(c, a).is_some() {
        return Ok(());
    }
    let names: Vec<&str> = registry::names(c).collect();
    Err(format!(
        "{c} has no algorithm {a:?}; its algorithms are {}",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_an_algorithm_on_every_network() {
        for c in Collective::ALL {
            if c.family() != c || c == Collective::Multicast {
                continue;
            }
            for n in Network::ALL {
                for r in [Routing::StoreAndForward, Routing::CutThrough] {
                    let a = seed_algorithm(c, n, r).unwrap_or_else(|| panic!("{c} {n}"));
                    check_algorithm(c, a).unwrap();
                }
            }
        }
        let e = check_algorithm(Collective::Bcast, Algorithm::named("nope")).unwrap_err();
        assert!(e.contains("binomial, star"), "{e}");
    }
}
