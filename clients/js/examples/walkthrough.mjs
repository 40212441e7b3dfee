// The README's walk-through, against `portico serve --config examples/portico.toml` with the
// account `ed` (role editor) made by `portico users add`. Run it from clients/js after
// `npm ci && npm run build`:
//
//   node examples/walkthrough.mjs                      # the server on http://127.0.0.1:3000
//   PORTICO_URL=http://127.0.0.1:4000 node examples/walkthrough.mjs
import { Portico, PorticoError, etagOf } from 'portico-client';

const url = process.env.PORTICO_URL || 'http://127.0.0.1:3000';
const pc = new Portico(url, { api: 'api/v1/' });

// 1. Log in (the routes door's /api/v1/login); the token stays in memory, sent in a header.
pc.auth.onChange((user) => console.log('auth:', user ? `logged in as ${user.username}` : 'logged out'));
await pc.auth.login({ username: 'ed', password: 'ed-secret' });

// 2. Articles: create, list a page, change it only if nobody else did meanwhile.
const articles = pc.collection('articles');
const article = await articles.create({ title: 'Hello from portico-client', body: 'First post' });
const { items, total } = await articles.list({ sort: '-createdAt', limit: 5, fields: 'title' });
console.log(`articles: ${total} in all, newest: ${items[0].title}`);
const read = await articles.get(article._id);
await articles.update(article._id, { title: 'Hello again' }, { ifMatch: read });
try {
  await articles.update(article._id, { title: 'Lost update' }, { ifMatch: read });
} catch (e) {
  if (!(e instanceof PorticoError)) throw e;
  console.log(`stale write refused: ${e.status} ${e.code}: ${e.message}`);
}
console.log('tag of the article read:', etagOf(read) !== undefined);

// 3. Every article, page by page (Link headers), with for await.
let count = 0;
for await (const a of articles.list({ limit: 2 })) count += a._id ? 1 : 0;
console.log(`iterated ${count} articles`);

// 4. The auto API: a second client registers, and writes widgets under the config's rules.
const ann = new Portico(url, { api: 'api/v1/' });
const me = await ann.auth.register({ username: `ann-${Date.now()}`, password: 'ann-secret' });

// 5. Follow the `widgets` publication live (newest first), as ed, while ann inserts.
const sub = pc.subscribe('widgets', [], {
  added: (w) => console.log(`live: added ${w.name}`),
  changed: (w, before) => console.log(`live: changed ${before.name} -> ${w.name}`),
}, { sort: { createdAt: -1 } });
await sub.ready;
const widgets = ann.collectionWrite('widgets');
const gear = await widgets.insert({ name: 'gear', ownerId: me.id, secret: 's3' });
// Renamed once ed has seen it: a rename right away may reach ed with the insert, as one
// `added big gear`.
while (!sub.get(gear)) await new Promise((r) => setTimeout(r, 20));
await widgets.update(gear, { name: 'big gear' });
while (sub.get(gear)?.name !== 'big gear') await new Promise((r) => setTimeout(r, 20));
console.log('cache:', sub.get(gear).name, '(secret hidden:', sub.get(gear).secret === undefined, ')');

// 6. Clean up: ed removes the article, both log out (ed's logout ends ed's subscription).
await articles.remove(article._id);
await pc.auth.logout();
console.log('subscription:', sub.endReason);
await ann.auth.logout();
