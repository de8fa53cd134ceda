//! A one-line progress bar on standard error for long benchmark runs.
//!
//! Drawn only where someone watches: when standard error is a terminal
//! (`--progress auto`, the default) or when asked (`--progress always`).
//! Figures go to standard output, so a bar never mixes with a table or a
//! TSV stream that is piped on. The bar is redrawn in place (carriage
//! return) and erased when the run ends.

use clap::ValueEnum;
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// When to draw the bar.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub(crate) enum When {
    /// When standard error is a terminal.
    Auto,
    /// Always (also into a pipe or file).
    Always,
    /// Never.
    Never,
}

/// Progress over a known number of measurements.
pub(crate) struct Progress {
    total: usize,
    done: usize,
    shown: bool,
    start: Instant,
}

const WIDTH: usize = 30;

impl Progress {
    /// A bar over `total` steps, shown according to `when`.
    pub(crate) fn new(total: usize, when: When) -> Progress {
        let shown = match when {
            When::Always => true,
            When::Never => false,
            When::Auto => total > 1 && std::io::stderr().is_terminal(),
        };
        Progress {
            total: total.max(1),
            done: 0,
            shown,
            start: Instant::now(),
        }
    }

    /// Redraw before the measurement `what` starts.
    pub(crate) fn step(&mut self, what: &str) {
        if !self.shown {
            return;
        }
        let filled = WIDTH * self.done / self.total;
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if self.done > 0 {
            format!(
                ", about {:.0} s left",
                elapsed / self.done as f64 * (self.total - self.done) as f64
            )
        } else {
            String::new()
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{}{}] {}/{} {what}{eta}",
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            self.done + 1,
            self.total
        );
        let _ = err.flush();
        self.done += 1;
    }

    /// Erase the bar (before figures are printed; the next step redraws it).
    pub(crate) fn clear(&self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
