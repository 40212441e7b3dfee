// The built package in headless Chromium (Debian's package, never a downloaded browser), driven
// through the DevTools protocol by playwright-core as the admin page's browser tests are. A small
// page from another origin loads dist/index.js, logs in, subscribes, and must see an insert made
// by another client (Node). It also measures how many events one subscription applies to its
// cache per second, and writes the figure to test-output/browser-bench.json.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { Portico } from '../dist/index.js';
import { CONFIG, png, serve, until, workspace } from './server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let ws;
let server;
let pages;
let browser;

/** Serves the test page and the built package (dist/) from an origin of its own. */
function pageServer() {
  const files = { '/': join(root, 'test/browser/index.html') };
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.map': 'application/json' };
  const http = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const file = files[path] ?? (path.startsWith('/dist/') ? join(root, normalize(path)) : null);
    if (!file || !file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => http.listen(0, '127.0.0.1', () => ok({ http, url: `http://127.0.0.1:${http.address().port}/` })));
}

before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`the browser test needs Chromium at ${CHROMIUM}: apt-get install -y chromium (as .ci/run does), or set CHROMIUM`);
  ws = workspace(CONFIG);
  ws.addUser('ed', 'ed-secret');
  ws.addUser('writer', 'writer-secret');
  server = await serve(ws);
  pages = await pageServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  await new Promise((r) => (pages ? pages.http.close(r) : r()));
  await server?.stop();
  ws?.remove();
});

test('a page logs in, subscribes, and sees another client insert', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  const requests = [];
  page.on('request', (r) => requests.push({ url: r.url(), headers: r.headers() }));
  await page.goto(pages.url);
  const writer = new Portico(server.url, { api: 'api/v1/' });
  await writer.auth.login({ username: 'writer', password: 'writer-secret' });
  await writer.collection('tasks').create({ title: 'b: already there', list: 'browser' });

  const initial = await page.evaluate(([url]) => window.start(url, 'ed', 'ed-secret'), [server.url]);
  assert.equal(initial, 1);
  assert.equal(await page.textContent('#who'), 'logged in as ed');

  await writer.collection('tasks').create({ title: 'a: from another client', list: 'browser' });
  await page.locator('#tasks li', { hasText: 'a: from another client' }).waitFor({ timeout: 10000 });
  assert.deepEqual(await page.locator('#tasks li').allTextContents(), ['a: from another client', 'b: already there']);

  // The token: kept in sessionStorage, sent in a header to the other origin, never in a URL.
  const token = await page.evaluate(() => window.pc.auth.token);
  assert.equal(token.length, 43);
  assert.equal(JSON.parse(await page.evaluate(() => sessionStorage.getItem('portico.auth'))).token, token);
  const api = requests.filter((r) => r.url.startsWith(server.url));
  assert.ok(api.some((r) => r.headers['x-auth-token'] === token && r.headers.accept === 'text/event-stream'), 'the stream carried the token in a header');
  assert.equal(requests.filter((r) => r.url.includes(token)).length, 0, 'no URL holds the token');

  // A conditional write from the other origin: the tag is readable (ETag exposed) and If-Match
  // passes the preflight.
  const conditional = await page.evaluate(async () => {
    const tasks = window.pc.collection('tasks');
    const doc = await tasks.create({ title: 'c: conditional', list: 'elsewhere' });
    const read = await tasks.get(doc._id);
    await tasks.update(doc._id, { title: 'c: changed' }, { ifMatch: read });
    const stale = await tasks.update(doc._id, { title: 'c: lost' }, { ifMatch: read }).catch((e) => e.status);
    return { stale, title: (await tasks.get(doc._id)).title };
  });
  assert.deepEqual(conditional, { stale: 412, title: 'c: changed' });

  // Logging out ends the subscription in the page.
  await page.evaluate(() => window.pc.auth.logout());
  await until(() => page.evaluate(() => window.sub.endReason === 'logged-out'), 'the subscription to end');
  assert.equal(await page.textContent('#who'), 'logged out');
  assert.deepEqual(problems, []);
  await page.close();
});

test('with localStorage, a login and a logout in one tab are seen by another', async () => {
  const context = await browser.newContext();
  const [a, b] = [await context.newPage(), await context.newPage()];
  for (const page of [a, b]) {
    await page.goto(pages.url);
    await page.evaluate((url) => {
      window.shared = new window.Portico(url, { api: 'api/v1/', tokenStore: 'localStorage' });
      window.seen = [];
      window.shared.auth.onChange((user) => window.seen.push(user ? user.username : null));
    }, server.url);
  }
  await a.evaluate(() => window.shared.auth.login({ username: 'ed', password: 'ed-secret' }));
  await until(() => b.evaluate(() => window.shared.auth.user?.username === 'ed'), 'the other tab to see the login');
  // The other tab uses the session: its calls carry the token.
  const note = await b.evaluate(() => window.shared.collection('notes').create({ text: 'from tab b' }));
  assert.equal(note.ownerId, await a.evaluate(() => window.shared.auth.user.id));
  await a.evaluate(() => window.shared.auth.logout());
  await until(() => b.evaluate(() => window.shared.auth.user === null), 'the other tab to see the logout');
  assert.deepEqual(await b.evaluate(() => window.seen), ['ed', null]);
  await context.close();
});

test('the auto API from another origin: register, a rule-checked insert, a live publication', async () => {
  const page = await browser.newPage();
  await page.goto(pages.url);
  const seen = await page.evaluate(async (url) => {
    const pc = new window.Portico(url, { api: 'api/v1/' });
    const me = await pc.auth.register({ username: 'page-user', password: 'page-secret' });
    const added = [];
    const sub = pc.subscribe('widgets', [], { added: (w) => added.push(w.name) });
    await sub.ready;
    const id = await pc.collectionWrite('widgets').insert({ name: 'from the page', ownerId: me.id });
    while (!sub.get(id)) await new Promise((r) => setTimeout(r, 10));
    const denied = await pc.collectionWrite('widgets').insert({ name: 'not mine', ownerId: 'x' }).catch((e) => e.code);
    sub.stop();
    return { added, denied, count: await pc.collectionWrite('widgets').remove(id) };
  }, server.url);
  assert.deepEqual(seen, { added: ['from the page'], denied: 'access-denied', count: 1 });
  await page.close();
});

test('a page uploads an image with progress (XMLHttpRequest) and shows its thumbnail through fileURL', async () => {
  const page = await browser.newPage();
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(pages.url);
  const image = [...png(300, 200)];
  const shown = await page.evaluate(
    async ([url, bytes]) => {
      const pc = new window.Portico(url, { api: 'api/v1/' });
      await pc.auth.login({ username: 'ed', password: 'ed-secret' });
      const posts = pc.collection('posts');
      const post = await posts.create({ title: 'a photo' });
      const file = new File([new Uint8Array(bytes)], 'photo.png', { type: 'image/png' });
      const progress = [];
      const info = await posts.upload(post, 'cover', file, { onProgress: (sent, total) => progress.push([sent, total]) });
      const img = document.createElement('img');
      img.id = 'cover';
      const loaded = new Promise((ok, fail) => {
        img.onload = ok;
        img.onerror = () => fail(new Error('the image did not load'));
      });
      img.src = await posts.fileURL(post, 'cover', info.name, { thumb: '16x16' });
      document.body.append(img);
      await loaded;
      const full = document.createElement('img');
      full.src = await posts.fileURL(post, 'cover', info.name);
      await full.decode();
      // Without onProgress the page sends the Blob through fetch.
      const plain = await posts.upload(post, 'cover', new Blob([new Uint8Array(bytes)]), { name: 'again.png' });
      return { info, plain, progress, token: pc.auth.token, src: img.src, thumb: [img.naturalWidth, img.naturalHeight], full: [full.naturalWidth, full.naturalHeight] };
    },
    [server.url, image],
  );
  assert.equal(shown.info.name, 'photo.png');
  assert.equal(shown.info.size, image.length);
  assert.deepEqual([shown.plain.name, shown.plain.type, shown.plain.sha256], ['again.png', 'image/png', shown.info.sha256]);
  assert.ok(shown.progress.length >= 1, 'upload progress events in the page');
  assert.deepEqual(shown.progress.at(-1), [image.length, image.length]);
  assert.deepEqual(shown.thumb, [16, 16], 'the thumbnail is shown: naturalWidth > 0');
  assert.deepEqual(shown.full, [300, 200]);
  assert.match(shown.src, /[?&]token=/);
  assert.equal(requests.filter((u) => u.includes(shown.token)).length, 0, 'no URL holds the login token');
  await page.close();
});

test('events per second one subscription applies to its cache in Chromium', async () => {
  const page = await browser.newPage();
  await page.goto(pages.url);
  const n = 100000;
  const runs = [];
  for (let i = 0; i < 3; i++) runs.push(await page.evaluate((count) => window.bench(count), n));
  for (const run of runs) {
    assert.equal(run.events, n);
    assert.equal(run.docs, n / 2);
    assert.equal(run.changedOk, true);
  }
  const rates = runs.map((r) => r.perSecond).sort((a, b) => a - b);
  mkdirSync(join(root, 'test-output'), { recursive: true });
  writeFileSync(join(root, 'test-output/browser-bench.json'), JSON.stringify({ chromium: browser.version(), runs }, null, 2) + '\n');
  console.log(`# ${n} events (half added, half changed) per run, ${runs[0].bytes} bytes of SSE: ${rates.join(', ')} events/s (Chromium ${browser.version()})`);
  // Far below what a subscription must keep up with is a regression.
  assert.ok(rates[1] > 20000, `only ${rates[1]} events/s`);
  await page.close();
});
