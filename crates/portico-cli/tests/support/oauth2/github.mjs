// A small GitHub-compatible OAuth2 provider that the account tests sign in against: the
// parts of GitHub's web application flow and REST API that Portico's `preset = "github"`
// uses, with Node's standard library only.
//
//   node github.mjs CLIENT_ID CLIENT_SECRET REDIRECT_URI
//
// Listens on 127.0.0.1 (a free port) and prints one line,
// {"base_url": "http://127.0.0.1:PORT", "api_url": "http://127.0.0.1:PORT/api/v3"} (the
// layout of GitHub Enterprise Server). One OAuth app: CLIENT_ID, CLIENT_SECRET, and the only
// redirect URI it accepts, REDIRECT_URI.
//
// GET  /login/oauth/authorize      checks client_id, redirect_uri, state and a PKCE S256
//                                  challenge (required here), then 302 to the login page
// GET  /login?request=ID           the login page (a form)
// POST /login?request=ID           `id`, `login`, `email`, `verified` (true|false) stand in for
//                                  a person signing in; 302 back to REDIRECT_URI?code=&state=
// POST /login/oauth/access_token   form: client_id, client_secret, code, redirect_uri,
//                                  code_verifier; as GitHub, mistakes answer 200 with `error`
//                                  (bad_verification_code when the code is unknown, used, older
//                                  than 10 minutes, or the verifier does not match). A code
//                                  works once.
// GET  /api/v3/user                the token's user: {id, login, name, email: null}
// GET  /api/v3/user/emails         [{email, primary, verified, visibility}]: the address given
//                                  at login (primary, verified as given) and a verified
//                                  secondary one; 404 without the user:email scope, as GitHub
// The API wants a User-Agent (403 without, as GitHub) and a token (401 "Bad credentials").
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';

const [clientId, clientSecret, redirectUri] = process.argv.slice(2);
if (!clientId || !clientSecret || !redirectUri) {
  console.error('usage: node github.mjs CLIENT_ID CLIENT_SECRET REDIRECT_URI');
  process.exit(2);
}

const CODE_LIFETIME_MS = 10 * 60 * 1000;
/** request id -> {state, scope, challenge, redirectUri} while at the login page. */
const pending = new Map();
/** code -> {user, scope, challenge, redirectUri, issued}. */
const codes = new Map();
/** access token -> {user, scope}. */
const tokens = new Map();

const token = () => randomBytes(20).toString('hex');

function send(res, status, body, headers = {}) {
  const json = typeof body !== 'string';
  res.writeHead(status, {
    'content-type': json ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8',
    ...headers,
  });
  res.end(json ? JSON.stringify(body) : body);
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

function authorize(url, res) {
  const q = url.searchParams;
  if (q.get('client_id') !== clientId) return send(res, 404, 'unknown client_id');
  if (q.get('redirect_uri') !== redirectUri) {
    return send(res, 400, 'redirect_uri_mismatch: not the redirect URI of this app');
  }
  if (!q.get('state')) return send(res, 400, 'state is required here');
  if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
    return send(res, 400, 'a code_challenge with code_challenge_method=S256 is required here');
  }
  const id = token();
  pending.set(id, {
    state: q.get('state'),
    scope: (q.get('scope') || '').split(/[ ,]+/).filter(Boolean),
    challenge: q.get('code_challenge'),
  });
  return send(res, 302, '', { location: `/login?request=${id}` });
}

async function login(url, req, res) {
  const id = url.searchParams.get('request');
  const request = pending.get(id);
  if (!request) return send(res, 400, 'unknown sign-in request');
  if (req.method === 'GET') {
    return send(res, 200, `<form method="post" action="/login?request=${id}">`
      + '<input name="id"><input name="login"><input name="email"><input name="verified">'
      + '<button>Sign in</button></form>');
  }
  if (req.method !== 'POST') return send(res, 405, 'method not allowed');
  const form = await readForm(req);
  const userId = Number(form.get('id'));
  if (!Number.isSafeInteger(userId) || userId <= 0) return send(res, 400, 'id: a positive number');
  pending.delete(id);
  const code = token();
  codes.set(code, {
    user: {
      id: userId,
      login: form.get('login') || `user${userId}`,
      email: form.get('email') || null,
      verified: form.get('verified') === 'true',
    },
    scope: request.scope,
    challenge: request.challenge,
    issued: Date.now(),
  });
  const back = new URL(redirectUri);
  back.searchParams.set('code', code);
  back.searchParams.set('state', request.state);
  return send(res, 302, '', { location: back.toString() });
}

async function accessToken(req, res) {
  if (req.method !== 'POST') return send(res, 404, { message: 'Not Found' });
  const form = await readForm(req);
  if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret) {
    return send(res, 200, { error: 'incorrect_client_credentials' });
  }
  const code = codes.get(form.get('code') || '');
  // A code is used up by any attempt, as a stolen one must not be tried again and again.
  codes.delete(form.get('code') || '');
  if (!code || Date.now() - code.issued > CODE_LIFETIME_MS) {
    return send(res, 200, { error: 'bad_verification_code' });
  }
  if (form.get('redirect_uri') && form.get('redirect_uri') !== redirectUri) {
    return send(res, 200, { error: 'redirect_uri_mismatch' });
  }
  const verifier = form.get('code_verifier') || '';
  const hashed = createHash('sha256').update(verifier).digest('base64url');
  if (hashed !== code.challenge) {
    return send(res, 200, {
      error: 'bad_verification_code',
      error_description: 'The code_verifier does not match the code_challenge.',
    });
  }
  const access = `gho_${token()}`;
  tokens.set(access, { user: code.user, scope: code.scope });
  return send(res, 200, { access_token: access, token_type: 'bearer', scope: code.scope.join(',') });
}

function api(url, req, res) {
  if (!req.headers['user-agent']) {
    return send(res, 403, { message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header' });
  }
  const [kind, value] = (req.headers.authorization || '').split(' ');
  const grant = /^(bearer|token)$/i.test(kind || '') ? tokens.get(value) : undefined;
  if (!grant) return send(res, 401, { message: 'Bad credentials' });
  const { user } = grant;
  if (url.pathname === '/api/v3/user') {
    return send(res, 200, { login: user.login, id: user.id, name: user.login, email: null });
  }
  if (url.pathname === '/api/v3/user/emails') {
    if (!grant.scope.includes('user:email') && !grant.scope.includes('user')) {
      return send(res, 404, { message: 'Not Found' });
    }
    const emails = [{
      email: `${user.login}@secondary.example.net`, primary: false, verified: true, visibility: null,
    }];
    if (user.email) {
      emails.push({ email: user.email, primary: true, verified: user.verified, visibility: 'private' });
    }
    return send(res, 200, emails);
  }
  return send(res, 404, { message: 'Not Found' });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  const route = url.pathname;
  const done = (p) => Promise.resolve(p).catch((e) => {
    console.error(e);
    if (!res.headersSent) send(res, 500, { message: 'server error' });
  });
  if (route === '/login/oauth/authorize' && req.method === 'GET') return done(authorize(url, res));
  if (route === '/login') return done(login(url, req, res));
  if (route === '/login/oauth/access_token') return done(accessToken(req, res));
  if (route.startsWith('/api/v3/') && req.method === 'GET') return done(api(url, req, res));
  return send(res, 404, { message: 'Not Found' });
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const base = `http://127.0.0.1:${server.address().port}`;
process.stdout.write(`${JSON.stringify({ base_url: base, api_url: `${base}/api/v3` })}\n`);
// The test closes stdin when it is done (or dies): stop then.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
