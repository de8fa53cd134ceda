//! Connections: one authenticated TCP connection per pair of endpoints,
//! made when the job starts (endpoint `i` connects to every `j < i` and
//! accepts from every `j > i`); the listener keeps refusing strangers while
//! the job runs.

use super::{auth, io_err, lock, Shared};
use crate::error::Result;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long set-up waits for every peer to connect.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// Socket buffer sizes.
pub(super) const SOCKET_BUFFER: usize = 4 << 20;

/// Set TCP_NODELAY and the buffer sizes; failures here are not fatal.
pub(crate) fn tune(s: &TcpStream) {
    let r = socket2::SockRef::from(s);
    let _ = r.set_tcp_nodelay(true);
    let _ = r.set_send_buffer_size(SOCKET_BUFFER);
    let _ = r.set_recv_buffer_size(SOCKET_BUFFER);
}

pub(super) fn connect_peer(
    addr: SocketAddr,
    secret: &[u8],
    job: &str,
    me: usize,
    j: usize,
) -> Result<TcpStream> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut s = loop {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                return Err(io_err(
                    "connecting the job",
                    format!("endpoint {me} could not connect to endpoint {j} at {addr}: {e}"),
                ))
            }
        }
    };
    tune(&s);
    auth::client(&mut s, secret, job, me as u32).map_err(|e| {
        io_err(
            "authenticating",
            format!("endpoint {me} → endpoint {j} at {addr}: {e}"),
        )
    })?;
    Ok(s)
}

pub(super) fn accept_loop(
    l: TcpListener,
    sh: Arc<Shared>,
    secret: Vec<u8>,
    job: String,
    n: usize,
    tx: mpsc::Sender<(usize, TcpStream)>,
) {
    let me = sh.me;
    let tx = Arc::new(Mutex::new(tx));
    for conn in l.incoming() {
        if sh.closing.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut s) = conn else { continue };
        let (secret, job, tx) = (secret.clone(), job.clone(), tx.clone());
        let _ = std::thread::Builder::new()
            .name(format!("hypercomm-auth-{me}"))
            .spawn(move || {
                let peer = s
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                match auth::server(&mut s, &secret, &job) {
                    Ok(id) if (id as usize) > me && (id as usize) < n => {
                        tune(&s);
                        let sent = lock(&tx).send((id as usize, s));
                        if sent.is_err() {
                            eprintln!("hypercomm: endpoint {me}: late connection from endpoint {id} ({peer}) refused: the job is already connected");
                        }
                    }
                    Ok(id) => eprintln!(
                        "hypercomm: endpoint {me}: refused a connection from {peer}: it claims to be endpoint {id}, which does not connect here"
                    ),
                    Err(e) => eprintln!(
                        "hypercomm: endpoint {me}: refused a connection from {peer}: {e}"
                    ),
                }
            });
    }
}
