//! [`run`](crate::run) in a launched process of a build without processes
//! (no `tcp` feature): joining is impossible, and the call says why rather
//! than running a job of threads in every process.

use crate::comm::Comm;
use crate::error::{BoxError, Error, Result};

/// A rank's outcome: the host's or a node's result.
pub(crate) enum Either<H, R> {
    /// The host's result.
    Host(H),
    /// A node's result.
    Node(R),
}

/// The body of one rank.
pub(crate) type Body<'a, H, R> = dyn Fn(&Comm) -> std::result::Result<Either<H, R>, BoxError> + 'a;

/// The error [`init`](crate::init) gives in this process.
pub(crate) fn run_launched<H, R>(
    what: &'static str,
    _nodes: usize,
    host: bool,
    _body: &Body<'_, H, R>,
) -> Result<(Option<H>, Vec<R>)> {
    Err(match super::init_shaped(host) {
        Err(e) => e,
        Ok(_) => Error::InvalidArgument {
            op: what,
            what: "this process is not part of a launched job".into(),
        },
    })
}
