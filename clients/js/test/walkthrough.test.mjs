// The README's walk-through (examples/walkthrough.mjs) against the repository's own example
// config, examples/portico.toml, served on a free port and a fresh SQLite file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BIN, start } from './server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const config = resolve(root, '../../examples/portico.toml');

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
