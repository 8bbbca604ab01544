//! Progress bars on stderr, shown only on a terminal and never with `--json`.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether progress bars may be drawn.
pub fn enabled(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// A bar of `len` steps with a message, or a hidden one when `show` is false.
pub fn bar(show: bool, len: u64, message: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>14} [{bar:40}] {pos}/{len} ({elapsed}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_string());
    bar
}

/// A spinner for work of unknown length.
pub fn spinner(show: bool, message: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A bar counting bytes (downloads).
pub fn bytes(show: bool, len: Option<u64>, message: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = match len {
        Some(len) => ProgressBar::new(len),
        None => ProgressBar::new_spinner(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>14} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(message.to_string());
    bar
}
