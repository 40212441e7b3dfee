// Passkeys through the client in headless Chromium, with the DevTools protocol's virtual
// authenticator (CTAP2, internal, resident keys, user verification): a page of another origin
// (http://localhost:PORT, which rp_id "localhost" covers) logs in with a password, registers a
// passkey with pc.auth.passkey.register(), logs out, logs in with pc.auth.passkey.login() with
// and without a username, lists and removes the passkey, which then no longer logs in.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { serve, workspace } from './server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let ws;
let server;
let pages;
let browser;

function pageServer() {
  const http = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>passkeys</title><p>passkeys</p>');
      return;
    }
    const file = path.startsWith('/dist/') ? join(root, normalize(path)) : null;
    if (!file || !file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': extname(file) === '.js' ? 'text/javascript' : 'application/json' });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => http.listen(0, '127.0.0.1', () => ok({ http, origin: `http://localhost:${http.address().port}` })));
}

before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`the passkey test needs Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM`);
  pages = await pageServer();
  ws = workspace(`
[[api]]
api_path = "api/"
use_default_auth = true

[[api.collection]]
name = "notes"
owner_field = "ownerId"

[accounts]
rp_id = "localhost"
rp_name = "Portico test"
origins = ["${pages.origin}"]
`);
  ws.addUser('ann', 'ann-password-1');
  ws.addUser('bob', 'bob-password-1');
  server = await serve(ws);
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

test('a page registers a passkey and logs in with it through the client', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(pages.origin + '/');
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });

  const seen = await page.evaluate(async (url) => {
    const { Portico } = await import('/dist/index.js');
    const out = {};
    const failure = (e) => ({ status: e.status, error: e.error });
    const pc = new Portico(url, { api: 'api/' });
    out.methods = (await pc.auth.methods()).passkeys;
    await pc.auth.login({ username: 'ann', password: 'ann-password-1' });
    const annId = pc.auth.user.id;
    await pc.collection('notes').create({ text: 'ann note' });
    out.registered = await pc.auth.passkey.register('laptop');
    await pc.auth.logout();

    // Username-less: the device offers ann's passkey; no password, no TOTP.
    const back = await pc.auth.passkey.login();
    out.sameAccount = back.id === annId;
    out.notes = (await pc.collection('notes').list()).items.map((n) => n.text);
    out.listed = await pc.auth.passkey.list();
    await pc.auth.logout();

    // Naming the account: ann's passkey logs ann in; naming bob, it does not.
    out.named = (await pc.auth.passkey.login({ username: 'ann' })).id === annId;
    await pc.auth.logout();
    out.otherNamed = await pc.auth.passkey.login({ username: 'bob' }).then(() => 'logged in', failure);

    // Removed: it no longer logs in.
    await pc.auth.login({ username: 'ann', password: 'ann-password-1' });
    await pc.auth.passkey.remove(out.registered.id);
    out.listedAfter = await pc.auth.passkey.list();
    await pc.auth.logout();
    out.removed = await pc.auth.passkey.login().then(() => 'logged in', failure);
    out.unknownOption = await pc.auth.passkey.login({ user: 'ann' }).then(() => 'accepted', (e) => e.error);
    return out;
  }, server.url);

  assert.deepEqual(problems, []);
  assert.equal(seen.methods, true);
  assert.equal(seen.registered.name, 'laptop');
  assert.ok(seen.registered.id, JSON.stringify(seen));
  assert.equal(seen.sameAccount, true);
  assert.deepEqual(seen.notes, ['ann note']);
  assert.deepEqual(seen.listed.map((p) => p.name), ['laptop']);
  assert.ok(seen.listed[0].lastUsed, 'the login noted its use');
  assert.equal(seen.named, true);
  assert.deepEqual(seen.otherNamed, { status: 401, error: 'passkey-refused' });
  assert.deepEqual(seen.listedAfter, []);
  assert.deepEqual(seen.removed, { status: 401, error: 'passkey-refused' });
  assert.equal(seen.unknownOption, 'unknown-option');
});
