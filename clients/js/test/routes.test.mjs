// The routes door through the client, against the real `portico serve`: login and logout, the
// token stores, lists and paging, reads and writes, conditional writes, batches, and errors.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { Portico, PorticoError, etagOf } from '../dist/index.js';
import { CONFIG, serve, workspace } from './server.mjs';

let ws;
let server;
let edId;
const client = (options = {}) => new Portico(server.url, { api: 'api/v1/', ...options });
async function loggedIn(username = 'ed', password = 'ed-secret') {
  const pc = client();
  await pc.auth.login({ username, password });
  return pc;
}
/** Fails unless `promise` rejects with a PorticoError of this status and code. */
async function refused(promise, status, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof PorticoError, `not a PorticoError: ${e}`);
    assert.equal(e.status, status, e.message);
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.length > 0);
    return true;
  });
}

before(async () => {
  ws = workspace(CONFIG);
  edId = ws.addUser('ed', 'ed-secret', 'editor');
  ws.addUser('bob', 'bob-secret');
  server = await serve(ws);
});
after(async () => {
  await server?.stop();
  ws?.remove();
});

describe('auth', () => {
  test('login, user, onChange and logout; the token is refused after logout', async () => {
    const pc = client();
    const seen = [];
    const stop = pc.auth.onChange((user) => seen.push(user && user.id));
    assert.equal(pc.auth.user, null);
    const user = await pc.auth.login({ username: 'ed', password: 'ed-secret' });
    assert.equal(user.id, edId);
    assert.deepEqual(pc.auth.user, { id: edId, username: 'ed' });
    assert.equal(pc.auth.token.length, 43);
    const token = pc.auth.token;
    await pc.collection('notes').create({ text: 'mine' });
    await pc.auth.logout();
    assert.equal(pc.auth.user, null);
    assert.deepEqual(seen, [edId, null]);
    stop();
    // The server ended that session: the old token is refused.
    const res = await fetch(server.url + '/api/v1/notes', { headers: { 'X-Auth-Token': token } });
    assert.equal(res.status, 401);
    await refused(pc.collection('notes').create({ text: 'no' }), 401, 'error');
  });

  test('a wrong password is a 401 PorticoError and logs no one in', async () => {
    const pc = client();
    await refused(pc.auth.login({ username: 'ed', password: 'wrong' }), 401, 'error');
    await refused(pc.auth.login({ email: 'nobody@example.com', password: 'x' }), 401, 'error');
    assert.equal(pc.auth.user, null);
  });

  test('a totp field is sent with the login (the server ignores it until it asks for codes)', async () => {
    const pc = client();
    let sent;
    const spy = (url, init) => {
      if (String(url).endsWith('/login')) sent = JSON.parse(init.body);
      return fetch(url, init);
    };
    const spied = new Portico(server.url, { api: 'api/v1/', fetch: spy });
    await spied.auth.login({ username: 'bob', password: 'bob-secret', totp: '123456' });
    assert.deepEqual(sent, { password: 'bob-secret', username: 'bob', totp: '123456' });
    assert.ok(spied.auth.user);
    assert.equal(pc.auth.user, null);
  });

  test('a custom token store keeps the session, and a new client picks it up', async () => {
    const kept = new Map();
    const store = { get: (k) => kept.get(k) ?? null, set: (k, v) => kept.set(k, v), remove: (k) => kept.delete(k) };
    const first = client({ tokenStore: store, tokenKey: 'k' });
    await first.auth.login({ username: 'ed', password: 'ed-secret' });
    assert.equal(JSON.parse(kept.get('k')).token, first.auth.token);
    const second = client({ tokenStore: store, tokenKey: 'k' });
    assert.equal(second.auth.user.id, edId);
    const note = await second.collection('notes').create({ text: 'from the second client' });
    assert.equal(note.ownerId, edId);
    await second.auth.logout();
    assert.equal(kept.has('k'), false);
  });

  test('a 401 on a call that sent the token ends the session here too', async () => {
    const a = await loggedIn();
    const b = client();
    const changes = [];
    // b holds the same session, then a logs it out on the server.
    const kept = new Map();
    const store = { get: (k) => kept.get(k), set: (k, v) => kept.set(k, v), remove: (k) => kept.delete(k) };
    store.set('portico.auth', JSON.stringify({ token: a.auth.token, user: a.auth.user }));
    const c = client({ tokenStore: store });
    c.auth.onChange((u) => changes.push(u));
    await a.auth.logout();
    await refused(c.collection('notes').list(), 401, 'error');
    assert.equal(c.auth.user, null);
    assert.deepEqual(changes, [null]);
    assert.equal(b.auth.user, null);
  });

  test('localStorage and sessionStorage stores need those globals', () => {
    assert.throws(() => client({ tokenStore: 'localStorage' }), PorticoError);
  });
});

describe('collections', () => {
  test('create, get, update, replace, remove', async () => {
    const pc = await loggedIn();
    const tasks = pc.collection('tasks');
    const made = await tasks.create({ title: 'Write the client', done: false, tags: ['ts'] });
    assert.equal(typeof made._id, 'string');
    assert.equal(made.title, 'Write the client');
    assert.match(made.createdAt, /Z$/);
    const got = await tasks.get(made._id);
    assert.deepEqual(got, made);
    const changed = await tasks.update(made._id, { done: true, 'meta.by': 'ed' });
    assert.equal(changed.done, true);
    assert.deepEqual(changed.meta, { by: 'ed' });
    const replaced = await tasks.replace(made._id, { title: 'Replaced' });
    assert.equal(replaced.title, 'Replaced');
    assert.equal(replaced.done, undefined);
    assert.equal(replaced.createdAt, made.createdAt);
    const own = await tasks.create({ _id: 'my-own-id', title: 'given id' });
    assert.equal(own._id, 'my-own-id');
    await refused(tasks.create({ _id: 'my-own-id', title: 'again' }), 409, 'error');
    await tasks.remove(made._id);
    await refused(tasks.get(made._id), 404, 'fail');
    await refused(tasks.remove(made._id), 404, 'fail');
    await tasks.remove('my-own-id');
  });

  test('list: where, sort, skip, limit, fields, total; the async iterator follows Link headers', async () => {
    const pc = await loggedIn();
    const items = pc.collection('items');
    // items is not configured: the routes door answers 404 for it.
    await refused(items.list(), 404, 'error');
    const tasks = pc.collection('tasks');
    await pc.collection('tasks').batch(Array.from({ length: 23 }, (_, n) => ({ op: 'create', doc: { _id: `p${String(n).padStart(2, '0')}`, n, kind: n % 2 ? 'odd' : 'even' } })));
    const page = await tasks.list({ where: { kind: 'odd' }, sort: '-n', limit: 5, fields: ['n'] });
    assert.equal(page.total, 11);
    assert.deepEqual(page.items.map((d) => d.n), [21, 19, 17, 15, 13]);
    assert.deepEqual(Object.keys(page.items[0]).sort(), ['_id', 'n']);
    assert.ok(page.next, 'a next page');
    const second = await tasks.list({ where: { kind: 'odd' }, sort: { n: -1 }, skip: 5, limit: 5, fields: { kind: 0 } });
    assert.deepEqual(second.items.map((d) => d.n), [11, 9, 7, 5, 3]);
    assert.equal(second.items[0].kind, undefined);
    const all = [];
    for await (const doc of tasks.list({ where: { n: { $gte: 0 } }, sort: 'n', limit: 4 })) all.push(doc.n);
    assert.deepEqual(all, Array.from({ length: 23 }, (_, n) => n));
    let pages = 0;
    for await (const p of tasks.list({ where: { n: { $gte: 0 } }, limit: 10 }).pages()) {
      pages++;
      assert.equal(p.total, 23);
    }
    assert.equal(pages, 3);
    // Over max_page_size: clamped by the server, and the iterator still sees everything.
    let count = 0;
    for await (const doc of tasks.list({ where: { n: { $gte: 0 } }, limit: 500 })) count += doc.n >= 0 ? 1 : 0;
    assert.equal(count, 23);
    await refused(tasks.list({ where: { n: { $bogus: 1 } } }), 400, 'error');
    await refused(tasks.list({ sort: '-n', skip: 20000, limit: 10 }), 400, 'error');
  });

  test('list: expand, search and total=false reach the server; an unknown option is thrown, naming it', async () => {
    const pc = await loggedIn();
    const projects = pc.collection('projects');
    const jobs = pc.collection('jobs');
    await projects.create({ _id: 'pa', title: 'apple pie' });
    await projects.create({ _id: 'pb', title: 'plum cake' });
    await jobs.create({ _id: 'j1', project: 'pa' });
    await jobs.create({ _id: 'j2', project: 'pb' });
    const expanded = await jobs.list({ sort: '_id', expand: 'project' });
    assert.deepEqual(expanded.items.map((j) => j.expand.project.title), ['apple pie', 'plum cake']);
    const asList = await jobs.list({ sort: '_id', expand: ['project'] });
    assert.equal(asList.items[1].expand.project._id, 'pb');
    const plain = await jobs.list({ sort: '_id' });
    assert.equal(plain.items[0].expand, undefined, 'not expanded unless asked');
    const found = await projects.list({ search: 'pie' });
    assert.deepEqual(found.items.map((p) => p._id), ['pa']);
    const uncounted = await jobs.list({ total: false, limit: 1 });
    assert.equal(uncounted.total, null);
    assert.equal(uncounted.items.length, 1);
    assert.equal((await jobs.list({ limit: 1 })).total, 2);
    assert.throws(() => jobs.list({ expnad: 'project' }), (e) => {
      assert.equal(e.code, 'unknown-option');
      assert.match(e.message, /"expnad"/);
      return true;
    });
  });

  test('conditional writes: ifMatch with a document read, a tag or *, and 412 when it changed', async () => {
    const pc = await loggedIn();
    const tasks = pc.collection('tasks');
    const made = await tasks.create({ title: 'draft' });
    const read = await tasks.get(made._id);
    const tag = etagOf(read);
    assert.match(tag, /^"/);
    const first = await tasks.update(made._id, { title: 'final' }, { ifMatch: read });
    assert.equal(first.title, 'final');
    const lost = await tasks.update(made._id, { title: 'lost update' }, { ifMatch: read }).catch((e) => e);
    assert.ok(lost instanceof PorticoError);
    assert.equal(lost.status, 412);
    assert.equal((await tasks.get(made._id)).title, 'final');
    await refused(tasks.replace(made._id, { title: 'x' }, { ifMatch: tag }), 412, 'error');
    await refused(tasks.remove(made._id, { ifMatch: tag }), 412, 'error');
    await assert.rejects(tasks.update(made._id, { a: 1 }, { ifMatch: {} }), (e) => e.code === 'no-etag' && e.status === 0);
    const fresh = await tasks.get(made._id);
    await tasks.replace(made._id, { title: 'replaced' }, { ifMatch: etagOf(fresh) });
    await tasks.remove(made._id, { ifMatch: '*' });
    await refused(tasks.remove(made._id, { ifMatch: '*' }), 404, 'fail');
  });

  test('batch: every write at once, or none with the failing index', async () => {
    const pc = await loggedIn();
    const results = await pc.batch([
      { op: 'create', collection: 'tasks', doc: { _id: 'b1', title: 'one' } },
      { op: 'update', collection: 'tasks', id: 'b1', patch: { title: 'one, edited' } },
      { op: 'create', collection: 'notes', doc: { text: 'mine' } },
      { op: 'replace', collection: 'tasks', id: 'b1', doc: { title: 'one, replaced' } },
    ]);
    assert.deepEqual(results.map((r) => r.status), [201, 200, 201, 200]);
    assert.equal(results[1].body.title, 'one, edited');
    assert.equal(results[2].body.ownerId, edId);
    const failed = await pc
      .collection('tasks')
      .batch([
        { op: 'create', doc: { _id: 'b2', title: 'two' } },
        { op: 'remove', id: 'no-such-id' },
      ])
      .catch((e) => e);
    assert.ok(failed instanceof PorticoError);
    assert.equal(failed.status, 404);
    assert.deepEqual(failed.data, { index: 1 });
    await refused(pc.collection('tasks').get('b2'), 404, 'fail');
    const removed = await pc.collection('tasks').batch([{ op: 'remove', id: 'b1' }]);
    assert.equal(removed[0].status, 200);
    await refused(pc.collection('tasks').get('b1'), 404, 'fail');
  });

  test('access: 401 without a login, 403 without the role, 404 for another owner', async () => {
    const anon = client();
    await refused(anon.collection('tasks').create({ title: 'x' }), 401, 'error');
    const bob = await loggedIn('bob', 'bob-secret');
    await refused(bob.collection('articles').create({ title: 'x' }), 403, 'error');
    const ed = await loggedIn();
    const article = await ed.collection('articles').create({ title: 'by an editor' });
    assert.equal((await anon.collection('articles').get(article._id)).title, 'by an editor');
    const note = await ed.collection('notes').create({ text: 'private' });
    await refused(bob.collection('notes').get(note._id), 404, 'fail');
    await refused(bob.collection('notes').update(note._id, { text: 'mine now' }), 404, 'fail');
    await refused(ed.collection('notes').update(note._id, { $set: { a: 1 } }), 400, 'error');
  });
});

describe('errors without a reply', () => {
  test('a refused connection is a network-error', async () => {
    const closed = createServer();
    await new Promise((r) => closed.listen(0, '127.0.0.1', r));
    const port = closed.address().port;
    await new Promise((r) => closed.close(r));
    const pc = new Portico(`http://127.0.0.1:${port}`, { api: 'api/v1/' });
    await refused(pc.collection('tasks').list(), 0, 'network-error');
  });

  test('a server that never answers: timeout; an AbortSignal: aborted', async () => {
    const sockets = new Set();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise((r) => silent.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${silent.address().port}`;
    try {
      const pc = new Portico(url, { api: 'api/v1/', timeout: 200 });
      const started = Date.now();
      await refused(pc.collection('tasks').get('x'), 0, 'timeout');
      assert.ok(Date.now() - started < 2000);
      await refused(pc.collection('tasks').get('x', { timeout: 50 }), 0, 'timeout');
      const controller = new AbortController();
      const aborted = new Portico(url, { timeout: 0 }).apply('m', [1], { signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      await refused(aborted, 0, 'aborted');
      await refused(pc.auth.login({ username: 'a', password: 'b' }, { signal: AbortSignal.abort() }), 0, 'aborted');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  test('a reply that is not JSON is an invalid-reply', async () => {
    const { createServer: http } = await import('node:http');
    const odd = http((_, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<html>proxy page</html>');
    });
    await new Promise((r) => odd.listen(0, '127.0.0.1', r));
    try {
      const pc = new Portico(`http://127.0.0.1:${odd.address().port}`);
      await refused(pc.collection('tasks').get('x'), 200, 'invalid-reply');
    } finally {
      await new Promise((r) => odd.close(r));
    }
  });
});
