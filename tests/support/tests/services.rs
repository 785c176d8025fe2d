//! The servers `lpk_test_support::services` hands out answer, on loopback:
//! Redis to a raw `PING`, the S3 server with fresh buckets that exist
//! and list empty.

// The helper outside `#[test]` functions unwraps too: a failure there is a
// test failure.
#![allow(clippy::unwrap_used)]

use lpk_test_support::services::{redis_ping, redis_url, s3_endpoint, socket_addr};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A bodiless HTTP request to the S3 server; the whole response as text.
fn http(endpoint: &str, method: &str, path: &str) -> String {
    let addr = socket_addr(endpoint);
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.take(1 << 20).read_to_string(&mut response).unwrap();
    response
}

#[test]
fn redis_answers_ping_on_loopback() {
    let url = redis_url();
    let addr = socket_addr(&url);
    assert!(addr.ip().is_loopback(), "{url}");
    assert_eq!(redis_ping(addr).unwrap(), "+PONG");
    // One server per process (or per test run): the same URL each time.
    assert_eq!(redis_url(), url);
}

#[test]
fn the_s3_server_makes_fresh_buckets() {
    let s3 = s3_endpoint();
    assert!(socket_addr(s3.endpoint()).ip().is_loopback());
    assert_eq!(s3_endpoint(), s3);
    let a = s3.fresh_bucket("Support Test");
    let b = s3.fresh_bucket("Support Test");
    assert_ne!(a, b);
    assert!(
        a.starts_with(&format!("lpk-support-test-{}-", std::process::id())),
        "{a}"
    );
    for bucket in [&a, &b] {
        let listing = http(s3.endpoint(), "GET", &format!("/{bucket}"));
        assert!(listing.starts_with("HTTP/1.1 200"), "{listing}");
        assert!(
            listing.contains(&format!("<Name>{bucket}</Name>")),
            "{listing}"
        );
        assert!(!listing.contains("<Contents>"), "{listing}");
    }
    // Creating a bucket again is fine.
    s3.create_bucket(&a);
    let missing = http(s3.endpoint(), "GET", "/lpk-never-made");
    assert!(missing.contains("NoSuchBucket"), "{missing}");
    assert_eq!(s3.url(&a, "run"), format!("s3://{a}/run"));
    assert_eq!(s3.url(&a, ""), format!("s3://{a}"));
}

#[test]
fn the_s3_settings_name_the_endpoint_in_both_forms() {
    let s3 = s3_endpoint();
    let env = s3.env();
    assert_eq!(
        env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        [
            "AWS_ACCESS_KEY_ID",
            "AWS_ALLOW_HTTP",
            "AWS_ENDPOINT",
            "AWS_REGION",
            "AWS_SECRET_ACCESS_KEY"
        ]
    );
    assert!(env.contains(&("AWS_ENDPOINT".to_string(), s3.endpoint().to_string())));
    assert!(s3
        .options()
        .contains(&("aws_endpoint".to_string(), s3.endpoint().to_string())));
    assert!(s3
        .options()
        .contains(&("aws_allow_http".to_string(), "true".to_string())));
}
