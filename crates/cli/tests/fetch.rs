//! `spdnn fetch` against a local HTTP server on 127.0.0.1 (started here, files from a
//! temporary folder, bounded in connections and time): a corrupt file, a truncated
//! transfer, a truncated file and a missing file are errors (exit 2) that leave nothing
//! under the final name; good files are downloaded and verified.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What the server answers for one path.
#[derive(Clone)]
enum Reply {
    /// 200 with these bytes.
    Whole(Vec<u8>),
    /// 200 announcing `announced` bytes, then these (fewer) bytes and a closed connection.
    Cut { bytes: Vec<u8>, announced: usize },
}

/// Serves `routes` (anything else is 404) on 127.0.0.1 until `connections` requests were
/// answered or 60 s passed. Returns the base URL.
fn serve(routes: BTreeMap<String, Reply>, connections: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut served = 0;
        while served < connections && Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut stream = stream;
            let _ = match routes.get(&path) {
                Some(Reply::Whole(bytes)) => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        bytes.len()
                    );
                    stream
                        .write_all(head.as_bytes())
                        .and_then(|()| stream.write_all(bytes))
                }
                Some(Reply::Cut { bytes, announced }) => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {announced}\r\nConnection: close\r\n\r\n"
                    );
                    stream
                        .write_all(head.as_bytes())
                        .and_then(|()| stream.write_all(bytes))
                }
                None => stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    base
}

/// Runs `spdnn fetch ARGS --base-url BASE --out OUT`; returns the exit code and stderr.
fn fetch(base: &str, out: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_spdnn"))
        .arg("fetch")
        .args(args)
        .args(["--base-url", base, "--out"])
        .arg(out)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The files in `dir` (none when it does not exist), by name.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

const NET: &str = "/dnn/neuron1024.tar.gz";
const TRUTH: &str = "/dnn/neuron1024-l120-categories.tsv";

/// The official N = 1024 files beside the checkout (CI has them), or `None` outside CI.
fn official(name: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = spdnn_sdgc::paths::find_official(&root, name);
    assert!(
        found.is_some() || std::env::var_os("CI").is_none(),
        "CI: the official {name} is missing"
    );
    found
}

#[test]
fn corrupt_truncated_and_missing_downloads_are_errors_that_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut routes = BTreeMap::new();
    // A corrupt network: bytes that are not the official file (its SHA-256 is known).
    routes.insert(
        NET.to_string(),
        Reply::Whole(b"not the network".repeat(1000)),
    );
    let base = serve(routes.clone(), 1);
    let out = dir.path().join("corrupt");
    let (code, stderr) = fetch(&base, &out, &["--neurons", "1024"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("SHA-256") && stderr.contains("differs"),
        "{stderr}"
    );
    assert_eq!(files(&out.join("sdgc")), Vec::<String>::new());

    // A transfer cut short: 1000 bytes announced, 100 sent, the connection closed.
    routes.insert(
        NET.to_string(),
        Reply::Cut {
            bytes: vec![7; 100],
            announced: 1000,
        },
    );
    let base = serve(routes.clone(), 1);
    let out = dir.path().join("cut");
    let (code, stderr) = fetch(&base, &out, &["--neurons", "1024"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("downloading") || stderr.contains("ended after"),
        "{stderr}"
    );
    assert_eq!(files(&out.join("sdgc")), Vec::<String>::new());

    // A missing file: 404, named.
    let base = serve(BTreeMap::new(), 1);
    let out = dir.path().join("missing");
    let (code, stderr) = fetch(&base, &out, &["--neurons", "1024"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("404") && stderr.contains(NET), "{stderr}");
    assert_eq!(files(&out.join("sdgc")), Vec::<String>::new());

    // Not a URL.
    let (code, stderr) = fetch("ftp://x", &dir.path().join("ftp"), &["--neurons", "1024"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--base-url"), "{stderr}");
}

#[test]
fn good_files_are_verified_and_a_truncated_one_is_refused() {
    let (Some(net), Some(truth)) = (
        official("neuron1024.tar.gz"),
        official("neuron1024-l120-categories.tsv"),
    ) else {
        eprintln!("skipped: the official N = 1024 files are not at hand");
        return;
    };
    let net = std::fs::read(net).unwrap();
    let truth = std::fs::read(truth).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("data");
    let sdgc = out.join("sdgc");
    // A stale partial file from an earlier interrupted run does not matter.
    std::fs::create_dir_all(&sdgc).unwrap();
    std::fs::write(sdgc.join("neuron1024.tar.gz.part"), b"stale").unwrap();

    // The whole network, then a truth file truncated with an honest length: only its
    // checksum tells, and it is refused; the network stays.
    let mut routes = BTreeMap::new();
    routes.insert(NET.to_string(), Reply::Whole(net.clone()));
    routes.insert(
        TRUTH.to_string(),
        Reply::Whole(truth[..truth.len() / 2].to_vec()),
    );
    let base = serve(routes.clone(), 2);
    let (code, stderr) = fetch(&base, &out, &["--neurons", "1024", "--layers", "120"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("neuron1024.tar.gz: downloaded (checksum verified)"),
        "{stderr}"
    );
    assert!(stderr.contains("SHA-256"), "{stderr}");
    assert_eq!(files(&sdgc), ["neuron1024.tar.gz"]);
    assert_eq!(std::fs::read(sdgc.join("neuron1024.tar.gz")).unwrap(), net);

    // Served whole: the network is not fetched again, the truth is verified.
    routes.insert(TRUTH.to_string(), Reply::Whole(truth.clone()));
    let base = serve(routes, 1);
    let (code, stderr) = fetch(&base, &out, &["--neurons", "1024", "--layers", "120"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("already here, checksum verified"),
        "{stderr}"
    );
    assert_eq!(
        files(&sdgc),
        ["neuron1024-l120-categories.tsv", "neuron1024.tar.gz"]
    );
    assert_eq!(
        std::fs::read(sdgc.join("neuron1024-l120-categories.tsv")).unwrap(),
        truth
    );

    // A damaged file under the final name is replaced.
    std::fs::write(sdgc.join("neuron1024-l120-categories.tsv"), b"damaged").unwrap();
    let mut routes = BTreeMap::new();
    routes.insert(NET.to_string(), Reply::Whole(net));
    routes.insert(TRUTH.to_string(), Reply::Whole(truth.clone()));
    let base = serve(routes, 1);
    let (code, stderr) = fetch(&base, &out, &["--neurons", "1024", "--layers", "120"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("checksum mismatch, downloading again"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(sdgc.join("neuron1024-l120-categories.tsv")).unwrap(),
        truth
    );
}
