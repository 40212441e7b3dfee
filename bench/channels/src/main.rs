//! `channel-load`: load for Portico's live socket (see `bench/channels.sh`).
//!
//! - `channel-load fanout MEMBERS MESSAGES URL...`: MEMBERS sockets join `bench:1`, spread over
//!   the URLs (one per instance); one more socket, on the first URL, sends MESSAGES messages
//!   20 ms apart, each carrying its send time; prints the send-to-receive p50 and p99 over every
//!   (message, member).
//! - `channel-load rate MEMBERS SENDERS SECONDS URL`: MEMBERS sockets in `bench:2`, SENDERS
//!   sockets each sending its next message once the server took the last, for SECONDS; prints
//!   messages sent and delivered per second, and how many members were dropped as too slow.
//! - `channel-load idle SOCKETS URL`: opens SOCKETS sockets, joins each to a channel, prints
//!   `ready` and holds them until stdin closes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measuring tool: any failure ends the run

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn now_us() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros(),
    )
    .unwrap()
}

async fn connect(url: &str) -> Socket {
    let url = url.replacen("http", "ws", 1);
    // tungstenite zeroes its whole read buffer (128 KiB by default) before every read: with
    // thousands of sockets on one core that cost more than everything else the tool does, and
    // added its own delay to the latency measured. The server reads with 4 KiB; so does this.
    let config =
        tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(4096);
    let (socket, _) =
        tokio_tungstenite::connect_async_with_config(format!("{url}/live"), Some(config), false)
            .await
            .expect("connect");
    socket
}

/// Joins `channel` and waits for the reply and the presence state.
async fn join(socket: &mut Socket, channel: &str) {
    socket
        .send(Message::text(
            json!({"type": "join", "channel": channel, "ref": 1}).to_string(),
        ))
        .await
        .unwrap();
    let mut seen = 0;
    while seen < 2 {
        if let Some(Ok(Message::Text(_))) = socket.next().await {
            seen += 1;
        }
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    #[allow(clippy::cast_precision_loss)]
    let v = sorted[i] as f64 / 1000.0;
    v
}

async fn fanout(members: usize, messages: usize, urls: &[String]) {
    let mut tasks = Vec::new();
    for i in 0..members {
        let mut socket = connect(&urls[i % urls.len()]).await;
        join(&mut socket, "bench:1").await;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(messages);
            while latencies.len() < messages {
                let Ok(Some(Ok(message))) =
                    tokio::time::timeout(Duration::from_secs(10), socket.next()).await
                else {
                    break;
                };
                if let Message::Text(text) = message {
                    let v: Value = serde_json::from_str(&text).unwrap_or_default();
                    if v["type"] == "message" {
                        let sent = v["payload"].as_u64().unwrap_or(0);
                        latencies.push(now_us().saturating_sub(sent));
                    }
                }
            }
            latencies
        }));
    }
    // Presence and joins settle (the other instance learns of this one's members).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut sender = connect(&urls[0]).await;
    join(&mut sender, "bench:1").await;
    for _ in 0..messages {
        let frame =
            json!({"type": "send", "channel": "bench:1", "event": "t", "payload": now_us()});
        sender.send(Message::text(frame.to_string())).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort_unstable();
    println!(
        "fanout members={members} messages={messages} instances={} received={}/{} p50={:.1}ms p99={:.1}ms",
        urls.len(),
        all.len(),
        members * messages,
        percentile(&all, 0.5),
        percentile(&all, 0.99)
    );
}

async fn rate(members: usize, senders: usize, seconds: u64, url: &str) {
    let delivered = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..members {
        let mut socket = connect(url).await;
        join(&mut socket, "bench:2").await;
        let delivered = delivered.clone();
        readers.push(tokio::spawn(async move {
            while let Some(Ok(message)) = socket.next().await {
                if let Message::Text(text) = message
                    && text.contains("\"message\"")
                {
                    delivered.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let sent = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut writers = Vec::new();
    for _ in 0..senders {
        let mut socket = connect(url).await;
        join(&mut socket, "bench:2").await;
        let sent = sent.clone();
        writers.push(tokio::spawn(async move {
            // Closed loop: the next message goes once the server took the last one.
            let frame = json!({"type": "send", "channel": "bench:2", "event": "r", "payload": "x".repeat(64), "ref": 1}).to_string();
            while Instant::now() < deadline {
                if socket.send(Message::text(frame.clone())).await.is_err() {
                    break;
                }
                loop {
                    match socket.next().await {
                        Some(Ok(Message::Text(text))) if text.contains("\"ok\"") => break,
                        Some(Ok(_)) => {}
                        _ => return,
                    }
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let start = Instant::now();
    let before = delivered.load(Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let took = start.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let (s, d) = (
        sent.load(Ordering::Relaxed) as f64,
        (delivered.load(Ordering::Relaxed) - before) as f64,
    );
    let dropped = readers.iter().filter(|r| r.is_finished()).count();
    println!(
        "rate members={members} senders={senders} sent/s={:.0} delivered/s={:.0} members-dropped={dropped}",
        s / took,
        d / took
    );
    for r in readers {
        r.abort();
    }
}

async fn idle(sockets: usize, url: &str) {
    let mut held = Vec::with_capacity(sockets);
    for i in 0..sockets {
        let mut socket = connect(url).await;
        join(&mut socket, &format!("bench:idle{}", i % 10)).await;
        held.push(socket);
    }
    println!("ready {}", held.len());
    let mut line = String::new();
    let _ = tokio::io::AsyncBufReadExt::read_line(
        &mut tokio::io::BufReader::new(tokio::io::stdin()),
        &mut line,
    )
    .await;
    drop(held);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| {
        args.get(i)
            .and_then(|a| a.parse::<usize>().ok())
            .unwrap_or(0)
    };
    match args.first().map(String::as_str) {
        Some("fanout") => fanout(n(1), n(2), &args[3..]).await,
        Some("rate") => rate(n(1), n(2), n(3) as u64, &args[4]).await,
        Some("idle") => idle(n(1), &args[2]).await,
        _ => eprintln!("usage: channel-load fanout|rate|idle ... (see the source)"),
    }
}
