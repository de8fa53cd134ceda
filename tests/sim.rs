//! The simulator transport: message semantics (the conformance suite on
//! simulated machines), virtual time against the model and against
//! schedule simulation of the same operations (1 024 virtual ranks), what
//! programs declare, deadlocks, and the trace in virtual time.

mod common;

use common::Launcher;
use hypercomm::collective::{Sum, Topology};
use hypercomm::sim::{self, Call, Config, Costs, Model, Network, Routing};
use hypercomm::transport::Builder;
use hypercomm::{BoxError, Comm, Error};
use hypercomm_algo::{registry, Algorithm, Collective};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// Costs in whole seconds, so that every virtual time is exact.
const COSTS: Costs = Costs {
    ts: 100.0,
    tw: 3.0,
    th: 7.0,
};

fn config(network: Network) -> Config {
    Config {
        network,
        costs: COSTS,
        ..Config::default()
    }
}

fn builders(config: &Config, endpoints: usize) -> Vec<Box<dyn Builder>> {
    let (_, b) = sim::SimBuilder::job(config.clone(), endpoints).unwrap();
    b.into_iter()
        .map(|b| Box::new(b) as Box<dyn Builder>)
        .collect()
}

// ------------------------------------------------------------ conformance

/// A simulated machine for jobs of `nodes` ranks (and a host when `host`):
/// every such machine runs jobs the same way.
trait Machine {
    fn config(nodes: usize, host: bool) -> Config;
}

impl<M: Machine> Launcher for M {
    const REAL_TIME: bool = false;

    fn run<R, E, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
    where
        R: Send + Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: Fn(&Comm) -> Result<R, E> + Sync,
    {
        hypercomm::run_builders(builders(&M::config(n, false), n), f)
    }

    fn run_with_host<H, R, EH, EN, FH, FN>(
        n: usize,
        host_fn: FH,
        node_fn: FN,
    ) -> hypercomm::Result<(H, Vec<R>)>
    where
        H: Send + Serialize + DeserializeOwned,
        R: Send + Serialize + DeserializeOwned,
        EH: Into<BoxError>,
        EN: Into<BoxError>,
        FH: FnOnce(&Comm) -> Result<H, EH> + Send,
        FN: Fn(&Comm) -> Result<R, EN> + Sync,
    {
        let c = M::config(n, true);
        hypercomm::run_builders_with_host(builders(&c, n + 1), host_fn, node_fn)
    }
}

/// Jobs on a simulated fully connected machine (the default one), whose
/// ranks are threads taking turns in virtual time.
struct Simulated;

impl Machine for Simulated {
    fn config(_: usize, _: bool) -> Config {
        Config::default()
    }
}

mod conformance {
    crate::common::conformance::conformance_suite!(crate::Simulated);
}

/// The same on a ring with cut-through routing and all ports: messages
/// cross several links and overtake nothing. With a host, the ring has the
/// nodes and the host hangs off node 0.
struct SimulatedRing;

impl Machine for SimulatedRing {
    fn config(nodes: usize, host: bool) -> Config {
        Config {
            routing: Routing::CutThrough,
            ports: sim::Ports::All,
            nodes: host.then_some(nodes),
            ..config(Network::Ring)
        }
    }
}

mod conformance_ring {
    crate::common::conformance::conformance_suite!(crate::SimulatedRing);
}

// ------------------------------------------------------------ virtual time

/// One message of m words over l links costs ts + l·(th + tw·m) (SF), and
/// its sender is busy until it has left (ts + tw·m).
#[test]
fn a_message_takes_the_models_time() {
    for (network, routing, p, dst) in [
        (Network::Full, Routing::StoreAndForward, 2, 1),
        (Network::Ring, Routing::StoreAndForward, 8, 3),
        (Network::Ring, Routing::CutThrough, 8, 4),
        (Network::Hypercube, Routing::StoreAndForward, 16, 15),
    ] {
        let c = Config {
            routing,
            ..config(network)
        };
        let out = sim::run(&c, p, |comm| {
            if comm.rank() == 0 {
                comm.send(&[7u64; 10], dst, 1)?;
            } else if comm.rank() == dst {
                comm.recv_vec::<u64>(0, 1)?;
            }
            Ok::<_, Error>(())
        })
        .unwrap();
        let l = Model::new(network, p, COSTS).unwrap().distance(0, dst) as f64;
        let body = 3.0 * 10.0;
        let want = match routing {
            Routing::StoreAndForward => 100.0 + l * (7.0 + body),
            Routing::CutThrough => 100.0 + l * 7.0 + body,
        };
        assert_eq!(out.summary.end[dst], want, "{network} {routing:?}");
        assert_eq!(out.summary.end[0], 100.0 + body, "{network}: the sender");
        assert_eq!(out.summary.messages, 1);
    }
}

/// A machine larger than the job: 5 ranks on nodes 0–4 of a 16-node
/// hypercube, the other nodes idle. Messages take the big machine's
/// distances, and wildcard receives and collectives run (they look at
/// every rank's state, not at every node's).
#[test]
fn a_job_smaller_than_the_machine_runs_on_its_first_nodes() {
    let c = Config {
        nodes: Some(16),
        ..config(Network::Hypercube)
    };
    let out = sim::run(&c, 5, |comm| {
        if comm.rank() == 0 {
            comm.send(&[7u64; 10], 3, 1)?;
        } else if comm.rank() == 3 {
            let (v, st) = comm.recv_vec::<u64>(hypercomm::ANY_SOURCE, 1)?;
            assert_eq!((v.len(), st.source), (10, hypercomm::Rank::Node(0)));
        }
        comm.barrier()?;
        comm.allreduce(&[comm.rank() as u64 + 1], Sum)
    })
    .unwrap();
    for r in &out.results {
        assert_eq!(r, &vec![15u64], "1 + 2 + … + 5");
    }
    let l = Model::new(Network::Hypercube, 16, COSTS)
        .unwrap()
        .distance(0, 3) as f64;
    assert_eq!(l, 2.0);
    assert!(
        out.summary.end[3] >= 100.0 + l * (7.0 + 30.0),
        "{:?}",
        out.summary
    );
}

/// Declared computation moves a rank's clock and delays what depends on it.
#[test]
fn declared_computation_takes_virtual_time() {
    let out = sim::run(&config(Network::Full), 2, |comm| {
        if comm.rank() == 0 {
            assert!(sim::compute(Duration::from_secs(1000)));
            assert_eq!(sim::now(), Some(1000.0));
            comm.send::<u8>(&[], 1, 0)?;
        } else {
            comm.recv_into::<u8>(&mut [], 0, 0)?;
        }
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(out.summary.end, [1100.0, 1107.0]);
    assert!(
        !sim::compute(Duration::from_secs(1)),
        "not a simulated rank"
    );
}

/// A program whose ranks all wait for each other is stopped, and says so.
#[test]
fn a_deadlock_is_reported_not_hung() {
    let err = sim::run(&config(Network::Full), 3, |comm| {
        let from = (comm.rank() + 1) % 3;
        comm.recv_into::<u8>(&mut [], from, 0)?;
        Ok::<_, Error>(())
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("deadlock") && err.contains("every rank waits"),
        "{err}"
    );
}

/// A rank that polls with `iprobe` sees the message once virtual time has
/// reached its arrival, and spends the virtual time up to it polling.
#[test]
fn polling_lets_virtual_time_move_on() {
    let out = sim::run(&config(Network::Full), 2, |comm| {
        if comm.rank() == 0 {
            sim::compute(Duration::from_secs(500));
            comm.send(&[1u32], 1, 3)?;
        } else {
            let mut polls = 0u64;
            while comm.iprobe(0, 3)?.is_none() {
                polls += 1;
            }
            assert!(polls > 0);
            assert_eq!(sim::now(), Some(500.0 + 100.0 + 7.0 + 3.0 * 0.5));
            comm.recv::<u32>(0, 3)?;
        }
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(out.summary.end[1], 500.0 + 100.0 + 7.0 + 1.5);
}

/// Bad machines are errors before anything runs.
#[test]
fn bad_machines_are_named() {
    let err = |c: Config, n: usize| {
        sim::run(&c, n, |_| Ok::<_, Error>(()))
            .unwrap_err()
            .to_string()
    };
    let e = err(config(Network::Hypercube), 12);
    assert!(e.contains("p = 12 is not a power of two"), "{e}");
    let mut bad = config(Network::Ring);
    bad.costs.tw = -1.0;
    assert!(err(bad, 4).contains("tw = -1 is not a time"));
    let e = hypercomm::run_on(hypercomm::TransportKind::Sim, 0, |_| Ok::<_, Error>(()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least one node"), "{e}");
}

/// Costs so large that virtual time would overflow are refused before
/// the job starts, in every form a machine is given.
#[test]
fn costs_beyond_the_maximum_are_refused() {
    for (name, costs) in [
        ("ts", Costs { ts: 1e308, ..COSTS }),
        ("tw", Costs { tw: 1e308, ..COSTS }),
        ("th", Costs { th: 1e101, ..COSTS }),
    ] {
        let c = Config {
            costs,
            ..config(Network::Hypercube)
        };
        let e = sim::run(&c, 8, |comm| comm.allreduce(&[1u64], Sum))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{name} = ")) && e.contains("from 0 to 1e100"),
            "{e}"
        );
    }
    let e = "network=hypercube,p=8,ts=1e308"
        .parse::<Config>()
        .unwrap()
        .model(8)
        .unwrap_err();
    assert!(e.to_string().contains("ts = 1e308 is not a time"), "{e}");
}

/// A word so small that a message's time overflows aborts the job with a
/// message saying so, on every rank, instead of panicking and hanging.
#[test]
fn virtual_time_that_overflows_aborts_the_job() {
    let c = Config {
        word_bytes: 1e-306,
        ..config(Network::Hypercube)
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = sim::run(&c, 8, |comm| {
            let mut x = vec![comm.rank() as u64; 1000];
            comm.bcast(&mut x, 0usize)?;
            comm.allreduce(&x, Sum)
        });
        let _ = tx.send(r.map(|_| ()).map_err(|e| e.to_string()));
    });
    let e = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the job ends")
        .unwrap_err();
    assert!(e.contains("virtual time overflowed"), "{e}");
    assert!(e.contains("too large to simulate"), "{e}");
}

// ----------------------------------------- against schedule simulation

/// The schedules the library runs for broadcast (binomial), allreduce
/// (recursive doubling) and barrier (dissemination) under the hypercube
/// setting, one after another.
fn hypercube_ops(me: usize, p: usize, m: usize) -> hypercomm_algo::Schedule {
    let call = Call::new(p, m);
    let gen =
        |c: Collective, a: Algorithm| registry::find(c, a).unwrap().generate(&call.params(me));
    gen(Collective::Bcast, Algorithm::Binomial)
        .then(gen(Collective::Allreduce, Algorithm::RecursiveDoubling))
        .then(gen(Collective::Barrier, Algorithm::Dissemination))
}

/// A program (broadcast + allreduce + barrier) on 1 024 virtual ranks of a
/// hypercube ends, rank by rank, exactly when schedule simulation of the
/// same operations says.
#[test]
fn a_program_on_1024_ranks_ends_when_schedule_simulation_says() {
    let p = 1024;
    let m = 64;
    for routing in [Routing::StoreAndForward, Routing::CutThrough] {
        let c = Config {
            routing,
            ..config(Network::Hypercube)
        };
        let out = sim::run(&c, p, |comm| {
            comm.set_check(false);
            comm.set_topology(Topology::Hypercube);
            let mut x = vec![comm.rank() as f64; m];
            comm.bcast(&mut x, 0usize)?;
            let y = comm.allreduce(&x, Sum)?;
            comm.barrier()?;
            Ok::<_, Error>(y[0])
        })
        .unwrap();
        assert!(out.results.iter().all(|&y| y == 0.0));
        let mut model = Model::new(Network::Hypercube, p, COSTS).unwrap();
        model.routing = routing;
        let want = sim::simulate(&model, p, &mut |me| hypercube_ops(me, p, m), 1.0).unwrap();
        assert_eq!(out.summary.end, want.finish, "{routing:?}");
        assert_eq!(out.summary.messages, want.messages);
    }
}

// ------------------------------------------------------------ traces

/// A 1 024-node hypercube run traced in virtual time: the PICL file's
/// times are the simulated machine's (the last record at the virtual end
/// of the run, every receive after its send), the Chrome JSON has every
/// node, and the HTML report opens in headless Chromium with 1 024 rows in
/// each view.
#[test]
fn a_1024_node_run_traced_in_virtual_time() {
    use hypercomm::trace::{self, Output};
    let p = 1024;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hypercomm-sim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("run.trace");
    trace::enable(trace::Config::new(&file, Output::PiclVerbose));
    let out = sim::run(&config(Network::Hypercube), p, |comm| {
        comm.set_topology(Topology::Hypercube);
        let mut x = vec![comm.rank() as f64; 16];
        comm.bcast(&mut x, 0usize)?;
        let y = comm.allreduce(&x, Sum)?;
        comm.barrier()?;
        Ok::<_, Error>(y[0])
    })
    .unwrap();
    trace::disable();
    let t = trace::read_files(std::slice::from_ref(&file)).unwrap();
    assert_eq!(t.nodes(), (0..p as i32).collect::<Vec<_>>());
    trace::clock::check_causal(&t).unwrap();
    // Times in ns of virtual seconds: the last record is at the end.
    let last = t.records.iter().map(|r| r.time).max().unwrap();
    assert_eq!(last, (out.summary.time() * 1e9).round() as i64);
    let json = trace::render(&t, Output::Chrome);
    for n in [0, 511, 1023] {
        assert!(
            json.contains(&format!("\"pid\":{n}")) || json.contains(&format!("\"tid\":{n}")),
            "node {n} in the JSON"
        );
    }
    let html = trace::render(&t, Output::Html);
    let Some(chrome) = common::browser::chromium() else {
        return;
    };
    let page = dir.join("report.html");
    common::browser::write_checked(&html, &t.nodes(), &page);
    let (dom, err) = common::browser::open(
        &chrome,
        &page,
        &dir.join("profile"),
        20000,
        &["--dump-dom".into()],
    );
    assert!(
        dom.contains("RESULT: OK")
            && dom.contains("spacetime rows 1024")
            && dom.contains("matrix rows 1024"),
        "chromium check:\n{}",
        common::browser::verdict(&dom, &err)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Observing a run does not change its virtual time: the same program with
/// check mode on (the default), traced and not, ends at the same virtual
/// time on every node. (Untraced, a checked call took the direct road,
/// whose first round overlaps the signature exchange differently: a
/// reduce of 8 words on 16 nodes took 8.1 units untraced, 5.1 traced.)
#[test]
fn a_trace_does_not_change_virtual_time() {
    use hypercomm::trace::{self, Output};
    let program = |comm: &Comm| {
        let x = vec![comm.rank() as u64; 8];
        let mut r = vec![0u64; 8];
        comm.reduce_into(&x, &mut r, Sum, 0usize)?;
        let y = comm.allreduce(&x, Sum)?;
        let mut b = y.clone();
        comm.bcast(&mut b, 3usize)?;
        Ok::<_, Error>(b[0])
    };
    let c = config(Network::Hypercube);
    let plain = sim::run(&c, 16, program).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hypercomm-sim-observe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    trace::enable(trace::Config::new(
        dir.join("run.trace"),
        Output::PiclVerbose,
    ));
    let traced = sim::run(&c, 16, program);
    trace::disable();
    let traced = traced.unwrap();
    assert_eq!(plain.results, vec![16 * 15 / 2; 16]);
    assert_eq!(traced.results, plain.results);
    assert_eq!(traced.summary.end, plain.summary.end);
    assert_eq!(traced.summary.messages, plain.summary.messages);
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------ a real program

/// The `kumar_matvec` example (broadcast, accumulation, broadcast,
/// allreduce) on 1 024 virtual nodes of a hypercube through `hypercomm sim
/// run`, unchanged: it prints the product a run on threads prints, and its
/// virtual end time is the schedule simulation of its four collectives
/// (with the algorithms the library picks on that machine; check mode off,
/// so that only the collectives communicate).
#[test]
fn kumar_matvec_on_1024_virtual_nodes() {
    use common::procs::{example_bin, hypercomm_bin, run_limited, stdout_of};
    let (p, n) = (1024usize, 64usize);
    let want = stdout_of("kumar_matvec", &["4", &n.to_string()]);
    let mut cmd = std::process::Command::new(hypercomm_bin());
    cmd.args(["sim", "run", "-p", "1024", "--topology", "hypercube"])
        .args(["--ts", "100", "--tw", "3", "--th", "7"])
        .arg(example_bin("kumar_matvec"))
        .args([p.to_string(), n.to_string()])
        .env("HYPERCOMM_CHECK", "off")
        .env_remove("HYPERCOMM_SIM")
        .env_remove("HYPERCOMM_TRACE");
    let out = run_limited(cmd, Duration::from_secs(600));
    assert!(out.status.success(), "{}", out.both());
    assert_eq!(out.stdout, want);
    let time: f64 = out
        .stderr
        .split("virtual time ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no virtual time in {}", out.both()));
    // The algorithms the library picks for these calls on this machine.
    let c = config(Network::Hypercube);
    let picked = sim::run(&c, p, |comm| {
        let o = hypercomm::CollOpts::default();
        let b = n * 8;
        Ok::<_, Error>([
            comm.chosen_algorithm(Collective::Bcast, b, &o, true)?,
            comm.chosen_algorithm(Collective::Reduce, b, &o, true)?,
            comm.chosen_algorithm(Collective::Allreduce, 8, &o, true)?,
        ])
    })
    .unwrap()
    .results[0];
    let [bcast, reduce, allreduce] = picked;
    let vector = Call::new(p, n);
    let one = Call::new(p, 1);
    let gen = |c: Collective, a: Algorithm, call: &Call, me: usize| {
        registry::find(c, a).unwrap().generate(&call.params(me))
    };
    let model = Model::new(Network::Hypercube, p, COSTS).unwrap();
    let sched = sim::simulate(
        &model,
        p,
        &mut |me| {
            gen(Collective::Bcast, bcast, &vector, me)
                .then(gen(Collective::Reduce, reduce, &vector, me))
                .then(gen(Collective::Bcast, bcast, &vector, me))
                .then(gen(Collective::Allreduce, allreduce, &one, me))
        },
        1.0,
    )
    .unwrap();
    assert_eq!(time, sched.time(), "{bcast} {reduce} {allreduce}");
}

/// The `Mesh2D` collectives (and the simulator's meshes) lay ranks out on
/// `hypercomm_algo::topology::mesh_dims(p)`; a Cartesian process grid of
/// two dimensions on the same ranks has the same shape, so a mesh program
/// and the mesh collectives agree on who is whose neighbour.
#[test]
fn mesh_collectives_and_cartesian_grids_have_one_shape() {
    for p in 1..=4096 {
        let (rows, cols) = hypercomm_algo::topology::mesh_dims(p);
        assert_eq!(
            hypercomm::topology::dims_create(p, 2).unwrap(),
            vec![rows, cols],
            "p = {p}"
        );
    }
}

/// `hypercomm sim run` of the `hello` example (four nodes and a host):
/// the default machine has a node per node rank, so it runs as with `-p
/// 4`; a machine too small is the program's error, printed as a sentence
/// and not followed by the hint for programs that start no job; options
/// that cannot work are refused before the program starts.
#[test]
fn hello_runs_on_the_default_machine_and_failures_say_why() {
    use common::procs::{example_bin, hypercomm_bin, run_limited};
    let run = |opts: &[&str]| {
        let mut cmd = std::process::Command::new(hypercomm_bin());
        cmd.args(["sim", "run"])
            .args(opts)
            .arg(example_bin("hello"))
            .env_remove("HYPERCOMM_SIM")
            .env_remove("HYPERCOMM_TRACE");
        run_limited(cmd, Duration::from_secs(120))
    };
    let out = run(&[]);
    assert!(out.status.success(), "{}", out.both());
    assert!(
        out.stderr.contains("on 5 ranks of a hypercube"),
        "{}",
        out.both()
    );
    let out = run(&["-p", "2"]);
    assert!(!out.status.success(), "{}", out.both());
    assert!(
        out.stderr
            .contains("the job has 5 endpoints but the simulated machine has 2 nodes"),
        "{}",
        out.both()
    );
    assert!(
        !out.stderr.contains("ran no simulated job"),
        "{}",
        out.both()
    );
    for (opts, want) in [
        (
            &["--word-bytes", "0"][..],
            "word = 0 is not a positive number of bytes",
        ),
        (
            &["--compute", "cpu:-1"],
            "compute = cpu:-1 needs a factor ≥ 0",
        ),
        (
            &["--trace", "/nonexistent/x.html"],
            "the folder /nonexistent does not exist",
        ),
    ] {
        let out = run(opts);
        assert_eq!(out.status.code(), Some(2), "{opts:?}: {}", out.both());
        assert!(out.stderr.contains(want), "{opts:?}: {}", out.both());
        assert!(
            !out.stdout.contains("Hello"),
            "{opts:?} started the program: {}",
            out.both()
        );
    }
}
