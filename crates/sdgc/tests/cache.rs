//! The binary cache: round trips, and every kind of damage is a clear error naming the
//! file, never a wrong network.

use std::path::{Path, PathBuf};

use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::cache::{self, NetworkCacheReader, NetworkCacheWriter};
use spdnn_sdgc::{Input, InputOrigin, Network, SdgcError, paths, tsv};

fn network(neurons: usize, layers: usize, seed: u32) -> Network {
    let built = (0..layers as u32)
        .map(|l| {
            let triplets: Vec<(u32, u32, f32)> = (0..neurons as u32)
                .flat_map(|r| {
                    (0..3u32).map(move |k| {
                        let col = (r
                            .wrapping_mul(2654435761)
                            .wrapping_add(seed + l * 13 + k * 7))
                            % neurons as u32;
                        ((r, col), (k as f32 - 1.3) * (l + 1) as f32)
                    })
                })
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_iter()
                .map(|((r, c), v)| (r, c, v))
                .collect();
            Csr::from_triplets(neurons, neurons, &triplets).unwrap()
        })
        .collect();
    Network::new(neurons, built).unwrap()
}

fn input(origin: InputOrigin) -> Input {
    let triplets: Vec<(u32, u32, f32)> = (0..20u32).map(|i| (i % 9, (i * 5) % 32, 1.0)).collect();
    Input {
        features: Csr::from_triplets(9, 32, &triplets).unwrap(),
        origin,
    }
}

/// An input too wide for 16-bit column indices, with varied values (the wide encodings).
fn wide_input() -> Input {
    let triplets: Vec<(u32, u32, f32)> = (0..30u32)
        .map(|i| (i % 5, 69_999 - i * 2001, i as f32 * 0.37 - 2.0))
        .collect();
    Input {
        features: Csr::from_triplets(5, 70_000, &triplets).unwrap(),
        origin: InputOrigin::Synthetic { seed: 3 },
    }
}

fn expect_error(result: Result<impl std::fmt::Debug, SdgcError>, path: &Path, needle: &str) {
    let error = result.expect_err("a damaged cache must be an error");
    let text = error.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(needle), "expected '{needle}' in: {text}");
}

fn cached_network(dir: &Path) -> (PathBuf, Network) {
    let net = network(32, 3, 1);
    let path = dir.join("net.bin");
    cache::write_network(&path, &net).unwrap();
    (path, net)
}

#[test]
fn networks_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (path, net) = cached_network(dir.path());
    assert!(cache::is_cache(&path));
    assert_eq!(cache::read_network(&path, None).unwrap(), net);
    assert_eq!(
        cache::read_network(&path, Some(2)).unwrap(),
        net.clone().truncated(2).unwrap()
    );
    expect_error(
        cache::read_network(&path, Some(4)),
        &path,
        "holds 3 layers, 4 were asked for",
    );
    let mut reader = NetworkCacheReader::open(&path).unwrap();
    assert_eq!((reader.neurons(), reader.layers()), (32, 3));
    for layer in net.layers() {
        assert_eq!(&reader.next_layer().unwrap().unwrap(), layer);
    }
    assert!(reader.next_layer().unwrap().is_none());
    assert!(!dir.path().join("net.bin.partial").exists());
}

#[test]
fn the_text_reader_detects_and_honours_caches() {
    let dir = tempfile::tempdir().unwrap();
    let (path, net) = cached_network(dir.path());
    let mut progress = Vec::new();
    let read = tsv::read_network(&path, None, 2, &mut |k| progress.push(k)).unwrap();
    assert_eq!(read, net.clone().truncated(2).unwrap());
    assert_eq!(progress, vec![1, 2]);
    assert_eq!(
        tsv::read_network(&path, Some(32), 3, &mut |_| {}).unwrap(),
        net
    );
    expect_error(
        tsv::read_network(&path, None, 4, &mut |_| {}),
        &path,
        "holds 3 layers, 4 were asked for",
    );
    expect_error(
        tsv::read_network(&path, Some(64), 1, &mut |_| {}),
        &path,
        "N = 32 network, not N = 64",
    );
}

#[test]
fn inputs_round_trip_with_their_origin() {
    let dir = tempfile::tempdir().unwrap();
    for origin in [
        InputOrigin::File {
            path: "data/sdgc/sparse-images-1024.tsv.gz".into(),
        },
        InputOrigin::Mnist,
        InputOrigin::Synthetic { seed: 0xdead_beef },
    ] {
        let path = dir.path().join("input.bin");
        let original = input(origin);
        cache::write_input(&path, &original).unwrap();
        assert!(cache::is_cache(&path));
        assert_eq!(cache::read_input(&path).unwrap(), original);
    }
    let path = dir.path().join("wide.bin");
    cache::write_input(&path, &wide_input()).unwrap();
    assert_eq!(cache::read_input(&path).unwrap(), wide_input());
}

#[test]
fn every_flipped_byte_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = cached_network(dir.path());
    let input_path = dir.path().join("input.bin");
    cache::write_input(
        &input_path,
        &input(InputOrigin::File {
            path: "x.tsv".into(),
        }),
    )
    .unwrap();
    // Narrow columns with varied values, narrow with one value, wide with varied values.
    let wide_path = dir.path().join("wide.bin");
    cache::write_input(&wide_path, &wide_input()).unwrap();
    for (path, is_network) in [(path, true), (input_path, false), (wide_path, false)] {
        let original = std::fs::read(&path).unwrap();
        assert!(original.len() > 100);
        let damaged = dir.path().join("damaged.bin");
        for position in 0..original.len() {
            // One flip per byte, walking through the bit positions.
            let mask = 1u8 << (position % 8);
            let mut bytes = original.clone();
            bytes[position] ^= mask;
            std::fs::write(&damaged, &bytes).unwrap();
            let failed = if is_network {
                cache::read_network(&damaged, None)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            } else {
                cache::read_input(&damaged)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            };
            let message =
                failed.expect_err(&format!("flip {mask:#x} at byte {position} went unnoticed"));
            assert!(message.contains("damaged.bin"), "{message}");
        }
    }
}

#[test]
fn truncated_caches_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = cached_network(dir.path());
    let original = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.bin");
    for length in 0..original.len() {
        std::fs::write(&cut, &original[..length]).unwrap();
        let error =
            cache::read_network(&cut, None).expect_err("a truncated cache must be an error");
        assert!(error.to_string().contains("cut.bin"), "{error}");
    }
    std::fs::write(&cut, &original[..original.len() - 100]).unwrap();
    expect_error(cache::read_network(&cut, None), &cut, "truncated cache");
    let mut longer = original.clone();
    longer.extend_from_slice(b"tail");
    std::fs::write(&cut, &longer).unwrap();
    expect_error(
        cache::read_network(&cut, None),
        &cut,
        "4 unexpected bytes after the last record",
    );
}

#[test]
fn wrong_magic_version_or_kind() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = cached_network(dir.path());
    let original = std::fs::read(&path).unwrap();
    let other = dir.path().join("other.bin");
    let mut bytes = original.clone();
    bytes[..8].copy_from_slice(b"NOTSPDNN");
    std::fs::write(&other, &bytes).unwrap();
    assert!(!cache::is_cache(&other));
    expect_error(cache::read_network(&other, None), &other, "wrong magic");
    expect_error(
        NetworkCacheReader::open(&other).map(|_| ()),
        &other,
        "wrong magic",
    );
    let mut bytes = original.clone();
    bytes[8..12].copy_from_slice(&(cache::FORMAT_VERSION + 1).to_le_bytes());
    std::fs::write(&other, &bytes).unwrap();
    expect_error(
        cache::read_network(&other, None),
        &other,
        &format!("version {}", cache::FORMAT_VERSION + 1),
    );
    expect_error(
        cache::read_input(&path),
        &path,
        "is a network cache, not an input cache",
    );
    let input_path = dir.path().join("input.bin");
    cache::write_input(&input_path, &input(InputOrigin::Mnist)).unwrap();
    expect_error(
        cache::read_network(&input_path, None),
        &input_path,
        "is an input cache, not a network cache",
    );
    let text = dir.path().join("n32-l1.tsv");
    std::fs::write(&text, "1\t1\t1\n").unwrap();
    assert!(!cache::is_cache(&text));
    assert!(!cache::is_cache(&dir.path().join("absent.bin")));
}

#[test]
fn writers_refuse_misuse_and_leave_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.bin");
    let net = network(32, 2, 5);
    let mut writer = NetworkCacheWriter::create(&path, 32, 2).unwrap();
    writer.push_layer(&net.layers()[0]).unwrap();
    expect_error(
        writer.push_layer(&Csr::zeros(16, 16).unwrap()),
        &path,
        "the cache holds 32x32 layers",
    );
    expect_error(
        writer.finish(),
        &path,
        "only 1 of the 2 layers were written",
    );
    assert!(!path.exists());
    assert!(!dir.path().join("net.bin.partial").exists());
    let mut writer = NetworkCacheWriter::create(&path, 32, 1).unwrap();
    writer.push_layer(&net.layers()[0]).unwrap();
    expect_error(
        writer.push_layer(&net.layers()[1]),
        &path,
        "created for 1 layers",
    );
    writer.finish().unwrap();
    assert_eq!(
        cache::read_network(&path, None).unwrap().layers(),
        &net.layers()[..1]
    );
    assert!(NetworkCacheWriter::create(&path, 0, 1).is_err());
    assert!(NetworkCacheWriter::create(&path, 32, 0).is_err());
}

#[test]
fn the_real_network_caches_exactly() {
    let root = paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let Some(archive) = paths::find_official(&root, "neuron1024.tar.gz") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "neuron1024.tar.gz is missing under CI"
        );
        eprintln!("skipped: official file neuron1024.tar.gz not found (see paths::official_dirs)");
        return;
    };
    let net = tsv::read_network(&archive, None, 120, &mut |_| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("neuron1024-120.bin");
    cache::write_network(&path, &net).unwrap();
    // 16-bit columns and one stored value: 2 bytes an entry plus the row offsets.
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 120 * (2 * 32_768 + 4 * 1025 + 64), "{size} bytes");
    assert_eq!(cache::read_network(&path, None).unwrap(), net);
    assert_eq!(
        tsv::read_network(&path, Some(1024), 120, &mut |_| {}).unwrap(),
        net
    );
    assert_eq!(net.nnz(), 120 * 32_768);
    assert_eq!(net.layers()[0].nnz(), 32_768);
    assert!(net.layers().iter().all(|l| l.nrows() == 1024));
}
