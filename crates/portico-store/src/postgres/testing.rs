//! Throwaway PostgreSQL clusters for tests: `cargo test` needs no running database service.
//!
//! [`TestCluster::start`] runs `initdb` into a fresh temp dir and starts the server with `pg_ctl`
//! on a free loopback port (and a unix socket in the same dir), with `fsync` and synchronous
//! commits off (a test never outlives the server, so only the server's own crash would lose
//! data, and tests kill clients, not the server). A cluster is stopped and
//! its dir removed when the value is dropped, and also, through a small watchdog process, when
//! the test process ends without dropping it (a `static` shared by a test binary, a panic, a
//! kill), so nothing is left behind.
//!
//! The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, newest first), or
//! `$PORTICO_PG_BIN`, or `initdb` on `PATH`. Without them, starting fails with a message saying
//! to `apt-get install postgresql`: tests that need PostgreSQL fail, they never skip.
//!
//! `initdb` refuses to run as root, so as root the cluster belongs to the user `nobody` and the
//! binaries run through `runuser -u nobody`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The password of the superuser `postgres` over TCP.
pub const PASSWORD: &str = "portico-test";

/// A running throwaway PostgreSQL server; the superuser is `postgres`, with [`PASSWORD`] over
/// TCP and trusted on the unix socket.
#[derive(Debug)]
pub struct TestCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_nobody: bool,
    /// The server's options (port, socket dir, settings), given again on restart.
    options: String,
}

static DATABASES: AtomicU32 = AtomicU32::new(0);

impl TestCluster {
    /// Creates and starts a new cluster.
    ///
    /// # Errors
    /// A message saying what is missing or what failed (with the server's log).
    pub fn start() -> Result<TestCluster, String> {
        let cluster = TestCluster::empty()?;
        let data = cluster.dir.join("data");
        let pwfile = cluster.dir.join("pwfile");
        std::fs::write(&pwfile, format!("{PASSWORD}\n"))
            .map_err(|e| format!("cannot write {pwfile:?}: {e}"))?;
        let pwfile_arg = format!("--pwfile={}", pwfile.display());
        cluster.run_pg(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                // TCP connections need the password (so tests can check wrong credentials);
                // the unix socket is trusted (for `psql` in test setup, and replication).
                "--auth-host=scram-sha-256".as_ref(),
                "--auth-local=trust".as_ref(),
                pwfile_arg.as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-locale".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        cluster.first_start()
    }

    /// Creates and starts a streaming replica of this cluster: a hot standby made with
    /// `pg_basebackup -R` (its `primary_conninfo` reaches this server over its unix socket),
    /// answering reads on a port of its own, with the same superuser and password. The primary
    /// runs with PostgreSQL's defaults `wal_level = replica` and `max_wal_senders = 10`.
    ///
    /// # Errors
    /// When the base backup or the start fails (with the replica's log).
    pub fn start_replica(&self) -> Result<TestCluster, String> {
        let replica = TestCluster::empty()?;
        let data = replica.dir.join("data");
        let port = self.port.to_string();
        replica.run_pg(
            "pg_basebackup",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-h".as_ref(),
                self.dir.as_os_str(),
                "-p".as_ref(),
                port.as_ref(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-R".as_ref(),
                "-X".as_ref(),
                "stream".as_ref(),
                "-c".as_ref(),
                "fast".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        replica.first_start()
    }

    /// A new cluster directory (owned by `nobody` when we are root) with its watchdog; nothing
    /// in it yet.
    fn empty() -> Result<TestCluster, String> {
        let bin = find_bin()?;
        let as_nobody = is_root();
        let dir = std::env::temp_dir().join(format!(
            "portico-pg-{}-{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
        let cluster = TestCluster {
            bin,
            dir,
            port: 0,
            as_nobody,
            options: String::new(),
        };
        if as_nobody {
            run(Command::new("chown").arg("nobody").arg(&cluster.dir))?;
        }
        cluster.watch_parent()?;
        Ok(cluster)
    }

    /// Starts the server of a data directory just made, on a free port.
    fn first_start(mut self) -> Result<TestCluster, String> {
        self.port = free_port()?;
        self.options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            self.port,
            self.dir.display()
        );
        if let Err(e) = self.restart() {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            return Err(format!("{e}\nserver log:\n{log}"));
        }
        Ok(self)
    }

    /// The port the server listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the server's unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The directory with the PostgreSQL binaries used (`pg_ctl`, `psql`, ...).
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// The URL of database `db` over TCP, as the superuser.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres:{PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// Creates a new, empty database with a unique name and returns its URL.
    ///
    /// # Errors
    /// When `createdb` fails.
    pub fn create_database(&self) -> Result<String, String> {
        let name = format!("t{}", DATABASES.fetch_add(1, Ordering::Relaxed));
        self.sql("postgres", &format!("CREATE DATABASE {name}"))?;
        Ok(self.url(&name))
    }

    /// Runs `sql` in database `db` with `psql` (for test setup: roles, passwords).
    ///
    /// # Errors
    /// When `psql` fails.
    pub fn sql(&self, db: &str, sql: &str) -> Result<(), String> {
        self.query(db, sql).map(drop)
    }

    /// Runs `sql` in database `db` with `psql` and returns what it printed, unaligned and
    /// without headers (one value: the value), trimmed.
    ///
    /// # Errors
    /// When `psql` fails.
    pub fn query(&self, db: &str, sql: &str) -> Result<String, String> {
        let port = self.port.to_string();
        output(
            Command::new(self.bin.join("psql"))
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &port, "-U", "postgres", "-d", db])
                .args(["-v", "ON_ERROR_STOP=1", "-q", "-A", "-t", "-c", sql]),
        )
        .map(|out| out.trim().to_owned())
    }

    /// Stops the server (fast shutdown) and keeps its files, so that [`TestCluster::restart`]
    /// can start it again: for tests of a database that goes away and comes back.
    ///
    /// # Errors
    /// When `pg_ctl stop` fails.
    pub fn stop(&self) -> Result<(), String> {
        let data = self.dir.join("data");
        self.run_pg(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "fast".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        )
    }

    /// Starts a stopped server again on the same port.
    ///
    /// # Errors
    /// When `pg_ctl start` fails.
    pub fn restart(&self) -> Result<(), String> {
        let data = self.dir.join("data");
        let log = self.dir.join("server.log");
        self.run_pg(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-o".as_ref(),
                self.options.as_ref(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        )
    }

    /// Runs one of the PostgreSQL binaries, as `nobody` when we are root.
    fn run_pg(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<(), String> {
        let program = self.bin.join(program);
        let mut cmd = if self.as_nobody {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "nobody", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        };
        // pg_ctl's server inherits the working directory, which `nobody` may not be able to read.
        cmd.current_dir(&self.dir).args(args);
        run(&mut cmd)
    }

    /// Starts a watchdog that stops the server and removes the dir once this process is gone.
    fn watch_parent(&self) -> Result<(), String> {
        let pg_ctl = self.bin.join("pg_ctl");
        let data = self.dir.join("data");
        let runas = if self.as_nobody {
            "runuser -u nobody -- "
        } else {
            ""
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
             cd /; {runas}'{pg_ctl}' -D '{data}' -m immediate stop >/dev/null 2>&1; \
             rm -rf '{dir}'; sleep 1; rm -rf '{dir}'",
            pid = std::process::id(),
            pg_ctl = pg_ctl.display(),
            data = data.display(),
            dir = self.dir.display(),
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| format!("cannot start the cluster's watchdog: {e}"))
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.run_pg(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `cmd`, turning a failure into a message with its output.
fn run(cmd: &mut Command) -> Result<(), String> {
    output(cmd).map(drop)
}

/// Runs `cmd` and returns its standard output, turning a failure into a message with its output.
fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The directory holding `initdb` and `pg_ctl`.
fn find_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("PORTICO_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists());
    on_path.ok_or_else(|| {
        "PostgreSQL is not installed: these tests start a throwaway PostgreSQL server and need \
         its initdb and pg_ctl. Install it with `apt-get install -y postgresql` (Debian/Ubuntu), \
         or point PORTICO_PG_BIN at the directory holding initdb and pg_ctl."
            .to_string()
    })
}

/// True when this process runs as root (`initdb` refuses to).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A loopback port nobody listens on right now.
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// What disagrees between the sorted index `spec` of `collection` and the documents it
/// indexes (empty when nothing does): entries missing or stale (each compared with the entries
/// recomputed from the stored documents), a multikey flag missing for a document with several
/// entries, an index not ready or not in the catalog, and for a ready index over several
/// fields its kept prefix counts against its entries. For tests of the writes keeping it.
///
/// # Errors
/// The store's errors reading the tables.
pub async fn sorted_index_problems(
    store: &super::PostgresStore,
    collection: &str,
    spec: &crate::IndexSpec,
) -> crate::Result<Vec<String>> {
    use std::collections::BTreeSet;

    let client = store.client().await?;
    let name = super::schema::sorted_name(spec);
    let mut problems = Vec::new();
    let row = client
        .query_opt(
            "SELECT ready, multikey FROM portico_sorted WHERE collection = $1 AND name = $2",
            &[&collection, &name],
        )
        .await?;
    let Some(row) = row else {
        return Ok(vec![format!("the index {spec} is not in the catalog")]);
    };
    let (ready, multikey): (bool, bool) = (row.try_get(0)?, row.try_get(1)?);
    if !ready {
        problems.push(format!("the index {spec} is not ready"));
    }
    let parts = spec.split_paths();
    let mut want: BTreeSet<(Vec<Vec<u8>>, String)> = BTreeSet::new();
    let mut several = false;
    let docs = client
        .query(
            &format!(
                "SELECT id, doc FROM {} ORDER BY id",
                super::schema::collection_table(collection)
            ),
            &[],
        )
        .await?;
    for row in &docs {
        let (id, doc) = super::query::decode(collection, row)?;
        let Some(rows) = crate::order_key::entries(&doc, &parts) else {
            problems.push(format!(
                "document {id:?} has too many entries but is stored"
            ));
            continue;
        };
        several |= rows.len() > 1;
        want.extend(rows.into_iter().map(|keys| (keys, id.clone())));
    }
    if several && !multikey {
        problems.push(format!(
            "a document gives the index {spec} several entries, and it is not marked multikey"
        ));
    }
    let columns: Vec<String> = (0..spec.fields.len()).map(|i| format!("k{i}")).collect();
    let rows = client
        .query(
            &format!(
                "SELECT {}, id FROM {}",
                columns.join(", "),
                super::schema::sorted_table(collection, spec)
            ),
            &[],
        )
        .await?;
    let mut have: BTreeSet<(Vec<Vec<u8>>, String)> = BTreeSet::new();
    for row in &rows {
        let keys = (0..columns.len())
            .map(|i| row.try_get::<_, Vec<u8>>(i))
            .collect::<Result<Vec<_>, _>>()?;
        have.insert((keys, row.try_get(columns.len())?));
    }
    for (keys, id) in want.difference(&have) {
        problems.push(format!("missing entry {keys:?} of {id:?}"));
    }
    for (keys, id) in have.difference(&want) {
        problems.push(format!("stale entry {keys:?} of {id:?}"));
    }
    if ready && spec.fields.len() >= 2 {
        problems.extend(prefix_count_problems(&client, collection, spec, &want).await?);
    }
    Ok(problems)
}

/// What disagrees between the kept prefix counts of a ready compound index and its entries
/// `want` (keys, `_id`): a missing marker, or a prefix whose documents differ from its count.
async fn prefix_count_problems(
    client: &deadpool_postgres::Client,
    collection: &str,
    spec: &crate::IndexSpec,
    want: &std::collections::BTreeSet<(Vec<Vec<u8>>, String)>,
) -> crate::Result<Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};

    let table = super::schema::sorted_table(collection, spec);
    let mut expected: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for len in 1..spec.fields.len() {
        let distinct: BTreeSet<(Vec<u8>, &str)> = want
            .iter()
            .map(|(keys, id)| {
                let prefix = crate::index_plan::encode_prefix(&keys[..len]);
                (prefix, id.as_str())
            })
            .collect();
        for (prefix, _) in distinct {
            *expected.entry(prefix).or_default() += 1;
        }
    }
    let rows = client
        .query(
            "SELECT prefix, sum(n)::bigint FROM portico_prefix_counts WHERE name = $1 \
             GROUP BY prefix",
            &[&table],
        )
        .await?;
    let mut kept: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for row in &rows {
        kept.insert(row.try_get(0)?, row.try_get(1)?);
    }
    let mut problems = Vec::new();
    if kept.remove(&Vec::new()).is_none() {
        problems.push(format!("the ready index {spec} has no prefix count marker"));
    }
    kept.retain(|_, n| *n != 0);
    for (prefix, n) in &expected {
        if kept.get(prefix) != Some(n) {
            problems.push(format!(
                "prefix {prefix:?}: {n} documents, kept count {:?}",
                kept.get(prefix)
            ));
        }
    }
    for (prefix, n) in &kept {
        if !expected.contains_key(prefix) {
            problems.push(format!("prefix {prefix:?} without documents kept as {n}"));
        }
    }
    Ok(problems)
}
