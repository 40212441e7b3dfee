// A real OpenID Connect provider (npm's oidc-provider) that the account tests sign in against.
//
//   node provider.mjs CLIENT_ID CLIENT_SECRET REDIRECT_URI
//
// Listens on 127.0.0.1 (a free port) and prints one line, {"issuer": "http://127.0.0.1:PORT"}.
// One confidential client (client_secret_basic, authorization code with PKCE S256) whose only
// redirect URI is REDIRECT_URI. The ID tokens are signed RS256 with a key made at start.
//
// The login step stands in for a person typing a password: GET /interaction/UID shows a form,
// and POST /interaction/UID with `sub`, `email`, `email_verified` (true|false) signs in as the
// identity it names and grants the scopes asked for. With `mischief=nonce` the provider then
// puts a nonce other than the one asked for in that identity's ID tokens (a provider that
// replays or mixes up ID tokens), which the relying party must refuse.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import Provider from 'oidc-provider';

const [clientId, clientSecret, redirectUri] = process.argv.slice(2);
if (!clientId || !clientSecret || !redirectUri) {
  console.error('usage: node provider.mjs CLIENT_ID CLIENT_SECRET REDIRECT_URI');
  process.exit(2);
}

/** sub -> {email, email_verified, mischief} as the login form said. */
const identities = new Map();

const server = http.createServer();
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingKey] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  findAccount(ctx, sub) {
    const identity = identities.get(sub);
    if (!identity) return undefined;
    return {
      accountId: sub,
      claims: () => ({ sub, email: identity.email, email_verified: identity.email_verified }),
    };
  },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: [randomUUID()] },
  pkce: { required: () => true },
});

const payload = provider.IdToken.prototype.payload;
provider.IdToken.prototype.payload = async function mischievousPayload() {
  const claims = await payload.call(this);
  if (identities.get(claims.sub)?.mischief === 'nonce' && claims.nonce) {
    claims.nonce = `${claims.nonce}-not-yours`;
  }
  return claims;
};

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== match[1]) ctx.throw(400, 'interaction mismatch');
  if (ctx.method === 'GET') {
    ctx.type = 'html';
    ctx.body = `<form method="post" action="/interaction/${details.uid}">`
      + '<input name="sub"><input name="email"><input name="email_verified"><button>Sign in</button></form>';
    return undefined;
  }
  if (ctx.method !== 'POST') ctx.throw(405);
  const form = await readForm(ctx.req);
  const sub = form.get('sub');
  if (!sub) ctx.throw(400, 'sub is required');
  identities.set(sub, {
    email: form.get('email') || undefined,
    email_verified: form.get('email_verified') === 'true',
    mischief: form.get('mischief') || undefined,
  });
  const grant = new provider.Grant({ accountId: sub, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  ctx.respond = false;
  await provider.interactionFinished(
    ctx.req,
    ctx.res,
    { login: { accountId: sub }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
  return undefined;
});

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
// The test closes stdin when it is done (or dies): stop then.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
