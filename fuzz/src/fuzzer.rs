//! A small coverage-guided fuzzer: a corpus, a mutator, and SanitizerCoverage's 8-bit edge
//! counters as the guide.
//!
//! When the readers are compiled with `-Cpasses=sancov-module` and
//! `-sanitizer-coverage-inline-8bit-counters` (`fuzz/sancov-rustc`), every edge of their
//! code bumps a byte counter, and the instrumented code calls
//! [`__sanitizer_cov_8bit_counters_init`] at start-up with the counters' range. After each
//! input the fuzzer buckets every counter (1, 2, 3, 4–7, 8–15, 16–31, 32–127, 128+, as AFL
//! does), and an input that sets a bucket never seen before joins the corpus. Without the
//! instrumentation (a plain `cargo test`) there are no counters and the fuzzer mutates the
//! corpus blindly: the smoke run of `cargo xtask test`.
//!
//! A panic in a target is caught, its input saved and its message reported; the run goes
//! on. An input that runs past the time limit is saved by a watchdog, which then aborts.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::targets::Target;

/// Counter ranges registered by instrumented code (start, end), at most 64.
static REGIONS: [(AtomicUsize, AtomicUsize); 64] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; 64];
static REGION_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Called by SanitizerCoverage's module constructors with the range of their 8-bit edge
/// counters (the same range may come several times).
///
/// # Safety
/// `start..stop` must be a live range of counters for the rest of the process, as the
/// instrumentation guarantees.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_8bit_counters_init(start: *mut u8, stop: *mut u8) {
    let (start, stop) = (start as usize, stop as usize);
    if stop <= start {
        return;
    }
    let count = REGION_COUNT.load(Ordering::Acquire);
    for region in &REGIONS[..count.min(REGIONS.len())] {
        if region.0.load(Ordering::Relaxed) == start {
            return;
        }
    }
    if count < REGIONS.len() {
        REGIONS[count].0.store(start, Ordering::Relaxed);
        REGIONS[count].1.store(stop, Ordering::Relaxed);
        REGION_COUNT.store(count + 1, Ordering::Release);
    }
}

/// The registered counter ranges.
fn regions() -> Vec<(usize, usize)> {
    let count = REGION_COUNT.load(Ordering::Acquire).min(REGIONS.len());
    REGIONS[..count]
        .iter()
        .map(|r| (r.0.load(Ordering::Relaxed), r.1.load(Ordering::Relaxed)))
        .collect()
}

/// Whether the readers were built with coverage counters.
pub fn instrumented() -> bool {
    REGION_COUNT.load(Ordering::Acquire) > 0
}

/// The input being run, for the watchdog and an aborting allocation guard.
static CURRENT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);
/// When the current input started (ms since [`epoch`]); 0 between inputs.
static STARTED_MS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The input being run now (empty between inputs).
///
/// # Safety
/// Only meaningful while the fuzzing thread is inside a target, and only to read.
pub unsafe fn current_input<'a>() -> &'a [u8] {
    let ptr = CURRENT.load(Ordering::Acquire);
    if ptr.is_null() {
        return &[];
    }
    // SAFETY: the runner publishes a pointer to an input it keeps alive while running it.
    unsafe { std::slice::from_raw_parts(ptr, CURRENT_LEN.load(Ordering::Acquire)) }
}

/// A deterministic xorshift64* generator.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n ≥ 1`; slightly biased, which fuzzing does not mind).
    pub fn below(&mut self, n: usize) -> usize {
        (self.bits() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0xffff,
    0x1_0000,
    0x100_0000,
    0x100_0001,
    0x7fff_ffff,
    0xffff_ffff,
    0x1_0000_0000,
    u64::MAX,
    u64::MAX / 2,
];

const NUMBERS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"2",
    b"32",
    b"1024",
    b"1025",
    b"65536",
    b"16777216",
    b"16777217",
    b"4294967295",
    b"4294967296",
    b"1000000000000",
    b"18446744073709551616",
    b"99999999999999999999999",
    b"1e39",
    b"-1e39",
    b"1e-46",
    b"nan",
    b"inf",
    b"0.0625",
    b"6.250000e-02",
    b"-0",
];

/// Mutates `data` in place by 1 to 16 stacked edits; `other` is a corpus entry for
/// crossover; `dictionary` holds tokens to insert. The result is at most `max_len` bytes.
pub fn mutate(
    data: &mut Vec<u8>,
    other: &[u8],
    dictionary: &[&[u8]],
    max_len: usize,
    rng: &mut Rng,
) {
    let edits = 1 << rng.below(5);
    for _ in 0..edits {
        let len = data.len();
        match rng.below(12) {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] = rng.bits() as u8;
            }
            2 if len > 0 => {
                let value = INTERESTING[rng.below(INTERESTING.len())];
                let width = [1, 2, 4, 8][rng.below(4)].min(len);
                let at = rng.below(len - width + 1);
                data[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
            3 if len > 1 => {
                let at = rng.below(len);
                let count = 1 + rng.below((len - at).min(64));
                data.drain(at..at + count);
            }
            4 if len > 0 => {
                let from = rng.below(len);
                let count = 1 + rng.below((len - from).min(128));
                let piece = data[from..from + count].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, piece);
            }
            5 if !dictionary.is_empty() => {
                let token = dictionary[rng.below(dictionary.len())];
                let at = rng.below(len + 1);
                if rng.below(2) == 0 || len == 0 {
                    data.splice(at..at, token.iter().copied());
                } else {
                    let end = (at + token.len()).min(len);
                    data.splice(at..end, token.iter().copied());
                }
            }
            6 => replace_number(data, rng),
            7 if len > 0 => {
                let at = rng.below(len);
                let delta = 1 + rng.below(16) as u8;
                data[at] = if rng.below(2) == 0 {
                    data[at].wrapping_add(delta)
                } else {
                    data[at].wrapping_sub(delta)
                };
            }
            8 if !other.is_empty() => {
                // Crossover: a piece of another input in place of the tail or a range.
                let from = rng.below(other.len());
                let count = 1 + rng.below(other.len() - from);
                let at = rng.below(len + 1);
                if rng.below(2) == 0 {
                    data.truncate(at);
                    data.extend_from_slice(&other[from..from + count]);
                } else {
                    data.splice(at..at, other[from..from + count].iter().copied());
                }
            }
            9 => {
                let at = rng.below(len + 1);
                let count = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..count).map(|_| rng.bits() as u8).collect();
                data.splice(at..at, bytes);
            }
            10 => swap_lines(data, rng),
            11 if len > 0 => {
                data.truncate(rng.below(len));
            }
            _ => {}
        }
        data.truncate(max_len);
    }
}

/// Replaces one run of ASCII digits (or the place after a blank) with a chosen number.
fn replace_number(data: &mut Vec<u8>, rng: &mut Rng) {
    let number = NUMBERS[rng.below(NUMBERS.len())];
    let starts: Vec<usize> = (0..data.len())
        .filter(|&i| data[i].is_ascii_digit() && (i == 0 || !data[i - 1].is_ascii_digit()))
        .collect();
    if starts.is_empty() {
        let at = rng.below(data.len() + 1);
        data.splice(at..at, number.iter().copied());
        return;
    }
    let start = starts[rng.below(starts.len())];
    let mut end = start;
    while end < data.len() && (data[end].is_ascii_digit() || b".eE+-".contains(&data[end])) {
        end += 1;
    }
    data.splice(start..end, number.iter().copied());
}

/// Swaps two lines, or duplicates one.
fn swap_lines(data: &mut Vec<u8>, rng: &mut Rng) {
    let mut bounds = vec![0];
    bounds.extend(
        data.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );
    if bounds.len() < 3 {
        return;
    }
    let a = rng.below(bounds.len() - 1);
    let b = rng.below(bounds.len() - 1);
    let line = |k: usize| data[bounds[k]..bounds[k + 1]].to_vec();
    let (first, second) = (line(a.min(b)), line(a.max(b)));
    let mut out = Vec::with_capacity(data.len() + second.len());
    out.extend_from_slice(&data[..bounds[a.min(b)]]);
    out.extend_from_slice(&second);
    if a == b {
        out.extend_from_slice(&first);
        out.extend_from_slice(&data[bounds[a + 1]..]);
    } else {
        out.extend_from_slice(&data[bounds[a.min(b) + 1]..bounds[a.max(b)]]);
        out.extend_from_slice(&first);
        out.extend_from_slice(&data[bounds[a.max(b) + 1]..]);
    }
    *data = out;
}

/// AFL's hit-count buckets, as one bit each.
fn bucket(count: u8) -> u8 {
    match count {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 4,
        4..=7 => 8,
        8..=15 => 16,
        16..=31 => 32,
        32..=127 => 64,
        _ => 128,
    }
}

/// The message of the last panic inside a target, by the panic hook.
static PANIC_MESSAGE: Mutex<Option<String>> = Mutex::new(None);

thread_local! {
    static IN_TARGET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that records panics inside targets instead of printing
/// them, and leaves every other panic to the previous hook.
fn install_panic_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_TARGET.with(|t| t.get()) {
                let message = match info.payload().downcast_ref::<&str>() {
                    Some(s) => s.to_string(),
                    None => info
                        .payload()
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| "(a panic without a message)".into()),
                };
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                if let Ok(mut slot) = PANIC_MESSAGE.lock() {
                    *slot = Some(format!("{location}: {message}"));
                }
            } else {
                previous(info);
            }
        }));
    });
}

/// A crash: where and why, and the first input that caused it.
#[derive(Debug, Clone)]
pub struct Crash {
    /// `file:line: message` of the panic.
    pub message: String,
    /// The input.
    pub input: Vec<u8>,
    /// How many inputs hit it.
    pub hits: u64,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Inputs run (seeds, replays and mutants).
    pub inputs: u64,
    /// Corpus entries at the end.
    pub corpus: usize,
    /// Edge buckets seen (0 without instrumentation).
    pub coverage: u64,
    /// Edges with a nonzero count (0 without instrumentation).
    pub edges: u64,
    /// Seconds spent.
    pub seconds: f64,
}

/// The fuzzing state of one target.
pub struct Fuzzer {
    target: &'static Target,
    rng: Rng,
    corpus: Vec<Vec<u8>>,
    /// Buckets ever seen, per counter.
    virgin: Vec<u8>,
    regions: Vec<(usize, usize)>,
    /// Distinct crashes by message.
    pub crashes: BTreeMap<String, Crash>,
    /// Where new corpus entries and crashes are written (none: kept in memory).
    pub out_dir: Option<PathBuf>,
    /// The largest input made.
    pub max_len: usize,
    /// Progress lines to stderr every this many seconds (none: quiet).
    pub report_every: Option<Duration>,
    stats: Stats,
    started: Instant,
}

impl Fuzzer {
    /// A fuzzer of `target` with the random seed `seed` and an empty corpus.
    pub fn new(target: &'static Target, seed: u64) -> Self {
        install_panic_hook();
        let regions = regions();
        let total: usize = regions.iter().map(|(s, e)| e - s).sum();
        Self {
            target,
            rng: Rng::new(seed),
            corpus: Vec::new(),
            virgin: vec![0; total],
            regions,
            crashes: BTreeMap::new(),
            out_dir: None,
            max_len: 16 << 10,
            report_every: None,
            stats: Stats::default(),
            started: Instant::now(),
        }
    }

    /// Runs every file of `dir` (sorted by name) and keeps them all in the corpus.
    /// A missing folder adds nothing.
    pub fn add_corpus_dir(&mut self, dir: &Path) -> std::io::Result<usize> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(0);
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for file in &files {
            let data = std::fs::read(file)?;
            self.execute(&data);
            self.corpus.push(data);
        }
        Ok(files.len())
    }

    /// Runs one input (not added to the corpus): a replay of a saved crash.
    pub fn replay(&mut self, data: &[u8]) {
        self.execute(data);
    }

    /// Runs `inputs` mutants of the corpus (of one empty input when it is empty).
    pub fn run(&mut self, inputs: u64) {
        if self.corpus.is_empty() {
            self.corpus.push(Vec::new());
        }
        let mut last_report = Instant::now();
        for _ in 0..inputs {
            let pick = self.rng.below(self.corpus.len());
            let other = self.rng.below(self.corpus.len());
            let mut data = self.corpus[pick].clone();
            mutate(
                &mut data,
                &self.corpus[other],
                self.target.dictionary,
                self.max_len,
                &mut self.rng,
            );
            if self.execute(&data) {
                self.save("corpus", &data);
                self.corpus.push(data);
            }
            if let Some(every) = self.report_every
                && last_report.elapsed() >= every
            {
                last_report = Instant::now();
                eprintln!("{}", self.progress_line());
            }
        }
    }

    /// One line of progress: inputs, rate, corpus, coverage, crashes.
    pub fn progress_line(&self) -> String {
        let stats = self.stats();
        format!(
            "{}: {} inputs, {:.0}/s, corpus {}, {} edges ({} buckets), {} crashes",
            self.target.name,
            stats.inputs,
            stats.inputs as f64 / stats.seconds.max(1e-9),
            stats.corpus,
            stats.edges,
            stats.coverage,
            self.crashes.len()
        )
    }

    /// What the run did so far.
    pub fn stats(&self) -> Stats {
        Stats {
            corpus: self.corpus.len(),
            seconds: self.started.elapsed().as_secs_f64(),
            edges: self.virgin.iter().filter(|&&v| v != 0).count() as u64,
            ..self.stats.clone()
        }
    }

    /// Runs the target on `data`; true when it reached coverage never seen before.
    fn execute(&mut self, data: &[u8]) -> bool {
        self.stats.inputs += 1;
        CURRENT_LEN.store(data.len(), Ordering::Release);
        CURRENT.store(data.as_ptr().cast_mut(), Ordering::Release);
        STARTED_MS.store(epoch().elapsed().as_millis() as u64 + 1, Ordering::Release);
        IN_TARGET.with(|t| t.set(true));
        let outcome = catch_unwind(AssertUnwindSafe(|| (self.target.run)(data)));
        IN_TARGET.with(|t| t.set(false));
        STARTED_MS.store(0, Ordering::Release);
        CURRENT.store(std::ptr::null_mut(), Ordering::Release);
        if outcome.is_err() {
            let message = PANIC_MESSAGE
                .lock()
                .ok()
                .and_then(|mut m| m.take())
                .unwrap_or_else(|| "(no message)".into());
            self.record_crash(message, data);
        }
        self.new_coverage()
    }

    fn record_crash(&mut self, message: String, data: &[u8]) {
        if let Some(crash) = self.crashes.get_mut(&message) {
            crash.hits += 1;
            return;
        }
        if self.report_every.is_some() {
            eprintln!("{}: CRASH {message}", self.target.name);
        }
        self.save("crashes", data);
        self.crashes.insert(
            message.clone(),
            Crash {
                message,
                input: data.to_vec(),
                hits: 1,
            },
        );
    }

    /// Writes `data` under `out_dir/<kind>/` named by its hash.
    fn save(&self, kind: &str, data: &[u8]) {
        let Some(dir) = &self.out_dir else { return };
        let dir = dir.join(kind);
        let name = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(data));
        if std::fs::create_dir_all(&dir).is_ok() {
            let _ = std::fs::write(dir.join(name), data);
        }
    }

    /// Scans and clears the counters; true when a bucket was set for the first time.
    fn new_coverage(&mut self) -> bool {
        let mut new = false;
        let mut base = 0;
        for &(start, end) in &self.regions {
            let len = end - start;
            // SAFETY: the instrumentation keeps this range alive for the whole process; only
            // this thread reads and clears it between inputs (targets run here too).
            let counters = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, len) };
            let virgin = &mut self.virgin[base..base + len];
            for (chunk, seen) in counters.chunks_mut(8).zip(virgin.chunks_mut(8)) {
                if chunk.iter().all(|&c| c == 0) {
                    continue;
                }
                for (count, seen) in chunk.iter_mut().zip(seen.iter_mut()) {
                    let bit = bucket(*count);
                    if bit & !*seen != 0 {
                        *seen |= bit;
                        self.stats.coverage += 1;
                        new = true;
                    }
                    *count = 0;
                }
            }
            base += len;
        }
        new
    }
}

/// Starts a thread that aborts the process when one input runs longer than `limit`,
/// after writing that input to `path` (the hang is then a file to replay).
pub fn start_watchdog(limit: Duration, path: PathBuf) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let started = STARTED_MS.load(Ordering::Acquire);
            if started == 0 {
                continue;
            }
            let now = epoch().elapsed().as_millis() as u64 + 1;
            if now.saturating_sub(started) > limit.as_millis() as u64 {
                // SAFETY: the fuzzing thread is stuck inside the target with this input.
                let input = unsafe { current_input() };
                let _ = std::fs::write(&path, input);
                eprintln!(
                    "HANG: one input ran for more than {:?}; written to {}",
                    limit,
                    path.display()
                );
                std::process::abort();
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_respect_the_length_limit_and_vary() {
        let mut rng = Rng::new(7);
        let seed = b"1\t2\t6.250000e-02\n3\t4\t6.250000e-02\n".to_vec();
        let mut distinct = std::collections::BTreeSet::new();
        for _ in 0..2000 {
            let mut data = seed.clone();
            mutate(
                &mut data,
                b"5\t6\t1\n",
                crate::targets::TARGETS[0].dictionary,
                40,
                &mut rng,
            );
            assert!(data.len() <= 40);
            distinct.insert(data);
        }
        assert!(distinct.len() > 1000, "{} distinct mutants", distinct.len());
    }

    #[test]
    fn buckets_are_single_bits_in_order() {
        let mut last = 0;
        for count in 1..=255u8 {
            let bit = bucket(count);
            assert_eq!(bit.count_ones(), 1);
            assert!(bit >= last);
            last = bit;
        }
        assert_eq!(bucket(0), 0);
    }

    #[test]
    fn a_panicking_target_is_a_recorded_crash_not_a_failure() {
        fn explode(data: &[u8]) {
            if data.first() == Some(&b'!') {
                panic!("boom");
            }
        }
        static BOOM: Target = Target {
            name: "boom",
            description: "panics on '!'",
            run: explode,
            dictionary: &[b"!"],
        };
        let mut fuzzer = Fuzzer::new(&BOOM, 1);
        fuzzer.replay(b"ok");
        assert!(fuzzer.crashes.is_empty());
        fuzzer.replay(b"!x");
        fuzzer.replay(b"!y");
        assert_eq!(fuzzer.crashes.len(), 1);
        let crash = fuzzer.crashes.values().next().unwrap();
        assert!(crash.message.ends_with("boom"), "{}", crash.message);
        assert_eq!((crash.input.as_slice(), crash.hits), (&b"!x"[..], 2));
    }
}
