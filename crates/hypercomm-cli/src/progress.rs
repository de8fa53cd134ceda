//! A one-line progress bar on standard error for long benchmark runs.
//!
//! Drawn only where someone watches: when standard error is a terminal
//! (`--progress auto`, the default) or when asked (`--progress always`).
//! Figures go to standard output, so a bar never mixes with a table or a
//! TSV stream that is piped on. The bar is `indicatif`'s: redrawn in place,
//! rate-limited on a terminal, and erased when the run ends.

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

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
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `total` steps, shown according to `when`.
    pub(crate) fn new(total: usize, when: When) -> Progress {
        let target = match when {
            // indicatif hides a bar whose stderr is not a terminal (or is
            // a dumb one).
            When::Auto if total > 1 => ProgressDrawTarget::stderr(),
            When::Auto | When::Never => ProgressDrawTarget::hidden(),
            // Drawn into whatever stderr is, every step (no rate limit:
            // a pipe gets each step's line).
            When::Always => ProgressDrawTarget::term_like(Box::new(console::Term::stderr())),
        };
        let style = ProgressStyle::with_template(
            "[{bar:30}] {pos}/{len} {msg} ({elapsed}, about {eta} left)",
        )
        .expect("a valid template")
        .progress_chars("#>.");
        let bar = ProgressBar::with_draw_target(Some(total as u64), target)
            .with_style(style)
            .with_finish(ProgressFinish::AndClear);
        Progress { bar }
    }

    /// Redraw before the measurement `what` starts: the bar counts the
    /// measurements started (`k/total`).
    pub(crate) fn step(&mut self, what: &str) {
        self.bar.inc(1);
        self.bar.set_message(what.to_string());
    }

    /// Run `f` (which prints figures) with the bar erased, then redraw it.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
