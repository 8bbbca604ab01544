//! Progress on stderr: bars and spinners on a terminal, and on anything else (a log file, a
//! pipe) one timestamped line when a long phase starts and one when it ends, so that a log
//! says where the time went:
//!
//! ```text
//! [0.0 s] generate 65536-1920: started
//! [8.1 s] generate 65536-1920: done in 8.1 s (written to the cache data/cache/networks/…)
//! ```
//!
//! The timestamps count from the start of the process ([`start_clock`]). `--json` keeps
//! stdout for the document: the lines still go to stderr when it is not a terminal, and
//! nothing is drawn on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// When the process started, as far as the phase lines are concerned.
static PROCESS_START: OnceLock<Instant> = OnceLock::new();

/// Starts the clock of the phase lines (called first thing in `main`; the first phase
/// starts it otherwise).
pub fn start_clock() -> Instant {
    *PROCESS_START.get_or_init(Instant::now)
}

/// Whether progress bars may be drawn.
pub fn enabled(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// How a command shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Bars and spinners (stderr is a terminal, no `--json`).
    Bars,
    /// A timestamped line when each long phase starts and ends (stderr is not a terminal).
    Lines,
    /// Nothing (`--json` on a terminal).
    Quiet,
}

impl Mode {
    /// The mode for a command's stderr: [`Mode::Lines`] when it is not a terminal, else
    /// bars unless `json`.
    pub fn of_stderr(json: bool) -> Self {
        Self::choose(std::io::stderr().is_terminal(), json)
    }

    fn choose(terminal: bool, json: bool) -> Self {
        match (terminal, json) {
            (false, _) => Mode::Lines,
            (true, false) => Mode::Bars,
            (true, true) => Mode::Quiet,
        }
    }

    /// Whether bars and spinners are drawn.
    pub fn bars(self) -> bool {
        self == Mode::Bars
    }
}

/// Where the phases of a command are shown: the [`Mode`], the clock the lines count from
/// and the writer they go to (stderr, or a buffer in tests).
#[derive(Clone)]
pub struct Log {
    mode: Mode,
    origin: Instant,
    sink: Arc<Mutex<dyn Write + Send>>,
}

impl Log {
    /// The log of a command on stderr, timed from the start of the process.
    pub fn stderr(json: bool) -> Self {
        Self::new(
            Mode::of_stderr(json),
            start_clock(),
            Arc::new(Mutex::new(std::io::stderr())),
        )
    }

    /// A log in `mode` whose lines count from `origin` and go to `sink`.
    pub fn new(mode: Mode, origin: Instant, sink: Arc<Mutex<dyn Write + Send>>) -> Self {
        Self { mode, origin, sink }
    }

    /// Whether bars and spinners are drawn.
    pub fn bars(&self) -> bool {
        self.mode.bars()
    }

    /// Starts a phase of unknown length: a spinner with `label` ([`Mode::Bars`]), or its
    /// "started" line ([`Mode::Lines`]). Finish it with
    /// [`Phase::done_with`]; a phase dropped unfinished (an error) says "stopped".
    pub fn phase(&self, label: &str) -> Phase {
        self.start(label, spinner(self.bars(), label))
    }

    /// [`Log::phase`] without a spinner: for a phase that runs beside another one that
    /// shows its own (its lines are written all the same).
    pub fn phase_without_spinner(&self, label: &str) -> Phase {
        self.start(label, ProgressBar::hidden())
    }

    /// Starts a phase with a bar of `len` steps (`len` 0: set later) named `message`
    /// ([`Phase::bar`] moves it), or its "started" line.
    pub fn phase_with_bar(&self, label: &str, len: u64, message: &str) -> Phase {
        self.start(label, bar(self.bars(), len, message))
    }

    fn start(&self, label: &str, bar: ProgressBar) -> Phase {
        let phase = Phase {
            log: self.clone(),
            label: label.to_string(),
            started: Instant::now(),
            bar,
            finished: false,
        };
        self.line(&format!("{label}: started"));
        phase
    }

    /// Writes `[elapsed] text` ([`Mode::Lines`] only).
    pub fn line(&self, text: &str) {
        if self.mode != Mode::Lines {
            return;
        }
        let line = stamped(self.origin.elapsed(), text);
        let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        // A log that cannot be written is no reason to stop the work it describes.
        let _ = writeln!(sink, "{line}");
        let _ = sink.flush();
    }
}

/// `text` after the time since the start, in seconds: `[12.3 s] text`.
pub fn stamped(since_start: Duration, text: &str) -> String {
    format!("[{:.1} s] {text}", since_start.as_secs_f64())
}

/// A phase in progress (see [`Log::phase`]).
pub struct Phase {
    log: Log,
    label: String,
    started: Instant,
    bar: ProgressBar,
    finished: bool,
}

impl Phase {
    /// The phase's bar (hidden unless drawn).
    pub fn bar(&self) -> &ProgressBar {
        &self.bar
    }

    /// Ends the phase with what it did: `label: done in T s (detail)`, or without the
    /// parenthesis when `detail` is empty.
    pub fn done_with(mut self, detail: &str) {
        self.finished = true;
        self.bar.finish_and_clear();
        let took = self.started.elapsed().as_secs_f64();
        let text = if detail.is_empty() {
            format!("{}: done in {took:.1} s", self.label)
        } else {
            format!("{}: done in {took:.1} s ({detail})", self.label)
        };
        self.log.line(&text);
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        if !self.finished {
            self.bar.finish_and_clear();
            let took = self.started.elapsed().as_secs_f64();
            self.log
                .line(&format!("{}: stopped after {took:.1} s", self.label));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A log in `mode` writing into a buffer, and the buffer.
    fn buffered(mode: Mode) -> (Log, Arc<Mutex<Vec<u8>>>) {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let log = Log::new(mode, Instant::now(), buffer.clone());
        (log, buffer)
    }

    fn lines(buffer: &Arc<Mutex<Vec<u8>>>) -> Vec<String> {
        String::from_utf8(buffer.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `[T s] rest` → (T, rest); panics on anything else.
    fn split(line: &str) -> (f64, &str) {
        let (stamp, rest) = line
            .strip_prefix('[')
            .and_then(|l| l.split_once(" s] "))
            .unwrap_or_else(|| panic!("not a stamped line: {line:?}"));
        (stamp.parse().unwrap(), rest)
    }

    #[test]
    fn a_phase_prints_a_stamped_line_when_it_starts_and_when_it_ends() {
        let (log, buffer) = buffered(Mode::Lines);
        let phase = log.phase("generate 1024-120");
        std::thread::sleep(Duration::from_millis(120));
        phase.done_with("written to the cache c.bin");
        log.phase("write results").done_with("");
        let lines = lines(&buffer);
        assert_eq!(lines.len(), 4, "{lines:?}");
        let (t0, first) = split(&lines[0]);
        assert_eq!(first, "generate 1024-120: started");
        let (t1, second) = split(&lines[1]);
        let took = second
            .strip_prefix("generate 1024-120: done in ")
            .and_then(|r| r.strip_suffix(" s (written to the cache c.bin)"))
            .unwrap_or_else(|| panic!("{second:?}"));
        let took: f64 = took.parse().unwrap();
        assert!(took >= 0.1, "{second}");
        assert!(t1 - t0 > 0.099, "{lines:?}");
        assert_eq!(split(&lines[2]).1, "write results: started");
        assert!(
            split(&lines[3]).1.starts_with("write results: done in "),
            "{lines:?}"
        );
    }

    #[test]
    fn a_phase_left_by_an_error_says_it_stopped() {
        let (log, buffer) = buffered(Mode::Lines);
        let failing = || -> Result<(), String> {
            let _phase = log.phase("truth 65536-1920");
            Err("out of memory".into())
        };
        assert!(failing().is_err());
        let lines = lines(&buffer);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            split(&lines[1])
                .1
                .starts_with("truth 65536-1920: stopped after "),
            "{lines:?}"
        );
    }

    #[test]
    fn bars_and_quiet_write_no_lines() {
        for mode in [Mode::Bars, Mode::Quiet] {
            let (log, buffer) = buffered(mode);
            let phase = log.phase_with_bar("official 1024-120", 120, "official net");
            phase.bar().set_position(3);
            phase.done_with("x");
            log.line("anything");
            assert!(lines(&buffer).is_empty(), "{mode:?}");
        }
    }

    #[test]
    fn the_mode_follows_the_terminal_and_json() {
        assert_eq!(Mode::choose(false, false), Mode::Lines);
        assert_eq!(Mode::choose(false, true), Mode::Lines);
        assert_eq!(Mode::choose(true, false), Mode::Bars);
        assert_eq!(Mode::choose(true, true), Mode::Quiet);
        assert!(Mode::Bars.bars() && !Mode::Lines.bars() && !Mode::Quiet.bars());
        assert_eq!(
            stamped(Duration::from_millis(12_345), "x: started"),
            "[12.3 s] x: started"
        );
    }
}
