//! The simulated machine a job runs on: its model (network, routing,
//! ports, costs, contention), how many bytes make a word, and what
//! computation between calls costs. Set by [`Config`]'s fields, or by
//! `HYPERCOMM_SIM=key=value,…` (how `hypercomm sim run` runs an unchanged
//! program).

use crate::error::{Error, Result};
use hypercomm_algo::sim::{Costs, Model, Network, Ports, Routing};
use std::fmt;

/// The environment variable that makes `hypercomm::run` simulate.
pub const ENV: &str = "HYPERCOMM_SIM";

/// Where a simulated job appends its virtual end time (set by `hypercomm
/// sim run`).
pub const REPORT_ENV: &str = "HYPERCOMM_SIM_REPORT";

/// What computation between communication calls costs in virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Compute {
    /// Nothing (seed 001's model): only messages take time, and what a
    /// program declares with `hypercomm::sim::compute`.
    #[default]
    Zero,
    /// The thread's CPU time between calls, times this factor (a slower
    /// or faster simulated processor), plus what the program declares.
    Cpu(f64),
}

/// A simulated machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The network.
    pub network: Network,
    /// Its nodes; `None`: one per endpoint of the job. A job with one
    /// endpoint more than the machine has nodes (a host) gets a link of
    /// its own to node 0.
    pub nodes: Option<usize>,
    /// Routing through intermediate nodes.
    pub routing: Routing,
    /// One port or all.
    pub ports: Ports,
    /// ts, tw (per word), th, in seconds.
    pub costs: Costs,
    /// Links carry one message at a time per direction.
    pub contention: bool,
    /// Bytes per word (tw is per word).
    pub word_bytes: f64,
    /// What computation costs.
    pub compute: Compute,
}

impl Default for Config {
    /// A fully connected machine of one node per endpoint, store-and-forward
    /// routing, one port, contention, ts = 1 µs, tw = 1 ns per 8-byte word,
    /// th = 0, computation free.
    fn default() -> Config {
        Config {
            network: Network::Full,
            nodes: None,
            routing: Routing::StoreAndForward,
            ports: Ports::One,
            costs: Costs {
                ts: 1e-6,
                tw: 1e-9,
                th: 0.0,
            },
            contention: true,
            word_bytes: 8.0,
            compute: Compute::Zero,
        }
    }
}

fn bad(what: String) -> Error {
    Error::InvalidArgument { op: ENV, what }
}

impl Config {
    /// The model for a job of `endpoints` endpoints. Errors: a bad cost or
    /// size (seed 001's model rules: a hypercube has 2^d nodes, …), a
    /// machine with too few nodes for the job, a word that is not a
    /// positive number of bytes, a negative CPU-time factor.
    pub fn model(&self, endpoints: usize) -> Result<Model> {
        let nodes = self.nodes.unwrap_or(endpoints);
        if endpoints > nodes + 1 {
            return Err(bad(format!(
                "the job has {endpoints} endpoints but the simulated machine has {nodes} nodes"
            )));
        }
        if !(self.word_bytes.is_finite() && self.word_bytes > 0.0) {
            return Err(bad(format!(
                "word = {} is not a positive number of bytes",
                self.word_bytes
            )));
        }
        if let Compute::Cpu(f) = self.compute {
            if !(f.is_finite() && f >= 0.0) {
                return Err(bad(format!("compute = cpu:{f} needs a factor ≥ 0")));
            }
        }
        let mut m = Model::new(self.network, nodes, self.costs).map_err(|e| bad(e.to_string()))?;
        m.routing = self.routing;
        m.ports = self.ports;
        m.contention = self.contention;
        m.with_extra_endpoints(endpoints.saturating_sub(nodes))
            .map_err(|e| bad(e.to_string()))
    }

    /// The configuration `HYPERCOMM_SIM` describes, `None` when it is unset
    /// or empty.
    pub fn from_env() -> Result<Option<Config>> {
        match std::env::var(ENV) {
            Ok(s) if !s.trim().is_empty() => s.parse().map(Some),
            _ => Ok(None),
        }
    }
}

impl fmt::Display for Config {
    /// The `HYPERCOMM_SIM` form: `network=…,p=…,ts=…,tw=…,th=…,routing=…,
    /// ports=…,contention=on|off,word=…,compute=zero|cpu:F` (`p` only when
    /// set).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "network={}", self.network)?;
        if let Some(p) = self.nodes {
            write!(f, ",p={p}")?;
        }
        let c = self.costs;
        write!(
            f,
            ",ts={},tw={},th={},routing={},ports={},contention={},word={},compute=",
            c.ts,
            c.tw,
            c.th,
            self.routing.name(),
            self.ports.name(),
            if self.contention { "on" } else { "off" },
            self.word_bytes
        )?;
        match self.compute {
            Compute::Zero => write!(f, "zero"),
            Compute::Cpu(x) => write!(f, "cpu:{x}"),
        }
    }
}

impl std::str::FromStr for Config {
    type Err = Error;

    /// Parse the `HYPERCOMM_SIM` form (any subset of the keys, in any
    /// order; the rest are [`Config::default`]'s).
    fn from_str(s: &str) -> Result<Config> {
        let mut c = Config::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("{item:?} is not key=value")))?;
            let (k, v) = (k.trim(), v.trim());
            let num = |what: &str| -> Result<f64> {
                v.parse::<f64>()
                    .map_err(|_| bad(format!("{what} = {v:?} is not a number")))
            };
            match k {
                "network" | "topology" => {
                    c.network = Network::parse(v).ok_or_else(|| {
                        bad(format!(
                            "network {v:?} is not one of hypercube, ring, mesh, mesh-wrap, full"
                        ))
                    })?
                }
                "p" | "nodes" => {
                    c.nodes = Some(
                        v.parse()
                            .map_err(|_| bad(format!("p = {v:?} is not a number of nodes")))?,
                    )
                }
                "ts" => c.costs.ts = num("ts")?,
                "tw" => c.costs.tw = num("tw")?,
                "th" => c.costs.th = num("th")?,
                "routing" => {
                    c.routing = Routing::parse(v)
                        .ok_or_else(|| bad(format!("routing {v:?} is neither sf nor ct")))?
                }
                "ports" => {
                    c.ports = Ports::parse(v)
                        .ok_or_else(|| bad(format!("ports {v:?} is neither one nor all")))?
                }
                "contention" => {
                    c.contention = match v {
                        "on" | "true" | "1" => true,
                        "off" | "false" | "0" => false,
                        _ => return Err(bad(format!("contention {v:?} is neither on nor off"))),
                    }
                }
                "word" => c.word_bytes = num("word")?,
                "compute" => {
                    c.compute =
                        match v.split_once(':') {
                            None if v == "zero" => Compute::Zero,
                            None if v == "cpu" => Compute::Cpu(1.0),
                            Some(("cpu", f)) => Compute::Cpu(f.parse().map_err(|_| {
                                bad(format!("compute = {v:?}: {f:?} is not a factor"))
                            })?),
                            _ => {
                                return Err(bad(format!(
                                    "compute {v:?} is neither zero nor cpu[:factor]"
                                )))
                            }
                        }
                }
                _ => {
                    return Err(bad(format!(
                        "unknown key {k:?} (keys: network, p, ts, tw, th, routing, ports, \
                         contention, word, compute)"
                    )))
                }
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_form_round_trips() {
        let c: Config = "network=hypercube,p=16,ts=100,tw=3,th=7,routing=ct,ports=all,\
                         contention=off,word=4,compute=cpu:2.5"
            .parse()
            .unwrap();
        assert_eq!(c.network, Network::Hypercube);
        assert_eq!(c.nodes, Some(16));
        assert_eq!(c.costs.th, 7.0);
        assert_eq!(c.routing, Routing::CutThrough);
        assert_eq!(c.compute, Compute::Cpu(2.5));
        assert_eq!(c.to_string().parse::<Config>().unwrap(), c);
        assert_eq!(
            Config::default().to_string().parse::<Config>().unwrap(),
            Config::default()
        );
    }

    #[test]
    fn bad_settings_say_what_is_wrong() {
        let err = |s: &str| s.parse::<Config>().unwrap_err().to_string();
        assert!(err("network=torus").contains("\"torus\" is not one of hypercube"));
        assert!(err("ts=fast").contains("ts = \"fast\" is not a number"));
        assert!(err("colour=red").contains("unknown key \"colour\""));
        assert!(err("compute=gpu").contains("neither zero nor cpu"));
        let m = |s: &str, n: usize| {
            s.parse::<Config>()
                .unwrap()
                .model(n)
                .unwrap_err()
                .to_string()
        };
        assert!(m("network=hypercube", 12).contains("p = 12 is not a power of two"));
        assert!(m("ts=-1", 4).contains("ts = -1 is not a time"));
        assert!(m("p=4", 8).contains("8 endpoints but the simulated machine has 4 nodes"));
        assert!(m("word=0", 4).contains("word = 0"));
        // A host beyond the nodes hangs off node 0.
        let model = "network=hypercube,p=4"
            .parse::<Config>()
            .unwrap()
            .model(5)
            .unwrap();
        assert_eq!(model.endpoints(), 5);
    }
}
