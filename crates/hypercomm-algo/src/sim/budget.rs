//! The simulator's budget: how much state and how many messages it takes
//! on, so that a machine or a schedule too big for it is refused up front
//! with an error instead of growing memory without limit.
//!
//! * State: every endpoint's progress, finish time and receive port
//!   ([`NODE_BYTES`]) and every link's free time and traffic
//!   ([`LINK_BYTES`]; on the fully connected network only the links used,
//!   [`SPARSE_LINK_BYTES`] each, at most one per message) stay within
//!   [`MAX_STATE_BYTES`]. [`Model::new`](super::Model::new) checks the
//!   nodes and dense links; a simulation also the sparse links.
//! * Messages: the schedules of one simulation send at most
//!   [`MAX_MESSAGES`] messages (and receive as many), about 20 s of
//!   simulation; and since one participant's schedule, which the simulator
//!   generates whole, may address every other participant once per
//!   segment, p times the segments of a pipelined algorithm is at most
//!   [`MAX_PARTICIPANT_MESSAGES`] ([`simulate_entry`](super::simulate_entry)).
//!   The schedules' operations, local ones included, are at most
//!   [`MAX_OPS`]: generating them is work too. The links the messages
//!   cross, estimated from two participants' schedules, are at most
//!   [`MAX_HOPS`].
//!
//! A 2^20-node hypercube allreduce (about 2^24.3 messages and 510 MiB of
//! state) is well within it; an all-to-all on 2^29 nodes is not.

use super::network::{Model, Network};
use super::SimError;
use crate::schedule::{Op, Schedule};

/// The most messages one simulation sends: 2^28.
pub const MAX_MESSAGES: u64 = 1 << 28;

/// The most links the messages of one simulation cross in all: 2^25.
/// Each link a message crosses is an event, held until its time comes, so
/// long paths (a ring's p/4 on average) multiply both the work and the
/// memory of the messages: an all-to-all of 3 000 nodes on a ring would
/// cross 7·10^9 links, one of 2 048 on a mesh 1.3·10^8 (7.9 GB). At 50–60
/// bytes an event (measured), 2^25 stays within 2 GiB and a few seconds;
/// an all-to-all of 1 024 nodes on a mesh (2.2·10^7) or of 2 048 on a
/// hypercube (2.3·10^7) is within it.
pub const MAX_HOPS: u64 = 1 << 25;

/// The most operations (messages, local copies and combines) the
/// schedules of one simulation hold in all, generated one participant at
/// a time: 2^30 (an algorithm whose every participant rotates p blocks,
/// Bruck's, does p² of them).
pub const MAX_OPS: u64 = 1 << 30;

/// The most state (nodes and links) a simulated machine keeps: 4 GiB.
pub const MAX_STATE_BYTES: u64 = 4 << 30;

/// The most messages one participant's schedule may send, counted as p
/// times its segments (a participant of a star, ring or pairwise
/// algorithm addresses every other one, once per segment): 2^22.
pub const MAX_PARTICIPANT_MESSAGES: u64 = 1 << 22;

/// State per endpoint: its progress through its schedule, its finish time,
/// its receive port.
pub const NODE_BYTES: u64 = 64;

/// State per link of a network other than the fully connected one: its
/// free time, messages and words.
pub const LINK_BYTES: u64 = 20;

/// State per link used on the fully connected network (a hash map entry).
pub const SPARSE_LINK_BYTES: u64 = 48;

/// The bytes of state a simulation of `model` keeps before any message:
/// its endpoints' and its links' (the fully connected network's links
/// counted as they are used, by [`sparse_links`]).
pub fn state_bytes(model: &Model) -> u64 {
    let links = if model.network() == Network::Full {
        2 * (model.endpoints() - model.nodes()) as u64
    } else {
        model.links() as u64
    };
    (model.endpoints() as u64)
        .saturating_mul(NODE_BYTES)
        .saturating_add(links.saturating_mul(LINK_BYTES))
}

/// The bytes the fully connected network's links take when `messages`
/// messages cross it (at most one link each, and at most p·(p − 1) links),
/// 0 on the other networks.
pub fn sparse_links(model: &Model, messages: u64) -> u64 {
    if model.network() != Network::Full {
        return 0;
    }
    let p = model.nodes() as u64;
    p.saturating_mul(p.saturating_sub(1))
        .min(messages)
        .saturating_mul(SPARSE_LINK_BYTES)
}

/// The links the sends of participant `me` (on endpoint `me`) cross.
pub(crate) fn hops(model: &Model, me: usize, s: &Schedule) -> u64 {
    s.ops()
        .map(|op| match op {
            Op::Send { to, .. } if *to < model.endpoints() => model.distance(me, *to) as u64,
            _ => 0,
        })
        .sum()
}

/// Whether messages of `p` participants that cross `at_least` links in
/// all are within [`MAX_HOPS`].
pub(crate) fn crossable(p: usize, at_least: u64) -> Result<(), SimError> {
    if at_least > MAX_HOPS {
        return Err(SimError::Hops {
            p,
            at_least,
            limit: MAX_HOPS,
        });
    }
    Ok(())
}

/// `bytes` as MiB, rounded up.
pub(crate) fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// Whether `messages` of `p` participants are within [`MAX_MESSAGES`].
pub(super) fn within(p: usize, messages: u64) -> Result<(), SimError> {
    if messages > MAX_MESSAGES {
        return Err(SimError::Messages {
            p,
            at_least: messages,
            limit: MAX_MESSAGES,
        });
    }
    Ok(())
}

/// Whether `ops` operations of `p` participants' schedules are within
/// [`MAX_OPS`].
pub(super) fn generable(p: usize, ops: u64) -> Result<(), SimError> {
    if ops > MAX_OPS {
        return Err(SimError::Ops {
            p,
            at_least: ops,
            limit: MAX_OPS,
        });
    }
    Ok(())
}

/// Whether `messages` of `p` participants are within [`MAX_MESSAGES`] and
/// `model`'s state with the links they use within [`MAX_STATE_BYTES`].
pub(super) fn affordable(model: &Model, p: usize, messages: u64) -> Result<(), SimError> {
    within(p, messages)?;
    let bytes = state_bytes(model).saturating_add(sparse_links(model, messages));
    if bytes > MAX_STATE_BYTES {
        return Err(SimError::State { p, bytes });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{simulate, simulate_entry, Call, Costs, ModelError, SimError};
    use super::*;
    use crate::{registry, Algorithm, Collective};

    const C: Costs = Costs {
        ts: 1.0,
        tw: 1.0,
        th: 0.0,
    };

    fn entry(c: Collective, a: Algorithm) -> &'static crate::registry::Entry {
        registry::find(c, a).expect("registered")
    }

    /// A machine whose state is beyond the budget is refused when made,
    /// with p and the budget named; the largest the tests use are not.
    #[test]
    fn machines_beyond_the_state_budget_are_refused() {
        for (network, p) in [(Network::Full, 1 << 29), (Network::Hypercube, 1 << 23)] {
            let e = Model::new(network, p, C).unwrap_err();
            assert!(matches!(e, ModelError::TooBig { .. }), "{e:?}");
            let s = e.to_string();
            assert!(s.contains(&format!("p = {p} nodes")), "{s}");
            assert!(s.contains("budget of 4096 MiB"), "{s}");
        }
        Model::new(Network::Hypercube, 1 << 20, C).unwrap();
        Model::new(Network::Full, 1 << 20, C).unwrap();
        let e = Model::new(Network::Ring, 1 << 24, C)
            .unwrap()
            .with_extra_endpoints(1 << 25)
            .unwrap_err();
        assert!(matches!(e, ModelError::TooBig { .. }), "{e:?}");
    }

    /// An all-to-all whose messages exceed the budget is refused before
    /// its schedules are generated, on every network; one that fits runs.
    #[test]
    fn schedules_beyond_the_message_budget_are_refused() {
        let all = entry(Collective::Alltoall, Algorithm::Pairwise);
        for network in [Network::Full, Network::Ring, Network::Hypercube] {
            let p = 1 << 16;
            let m = Model::new(network, p, C).unwrap();
            let e = simulate_entry(&m, all, &Call::new(p, 1).params(0), 1.0).unwrap_err();
            assert!(matches!(e, SimError::Messages { .. }), "{network}: {e:?}");
            let s = e.to_string();
            assert!(s.contains("p = 65536"), "{s}");
            assert!(s.contains(&format!("at most {MAX_MESSAGES}")), "{s}");
        }
        // Bruck's all-to-all sends few messages but rotates p blocks on
        // every participant: p² operations to generate.
        let bruck = entry(Collective::Alltoall, Algorithm::Bruck);
        let p = 1 << 16;
        let m = Model::new(Network::Full, p, C).unwrap();
        let e = simulate_entry(&m, bruck, &Call::new(p, 1).params(0), 1.0).unwrap_err();
        assert!(matches!(e, SimError::Ops { .. }), "{e:?}");
        assert!(e.to_string().contains("p = 65536"), "{e}");
        // On the fully connected network the links used count too: 2^14
        // nodes' all-to-all is within the messages, not the state.
        let p = 1 << 14;
        let m = Model::new(Network::Full, p, C).unwrap();
        let e = simulate_entry(&m, all, &Call::new(p, 1).params(0), 1.0).unwrap_err();
        assert!(matches!(e, SimError::State { .. }), "{e:?}");
        assert!(e.to_string().contains("p = 16384"), "{e}");
        let p = 64;
        let m = Model::new(Network::Full, p, C).unwrap();
        let o = simulate_entry(&m, all, &Call::new(p, 1).params(0), 1.0).unwrap();
        assert_eq!(o.messages, 64 * 63);
    }

    /// A pipelined broadcast of many segments is refused before its
    /// schedule is generated.
    #[test]
    fn links_crossed_beyond_the_budget_are_refused() {
        // Pairwise all-to-all on a ring of 2 048: every node sends to
        // every other, p/4 links away on average: 2 048 · 2 047 · 512
        // (the exact mean distance over a ring of even p is p²/4/(p − 1)).
        let ring = Model::new(Network::Ring, 2048, C).unwrap();
        let params = Call::new(2048, 1);
        let e = simulate_entry(
            &ring,
            entry(Collective::Alltoall, Algorithm::Pairwise),
            &params.params(0),
            1.0,
        )
        .unwrap_err();
        match e {
            SimError::Hops { p, at_least, limit } => {
                assert_eq!((p, limit), (2048, MAX_HOPS));
                assert_eq!(at_least, 2048 * 2048 * 2048 / 4);
            }
            e => panic!("{e}"),
        }
        // The same on a hypercube of 1 024 is within it, and runs.
        let cube = Model::new(Network::Hypercube, 1024, C).unwrap();
        let params = Call::new(1024, 1);
        let o = simulate_entry(
            &cube,
            entry(Collective::Alltoall, Algorithm::Pairwise),
            &params.params(0),
            1.0,
        )
        .unwrap();
        assert_eq!(o.messages, 1024 * 1023);
    }

    #[test]
    fn segments_beyond_the_budget_are_refused() {
        let chain = entry(Collective::Bcast, Algorithm::Chain);
        let m = Model::new(Network::Ring, 4, C).unwrap();
        let mut call = Call::new(4, 1 << 30);
        call.segment = Some(1);
        let e = simulate_entry(&m, chain, &call.params(0), 1.0).unwrap_err();
        assert!(matches!(e, SimError::Participant { .. }), "{e:?}");
        assert!(e.to_string().contains("1073741824 segments"), "{e}");
    }

    /// Words per element that would overflow a time are refused by both
    /// entry points.
    #[test]
    fn words_per_element_are_checked() {
        let m = Model::new(Network::Hypercube, 8, C).unwrap();
        let bcast = entry(Collective::Bcast, Algorithm::Binomial);
        for w in [f64::MAX, 1e300, f64::INFINITY, f64::NAN, -1.0] {
            let e = simulate_entry(&m, bcast, &Call::new(8, 1000).params(0), w).unwrap_err();
            assert!(matches!(e, SimError::WordsPerElement { .. }), "{w}: {e:?}");
            assert!(e.to_string().contains("words per element"), "{e}");
            let e =
                simulate(&m, 8, &mut |me| crate::bcast_binomial(me, 8, 0, 1000), w).unwrap_err();
            assert!(matches!(e, SimError::WordsPerElement { .. }), "{w}: {e:?}");
        }
        simulate_entry(&m, bcast, &Call::new(8, 1000).params(0), 1e100).unwrap();
    }
}
