//! Object stores beyond one machine: tiles and raw objects through S3 on
//! a real S3 API server (moto, on loopback, from
//! `lpk_test_support::services`), raw objects and sub-prefixes on every URL,
//! many threads at once, the environment a worker opens a store with, and
//! the errors of a missing bucket, an unreachable endpoint and a server
//! that never answers.

#![allow(clippy::unwrap_used)]

use super::store::{assert_same, check_concurrent, check_store, file_store, sample, temp_dir};
use lpk_runtime::npy;
use lpk_runtime::store::{BlobStore, ObjectStoreTiles, StoreLimits, TileStore};
use lpk_test_support::services::{free_port, s3_endpoint, S3};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Short limits, so a test of a failure fails in a second or two.
fn impatient() -> StoreLimits {
    StoreLimits {
        connect_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(2),
        max_retries: 1,
        retry_timeout: Duration::from_millis(500),
    }
}

/// A store at `url` that gives up soon, opened with the test server's
/// options as `edit` changes them.
fn impatient_store(url: &str, edit: impl FnOnce(&mut Vec<(String, String)>)) -> ObjectStoreTiles {
    let mut options = s3_endpoint().options();
    edit(&mut options);
    ObjectStoreTiles::open_with(url, options, &impatient()).unwrap()
}

/// An [`impatient_store`] whose endpoint is `endpoint` instead of the
/// test server, set by option `key`.
fn store_at_endpoint(url: &str, key: &str, endpoint: &str) -> ObjectStoreTiles {
    impatient_store(url, |options| {
        options.retain(|(k, _)| k != "aws_endpoint");
        options.push((key.to_string(), endpoint.to_string()));
    })
}

/// Asserts that putting object `x` into `store` fails with an error that
/// starts with `start`.
fn assert_put_fails(store: &ObjectStoreTiles, start: &str) {
    let e = store.put_bytes("x", vec![1]).unwrap_err().to_string();
    assert!(e.starts_with(start), "{e}");
}

/// A store in a fresh bucket of the test S3 server, under `prefix`.
fn s3_store(s3: &S3, tag: &str, prefix: &str) -> (String, ObjectStoreTiles) {
    let bucket = s3.fresh_bucket(tag);
    let url = s3.url(&bucket, prefix);
    let store = ObjectStoreTiles::open_with(&url, s3.options(), &StoreLimits::default()).unwrap();
    (bucket, store)
}

/// Every byte value, so any re-encoding on the way shows.
fn all_bytes() -> Vec<u8> {
    (0..=255u8).cycle().take(3000).collect()
}

/// The one behaviour of raw objects, on any store.
fn check_blobs(store: &ObjectStoreTiles) {
    assert_eq!(store.get_bytes("program.lpka", 1 << 20).unwrap(), None);
    assert_eq!(store.list("").unwrap(), Vec::<String>::new());
    store.put_bytes("program.lpka", all_bytes()).unwrap();
    store
        .put_bytes("manifest.json", b"{\"block\": 4}".to_vec())
        .unwrap();
    store.put_bytes("done/chol_0", Vec::new()).unwrap();
    store.put_bytes("done/gemm_1,2=3+4", vec![7]).unwrap();
    store.put_bytes("done2/x", vec![8]).unwrap();
    assert_eq!(
        store.get_bytes("program.lpka", 1 << 20).unwrap(),
        Some(all_bytes())
    );
    assert_eq!(
        store.get_bytes("done/chol_0", 1 << 20).unwrap(),
        Some(Vec::new())
    );
    assert_eq!(
        store.get_bytes("done/gemm_1,2=3+4", 1 << 20).unwrap(),
        Some(vec![7])
    );
    // Listing takes whole segments, with or without the trailing `/`.
    assert_eq!(
        store.list("done").unwrap(),
        vec!["done/chol_0", "done/gemm_1,2=3+4"]
    );
    assert_eq!(store.list("done/").unwrap(), store.list("done").unwrap());
    assert_eq!(store.list("nothing").unwrap(), Vec::<String>::new());
    // Tiles and raw objects share one key space.
    let t = sample(3, 2, 1.5);
    store.put("A", &[0, 1], Arc::new(t.clone())).unwrap();
    assert_eq!(
        store.get_bytes("A/0_1.npy", 1 << 20).unwrap(),
        Some(npy::to_bytes(&t))
    );
    assert_eq!(
        store.list("").unwrap(),
        vec![
            "A/0_1.npy",
            "done/chol_0",
            "done/gemm_1,2=3+4",
            "done2/x",
            "manifest.json",
            "program.lpka"
        ]
    );
    // Whether a tile is there, without reading it.
    assert!(store.contains("A", &[0, 1]).unwrap());
    assert!(!store.contains("A", &[1, 0]).unwrap());
    assert!(!store.contains("B", &[0, 1]).unwrap());
    store.put("B", &[0, 1], Arc::new(t.clone())).unwrap();
    assert!(store.contains("B", &[0, 1]).unwrap());
    store.delete("B", &[0, 1]).unwrap();
    assert!(!store.contains("B", &[0, 1]).unwrap());
    // Put replaces; delete removes; deleting twice is fine.
    store.put_bytes("manifest.json", vec![1, 2, 3]).unwrap();
    assert_eq!(
        store.get_bytes("manifest.json", 1 << 20).unwrap(),
        Some(vec![1, 2, 3])
    );
    // An object longer than its reader takes is refused, not read.
    let e = store.get_bytes("manifest.json", 2).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "manifest.json: 3 bytes, more than the 2 this object may hold (was it written by lpk?)"
        ),
        "{e}"
    );
    assert_eq!(
        store.get_bytes("manifest.json", 3).unwrap(),
        Some(vec![1, 2, 3])
    );
    store.delete_key("manifest.json").unwrap();
    store.delete_key("manifest.json").unwrap();
    assert_eq!(store.get_bytes("manifest.json", 1 << 20).unwrap(), None);
    // Keys that could escape the root, or mean different objects in
    // different stores, are refused with the reason.
    for bad in [
        "", "/a", "a/", "a//b", "..", "a/../b", ".hidden", "a/.b", "a\\b", "a b", "a#1", "a%2F",
        "é",
    ] {
        let e = store.put_bytes(bad, vec![0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("`{bad}` cannot be a key in a tile store (use `/`-separated names of letters, digits, `_`, `-`, `.`, `,`, `=` and `+`, none empty or starting with `.`, at most 200 bytes each and 512 in all)"),
        );
        assert!(store.get_bytes(bad, 1 << 20).is_err(), "{bad}");
        assert!(store.delete_key(bad).is_err(), "{bad}");
        assert!(store.prefixed(bad).is_err(), "{bad}");
    }
    // At most 200 bytes a segment and 512 in all.
    let longest = ["k".repeat(200), "k".repeat(200), "k".repeat(110)].join("/");
    assert_eq!(longest.len(), 512);
    store.put_bytes(&longest, vec![0]).unwrap();
    assert_eq!(store.get_bytes(&longest, 1 << 20).unwrap(), Some(vec![0]));
    store.delete_key(&longest).unwrap();
    assert!(store.put_bytes(&format!("{longest}k"), vec![0]).is_err());
    assert!(store.put_bytes(&"k".repeat(201), vec![0]).is_err());
    assert!(store.list("../x").is_err());
    // A run's store sees its own keys; the root sees them under the run.
    let run = store.prefixed("run-7").unwrap();
    let sep = if store.url().ends_with('/') { "" } else { "/" };
    assert_eq!(run.describe(), format!("{}{sep}run-7", store.url()));
    run.put("L", &[1, 0], Arc::new(t.clone())).unwrap();
    run.put_bytes("done/t", vec![1]).unwrap();
    assert_same(&run.get("L", &[1, 0]).unwrap().unwrap(), &t);
    assert!(run.get("A", &[0, 1]).unwrap().is_none());
    assert_eq!(run.list("").unwrap(), vec!["L/1_0.npy", "done/t"]);
    assert_eq!(
        store.list("run-7").unwrap(),
        vec!["run-7/L/1_0.npy", "run-7/done/t"]
    );
    assert_eq!(
        store.get_bytes("run-7/L/1_0.npy", 1 << 20).unwrap(),
        Some(npy::to_bytes(&t))
    );
    let nested = run.prefixed("a/b").unwrap();
    nested.put_bytes("c", vec![9]).unwrap();
    assert_eq!(
        store.get_bytes("run-7/a/b/c", 1 << 20).unwrap(),
        Some(vec![9])
    );
}

#[test]
fn raw_objects_on_file_and_memory_urls() {
    let dir = temp_dir("blobs");
    let (url, store) = file_store(&dir, "/root");
    check_blobs(&store);
    // On a file system the keys are the paths.
    assert_eq!(
        std::fs::read(dir.path().join("root/program.lpka")).unwrap(),
        all_bytes()
    );
    assert_eq!(
        std::fs::read(dir.path().join("root/run-7/a/b/c")).unwrap(),
        vec![9]
    );
    check_blobs(&ObjectStoreTiles::open("memory:///").unwrap());
    // The same store, opened under a sub-prefix.
    let run = ObjectStoreTiles::open_under(&url, "run-7").unwrap();
    assert_eq!(run.describe(), format!("{url}/run-7"));
    assert_eq!(run.get_bytes("done/t", 1 << 20).unwrap(), Some(vec![1]));
}

#[test]
fn tiles_round_trip_through_s3_bit_for_bit() {
    let s3 = s3_endpoint();
    let (bucket, store) = s3_store(&s3, "tiles", "run");
    assert_eq!(store.describe(), format!("s3://{bucket}/run"));
    check_store(&store);
    // Values whose bits a careless encoding would change.
    let special = [
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::from_bits(0x7ff8_0000_0000_0001),
        std::f64::consts::PI,
    ];
    let t = lpk_runtime::kernels::Tile::from_fn(3, 3, |i, j| special[i * 3 + j]);
    store.put("S", &[2, 3], Arc::new(t.clone())).unwrap();
    assert_same(&store.get("S", &[2, 3]).unwrap().unwrap(), &t);
    // The object is the .npy file a NumPy user reads, at BUCKET/run/S/2_3.npy.
    let root =
        ObjectStoreTiles::open_with(&s3.url(&bucket, ""), s3.options(), &impatient()).unwrap();
    let raw = root.get_bytes("run/S/2_3.npy", 1 << 20).unwrap().unwrap();
    assert_eq!(raw, npy::to_bytes(&t));
    assert_same(
        &npy::read_bytes(&raw, "S/2_3.npy", &npy::ReadLimit::default()).unwrap(),
        &t,
    );
    // A big tile (2 MiB, one block of 512) too.
    let big = sample(512, 512, 0.125);
    store.put("B", &[0, 0], Arc::new(big.clone())).unwrap();
    assert_same(&store.get("B", &[0, 0]).unwrap().unwrap(), &big);
}

#[test]
fn raw_objects_round_trip_through_s3() {
    let s3 = s3_endpoint();
    let (_, store) = s3_store(&s3, "blobs", "");
    check_blobs(&store);
    let (bucket, store) = s3_store(&s3, "blobs-prefixed", "runs/x");
    check_blobs(&store);
    let run =
        ObjectStoreTiles::open_with(&s3.url(&bucket, "runs/x/run-7"), s3.options(), &impatient())
            .unwrap();
    assert_eq!(run.get_bytes("done/t", 1 << 20).unwrap(), Some(vec![1]));
}

/// Readers and writers of the same key at once, and writers of done
/// markers beside them: a reader sees a whole old tile or a whole new one,
/// and every marker is there at the end.
fn check_readers_race_writers(store: &ObjectStoreTiles) {
    store.put("R", &[0], Arc::new(sample(16, 16, 0.0))).unwrap();
    std::thread::scope(|s| {
        for t in 0..4i64 {
            s.spawn(move || {
                for k in 0..20i64 {
                    let seed = (t * 100 + k) as f64;
                    store
                        .put("R", &[0], Arc::new(sample(16, 16, seed)))
                        .unwrap();
                    store
                        .put_bytes(&format!("done/{t}_{k}"), vec![t as u8])
                        .unwrap();
                }
            });
            s.spawn(move || {
                for _ in 0..20 {
                    let got = store.get("R", &[0]).unwrap().unwrap();
                    let seed = got[(0, 0)];
                    assert_same(&got, &sample(16, 16, seed));
                }
            });
        }
    });
    let done = store.list("done").unwrap();
    assert_eq!(done.len(), 4 * 20);
    assert!(done.contains(&"done/3_19".to_string()), "{done:?}");
}

#[test]
fn many_threads_put_and_get_at_once_through_s3() {
    let s3 = s3_endpoint();
    let (_, store) = s3_store(&s3, "threads", "run");
    check_concurrent(&store);
    check_readers_race_writers(&store);
}

#[test]
fn many_threads_put_and_get_at_once_in_a_file_url() {
    let dir = temp_dir("race");
    let (_, store) = file_store(&dir, "");
    check_readers_race_writers(&store);
    // No temporary file is left beside the tile.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("R"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["0.npy".to_string()]);
}

#[test]
fn a_missing_bucket_is_named_by_every_call() {
    let s3 = s3_endpoint();
    let store =
        ObjectStoreTiles::open_with("s3://lpk-no-such-bucket/run", s3.options(), &impatient())
            .unwrap();
    let said = |location: &str| {
        format!(
            "s3://lpk-no-such-bucket/run/{location}: the bucket `lpk-no-such-bucket` does not exist at {} (create it, or name an existing bucket in the store URL; AWS_ENDPOINT_URL chooses the server)",
            s3.endpoint()
        )
    };
    // A read of a missing bucket is an error, never a missing tile.
    assert_eq!(
        store.get("A", &[0, 0]).unwrap_err().to_string(),
        said("A/0_0.npy")
    );
    assert_eq!(
        store.get_bytes("x", 1 << 20).unwrap_err().to_string(),
        said("x")
    );
    assert_eq!(
        store
            .put("A", &[0, 0], Arc::new(sample(1, 1, 0.0)))
            .unwrap_err()
            .to_string(),
        said("A/0_0.npy")
    );
    assert_eq!(
        store.put_bytes("x", vec![1]).unwrap_err().to_string(),
        said("x")
    );
    assert_eq!(store.delete_key("x").unwrap_err().to_string(), said("x"));
    assert_eq!(store.list("done").unwrap_err().to_string(), said("done"));
}

#[test]
fn an_unreachable_endpoint_fails_fast_and_says_what_to_set() {
    let port = free_port().unwrap();
    let endpoint = format!("http://127.0.0.1:{port}");
    let store = store_at_endpoint("s3://b/run", "AWS_ENDPOINT_URL", &endpoint);
    let start = Instant::now();
    let e = store.get("A", &[0, 0]).unwrap_err().to_string();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let want = format!("s3://b/run/A/0_0.npy: cannot reach the S3 endpoint {endpoint} (is the server running? set AWS_ENDPOINT_URL to its address, and AWS_ALLOW_HTTP=true for an http:// endpoint): ");
    assert!(e.starts_with(&want), "{e}");
    assert!(e.contains("after 1 retries"), "{e}");
    assert_put_fails(&store, "s3://b/run/x: cannot reach the S3 endpoint");
}

#[test]
fn missing_credentials_are_named_not_the_metadata_service() {
    // No key: object_store falls back to the cloud instance metadata
    // service, which off a cloud machine fails; the error must say what
    // is missing, not only where that fallback went.
    let store = impatient_store("s3://b/run", |options| {
        options.retain(|(k, _)| !k.starts_with("aws_access_key") && !k.starts_with("aws_secret"))
    });
    assert_put_fails(
        &store,
        "s3://b/run/x: no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    );
}

#[test]
fn a_server_that_never_answers_times_out() {
    // The kernel accepts connections into the backlog; nothing ever
    // reads or answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let store = store_at_endpoint("s3://b", "aws_endpoint", &endpoint);
    let start = Instant::now();
    let e = store.get_bytes("x", 1 << 20).unwrap_err().to_string();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(
        e.starts_with("s3://b/x: the S3 server did not answer in time (AWS_TIMEOUT and AWS_CONNECT_TIMEOUT raise the limits, e.g. AWS_TIMEOUT=60s): "),
        "{e}"
    );
}

#[test]
fn bad_s3_urls_and_options_are_refused_when_opening() {
    let s3 = s3_endpoint();
    let open = |url: &str, options: Vec<(String, String)>| {
        ObjectStoreTiles::open_with(url, options, &impatient())
            .map(|s| s.describe())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        open("s3://", s3.options()),
        Err("cannot open tile store `s3://`: the URL names no bucket (write s3://BUCKET or s3://BUCKET/PREFIX)".to_string())
    );
    assert_eq!(
        open("s3:///run", s3.options()),
        Err("cannot open tile store `s3:///run`: the URL names no bucket (write s3://BUCKET or s3://BUCKET/PREFIX)".to_string())
    );
    let mut plain = s3.options();
    plain.retain(|(k, _)| k != "aws_allow_http");
    assert_eq!(
        open("s3://b/run", plain),
        Err(format!("cannot open tile store `s3://b/run`: its endpoint {} is plain HTTP; set AWS_ALLOW_HTTP=true to use it", s3.endpoint()))
    );
    assert_eq!(
        open("s3://b", vec![("aws_endpoint_typo".to_string(), "x".to_string())]),
        Err("`aws_endpoint_typo` is not an option of the S3 store `s3://b` (see object_store's AmazonS3ConfigKey: e.g. aws_endpoint, aws_region, aws_allow_http)".to_string())
    );
    assert_eq!(
        open("http://127.0.0.1:9/b", Vec::new()),
        Err("cannot open tile store `http://127.0.0.1:9/b`: this build opens file://, memory:// and s3:// URLs (for another S3 server, use s3://BUCKET/PREFIX and set AWS_ENDPOINT_URL)".to_string())
    );
    // Options are any case, and the run's prefix may follow.
    let upper: Vec<(String, String)> = s3.env();
    assert_eq!(open("s3://b/x/", upper), Ok("s3://b/x/".to_string()));
}

/// Set in the environment of the child this test starts, to make it the
/// child.
const CHILD: &str = "LPK_TEST_STORE_ENV_CHILD";

/// `ObjectStoreTiles::open` configures S3 from the `AWS_*` variables
/// alone, as a worker on another machine does. The variables are set for
/// a child process (this test binary again, running only this test),
/// since setting them here would race with the other tests' threads.
#[test]
fn open_takes_the_aws_variables_from_the_environment() {
    if let Ok(url) = std::env::var(CHILD) {
        let store = ObjectStoreTiles::open(&url).unwrap();
        store.put("E", &[0], Arc::new(sample(2, 2, 4.0))).unwrap();
        assert_same(&store.get("E", &[0]).unwrap().unwrap(), &sample(2, 2, 4.0));
        return;
    }
    let s3 = s3_endpoint();
    for endpoint_var in ["AWS_ENDPOINT", "AWS_ENDPOINT_URL"] {
        let bucket = s3.fresh_bucket("env");
        let url = s3.url(&bucket, "run");
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "s3::open_takes_the_aws_variables_from_the_environment",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD, &url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, _) in std::env::vars() {
            if name.starts_with("AWS_") {
                child.env_remove(name);
            }
        }
        for (name, value) in s3.env() {
            let name = if name == "AWS_ENDPOINT" {
                endpoint_var.to_string()
            } else {
                name
            };
            child.env(name, value);
        }
        let mut child = child.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                panic!("the child test did not finish within 60 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            status.success() && stdout.contains("1 passed"),
            "{endpoint_var}: {status}\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The tile is where the parent, with explicit options, finds it.
        let store = ObjectStoreTiles::open_with(&url, s3.options(), &impatient()).unwrap();
        assert_same(&store.get("E", &[0]).unwrap().unwrap(), &sample(2, 2, 4.0));
    }
}
