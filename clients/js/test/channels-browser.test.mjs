// A channel between headless Chromium (Debian's package) and a Node.js client, over the real
// `portico serve`: the page's WebSocket joins, tracks and sends; the Node client sees its
// presence and messages, and the page sees the Node client's. Then the same across two instances
// on one throwaway PostgreSQL (the page on one, the Node client on the other), with a live list
// over the page's socket, and the page's instance killed with SIGKILL.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { Portico } from '../dist/index.js';
import { CONFIG, postgres, serve, until, workspace } from './server.mjs';

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

describe('across two instances on one PostgreSQL', () => {
  let pg;
  let pgWs;
  let a;
  let b;
  before(async () => {
    pg = await postgres();
    const config = CHANNELS.replace('database = "sqlite:DB"', `database = "${pg.url}"`).replace('[live]\n', '[live]\nheartbeat_ms = 200\npresence_timeout_ms = 1500\n');
    assert.ok(config.includes(pg.url) && config.includes('presence_timeout_ms'));
    pgWs = workspace(config);
    pgWs.addUser('ann', 'ann-secret');
    pgWs.addUser('bob', 'bob-secret');
    a = await serve(pgWs);
    b = await serve(pgWs);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    pgWs?.remove();
    pg?.stop();
  });

  test('a page on one instance, a Node client on the other: messages, presence and a live list; the page moves when its instance is killed', async () => {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    await page.goto(pages.url);
    await page.waitForFunction(() => typeof window.Portico === 'function');
    await page.evaluate(
      async ([url, fallback]) => {
        const pc = new window.Portico(url, { api: 'api/v1/', live: 'socket', socket: { reconnect: { minDelay: 50, maxDelay: 300 }, fallbacks: [fallback] } });
        await pc.auth.login({ username: 'ann', password: 'ann-secret' });
        const room = pc.channel('room:pg');
        window.heard = [];
        room.on('chat', (text) => window.heard.push(text));
        await room.joined;
        await room.track({ name: 'Ann (browser)' });
        window.room = room;
        window.sub = pc.collection('tasks').subscribe({ where: { list: 'pg' }, sort: 'n' });
        await window.sub.ready;
      },
      [a.url, b.url],
    );

    const bob = new Portico(b.url, { api: 'api/v1/', socket: { reconnect: { minDelay: 50, maxDelay: 300 } } });
    await bob.auth.login({ username: 'bob', password: 'bob-secret' });
    const room = bob.channel('room:pg');
    const heard = [];
    room.on('chat', (text) => heard.push(text));
    await room.joined;
    // The page is on the other instance: its presence comes across.
    await until(() => room.presence().some((m) => m.meta.name === 'Ann (browser)'), "the page's presence on the other instance");
    await room.track({ name: 'Bob (node)' });
    await page.waitForFunction(() => window.room.presence().some((m) => m.meta.name === 'Bob (node)'));
    await room.send('chat', 'hello page');
    await page.waitForFunction(() => window.heard.includes('hello page'));
    await page.evaluate(() => window.room.send('chat', 'hello node'));
    await until(() => heard.includes('hello node'), 'the page message on the other instance');
    // A write on B reaches the page's list on A, over the page's socket.
    await bob.collection('tasks').create({ _id: 'pg-1', list: 'pg', n: 1 });
    await page.waitForFunction(() => window.sub.docs().map((d) => d._id).join() === 'pg-1');

    // A dies: the page's member leaves on B within the presence timeout, and the page moves to
    // B by itself, rejoins, tracks again and follows its list there.
    const before = room.presence().find((m) => m.meta.name === 'Ann (browser)').key;
    a.child.kill('SIGKILL');
    await a.stop();
    const killed = Date.now();
    await until(() => room.presence().every((m) => m.key !== before), "the killed instance's member leaving", 8000);
    const left = Date.now() - killed;
    assert.ok(left < 1500 + 2 * 200 + 2000, `left after ${left} ms`);
    await until(() => room.presence().some((m) => m.meta.name === 'Ann (browser)' && m.key !== before), 'the page back on B', 15000);
    await bob.collection('tasks').create({ _id: 'pg-2', list: 'pg', n: 2 });
    await page.waitForFunction(() => window.sub.docs().map((d) => d._id).join() === 'pg-1,pg-2', null, { timeout: 15000 });
    await room.send('chat', 'after the move');
    await page.waitForFunction(() => window.heard.includes('after the move'));
    assert.deepEqual(await page.evaluate(() => window.heard.filter((t) => t === 'hello page').length), 1, 'nothing doubled');
    assert.deepEqual(problems, []);
    await page.close();
    bob.closeSocket();
  });
});
