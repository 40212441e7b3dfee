//! The baseline for Portico's load runs: the same work as a generated Portico collection, written
//! by hand with axum and rusqlite the way a typical service does it (every query handed to
//! `spawn_blocking`, a small pool of connections). `bench/load.sh` runs `wrk` against this and
//! against `portico serve` in the same run and prints the ratios.
//!
//! Usage: `baseline-server DB_PATH LISTEN_ADDR [SEED_COUNT]`. With a seed count, the database is
//! (re)filled with that many items `item-0000000`... and one user whose `x-auth-token` is
//! `bench-token`.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    routing::get,
};
use base64::Engine;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The database path; every blocking thread opens its own connection to it once.
type Pool = Arc<str>;

static DB_PATH: OnceLock<String> = OnceLock::new();

thread_local! {
    static CONN: RefCell<Option<Connection>> = const { RefCell::new(None) };
}
type Reply = (StatusCode, Json<Value>);

fn open(path: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

fn seed(conn: &mut Connection, count: u64) -> rusqlite::Result<()> {
    conn.execute_batch(
        "DROP TABLE IF EXISTS items; DROP TABLE IF EXISTS tokens;
         CREATE TABLE items (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
         CREATE TABLE tokens (hashed TEXT PRIMARY KEY, user_id TEXT NOT NULL);",
    )?;
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare("INSERT INTO items (id, doc) VALUES (?1, ?2)")?;
        for i in 0..count {
            let id = format!("item-{i:07}");
            let doc =
                json!({"_id": id, "title": format!("Item {i}"), "n": i, "tags": ["bench", "load"]});
            stmt.execute(params![id, doc.to_string()])?;
        }
        tx.execute(
            "INSERT INTO tokens (hashed, user_id) VALUES (?1, 'bench-user')",
            params![hash_token("bench-token")],
        )?;
    }
    tx.commit()
}

fn hash_token(token: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(token.as_bytes()))
}

async fn with_conn<T: Send + 'static>(
    _pool: &Pool,
    work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, Reply> {
    let failed = |message: String| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"status": "error", "message": message})),
        )
    };
    tokio::task::spawn_blocking(move || {
        CONN.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                let path = DB_PATH.get().ok_or("no database path")?;
                *slot = Some(open(path).map_err(|e| e.to_string())?);
            }
            let conn = slot.as_ref().ok_or("no connection")?;
            work(conn).map_err(|e| e.to_string())
        })
    })
    .await
    .map_err(|e| failed(e.to_string()))?
    .map_err(failed)
}

async fn get_item(State(pool): State<Pool>, Path(id): Path<String>) -> Reply {
    let found = with_conn(&pool, move |conn| {
        conn.query_row("SELECT doc FROM items WHERE id = ?1", [id], |row| {
            row.get::<_, String>(0)
        })
        .optional()
    })
    .await;
    match found {
        Ok(Some(doc)) => {
            let data: Value = serde_json::from_str(&doc).unwrap_or(Value::Null);
            (
                StatusCode::OK,
                Json(json!({"status": "success", "data": data})),
            )
        }
        Ok(None) => (
            StatusCode::NOT_FOUND,
            Json(json!({"status": "fail", "message": "Item not found"})),
        ),
        Err(reply) => reply,
    }
}

async fn get_secure_item(State(pool): State<Pool>, headers: HeaderMap, id: Path<String>) -> Reply {
    let Some(token) = headers.get("x-auth-token").and_then(|v| v.to_str().ok()) else {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"status": "error", "message": "You must be logged in to do this."})),
        );
    };
    let hashed = hash_token(token);
    let user = with_conn(&pool, move |conn| {
        conn.query_row(
            "SELECT user_id FROM tokens WHERE hashed = ?1",
            [hashed],
            |row| row.get::<_, String>(0),
        )
        .optional()
    })
    .await;
    match user {
        Ok(Some(_)) => get_item(State(pool), id).await,
        Ok(None) => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"status": "error", "message": "You must be logged in to do this."})),
        ),
        Err(reply) => reply,
    }
}

async fn list_items(State(pool): State<Pool>) -> Reply {
    let docs = with_conn(&pool, |conn| {
        let mut stmt = conn.prepare("SELECT doc FROM items ORDER BY id LIMIT 20")?;
        let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
        rows.collect::<rusqlite::Result<Vec<String>>>()
    })
    .await;
    match docs {
        Ok(docs) => {
            let data: Vec<Value> = docs
                .iter()
                .filter_map(|d| serde_json::from_str(d).ok())
                .collect();
            (
                StatusCode::OK,
                Json(json!({"status": "success", "data": data})),
            )
        }
        Err(reply) => reply,
    }
}

async fn insert_item(State(pool): State<Pool>, Json(body): Json<Value>) -> Reply {
    let Value::Object(mut doc) = body else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"status": "fail", "message": "body must be an object"})),
        );
    };
    let id: String = {
        use rand::Rng;
        let mut rng = rand::rng();
        (0..17)
            .map(|_| {
                char::from(
                    b"23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz"
                        [rng.random_range(0..55)],
                )
            })
            .collect()
    };
    doc.insert("_id".into(), Value::String(id.clone()));
    let stored = Value::Object(doc);
    let text = stored.to_string();
    match with_conn(&pool, move |conn| {
        conn.execute(
            "INSERT INTO items (id, doc) VALUES (?1, ?2)",
            params![id, text],
        )
    })
    .await
    {
        Ok(_) => (
            StatusCode::CREATED,
            Json(json!({"status": "success", "data": stored})),
        ),
        Err(reply) => reply,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(listen)) = (args.get(1), args.get(2)) else {
        return Err("usage: baseline-server DB_PATH LISTEN_ADDR [SEED_COUNT]".into());
    };
    if let Some(count) = args.get(3) {
        seed(&mut open(path)?, count.parse()?)?;
    }
    DB_PATH.get_or_init(|| path.clone());
    let pool: Pool = Arc::from(path.as_str());
    let app = Router::new()
        .route("/api/items", get(list_items).post(insert_item))
        .route("/api/items/{id}", get(get_item))
        .route("/api/secure/items/{id}", get(get_secure_item))
        .with_state(pool);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
