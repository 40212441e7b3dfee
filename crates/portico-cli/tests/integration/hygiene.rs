//! Connection hygiene: slow and idle clients cannot hold the server's connections.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::common::{Http, Workspace};

/// Short limits so each test takes seconds; the cap is far below the number of attackers.
const CONFIG: &str = "[server]\nheader_timeout_secs = 2\nbody_timeout_secs = 1\nkeep_alive_timeout_secs = 1\nmax_connections = 200\n[[api]]\n[[api.collection]]\nname = \"things\"\nauth_required = false\n";

fn addr(server: &Http) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection; returns what it sent and how long it took.
async fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<(String, Duration)> {
    let started = Instant::now();
    let mut out = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut out)).await {
        Ok(_) => Some((
            String::from_utf8_lossy(&out).into_owned(),
            started.elapsed(),
        )),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_does_not_lock_out_a_normal_client() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    let addr = addr(&server);
    // 2,000 connections that send half a request line and wait, ten times the cap.
    let mut attackers = Vec::new();
    for _ in 0..2_000 {
        if let Ok(mut stream) = TcpStream::connect(&addr).await {
            let _ = stream.write_all(b"GET /api/thi").await;
            attackers.push(stream);
        }
    }
    assert!(attackers.len() >= 1_900, "{} connected", attackers.len());
    // A normal client is still answered (within the client's 5 s; it takes milliseconds).
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    for _ in 0..3 {
        let started = Instant::now();
        let response = client
            .get(server.url("/api/things"))
            .send()
            .await
            .expect("a normal client is served during the attack");
        assert_eq!(response.status(), 200);
        eprintln!("served in {:?} during the slowloris", started.elapsed());
    }
    drop(attackers);
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    assert!(
        log.contains("connection limit reached: closing the oldest connections"),
        "{log}"
    );
}

#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_cut_off() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    let mut stream = TcpStream::connect(addr(&server)).await.expect("connect");
    stream
        .write_all(
            b"POST /api/things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":",
        )
        .await
        .expect("write");
    let (reply, took) = read_until_closed(&mut stream, Duration::from_secs(15))
        .await
        .expect("the server closes the connection after the body timeout");
    assert!(
        took >= Duration::from_millis(900),
        "closed after {took:?}: {reply}"
    );
    assert!(
        reply.is_empty() || reply.starts_with("HTTP/1.1 4") || reply.starts_with("HTTP/1.1 5"),
        "{reply}"
    );
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
}

#[tokio::test]
async fn a_half_sent_head_and_an_idle_keep_alive_are_closed() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    let mut half = TcpStream::connect(addr(&server)).await.expect("connect");
    half.write_all(b"GET /api/things HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let (_, took) = read_until_closed(&mut half, Duration::from_secs(15))
        .await
        .expect("a half-sent head is closed after the header timeout");
    assert!(
        took >= Duration::from_millis(1_500),
        "closed after {took:?}"
    );

    let mut idle = TcpStream::connect(addr(&server)).await.expect("connect");
    idle.write_all(b"GET /api/things HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let (reply, _) = read_until_closed(&mut idle, Duration::from_secs(15))
        .await
        .expect("an idle kept-alive connection is closed");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    // The connection was closed for idleness, not by a failing connection task.
    assert!(!log.contains("panicked"), "{log}");
}
