//! The simulated machine: its network (topology and routing), its nodes'
//! ports and its costs, checked when made ([`Model::new`]).
//!
//! Links are directed (a link carries one message at a time in each
//! direction) and numbered so that the links a step of an algorithm uses
//! lie together: on a hypercube link `i·p + v` leaves node v along
//! dimension i (to `v XOR 2^i`); on a ring `2·v` goes to
//! `v + 1`, `2·v + 1` to `v − 1`; on a mesh `4·v + 0, 1, 2, 3` go to the
//! next and previous column, the next and previous row; on the fully
//! connected network `p·v + w` goes to w. Endpoints beyond the `p` nodes
//! (a host) hang off node 0 by a link each way, numbered after the
//! network's.

use super::budget::{mib, state_bytes, MAX_STATE_BYTES};
use crate::topology::mesh_dims;
use std::fmt;

/// The topology of the simulated machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// A d-dimensional hypercube of 2^d nodes; e-cube routing (the lowest
    /// differing dimension first).
    Hypercube,
    /// A ring (with both directions); messages take the shorter way round,
    /// the increasing direction on a tie.
    Ring,
    /// A 2-D mesh of [`mesh_dims`]`(p)` rows and columns without
    /// wrap-around, nodes numbered row by row; XY routing (along the row
    /// first, then the column).
    Mesh,
    /// The same mesh with wrap-around (a torus): each row and column is a
    /// ring, and each dimension is routed the shorter way.
    MeshWrap,
    /// Every node has a link to every other.
    Full,
}

impl Network {
    /// Every network, in the order of their names.
    pub const ALL: [Network; 5] = [
        Network::Hypercube,
        Network::Ring,
        Network::Mesh,
        Network::MeshWrap,
        Network::Full,
    ];

    /// Its name: `hypercube`, `ring`, `mesh`, `mesh-wrap`, `full`.
    pub const fn name(self) -> &'static str {
        match self {
            Network::Hypercube => "hypercube",
            Network::Ring => "ring",
            Network::Mesh => "mesh",
            Network::MeshWrap => "mesh-wrap",
            Network::Full => "full",
        }
    }

    /// The network called `name`.
    pub fn parse(name: &str) -> Option<Network> {
        Network::ALL.into_iter().find(|n| n.name() == name)
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a message crosses intermediate nodes (seed 001).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Routing {
    /// Store-and-forward: each node receives the whole message before it
    /// sends it on; a hop costs th + tw·m.
    #[default]
    StoreAndForward,
    /// Cut-through: the header opens the path hop by hop (th each) and the
    /// body follows it (tw·m once).
    CutThrough,
}

impl Routing {
    /// Its name: `sf` or `ct`.
    pub const fn name(self) -> &'static str {
        match self {
            Routing::StoreAndForward => "sf",
            Routing::CutThrough => "ct",
        }
    }

    /// The routing called `name` (`sf`, `ct`).
    pub fn parse(name: &str) -> Option<Routing> {
        [Routing::StoreAndForward, Routing::CutThrough]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// How many messages a node sends and receives at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ports {
    /// One send and one receive at a time (seed 001's assumption).
    #[default]
    One,
    /// A send and a receive on every link at once; start-ups still follow
    /// one another.
    All,
}

impl Ports {
    /// Its name: `one` or `all`.
    pub const fn name(self) -> &'static str {
        match self {
            Ports::One => "one",
            Ports::All => "all",
        }
    }

    /// The port model called `name` (`one`, `all`).
    pub fn parse(name: &str) -> Option<Ports> {
        [Ports::One, Ports::All]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// The costs of seed 001's model, in any one unit of time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// Start-up time of a message at its sender.
    pub ts: f64,
    /// Time per word, on every link the message crosses.
    pub tw: f64,
    /// Per-hop time (the header's, with cut-through routing).
    pub th: f64,
}

/// A bad model parameter: what, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelError {
    /// No nodes.
    NoNodes,
    /// A hypercube needs a power of two.
    NotPowerOfTwo {
        /// The number of nodes asked for.
        p: usize,
    },
    /// More nodes than the simulator numbers.
    TooMany {
        /// The number of nodes asked for.
        p: usize,
    },
    /// A machine whose nodes and links take more state than the
    /// simulator's budget ([`MAX_STATE_BYTES`]).
    TooBig {
        /// The number of nodes (and endpoints) asked for.
        p: usize,
        /// The network.
        network: Network,
        /// The bytes its state would take.
        bytes: u64,
    },
    /// Processors shared by the nodes, but none of them.
    NoCores,
    /// A cost that is not a number from 0 to [`MAX_COST`].
    BadCost {
        /// `ts`, `tw`, `th` or `switch`.
        name: &'static str,
        /// Its value.
        value: f64,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::NoNodes => write!(f, "a machine needs at least one node (p = 0)"),
            ModelError::NotPowerOfTwo { p } => write!(
                f,
                "a hypercube has 2^d nodes; p = {p} is not a power of two (nearest: {} or {})",
                p.next_power_of_two() / 2,
                p.next_power_of_two()
            ),
            ModelError::TooMany { p } => write!(
                f,
                "p = {p} nodes is more than the simulator handles ({MAX_NODES})"
            ),
            ModelError::TooBig { p, network, bytes } => write!(
                f,
                "p = {p} nodes of a {network} network: its nodes and links would take about {} MiB, \
                 more than the simulator's budget of {} MiB",
                mib(*bytes),
                mib(MAX_STATE_BYTES)
            ),
            ModelError::NoCores => write!(
                f,
                "a machine whose nodes share cores needs at least one core"
            ),
            ModelError::BadCost { name, value } => write!(
                f,
                "{name} = {} is not a time: ts, tw, th and switch are numbers from 0 to {MAX_COST:e}",
                short(*value)
            ),
        }
    }
}

impl std::error::Error for ModelError {}

/// A number as written, in exponent form when it is huge (`1e308`, not 309
/// digits).
fn short(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e16 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// The most nodes (and endpoints) a model has: node numbers fit in 29 bits.
pub const MAX_NODES: usize = 1 << 29;

/// The largest ts, tw, th or switch time a model takes. Far beyond any
/// machine, and small enough that every time the simulator adds up stays
/// finite: a message of 2^32 elements of up to 10^100 words each costs at
/// most about 10^210, and a simulation handles far fewer than 10^90 of
/// them.
pub const MAX_COST: f64 = 1e100;

/// Whether `value` is a cost a model takes: a number from 0 to
/// [`MAX_COST`].
fn cost_ok(value: f64) -> bool {
    (0.0..=MAX_COST).contains(&value)
}

/// A simulated machine: network, routing, ports, costs and whether links
/// are shared (contention).
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    network: Network,
    nodes: usize,
    rows: usize,
    cols: usize,
    dims: u32,
    /// Routing through intermediate nodes.
    pub routing: Routing,
    /// One port or all ports.
    pub ports: Ports,
    /// ts, tw, th.
    pub costs: Costs,
    /// A link carries one message at a time per direction (later ones
    /// wait); `false` gives every message its own links.
    pub contention: bool,
    extra: usize,
    cores: Option<usize>,
    switch: f64,
}

impl Model {
    /// A machine of `p` nodes on `network` with `costs`, store-and-forward
    /// routing, one port and contention (change the public fields for
    /// others). Errors: p = 0 or above [`MAX_NODES`], a hypercube whose p
    /// is not a power of two, nodes and links whose state is more than
    /// [`MAX_STATE_BYTES`], a cost that is negative, above [`MAX_COST`]
    /// or NaN.
    pub fn new(network: Network, p: usize, costs: Costs) -> Result<Model, ModelError> {
        if p == 0 {
            return Err(ModelError::NoNodes);
        }
        if p > MAX_NODES {
            return Err(ModelError::TooMany { p });
        }
        if network == Network::Hypercube && !p.is_power_of_two() {
            return Err(ModelError::NotPowerOfTwo { p });
        }
        for (name, value) in [("ts", costs.ts), ("tw", costs.tw), ("th", costs.th)] {
            if !cost_ok(value) {
                return Err(ModelError::BadCost { name, value });
            }
        }
        let (rows, cols) = mesh_dims(p);
        Model {
            network,
            nodes: p,
            rows,
            cols,
            dims: p.trailing_zeros(),
            routing: Routing::default(),
            ports: Ports::default(),
            costs,
            contention: true,
            extra: 0,
            cores: None,
            switch: 0.0,
        }
        .within_budget()
    }

    /// The model, if its state fits [`MAX_STATE_BYTES`].
    fn within_budget(self) -> Result<Model, ModelError> {
        let bytes = state_bytes(&self);
        if bytes > MAX_STATE_BYTES {
            return Err(ModelError::TooBig {
                p: self.endpoints(),
                network: self.network,
                bytes,
            });
        }
        Ok(self)
    }

    /// The same machine with its endpoints sharing `cores` processors
    /// (endpoint v runs on core v mod `cores`), a core taking `switch` to
    /// turn from one endpoint's work to another's (a context switch). A
    /// core works for one endpoint at a time; its work is a message's
    /// start-up (ts) and its body leaving the sender (tw·m: a memory copy
    /// on a shared-memory machine). Without this (`Model::new`) every node
    /// has a processor of its own, as in seed 001. Errors: no cores, a
    /// switch time that is negative, above [`MAX_COST`] or NaN.
    pub fn with_cores(mut self, cores: usize, switch: f64) -> Result<Model, ModelError> {
        if cores == 0 {
            return Err(ModelError::NoCores);
        }
        if !cost_ok(switch) {
            return Err(ModelError::BadCost {
                name: "switch",
                value: switch,
            });
        }
        self.cores = Some(cores);
        self.switch = switch;
        Ok(self)
    }

    /// The processors the endpoints share (`None`: one each).
    pub fn cores(&self) -> Option<usize> {
        self.cores
    }

    /// The time a shared core takes to turn from one endpoint to another.
    pub fn switch(&self) -> f64 {
        self.switch
    }

    /// The same machine with `k` more endpoints (a host), each on a link
    /// of its own to node 0. Errors: too many endpoints, or more state
    /// than [`MAX_STATE_BYTES`].
    pub fn with_extra_endpoints(mut self, k: usize) -> Result<Model, ModelError> {
        if k > MAX_NODES - self.nodes {
            return Err(ModelError::TooMany {
                p: self.nodes.saturating_add(k),
            });
        }
        self.extra = k;
        self.within_budget()
    }

    /// The network.
    pub fn network(&self) -> Network {
        self.network
    }

    /// Its nodes (p).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Nodes plus extra endpoints.
    pub fn endpoints(&self) -> usize {
        self.nodes + self.extra
    }

    /// The mesh's rows and columns ([`mesh_dims`]).
    pub fn mesh_dims(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The network's links (extra endpoints' links included), directed.
    pub fn links(&self) -> usize {
        let p = self.nodes;
        let net = match self.network {
            Network::Hypercube => p * self.dims as usize,
            Network::Ring => 2 * p,
            Network::Mesh | Network::MeshWrap => 4 * p,
            Network::Full => p * p,
        };
        net + 2 * self.extra
    }

    /// The link a message at `at` bound for `to` (≠ `at`) takes next, and
    /// the node it leads to.
    #[inline]
    pub fn step(&self, at: usize, to: usize) -> (usize, usize) {
        debug_assert_ne!(at, to);
        let p = self.nodes;
        if at >= p {
            // An extra endpoint's link up to node 0.
            return (self.links() - 2 * self.extra + 2 * (at - p), 0);
        }
        if to >= p {
            if at == 0 {
                return (self.links() - 2 * self.extra + 2 * (to - p) + 1, to);
            }
            return self.step(at, 0);
        }
        match self.network {
            Network::Hypercube => {
                let i = (at ^ to).trailing_zeros() as usize;
                (i * p + at, at ^ (1 << i))
            }
            Network::Ring => {
                let fwd = (to + p - at) % p;
                if fwd <= p - fwd {
                    (2 * at, (at + 1) % p)
                } else {
                    (2 * at + 1, (at + p - 1) % p)
                }
            }
            Network::Mesh | Network::MeshWrap => {
                let (r, c) = (at / self.cols, at % self.cols);
                let (tr, tc) = (to / self.cols, to % self.cols);
                let wrap = self.network == Network::MeshWrap;
                if c != tc {
                    let up = toward(c, tc, self.cols, wrap);
                    let nc = if up {
                        (c + 1) % self.cols
                    } else {
                        (c + self.cols - 1) % self.cols
                    };
                    (4 * at + usize::from(!up), r * self.cols + nc)
                } else {
                    let up = toward(r, tr, self.rows, wrap);
                    let nr = if up {
                        (r + 1) % self.rows
                    } else {
                        (r + self.rows - 1) % self.rows
                    };
                    (4 * at + 2 + usize::from(!up), nr * self.cols + c)
                }
            }
            Network::Full => (at * p + to, to),
        }
    }

    /// Hops from `a` to `b` on the route messages take.
    pub fn distance(&self, a: usize, b: usize) -> usize {
        let (mut at, mut hops) = (a, 0);
        while at != b {
            at = self.step(at, b).1;
            hops += 1;
        }
        hops
    }

    /// The nodes a link joins, `(from, to)`.
    pub fn link_ends(&self, link: usize) -> (usize, usize) {
        let p = self.nodes;
        let net = self.links() - 2 * self.extra;
        if link >= net {
            let j = (link - net) / 2;
            return if (link - net).is_multiple_of(2) {
                (p + j, 0)
            } else {
                (0, p + j)
            };
        }
        let (v, i) = match self.network {
            Network::Hypercube => (link % p, link / p),
            Network::Ring => (link / 2, link % 2),
            Network::Mesh | Network::MeshWrap => (link / 4, link % 4),
            Network::Full => (link / p, link % p),
        };
        let to = match self.network {
            Network::Hypercube => v ^ (1 << i),
            Network::Ring => {
                if i == 0 {
                    (v + 1) % p
                } else {
                    (v + p - 1) % p
                }
            }
            Network::Mesh | Network::MeshWrap => {
                let (r, c) = (v / self.cols, v % self.cols);
                match i {
                    0 => r * self.cols + (c + 1) % self.cols,
                    1 => r * self.cols + (c + self.cols - 1) % self.cols,
                    2 => ((r + 1) % self.rows) * self.cols + c,
                    _ => ((r + self.rows - 1) % self.rows) * self.cols + c,
                }
            }
            Network::Full => i,
        };
        (v, to)
    }
}

/// Whether to go up (+1) from `a` to `b` on a line (or ring when `wrap`) of
/// `n`: without wrap-around straight there; with it the shorter way, up on
/// a tie.
fn toward(a: usize, b: usize, n: usize, wrap: bool) -> bool {
    if !wrap {
        return b > a;
    }
    let up = (b + n - a) % n;
    up <= n - up
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(n: Network, p: usize) -> Model {
        Model::new(
            n,
            p,
            Costs {
                ts: 1.0,
                tw: 1.0,
                th: 1.0,
            },
        )
        .unwrap()
    }

    /// Every step crosses a link that joins the two nodes, and every route
    /// ends at its destination in the expected number of hops.
    #[test]
    fn routes_follow_links() {
        for n in Network::ALL {
            for p in [1usize, 2, 3, 4, 8, 9, 12, 16] {
                if n == Network::Hypercube && !p.is_power_of_two() {
                    continue;
                }
                let m = model(n, p).with_extra_endpoints(1).unwrap();
                for a in 0..=p {
                    for b in 0..=p {
                        let (mut at, mut hops) = (a, 0);
                        while at != b {
                            let (link, next) = m.step(at, b);
                            assert!(link < m.links());
                            assert_eq!(m.link_ends(link), (at, next), "{n} p={p}");
                            at = next;
                            hops += 1;
                            assert!(hops <= 2 * p + 2, "{n} p={p}: {a} → {b} loops");
                        }
                        if a < p && b < p {
                            let want = match n {
                                Network::Hypercube => (a ^ b).count_ones() as usize,
                                Network::Ring => ((b + p - a) % p).min((a + p - b) % p),
                                Network::Full => usize::from(a != b),
                                _ => {
                                    let (_, c) = m.mesh_dims();
                                    let (r, rr) = (p / c, |x: usize, y: usize, k: usize| {
                                        if n == Network::MeshWrap {
                                            ((y + k - x) % k).min((x + k - y) % k)
                                        } else {
                                            x.abs_diff(y)
                                        }
                                    });
                                    rr(a % c, b % c, c) + rr(a / c, b / c, r)
                                }
                            };
                            assert_eq!(hops, want, "{n} p={p}: {a} → {b}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let c = Costs {
            ts: 1.0,
            tw: 0.0,
            th: 0.0,
        };
        let e = Model::new(Network::Hypercube, 12, c).unwrap_err();
        assert!(
            e.to_string().contains("p = 12 is not a power of two"),
            "{e}"
        );
        assert!(e.to_string().contains("8 or 16"), "{e}");
        let e = Model::new(Network::Ring, 4, Costs { ts: -1.0, ..c }).unwrap_err();
        assert!(e.to_string().contains("ts = -1"), "{e}");
        let e = Model::new(Network::Ring, 4, Costs { th: f64::NAN, ..c }).unwrap_err();
        assert!(e.to_string().contains("th = NaN"), "{e}");
        // Costs whose sums would overflow are refused, not simulated.
        for big in [
            Costs { ts: 1e308, ..c },
            Costs { tw: 1e101, ..c },
            Costs { th: f64::MAX, ..c },
        ] {
            let e = Model::new(Network::Ring, 4, big).unwrap_err();
            assert!(e.to_string().contains("numbers from 0 to 1e100"), "{e}");
        }
        let at_most = Costs {
            ts: MAX_COST,
            tw: MAX_COST,
            th: MAX_COST,
        };
        let m = Model::new(Network::Ring, 4, at_most).unwrap();
        let e = m.clone().with_cores(2, 1e300).unwrap_err();
        assert!(e.to_string().contains("switch = 1e300"), "{e}");
        m.with_cores(2, MAX_COST).unwrap();
        assert_eq!(Model::new(Network::Mesh, 0, c), Err(ModelError::NoNodes));
        for n in Network::ALL {
            assert_eq!(Network::parse(n.name()), Some(n));
        }
        assert_eq!(Routing::parse("ct"), Some(Routing::CutThrough));
        assert_eq!(Ports::parse("all"), Some(Ports::All));
    }
}
