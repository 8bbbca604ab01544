//! The byte-level line parser shared by every text format of the challenge.
//!
//! A line holds one or two positive integers and, for some formats, a value, separated by
//! tabs or spaces; `\r\n` endings, trailing blanks and blank lines are accepted. Large
//! texts are cut into newline-aligned chunks parsed in parallel (rayon); errors carry the
//! 1-based line of the whole text.

use std::path::Path;

use rayon::prelude::*;

use crate::SdgcError;

/// Texts shorter than this are parsed on the calling thread.
const PARALLEL_MIN_BYTES: usize = 256 * 1024;
/// The smallest chunk handed to one rayon task.
const MIN_CHUNK_BYTES: usize = 128 * 1024;

/// What every line of a format holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineShape {
    /// Number of leading positive integers (1 or 2).
    pub ints: usize,
    /// Whether a value follows the integers (otherwise the value is 1).
    pub value: bool,
    /// Names of the columns, for messages (`ints` names, then the value's).
    pub names: [&'static str; 3],
}

/// A parsed line: the integers as written (1-based) and the value.
pub(crate) type Record = ([u64; 2], f32);

/// Parses `text` line by line, feeding each record to `record(acc, line, record)` where
/// `acc` is a per-chunk accumulator made by `make` and `line` the record's 1-based line
/// within its chunk (global when `parallel` is false and `first_line` is 1).
///
/// Returns the accumulators in text order. `first_line` is the line number of the first
/// line of `text` (for a body that follows a header). Errors name `path` and the line.
pub(crate) fn parse_lines<T, M, R>(
    text: &[u8],
    first_line: u64,
    path: &Path,
    shape: &LineShape,
    parallel: bool,
    make: M,
    record: R,
) -> Result<Vec<T>, SdgcError>
where
    T: Send,
    M: Fn(usize) -> T + Sync,
    R: Fn(&mut T, u64, Record) -> Result<(), String> + Sync,
{
    let run = |chunk: &&[u8]| -> Result<(T, u64), (u64, String)> {
        let mut acc = make(chunk.len());
        let lines = parse_chunk(chunk, shape, &mut acc, &record)?;
        Ok((acc, lines))
    };
    let chunks = if parallel {
        split_chunks(text)
    } else {
        vec![text]
    };
    let results: Vec<Result<(T, u64), (u64, String)>> = if chunks.len() == 1 {
        vec![run(&chunks[0])]
    } else {
        chunks.par_iter().map(run).collect()
    };
    let mut base = first_line.saturating_sub(1);
    let mut accs = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok((acc, lines)) => {
                base += lines;
                accs.push(acc);
            }
            Err((line, message)) => {
                return Err(SdgcError::Parse {
                    path: path.to_path_buf(),
                    line: base + line,
                    message,
                });
            }
        }
    }
    Ok(accs)
}

/// Cuts `text` into newline-aligned chunks, one per few-hundred kilobytes.
fn split_chunks(text: &[u8]) -> Vec<&[u8]> {
    if text.len() < PARALLEL_MIN_BYTES {
        return vec![text];
    }
    let pieces = 4 * rayon::current_num_threads().max(1);
    let target = (text.len() / pieces).max(MIN_CHUNK_BYTES);
    let mut chunks = Vec::with_capacity(pieces + 1);
    let mut start = 0;
    while start < text.len() {
        let probe = start + target;
        if probe >= text.len() {
            chunks.push(&text[start..]);
            break;
        }
        let end = match memchr::memchr(b'\n', &text[probe..]) {
            Some(k) => probe + k + 1,
            None => text.len(),
        };
        chunks.push(&text[start..end]);
        start = end;
    }
    chunks
}

/// Parses one chunk; returns the number of lines it holds, or the 1-based line (within
/// the chunk) and message of its first error.
fn parse_chunk<T, R>(
    chunk: &[u8],
    shape: &LineShape,
    acc: &mut T,
    record: &R,
) -> Result<u64, (u64, String)>
where
    R: Fn(&mut T, u64, Record) -> Result<(), String>,
{
    let mut pos = 0;
    let mut line = 0u64;
    let mut memo = ValueMemo {
        field: &[],
        value: 0.0,
    };
    while pos < chunk.len() {
        line += 1;
        let start = pos;
        match parse_line(chunk, &mut pos, shape, &mut memo) {
            Some(Some(parsed)) => record(acc, line, parsed).map_err(|message| (line, message))?,
            Some(None) => {}
            None => {
                let end = memchr::memchr(b'\n', &chunk[start..]).map_or(chunk.len(), |k| start + k);
                return Err((line, diagnose(&chunk[start..end], shape)));
            }
        }
    }
    Ok(line)
}

#[inline(always)]
fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

/// Whether `byte` ends a field.
#[inline(always)]
fn is_terminator(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

/// Slice equality with two 8-byte loads for fields of 8 to 16 bytes (most values).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        let word =
            |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    a == b
}

/// Skips tabs and spaces; returns how many. One tab is the common case, tested first.
#[inline(always)]
fn skip_blanks(text: &[u8], pos: &mut usize) -> usize {
    if *pos >= text.len() || !is_blank(text[*pos]) {
        return 0;
    }
    *pos += 1;
    if *pos >= text.len() || !is_blank(text[*pos]) {
        return 1;
    }
    let start = *pos - 1;
    while *pos < text.len() && is_blank(text[*pos]) {
        *pos += 1;
    }
    *pos - start
}

/// The last value field parsed and its value: files often repeat one value on every line
/// (the official networks hold only `6.250000e-02`), and comparing a dozen bytes is
/// cheaper than parsing them.
struct ValueMemo<'a> {
    field: &'a [u8],
    value: f32,
}

/// Parses the line at `*pos` and moves `*pos` past its newline. `Some(None)` for a blank
/// line, `None` for a malformed one (then [`diagnose`] says why).
#[inline(always)]
fn parse_line<'a>(
    text: &'a [u8],
    pos: &mut usize,
    shape: &LineShape,
    memo: &mut ValueMemo<'a>,
) -> Option<Option<Record>> {
    skip_blanks(text, pos);
    if *pos >= text.len() || text[*pos] == b'\n' || text[*pos] == b'\r' {
        return finish_line(text, pos).then_some(None);
    }
    let mut ints = [0u64; 2];
    ints[0] = parse_uint(text, pos)?;
    for int in ints.iter_mut().take(shape.ints).skip(1) {
        if skip_blanks(text, pos) == 0 {
            return None;
        }
        *int = parse_uint(text, pos)?;
    }
    let value = if shape.value {
        if skip_blanks(text, pos) == 0 {
            return None;
        }
        let start = *pos;
        let known = start + memo.field.len();
        if !memo.field.is_empty()
            && known <= text.len()
            && same_bytes(&text[start..known], memo.field)
            && (known == text.len() || is_terminator(text[known]))
        {
            *pos = known;
        } else {
            while *pos < text.len() && !is_terminator(text[*pos]) {
                *pos += 1;
            }
            let field = &text[start..*pos];
            memo.value = parse_value(field)?;
            memo.field = field;
        }
        memo.value
    } else {
        1.0
    };
    finish_line(text, pos).then_some(Some((ints, value)))
}

/// Skips trailing blanks and `\r`, then requires a newline (consumed) or the end.
#[inline(always)]
fn finish_line(text: &[u8], pos: &mut usize) -> bool {
    if *pos < text.len() && text[*pos] == b'\n' {
        *pos += 1;
        return true;
    }
    while *pos < text.len() && matches!(text[*pos], b' ' | b'\t' | b'\r') {
        *pos += 1;
    }
    if *pos == text.len() {
        return true;
    }
    if text[*pos] == b'\n' {
        *pos += 1;
        return true;
    }
    false
}

/// Digits of a positive integer; `None` when there are none or more than 18.
#[inline(always)]
fn parse_uint(text: &[u8], pos: &mut usize) -> Option<u64> {
    let start = *pos;
    let mut value = 0u64;
    while *pos < text.len() {
        let digit = text[*pos].wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        *pos += 1;
    }
    let digits = *pos - start;
    (digits > 0 && digits <= 18).then_some(value)
}

/// Exact powers of ten in `f32` (10^10 = 2^10·5^10 and 5^10 < 2^24).
const POW10: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// Parses a finite decimal value: a correctly rounded fast path for short mantissas
/// (Clinger: an exact mantissa ≤ 2^24 times or over an exact power of ten ≤ 10^10 is one
/// rounding), `str::parse` otherwise. `None` when it is not a number or not finite.
#[inline]
pub(crate) fn parse_value(field: &[u8]) -> Option<f32> {
    match parse_value_fast(field) {
        Some(value) => Some(value),
        None => {
            let value: f32 = std::str::from_utf8(field).ok()?.parse().ok()?;
            value.is_finite().then_some(value)
        }
    }
}

#[inline(always)]
fn parse_value_fast(field: &[u8]) -> Option<f32> {
    let mut i = 0;
    let negative = match field.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut mantissa = 0u64;
    let mut digits = 0u32;
    let mut exponent = 0i32;
    let mut any = false;
    while i < field.len() && field[i].is_ascii_digit() {
        let digit = u64::from(field[i] - b'0');
        any = true;
        if mantissa != 0 || digit != 0 {
            if digits >= 18 {
                return None;
            }
            mantissa = mantissa * 10 + digit;
            digits += 1;
        }
        i += 1;
    }
    if i < field.len() && field[i] == b'.' {
        i += 1;
        while i < field.len() && field[i].is_ascii_digit() {
            let digit = u64::from(field[i] - b'0');
            any = true;
            if mantissa != 0 || digit != 0 {
                if digits >= 18 {
                    return None;
                }
                mantissa = mantissa * 10 + digit;
                digits += 1;
            }
            exponent -= 1;
            i += 1;
        }
    }
    if !any {
        return None;
    }
    if i < field.len() && (field[i] == b'e' || field[i] == b'E') {
        i += 1;
        let exponent_negative = match field.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut written = 0i32;
        while i < field.len() && field[i].is_ascii_digit() {
            if i - start >= 4 {
                return None;
            }
            written = written * 10 + i32::from(field[i] - b'0');
            i += 1;
        }
        if i == start {
            return None;
        }
        exponent += if exponent_negative { -written } else { written };
    }
    if i != field.len() {
        return None;
    }
    if mantissa == 0 {
        return Some(if negative { -0.0 } else { 0.0 });
    }
    while mantissa > (1 << 24) && mantissa.is_multiple_of(10) {
        mantissa /= 10;
        exponent += 1;
    }
    if mantissa > (1 << 24) || !(-10..=10).contains(&exponent) {
        return None;
    }
    let m = mantissa as f32;
    let magnitude = if exponent >= 0 {
        m * POW10[exponent as usize]
    } else {
        m / POW10[(-exponent) as usize]
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Says precisely what is wrong with a line the fast parser refused.
fn diagnose(line: &[u8], shape: &LineShape) -> String {
    let fields: Vec<&[u8]> = line
        .split(|&b| matches!(b, b' ' | b'\t' | b'\r'))
        .filter(|f| !f.is_empty())
        .collect();
    let expected = shape.ints + usize::from(shape.value);
    let names = shape.names[..expected].join(", ");
    if fields.len() != expected {
        return format!(
            "expected {expected} tab-separated column{} ({names}), found {}",
            if expected == 1 { "" } else { "s" },
            fields.len()
        );
    }
    for (k, field) in fields.iter().take(shape.ints).enumerate() {
        if !field.iter().all(u8::is_ascii_digit) {
            return format!(
                "{} '{}' is not a positive integer",
                shape.names[k],
                show(field)
            );
        }
        if field.len() > 18 {
            return format!("{} '{}' is too large", shape.names[k], show(field));
        }
    }
    if shape.value {
        let field = fields[shape.ints];
        let name = shape.names[shape.ints];
        return match std::str::from_utf8(field)
            .ok()
            .and_then(|s| s.parse::<f32>().ok())
        {
            None => format!("{name} '{}' is not a number", show(field)),
            Some(v) if !v.is_finite() => format!("{name} '{}' is not finite", show(field)),
            Some(_) => "malformed line".into(),
        };
    }
    "malformed line".into()
}

/// A field for a message: lossy UTF-8, at most 40 characters.
fn show(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: LineShape = LineShape {
        ints: 2,
        value: true,
        names: ["row", "column", "value"],
    };

    fn parse_all(text: &str, parallel: bool) -> Result<Vec<(u64, u64, f32, u64)>, SdgcError> {
        let accs = parse_lines(
            text.as_bytes(),
            1,
            Path::new("t.tsv"),
            &SHAPE,
            parallel,
            |_| Vec::new(),
            |acc: &mut Vec<(u64, u64, f32, u64)>, line, ([a, b], v)| {
                acc.push((a, b, v, line));
                Ok(())
            },
        )?;
        Ok(accs.concat())
    }

    #[test]
    fn fast_values_are_correctly_rounded() {
        for text in [
            "6.250000e-02",
            "0.0625",
            "1",
            "-1.5",
            "+2.5E+3",
            "1e-10",
            "1.2345678",
            "3.4028235e38",
            "1.17549435e-38",
            "0.1",
            "123456789012",
            ".5",
            "5.",
            "0.000000e+00",
            "-0",
            "7e10",
            "16777217",
            "9.999999e-01",
            "1.0000000000000000000001",
        ] {
            let expected: f32 = text.parse().unwrap();
            let got = parse_value(text.as_bytes()).unwrap();
            assert_eq!(got.to_bits(), expected.to_bits(), "{text}");
        }
        for bad in [
            "", "-", ".", "e5", "1e", "1.2.3", "abc", "nan", "inf", "-inf", "1e39", "1x",
        ] {
            assert_eq!(parse_value(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn fast_path_agrees_with_std_on_many_values() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mantissa = (state >> 40) % 100_000_000;
            let exponent = ((state >> 8) % 25) as i32 - 12;
            let text = format!("{mantissa}e{exponent}");
            let expected: f32 = text.parse().unwrap();
            assert_eq!(
                parse_value(text.as_bytes()).unwrap().to_bits(),
                expected.to_bits(),
                "{text}"
            );
            let text = format!("{}.{:04}", mantissa / 10000, mantissa % 10000);
            let expected: f32 = text.parse().unwrap();
            assert_eq!(
                parse_value(text.as_bytes()).unwrap().to_bits(),
                expected.to_bits(),
                "{text}"
            );
        }
    }

    #[test]
    fn lines_tolerate_blanks_crlf_and_missing_final_newline() {
        let got = parse_all("1\t2\t0.5\r\n\n  3 4   1e0 \n5\t6\t-2", false).unwrap();
        assert_eq!(got, vec![(1, 2, 0.5, 1), (3, 4, 1.0, 3), (5, 6, -2.0, 4)]);
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let message = |text: &str| match parse_all(text, false) {
            Err(SdgcError::Parse { line, message, .. }) => (line, message),
            other => panic!("expected a parse error, got {other:?}"),
        };
        assert_eq!(message("1\t2\t3\n1\t2\n").0, 2);
        assert!(message("1\t2\t3\n1\t2\n").1.contains("found 2"));
        assert!(message("1\t2\t3\t4\n").1.contains("found 4"));
        assert!(
            message("1\tx\t3\n")
                .1
                .contains("column 'x' is not a positive integer")
        );
        assert!(message("-1\t2\t3\n").1.contains("row '-1'"));
        assert!(message("1\t2\tabc\n").1.contains("is not a number"));
        assert!(message("1\t2\tNaN\n").1.contains("not finite"));
        assert!(message("1\t2\t1e40\n").1.contains("not finite"));
        assert!(
            message("1234567890123456789\t2\t1\n")
                .1
                .contains("too large")
        );
    }

    #[test]
    fn parallel_chunks_keep_global_line_numbers() {
        let mut text = String::new();
        for i in 1..=60_000u64 {
            text.push_str(&format!("{i}\t{}\t6.250000e-02\n", i % 7 + 1));
        }
        assert!(text.len() > 2 * PARALLEL_MIN_BYTES);
        let serial = parse_all(&text, false).unwrap();
        let parallel = parse_all(&text, true).unwrap();
        assert_eq!(serial.len(), 60_000);
        assert_eq!(
            serial.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
            parallel.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>()
        );
        let broken = text.replacen("54321\t", "54321\tzz\t", 1);
        match parse_all(&broken, true) {
            Err(SdgcError::Parse { line, .. }) => assert_eq!(line, 54321),
            other => panic!("{other:?}"),
        }
    }
}
