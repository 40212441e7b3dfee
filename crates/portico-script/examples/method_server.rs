//! A load target for `bench/scripts.sh`: the auto API serving one method twice, written in Rust
//! (`echo`) and in JavaScript (`jsEcho`), both returning their argument. Prints the listen
//! address and each runtime's idle heap, then serves until killed.
//!
//! `cargo run --release -p portico-script --example method_server -- 127.0.0.1:3900`

use std::time::Duration;

use portico_script::{ScriptConfig, Scripts};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3900".to_owned());
    let runtimes: usize = std::env::var("RUNTIMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("main.js"),
        "import { methods } from 'portico';\nmethods({ jsEcho(x) { return x; } });\n",
    )?;
    let platform = portico_platform::Platform::open("memory:").await?;
    platform.method("echo", |_inv, args: Vec<serde_json::Value>| async move {
        Ok(args.into_iter().next().unwrap_or(serde_json::Value::Null))
    })?;
    let mut config = ScriptConfig::new("main.js");
    config.runtimes = runtimes;
    config.timeout = Duration::from_secs(5);
    let scripts = Scripts::load(dir.path(), config, platform.clone()).await?;
    scripts.install(&platform)?;
    for (i, bytes) in scripts.memory_per_runtime().await.iter().enumerate() {
        println!("runtime {i}: {bytes} bytes in use when idle");
    }
    let app = portico_auto::AutoApi::new(platform).router()?;
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
