//! The official text formats: every malformed input is an error naming the file and the
//! 1-based line; good files round-trip; the real N = 1024 files read and write back
//! byte for byte.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::{Network, SdgcError, paths, tsv};

/// An official file from the team's data, or `None` (printing why) when absent; a failure
/// when `CI` is set.
fn official(name: &str) -> Option<PathBuf> {
    let root = paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let found = paths::find_official(&root, name);
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is missing under CI"
        );
        eprintln!("skipped: official file {name} not found (see paths::official_dirs)");
    }
    found
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Asserts a parse error at `line` whose text names `path` and contains `needle`.
fn expect_line_error(
    result: Result<impl std::fmt::Debug, SdgcError>,
    path: &Path,
    line: u64,
    needle: &str,
) {
    let error = result.expect_err("malformed input must be an error");
    let text = error.to_string();
    match &error {
        SdgcError::Parse {
            path: p,
            line: l,
            message,
        } => {
            assert_eq!(p, path, "{text}");
            assert_eq!(*l, line, "{text}");
            assert!(message.contains(needle), "expected '{needle}' in: {text}");
        }
        other => panic!("expected a parse error at line {line}, got {other:?}"),
    }
    assert!(
        text.contains(&format!("{}:{line}:", path.display())),
        "{text}"
    );
}

/// Asserts a whole-file error naming `path` whose text contains `needle`.
fn expect_file_error(result: Result<impl std::fmt::Debug, SdgcError>, path: &Path, needle: &str) {
    let error = result.expect_err("bad input must be an error");
    let text = error.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(needle), "expected '{needle}' in: {text}");
}

/// A little valid N = 4 layer, each line ending in a newline.
const GOOD: &str =
    "1\t1\t6.250000e-02\n2\t1\t6.250000e-02\n3\t2\t6.250000e-02\n4\t4\t6.250000e-02\n";

#[test]
fn wrong_column_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "n4-l1.tsv", &format!("{GOOD}1\t2\n"));
    expect_line_error(
        tsv::read_layer(&path, 4),
        &path,
        5,
        "expected 3 tab-separated columns",
    );
    let path = write(dir.path(), "n4-l2.tsv", "1\t2\t1\n\n2\t3\t1\t7\n");
    expect_line_error(tsv::read_layer(&path, 4), &path, 3, "found 4");
}

#[test]
fn non_numeric_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.tsv", "1\t1\t1\nx\t2\t1\n");
    expect_line_error(
        tsv::read_layer(&path, 4),
        &path,
        2,
        "row 'x' is not a positive integer",
    );
    let path = write(dir.path(), "b.tsv", "1\t1.5\t1\n");
    expect_line_error(tsv::read_layer(&path, 4), &path, 1, "column '1.5'");
    let path = write(dir.path(), "c.tsv", "1\t1\t1\n2\t2\t0.5q\n");
    expect_line_error(
        tsv::read_layer(&path, 4),
        &path,
        2,
        "value '0.5q' is not a number",
    );
}

#[test]
fn indices_zero_or_above_n() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.tsv", "1\t1\t1\n0\t2\t1\n");
    expect_line_error(
        tsv::read_layer(&path, 4),
        &path,
        2,
        "row index 0: indices are 1-based",
    );
    let path = write(dir.path(), "b.tsv", "1\t1\t1\n2\t2\t1\n3\t5\t1\n");
    expect_line_error(
        tsv::read_layer(&path, 4),
        &path,
        3,
        "column index 5 exceeds the size 4",
    );
    let path = write(dir.path(), "c.tsv", "5\t1\t1\n");
    expect_line_error(tsv::read_layer(&path, 4), &path, 1, "row index 5");
}

#[test]
fn nan_and_infinite_values() {
    let dir = tempfile::tempdir().unwrap();
    for (k, value) in ["nan", "NaN", "inf", "-inf", "infinity", "1e39"]
        .iter()
        .enumerate()
    {
        let path = write(
            dir.path(),
            &format!("v{k}.tsv"),
            &format!("1\t1\t1\n2\t2\t{value}\n"),
        );
        expect_line_error(tsv::read_layer(&path, 4), &path, 2, "is not finite");
    }
}

#[test]
fn duplicate_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "d.tsv",
        "1\t1\t1\n2\t3\t1\n3\t3\t1\n2\t3\t0.5\n",
    );
    expect_line_error(
        tsv::read_layer(&path, 4),
        &path,
        4,
        "duplicate entry (2, 3): already given on line 2",
    );
}

#[test]
fn empty_files() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("e1.tsv", ""), ("e2.tsv", "\n\n  \n")] {
        let path = write(dir.path(), name, text);
        expect_file_error(tsv::read_layer(&path, 4), &path, "empty file");
    }
    let path = write(dir.path(), "images.tsv", "");
    expect_file_error(tsv::read_images(&path, 4, None), &path, "empty file");
    let gz = dir.path().join("e.tsv.gz");
    std::fs::write(&gz, gzip(b"")).unwrap();
    expect_file_error(tsv::read_layer(&gz, 4), &gz, "empty file");
}

#[test]
fn errors_deep_in_a_large_file_name_the_right_line() {
    // Large enough to be parsed in parallel chunks.
    let neurons = 4096;
    let mut text = String::new();
    for col in 1..=neurons {
        for k in 0..8 {
            text.push_str(&format!(
                "{}\t{col}\t6.250000e-02\n",
                (col * 8 + k * 509) % neurons + 1
            ));
        }
    }
    assert!(text.len() > 600_000);
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "big.tsv", &text);
    assert_eq!(tsv::read_layer(&good, neurons).unwrap().nnz(), neurons * 8);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[29_999] = "17\t17";
    let path = write(dir.path(), "broken.tsv", &(lines.join("\n") + "\n"));
    expect_line_error(tsv::read_layer(&path, neurons), &path, 30_000, "found 2");
}

#[test]
fn missing_layer_in_folder() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "n4-l1.tsv", GOOD);
    write(dir.path(), "n4-l3.tsv", GOOD);
    let result = tsv::read_network(dir.path(), Some(4), 3, &mut |_| {});
    expect_file_error(result, dir.path(), "missing layer file n4-l2.tsv");
    let result = tsv::read_network(dir.path(), None, 3, &mut |_| {});
    expect_file_error(result, dir.path(), "missing layer file n4-l2.tsv");
    // Two layers are there.
    assert_eq!(
        tsv::read_network(dir.path(), None, 1, &mut |_| {})
            .unwrap()
            .num_layers(),
        1
    );
}

/// A tar.gz holding `neuron{N}/name` members with the given texts.
fn tar_gz(path: &Path, members: &[(String, &[u8])]) {
    let encoder =
        flate2::write::GzEncoder::new(File::create(path).unwrap(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(encoder);
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *bytes).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
}

#[test]
fn missing_layer_in_tar_gz() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("neuron4.tar.gz");
    tar_gz(
        &archive,
        &[
            ("neuron4/n4-l3.tsv".into(), GOOD.as_bytes()),
            ("neuron4/n4-l1.tsv".into(), GOOD.as_bytes()),
        ],
    );
    expect_file_error(
        tsv::read_network(&archive, None, 3, &mut |_| {}),
        &archive,
        "missing layer file n4-l2.tsv",
    );
    expect_file_error(
        tsv::read_network(&archive, Some(4), 2, &mut |_| {}),
        &archive,
        "missing layer file n4-l2.tsv",
    );
    let mut seen = Vec::new();
    let network = tsv::read_network(&archive, None, 1, &mut |k| seen.push(k)).unwrap();
    assert_eq!(
        (network.neurons(), network.num_layers(), seen),
        (4, 1, vec![1])
    );
}

#[test]
fn malformed_member_of_a_tar_gz_names_the_member_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("neuron4.tar.gz");
    let bad = format!("{GOOD}9\t1\t1\n");
    tar_gz(
        &archive,
        &[
            ("neuron4/n4-l2.tsv".into(), bad.as_bytes()),
            ("neuron4/n4-l1.tsv".into(), GOOD.as_bytes()),
        ],
    );
    let member = archive.join("neuron4/n4-l2.tsv");
    expect_line_error(
        tsv::read_network(&archive, Some(4), 2, &mut |_| {}),
        &member,
        5,
        "row index 9",
    );
}

#[test]
fn truncated_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 1..=2000 {
        text.push_str(&format!("{i}\t{}\t0.{i}\n", i % 7 + 1));
    }
    let packed = gzip(text.as_bytes());
    let path = dir.path().join("n2000-l1.tsv.gz");
    std::fs::write(&path, &packed[..packed.len() / 2]).unwrap();
    expect_file_error(
        tsv::read_layer(&path, 2000),
        &path,
        "truncated or corrupt gzip",
    );

    let archive = dir.path().join("neuron4.tar.gz");
    let members: Vec<(String, Vec<u8>)> = (1..=40)
        .map(|l| {
            (
                format!("neuron2000/n2000-l{l}.tsv"),
                text.clone().into_bytes(),
            )
        })
        .collect();
    let refs: Vec<(String, &[u8])> = members.iter().map(|(n, b)| (n.clone(), &b[..])).collect();
    tar_gz(&archive, &refs);
    let whole = std::fs::read(&archive).unwrap();
    std::fs::write(&archive, &whole[..whole.len() * 2 / 3]).unwrap();
    expect_file_error(
        tsv::read_network(&archive, None, 40, &mut |_| {}),
        &archive,
        "truncated or corrupt",
    );
}

#[test]
fn images_wider_than_n() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "images.tsv", "1\t1\t1\n1\t4\t1\n2\t5\t1\n");
    expect_line_error(
        tsv::read_images(&path, 4, None),
        &path,
        3,
        "wider than the network",
    );
    let path = write(
        dir.path(),
        "images.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n% a comment\n2 5 2\n1 1\n2 5\n",
    );
    expect_line_error(
        tsv::read_images(&path, 4, None),
        &path,
        3,
        "wider than the network's N = 4",
    );
}

#[test]
fn malformed_images_and_matrix_market() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "i.tsv", "1\t1\t1\n0\t2\t1\n");
    expect_line_error(tsv::read_images(&path, 4, None), &path, 2, "image index 0");
    let path = write(dir.path(), "dup.tsv", "1\t1\t1\n2\t2\t1\n1\t1\t1\n");
    expect_line_error(
        tsv::read_images(&path, 4, None),
        &path,
        3,
        "duplicate entry",
    );
    let path = write(
        dir.path(),
        "bad.mtx",
        "%%MatrixMarket matrix array real general\n2 2\n",
    );
    expect_line_error(
        tsv::read_images(&path, 4, None),
        &path,
        1,
        "expected '%%MatrixMarket",
    );
    let path = write(
        dir.path(),
        "count.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n2 4 3\n1 1\n2 2\n",
    );
    expect_file_error(
        tsv::read_images(&path, 4, None),
        &path,
        "announces 3 entries, found 2",
    );
    let path = write(
        dir.path(),
        "row.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n%\n2 4 2\n1 1\n3 2\n",
    );
    expect_line_error(
        tsv::read_images(&path, 4, None),
        &path,
        5,
        "row index 3 exceeds the size 2",
    );
    let path = write(
        dir.path(),
        "dup.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n2 4 3\n1 1\n2 2\n1 1\n",
    );
    expect_line_error(
        tsv::read_images(&path, 4, None),
        &path,
        5,
        "duplicate entry (1, 1)",
    );
    let path = write(
        dir.path(),
        "size.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n2 x 3\n",
    );
    expect_line_error(tsv::read_images(&path, 4, None), &path, 2, "size line");
}

#[test]
fn truth_that_is_not_ascending() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "truth.tsv", "3\n5\n4\n");
    expect_line_error(tsv::read_categories(&path), &path, 3, "strictly ascending");
    let path = write(dir.path(), "twice.tsv", "3\n5\n5\n");
    expect_line_error(
        tsv::read_categories(&path),
        &path,
        3,
        "not greater than the previous 5",
    );
    let path = write(dir.path(), "zero.tsv", "0\n");
    expect_line_error(tsv::read_categories(&path), &path, 1, "indices are 1-based");
    let path = write(dir.path(), "word.tsv", "1\n2 3\n");
    expect_line_error(
        tsv::read_categories(&path),
        &path,
        2,
        "expected 1 tab-separated column",
    );
    let path = write(
        dir.path(),
        "truth.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n10 1 3\n5 1\n2 1\n5 1\n",
    );
    expect_line_error(
        tsv::read_categories(&path),
        &path,
        5,
        "category 5 repeats line 3",
    );
    assert!(tsv::write_categories(&dir.path().join("w.tsv"), &[3, 2]).is_err());
    assert!(tsv::write_categories(&dir.path().join("w.tsv"), &[0, 2]).is_err());
}

#[test]
fn a_path_that_is_no_network_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "notes.txt", "hello");
    expect_file_error(
        tsv::read_network(&path, None, 1, &mut |_| {}),
        &path,
        "not a folder of layer files",
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    expect_file_error(
        tsv::read_network(&empty, None, 1, &mut |_| {}),
        &empty,
        "holds no",
    );
    assert!(tsv::read_network(&dir.path().join("absent"), None, 1, &mut |_| {}).is_err());
}

/// A random `rows × cols` matrix with finite values of any magnitude.
fn matrix(rows: usize, cols: usize, max_entries: usize) -> impl Strategy<Value = Csr> {
    let value = prop_oneof![
        Just(0.0625f32),
        any::<f32>().prop_filter("finite", |v| v.is_finite()),
        -4.0f32..4.0
    ];
    proptest::collection::btree_map((0..rows as u32, 0..cols as u32), value, 0..max_entries)
        .prop_map(move |entries| {
            let triplets: Vec<(u32, u32, f32)> =
                entries.into_iter().map(|((r, c), v)| (r, c, v)).collect();
            Csr::from_triplets(rows, cols, &triplets).unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn layers_round_trip(layer in matrix(48, 48, 300), gz in any::<bool>()) {
        prop_assume!(layer.nnz() > 0);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(if gz { "n48-l1.tsv.gz" } else { "n48-l1.tsv" });
        tsv::write_layer(&path, &layer).unwrap();
        let read = tsv::read_layer(&path, 48).unwrap();
        prop_assert_eq!(read.row_offsets(), layer.row_offsets());
        prop_assert_eq!(read.col_indices(), layer.col_indices());
        let bits = |m: &Csr| m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&read), bits(&layer));
    }

    #[test]
    fn images_round_trip(images in matrix(30, 40, 200), form in 0usize..3) {
        let dir = tempfile::tempdir().unwrap();
        let name = ["images.tsv", "images.tsv.gz", "images.mtx"][form];
        let path = dir.path().join(name);
        tsv::write_images(&path, &images).unwrap();
        if images.nnz() == 0 && form != 2 {
            prop_assert!(tsv::read_images(&path, 40, Some(30)).is_err());
            return Ok(());
        }
        let last = images.triplets().map(|t| t.0 as usize + 1).max().unwrap_or(0);
        // A TSV holds images up to its largest id (trailing empty images cannot be
        // written); a MatrixMarket file as many as its size line says.
        let held = if form == 2 { 30 } else { last };
        let natural = tsv::read_images(&path, 40, None).unwrap();
        prop_assert_eq!(natural.nrows(), held);
        prop_assert_eq!(&tsv::read_images(&path, 40, Some(held)).unwrap(), &natural);
        let padded: Vec<_> = natural.triplets().collect();
        prop_assert_eq!(padded, images.triplets().collect::<Vec<_>>());
        // More rows than the file holds are refused, never padded.
        let error = tsv::read_images(&path, 40, Some(held + 1)).unwrap_err().to_string();
        prop_assert!(error.contains("rows were asked for"), "{}", error);
        if held >= 7 {
            let head = tsv::read_images(&path, 40, Some(7)).unwrap();
            prop_assert_eq!(head.nrows(), 7);
            prop_assert_eq!(head.nnz(), images.row_offsets()[7] as usize);
        }
    }

    #[test]
    fn categories_round_trip(ids in proptest::collection::btree_set(1u32..100_000, 0..200), gz in any::<bool>()) {
        let ids: Vec<u32> = ids.into_iter().collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(if gz { "c.tsv.gz" } else { "c.tsv" });
        tsv::write_categories(&path, &ids).unwrap();
        prop_assert_eq!(tsv::read_categories(&path).unwrap(), ids);
    }
}

fn small_network(neurons: usize, layers: usize) -> Network {
    let built = (0..layers)
        .map(|l| {
            let triplets: Vec<(u32, u32, f32)> = (0..neurons as u32)
                .flat_map(|r| {
                    (0..3u32).map(move |k| {
                        (
                            r,
                            (r * 7 + k * 5 + l as u32) % neurons as u32,
                            0.0625 * (k + 1) as f32,
                        )
                    })
                })
                .collect();
            Csr::from_triplets(neurons, neurons, &triplets).unwrap()
        })
        .collect();
    Network::new(neurons, built).unwrap()
}

#[test]
fn networks_round_trip_through_folders_and_archives() {
    let network = small_network(32, 5);
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("neuron32");
    let mut written = Vec::new();
    tsv::write_network_dir(&folder, &network, &mut |k| written.push(k)).unwrap();
    assert_eq!(written, vec![1, 2, 3, 4, 5]);
    let mut read_progress = Vec::new();
    let read = tsv::read_network(&folder, None, 5, &mut |k| read_progress.push(k)).unwrap();
    assert_eq!(read, network);
    assert_eq!(read_progress, vec![1, 2, 3, 4, 5]);
    // The parent of an extracted archive works too, and fewer layers can be taken.
    assert_eq!(
        tsv::read_network(dir.path(), Some(32), 3, &mut |_| {}).unwrap(),
        network.clone().truncated(3).unwrap()
    );
    // A gzip-compressed layer file in the folder is read as well.
    let plain = folder.join("n32-l2.tsv");
    std::fs::write(
        folder.join("n32-l2.tsv.gz"),
        gzip(&std::fs::read(&plain).unwrap()),
    )
    .unwrap();
    std::fs::remove_file(&plain).unwrap();
    assert_eq!(
        tsv::read_network(&folder, None, 5, &mut |_| {}).unwrap(),
        network
    );
    // An archive with members in reverse order and a foreign file.
    let members: Vec<(String, Vec<u8>)> = (1..=5)
        .rev()
        .map(|l| {
            let name = tsv::layer_file_name(32, l);
            let bytes = std::fs::read(folder.join(&name)).unwrap_or_else(|_| {
                let mut text = Vec::new();
                flate2::read::GzDecoder::new(
                    File::open(folder.join(format!("{name}.gz"))).unwrap(),
                )
                .read_to_end(&mut text)
                .unwrap();
                text
            });
            (format!("neuron32/{name}"), bytes)
        })
        .chain([("neuron32/README".to_string(), b"hello".to_vec())])
        .collect();
    let refs: Vec<(String, &[u8])> = members.iter().map(|(n, b)| (n.clone(), &b[..])).collect();
    let archive = dir.path().join("neuron32.tar.gz");
    tar_gz(&archive, &refs);
    let mut progress = Vec::new();
    assert_eq!(
        tsv::read_network(&archive, None, 5, &mut |k| progress.push(k)).unwrap(),
        network
    );
    assert_eq!(progress, vec![1, 2, 3, 4, 5]);
    expect_file_error(
        tsv::read_network(&archive, None, 6, &mut |_| {}),
        &archive,
        "missing layer file n32-l6.tsv",
    );
}

#[test]
fn real_layer_writes_back_byte_for_byte() {
    let Some(archive) = official("neuron1024.tar.gz") else {
        return;
    };
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(File::open(&archive).unwrap()));
    let mut original = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().ends_with("n1024-l1.tsv") {
            entry.read_to_end(&mut original).unwrap();
            break;
        }
    }
    assert_eq!(original.len(), 682_816);
    let layer = tsv::parse_layer(&original, 1024, Path::new("n1024-l1.tsv")).unwrap();
    assert_eq!(layer.nnz(), 32_768);
    assert!(layer.values().iter().all(|&v| v == 0.0625));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n1024-l1.tsv");
    tsv::write_layer(&path, &layer).unwrap();
    assert!(
        std::fs::read(&path).unwrap() == original,
        "the written layer differs from the official file"
    );
}

#[test]
fn real_network_reads_from_the_official_archive() {
    let Some(archive) = official("neuron1024.tar.gz") else {
        return;
    };
    let mut progress = Vec::new();
    let network = tsv::read_network(&archive, None, 120, &mut |k| progress.push(k)).unwrap();
    assert_eq!(progress, (1..=120).collect::<Vec<_>>());
    assert_eq!(
        (network.neurons(), network.num_layers(), network.nnz()),
        (1024, 120, 120 * 32_768)
    );
    for layer in network.layers() {
        assert!(layer.values().iter().all(|&v| v == 0.0625));
        assert!(layer.row_offsets().windows(2).all(|w| w[1] - w[0] == 32));
    }
    let first = tsv::read_network(&archive, Some(1024), 6, &mut |_| {}).unwrap();
    assert_eq!(first.layers(), &network.layers()[..6]);
    expect_file_error(
        tsv::read_network(&archive, None, 121, &mut |_| {}),
        &archive,
        "missing layer file n1024-l121.tsv",
    );
}

#[test]
fn real_images_and_truth_read() {
    if let Some(path) = official("sparse-images-1024_subset.mtx") {
        let images = tsv::read_images(&path, 1024, None).unwrap();
        assert_eq!(
            (images.nrows(), images.ncols(), images.nnz()),
            (1200, 1024, 122_713)
        );
        assert!(images.values().iter().all(|&v| v == 1.0));
        let head = tsv::read_images(&path, 1024, Some(100)).unwrap();
        assert_eq!(head.nrows(), 100);
        assert_eq!(head.nnz(), images.row_offsets()[100] as usize);
        // Written as the official TSV and read back.
        let dir = tempfile::tempdir().unwrap();
        let tsv_path = dir.path().join("sparse-images-1024.tsv.gz");
        tsv::write_images(&tsv_path, &images).unwrap();
        assert_eq!(tsv::read_images(&tsv_path, 1024, None).unwrap(), images);
        expect_line_error(
            tsv::read_images(&path, 512, None),
            &path,
            8,
            "wider than the network's N = 512",
        );
    }
    if let Some(path) = official("neuron1024-l120-categories.tsv") {
        let truth = tsv::read_categories(&path).unwrap();
        assert_eq!((truth.len(), truth[0]), (1812, 287));
    }
    if let Some(path) = official("neuron1024-l120-categories_subset.mtx") {
        let truth = tsv::read_categories(&path).unwrap();
        assert_eq!((truth.len(), truth[0]), (19, 287));
    }
}

#[test]
fn absurd_sizes_are_refused_before_allocating_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    // An image id of 10^12, and one of 4·10^9 (which fits 32 bits but would need 16 GB
    // of row offsets), without --rows.
    for id in ["1000000000000", "4000000000"] {
        let path = write(dir.path(), "i.tsv", &format!("1\t1\t1\n{id}\t2\t1\n"));
        expect_line_error(tsv::read_images(&path, 4, None), &path, 2, "MAX_ROWS");
        // With --rows, images past the rows asked for are skipped.
        assert_eq!(tsv::read_images(&path, 4, Some(1)).unwrap().nrows(), 1);
    }
    let path = write(
        dir.path(),
        "i.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n1000000000000 4 1\n1 1\n",
    );
    expect_line_error(tsv::read_images(&path, 4, None), &path, 2, "16777216");
    assert_eq!(tsv::read_images(&path, 4, Some(3)).unwrap().nrows(), 3);
    // N and L far past the limits.
    let layer = write(dir.path(), "n4.tsv", GOOD);
    expect_file_error(tsv::read_layer(&layer, 1 << 30), &layer, "MAX_NEURONS");
    expect_file_error(
        tsv::read_images(&layer, 1 << 30, None),
        &layer,
        "MAX_NEURONS",
    );
    expect_file_error(
        tsv::read_images(&layer, 4, Some(1 << 40)),
        &layer,
        "MAX_ROWS",
    );
    let error = tsv::read_network(dir.path(), Some(4), 1 << 40, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("MAX_LAYERS") && error.contains("65536"),
        "{error}"
    );
    let error = spdnn_sdgc::generator::network(1 << 30, 1, 0)
        .unwrap_err()
        .to_string();
    assert!(error.contains("MAX_NEURONS"), "{error}");
    let error = spdnn_sdgc::images::synthetic(1 << 40, 1024, 0)
        .unwrap_err()
        .to_string();
    assert!(error.contains("MAX_ROWS"), "{error}");
}

#[test]
fn more_rows_than_the_file_holds_are_refused_not_padded() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "i.tsv", "1\t1\t1\n3\t2\t1\n");
    assert_eq!(tsv::read_images(&path, 4, None).unwrap().nrows(), 3);
    assert_eq!(tsv::read_images(&path, 4, Some(3)).unwrap().nrows(), 3);
    assert_eq!(tsv::read_images(&path, 4, Some(2)).unwrap().nnz(), 1);
    expect_file_error(
        tsv::read_images(&path, 4, Some(4)),
        &path,
        "4 rows were asked for, but the file holds 3 images",
    );
    let path = write(
        dir.path(),
        "i.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n5 4 1\n1 1\n",
    );
    assert_eq!(tsv::read_images(&path, 4, Some(5)).unwrap().nrows(), 5);
    expect_line_error(
        tsv::read_images(&path, 4, Some(6)),
        &path,
        2,
        "announces 5 images",
    );
}
