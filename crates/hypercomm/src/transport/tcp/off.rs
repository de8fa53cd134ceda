//! The TCP transport in a build without the `tcp` feature (a threads-only
//! library). The kind still exists and says how to get it; see
//! `transport/off.rs`.

crate::transport::off::absent!(
    TcpEndpoint,
    "this program was built without processes: enable the `tcp` feature of hypercomm (on by default) for the TCP transport, the launcher and shared memory"
);
