//! `live-load`: measures live streams against a running `portico serve`.
//!
//! ```text
//! live-load latency URL SUBSCRIBERS WRITES [WRITE_URL]
//!     opens SUBSCRIBERS streams on URL (a publication or list url, e.g.
//!     http://127.0.0.1:3000/publications/things), waits for every `ready`, then POSTs WRITES
//!     documents {"seq": n} one after another to WRITE_URL (default: the auto API insert url
//!     http://HOST/things of URL's host), and reports the time from each write's acknowledgement
//!     (and from its send) to its `added` event at every subscriber: p50, p99, max.
//! live-load idle URL SUBSCRIBERS PID [HOLD_SECS]
//!     reads the resident memory of process PID, opens SUBSCRIBERS idle streams, reads it again
//!     and reports the difference per subscriber; then holds the streams HOLD_SECS (default 0),
//!     e.g. while `wrk` measures another workload.
//! ```
//!
//! Streams and writes use plain HTTP/1.1 over TCP (one connection per subscriber), so the tool
//! itself stays small next to what it measures. Run it on another core than the server
//! (`taskset -c 1 live-load ...` with `taskset -c 0 portico serve ...`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measuring tool: fail loudly on setup errors

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// `http://host:port/path` as (host:port, /path).
fn split(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").expect("an http:// url");
    match rest.find('/') {
        Some(i) => (rest[..i].to_owned(), rest[i..].to_owned()),
        None => (rest.to_owned(), "/".to_owned()),
    }
}

/// What a subscriber tells the main task.
enum Seen {
    Ready,
    Added(u64, Instant),
}

/// Opens one stream and reports its `ready` and each `added` event's `seq`.
async fn subscribe(host: String, path: String, tx: mpsc::UnboundedSender<Seen>) {
    let mut socket = TcpStream::connect(&host).await.expect("connect");
    socket.set_nodelay(true).ok();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n");
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut headers_done = false;
    loop {
        let n = match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = Instant::now();
        buffer.extend_from_slice(&chunk[..n]);
        if !headers_done {
            let Some(end) = find(&buffer, b"\r\n\r\n") else {
                continue;
            };
            assert!(
                buffer.starts_with(b"HTTP/1.1 200"),
                "stream refused: {}",
                String::from_utf8_lossy(&buffer[..end])
            );
            buffer.drain(..end + 4);
            headers_done = true;
        }
        // Chunked transfer encoding: the chunk-size lines are skipped as non-event lines.
        while let Some(end) = find(&buffer, b"\n\n") {
            let block: Vec<u8> = buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&block);
            let mut name = "";
            let mut data = "";
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = v;
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = v;
                }
            }
            match name {
                "ready" => {
                    let _ = tx.send(Seen::Ready);
                }
                "added" => {
                    let value: Value = serde_json::from_str(data).unwrap_or(Value::Null);
                    if let Some(seq) = value["fields"]["seq"].as_u64() {
                        let _ = tx.send(Seen::Added(seq, now));
                    }
                }
                _ => {}
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// POSTs `body` on a kept-alive connection and waits for the whole reply.
async fn post(socket: &mut TcpStream, host: &str, path: &str, body: &str) {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.expect("reply");
        assert!(n > 0, "the server closed the write connection");
        reply.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&reply, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&reply[..end]).to_lowercase();
            assert!(
                head.starts_with("http/1.1 200") || head.starts_with("http/1.1 201"),
                "write refused: {head}"
            );
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if reply.len() >= end + 4 + length {
                return;
            }
        }
    }
}

fn resident_kib(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

/// Opens `n` streams and waits for each `ready`; returns the receiver of later events.
async fn open(url: &str, n: usize) -> mpsc::UnboundedReceiver<Seen> {
    let (host, path) = split(url);
    let (tx, mut rx) = mpsc::unbounded_channel();
    for _ in 0..n {
        tokio::spawn(subscribe(host.clone(), path.clone(), tx.clone()));
    }
    let mut ready = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while ready < n {
        match tokio::time::timeout_at(deadline.into(), rx.recv()).await {
            Ok(Some(Seen::Ready)) => ready += 1,
            Ok(Some(Seen::Added(..))) => {}
            Ok(None) | Err(_) => panic!("only {ready} of {n} streams became ready"),
        }
    }
    rx
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(label: &str, mut values: Vec<f64>) {
    values.sort_by(f64::total_cmp);
    println!(
        "{label}: n={} p50={:.2} ms p99={:.2} ms max={:.2} ms",
        values.len(),
        percentile(&values, 50.0),
        percentile(&values, 99.0),
        values.last().copied().unwrap_or(f64::NAN)
    );
}

async fn latency(url: &str, subscribers: usize, writes: u64, write_url: Option<&str>) {
    let mut rx = open(url, subscribers).await;
    println!("{subscribers} streams ready");
    let (host, _) = split(url);
    let write_url = write_url.map_or_else(|| format!("http://{host}/things"), str::to_owned);
    let (write_host, write_path) = split(&write_url);
    let mut socket = TcpStream::connect(&write_host)
        .await
        .expect("connect writer");
    socket.set_nodelay(true).ok();
    let mut sent = HashMap::new();
    let mut acked = HashMap::new();
    let collector = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            if let Seen::Added(seq, at) = event {
                seen.push((seq, at));
            }
        }
        seen
    });
    for seq in 0..writes {
        let start = Instant::now();
        post(
            &mut socket,
            &write_host,
            &write_path,
            &format!("{{\"seq\":{seq}}}"),
        )
        .await;
        sent.insert(seq, start);
        acked.insert(seq, Instant::now());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = collector.await.expect("collector");
    let expected = subscribers as u64 * writes;
    let ms = |a: Instant, b: Instant| {
        a.checked_duration_since(b).map_or_else(
            || -(b.duration_since(a).as_secs_f64() * 1000.0),
            |d| d.as_secs_f64() * 1000.0,
        )
    };
    let from_ack: Vec<f64> = seen.iter().map(|(s, at)| ms(*at, acked[s])).collect();
    let from_send: Vec<f64> = seen.iter().map(|(s, at)| ms(*at, sent[s])).collect();
    println!("events received: {} of {expected}", seen.len());
    report("write acknowledged -> event", from_ack);
    report("write sent -> event", from_send);
}

async fn idle(url: &str, subscribers: usize, pid: &str, hold: u64) {
    let before = resident_kib(pid);
    let rx = open(url, subscribers).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = resident_kib(pid);
    println!(
        "server resident memory: {before} KiB -> {after} KiB with {subscribers} idle streams: {:.1} KiB per stream",
        (after.saturating_sub(before)) as f64 / subscribers as f64
    );
    if hold > 0 {
        println!("holding the streams {hold} s");
        tokio::time::sleep(Duration::from_secs(hold)).await;
    }
    drop(rx);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let usage = "usage: live-load latency URL SUBSCRIBERS WRITES [WRITE_URL] | live-load idle URL SUBSCRIBERS PID [HOLD_SECS]";
    match (arg(1), arg(2), arg(3), arg(4)) {
        (Some("latency"), Some(url), Some(n), Some(writes)) => {
            latency(
                url,
                n.parse().expect("SUBSCRIBERS"),
                writes.parse().expect("WRITES"),
                arg(5),
            )
            .await;
        }
        (Some("idle"), Some(url), Some(n), Some(pid)) => {
            let hold = arg(5).map_or(0, |h| h.parse().expect("HOLD_SECS"));
            idle(url, n.parse().expect("SUBSCRIBERS"), pid, hold).await;
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
}
