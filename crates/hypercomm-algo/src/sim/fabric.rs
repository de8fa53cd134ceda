//! The state of the network while messages cross it: when each link and
//! each receive port is free, and what each link carried.
//!
//! A message (a [`Flight`]) goes through three kinds of step, each at a
//! time the caller's event queue decides:
//!
//! 1. [`Fabric::start`] at time t: the sender's start-up, ts; the header
//!    then asks for its first link at t + ts.
//! 2. [`Fabric::hop`] when the header asks for a link: it gets it when the
//!    link is free (with contention: after the messages that asked before
//!    it), and the link is then busy for tw·m while the body crosses. The
//!    next link is asked for th later with cut-through routing, th + tw·m
//!    later with store-and-forward. With one port the sender is free again
//!    when its body has left on the first link.
//! 3. At the last link the header reaches the receiver th after it got the
//!    link; the body streams in (tw·m) when the receiver's port is free
//!    (one port: one message at a time). [`Fabric::hop`] says so at once
//!    when no earlier request can still come, otherwise it asks for a
//!    [`Fabric::port`] step at that time, so that the port serves messages
//!    in the order their headers arrive.
//!
//! Without contention and with every port free, a message over l links
//! arrives ts + l·(th + tw·m) after it starts with store-and-forward
//! routing and ts + l·th + tw·m with cut-through (seed 001).

use super::network::{Model, Network, Ports, Routing};
use std::collections::HashMap;

/// A message crossing the network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flight {
    /// Sending endpoint.
    pub src: u32,
    /// Receiving endpoint.
    pub dst: u32,
    /// Where its header is.
    pub at: u32,
    /// Its length in words.
    pub words: f64,
}

impl Flight {
    /// A message of `words` words from `src` to `dst`, not started.
    pub fn new(src: usize, dst: usize, words: f64) -> Flight {
        Flight {
            src: src as u32,
            dst: dst as u32,
            at: src as u32,
            words,
        }
    }
}

/// What happens next to a message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Its header asks for the next link at this time: call
    /// [`Fabric::hop`] then.
    Hop(f64),
    /// Its header reaches the receiver at this time: call [`Fabric::port`]
    /// then.
    Port(f64),
    /// It has arrived whole at this time.
    Arrive(f64),
    /// Its sender asks its core for the start-up at this time (endpoints
    /// sharing cores, [`Model::with_cores`]): call [`Fabric::core`] then.
    Core(f64),
}

/// The sender's side of a start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Started {
    /// What happens next.
    pub next: Next,
    /// When the sender may start its next message, if already known (all
    /// ports, or a message to itself); with one port [`Fabric::hop`] tells
    /// it at the first link.
    pub free: Option<f64>,
}

/// The outcome of a hop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hopped {
    /// What happens next.
    pub next: Next,
    /// With one port, after the first link: when the sender is free.
    pub free: Option<f64>,
}

/// What one link carried.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Traffic {
    /// Messages.
    pub messages: u64,
    /// Words.
    pub words: f64,
}

/// Per-link state: when it is free, and what it carried.
#[derive(Debug, Clone)]
enum Links {
    /// Twelve bytes a link: its free time and its messages; the words it
    /// carried are kept per link only once messages of different lengths
    /// have been seen (see [`Words`]).
    Dense {
        free: Vec<f64>,
        messages: Vec<u32>,
        words: Words,
    },
    /// The fully connected network: only the links used.
    Sparse(HashMap<usize, (f64, Traffic)>),
}

/// The words each link carried. While every message has had the same
/// length, a link's words are that length added once per message (the
/// same sum, bit for bit, as adding them as they come), so no array is
/// needed; the first message of another length makes one.
#[derive(Debug, Clone)]
enum Words {
    /// No message yet, or every message so far this many words long.
    Uniform(Option<f64>),
    /// Per link.
    Each(Vec<f64>),
}

/// `w` added `k` times to 0, one by one.
fn repeated(w: f64, k: u32) -> f64 {
    (0..k).fold(0.0, |s, _| s + w)
}

/// The network's state: links and receive ports.
#[derive(Debug, Clone)]
pub struct Fabric {
    model: Model,
    links: Links,
    recv_free: Vec<f64>,
    /// Port steps asked for and not yet taken, per endpoint.
    recv_asked: Vec<u32>,
    /// Shared cores: when each is free, and the endpoint it last worked
    /// for.
    cores: Vec<(f64, u32)>,
}

impl Fabric {
    /// An idle network of `model`.
    pub fn new(model: &Model) -> Fabric {
        let n = model.links();
        let links = if model.network() == Network::Full {
            Links::Sparse(HashMap::new())
        } else {
            Links::Dense {
                free: vec![0.0; n],
                messages: vec![0; n],
                words: Words::Uniform(None),
            }
        };
        Fabric {
            model: model.clone(),
            links,
            recv_free: vec![0.0; model.endpoints()],
            recv_asked: vec![0; model.endpoints()],
            cores: vec![(0.0, u32::MAX); model.cores().unwrap_or(0)],
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The sender starts `f` at time `t`. On shared cores it asks its core
    /// first ([`Next::Core`]).
    #[inline]
    pub fn start(&self, f: &Flight, t: f64) -> Started {
        if self.cores.is_empty() {
            return self.started(f, t);
        }
        Started {
            next: Next::Core(t),
            free: None,
        }
    }

    /// The sender of `f` asks its core at `now` (after [`Next::Core`]): the
    /// start-up begins when the core is free (and has turned to it), and
    /// the core is then busy for the start-up and the body's copy.
    pub fn core(&mut self, f: &Flight, now: f64) -> Started {
        let n = self.cores.len();
        let c = &mut self.cores[f.src as usize % n];
        let mut begin = c.0.max(now);
        if c.1 != f.src && c.1 != u32::MAX {
            begin += self.model.switch();
        }
        let costs = self.model.costs;
        let body = if f.src == f.dst {
            0.0
        } else {
            costs.tw * f.words
        };
        *c = (begin + costs.ts + body, f.src);
        self.started(f, begin)
    }

    /// Whether the endpoints share cores, so that a message that has
    /// arrived waits for its receiver's core ([`Fabric::wake`]).
    #[inline]
    pub fn shares_cores(&self) -> bool {
        !self.cores.is_empty()
    }

    /// Message `f` has arrived whole at `now` on shared cores: its receiver
    /// has it at once when its core last worked for it (or for nobody),
    /// else when the core is free and has turned to it (a switch). Returns
    /// that time.
    pub fn wake(&mut self, f: &Flight, now: f64) -> f64 {
        let n = self.cores.len();
        let c = &mut self.cores[f.dst as usize % n];
        let begin = if c.1 == f.dst || c.1 == u32::MAX {
            now
        } else {
            c.0.max(now) + self.model.switch()
        };
        *c = (c.0.max(begin), f.dst);
        begin
    }

    #[inline]
    fn started(&self, f: &Flight, t: f64) -> Started {
        let ready = t + self.model.costs.ts;
        if f.src == f.dst {
            return Started {
                next: Next::Arrive(ready),
                free: Some(ready),
            };
        }
        Started {
            next: Next::Hop(ready),
            free: (self.model.ports == Ports::All).then_some(ready),
        }
    }

    /// The header of `f` asks for its next link at `now`.
    #[inline]
    pub fn hop(&mut self, f: &mut Flight, now: f64) -> Hopped {
        let c = self.model.costs;
        let body = c.tw * f.words;
        let (link, next) = self.model.step(f.at as usize, f.dst as usize);
        let contention = self.model.contention;
        let granted = match &mut self.links {
            Links::Dense {
                free,
                messages,
                words,
            } => {
                let g = if contention { free[link].max(now) } else { now };
                free[link] = g + body;
                match words {
                    Words::Uniform(Some(w)) if *w == f.words => {}
                    Words::Uniform(w @ None) => *w = Some(f.words),
                    Words::Uniform(Some(w)) => {
                        let w = *w;
                        let mut each: Vec<f64> = messages.iter().map(|&k| repeated(w, k)).collect();
                        each[link] += f.words;
                        *words = Words::Each(each);
                    }
                    Words::Each(each) => each[link] += f.words,
                }
                messages[link] += 1;
                g
            }
            Links::Sparse(map) => {
                let e = map.entry(link).or_insert((0.0, Traffic::default()));
                let g = if contention { e.0.max(now) } else { now };
                e.0 = g + body;
                e.1.messages += 1;
                e.1.words += f.words;
                g
            }
        };
        let first = f.at == f.src;
        let free = (first && self.model.ports == Ports::One).then_some(granted + body);
        f.at = next as u32;
        if next != f.dst as usize {
            let t = match self.model.routing {
                Routing::CutThrough => granted + c.th,
                Routing::StoreAndForward => granted + c.th + body,
            };
            return Hopped {
                next: Next::Hop(t),
                free,
            };
        }
        // The last link: the header is at the receiver th later.
        let header = granted + c.th;
        let dst = f.dst as usize;
        let next = if self.model.ports == Ports::All {
            Next::Arrive(header + body)
        } else if granted == now && self.recv_asked[dst] == 0 {
            // No request for this port can come before this one any more.
            Next::Arrive(self.take_port(dst, header, body))
        } else {
            self.recv_asked[dst] += 1;
            Next::Port(header)
        };
        Hopped { next, free }
    }

    /// The header of `f` reached its receiver at `now` (after
    /// [`Next::Port`]): the body streams in when the port is free. Returns
    /// the arrival time.
    pub fn port(&mut self, f: &Flight, now: f64) -> f64 {
        let dst = f.dst as usize;
        self.recv_asked[dst] -= 1;
        self.take_port(dst, now, self.model.costs.tw * f.words)
    }

    fn take_port(&mut self, dst: usize, at: f64, body: f64) -> f64 {
        let start = self.recv_free[dst].max(at);
        self.recv_free[dst] = start + body;
        start + body
    }

    /// What link `link` carried.
    pub fn traffic(&self, link: usize) -> Traffic {
        match &self.links {
            Links::Dense {
                words, messages, ..
            } => Traffic {
                messages: u64::from(messages[link]),
                words: match words {
                    Words::Uniform(w) => repeated(w.unwrap_or(0.0), messages[link]),
                    Words::Each(each) => each[link],
                },
            },
            Links::Sparse(map) => map.get(&link).map(|e| e.1).unwrap_or_default(),
        }
    }

    /// Every link that carried something, with its traffic, in link order.
    pub fn used_links(&self) -> Vec<(usize, Traffic)> {
        match &self.links {
            Links::Dense { messages, .. } => (0..messages.len())
                .filter(|&l| messages[l] > 0)
                .map(|l| (l, self.traffic(l)))
                .collect(),
            Links::Sparse(map) => {
                let mut v: Vec<(usize, Traffic)> = map.iter().map(|(&l, e)| (l, e.1)).collect();
                v.sort_by_key(|e| e.0);
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::network::Costs;
    use super::*;

    /// Drive one message alone through the fabric.
    fn alone(model: &Model, src: usize, dst: usize, words: f64) -> f64 {
        let mut fab = Fabric::new(model);
        let mut f = Flight::new(src, dst, words);
        let mut next = fab.start(&f, 0.0).next;
        loop {
            match next {
                Next::Hop(t) => next = fab.hop(&mut f, t).next,
                Next::Port(t) => return fab.port(&f, t),
                Next::Arrive(t) => return t,
                Next::Core(t) => next = fab.core(&f, t).next,
            }
        }
    }

    /// A link's words are the sum of its messages' lengths in the order
    /// they came, bit for bit, before and after messages of another length
    /// make the fabric keep words per link.
    #[test]
    fn links_count_words_as_they_come() {
        let c = Costs {
            ts: 1.0,
            tw: 1.0,
            th: 0.0,
        };
        let m = Model::new(Network::Ring, 4, c).unwrap();
        let mut fab = Fabric::new(&m);
        let mut sums = [0.0f64; 2];
        for (k, (dst, words)) in [(1, 0.1), (1, 0.1), (3, 0.1), (1, 0.1), (1, 0.7), (3, 0.1)]
            .into_iter()
            .enumerate()
        {
            let mut f = Flight::new(0, dst, words);
            fab.hop(&mut f, k as f64 * 10.0);
            sums[usize::from(dst == 3)] += words;
            let (fwd, back) = (fab.traffic(0), fab.traffic(1));
            assert_eq!((fwd.words, back.words), (sums[0], sums[1]));
            assert_eq!(fwd.messages + back.messages, k as u64 + 1);
        }
        assert_eq!(fab.used_links().len(), 2);
    }

    /// Seed 001's point-to-point times: ts + l·(th + tw·m) with
    /// store-and-forward, ts + l·th + tw·m with cut-through.
    #[test]
    fn one_message_costs_the_textbook_time() {
        let c = Costs {
            ts: 100.0,
            tw: 3.0,
            th: 7.0,
        };
        for net in [Network::Ring, Network::Hypercube, Network::MeshWrap] {
            let mut m = Model::new(net, 16, c).unwrap();
            for (src, dst) in [(0, 5), (3, 12), (15, 0), (6, 7)] {
                let l = m.distance(src, dst) as f64;
                for words in [0.0, 1.0, 10.0] {
                    m.routing = Routing::StoreAndForward;
                    assert_eq!(alone(&m, src, dst, words), 100.0 + l * (7.0 + 3.0 * words));
                    m.routing = Routing::CutThrough;
                    assert_eq!(alone(&m, src, dst, words), 100.0 + l * 7.0 + 3.0 * words);
                }
            }
        }
    }
}
