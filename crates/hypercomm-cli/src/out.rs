//! Writing to standard output and standard error without `println!`'s and
//! `eprintln!`'s panic when the stream is gone (the reader of a pipe
//! exited, the disk is full).
//!
//! A command's results ([`outln!`], [`text`]) end it with an error naming
//! standard output when they cannot be written, except for a reader that
//! stopped reading (a closed pipe, as with `| head`): nobody wants the
//! rest, and the command ends there quietly and successfully, as Unix
//! tools do. Messages to standard error ([`errln!`]) are lost when it is
//! gone: there is nowhere left to say them.

use std::io::{ErrorKind, Write};

/// `println!` that returns `Err` (a message naming standard output) when
/// the line cannot be written; see the module docs.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::text(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` without the panic: the message is lost when standard error
/// is gone.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) use {errln, outln};

/// Write `text` to standard output. On a closed pipe the process ends
/// quietly with success (nothing is running that needs stopping when a
/// command writes its results); any other failure is an error naming
/// standard output.
pub(crate) fn text(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(format!("writing to standard output: {e}")),
    }
}
