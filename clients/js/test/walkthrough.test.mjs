// The README's walk-throughs: examples/walkthrough.mjs against the repository's own example
// config, examples/portico.toml; and the small app of examples/app.mjs (whose text the README
// shows, checked here to be the same) against the repository's examples/app/portico.toml (the
// app the Python client's README walks through too) with a real mail server. Each on a free
// port and a fresh SQLite file.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BIN, smtpSink, start } from './server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const config = resolve(root, '../../examples/portico.toml');
const app = resolve(root, '../../examples/app');

test('the walk-through works against examples/portico.toml', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-walkthrough-'));
  const database = 'sqlite:' + join(dir, 'portico.db');
  const env = { ...process.env, RUST_LOG: 'warn', PORTICO_LISTEN: '', PORTICO_DATABASE: '', PORT: '' };
  const add = spawnSync(BIN, ['users', 'add', '--config', config, '--database', database, '--username', 'ed', '--password', 'ed-secret', '--role', 'editor'], { cwd: dir, env, encoding: 'utf8' });
  assert.equal(add.status, 0, add.stderr);
  const server = await start(BIN, ['serve', '--config', config, '--database', database, '--listen', '127.0.0.1:0'], { cwd: dir, env });
  try {
    const run = spawnSync(process.execPath, [join(root, 'examples/walkthrough.mjs')], { cwd: root, env: { ...process.env, PORTICO_URL: server.url }, encoding: 'utf8', timeout: 60000 });
    assert.equal(run.status, 0, run.stderr + run.stdout);
    assert.deepEqual(run.stdout.trim().split('\n'), [
      'auth: logged in as ed',
      'articles: 1 in all, newest: Hello from portico-client',
      'stale write refused: 412 error: Precondition failed: the document changed since it was read (If-Match)',
      'tag of the article read: true',
      'iterated 1 articles',
      'live: added gear',
      'live: changed gear -> big gear',
      'cache: big gear (secret hidden: true )',
      'auth: logged out',
      'subscription: logged-out',
    ]);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the small app of the README runs as shown, against the repository\'s examples/app/portico.toml', async () => {
  const script = readFileSync(join(root, 'examples/app.mjs'), 'utf8');
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const shown = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).find((block) => block.includes('mailedToken'));
  assert.equal(shown, script, 'the README shows examples/app.mjs as it is');

  const sink = await smtpSink();
  const dir = mkdtempSync(join(tmpdir(), 'portico-app-'));
  const config = readFileSync(join(app, 'portico.toml'), 'utf8');
  assert.ok(config.includes('smtp://127.0.0.1:1025'));
  writeFileSync(join(dir, 'portico.toml'), config.replace('smtp://127.0.0.1:1025', sink.url));
  // The collections' JSON Schemas, which the config names beside it.
  for (const name of readdirSync(app).filter((n) => n.endsWith('.schema.json'))) {
    copyFileSync(join(app, name), join(dir, name));
  }
  const env = { ...process.env, RUST_LOG: 'warn', PORTICO_LISTEN: '', PORTICO_DATABASE: '', PORT: '' };
  let server;
  try {
    server = await start(BIN, ['serve', '--config', 'portico.toml', '--database', 'sqlite:' + join(dir, 'app.db'), '--listen', '127.0.0.1:0'], { cwd: dir, env });
    const child = spawn(process.execPath, [join(root, 'examples/app.mjs')], { cwd: root, env: { ...process.env, PORTICO_URL: server.url, MAIL_DIR: sink.dir } });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    const timer = setTimeout(() => child.kill(), 60000);
    const code = await new Promise((done) => child.on('exit', done));
    clearTimeout(timer);
    assert.equal(code, 0, err + out);
    assert.deepEqual(out.trim().split('\n'), [
      '3 tasks: Paint the fence (Garden), Plant the apple tree (Garden), Water the roses (Garden)',
      'apple tree: Plant the apple tree',
      'hours: 9 over 3 tasks',
      'uploaded 584 bytes',
      'thumbnail: image/png',
      'live: done: Paint the fence',
      'live list ended: logged-out',
      'old session: 401 You must be logged in to do this.',
      'open tasks: 2',
    ]);
  } finally {
    await server?.stop();
    sink.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
