//! The registers each blockdepend kernel takes, read from the CUBIN NVRTC makes for `--arch`
//! (default `sm_90`), with no GPU: what decides how many blocks share an SM, known before a
//! device call. Each kernel is compiled alone, as a run loads it, for every layer format
//! (`BD_FORMATS`) and for the sets a run compiles for its layers (`for_formats`): dense with
//! 16-bit scaled entries (the official 1024), 16-bit scaled entries alone (generated 4096),
//! 32-bit scaled entries alone, pairs alone.
//!
//! ```text
//! LD_LIBRARY_PATH=$PWD/.nvrtc/nvidia/cu13/lib cargo run --release -p spdnn-blockdepend \
//!     --example registers -- [--arch sm_90] [--dump DIR] [kernel ...]
//! ```
//!
//! `--dump DIR` also writes each CUBIN as `DIR/<kernel>.<set>.cubin` (set 0 … 6, the columns
//! in order), so that two versions of the source can be compared instruction by instruction
//! (the `.text.<kernel>` sections): a change that leaves them equal changes no behaviour.
//!
//! Each cell: registers (the kernel's `EIATTR_REGCOUNT` in the CUBIN's `.nv.info` section)
//! and, in parentheses, its frame's bytes of local memory (`EIATTR_FRAME_SIZE`; spills).

use spdnn_blockdepend::{ALL_FORMATS, CIRCULANT_ITEMS, Format, KERNELS, for_formats};
use spdnn_cuda::{ImageKind, ModuleImage, compile_text_to, selection_options};

/// Little-endian integer of `N` bytes at `at`, or None past the end.
fn le(bytes: &[u8], at: usize, n: usize) -> Option<u64> {
    let slice = bytes.get(at..at.checked_add(n)?)?;
    Some(
        slice
            .iter()
            .rev()
            .fold(0u64, |value, &b| (value << 8) | b as u64),
    )
}

/// The sections of a 64-bit little-endian ELF `image`: (name, sh_info, file offset, size).
fn sections(image: &[u8]) -> Option<Vec<(String, u64, usize, usize)>> {
    let table = le(image, 0x28, 8)? as usize;
    let entry_size = le(image, 0x3a, 2)? as usize;
    let count = le(image, 0x3c, 2)? as usize;
    let names_index = le(image, 0x3e, 2)? as usize;
    let header = |i: usize| table + i * entry_size;
    let names_at = le(image, header(names_index) + 0x18, 8)? as usize;
    (0..count)
        .map(|i| {
            let name_at = names_at + le(image, header(i), 4)? as usize;
            let name_len = image.get(name_at..)?.iter().position(|&b| b == 0)?;
            let name = String::from_utf8_lossy(image.get(name_at..name_at + name_len)?);
            Some((
                name.into_owned(),
                le(image, header(i) + 0x2c, 4)?,
                le(image, header(i) + 0x18, 8)? as usize,
                le(image, header(i) + 0x20, 8)? as usize,
            ))
        })
        .collect()
}

/// An attribute of `kernel` in a CUBIN: an entry of its `.nv.info` section, (symbol, value),
/// for the symbol its `.text.<kernel>` section names (sh_info).
fn kernel_attribute(image: &[u8], kernel: &str, wanted: u8) -> Option<u64> {
    const SIZED: u8 = 0x04;
    let sections = sections(image)?;
    let text = format!(".text.{kernel}");
    let symbol = sections.iter().find(|s| s.0 == text)?.1 & 0xff_ffff;
    let &(_, _, start, size) = sections.iter().find(|s| s.0 == ".nv.info")?;
    // Entries: format byte, attribute byte, then a 2-byte value, or (format SIZED) a 2-byte
    // size and that many bytes.
    let mut at = start;
    while at + 4 <= start + size {
        let (format, attribute) = (image[at], image[at + 1]);
        let mut next = at + 4;
        if format == SIZED {
            next += le(image, at + 2, 2)? as usize;
            if attribute == wanted && le(image, at + 4, 4)? == symbol {
                return le(image, at + 8, 4);
            }
        }
        at = next;
    }
    None
}

/// `EIATTR_REGCOUNT`: registers a thread.
const REGCOUNT: u8 = 0x2f;
/// `EIATTR_FRAME_SIZE`: bytes of local memory a thread's frame takes (spills among them).
const FRAME_SIZE: u8 = 0x11;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let mut arch = "sm_90".to_string();
    let mut dump = None;
    let mut names = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--arch" => arch = args.next().ok_or("--arch sm_XY")?,
            "--dump" => dump = Some(std::path::PathBuf::from(args.next().ok_or("--dump DIR")?)),
            _ => names.push(arg),
        }
    }
    let sets = [
        ("every format", ALL_FORMATS),
        (
            "dense + scaled16",
            Format::Dense.bit() | Format::EllScaled16.bit(),
        ),
        ("scaled16", Format::EllScaled16.bit()),
        ("scaled32", Format::EllScaled32.bit()),
        ("pairs", Format::Ell.bit()),
        (
            "scaled16 + circulant",
            Format::EllScaled16.bit() | CIRCULANT_ITEMS,
        ),
        (
            "scaled32 + circulant",
            Format::EllScaled32.bit() | CIRCULANT_ITEMS,
        ),
    ];
    println!("kernel\t{}", sets.map(|(label, _)| label).join("\t"));
    for decl in KERNELS {
        if !names.is_empty() && !names.iter().any(|n| n == decl.name) {
            continue;
        }
        let mut row = decl.name.to_string();
        for (set, (_, formats)) in sets.iter().enumerate() {
            let decl = for_formats(decl, *formats);
            let text = decl.source.expand_builtin()?;
            let mut options = decl.source.nvrtc_options(&arch)?;
            options.extend(selection_options(&[decl.name]));
            let image =
                compile_text_to(decl.source.name, &text, &arch, &options, ImageKind::Cubin)?;
            let ModuleImage::Cubin(bytes) = image else {
                return Err("NVRTC handed back PTX where a CUBIN was asked for".into());
            };
            if let Some(dir) = &dump {
                std::fs::write(dir.join(format!("{}.{set}.cubin", decl.name)), &bytes)?;
            }
            let attribute = |wanted| match kernel_attribute(&bytes, decl.name, wanted) {
                Some(value) => value.to_string(),
                None => "?".into(),
            };
            row += &format!("\t{} ({})", attribute(REGCOUNT), attribute(FRAME_SIZE));
        }
        println!("{row}");
    }
    Ok(())
}
