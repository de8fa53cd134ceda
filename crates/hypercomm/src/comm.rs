//! Communicators: groups of ranks with a private context.
//!
//! A [`Comm`] names a group (nodes `0..size`, maybe a host) and a context.
//! Every communicator has two contexts: an even one for user messages and the
//! next odd one, reserved for collectives, so a user's wildcard receive can
//! never take a library message. Contexts of derived communicators are
//! computed, not negotiated: `dup` and `split` are collective over the
//! communicator and counted, so every member derives the same 64-bit value;
//! `subcube` and `prefix` need no communication and are counted per argument.
//!
//! Cartesian process grids are made here too (`Comm::cartesian`, in the
//! [`topology`](crate::topology) module, which builds them on `dup` and
//! `split`).
//!
//! Not done yet: inter-communicators.

use crate::engine::{Engine, Group, Match};
use crate::error::{Error, Result};
use crate::rank::Rank;
use hypercomm_algo::memo::Memo;
use hypercomm_algo::{Collective, Topology};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

/// What a communicator keeps for its collectives: the topology setting
/// (PICL setarc0), check mode (PICL check0) and selection's memo of recent
/// choices and schedules.
/// Plain data of the algorithm crate's types: the collectives read and
/// write it, the communicator only holds it.
pub(crate) struct CollState {
    /// The virtual topology collectives follow.
    pub(crate) topology: Cell<Topology>,
    /// Whether every collective first compares a signature across ranks.
    pub(crate) check: Cell<bool>,
    /// Recent algorithm choices and schedules of collective calls.
    pub(crate) memo: Memo,
    /// Whether blocking collectives may go to the transport library's own
    /// (`collective/native.rs`).
    pub(crate) native: Cell<bool>,
    /// The last question of whether a blocking call goes to the
    /// shared-memory board, and its answer (`collective/board`).
    pub(crate) board_memo: Cell<Option<(BoardAsk, bool)>>,
}

/// What decides whether a blocking call goes to the shared-memory board
/// (`collective/board`): the communicator remembers its last question and
/// answer ([`CollState::board_memo`]), since a program mostly repeats the
/// same call (working the answer out took some 200 instructions a call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BoardAsk {
    pub(crate) kind: Collective,
    /// Bytes the board would carry, and the element's alignment.
    pub(crate) bytes: usize,
    pub(crate) align: usize,
    /// The forced algorithm, by where its name lies and its length (equal
    /// for the same constant; two names alike at different places only
    /// ask again).
    pub(crate) algorithm: (usize, usize),
    pub(crate) reproducible: bool,
    pub(crate) topology: Topology,
    pub(crate) check: bool,
    /// The participants: whether the host is one, and how many.
    pub(crate) with_host: bool,
    pub(crate) parts: usize,
}

/// Check mode's default: on, unless `HYPERCOMM_CHECK` is `off`, `0` or
/// `false` (read once).
fn check_default() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        !std::env::var("HYPERCOMM_CHECK").is_ok_and(|v| matches!(v.trim(), "off" | "0" | "false"))
    })
}

impl Default for CollState {
    /// Topology `Auto`, check mode on (see [`check_default`]), nothing
    /// remembered.
    fn default() -> Self {
        CollState {
            topology: Cell::new(Topology::Auto),
            check: Cell::new(check_default()),
            memo: Memo::default(),
            native: Cell::new(false),
            board_memo: Cell::new(None),
        }
    }
}

/// A communicator handle. Cheap to clone; clones are the same communicator.
///
/// A `Comm` belongs to the thread (rank) that created it: it is neither
/// `Send` nor `Sync`.
#[derive(Clone)]
pub struct Comm {
    pub(crate) inner: Rc<CommInner>,
    pub(crate) timeout: Option<Duration>,
}

pub(crate) struct CommInner {
    pub(crate) engine: Rc<Engine>,
    pub(crate) group: Rc<Group>,
    /// User context (even); the collective context is `ctx | 1`.
    pub(crate) ctx: u64,
    pub(crate) me: Rank,
    derived: Cell<u64>,
    counted: RefCell<HashMap<(u8, u64), u64>>,
    coll_seq: Cell<u32>,
    coll_seq_host: Cell<u32>,
    /// Topology setting, check mode and the memo of the collectives.
    pub(crate) coll: CollState,
}

/// Messages a rank holds that no receive has taken yet
/// ([`Comm::unexpected`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unexpected {
    /// How many.
    pub messages: usize,
    /// Their lengths plus [`MESSAGE_COST`](crate::MESSAGE_COST) each: what
    /// flow control counts.
    pub bytes: usize,
}

/// splitmix64: a fixed, portable mixing function for context derivation.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn derive(parent: u64, a: u64, b: u64, c: u64) -> u64 {
    mix(mix(mix(parent ^ 0x5151) ^ a) ^ b.rotate_left(17) ^ c.rotate_left(41)) & !1
}

impl Comm {
    /// The world communicator of an engine: nodes are endpoints `0..n`, the
    /// host (if any) is endpoint `n`.
    pub(crate) fn world(engine: Rc<Engine>, nodes: usize, host: bool) -> Comm {
        let endpoints = nodes + host as usize;
        let me_ep = engine.me();
        let group = Group::new(
            (0..nodes as u32).collect(),
            host.then_some(nodes as u32),
            endpoints,
        );
        let me = group.rank(me_ep);
        let timeout = engine.default_timeout;
        Comm::from_parts(engine, Rc::new(group), 0, me, timeout)
    }

    fn from_parts(
        engine: Rc<Engine>,
        group: Rc<Group>,
        ctx: u64,
        me: Rank,
        timeout: Option<Duration>,
    ) -> Comm {
        Comm {
            inner: Rc::new(CommInner {
                engine,
                group,
                ctx,
                me,
                derived: Cell::new(0),
                counted: RefCell::new(HashMap::new()),
                coll_seq: Cell::new(0),
                coll_seq_host: Cell::new(0),
                coll: CollState::default(),
            }),
            timeout,
        }
    }

    /// This node's rank in `0..size()`. On the host it returns `size()`; use
    /// [`Comm::me`] or [`Comm::is_host`] to tell the host apart.
    #[inline]
    pub fn rank(&self) -> usize {
        match self.inner.me {
            Rank::Node(r) => r,
            Rank::Host => self.size(),
        }
    }

    /// This participant: a node or the host.
    #[inline]
    pub fn me(&self) -> Rank {
        self.inner.me
    }

    /// Number of nodes (the host is not counted).
    #[inline]
    pub fn size(&self) -> usize {
        self.inner.group.eps.len()
    }

    /// Whether this communicator has a host.
    pub fn has_host(&self) -> bool {
        self.inner.group.host.is_some()
    }

    /// Whether the caller is the host.
    pub fn is_host(&self) -> bool {
        self.inner.me.is_host()
    }

    /// The user context of this communicator (diagnostics; distinct per
    /// communicator).
    pub fn context(&self) -> u64 {
        self.inner.ctx
    }

    /// The same communicator with a timeout for every blocking operation
    /// made through the returned handle (`None`: wait forever). The default
    /// comes from `HYPERCOMM_TIMEOUT` (seconds). An operation fails with
    /// [`Error::Timeout`] once one of its waits has
    /// lasted this long: a blocking collective waits once per message it
    /// receives, so one that goes on making progress may take longer in
    /// all (while a trace is recorded, it counts the whole call).
    pub fn with_timeout(&self, timeout: Option<Duration>) -> Comm {
        Comm {
            inner: self.inner.clone(),
            timeout,
        }
    }

    /// The timeout in force for this handle.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Whether the ranks are threads of this process (the thread transport):
    /// they can read and write each other's memory.
    pub(crate) fn ranks_are_threads(&self) -> bool {
        use crate::transport::{Transport, TransportKind};
        self.engine().t.link().kind == Some(TransportKind::Thread)
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub(crate) fn group(&self) -> &Rc<Group> {
        &self.inner.group
    }

    /// Endpoint of a rank, checked.
    pub(crate) fn ep(&self, r: Rank, op: &'static str) -> Result<u32> {
        let g = &self.inner.group;
        match r {
            Rank::Node(i) if i < g.eps.len() => Ok(g.eps[i]),
            Rank::Host if g.host.is_some() => Ok(g.host.expect("checked")),
            _ => Err(Error::InvalidRank {
                rank: r,
                op,
                size: g.eps.len(),
                host: if g.host.is_some() {
                    " and a host"
                } else {
                    " and no host"
                },
            }),
        }
    }

    /// Next tag of the node-only or the host-involving collective sequence.
    pub(crate) fn next_coll_tag_for(&self, with_host: bool) -> u32 {
        let c = if with_host {
            &self.inner.coll_seq_host
        } else {
            &self.inner.coll_seq
        };
        let t = c.get();
        c.set(t.wrapping_add(1));
        t
    }

    /// The collective context of this communicator.
    pub(crate) fn coll_ctx(&self) -> u64 {
        self.inner.ctx | 1
    }

    /// Send bytes on the collective context (blocking).
    pub(crate) fn coll_send(&self, to: Rank, tag: u32, data: &[u8]) -> Result<()> {
        let ep = self.ep(to, "collective send")?;
        let e = self.engine();
        // SAFETY: `data` outlives the request, which is waited for below.
        let id = unsafe { e.start_send(self.group(), ep, self.coll_ctx(), tag, data, false)? };
        if let Some(id) = id {
            e.wait_req(id, self.timeout, "collective send")?;
        }
        Ok(())
    }

    /// Receive a whole message on the collective context.
    pub(crate) fn coll_recv(&self, from: Rank, tag: u32) -> Result<Vec<u8>> {
        let ep = self.ep(from, "collective receive")?;
        let m = Match {
            ctx: self.coll_ctx(),
            src: Some(ep),
            tag: Some(tag),
        };
        let (_, p) =
            self.engine()
                .recv_payload(self.group(), m, self.timeout, "collective receive")?;
        Ok(crate::transport::Payload::into_bytes(p))
    }

    /// All members, nodes in rank order then the host.
    pub(crate) fn members(&self) -> Vec<Rank> {
        let mut v: Vec<Rank> = (0..self.size()).map(Rank::Node).collect();
        if self.has_host() {
            v.push(Rank::Host);
        }
        v
    }

    /// Gather every member's bytes at the first member and return them to all
    /// (a simple linear exchange used to build communicators).
    pub(crate) fn exchange_all(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let members = self.members();
        // Every member (the host too, if any) takes part.
        let tag = self.next_tag(self.has_host());
        let root = members[0];
        if self.me() == root {
            let mut all = vec![mine.to_vec()];
            for &m in &members[1..] {
                all.push(self.coll_recv(m, tag)?);
            }
            let packed = pack_list(&all);
            for &m in &members[1..] {
                self.coll_send(m, tag, &packed)?;
            }
            Ok(all)
        } else {
            self.coll_send(root, tag, mine)?;
            let packed = self.coll_recv(root, tag)?;
            unpack_list(&packed, members.len())
        }
    }

    fn child(&self, eps: Vec<u32>, host: Option<u32>, ctx: u64) -> Comm {
        let e = self.inner.engine.clone();
        let n = e.t_endpoints();
        let group = Group::new(eps, host, n);
        let me = group.rank(e.me());
        Comm::from_parts(e, Rc::new(group), ctx, me, self.timeout)
    }

    /// A copy of this communicator with a new context (MPI `Comm_dup`).
    /// Collective: every member, the host included, calls it in the same
    /// order.
    pub fn dup(&self) -> Comm {
        let k = self.inner.derived.get() + 1;
        self.inner.derived.set(k);
        let ctx = derive(self.inner.ctx, 1, k, 0);
        let g = &self.inner.group;
        self.child(g.eps.to_vec(), g.host, ctx)
    }

    /// Split into communicators by `color`, ordering ranks by `(key, old
    /// rank)` (MPI `Comm_split`). A member passing `None` gets `None`. The
    /// host, if it calls with a color, becomes the host of that color's
    /// communicator. Collective over all members.
    pub fn split(&self, color: Option<u32>, key: i64) -> Result<Option<Comm>> {
        let k = self.inner.derived.get() + 1;
        self.inner.derived.set(k);
        let mut mine = Vec::with_capacity(13);
        mine.push(color.is_some() as u8);
        mine.extend_from_slice(&color.unwrap_or(0).to_le_bytes());
        mine.extend_from_slice(&key.to_le_bytes());
        let all = self.exchange_all(&mine)?;
        let Some(c) = color else { return Ok(None) };
        let members = self.members();
        let mut nodes: Vec<(i64, usize, u32)> = Vec::new();
        let mut host = None;
        for (i, entry) in all.iter().enumerate() {
            if entry.len() != 13 {
                return Err(Error::Protocol(format!(
                    "split: {} sent a {}-byte entry, expected 13",
                    members[i],
                    entry.len()
                )));
            }
            let has = entry[0] == 1;
            let col = u32::from_le_bytes(entry[1..5].try_into().expect("4 bytes"));
            let key = i64::from_le_bytes(entry[5..13].try_into().expect("8 bytes"));
            if !has || col != c {
                continue;
            }
            match members[i] {
                Rank::Node(r) => nodes.push((key, r, self.inner.group.eps[r])),
                Rank::Host => host = self.inner.group.host,
            }
        }
        nodes.sort();
        let ctx = derive(self.inner.ctx, 2, k, c as u64);
        Ok(Some(self.child(
            nodes.into_iter().map(|x| x.2).collect(),
            host,
            ctx,
        )))
    }

    fn counted(&self, kind: u8, arg: u64) -> u64 {
        let mut m = self.inner.counted.borrow_mut();
        let c = m.entry((kind, arg)).or_insert(0);
        *c += 1;
        *c
    }

    /// The subcube of dimension `d` containing this node (iPSC): the nodes
    /// whose ranks agree with this one in all but the low `d` bits, numbered
    /// by those low bits. When the size is not a power of two the last
    /// subcube may be incomplete. Needs no communication; the host has no
    /// subcube.
    pub fn subcube(&self, d: u32) -> Result<Comm> {
        let Rank::Node(me) = self.me() else {
            return Err(Error::InvalidArgument {
                op: "subcube",
                what: "the host belongs to no subcube".into(),
            });
        };
        if d >= usize::BITS {
            return Err(Error::InvalidArgument {
                op: "subcube",
                what: format!("dimension {d} is too large"),
            });
        }
        let base = (me >> d) << d;
        let end = (base + (1usize << d)).min(self.size());
        let n = self.counted(3, d as u64);
        let ctx = derive(self.inner.ctx, 3, n, ((d as u64) << 40) ^ base as u64);
        let eps = self.inner.group.eps[base..end].to_vec();
        Ok(self.child(eps, None, ctx))
    }

    /// The first `k` nodes (PICL's "nodes in use"), with the host if there is
    /// one. Nodes `k..` get `None`. Needs no communication.
    pub fn prefix(&self, k: usize) -> Result<Option<Comm>> {
        if k == 0 || k > self.size() {
            return Err(Error::InvalidArgument {
                op: "prefix",
                what: format!("k = {k} but the communicator has {} nodes", self.size()),
            });
        }
        let n = self.counted(4, k as u64);
        if let Rank::Node(r) = self.me() {
            if r >= k {
                return Ok(None);
            }
        }
        let ctx = derive(self.inner.ctx, 4, n, k as u64);
        let g = &self.inner.group;
        Ok(Some(self.child(g.eps[..k].to_vec(), g.host, ctx)))
    }

    /// What this rank holds that no receive has taken yet, over every
    /// sender and communicator (after taking in whatever has arrived):
    /// flow control keeps the part from each sender at or below
    /// [`SENDER_CREDIT`](crate::SENDER_CREDIT) bytes as
    /// [`Unexpected::bytes`] counts them, unless this rank waited for a
    /// later message of that sender (which lets the sender past the bound).
    pub fn unexpected(&self) -> Unexpected {
        let (messages, bytes) = self.engine().unexpected();
        Unexpected { messages, bytes }
    }

    /// Abort the whole job (SUPRENUM INTRPT): every rank's next operation
    /// fails with [`Error::Aborted`]. Returns that error for the caller to
    /// propagate.
    pub fn abort(&self, message: &str) -> Error {
        self.engine().abort(message);
        Error::Aborted {
            rank: self.me(),
            message: message.to_string(),
        }
    }
}

/// Length-prefixed list of byte strings.
fn pack_list(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for it in items {
        out.extend_from_slice(&(it.len() as u64).to_le_bytes());
        out.extend_from_slice(it);
    }
    out
}

fn unpack_list(mut b: &[u8], n: usize) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let bad = || Error::Protocol(format!("communicator exchange: entry {i} is cut short"));
        let len_bytes: [u8; 8] = b.get(..8).ok_or_else(bad)?.try_into().expect("8 bytes");
        let len = u64::from_le_bytes(len_bytes) as usize;
        let item = b.get(8..8usize.saturating_add(len)).ok_or_else(bad)?;
        out.push(item.to_vec());
        b = &b[8 + len..];
    }
    Ok(out)
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("me", &self.me())
            .field("size", &self.size())
            .field("host", &self.has_host())
            .field("context", &format_args!("{:#x}", self.inner.ctx))
            .finish()
    }
}
