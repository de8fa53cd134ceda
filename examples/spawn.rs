//! A host program that starts its own nodes (PICL `open0` + `load0`):
//! `hypercomm::spawn(n, program, args)` starts `n` processes of the `hello`
//! example (found next to this program) and returns a communicator whose
//! host is this process. The nodes run `hello`'s node part under
//! `hypercomm::init()`; this host receives their greetings in rank order:
//!
//! ```text
//! $ target/release/examples/spawn 3
//! hello from node 0 of 3: token 0 -> 0
//! hello from node 1 of 3: token 0 -> 1
//! hello from node 2 of 3: token 1 -> 3
//! token after one lap: 3
//! ```

use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a.parse().map_err(|e| format!("node count {a:?}: {e}"))?,
        None => 4,
    };
    let me = std::env::current_exe()?;
    let hello = me.with_file_name(format!("hello{}", std::env::consts::EXE_SUFFIX));
    let comm = hypercomm::spawn(n, &hello, &[] as &[&str])?;
    for r in 0..comm.size() {
        let (line, _) = comm.recv_vec::<u8>(r, 1)?;
        println!("{}", String::from_utf8(line)?);
    }
    let (lap, _) = comm.recv::<u64>(0, 2)?;
    println!("token after one lap: {lap}");
    hypercomm::finalize(comm)?;
    Ok(())
}
