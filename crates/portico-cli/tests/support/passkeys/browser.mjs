// Passkeys in headless Chromium (Debian's package, never a downloaded browser) with its virtual
// authenticator (DevTools protocol: WebAuthn.enable, WebAuthn.addVirtualAuthenticator: ctap2,
// internal transport, resident keys, user verification), driven by playwright-core from the
// admin page's pinned install. Started by tests/integration/passkeys.rs.
//
// A small server on http://localhost:PAGE_PORT (a secure context; the configured origin) serves
// the page and passes /auth/ and /api/ on to `portico serve` at PORTICO_URL, so the page calls
// the server from its own origin. The page logs in with a password, registers a passkey
// (navigator.credentials.create with the begin's options), logs out, and logs in without a
// username (navigator.credentials.get); its token must work on /api/. The same assertion
// replayed to finish, and a removed passkey, must be refused. Prints one JSON line of what it
// saw; the first failure exits 1 with its message.
import { createServer, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../../../../portico-admin/tests/browser/package.json'));
const { chromium } = require('playwright-core');

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const PORTICO = new URL(env('PORTICO_URL'));
const PAGE_PORT = Number(env('PAGE_PORT'));
const USER = env('PASSKEY_USER');
const PASSWORD = env('PASSKEY_PASSWORD');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// The page: helpers a real page would have (base64url <-> ArrayBuffer, JSON calls).
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>passkeys</title></head>
<body><p id="who">logged out</p><script>
const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
  .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const bytes = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
async function call(method, path, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers['x-auth-token'] = token;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}
window.token = null;
window.passwordLogin = async (username, password) => {
  const r = await call('POST', '/api/login', { username, password });
  window.token = r.body?.data?.authToken ?? null;
  document.getElementById('who').textContent = window.token ? 'logged in as ' + username : 'logged out';
  return r.status;
};
window.logout = () => { window.token = null; document.getElementById('who').textContent = 'logged out'; };
window.registerPasskey = async (name) => {
  const begin = await call('POST', '/auth/passkey/register/begin', { name }, window.token);
  if (begin.status !== 200) return begin;
  const pk = begin.body.publicKey;
  const options = { ...pk, challenge: bytes(pk.challenge), user: { ...pk.user, id: bytes(pk.user.id) },
    excludeCredentials: (pk.excludeCredentials ?? []).map((c) => ({ ...c, id: bytes(c.id) })) };
  const cred = await navigator.credentials.create({ publicKey: options });
  const credential = { id: cred.id, rawId: b64(cred.rawId), type: cred.type,
    response: { clientDataJSON: b64(cred.response.clientDataJSON), attestationObject: b64(cred.response.attestationObject),
      transports: cred.response.getTransports() },
    clientExtensionResults: cred.getClientExtensionResults() };
  return call('POST', '/auth/passkey/register/finish', { ceremony: begin.body.ceremony, credential }, window.token);
};
window.passkeyLogin = async () => {
  const begin = await call('POST', '/auth/passkey/login/begin');
  if (begin.status !== 200) return { begin };
  const pk = begin.body.publicKey;
  const options = { ...pk, challenge: bytes(pk.challenge),
    allowCredentials: (pk.allowCredentials ?? []).map((c) => ({ ...c, id: bytes(c.id) })) };
  const cred = await navigator.credentials.get({ publicKey: options });
  const credential = { id: cred.id, rawId: b64(cred.rawId), type: cred.type,
    response: { clientDataJSON: b64(cred.response.clientDataJSON), authenticatorData: b64(cred.response.authenticatorData),
      signature: b64(cred.response.signature), userHandle: cred.response.userHandle ? b64(cred.response.userHandle) : null },
    clientExtensionResults: cred.getClientExtensionResults() };
  const finish = await call('POST', '/auth/passkey/login/finish', { ceremony: begin.body.ceremony, credential });
  if (finish.status === 200) {
    window.token = finish.body.token;
    document.getElementById('who').textContent = 'logged in with a passkey';
  }
  return { begin: begin.body, credential, finish };
};
window.call = call;
</script></body></html>`;

/** The page at / and everything under /auth/ and /api/ passed on to portico. */
function pageServer() {
  const http = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      return;
    }
    if (!path.startsWith('/auth/') && !path.startsWith('/api/')) {
      res.writeHead(404).end();
      return;
    }
    const headers = { ...req.headers, host: PORTICO.host };
    const upstream = httpRequest({ host: PORTICO.hostname, port: PORTICO.port, method: req.method, path: req.url, headers }, (reply) => {
      res.writeHead(reply.statusCode, reply.headers);
      reply.pipe(res);
    });
    upstream.on('error', (e) => res.writeHead(502).end(String(e)));
    req.pipe(upstream);
  });
  return new Promise((ok, fail) => {
    http.on('error', fail);
    http.listen(PAGE_PORT, '127.0.0.1', () => ok(http));
  });
}

const check = (ok, what) => {
  if (!ok) throw new Error(what);
};

const pages = await pageServer();
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const seen = {};
try {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await page.goto(`http://localhost:${PAGE_PORT}/`);
  seen.secure = await page.evaluate(() => window.isSecureContext);
  check(seen.secure, 'the page is not a secure context');

  seen.passwordLogin = await page.evaluate(([u, p]) => window.passwordLogin(u, p), [USER, PASSWORD]);
  check(seen.passwordLogin === 200, `password login: ${seen.passwordLogin}`);
  const registered = await page.evaluate(() => window.registerPasskey('this browser'));
  seen.registered = registered;
  check(registered.status === 200 && registered.body.name === 'this browser', `register: ${JSON.stringify(registered)}`);
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  seen.residentOnAuthenticator = credentials.filter((c) => c.isResidentCredential).length;
  check(seen.residentOnAuthenticator === 1, `resident credentials: ${JSON.stringify(credentials)}`);

  await page.evaluate(() => window.logout());
  const login = await page.evaluate(() => window.passkeyLogin());
  seen.loginStatus = login.finish?.status;
  seen.allowCredentials = login.begin?.publicKey?.allowCredentials ?? [];
  check(login.finish?.status === 200, `passkey login: ${JSON.stringify(login)}`);
  seen.who = await page.textContent('#who');
  seen.userId = login.finish.body.id;
  const api = await page.evaluate(() => window.call('GET', '/api/notes', undefined, window.token));
  seen.apiStatus = api.status;
  check(api.status === 200, `the passkey login's token on /api/notes: ${JSON.stringify(api)}`);

  // The same assertion, replayed to finish.
  const replay = await page.evaluate(([ceremony, credential]) => window.call('POST', '/auth/passkey/login/finish', { ceremony, credential }), [login.begin.ceremony, login.credential]);
  seen.replayStatus = replay.status;
  seen.replayError = replay.body?.error;
  check(replay.status === 400, `replay: ${JSON.stringify(replay)}`);
  // The same assertion with a fresh ceremony (another challenge).
  const fresh = await page.evaluate(() => window.call('POST', '/auth/passkey/login/begin'));
  const replay2 = await page.evaluate(([ceremony, credential]) => window.call('POST', '/auth/passkey/login/finish', { ceremony, credential }), [fresh.body.ceremony, login.credential]);
  seen.replayFreshStatus = replay2.status;
  check(replay2.status === 401, `replay with a fresh ceremony: ${JSON.stringify(replay2)}`);

  // Removed: the authenticator still has it, the server refuses it.
  const list = await page.evaluate(() => window.call('GET', '/auth/passkeys', undefined, window.token));
  seen.listed = list.body?.passkeys?.map((p) => p.name);
  const removed = await page.evaluate((id) => window.call('DELETE', `/auth/passkeys/${id}`, undefined, window.token), registered.body.id);
  seen.removeStatus = removed.status;
  check(removed.status === 200, `remove: ${JSON.stringify(removed)}`);
  await page.evaluate(() => window.logout());
  const again = await page.evaluate(() => window.passkeyLogin());
  seen.removedStatus = again.finish?.status;
  seen.removedError = again.finish?.body?.error;
  check(again.finish?.status === 401, `a removed passkey: ${JSON.stringify(again)}`);
  seen.problems = problems;
  check(problems.length === 0, `page errors: ${problems.join('; ')}`);
} finally {
  await browser.close();
  await new Promise((r) => pages.close(r));
}
console.log(JSON.stringify(seen));
