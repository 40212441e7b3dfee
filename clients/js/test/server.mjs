// Runs the real `portico` binary for the tests: a config and a SQLite file in a temporary
// directory, `portico serve` on a free port (read from its `listening on http://` line), and
// `portico users add`. PORTICO_BIN names the binary (the cargo test that runs `npm test` sets
// it); by default the workspace's debug build. A missing binary fails the tests, saying so.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
export const BIN = process.env.PORTICO_BIN || resolve(here, '../../../target/debug/portico');

function requireBinary(path, how) {
  if (!existsSync(path)) throw new Error(`${path} does not exist: ${how}`);
}

/** A temporary directory with `portico.toml` holding `config` (`DB` is replaced by the database path). */
export function workspace(config) {
  requireBinary(BIN, 'build it with `cargo build -p portico-cli` or set PORTICO_BIN');
  const dir = mkdtempSync(join(tmpdir(), 'portico-client-'));
  const db = join(dir, 'portico.db');
  writeFileSync(join(dir, 'portico.toml'), config.replaceAll('DB', db));
  return {
    dir,
    db,
    config: join(dir, 'portico.toml'),
    /** `portico users add ...`; returns the new account's id. */
    addUser(username, password, ...roles) {
      const args = ['users', 'add', '--config', join(dir, 'portico.toml'), '--username', username, '--password', password];
      for (const role of roles) args.push('--role', role);
      const out = spawnSync(BIN, args, { cwd: dir, encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`portico users add failed: ${out.stderr}`);
      return out.stdout.trim().split('\n').pop();
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts `command args` and resolves once it prints `listening on http://ADDR` (or `auto API on
 * http://ADDR`); `stop()` sends SIGTERM and waits for the exit.
 */
export function start(command, args, options = {}) {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-20000);
  });
  const exited = new Promise((done) => child.on('exit', (code, signal) => done({ code, signal })));
  return new Promise((ok, fail) => {
    let stdout = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`${command} did not start within 20 s:\n${stderr}`));
    }, 20000);
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const m = stdout.match(/on (http:\/\/[^\s]+)/);
      if (!m) return;
      clearTimeout(timer);
      const url = m[1].replace(/\/$/, '');
      ok({
        url,
        port: Number(new URL(url).port),
        child,
        stderr: () => stderr,
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(e);
    });
    exited.then(({ code }) => {
      clearTimeout(timer);
      fail(new Error(`${command} exited with ${code} before listening:\n${stderr}`));
    });
  });
}

/** `portico serve` on the workspace's config, on a free port (or `listen`), with `env` added. */
export function serve(ws, listen = '127.0.0.1:0', env = {}) {
  return start(BIN, ['serve', '--config', ws.config, '--listen', listen], {
    cwd: ws.dir,
    env: { ...process.env, RUST_LOG: 'warn', PORTICO_LISTEN: '', PORTICO_DATABASE: '', PORT: '', ...env },
  });
}

/** The auto API's `todos` example (real methods: `todos.add`, ...) on `store`, on a free port. */
export function serveTodos(store) {
  const bin = process.env.PORTICO_TODOS_BIN || resolve(dirname(BIN), 'examples/todos');
  requireBinary(bin, 'build it with `cargo build -p portico-auto --example todos` or set PORTICO_TODOS_BIN');
  return start(bin, [], { env: { ...process.env, RUST_LOG: 'warn', TODOS_STORE: store, TODOS_LISTEN: '127.0.0.1:0' } });
}

/** Resolves when `check()` is true, polling every 10 ms; fails after `ms` with `what`. */
export async function until(check, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The config the tests serve: a routes API with login, plain, role-written and owner-scoped collections, and the auto API. */
export const CONFIG = `
database = "sqlite:DB"
shutdown_grace_seconds = 1

[[api]]
api_path = "api/"
version = "v1"
use_default_auth = true
auth_failure_delay_ms = 0
login_rate_limit = { attempts = 50, per_seconds = 10 }

[[api.collection]]
name = "tasks"
max_page_size = 50

[[api.collection]]
name = "projects"
search = ["title"]

[[api.collection]]
name = "jobs"
relations = { project = "projects" }

[[api.collection]]
name = "articles"
endpoints = { post = { role_required = "editor" }, patch = { role_required = "editor" }, delete = { role_required = "editor" } }

[[api.collection]]
name = "notes"
owner_field = "ownerId"
auth_required = true

[[api.collection]]
name = "posts"
owner_field = "ownerId"
auth_required = true
files = { cover = { types = ["image/png"], max = 1, thumbs = ["16x16"] }, attachments = { max = 3 } }

[auto]
auth_failure_delay_ms = 0
collections = ["widgets"]
response_headers = { "Access-Control-Allow-Origin" = "*", "Access-Control-Allow-Headers" = "Content-Type, Authorization", "Access-Control-Allow-Methods" = "GET, POST, PATCH, DELETE, OPTIONS" }
allow_register = true

[auto.rules.widgets]
insert = "owner:ownerId"
update = "owner:ownerId"
remove = "owner:ownerId"

[[auto.publication]]
name = "widgets"
collection = "widgets"
selector = {}
sort = { createdAt = -1 }
fields = { secret = 0 }

[live]
ping_secs = 1

[files]
store = "files"
max_size_mb = 8
# The instances of a test on PostgreSQL run on this machine: they all see this directory.
shared_storage = true
`;

/**
 * A real SMTP server (python3's aiosmtpd, through the server's own test sink
 * crates/portico-cli/tests/support/smtp_sink.py) on a free port, writing each mail it receives
 * as JSON `{to, subject, text}`. `mail(to, n)` waits for the `n`th mail to `to` (1 = the first).
 */
export async function smtpSink() {
  const script = resolve(here, '../../../crates/portico-cli/tests/support/smtp_sink.py');
  const python = process.env.PORTICO_TEST_PYTHON || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
  const dir = mkdtempSync(join(tmpdir(), 'portico-mail-'));
  const port = await freePort();
  const child = spawn(python, [script, dir, String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  await new Promise((ok, fail) => {
    child.stdout.once('data', (c) => (String(c).trim() === 'ready' ? ok() : fail(new Error(`the SMTP sink said ${c}`))));
    child.on('exit', () => fail(new Error(`the SMTP sink did not start (python3 with aiosmtpd; Debian: apt-get install python3-aiosmtpd):\n${stderr}`)));
  });
  const all = () =>
    readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort()
      .map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')));
  return {
    url: `smtp://127.0.0.1:${port}`,
    dir,
    async mail(to, n = 1) {
      let found;
      await until(() => (found = all().filter((m) => m.to.includes(to))[n - 1]), `mail ${n} to ${to}`, 20000);
      return found;
    },
    stop() {
      child.stdin.end();
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The token of the link to `{app}/{path}?token=...` in a mail's text. */
export function linkToken(mail, path) {
  const m = mail.text.match(new RegExp(`/${path}\\?token=([A-Za-z0-9_-]+)`));
  if (!m) throw new Error(`no /${path}?token= link in ${JSON.stringify(mail.text)}`);
  return m[1];
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((ok, fail) => {
    const probe = createServer();
    probe.on('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => ok(port));
    });
  });
}

/**
 * A throwaway PostgreSQL cluster from Debian's binaries (`/usr/lib/postgresql/<version>/bin`, or
 * PORTICO_PG_BIN), on a free port, trusting local connections; as root it runs as `nobody`
 * (initdb refuses root). Resolves with its `url` and `stop()`. Missing binaries fail, saying so.
 */
export async function postgres() {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
  const bin = process.env.PORTICO_PG_BIN || versions.map((v) => `/usr/lib/postgresql/${v}/bin`).find((d) => existsSync(`${d}/initdb`));
  if (!bin || !existsSync(`${bin}/initdb`)) throw new Error('PostgreSQL is not installed: apt-get install -y postgresql, or set PORTICO_PG_BIN');
  const dir = mkdtempSync(join(tmpdir(), 'portico-pg-'));
  chmodSync(dir, 0o755);
  const root = process.getuid?.() === 0;
  if (root) {
    const nobody = spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' });
    chownSync(dir, Number(nobody.stdout.trim()), -1);
  }
  const run = (tool, args) => {
    const [command, all] = root ? ['runuser', ['-u', 'nobody', '--', `${bin}/${tool}`, ...args]] : [`${bin}/${tool}`, args];
    const out = spawnSync(command, all, { cwd: dir, encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`${tool} failed: ${out.stderr}`);
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
  const port = await freePort();
  run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** A real PNG image of `width` x `height` red pixels (for uploads and thumbnails). */
export function png(width, height) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes) => {
    let c = 0xffffffff;
    for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, Buffer.from([255, 0, 0]))]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', pixels), chunk('IEND', Buffer.alloc(0))]);
}
