// A channel between headless Chromium (Debian's package) and a Node.js client, over the real
// `portico serve`: the page's WebSocket joins, tracks and sends; the Node client sees its
// presence and messages, and the page sees the Node client's.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { Portico } from '../dist/index.js';
import { CONFIG, serve, until, workspace } from './server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHANNELS = `${CONFIG}
[[channels]]
pattern = "room:*"
join = "authenticated"
`;

let ws;
let server;
let pages;
let browser;

/** Serves the test page and the built package from an origin of its own. */
function pageServer() {
  const http = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const file = path === '/' ? join(root, 'test/browser/index.html') : path.startsWith('/dist/') ? join(root, normalize(path)) : null;
    if (!file || !file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': extname(file) === '.html' ? 'text/html' : 'text/javascript' });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => http.listen(0, '127.0.0.1', () => ok({ http, url: `http://127.0.0.1:${http.address().port}/` })));
}

before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`the browser test needs Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM`);
  ws = workspace(CHANNELS);
  ws.addUser('ann', 'ann-secret');
  ws.addUser('bob', 'bob-secret');
  server = await serve(ws);
  pages = await pageServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  await new Promise((r) => (pages ? pages.http.close(r) : r()));
  await server?.stop();
  ws?.remove();
});

test('a page and a Node client share a channel: presence and messages both ways', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await page.goto(pages.url);
  await page.waitForFunction(() => typeof window.Portico === 'function');
  await page.evaluate(async ([url]) => {
    const pc = new window.Portico(url, { api: 'api/v1/' });
    await pc.auth.login({ username: 'ann', password: 'ann-secret' });
    const room = pc.channel('room:web');
    window.heard = [];
    room.on('chat', (text, message) => window.heard.push([text, message.from]));
    await room.joined;
    await room.track({ name: 'Ann (browser)' });
    window.room = room;
  }, [server.url]);

  const bob = new Portico(server.url, { api: 'api/v1/' });
  const { id: bobId } = await bob.auth.login({ username: 'bob', password: 'bob-secret' });
  const room = bob.channel('room:web');
  const heard = [];
  room.on('chat', (text) => heard.push(text));
  await room.joined;
  await until(() => room.presence().some((m) => m.meta.name === 'Ann (browser)'), "the page's presence");
  await room.track({ name: 'Bob (node)' });
  await page.waitForFunction(() => window.room.presence().some((m) => m.meta.name === 'Bob (node)'));

  await room.send('chat', 'hello page');
  await page.waitForFunction(() => window.heard.length === 1);
  assert.deepEqual(await page.evaluate(() => window.heard), [['hello page', bobId]]);
  await page.evaluate(() => window.room.send('chat', 'hello node'));
  await until(() => heard.length === 1, 'the page message');
  assert.deepEqual(heard, ['hello node']);

  // The page goes away: its presence leaves.
  await page.close();
  await until(() => !room.presence().some((m) => m.meta.name === 'Ann (browser)'), 'the page left');
  assert.deepEqual(problems, []);
  bob.closeSocket();
});
