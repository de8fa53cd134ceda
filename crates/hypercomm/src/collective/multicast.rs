//! Sparse multicast to a target list (iPSC SPGSNW/SPGRCW, seed 000 section
//! 7): the root sends to a few nodes over a fan-out tree built with SPLIT
//! and BETWEEN, and the targets need not know the root.
//!
//! Only the root and the targets call it: the root [`Comm::multicast`],
//! every target [`Comm::multicast_recv`]. Because the other nodes do not
//! take part, the multicast cannot draw a tag from the communicator's
//! collective sequence (the members' sequences would diverge) nor run a
//! check-mode signature exchange. It uses the collective context (so user
//! wildcard receives never see it) with one dedicated tag,
//! [`MULTICAST_TAG`]; a target receives from **any** source with that tag.
//!
//! Each message is `[header][appended target list][data]`: the header
//! holds the element type code, the element count, the list length and the
//! root (all `u64`, little-endian). A target strips the list, forwards the
//! data with each child's sub-list as `hypercomm_algo::spgsnw_sender`
//! plans it (SPLIT off a child and its descendants, repeat), and only then
//! checks the element type, so a type mismatch is an error at that target
//! and never leaves its subtree waiting.
//!
//! A root whose target list is invalid (a node out of range, the root
//! itself, a node listed twice) returns the error and sends the nodes the
//! list names validly the error's text instead of data (element code
//! [`REFUSED`]), over the same tree: each of them gets exactly one message
//! for the call and its `multicast_recv` fails naming the root's mistake,
//! instead of waiting for data that never comes.
//!
//! Ordering: messages between two nodes are FIFO, so successive multicasts
//! from one root arrive in order; multicasts from different roots to a
//! common target may be received in either order (as with SPGRCW).
//!
//! Not done yet: the host as root; non-blocking forms; a node that is a
//! target of two concurrent multicasts cannot tell them apart except by the
//! root returned.

use super::ops::Element;
use crate::comm::Comm;
use crate::engine::Match;
use crate::error::{Error, Result};
use crate::rank::Rank;
use std::collections::HashSet;

/// The tag every multicast message carries on the collective context. The
/// node-only collective sequence reaches it only after 2³¹ − 1 collectives
/// on one communicator.
pub const MULTICAST_TAG: u32 = 0x7fff_ffff;

const HEADER: usize = 32;
const MAGIC: u64 = 0x4d43_0000; // "MC"

/// The element code of a refused multicast: its data is the root's error.
const REFUSED: u8 = 0xff;

fn encode(elem: u8, count: usize, root: usize, list: &[usize], data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER + 8 * list.len() + data.len());
    b.extend_from_slice(&(MAGIC | u64::from(elem)).to_le_bytes());
    b.extend_from_slice(&(count as u64).to_le_bytes());
    b.extend_from_slice(&(list.len() as u64).to_le_bytes());
    b.extend_from_slice(&(root as u64).to_le_bytes());
    for &t in list {
        b.extend_from_slice(&(t as u64).to_le_bytes());
    }
    b.extend_from_slice(data);
    b
}

struct Decoded<'a> {
    elem: u8,
    count: usize,
    root: usize,
    list: Vec<usize>,
    data: &'a [u8],
}

fn decode(b: &[u8]) -> Result<Decoded<'_>> {
    let bad = || Error::Protocol(format!("malformed multicast message of {} bytes", b.len()));
    let word = |i: usize| -> Option<u64> {
        b.get(8 * i..8 * i + 8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
    };
    let w0 = word(0).ok_or_else(bad)?;
    if w0 & !0xff != MAGIC {
        return Err(bad());
    }
    let count = word(1).ok_or_else(bad)? as usize;
    let nlist = word(2).ok_or_else(bad)? as usize;
    let root = word(3).ok_or_else(bad)? as usize;
    let list_end = nlist
        .checked_mul(8)
        .and_then(|l| l.checked_add(HEADER))
        .filter(|&e| e <= b.len())
        .ok_or_else(bad)?;
    let list = (0..nlist)
        .map(|i| word(4 + i).map(|w| w as usize).ok_or_else(bad))
        .collect::<Result<Vec<_>>>()?;
    Ok(Decoded {
        elem: w0 as u8,
        count,
        root,
        list,
        data: &b[list_end..],
    })
}

impl Comm {
    /// Send `data` from this node (the root) to the nodes in `targets`
    /// (distinct, not the root, any order) over the SPGSNW fan-out tree.
    /// Each target calls [`Comm::multicast_recv`]; no other node takes part.
    pub fn multicast<T: Element>(&self, data: &[T], targets: &[usize]) -> Result<()> {
        let parts = self.node_parts("multicast")?;
        let p = parts.eps.len();
        let mut seen = HashSet::new();
        for &t in targets {
            if t >= p || t == parts.me || !seen.insert(t) {
                let e = Error::InvalidArgument {
                    op: "multicast",
                    what: format!(
                        "target {t} is {} (targets must be distinct nodes of 0..{p} other than the root {})",
                        if t >= p {
                            "out of range"
                        } else if t == parts.me {
                            "the root itself"
                        } else {
                            "listed twice"
                        },
                        parts.me
                    ),
                };
                // The nodes named validly wait in `multicast_recv`: they
                // get the error instead of the data. Failing to tell them
                // is secondary to the error itself.
                let mut named = HashSet::new();
                let valid: Vec<usize> = targets
                    .iter()
                    .copied()
                    .filter(|&t| t < p && t != parts.me && named.insert(t))
                    .collect();
                if !valid.is_empty() {
                    let text = e.to_string();
                    let _ = self.multicast_forward(
                        REFUSED,
                        text.len(),
                        parts.me,
                        parts.me,
                        &valid,
                        text.as_bytes(),
                    );
                }
                return Err(e);
            }
        }
        self.multicast_forward(
            T::CODE,
            data.len(),
            parts.me,
            parts.me,
            targets,
            bytemuck::cast_slice(data),
        )
    }

    /// Receive a multicast (SPGRCW) from whichever node sends it, forward it
    /// to this node's part of the tree, and return the data and the root.
    /// Fails when the data is not of type `T`, and when the root's call
    /// failed on its target list (the error names the root's mistake).
    pub fn multicast_recv<T: Element>(&self) -> Result<(Vec<T>, usize)> {
        let parts = self.node_parts("multicast_recv")?;
        let m = Match {
            ctx: self.coll_ctx(),
            src: None,
            tag: Some(MULTICAST_TAG),
        };
        let (_, payload) =
            self.engine()
                .recv_payload(self.group(), m, self.timeout, "multicast receive")?;
        let bytes = crate::transport::Payload::into_bytes(payload);
        let d = decode(&bytes)?;
        // Forward first, so our subtree completes whatever we think of the data.
        self.multicast_forward(d.elem, d.count, d.root, parts.me, &d.list, d.data)?;
        if d.elem == REFUSED {
            return Err(Error::CollectiveMismatch(format!(
                "multicast from {}: the root's call failed ({})",
                Rank::Node(d.root),
                String::from_utf8_lossy(d.data)
            )));
        }
        if d.elem != T::CODE || d.data.len() != d.count * std::mem::size_of::<T>() {
            return Err(Error::CollectiveMismatch(format!(
                "multicast from {}: {} elements of type {} were sent, received as {}",
                Rank::Node(d.root),
                d.count,
                super::ops::element_name(d.elem),
                T::NAME
            )));
        }
        Ok((super::vec_from_bytes(d.data, "multicast")?, d.root))
    }

    fn multicast_forward(
        &self,
        elem: u8,
        count: usize,
        root: usize,
        me: usize,
        list: &[usize],
        data: &[u8],
    ) -> Result<()> {
        let p = self.size();
        if let Some(&bad) = list.iter().find(|&&t| t >= p) {
            return Err(Error::Protocol(format!(
                "multicast list names node {bad} of {p}"
            )));
        }
        let (sched, lists) = hypercomm_algo::spgsnw_sender(me, list, count);
        for (round, sub) in sched.rounds.iter().zip(&lists) {
            for op in &round.ops {
                if let hypercomm_algo::Op::Send { to, .. } = *op {
                    let msg = encode(elem, count, root, sub, data);
                    self.coll_send(Rank::Node(to), MULTICAST_TAG, &msg)?;
                }
            }
        }
        Ok(())
    }
}
