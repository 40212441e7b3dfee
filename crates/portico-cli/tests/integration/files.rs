//! Files attached to documents, through the binary over HTTP: uploads (raw and multipart) and
//! downloads with hashes, ranges and thumbnails, the size and type limits, protected files
//! with download tokens, deletes (of a file, of its document), aborted uploads, names that try
//! to leave the store, and the memory bound while 1 GB streams each way.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::common::{Http, Process, S3Server, Server, Workspace, text};

/// `posts`: owners only (`ownerId`), a cover image (with thumbnails) and up to 3 attachments.
/// `albums`: reads need a login (for the download-token cases), writes too.
const CONFIG: &str = r#"
[files]
store = "store"
max_size_mb = 1

[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0

[[api.collection]]
name = "posts"
owner_field = "ownerId"
files = { cover = { types = ["image/png", "image/jpeg", "image/webp"], thumbs = ["100x100", "64x0", "50x50f"] }, attachments = { max = 3 } }

[[api.collection]]
name = "albums"
auth_required = true
field_rules = { secret = "role:hr" }
files = { photos = { max = 5 }, secret = {} }
"#;

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// A PNG of `w` x `h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

struct Client<'a> {
    server: &'a Http,
    token: String,
}

impl Client<'_> {
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
        let method_name = method;
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.server.http.request(method, self.server.url(path));
        if !self.token.is_empty() {
            request = request.header("X-Auth-Token", &self.token);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some((bytes, content_type)) = body {
            request = request.header("Content-Type", content_type).body(bytes);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = match response.bytes().await {
            Ok(b) => b.to_vec(),
            Err(e) => panic!("{method_name} {path}: {status}: {e:?}"),
        };
        (status, headers, bytes)
    }

    async fn json(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| (serde_json::to_vec(&b).unwrap(), "application/json"));
        let (status, _, bytes) = self.send(method, path, body, &[]).await;
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn upload(&self, path: &str, bytes: &[u8], content_type: &str) -> (u16, Value) {
        let (status, _, body) = self
            .send("POST", path, Some((bytes.to_vec(), content_type)), &[])
            .await;
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn new_post(&self) -> String {
        let (status, body) = self
            .json("POST", "/api/posts", Some(json!({"title": "t"})))
            .await;
        assert_eq!(status, 201, "{body}");
        body["data"]["_id"].as_str().unwrap().to_owned()
    }
}

/// A multipart/form-data body of `(field, file name, type, bytes)` parts.
fn multipart(parts: &[(&str, &str, &str, &[u8])]) -> (Vec<u8>, String) {
    let boundary = "portico-test-boundary-7d3f";
    let mut body = Vec::new();
    for (field, name, kind, bytes) in parts {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: {kind}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={boundary}"))
}

async fn start() -> (Workspace, Server) {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("ada", "correct horse", &[]);
    ws.add_user("bob", "battery staple", &[]);
    let server = ws.serve();
    (ws, server)
}

async fn login<'a>(server: &'a Http, name: &str, password: &str) -> Client<'a> {
    let (token, _) = server.rest_login("/api/", name, password).await;
    Client { server, token }
}

#[tokio::test]
async fn files_round_trip_with_ranges_types_and_thumbnails() {
    let (ws, server) = start().await;
    let store = ws.path("store");
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");

    // A raw body named by ?name=: the name loses its path; metadata in the reply and the document.
    let text = b"hello, files: 0123456789".repeat(10);
    let (status, body) = ada
        .upload(
            &format!("{attach}?name=..%2F..%2Fnotes.txt"),
            &text,
            "text/plain",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let meta = &body["data"];
    assert_eq!(meta["name"], "notes.txt");
    assert_eq!(meta["size"], text.len());
    assert_eq!(meta["type"], "text/plain");
    assert_eq!(meta["sha256"], sha(&text));
    assert!(meta["createdAt"].is_string());
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert_eq!(doc["data"]["attachments"], json!([meta]));

    // Download: the same bytes, with type, length, entity tag and an inline disposition.
    let url = format!("{attach}/notes.txt");
    let (status, headers, bytes) = ada.send("GET", &url, None, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(sha(&bytes), sha(&text));
    assert_eq!(headers["content-type"], "text/plain");
    assert_eq!(headers["content-length"], text.len().to_string().as_str());
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert_eq!(etag, format!("\"{}\"", sha(&text)));
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("inline")
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let (status, _, _) = ada
        .send("GET", &url, None, &[("If-None-Match", &etag)])
        .await;
    assert_eq!(status, 304);

    // Ranges: 206 with Content-Range; outside the file 416.
    let (status, headers, bytes) = ada
        .send("GET", &url, None, &[("Range", "bytes=7-11")])
        .await;
    assert_eq!(status, 206);
    assert_eq!(bytes, &text[7..12]);
    assert_eq!(
        headers["content-range"],
        format!("bytes 7-11/{}", text.len()).as_str()
    );
    let (status, _, bytes) = ada.send("GET", &url, None, &[("Range", "bytes=-4")]).await;
    assert_eq!((status, bytes.as_slice()), (206, &text[text.len() - 4..]));
    let (status, headers, _) = ada
        .send("GET", &url, None, &[("Range", "bytes=100000-")])
        .await;
    assert_eq!(status, 416);
    assert_eq!(
        headers["content-range"],
        format!("bytes */{}", text.len()).as_str()
    );

    // Multipart with two parts; a taken name gets a counter; HTML is an attachment.
    let html = b"<html><script>alert(1)</script></html>";
    let (form, kind) = multipart(&[
        ("file", "notes.txt", "text/plain", b"second"),
        ("file", "page.html", "text/html", html),
    ]);
    let (status, body) = ada.upload(&attach, &form, &kind).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"][0]["name"], "notes-2.txt");
    assert_eq!(body["data"][1]["name"], "page.html");
    let (_, headers, _) = ada
        .send("GET", &format!("{attach}/page.html"), None, &[])
        .await;
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    // A fourth file passes `max = 3`.
    let (status, _) = ada
        .upload(&format!("{attach}?name=four.txt"), b"4", "text/plain")
        .await;
    assert_eq!(status, 400);

    // Type by content: text declared as PNG is refused, and nothing is left of it.
    let before = files_under(&store).len();
    let cover = format!("/api/posts/{id}/files/cover");
    let (status, body) = ada
        .upload(
            &format!("{cover}?name=fake.png"),
            b"not a png at all",
            "image/png",
        )
        .await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(files_under(&store).len(), before);
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert!(doc["data"].get("cover").is_none(), "{doc}");

    // A real image, and thumbnails of the allowed sizes, made once and kept.
    let image = png(300, 200);
    let (status, body) = ada
        .upload(
            &format!("{cover}?name=photo.png"),
            &image,
            "application/octet-stream",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["type"], "image/png");
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert_eq!(
        doc["data"]["cover"]["name"], "photo.png",
        "max = 1 keeps one object"
    );
    for (size, want) in [
        ("100x100", (100, 100)),
        ("64x0", (64, 43)),
        ("50x50f", (50, 33)),
    ] {
        let (status, headers, bytes) = ada
            .send("GET", &format!("{cover}/photo.png?thumb={size}"), None, &[])
            .await;
        assert_eq!(status, 200, "{size}: {}", String::from_utf8_lossy(&bytes));
        assert_eq!(headers["content-type"], "image/png");
        let thumb = image::load_from_memory(&bytes).unwrap();
        assert_eq!((thumb.width(), thumb.height()), want, "{size}");
    }
    let thumbs = || {
        files_under(&store)
            .iter()
            .filter(|p| p.to_string_lossy().contains(".thumb-"))
            .count()
    };
    assert_eq!(thumbs(), 3);
    let (status, _, _) = ada
        .send(
            "GET",
            &format!("{cover}/photo.png?thumb=100x100"),
            None,
            &[],
        )
        .await;
    assert_eq!((status, thumbs()), (200, 3));
    let (status, _, _) = ada
        .send(
            "GET",
            &format!("{cover}/photo.png?thumb=120x120"),
            None,
            &[],
        )
        .await;
    assert_eq!(status, 400);
    let (status, _, _) = ada
        .send(
            "GET",
            &format!("{attach}/notes.txt?thumb=100x100"),
            None,
            &[],
        )
        .await;
    assert_eq!(status, 400);

    // A new cover replaces the old one, whose bytes and thumbnails go.
    let other = png(40, 40);
    let (status, _) = ada
        .upload(&format!("{cover}?name=photo.png"), &other, "image/png")
        .await;
    assert_eq!(status, 201);
    assert_eq!(thumbs(), 0);
    let (_, _, bytes) = ada
        .send("GET", &format!("{cover}/photo.png"), None, &[])
        .await;
    assert_eq!(sha(&bytes), sha(&other));

    // Another user cannot see or change the post's files (owner scope): 404 as for the post.
    let bob = login(&server, "bob", "battery staple").await;
    let (status, _, _) = bob.send("GET", &url, None, &[]).await;
    assert_eq!(status, 404);
    let (status, _) = bob
        .upload(&format!("{attach}?name=x.txt"), b"x", "text/plain")
        .await;
    assert_eq!(status, 404);
    let (status, _, _) = bob.send("DELETE", &url, None, &[]).await;
    assert_eq!(status, 404);
    let anonymous = Client {
        server: &server,
        token: String::new(),
    };
    let (status, _) = anonymous
        .upload(&format!("{attach}?name=x.txt"), b"x", "text/plain")
        .await;
    assert_eq!(status, 401);

    // Names that try to leave the store find nothing; unknown fields are 404.
    for path in [
        format!("{attach}/..%2F..%2Fportico.db"),
        format!("{attach}/..%2Fportico.toml"),
        "/api/posts/..%2F..%2F/files/attachments/notes.txt".to_owned(),
        format!("/api/posts/{id}/files/nope/notes.txt"),
    ] {
        let (status, _, _) = ada.send("GET", &path, None, &[]).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, _) = ada
        .upload(
            &format!("/api/posts/{id}/files/title?name=a.txt"),
            b"a",
            "text/plain",
        )
        .await;
    assert_eq!(status, 404);
    for path in files_under(&store) {
        assert!(path.starts_with(&store), "{}", path.display());
    }

    // Delete one file: its metadata and bytes go.
    let count = files_under(&store).len();
    let (status, _, _) = ada.send("DELETE", &url, None, &[]).await;
    assert_eq!(status, 200);
    let (status, _, _) = ada.send("GET", &url, None, &[]).await;
    assert_eq!(status, 404);
    assert_eq!(files_under(&store).len(), count - 1);
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    let names: Vec<&str> = doc["data"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes-2.txt", "page.html"]);

    // Removing the document removes its files (after the commit).
    let (status, _) = ada.json("DELETE", &format!("/api/posts/{id}"), None).await;
    assert_eq!(status, 200);
    let mut left = files_under(&store);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = files_under(&store);
    }
    assert!(left.is_empty(), "{left:?}");
}

/// One upload on its own connection, written by hand: `head` then `body` in chunks; with
/// `stop_after`, the connection is closed after that many body bytes.
fn raw_upload(server: &Http, head: &str, body: &[u8], stop_after: Option<usize>) -> Option<String> {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let end = stop_after.unwrap_or(body.len());
    for chunk in body[..end].chunks(64 * 1024) {
        if stream.write_all(chunk).is_err() {
            break;
        }
    }
    if stop_after.is_some() {
        drop(stream);
        return None;
    }
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    Some(String::from_utf8_lossy(&reply).into_owned())
}

#[tokio::test]
async fn size_limit_aborted_uploads_and_protected_files() {
    let (ws, server) = start().await;
    let store = ws.path("store");
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");

    // Over the limit (1 MiB): 413 from the declared length, and from a chunked body as it passes.
    let big = vec![b'a'; 2 * 1024 * 1024];
    let (status, _) = ada
        .upload(&format!("{attach}?name=big.txt"), &big, "text/plain")
        .await;
    assert_eq!(status, 413);
    let mut chunked = Vec::new();
    for chunk in big.chunks(100_000) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = format!(
        "POST {attach}?name=big.txt HTTP/1.1\r\nHost: t\r\nX-Auth-Token: {}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        ada.token
    );
    let reply = raw_upload(&server, &head, &chunked, None).unwrap();
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    let (status, _, _) = ada
        .send("GET", &format!("{attach}/big.txt"), None, &[])
        .await;
    assert_eq!(status, 404);

    // An upload whose client goes away half way leaves no file and no metadata.
    let body = vec![b'z'; 600_000];
    let head = format!(
        "POST {attach}?name=cut.txt HTTP/1.1\r\nHost: t\r\nX-Auth-Token: {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        ada.token,
        body.len()
    );
    raw_upload(&server, &head, &body, Some(300_000));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert!(doc["data"].get("attachments").is_none(), "{doc}");
    assert!(files_under(&store).is_empty(), "{:?}", files_under(&store));

    // A protected file (reads need a login): no token 401; a download token works on the
    // download URL only; a wrong or expired one is 401.
    let (status, body) = ada
        .json("POST", "/api/albums", Some(json!({"name": "a"})))
        .await;
    assert_eq!(status, 201, "{body}");
    let album = body["data"]["_id"].as_str().unwrap().to_owned();
    let photo = png(20, 20);
    let photos = format!("/api/albums/{album}/files/photos");
    let (status, _) = ada
        .upload(&format!("{photos}?name=p.png"), &photo, "image/png")
        .await;
    assert_eq!(status, 201);
    let anonymous = Client {
        server: &server,
        token: String::new(),
    };
    let (status, _, _) = anonymous
        .send("GET", &format!("{photos}/p.png"), None, &[])
        .await;
    assert_eq!(status, 401);
    let (status, _) = anonymous.json("POST", "/api/files/token", None).await;
    assert_eq!(status, 401);
    let (status, body) = ada.json("POST", "/api/files/token", None).await;
    assert_eq!(status, 200, "{body}");
    let token = body["data"]["token"].as_str().unwrap().to_owned();
    let (status, _, bytes) = anonymous
        .send("GET", &format!("{photos}/p.png?token={token}"), None, &[])
        .await;
    assert_eq!((status, sha(&bytes)), (200, sha(&photo)));
    let (status, _) = anonymous
        .json("GET", &format!("/api/albums/{album}?token={token}"), None)
        .await;
    assert_eq!(status, 401, "a download token opens download URLs only");
    let (status, _, _) = anonymous
        .send("GET", &format!("{photos}/p.png?token=nope"), None, &[])
        .await;
    assert_eq!(status, 401);
    // A file field hidden by a field rule: only its readers may attach or read its files.
    let hank = {
        ws.add_user("hank", "human resources", &["hr"]);
        login(&server, "hank", "human resources").await
    };
    let secret = format!("/api/albums/{album}/files/secret");
    let (status, _) = ada
        .upload(&format!("{secret}?name=s.txt"), b"s", "text/plain")
        .await;
    assert_eq!(status, 403);
    let (status, body) = hank
        .upload(&format!("{secret}?name=s.txt"), b"s", "text/plain")
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, _, _) = ada.send("GET", &format!("{secret}/s.txt"), None, &[]).await;
    assert_eq!(status, 404);
    let (status, _, bytes) = hank
        .send("GET", &format!("{secret}/s.txt"), None, &[])
        .await;
    assert_eq!((status, bytes.as_slice()), (200, b"s".as_slice()));

    // Expire it in the database, as two minutes passing would.
    let conn = rusqlite::Connection::open(ws.path("portico.db")).unwrap();
    let table = format!("c_{}", hex::encode("portico_file_tokens"));
    let changed = conn
        .execute(
            &format!("UPDATE \"{table}\" SET doc = json_set(doc, '$.expires', 1)"),
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let (status, _, _) = anonymous
        .send("GET", &format!("{photos}/p.png?token={token}"), None, &[])
        .await;
    assert_eq!(status, 401);
}

/// The resident peak of the server (`VmHWM`), in bytes.
fn peak(server: &Process) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Streams `size` bytes of varied content up into a new document of `server` (open writes)
/// and back down, checking the hashes; returns how much the server's peak resident set grew.
async fn stream_round_trip(server: &Process, size: usize) -> u64 {
    let ada = Client {
        server,
        token: String::new(),
    };
    let id = ada.new_post().await;
    let path = format!("/api/posts/{id}/files/attachments");

    // Varied bytes, sent as they are made.
    let block: Vec<u8> = (0..1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let head = format!(
        "POST {path}?name=big.bin HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
    );
    let addr = server.base.trim_start_matches("http://").to_owned();
    let before = peak(server);
    let started = std::time::Instant::now();
    let (reply, sent_sha) = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        let mut hasher = Sha256::new();
        for _ in 0..size / block.len() {
            hasher.update(&block);
            stream.write_all(&block).unwrap();
        }
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap();
        (
            String::from_utf8_lossy(&reply).into_owned(),
            hex::encode(hasher.finalize()),
        )
    })
    .await
    .unwrap();
    let upload_secs = started.elapsed().as_secs_f64();
    assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
    assert!(reply.contains(&sent_sha), "{reply}");
    let after_upload = peak(server);

    let started = std::time::Instant::now();
    let mut response = server
        .http
        .get(server.url(&format!("{path}/big.bin")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut hasher = Sha256::new();
    let mut length = 0usize;
    while let Some(chunk) = response.chunk().await.unwrap() {
        length += chunk.len();
        hasher.update(&chunk);
    }
    let download_secs = started.elapsed().as_secs_f64();
    assert_eq!(length, size);
    assert_eq!(hex::encode(hasher.finalize()), sent_sha);
    let after_download = peak(server);
    eprintln!(
        "{} MiB: upload {:.0} MB/s, download {:.0} MB/s; peak RSS {} MiB before, {} MiB after the upload, {} MiB after the download",
        size >> 20,
        size as f64 / 1e6 / upload_secs,
        size as f64 / 1e6 / download_secs,
        before >> 20,
        after_upload >> 20,
        after_download >> 20
    );
    after_download.saturating_sub(before)
}

/// A config with open writes (no login, so no password hash, 19 MiB, is in the server's peak)
/// on the files store `store`.
fn open_posts(store: &str) -> String {
    format!(
        "[files]\nstore = \"{store}\"\nmax_size_mb = 1100\n[[api]]\napi_path = \"api/\"\n[[api.collection]]\nname = \"posts\"\nauth_required = false\nfiles = {{ attachments = {{ max = 2 }} }}\n"
    )
}

#[tokio::test]
async fn one_gigabyte_streams_in_and_out_in_bounded_memory() {
    let ws = Workspace::new();
    ws.config(&open_posts("store"));
    let server = ws.serve_binary();
    let grown = stream_round_trip(&server, 1024 * 1024 * 1024).await;
    // The idle peak of a debug build is most of 64 MiB already (a release build's is ~10 MiB;
    // see the CLI README): what streaming 1 GiB each way adds is bounded instead.
    assert!(grown < 24 * 1024 * 1024, "the peak grew by {grown} bytes");
}

/// The same bound on an S3-compatible store, where an upload holds up to three 5 MiB parts
/// and the HTTP client its buffers: 256 MiB each way (51 parts; the bound does not depend on
/// the length, and a debug build moves about 40 MB/s through s3s-fs on a shared machine).
#[tokio::test]
async fn streaming_to_s3_stays_in_bounded_memory() {
    let s3 = S3Server::start("bucket");
    let ws = Workspace::new();
    ws.config(&open_posts("s3://bucket/portico"));
    let server = s3.serve(&ws);
    let grown = stream_round_trip(&server, 256 * 1024 * 1024).await;
    assert!(grown < 40 * 1024 * 1024, "the peak grew by {grown} bytes");
}

/// Document metadata on PostgreSQL: a local directory is refused unless said to be shared;
/// with `shared_storage = true` files round-trip and go with their document.
#[tokio::test]
async fn files_on_postgres_need_shared_storage() {
    let ws = Workspace::on_postgres();
    ws.config(CONFIG);
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success());
    let stderr = super::common::text(&out.stderr);
    assert!(
        stderr.contains("shared_storage") && stderr.contains("s3://"),
        "{stderr}"
    );
    let out = ws.run(&[
        "serve",
        "--config",
        "portico.toml",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(!out.status.success(), "serve must refuse it too");

    ws.config(&CONFIG.replace("max_size_mb = 1", "max_size_mb = 1\nshared_storage = true"));
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", super::common::text(&out.stderr));
    ws.add_user("ada", "correct horse", &[]);
    let server = ws.serve();
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");
    let bytes = b"stored beside a shared database".to_vec();
    let (status, body) = ada
        .upload(&format!("{attach}?name=a.txt"), &bytes, "text/plain")
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, _, got) = ada.send("GET", &format!("{attach}/a.txt"), None, &[]).await;
    assert_eq!((status, sha(&got)), (200, sha(&bytes)));
    let store = ws.path("store");
    assert_eq!(files_under(&store).len(), 1);
    let (status, _) = ada.json("DELETE", &format!("/api/posts/{id}"), None).await;
    assert_eq!(status, 200);
    for _ in 0..50 {
        if files_under(&store).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(files_under(&store).is_empty());
}

/// The objects stored under `prefix` of the bucket (the server keeps them as files).
fn objects(s3: &S3Server, bucket_prefix: &str) -> Vec<PathBuf> {
    files_under(&s3.root.path().join(bucket_prefix))
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains(".upload"))
        .collect()
}

/// The contract on PostgreSQL with files on a real S3-compatible server: multipart uploads
/// (over 5 MiB), round trips with hashes, ranges, thumbnails, the limits, aborted uploads and
/// files going with their document.
#[tokio::test]
async fn files_on_s3_with_postgres() {
    let s3 = S3Server::start("bucket");
    let ws = Workspace::on_postgres();
    ws.config(
        &CONFIG
            .replace("store = \"store\"", "store = \"s3://bucket/portico\"")
            .replace("max_size_mb = 1", "max_size_mb = 8"),
    );
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = super::common::portico()
        .args(["check", "--config", "portico.toml"])
        .current_dir(ws.dir.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", super::common::text(&out.stderr));
    ws.add_user("ada", "correct horse", &[]);
    let server = s3.serve(&ws);
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");
    let objects = || objects(&s3, "bucket/portico");

    // 6 MiB: two parts of a multipart upload.
    let big: Vec<u8> = (0..6 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(40_503) >> 7) as u8)
        .collect();
    let (status, body) = ada
        .upload(
            &format!("{attach}?name=big.bin"),
            &big,
            "application/octet-stream",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["sha256"], sha(&big));
    assert_eq!(objects().len(), 1);
    let url = format!("{attach}/big.bin");
    let (status, headers, got) = ada.send("GET", &url, None, &[]).await;
    assert_eq!((status, sha(&got)), (200, sha(&big)));
    assert_eq!(headers["content-length"], big.len().to_string().as_str());
    let (status, headers, got) = ada
        .send("GET", &url, None, &[("Range", "bytes=5242870-5242889")])
        .await;
    assert_eq!(status, 206);
    assert_eq!(got, &big[5_242_870..5_242_890]);
    assert_eq!(
        headers["content-range"],
        format!("bytes 5242870-5242889/{}", big.len()).as_str()
    );

    // Thumbnails on S3, kept there.
    let cover = format!("/api/posts/{id}/files/cover");
    let (status, _) = ada
        .upload(&format!("{cover}?name=c.png"), &png(200, 100), "image/png")
        .await;
    assert_eq!(status, 201);
    let (status, _, bytes) = ada
        .send("GET", &format!("{cover}/c.png?thumb=64x0"), None, &[])
        .await;
    assert_eq!(status, 200);
    let thumb = image::load_from_memory(&bytes).unwrap();
    assert_eq!((thumb.width(), thumb.height()), (64, 32));
    assert_eq!(objects().len(), 3);

    // The limits, and an upload cut short: nothing is left.
    let (status, _) = ada
        .upload(
            &format!("{cover}?name=x.png"),
            b"text, not an image",
            "image/png",
        )
        .await;
    assert_eq!(status, 415);
    let (status, _) = ada
        .upload(
            &format!("{attach}?name=huge.bin"),
            &vec![1u8; 9 * 1024 * 1024],
            "application/octet-stream",
        )
        .await;
    assert_eq!(status, 413);
    let head = format!(
        "POST {attach}?name=cut.bin HTTP/1.1\r\nHost: t\r\nX-Auth-Token: {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        ada.token,
        big.len()
    );
    raw_upload(&server, &head, &big, Some(big.len() / 2));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(objects().len(), 3, "{:?}", objects());
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert_eq!(
        doc["data"]["attachments"].as_array().map(Vec::len),
        Some(1),
        "{doc}"
    );

    // The document's removal removes its files from the bucket.
    let (status, _) = ada.json("DELETE", &format!("/api/posts/{id}"), None).await;
    assert_eq!(status, 200);
    for _ in 0..50 {
        if objects().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(objects().is_empty(), "{:?}", objects());
}

/// The file routes are listed by `portico routes` and described in the OpenAPI document (an
/// upload takes a form of files or the raw bytes).
#[tokio::test]
async fn file_routes_are_listed_and_described() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let listing = super::common::text(&ws.run(&["routes", "--config", "portico.toml"]).stdout);
    for route in [
        "POST    /api/posts/:id/files/:field",
        "/api/posts/:id/files/:field/:name",
        "/api/files/token",
    ] {
        let words: Vec<&str> = route.split_whitespace().collect();
        assert!(
            listing.lines().any(|l| words.iter().all(|w| l.contains(w))),
            "{route} not in:\n{listing}"
        );
    }
    let server = ws.serve();
    let reply = server.call("GET", "/openapi.json", None, &[]).await;
    assert_eq!(reply.status, 200);
    let upload = &reply.body["paths"]["/api/posts/{id}/files/{field}"]["post"];
    assert!(
        upload["requestBody"]["content"]["multipart/form-data"].is_object(),
        "{upload}"
    );
    assert!(upload["requestBody"]["content"]["application/octet-stream"].is_object());
    let download = &reply.body["paths"]["/api/posts/{id}/files/{field}/{name}"];
    assert!(
        download["get"].is_object() && download["delete"].is_object(),
        "{download}"
    );
    assert!(reply.body["paths"]["/api/files/token"]["post"].is_object());
}

/// Files on local disk and a routes API with the default login, for the tests below to add
/// their collections to.
const FILES_AND_API: &str = r#"
[files]
store = "store"

[[api]]
api_path = "api/"
use_default_auth = true
auth_failure_delay_ms = 0
"#;

/// Client writes never touch a file field's metadata, on either door: a PATCH, PUT, POST or
/// batch that sets, changes or removes it is refused with 403 (a value sent back unchanged
/// passes, and a PUT that leaves the field out keeps it); only the file routes (and the admin
/// page's files calls) change it.
#[tokio::test]
async fn client_writes_never_touch_file_metadata() {
    let ws = Workspace::new();
    ws.config(&format!(
        r#"{FILES_AND_API}
[[api.collection]]
name = "posts"
files = {{ cover = {{}}, attachments = {{ max = 3 }} }}

[auto]
auth_failure_delay_ms = 0
collections = ["posts"]

[auto.rules.posts]
insert = "authenticated"
update = "authenticated"
"#
    ));
    ws.add_user("ada", "correct horse", &[]);
    ws.add_user("root", "root-secret", &["admin"]);
    let server = ws.serve();
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let post = format!("/api/posts/{id}");
    let (status, body) = ada
        .upload(
            &format!("{post}/files/attachments?name=a.txt"),
            b"first file",
            "text/plain",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let stored = json!([body["data"].clone()]);
    let forged = json!({"name": "a.txt", "size": 3, "type": "text/plain", "sha256": "0".repeat(64), "createdAt": "2020-01-01T00:00:00Z"});
    let refused = |reply: &(u16, Value), what: &str| {
        assert_eq!(reply.0, 403, "{what}: {}", reply.1);
        assert!(
            reply.1.to_string().contains("holds files"),
            "{what}: {}",
            reply.1
        );
    };

    // The routes door: patch (whole field, a path inside it, a removal), put, post, batch.
    for body in [
        json!({"attachments": [forged]}),
        json!({"attachments.0.sha256": "0".repeat(64)}),
        json!({"attachments": null}),
        json!({"cover": forged}),
    ] {
        refused(
            &ada.json("PATCH", &post, Some(body.clone())).await,
            &format!("PATCH {body}"),
        );
    }
    refused(
        &ada.json("PUT", &post, Some(json!({"title": "t", "attachments": []})))
            .await,
        "PUT emptying the field",
    );
    refused(
        &ada.json(
            "POST",
            "/api/posts",
            Some(json!({"title": "t", "cover": forged})),
        )
        .await,
        "POST with a cover",
    );
    refused(
        &ada.json(
            "POST",
            "/api/batch",
            Some(json!({"requests": [{"method": "PATCH", "url": post.clone(), "body": {"attachments": []}}]})),
        )
        .await,
        "batch PATCH",
    );
    // Sent back unchanged, or left out of a replacement: accepted, the files kept.
    let (status, body) = ada
        .json(
            "PATCH",
            &post,
            Some(json!({"title": "again", "attachments": stored.clone()})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = ada
        .json("PUT", &post, Some(json!({"title": "replaced"})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["title"], "replaced");
    assert_eq!(
        body["data"]["attachments"], stored,
        "a replacement keeps the files"
    );

    // The auto API: an update or an insert naming a file field is refused the same way.
    let (token, _) = server.auto_login("ada", "correct horse").await;
    let auth = format!("Bearer {token}");
    let auto = |method: &'static str, path: String, body: Value| {
        let auth = auth.clone();
        let server = &server;
        async move {
            let r = server
                .call(
                    method,
                    &path,
                    Some(body),
                    &[("Authorization", auth.as_str())],
                )
                .await;
            (r.status, r.body)
        }
    };
    refused(
        &auto(
            "PATCH",
            format!("/posts/{id}"),
            json!({"attachments": [forged]}),
        )
        .await,
        "auto PATCH",
    );
    refused(
        &auto(
            "POST",
            "/posts".into(),
            json!({"title": "x", "cover": forged}),
        )
        .await,
        "auto insert",
    );
    let (status, body) = auto("PATCH", format!("/posts/{id}"), json!({"title": "auto"})).await;
    assert_eq!((status, body.clone()), (200, json!(1)), "{body}");

    // Nothing above changed the metadata, and the bytes still download; the file routes
    // still change it.
    let (_, doc) = ada.json("GET", &post, None).await;
    assert_eq!(doc["data"]["attachments"], stored);
    assert_eq!(doc["data"]["title"], "auto");
    let (status, _, bytes) = ada
        .send("GET", &format!("{post}/files/attachments/a.txt"), None, &[])
        .await;
    assert_eq!((status, bytes.as_slice()), (200, b"first file".as_slice()));
    let (status, _) = ada
        .json("DELETE", &format!("{post}/files/attachments/a.txt"), None)
        .await;
    assert_eq!(status, 200);
    let (_, doc) = ada.json("GET", &post, None).await;
    assert_eq!(doc["data"]["attachments"], json!([]));

    // The admin page of the binary attaches files through the same service.
    let root = Client {
        server: &server,
        token: server.admin_token("root", "root-secret").await,
    };
    let (status, meta) = root
        .upload(
            &format!("/_/api/collections/posts/documents/{id}/files/attachments?name=admin.txt"),
            b"from the admin page",
            "text/plain",
        )
        .await;
    assert_eq!(status, 201, "{meta}");
    assert_eq!(meta["sha256"], sha(b"from the admin page"));
    let (status, _, bytes) = ada
        .send(
            "GET",
            &format!("{post}/files/attachments/admin.txt"),
            None,
            &[],
        )
        .await;
    assert_eq!(
        (status, bytes.as_slice()),
        (200, b"from the admin page".as_slice())
    );
}

/// A script's `files` (the `"portico"` module): attach text and bytes, list, read back (bytes
/// of every value, text), delete, through the same files service the routes use: what a script
/// attaches downloads over HTTP, and what a client uploads a script reads.
#[cfg(feature = "scripts")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_attach_read_and_delete_files() {
    const MAIN: &str = r#"
import { methods, collection, files } from "portico";

const failure = (e: any) => ({ error: e.error, status: e.statusCode });

methods({
  async newPost() {
    return await collection("posts").insert({ title: "from a script" });
  },
  async attachText(id: string, name: string, text: string) {
    return await files.attach("posts", id, "att", name, text, "text/plain");
  },
  async attachBytes(id: string, name: string, bytes: number[]) {
    return await files.attach("posts", id, "att", name, new Uint8Array(bytes));
  },
  async readBack(id: string, name: string) {
    const bytes: Uint8Array = await files.read("posts", id, "att", name);
    const list = await files.list("posts", id, "att");
    const meta = await files.meta("posts", id, "att", name);
    return { bytes: Array.from(bytes), names: list.map((f) => f.name), size: meta.size };
  },
  async readText(id: string, name: string) {
    return await files.readText("posts", id, "att", name);
  },
  async remove(id: string, name: string) {
    return (await files.delete("posts", id, "att", name)).name;
  },
  async refused(id: string) {
    const out: any = {};
    try { await files.read("posts", id, "att", "nope.txt"); } catch (e) { out.missing = failure(e); }
    try { await files.attach("posts", id, "cover", "x.png", "not a png"); } catch (e) { out.wrongType = failure(e); }
    try { await files.list("posts", id, "nofield"); } catch (e) { out.noField = failure(e); }
    return out;
  },
});
"#;
    let ws = Workspace::new();
    ws.config(&format!(
        r#"{FILES_AND_API}
[[api.collection]]
name = "posts"
files = {{ cover = {{ types = ["image/png"] }}, att = {{ max = 3 }} }}

[auto]
auth_failure_delay_ms = 0
collections = []

[scripts]
main = "server/main.ts"
"#
    ));
    let main = ws.path("server/main.ts");
    std::fs::create_dir_all(main.parent().unwrap()).unwrap();
    std::fs::write(main, MAIN).unwrap();
    ws.add_user("ada", "correct horse", &[]);
    let server = ws.serve();
    let method = |name: &'static str, args: Value| {
        let server = &server;
        async move {
            let r = server
                .call("POST", &format!("/methods/{name}"), Some(args), &[])
                .await;
            assert_eq!(r.status, 200, "{name}: {}", r.raw);
            r.body
        }
    };
    let id = method("newPost", json!([])).await;
    let id = id.as_str().unwrap().to_owned();
    let ada = login(&server, "ada", "correct horse").await;

    // Text attached by the script downloads over HTTP, byte for byte.
    let text = "héllo wörld, from a script\n";
    let meta = method("attachText", json!([id, "../notes.txt", text])).await;
    assert_eq!(meta["name"], "notes.txt", "the name loses its path: {meta}");
    assert_eq!(meta["size"], text.len());
    assert_eq!(meta["type"], "text/plain");
    assert_eq!(meta["sha256"], sha(text.as_bytes()));
    let att = format!("/api/posts/{id}/files/att");
    let (status, _, bytes) = ada
        .send("GET", &format!("{att}/notes.txt"), None, &[])
        .await;
    assert_eq!((status, bytes.as_slice()), (200, text.as_bytes()));
    assert_eq!(
        method("readText", json!([id, "notes.txt"])).await,
        json!(text)
    );

    // Bytes of every value both ways (lengths 256 and 257: both base64 paddings).
    let every: Vec<u8> = (0..=255u8).collect();
    let (status, body) = ada
        .upload(
            &format!("{att}?name=every.bin"),
            &every,
            "application/octet-stream",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let back = method("readBack", json!([id, "every.bin"])).await;
    assert_eq!(back["bytes"], json!(every));
    assert_eq!(back["size"], 256);
    assert_eq!(back["names"], json!(["notes.txt", "every.bin"]));
    let mut longer = every.clone();
    longer.push(7);
    let meta = method("attachBytes", json!([id, "longer.bin", longer])).await;
    assert_eq!(meta["sha256"], sha(&longer), "{meta}");
    let (status, _, bytes) = ada
        .send("GET", &format!("{att}/longer.bin"), None, &[])
        .await;
    assert_eq!((status, bytes), (200, longer));

    // Errors as a script sees them; a full field, a missing file, a wrong type, no such field.
    let refused = method("refused", json!([id])).await;
    assert_eq!(
        refused["missing"],
        json!({"error": "not-found", "status": 404}),
        "{refused}"
    );
    assert_eq!(
        refused["wrongType"],
        json!({"error": "wrong-type", "status": 415}),
        "{refused}"
    );
    assert_eq!(refused["noField"]["status"], 404, "{refused}");
    let r = server
        .call(
            "POST",
            "/methods/attachText",
            Some(json!([id, "fourth.txt", "x"])),
            &[],
        )
        .await;
    assert_eq!(r.status, 400, "max = 3: {}", r.raw);

    // Delete: gone from the document and from HTTP.
    assert_eq!(
        method("remove", json!([id, "notes.txt"])).await,
        "notes.txt"
    );
    let (status, _, _) = ada
        .send("GET", &format!("{att}/notes.txt"), None, &[])
        .await;
    assert_eq!(status, 404);
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    let names: Vec<&str> = doc["data"]["att"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert_eq!(names, ["every.bin", "longer.bin"]);
}

/// The backups of `ws`'s `dir` (relative to the workspace): the `.db` files, oldest first.
fn backups_in(ws: &Workspace, dir: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(ws.path(dir))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("portico-backup-") && n.ends_with(".db")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The folder of a backup's files: `x.db` gives `x.files`.
fn files_folder(backup: &Path) -> PathBuf {
    backup.with_extension("files")
}

/// Issue 39, item 2: a scheduled backup restored into a fresh directory served documents whose
/// files were gone (`404 The file is missing from the store`). Now a backup holds the files
/// its database names, each backup links the files the previous one holds, pruning removes a
/// backup's files with it, and `portico restore` puts them back.
#[tokio::test]
async fn scheduled_backups_hold_the_files_their_database_names_and_restore_them() {
    let backups = "\n[backups]\ndir = \"backups\"\nevery_hours = 0.0004\nkeep = 3\n";
    let ws = Workspace::new();
    ws.config(&format!("{CONFIG}{backups}"));
    ws.add_user("ada", "correct horse", &[]);
    let server = ws.serve();
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attachment: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let (status, body) = ada
        .upload(
            &format!("/api/posts/{id}/files/attachments?name=a.bin"),
            &attachment,
            "application/octet-stream",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let cover = png(40, 30);
    let (status, body) = ada
        .upload(
            &format!("/api/posts/{id}/files/cover?name=cover.png"),
            &cover,
            "image/png",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let cover_name = body["data"]["name"].as_str().unwrap().to_owned();
    // Two backups taken after both uploads, each with both files.
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    let whole = loop {
        let whole: Vec<PathBuf> = backups_in(&ws, "backups")
            .into_iter()
            .filter(|b| files_under(&files_folder(b)).len() == 2)
            .collect();
        if whole.len() >= 2 {
            break whole;
        }
        assert!(std::time::Instant::now() < deadline, "{whole:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let stopped = server.stop();
    assert!(stopped);
    // Kept with their files, pruned with them: no folder of files without its backup.
    let kept = backups_in(&ws, "backups");
    assert!(kept.len() <= 3, "{kept:?}");
    let folders: Vec<PathBuf> = std::fs::read_dir(ws.path("backups"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "files"))
        .collect();
    assert!(
        folders.iter().all(|f| f.with_extension("db").is_file()),
        "{folders:?} {kept:?}"
    );
    // The same file in two backups is one file on disk (a hard link).
    {
        use std::os::unix::fs::MetadataExt as _;
        let inodes = |b: &Path| -> Vec<u64> {
            let mut found: Vec<u64> = files_under(&files_folder(b))
                .iter()
                .map(|f| std::fs::metadata(f).unwrap().ino())
                .collect();
            found.sort_unstable();
            found
        };
        let (a, b) = (&whole[whole.len() - 2], &whole[whole.len() - 1]);
        if a.is_file() && b.is_file() {
            assert_eq!(inodes(a), inodes(b), "{a:?} {b:?}");
        }
    }
    // The store itself lost: the backup is all there is.
    let newest = whole.last().unwrap().clone();
    let fresh = Workspace::new();
    fresh.config(CONFIG);
    let restored = fresh.run(&[
        "restore",
        &newest.display().to_string(),
        "--config",
        "portico.toml",
    ]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(said.contains("files: 2 put back into store"), "{said}");
    let server = fresh.serve();
    let ada = login(&server, "ada", "correct horse").await;
    let (status, _, got) = ada
        .send(
            "GET",
            &format!("/api/posts/{id}/files/attachments/a.bin"),
            None,
            &[],
        )
        .await;
    assert_eq!((status, sha(&got)), (200, sha(&attachment)));
    let (status, _, got) = ada
        .send(
            "GET",
            &format!("/api/posts/{id}/files/cover/{cover_name}"),
            None,
            &[],
        )
        .await;
    assert_eq!((status, sha(&got)), (200, sha(&cover)));
    let (status, _, _) = ada
        .send(
            "GET",
            &format!("/api/posts/{id}/files/cover/{cover_name}?thumb=100x100"),
            None,
            &[],
        )
        .await;
    assert_eq!(status, 200);
    assert!(server.stop());
}

/// `portico backup --out` while the server runs: the backup holds the files its snapshot
/// names, even when they are deleted from the store afterwards, and not the files uploaded
/// after it; `portico restore` puts them back beside what the store holds.
#[tokio::test]
async fn a_backup_holds_its_snapshot_s_files_and_not_later_ones() {
    // Served in this process: a stopped server leaves the database free for `portico restore`.
    let (ws, server) = start().await;
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");
    let (status, body) = ada
        .upload(
            &format!("{attach}?name=before.txt"),
            b"before",
            "text/plain",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let backed = ws.run(&["backup", "--config", "portico.toml", "--out", "b1.db"]);
    assert!(backed.status.success(), "{}", text(&backed.stderr));
    let said = text(&backed.stdout);
    assert!(
        said.contains("files: b1.files (1 file the database names"),
        "{said}"
    );
    assert_eq!(files_under(&ws.path("b1.files")).len(), 1);
    // After the snapshot: a new file (not needed), the old one deleted (still in the backup).
    let (status, body) = ada
        .upload(&format!("{attach}?name=after.txt"), b"after", "text/plain")
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = ada
        .json("DELETE", &format!("{attach}/before.txt"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(files_under(&ws.path("b1.files")).len(), 1);
    assert!(server.stop(), "the server stops gracefully");
    // Restored in place: `before.txt` is back, `after.txt` stays in the store unnamed (the
    // sweep deletes it).
    let restored = ws.run(&["restore", "b1.db", "--config", "portico.toml"]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(said.contains("files: 1 put back into store"), "{said}");
    let server = ws.serve();
    let ada = login(&server, "ada", "correct horse").await;
    let (status, _, got) = ada
        .send("GET", &format!("{attach}/before.txt"), None, &[])
        .await;
    assert_eq!((status, got.as_slice()), (200, b"before".as_slice()));
    let (status, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = doc["data"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert_eq!(names, ["before.txt"]);
    assert!(server.stop());

    // A backup without files for an application with files says so.
    std::fs::copy(ws.path("b1.db"), ws.path("bare.db")).unwrap();
    let restored = ws.run(&["restore", "bare.db", "--config", "portico.toml"]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    assert!(
        text(&restored.stdout).contains("warning: the backup holds no files"),
        "{}",
        text(&restored.stdout)
    );
}

/// Files on S3 and backups in a bucket (`[backups] url`), on a real `s3s-fs` server: a backup
/// copies the objects its database names into the backups' bucket (`<name>.files/`), and
/// `portico restore s3://...` copies them back into the files store after they were deleted.
#[tokio::test]
async fn backups_in_a_bucket_hold_the_s3_files_and_restore_them() {
    let s3 = S3Server::start("bucket");
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = |ws: &Workspace, args: &[&str]| {
        super::common::portico()
            .args(args)
            .current_dir(ws.dir.path())
            .envs(env.iter().copied())
            .output()
            .expect("run portico")
    };
    let config = format!(
        "{}\n[backups]\nurl = \"s3://bucket/backups\"\ndir = \"./staging\"\nkeep = 2\n",
        CONFIG
            .replace("store = \"store\"", "store = \"s3://bucket/files\"")
            .replace("max_size_mb = 1", "max_size_mb = 8")
    );
    let ws = Workspace::new();
    ws.config(&config);
    ws.add_user("ada", "correct horse", &[]);
    let server = s3.serve(&ws);
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");
    // 6 MiB: copied in parts.
    let big: Vec<u8> = (0..6 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(40_503) >> 7) as u8)
        .collect();
    let (status, body) = ada
        .upload(
            &format!("{attach}?name=big.bin"),
            &big,
            "application/octet-stream",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = ada
        .upload(&format!("{attach}?name=small.txt"), b"small", "text/plain")
        .await;
    assert_eq!(status, 201, "{body}");
    let backed = run(&ws, &["backup", "--config", "portico.toml"]);
    assert!(backed.status.success(), "{}", text(&backed.stderr));
    let said = text(&backed.stdout);
    assert!(said.contains("2 files the database names"), "{said}");
    let name = said
        .split("s3://bucket/backups/")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_owned();
    let held = objects(
        &s3,
        &format!("bucket/backups/{}", name.replace(".db", ".files")),
    );
    assert_eq!(held.len(), 2, "{held:?}");
    // Files on S3 into a backup on disk (`--out`): downloaded beside it.
    let local = run(
        &ws,
        &["backup", "--config", "portico.toml", "--out", "local.db"],
    );
    assert!(local.status.success(), "{}", text(&local.stderr));
    let held = files_under(&ws.path("local.files"));
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(
        held.iter()
            .any(|f| std::fs::read(f).is_ok_and(|b| sha(&b) == sha(&big))),
        "{held:?}"
    );
    // The second backup links (server-side copies) the first one's files.
    let again = run(&ws, &["backup", "--config", "portico.toml"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).contains("2 linked from the previous backup"),
        "{}",
        text(&again.stdout)
    );
    // Both files deleted from the store after the backup.
    for file in ["big.bin", "small.txt"] {
        let (status, body) = ada.json("DELETE", &format!("{attach}/{file}"), None).await;
        assert_eq!(status, 200, "{body}");
    }
    assert!(objects(&s3, "bucket/files").is_empty());
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");

    let fresh = Workspace::new();
    fresh.config(&config);
    let restored = run(
        &fresh,
        &[
            "restore",
            &format!("s3://bucket/backups/{name}"),
            "--config",
            "portico.toml",
        ],
    );
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(
        said.contains("files: 2 put back into s3://bucket/files"),
        "{said}"
    );
    let server = s3.serve(&fresh);
    let ada = login(&server, "ada", "correct horse").await;
    let (status, _, got) = ada
        .send("GET", &format!("{attach}/big.bin"), None, &[])
        .await;
    assert_eq!((status, sha(&got)), (200, sha(&big)));
    let (status, _, got) = ada
        .send("GET", &format!("{attach}/small.txt"), None, &[])
        .await;
    assert_eq!((status, got.as_slice()), (200, b"small".as_slice()));
    drop(server.stop());
}

/// The CRC-32 of a PNG chunk (its type and data).
fn png_crc(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A small PNG whose header says `w` x `h` pixels (its pixel data is a small image's: only a
/// decode would find out).
fn png_claiming(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = png(64, 64);
    // The signature (8 bytes), then IHDR: length (4), type (4), width (4), height (4)...
    bytes[16..20].copy_from_slice(&w.to_be_bytes());
    bytes[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = png_crc(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// Issue 39, item 4: a 136 KiB PNG of 12,000 x 12,000 pixels was accepted, and each first
/// thumbnail of it decoded about 100 MiB. Now an image over `[files] max_pixels` (default 50
/// million) is refused at upload from its header, before anything is stored; and a thumbnail's
/// decode reserves its memory from the budget the request bodies use, so it waits (then 503
/// with `Retry-After`) while bodies in flight hold it.
#[tokio::test]
async fn images_over_the_pixel_limit_are_refused_and_decodes_count_against_the_budget() {
    let ws = Workspace::new();
    ws.config(&CONFIG.replace("[[api]]", "[server]\nmax_inflight_body_mb = 1\n\n[[api]]"));
    ws.add_user("ada", "correct horse", &[]);
    let server = ws.serve_binary();
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let cover = format!("/api/posts/{id}/files/cover");
    let huge = png_claiming(12_000, 12_000);
    let (status, body) = ada
        .upload(&format!("{cover}?name=huge.png"), &huge, "image/png")
        .await;
    assert_eq!(status, 413, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("12000 x 12000") && message.contains("50000000"),
        "{body}"
    );
    assert!(files_under(&ws.path("store")).is_empty());
    let (_, doc) = ada.json("GET", &format!("/api/posts/{id}"), None).await;
    assert!(doc["data"]["cover"].is_null(), "{doc}");
    // Within the limit: stored, and its thumbnail made.
    let fine = png(1000, 800);
    let (status, body) = ada
        .upload(&format!("{cover}?name=fine.png"), &fine, "image/png")
        .await;
    assert_eq!(status, 201, "{body}");
    // A body in flight holds the whole budget (1 MiB; 128 KiB counts 8 times): the
    // thumbnail's decode (about 3 MiB) waits for room, then gets 503 with `Retry-After`.
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut held = TcpStream::connect(&addr).unwrap();
    held.write_all(
        format!(
            "POST /api/posts HTTP/1.1\r\nHost: t\r\nX-Auth-Token: {}\r\nContent-Type: application/json\r\nContent-Length: 131072\r\n\r\n{{",
            ada.token
        )
        .as_bytes(),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let (status, headers, _) = ada
        .send("GET", &format!("{cover}/fine.png?thumb=100x100"), None, &[])
        .await;
    assert_eq!(status, 503);
    assert_eq!(headers["retry-after"], "1");
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, thumb) = ada
        .send("GET", &format!("{cover}/fine.png?thumb=100x100"), None, &[])
        .await;
    assert_eq!(status, 200);
    assert!(!thumb.is_empty());
    drop(server.stop());

    // `max_pixels` sets the limit.
    let ws = Workspace::new();
    ws.config(&CONFIG.replace("max_size_mb = 1", "max_size_mb = 1\nmax_pixels = 10000"));
    ws.add_user("ada", "correct horse", &[]);
    let server = ws.serve_binary();
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let cover = format!("/api/posts/{id}/files/cover");
    let (status, body) = ada
        .upload(&format!("{cover}?name=a.png"), &png(200, 100), "image/png")
        .await;
    assert_eq!(status, 413, "{body}");
    let (status, body) = ada
        .upload(&format!("{cover}?name=b.png"), &png(100, 100), "image/png")
        .await;
    assert_eq!(status, 201, "{body}");
    drop(server.stop());
    let refused = ws.check_refuses(&CONFIG.replace("max_size_mb = 1", "max_pixels = 0"));
    assert!(refused.contains("files.max_pixels"), "{refused}");
}

/// Issue 39, item 11: with the S3 store down, file requests answered 500 `Internal server
/// error`; now 503 with `Retry-After`, as an unreachable database.
#[tokio::test]
async fn an_s3_store_that_is_down_answers_503_with_retry_after() {
    let s3 = S3Server::start("bucket");
    let ws = Workspace::new();
    ws.config(&CONFIG.replace("store = \"store\"", "store = \"s3://bucket/files\""));
    ws.add_user("ada", "correct horse", &[]);
    let server = s3.serve(&ws);
    let ada = login(&server, "ada", "correct horse").await;
    let id = ada.new_post().await;
    let attach = format!("/api/posts/{id}/files/attachments");
    let (status, body) = ada
        .upload(&format!("{attach}?name=a.txt"), b"hello", "text/plain")
        .await;
    assert_eq!(status, 201, "{body}");
    drop(s3);
    for (method, path, body) in [
        ("GET", format!("{attach}/a.txt"), None),
        (
            "POST",
            format!("{attach}?name=b.txt"),
            Some((b"again".to_vec(), "text/plain")),
        ),
    ] {
        let started = std::time::Instant::now();
        let (status, headers, reply) = ada.send(method, &path, body, &[]).await;
        eprintln!(
            "{method} with the store down: {status} after {:?}",
            started.elapsed()
        );
        assert_eq!(status, 503, "{method}: {}", String::from_utf8_lossy(&reply));
        assert_eq!(headers["retry-after"], "1");
        assert!(
            String::from_utf8_lossy(&reply).contains("file store is unavailable"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
    }
    let (_, log) = server.stop();
    assert!(log.contains("file store unavailable"), "{log}");
}
