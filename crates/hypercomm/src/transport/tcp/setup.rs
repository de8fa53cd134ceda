//! Making a TCP job: a launched process listens, announces its address to
//! the rendezvous, and connects to every peer once it has the table; a job
//! whose endpoints are threads of one process ([`TcpBuilder`]) does the same
//! over loopback without a rendezvous.

use super::liveness::PeerSlot;
use super::{connection, io, io_err, Shared, TcpEndpoint, ALIVE};
use crate::error::{Error, Result};
use crate::transport::{
    AnyTransport, Builder, JoinInfo, JoinTable, Joined, Joining, Notices, Prepared, Setup,
    Supervisor,
};
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What connecting a TCP endpoint needs.
pub(crate) struct TcpConfig {
    pub(crate) me: usize,
    /// Listening address of every endpoint.
    pub(crate) addrs: Vec<SocketAddr>,
    /// This endpoint's listener (bound before the addresses were exchanged).
    pub(crate) listener: TcpListener,
    pub(crate) secret: Vec<u8>,
    pub(crate) job: String,
    /// [`Link::cores_per_node`](crate::transport::Link): agreed by the
    /// job's endpoints, or this process's when they are its threads.
    pub(crate) cores: usize,
}

impl TcpEndpoint {
    /// Connect to every peer and start the reader threads. Must run on the
    /// thread that will use the endpoint (it is the one unparked).
    pub(crate) fn establish(
        cfg: TcpConfig,
        supervisor: Option<Box<dyn Supervisor>>,
    ) -> Result<TcpEndpoint> {
        let TcpConfig {
            me,
            addrs,
            listener,
            secret,
            job,
            cores,
        } = cfg;
        let n = addrs.len();
        let listen_addr = listener.local_addr().map_err(|e| io_err("listener", e))?;
        let shared = Arc::new(Shared {
            me,
            queue: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            peers: (0..n)
                .map(|_| PeerSlot {
                    state: AtomicU8::new(ALIVE),
                    why: Mutex::new(None),
                })
                .collect(),
            abort: Mutex::new(None),
            abort_flag: AtomicBool::new(false),
            protocol: Mutex::new(None),
            owner: std::thread::current(),
            closing: AtomicBool::new(false),
            writers: OnceLock::new(),
            waiting: Mutex::new(String::new()),
            replies: Mutex::new(vec![None; n]),
            census: super::deadlock::Census::new(n),
        });

        // Accept connections from the higher endpoints (and refuse strangers
        // for as long as the job runs).
        let (tx, rx) = mpsc::channel::<(usize, TcpStream)>();
        {
            let (secret, job, shared) = (secret.clone(), job.clone(), shared.clone());
            std::thread::Builder::new()
                .name(format!("hypercomm-accept-{me}"))
                .spawn(move || connection::accept_loop(listener, shared, secret, job, n, tx))
                .map_err(|e| io_err("spawning the accept thread", e))?;
        }
        let mut streams: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        for (j, addr) in addrs.iter().enumerate().take(me) {
            let s = connection::connect_peer(*addr, &secret, &job, me, j)?;
            streams[j] = Some(s);
        }
        let deadline = Instant::now() + connection::CONNECT_TIMEOUT;
        let mut missing = n - me - 1;
        while missing > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((j, s)) if streams[j].is_none() => {
                    streams[j] = Some(s);
                    missing -= 1;
                }
                Ok((j, _)) => eprintln!(
                    "hypercomm: endpoint {me}: endpoint {j} connected twice; closing the second connection"
                ),
                Err(_) => {
                    let who: Vec<String> = (me + 1..n)
                        .filter(|&j| streams[j].is_none())
                        .map(|j| j.to_string())
                        .collect();
                    return Err(io_err(
                        "connecting the job",
                        format!(
                            "endpoint {me}: endpoints {} did not connect within {:?}",
                            who.join(", "),
                            connection::CONNECT_TIMEOUT
                        ),
                    ));
                }
            }
        }
        drop(rx);

        let mut peers = Vec::with_capacity(n);
        let mut readers = Vec::new();
        for (j, s) in streams.into_iter().enumerate() {
            match s {
                None => peers.push(None),
                Some(s) => {
                    readers.push((j, s.try_clone().map_err(|e| io_err("cloning a socket", e))?));
                    peers.push(Some(Mutex::new(s)));
                }
            }
        }
        let _ = shared.writers.set(peers);
        for (j, r) in readers {
            {
                {
                    let sh = shared.clone();
                    std::thread::Builder::new()
                        .name(format!("hypercomm-read-{me}-{j}"))
                        .spawn(move || io::reader(sh, j, r))
                        .map_err(|e| io_err("spawning a reader thread", e))?;
                }
            }
        }
        // The most endpoints sharing one address, the same on every
        // endpoint (selection's input must be).
        let local = addrs
            .iter()
            .map(|a| addrs.iter().filter(|b| b.ip() == a.ip()).count())
            .max()
            .unwrap_or(1);
        Ok(TcpEndpoint {
            me,
            shared,
            n,
            supervisor: Mutex::new(supervisor),
            listen_addr,
            closed: AtomicBool::new(false),
            local,
            cores,
        })
    }
}

/// Builds endpoint `me` of a job whose endpoints are threads of this
/// process, connected over loopback.
pub struct TcpBuilder {
    cfg: TcpConfig,
}

impl TcpBuilder {
    /// One builder per endpoint of a new job of `endpoints` endpoints on
    /// loopback (each builder connects when built; build them all, each on
    /// its own thread).
    pub fn job(endpoints: usize) -> Result<Vec<TcpBuilder>> {
        let listeners = (0..endpoints)
            .map(|_| {
                TcpListener::bind("127.0.0.1:0").map_err(|e| io_err("listening on loopback", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let addrs = listeners
            .iter()
            .map(|l| l.local_addr().map_err(|e| io_err("listener", e)))
            .collect::<Result<Vec<_>>>()?;
        let secret: [u8; super::auth::SECRET_LEN] =
            super::auth::random_bytes().map_err(|e| io_err("making a secret", e))?;
        let job = format!("threads-{}", std::process::id());
        Ok(listeners
            .into_iter()
            .enumerate()
            .map(|(me, listener)| TcpBuilder {
                cfg: TcpConfig {
                    me,
                    addrs: addrs.clone(),
                    listener,
                    secret: secret.to_vec(),
                    job: job.clone(),
                    cores: crate::transport::cores(),
                },
            })
            .collect())
    }
}

impl TcpBuilder {
    /// The address this endpoint listens on (its peers connect to it).
    pub fn listen_address(&self) -> Result<SocketAddr> {
        self.cfg
            .listener
            .local_addr()
            .map_err(|e| io_err("listener", e))
    }

    /// Reach endpoint `endpoint` at `addr` instead of its own listener — a
    /// relay in between, such as the fault-injecting proxy of the tests.
    /// Only a connection this endpoint opens goes there: to a lower
    /// endpoint (a higher one connects to this one).
    pub fn connect_through(&mut self, endpoint: usize, addr: SocketAddr) -> Result<()> {
        let n = self.cfg.addrs.len();
        let slot = self.cfg.addrs.get_mut(endpoint).ok_or_else(|| {
            Error::Protocol(format!(
                "connect_through: no endpoint {endpoint} in a job of {n}"
            ))
        })?;
        *slot = addr;
        Ok(())
    }
}

impl Builder for TcpBuilder {
    fn build(self: Box<Self>) -> Result<AnyTransport> {
        TcpEndpoint::establish(self.cfg, None).map(AnyTransport::from)
    }
}

/// The TCP transport's [`Setup`].
pub(crate) struct TcpSetup;

/// The one instance.
pub(crate) static SETUP: TcpSetup = TcpSetup;

impl Setup for TcpSetup {
    fn threads(&self, endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
        let b = TcpBuilder::job(endpoints).ok()?;
        Some(
            b.into_iter()
                .map(|b| Box::new(b) as Box<dyn Builder>)
                .collect(),
        )
    }

    fn prepare(&self, _endpoints: usize) -> Result<Prepared> {
        Ok(Prepared::default())
    }

    fn join(&self, info: &JoinInfo) -> Result<Box<dyn Joining>> {
        let ip = info.bind.unwrap_or(info.local_ip);
        let listener = TcpListener::bind((ip, 0)).map_err(|e| {
            io_err(
                "joining the job",
                format!("endpoint {} cannot listen on {ip}: {e}", info.endpoint),
            )
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| io_err("joining the job", e))?;
        Ok(Box::new(TcpJoining {
            listener,
            addr,
            info: info.clone(),
        }))
    }
}

/// Listening, waiting for the table of every endpoint's address.
struct TcpJoining {
    listener: TcpListener,
    addr: SocketAddr,
    info: JoinInfo,
}

impl Joining for TcpJoining {
    fn address(&self) -> String {
        self.addr.to_string()
    }

    fn complete(self: Box<Self>, table: &JoinTable, sup: Box<dyn Supervisor>) -> Result<Joined> {
        let TcpJoining { listener, info, .. } = *self;
        if table.addrs.len() != info.endpoints {
            return Err(Error::Protocol(format!(
                "the address table has {} entries for a job of {} endpoints",
                table.addrs.len(),
                info.endpoints
            )));
        }
        let addrs = table
            .addrs
            .iter()
            .map(|a| {
                a.parse::<SocketAddr>()
                    .map_err(|_| Error::Protocol(format!("bad address {a:?} in the table")))
            })
            .collect::<Result<Vec<_>>>()?;
        let t = TcpEndpoint::establish(
            TcpConfig {
                me: info.endpoint,
                addrs,
                listener,
                secret: info.secret,
                job: info.job,
                cores: table.cores.max(1),
            },
            Some(sup),
        )?;
        let notices = Arc::new(TcpNotices(t.shared.clone()));
        Ok(Joined {
            transport: t.into(),
            notices,
        })
    }
}

/// The supervisor's news, recorded in the endpoint's shared state.
struct TcpNotices(Arc<Shared>);

/// How long a death the launcher reports waits for the data connection to
/// say so itself (see `peer_failed`).
const NOTICE_GRACE: Duration = Duration::from_millis(500);

impl Notices for TcpNotices {
    /// The launcher saw `endpoint` die. Its data connection normally says
    /// so within microseconds (end of stream), after every frame the peer
    /// sent before it died — among them its report of a root cause, if it
    /// failed because of another endpoint — so that report is read first.
    /// Only when the connection stays silent (a machine gone without a
    /// reset) does the launcher's word mark the peer failed, after
    /// [`NOTICE_GRACE`].
    fn peer_failed(&self, endpoint: usize, message: &str) {
        let sh = self.0.clone();
        if endpoint >= sh.peers.len() || endpoint == sh.me {
            return;
        }
        let message = message.to_string();
        let _ = std::thread::Builder::new()
            .name("hypercomm-notice".into())
            .spawn(move || {
                let end = Instant::now() + NOTICE_GRACE;
                while Instant::now() < end
                    && sh.peers[endpoint].state.load(Ordering::Acquire) == ALIVE
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                sh.failed(endpoint, message);
            });
    }
    fn aborted(&self, endpoint: usize, message: &str) {
        self.0.set_abort(endpoint, message.to_string());
    }
}
