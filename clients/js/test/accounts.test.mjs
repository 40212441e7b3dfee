// The account lifecycle through the client against the real `portico serve`, with its mail sent
// to a real SMTP server (python3's aiosmtpd) and read from there: sign-up and email
// verification, a password reset that ends every session, an email change, two-factor codes
// (computed here, RFC 6238), sign-in by mailed code and by mailed link, guests and their
// upgrade, and sign-in with a real OpenID Connect provider (npm's oidc-provider, the one the
// server's own tests use) followed redirect by redirect as a browser would.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Portico, PorticoError } from '../dist/index.js';
import { freePort, linkToken, serve, smtpSink, workspace } from './server.mjs';

const APP = 'http://app.test';
const SECRET = 'local-secret';
const providerDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../../crates/portico-cli/tests/support/oidc');

let sink;
let provider;
let ws;
let server;
const client = () => new Portico(server.url, { api: 'api/v1/' });

/** The TOTP code of `secret` (base32) for the 30-second step `offset` steps from now (RFC 6238, SHA-1, 6 digits). */
function totp(secret, offset = 0) {
  let bits = '';
  for (const c of secret.replace(/=+$/, '')) bits += 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(c).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30000) + offset));
  const mac = createHmac('sha1', key).update(counter).digest();
  const at = mac[19] & 0xf;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1e6).padStart(6, '0');
}

/** The OpenID Connect provider, started with its one client's redirect URI; resolves with its issuer. */
async function startProvider(redirectUri) {
  if (!existsSync(resolve(providerDir, 'node_modules/oidc-provider'))) {
    throw new Error(`the OpenID Connect test needs oidc-provider: run \`npm ci\` in ${providerDir} (as ci/test.sh does)`);
  }
  const child = spawn(process.execPath, [resolve(providerDir, 'provider.mjs'), 'portico', SECRET, redirectUri], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((ok, fail) => {
    child.stdout.once('data', (c) => ok(String(c)));
    child.on('exit', (code) => fail(new Error(`the OpenID Connect provider exited with ${code}`)));
  });
  return { issuer: JSON.parse(line).issuer, stop: () => child.stdin.end() };
}

const githubScript = resolve(dirname(fileURLToPath(import.meta.url)), '../../../crates/portico-cli/tests/support/oauth2/github.mjs');
let github;

/** The GitHub-compatible OAuth2 provider of the server's tests (Node's standard library only). */
async function startGitHub(redirectUri) {
  const child = spawn(process.execPath, [githubScript, 'gh-client', SECRET, redirectUri], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((ok, fail) => {
    child.stdout.once('data', (c) => ok(String(c)));
    child.on('exit', (code) => fail(new Error(`the GitHub-compatible provider exited with ${code}`)));
  });
  return { ...JSON.parse(line), stop: () => child.kill() };
}

/** A browser driven by hand: cookies kept per origin, redirects not followed but returned. */
function browser() {
  const jars = new Map();
  return async function go(url, form) {
    const origin = new URL(url).origin;
    const jar = jars.get(origin) ?? new Map();
    jars.set(origin, jar);
    const headers = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method: form ? 'POST' : 'GET', headers, body: form && new URLSearchParams(form), redirect: 'manual' });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const i = pair.indexOf('=');
      jar.set(pair.slice(0, i).trim(), pair.slice(i + 1));
    }
    await res.arrayBuffer();
    const location = res.headers.get('location');
    return { status: res.status, location: location && new URL(location, url).href };
  };
}

before(async () => {
  sink = await smtpSink();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  provider = await startProvider(`${base}/auth/oidc/local/callback`);
  github = await startGitHub(`${base}/auth/oauth2/github/callback`);
  ws = workspace(`
database = "sqlite:DB"

[[api]]
api_path = "api/"
version = "v1"
use_default_auth = true
auth_failure_delay_ms = 0
login_rate_limit = { attempts = 50, per_seconds = 10 }

[[api.collection]]
name = "notes"
owner_field = "ownerId"
auth_required = true

[auto]
auth_failure_delay_ms = 0
allow_register = true

[accounts]
app_url = "${APP}"
server_url = "${base}"
allow_guests = true
mail_rate_limit_per_address = { attempts = 100, per_seconds = 60 }
mail_rate_limit_per_email = { attempts = 100, per_seconds = 60 }

[[accounts.oidc]]
name = "local"
issuer = "${provider.issuer}"
client_id = "portico"
client_secret_env = "OIDC_LOCAL_SECRET"

[[accounts.oauth2]]
preset = "github"
client_id = "gh-client"
client_secret_env = "GH_SECRET"
base_url = "${github.base_url}"
api_url = "${github.api_url}"

[email]
smtp_url = "${sink.url}"
from = "Portico <no-reply@example.com>"
retry_max_secs = 1
`);
  server = await serve(ws, `127.0.0.1:${port}`, { OIDC_LOCAL_SECRET: SECRET, GH_SECRET: SECRET });
});
after(async () => {
  await server?.stop();
  ws?.remove();
  provider?.stop();
  github?.stop();
  sink?.stop();
});

test('the sign-in methods the server has on', async () => {
  const methods = await client().auth.methods();
  assert.equal(methods.password, true);
  assert.equal(methods.passwordReset, true);
  assert.equal(methods.emailVerification, true);
  assert.equal(methods.totp, true);
  assert.equal(methods.emailCode, true);
  assert.equal(methods.guests, true);
  assert.deepEqual(methods.oidc, ['local']);
});

test('sign-up, email verification, a password reset that ends every session, an email change', async () => {
  // Sign-up with an address: a verification mail; a second request voids its link.
  const ann = client();
  const me = await ann.auth.register({ username: 'ann', email: 'ann@example.com', password: 'first-password' });
  assert.equal(ann.auth.user.id, me.id);
  const first = linkToken(await sink.mail('ann@example.com', 1), 'verify-email');
  await ann.auth.requestVerification('ann@example.com');
  const second = linkToken(await sink.mail('ann@example.com', 2), 'verify-email');
  assert.deepEqual(await client().auth.verifyEmail(second), { email: 'ann@example.com' });
  for (const token of [first, second]) {
    const used = await client().auth.verifyEmail(token).catch((e) => e);
    assert.ok(used instanceof PorticoError);
    assert.deepEqual([used.status, used.error, used.code], [400, 'invalid-token', 'invalid-token']);
    assert.ok(used.reason.length > 0);
  }

  // A reset: the mailed link's token and a new password; every session of the account ends.
  const other = client();
  await other.auth.login({ username: 'ann', password: 'first-password' });
  await other.collection('notes').create({ text: 'before the reset' });
  await client().auth.requestPasswordReset('ann@example.com');
  const reset = await sink.mail('ann@example.com', 3);
  assert.match(reset.subject, /password/i);
  await client().auth.resetPassword(linkToken(reset, 'reset-password'), 'second-password');
  await assert.rejects(other.collection('notes').list(), (e) => e.status === 401);
  assert.equal(other.auth.user, null, 'the ended session is forgotten');
  await assert.rejects(client().auth.login({ username: 'ann', password: 'first-password' }), (e) => e.status === 401);
  const back = client();
  await back.auth.login({ email: 'ann@example.com', password: 'second-password' });
  assert.equal(back.auth.user.id, me.id);
  assert.equal((await back.collection('notes').list()).items[0].text, 'before the reset');
  // A reset for an address nobody has answers the same.
  await client().auth.requestPasswordReset('nobody@example.com');

  // An email change: the link goes to the new address.
  await back.auth.requestEmailChange('ann@new.example');
  const change = await sink.mail('ann@new.example', 1);
  assert.deepEqual(await client().auth.confirmEmailChange(linkToken(change, 'confirm-email-change')), { email: 'ann@new.example' });
  await client().auth.login({ email: 'ann@new.example', password: 'second-password' });
  await assert.rejects(client().auth.login({ email: 'ann@example.com', password: 'second-password' }), (e) => e.status === 401);
  const anonymous = await client().auth.requestEmailChange('x@example.com').catch((e) => e);
  assert.equal(anonymous.status, 401);

  // Logging out everywhere from one device ends the others too.
  const phone = client();
  await phone.auth.login({ email: 'ann@new.example', password: 'second-password' });
  assert.ok((await back.auth.logoutEverywhere()) >= 2);
  assert.equal(back.auth.user, null, 'this session is forgotten at once');
  await assert.rejects(phone.collection('notes').list(), (e) => e.status === 401);
  assert.equal(phone.auth.user, null, 'the ended session is forgotten');
  assert.equal(await client().auth.logoutEverywhere(), 0, 'without a login there is nothing to end');
});

test('two-factor codes: set up, enable, a login with a code, off with a recovery code', async () => {
  const tom = client();
  await tom.auth.register({ username: 'tom', password: 'tom-password' });
  const { secret, uri } = await tom.auth.setupTotp();
  assert.match(uri, /^otpauth:\/\/totp\//);
  assert.ok(uri.includes(secret));
  const wrong = await tom.auth.enableTotp(totp(secret) === '000000' ? '111111' : '000000').catch((e) => e);
  assert.equal(wrong.status, 400);
  const { recoveryCodes } = await tom.auth.enableTotp(totp(secret));
  assert.equal(recoveryCodes.length, 8);

  const without = await client().auth.login({ username: 'tom', password: 'tom-password' }).catch((e) => e);
  assert.equal(without.status, 401);
  const viaAuto = await new Portico(server.url, { api: 'api/v1/', loginVia: 'auto' }).auth.login({ username: 'tom', password: 'tom-password' }).catch((e) => e);
  assert.deepEqual([viaAuto.status, viaAuto.error], [401, 'totp-required']);
  const withCode = client();
  // The next step's code: the current one may have been used by enableTotp.
  await withCode.auth.login({ username: 'tom', password: 'tom-password', totp: totp(secret, 1) });
  assert.equal(withCode.auth.user.username, 'tom');
  const replayed = await client().auth.login({ username: 'tom', password: 'tom-password', totp: totp(secret, 1) }).catch((e) => e);
  assert.equal(replayed.status, 401, 'a code works once');

  await withCode.auth.disableTotp(recoveryCodes[0]);
  await client().auth.login({ username: 'tom', password: 'tom-password' });
});

test('sign-in by a mailed code, and by the mailed link', async () => {
  const owner = client();
  const me = await owner.auth.register({ username: 'cody', email: 'cody@example.com', password: 'cody-password' });
  await client().auth.requestEmailCode('cody@example.com');
  const mail = await sink.mail('cody@example.com', 2);
  const code = /code: (\d{6})/.exec(mail.subject)?.[1];
  assert.ok(code, mail.subject);
  const bad = await client().auth.loginWithEmailCode({ email: 'cody@example.com', code: code === '000000' ? '000001' : '000000' }).catch((e) => e);
  assert.deepEqual([bad.status, bad.error], [400, 'invalid-code']);
  const byCode = client();
  const user = await byCode.auth.loginWithEmailCode({ email: 'cody@example.com', code });
  assert.equal(user.id, me.id);
  assert.equal(typeof user.tokenExpires, 'string');
  await byCode.collection('notes').create({ text: 'signed in by code' });

  await client().auth.requestEmailCode('cody@example.com');
  const byLink = client();
  await byLink.auth.loginWithEmailCode({ token: linkToken(await sink.mail('cody@example.com', 3), 'email-code') });
  assert.equal(byLink.auth.user.id, me.id);
  assert.equal((await byLink.collection('notes').list()).items[0].text, 'signed in by code');
});

test('a guest writes, then upgrades to an account that keeps its id and documents', async () => {
  const pc = client();
  const changes = [];
  pc.auth.onChange((u) => changes.push(u?.guest));
  const guest = await pc.auth.loginAsGuest();
  assert.equal(guest.guest, true);
  const note = await pc.collection('notes').create({ text: 'a draft' });
  assert.equal(note.ownerId, guest.id);
  const upgraded = await pc.auth.upgradeGuest({ username: 'gina', password: 'gina-password' });
  assert.deepEqual({ id: upgraded.id, username: upgraded.username, guest: upgraded.guest }, { id: guest.id, username: 'gina', guest: false });
  assert.equal(pc.auth.user.guest, false);
  const again = await pc.auth.upgradeGuest({ username: 'gina2', password: 'gina-password' }).catch((e) => e);
  assert.equal(again.status, 400, 'no longer a guest');
  const gina = client();
  await gina.auth.login({ username: 'gina', password: 'gina-password' });
  assert.equal(gina.auth.user.id, guest.id);
  assert.deepEqual((await gina.collection('notes').list()).items.map((n) => n.text), ['a draft']);
  assert.deepEqual(changes, [true, false]);
});

test('OpenID Connect: the sign-in URL, the provider round trip, the code exchange', async () => {
  const pc = client();
  const start = pc.auth.oidcURL('local');
  assert.equal(start, `${server.url}/auth/oidc/local`);
  const go = browser();
  const toProvider = await go(start);
  assert.equal(toProvider.status, 302);
  const authorize = new URL(toProvider.location);
  assert.equal(authorize.origin, provider.issuer);
  assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(authorize.searchParams.get('client_id'), 'portico');
  const toLogin = await go(toProvider.location);
  const signedIn = await go(toLogin.location, { sub: 'olga-1', email: 'olga@example.com', email_verified: 'true' });
  const resume = await go(signedIn.location);
  assert.ok(resume.location.startsWith(`${server.url}/auth/oidc/local/callback?`), resume.location);
  const toApp = await go(resume.location);
  assert.equal(toApp.status, 302);
  const landing = new URL(toApp.location);
  assert.equal(landing.origin + landing.pathname, `${APP}/oidc`);
  const code = landing.searchParams.get('code');
  assert.ok(code);

  // The application's page at {app_url}/oidc trades the code.
  const user = await pc.auth.loginWithOidc(code);
  assert.equal(pc.auth.user.id, user.id);
  assert.ok(!toApp.location.includes(pc.auth.token), 'no login token in a URL');
  await pc.collection('notes').create({ text: 'from a provider sign-in' });
  assert.equal((await pc.collection('notes').list()).total, 1);
  const reused = await client().auth.loginWithOidc(code).catch((e) => e);
  assert.deepEqual([reused.status, reused.error], [400, 'invalid-code']);
});

test('OAuth2 (GitHub): the sign-in URL, the provider round trip, the code exchange', async () => {
  const pc = client();
  const start = pc.auth.oauth2URL('github');
  assert.equal(start, `${server.url}/auth/oauth2/github`);
  assert.deepEqual((await pc.auth.methods()).oauth2, ['github']);
  const go = browser();
  const toProvider = await go(start);
  assert.equal(toProvider.status, 302);
  const authorize = new URL(toProvider.location);
  assert.equal(authorize.origin, github.base_url);
  assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
  const toLogin = await go(toProvider.location);
  const back = await go(toLogin.location, { id: '4242', login: 'octo', email: 'octo@example.com', verified: 'true' });
  assert.ok(back.location.startsWith(`${server.url}/auth/oauth2/github/callback?`), back.location);
  const toApp = await go(back.location);
  const landing = new URL(toApp.location);
  assert.equal(landing.origin + landing.pathname, `${APP}/oauth2`);
  const code = landing.searchParams.get('code');
  assert.ok(code, toApp.location);

  // The application's page at {app_url}/oauth2 trades the code.
  const user = await pc.auth.loginWithOAuth2(code);
  assert.equal(pc.auth.user.id, user.id);
  await pc.collection('notes').create({ text: 'from GitHub' });
  assert.equal((await pc.collection('notes').list()).items[0].text, 'from GitHub');
  const reused = await client().auth.loginWithOAuth2(code).catch((e) => e);
  assert.equal(reused.status, 400);
});
