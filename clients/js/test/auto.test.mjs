// The auto API through the client: register and login, collection writes under rules,
// publications once, and methods (on the auto API's `todos` example, which defines real ones;
// `portico serve` declares none yet).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Portico, PorticoError } from '../dist/index.js';
import { CONFIG, serve, serveTodos, workspace } from './server.mjs';

async function refused(promise, status, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof PorticoError, `not a PorticoError: ${e}`);
    assert.equal(e.status, status, e.message);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

describe('portico serve: register, login, writes, publications', () => {
  let ws;
  let server;
  before(async () => {
    ws = workspace(CONFIG);
    server = await serve(ws);
  });
  after(async () => {
    await server?.stop();
    ws?.remove();
  });

  test('register logs in as the new account; the token works on both doors', async () => {
    const pc = new Portico(server.url, { api: 'api/v1/' });
    const changes = [];
    pc.auth.onChange((u) => changes.push(u?.id ?? null));
    const user = await pc.auth.register({ username: 'ann', password: 'ann-secret', profile: { name: 'Ann' } });
    assert.equal(typeof user.id, 'string');
    assert.equal(user.username, 'ann');
    assert.ok(Date.parse(user.tokenExpires) > Date.now());
    assert.deepEqual(changes, [user.id]);
    // The auto API's token on the routes door:
    const note = await pc.collection('notes').create({ text: 'from a registered user' });
    assert.equal(note.ownerId, user.id);
    await refused(new Portico(server.url).auth.register({ username: 'ann', password: 'another-secret' }), 400, 'invalid-user');
    await pc.auth.logout();
    assert.deepEqual(changes, [user.id, null]);
  });

  test('loginVia auto: /users/login, 401 unauthorized on a wrong password', async () => {
    const pc = new Portico(server.url, { api: 'api/v1/', loginVia: 'auto' });
    await new Portico(server.url).auth.register({ username: 'cy', email: 'cy@example.com', password: 'cy-secret' });
    await refused(pc.auth.login({ email: 'cy@example.com', password: 'nope' }), 401, 'unauthorized');
    const user = await pc.auth.login({ email: 'cy@example.com', password: 'cy-secret' });
    assert.equal(user.email, 'cy@example.com');
    assert.ok(user.tokenExpires);
  });

  test('collectionWrite insert, update, remove under the rules; publications once', async () => {
    const ann = new Portico(server.url);
    const me = await ann.auth.register({ username: 'dee', password: 'dee-secret' });
    const widgets = ann.collectionWrite('widgets');
    const id = await widgets.insert({ name: 'gear', ownerId: me.id, secret: 's3' });
    assert.equal(typeof id, 'string');
    assert.equal(await widgets.update(id, { name: 'big gear' }), 1);
    const snapshot = await ann.publication('widgets');
    const mine = snapshot.widgets.find((w) => w._id === id);
    assert.equal(mine.name, 'big gear');
    assert.equal(mine.secret, undefined, 'the publication hides secret');
    // The rules: anonymous inserts, someone else's id, handing it over.
    await refused(new Portico(server.url).collectionWrite('widgets').insert({ name: 'spam' }), 403, 'access-denied');
    await refused(widgets.insert({ name: 'not mine', ownerId: 'someone-else' }), 403, 'access-denied');
    await refused(widgets.update(id, { ownerId: 'someone-else' }), 403, 'access-denied');
    await refused(widgets.update(id, { $set: { a: 1 } }), 400, 'invalid-document');
    assert.equal(await widgets.remove(id), 1);
    assert.equal((await ann.publication('widgets')).widgets.some((w) => w._id === id), false);
    // An unknown publication or method on the portico server: its one 404 body.
    await refused(ann.publication('nope'), 404, 'error');
    await refused(ann.call('nope'), 404, 'error');
  });
});

describe('methods and publications with arguments (the todos example)', () => {
  let ws;
  let server;
  before(async () => {
    ws = workspace(CONFIG);
    ws.addUser('tom', 'tom-secret');
    server = await serveTodos('sqlite:' + ws.db);
  });
  after(async () => {
    await server?.stop();
    ws?.remove();
  });

  test('call and apply: results, method errors with details, statuses', async () => {
    const pc = new Portico(server.url, { loginVia: 'auto' });
    await refused(pc.call('todos.add', 'Buy milk'), 401, 'not-signed-in');
    await pc.auth.login({ username: 'tom', password: 'tom-secret' });
    const id = await pc.call('todos.add', 'Buy milk', 'groceries');
    assert.equal(typeof id, 'string');
    const second = await pc.apply('todos.add', ['Bake bread'], { timeout: 5000 });
    assert.notEqual(second, id);
    const error = await pc.call('todos.add', '   ').catch((e) => e);
    assert.ok(error instanceof PorticoError);
    assert.equal(error.status, 400);
    assert.equal(error.code, 'title-required');
    assert.equal(error.message, 'A todo needs a title');
    assert.deepEqual(error.details, { field: 'title' });
    await refused(pc.apply('todos.add', ['x'], { signal: AbortSignal.abort() }), 0, 'aborted');

    // A publication with its own url and an argument, over two collections.
    const both = await pc.publication('list-todos', ['groceries'], { path: 'lists/:0/todos' });
    assert.deepEqual(both.lists.map((l) => l._id), ['groceries']);
    assert.deepEqual(both.todos.map((t) => t.title), ['Buy milk']);

    // The auto API's collection writes on the example's todos (its rules: owners only).
    const todos = pc.collectionWrite('todos');
    assert.equal(await todos.update(id, { done: true }), 1);
    const mine = (await pc.publication('my-todos')).todos;
    assert.equal(mine.find((t) => t._id === id).done, true);
    assert.equal(await todos.remove(second), 1);
  });

  test('a live publication over two collections, with an argument in its url', async () => {
    const pc = new Portico(server.url, { loginVia: 'auto' });
    await pc.auth.login({ username: 'tom', password: 'tom-secret' });
    const seen = [];
    const sub = pc.subscribe('list-todos', ['groceries'], {
      added: (doc, collection) => seen.push(['added', collection, doc._id]),
      removed: (doc, collection) => seen.push(['removed', collection, doc._id]),
    }, { path: 'lists/:0/todos' });
    await sub.ready;
    assert.deepEqual(sub.docs('lists').map((l) => l.name), ['Groceries']);
    const before = sub.docs('todos').length;
    const id = await pc.call('todos.add', 'Eggs', 'groceries');
    const until = Date.now() + 5000;
    while (!sub.get(id, 'todos') && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    assert.equal(sub.get(id, 'todos').title, 'Eggs');
    assert.equal(sub.docs('todos').length, before + 1);
    assert.equal(sub.docs().length, before + 2);
    assert.deepEqual(seen.at(-1), ['added', 'todos', id]);
    sub.stop();
    assert.equal(sub.endReason, 'stopped');
  });
});
