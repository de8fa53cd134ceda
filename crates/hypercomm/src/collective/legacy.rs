//! Forms of the seeds' collectives that the main API does not have, with
//! the seeds' own semantics:
//!
//! * **PICL bcast1, split phase** (seed 003, `bcast1`): the broadcast's
//!   receiving half is an ordinary receive and its sending half a separate
//!   call, so a node can compute with the data before forwarding it.
//!   [`Comm::bcast_forward`] sends `buf` to this rank's children in the
//!   broadcast tree of the communicator's topology (PICL setarc0:
//!   hypercube or `Auto` → binomial tree, `Full` → star in ring order,
//!   `Ring` → chain, `BiRing` → both ways round the ring), on the **user**
//!   context with the user's tag, exactly as PICL's bcast1 sends with the
//!   user's message type; [`Comm::bcast_recv_into`] is the receiving half
//!   (a receive from this rank's parent with that tag; any receive that
//!   matches, such as PICL's `recv0(buf, bytes, type)`, does as well). A
//!   host root sends to node 0, which then forwards as the root. The
//!   receiver's buffer may be longer than the message: the count is
//!   returned.
//! * **PICL setarc0 as an announcement** (seed 003, `setarc0`): the host
//!   declares the virtual machine — how many nodes are in use and their
//!   topology — and sends it to the nodes in use; every node waits for the
//!   announcement that includes it ([`Comm::announce_arch`] on the host,
//!   [`Comm::await_arch`] on the nodes). Zero nodes ends the loop: every
//!   node gets it. Both return the communicator of the nodes in use and the
//!   host (`prefix(nodes)`) with the topology set.
//! * **iPSC GCAT's order** (seed 000, section 4): "if any other node is
//!   root, then the order obtained is the exclusive-or of the ascending
//!   order with the root". [`Comm::gatherv_ordered`] with
//!   [`ConcatOrder::XorRoot`] gives it (block k comes from node
//!   `k XOR root`); [`ConcatOrder::Rank`] is the rank order of
//!   [`Comm::gatherv`].
//!
//! * **A broadcast whose receivers' buffers may be longer than the
//!   message** (PICL bcast0: "bytes on the root processor must not exceed
//!   bytes on any non-root processor"; iPSC GRECVW returns the count
//!   CNT): [`Comm::bcast_varcount`] sends the root's whole buffer and
//!   returns the count on every rank; a receiver whose buffer is too short
//!   fails, and in check mode every rank is told.
//!
//! * **CMMD's reduction to the host** (`reduce_to_host` /
//!   `reduce_from_nodes`): "the functions return to the host processor and
//!   to each node the value of the specified reduce operation";
//!   [`Comm::reduce_to_host_and_nodes`] does (the existing
//!   [`Comm::reduce`] with a host root gives the nodes nothing).
//!
//!   With a number of nodes that is not a power of two the order runs over
//!   the smallest cube holding them, skipping the nodes it does not have
//!   (5 nodes, root 2: nodes 2, 3, 0, 1, 4).
//!
//! Not done yet: a non-blocking announcement.

use super::ops::{Element, Operator};
use super::select::Topology;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::{Rank, Source, Status};
use hypercomm_algo::{Op, RingOrder, Schedule};

/// The tag of the setarc0 announcement on the collective context (the
/// node-only collective sequence reaches it only after 2³¹ − 2 calls).
pub const ARCH_TAG: u32 = 0x7fff_fffe;

/// How [`Comm::gatherv_ordered`] orders the blocks at the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConcatOrder {
    /// Node 0's block first, then node 1's, … (CMMD, and our default).
    #[default]
    Rank,
    /// Block k is node `k XOR root`'s (iPSC GCAT with a root other than 0).
    /// With a number of nodes that is not a power of two, the order is
    /// taken over the smallest cube that holds them, skipping the nodes it
    /// does not have.
    XorRoot,
}

/// A topology setting as three bytes: its kind, Gray order, forward (the
/// setarc0 announcement; check-mode signatures pack them in one).
pub(super) fn topo_code(t: Topology) -> [u8; 3] {
    let (code, o) = match t {
        Topology::Auto => (0, RingOrder::NATURAL),
        Topology::Hypercube => (1, RingOrder::NATURAL),
        Topology::Full => (2, RingOrder::NATURAL),
        Topology::Ring(o) => (3, o),
        Topology::BiRing(o) => (4, o),
        Topology::Mesh2D => (5, RingOrder::NATURAL),
    };
    [code, o.gray as u8, o.forward as u8]
}

/// The topology setting of [`topo_code`]'s bytes (`None`: no kind).
pub(super) fn topo_decode(b: [u8; 3]) -> Option<Topology> {
    let o = RingOrder {
        gray: b[1] != 0,
        forward: b[2] != 0,
    };
    Some(match b[0] {
        0 => Topology::Auto,
        1 => Topology::Hypercube,
        2 => Topology::Full,
        3 => Topology::Ring(o),
        4 => Topology::BiRing(o),
        5 => Topology::Mesh2D,
        _ => return None,
    })
}

impl Comm {
    /// This rank's parent and children in the broadcast tree from node
    /// `root` of the communicator's topology (unsegmented).
    fn bcast_tree(&self, root: usize) -> Result<(Option<usize>, Vec<usize>)> {
        let parts = self.node_parts("bcast1")?;
        let p = parts.eps.len();
        let me = parts.me;
        if root >= p {
            return Err(Error::InvalidRank {
                rank: Rank::Node(root),
                op: "bcast1",
                size: p,
                host: if self.has_host() {
                    " and a host"
                } else {
                    " and no host"
                },
            });
        }
        let order = self.ring_order();
        let s: Schedule = match self.topology() {
            Topology::Auto | Topology::Hypercube => hypercomm_algo::bcast_binomial(me, p, root, 1),
            Topology::Full => hypercomm_algo::bcast_star(me, p, root, 1, order),
            Topology::Ring(o) => hypercomm_algo::bcast_chain(me, p, root, 1, 1, o),
            Topology::BiRing(o) => hypercomm_algo::bcast_ring_bidirectional(me, p, root, 1, 1, o),
            Topology::Mesh2D => hypercomm_algo::bcast_mesh(me, p, root, 1),
        };
        let (mut parent, mut children) = (None, Vec::new());
        for op in s.rounds.iter().flat_map(|r| r.ops.iter()) {
            match *op {
                Op::Recv { from, .. } => parent = Some(from),
                Op::Send { to, .. } => children.push(to),
                _ => {}
            }
        }
        Ok((parent, children))
    }

    /// The sending half of PICL's split-phase broadcast (bcast1): send
    /// `buf` to this rank's children in the broadcast tree rooted at `root`
    /// (a node, or [`Rank::Host`]), with `tag` on the user context. Every
    /// node calls it after receiving the data (the root without receiving);
    /// with a host root the host calls it (it sends to node 0 only) and node
    /// 0 forwards as the tree's root.
    pub fn bcast_forward<T: Element>(
        &self,
        buf: &[T],
        root: impl Into<Rank>,
        tag: u32,
    ) -> Result<()> {
        for c in self.bcast_children(root)? {
            self.send(buf, c, tag)?;
        }
        Ok(())
    }

    /// Whom [`Comm::bcast_forward`] sends to: this rank's children in the
    /// broadcast tree rooted at `root` (a node, or [`Rank::Host`]: the
    /// host's only child is node 0) of the communicator's topology. For a
    /// split-phase broadcast whose messages travel on another communicator
    /// with the same ranks (PICL's bcast1 after setarc0 sends on the
    /// communicator its recv0 receives on, along the tree of the nodes in
    /// use).
    pub fn bcast_children(&self, root: impl Into<Rank>) -> Result<Vec<Rank>> {
        let root = root.into();
        if self.is_host() {
            if root != Rank::Host {
                return Err(Error::InvalidArgument {
                    op: "bcast1",
                    what: "the host takes part only in a broadcast from the host".into(),
                });
            }
            return Ok(vec![Rank::Node(0)]);
        }
        let r = root.node().unwrap_or(0);
        let (_, children) = self.bcast_tree(r)?;
        Ok(children.into_iter().map(Rank::Node).collect())
    }

    /// The receiving half of PICL's split-phase broadcast: receive the
    /// message with `tag` from this node's parent in the broadcast tree
    /// rooted at `root` (the host, for node 0 of a broadcast from the
    /// host). `buf` may be longer than the message; its status says how
    /// long it was. The root does not call it.
    pub fn bcast_recv_into<T: Element>(
        &self,
        buf: &mut [T],
        root: impl Into<Rank>,
        tag: u32,
    ) -> Result<Status> {
        let root = root.into();
        let me = self.node_parts("bcast1")?.me;
        let from = match root {
            Rank::Host if me == 0 => Rank::Host,
            Rank::Host => Rank::Node(self.bcast_tree(0)?.0.unwrap_or(0)),
            Rank::Node(r) => match self.bcast_tree(r)?.0 {
                Some(p) => Rank::Node(p),
                None => {
                    return Err(Error::InvalidArgument {
                        op: "bcast1",
                        what: format!(
                            "node {me} is the root of this broadcast and receives nothing"
                        ),
                    })
                }
            },
        };
        self.recv_into(buf, Source::Rank(from), tag)
    }

    /// PICL setarc0 on the host: declare that the first `nodes` nodes are in
    /// use with `topology`, tell them (every node when `nodes` is 0, which
    /// ends the nodes' loop), and return the communicator of the nodes in
    /// use and the host with the topology set (`None` for 0 nodes).
    pub fn announce_arch(&self, nodes: usize, topology: Topology) -> Result<Option<Comm>> {
        if !self.is_host() {
            return Err(Error::InvalidArgument {
                op: "setarc0",
                what: "only the host announces the virtual machine; nodes call await_arch".into(),
            });
        }
        let n = self.size();
        if nodes > n {
            return Err(Error::InvalidArgument {
                op: "setarc0",
                what: format!("{nodes} nodes in use, but only {n} are allocated"),
            });
        }
        if let Topology::Ring(o) | Topology::BiRing(o) = topology {
            if o.gray && nodes > 0 && !nodes.is_power_of_two() {
                return Err(Error::InvalidArgument {
                    op: "setarc0",
                    what: format!("Gray code order needs a power of two nodes in use, not {nodes}"),
                });
            }
        }
        let mut msg = (nodes as u64).to_le_bytes().to_vec();
        msg.extend_from_slice(&topo_code(topology));
        let to = if nodes == 0 { n } else { nodes };
        for r in 0..to {
            self.coll_send(Rank::Node(r), ARCH_TAG, &msg)?;
        }
        if nodes == 0 {
            return Ok(None);
        }
        let sub = self.prefix(nodes)?.expect("the host is in every prefix");
        sub.set_topology(topology);
        Ok(Some(sub))
    }

    /// PICL setarc0 on a node: wait for the host's announcement that
    /// includes this node; return how many nodes are in use, the topology,
    /// and their communicator with the host (`None` when the host
    /// announced 0 nodes: the end).
    pub fn await_arch(&self) -> Result<(usize, Topology, Option<Comm>)> {
        if self.is_host() || !self.has_host() {
            return Err(Error::InvalidArgument {
                op: "setarc0",
                what: "a node waits for the host's announcement; this communicator has no host to announce it, or the caller is the host".into(),
            });
        }
        let b = self.coll_recv(Rank::Host, ARCH_TAG)?;
        let bad = || {
            Error::Protocol(format!(
                "malformed setarc0 announcement of {} bytes",
                b.len()
            ))
        };
        if b.len() != 11 {
            return Err(bad());
        }
        let nodes = u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize;
        let t = topo_decode([b[8], b[9], b[10]]).ok_or_else(bad)?;
        if nodes == 0 {
            return Ok((0, t, None));
        }
        let sub = self.prefix(nodes)?;
        if let Some(s) = &sub {
            s.set_topology(t);
        }
        Ok((nodes, t, sub))
    }

    /// Broadcast the root's whole `buf` (a node, or [`Rank::Host`]) into
    /// the front of every node's `buf`, which may be longer; returns the
    /// number of elements broadcast, on every rank. The count goes first
    /// (one `u64`), then the data; a node whose buffer is shorter than the
    /// message fails ([`Error::CollectiveMismatch`] on every node in check
    /// mode, which compares the lengths).
    pub fn bcast_varcount<T: Element>(
        &self,
        buf: &mut [T],
        root: impl Into<Rank>,
    ) -> Result<usize> {
        let root = root.into();
        let mut count = [if self.me() == root {
            buf.len() as u64
        } else {
            0
        }];
        self.bcast(&mut count, root)?;
        let count = count[0] as usize;
        if self.is_host() {
            return self.bcast(buf, root).map(|()| count);
        }
        let fits = count.min(buf.len());
        self.bcast(&mut buf[..fits], root)?;
        if fits < count {
            return Err(Error::Truncated {
                from: root,
                tag: 0,
                len: count * std::mem::size_of::<T>(),
                capacity: std::mem::size_of_val(buf),
            });
        }
        Ok(count)
    }

    /// CMMD reduce_to_host (nodes) / reduce_from_nodes (host): reduce the
    /// nodes' `input` with `op` and return the result on every node **and**
    /// on the host, which calls it too (its `input` is ignored: the host
    /// does not contribute, SPEC section 1).
    pub fn reduce_to_host_and_nodes<T: Element, O: Operator<T> + 'static>(
        &self,
        input: &[T],
        op: O,
    ) -> Result<Vec<T>> {
        self.host_parts("reduce_to_host_and_nodes")?;
        let tag = self.next_tag(true);
        if self.is_host() {
            let b = self.coll_recv(Rank::Node(0), tag)?;
            return super::vec_from_bytes(&b, "reduce_to_host_and_nodes");
        }
        let out = self.allreduce(input, op)?;
        if self.rank() == 0 {
            self.coll_send(Rank::Host, tag, bytemuck::cast_slice(&out))?;
        }
        Ok(out)
    }

    /// Gather blocks of any lengths at `root` (a node or the host), in
    /// `order` (see [`ConcatOrder`]); returns the concatenation and the
    /// block lengths in that order at the root, `None` elsewhere. A host
    /// root gets node 0's result (iPSC: "the lowest numbered node acts as
    /// the root, but then sends the message on to the host"), which is in
    /// rank order.
    pub fn gatherv_ordered<T: Element>(
        &self,
        input: &[T],
        root: impl Into<Rank>,
        order: ConcatOrder,
    ) -> Result<Option<(Vec<T>, Vec<usize>)>> {
        let root = root.into();
        let p = self.size();
        let r = root.node().unwrap_or(0);
        let Some((data, counts)) = self.gatherv(input, root)? else {
            return Ok(None);
        };
        if order == ConcatOrder::Rank || r == 0 || root == Rank::Host {
            return Ok(Some((data, counts)));
        }
        let mut starts = Vec::with_capacity(p);
        let mut at = 0;
        for &c in &counts {
            starts.push(at);
            at += c;
        }
        let mut out = Vec::with_capacity(data.len());
        let mut lens = Vec::with_capacity(p);
        // Over the whole cube: nodes past the last are not there.
        for src in (0..p.next_power_of_two()).map(|k| k ^ r).filter(|&s| s < p) {
            out.extend_from_slice(&data[starts[src]..starts[src] + counts[src]]);
            lens.push(counts[src]);
        }
        Ok(Some((out, lens)))
    }
}
