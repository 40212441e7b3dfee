// Live subscriptions against the real `portico serve`: the cache through added, changed and
// removed; a publication; a restart of the server (the cache ends equal to the server's data and
// the handlers hear only what changed meanwhile); a server that stops answering; logout. Every
// test runs twice: over server-sent events, and over the live socket (`live: 'socket'`).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Portico, PorticoError } from '../dist/index.js';
import { CONFIG, serve, until, workspace } from './server.mjs';

const FAST = { reconnect: { minDelay: 50, maxDelay: 300 } };

/** Handlers that write down what they hear. */
function recorder() {
  const events = [];
  return {
    events,
    handlers: {
      added: (doc) => events.push(['added', doc._id]),
      changed: (doc, previous) => events.push(['changed', doc._id, previous]),
      removed: (doc) => events.push(['removed', doc._id]),
      end: (reason, error) => events.push(['end', reason, error?.status]),
    },
  };
}

for (const transport of ['sse', 'socket'])
describe(`live over ${transport}`, () => {
  let ws;
  let server;
  // Every event stream a client opens, and every WebSocket: over the socket there is none of the first.
  const streams = [];
  const sockets = [];
  const fetchSpy = (url, init) => {
    if (new Headers(init?.headers).get('accept') === 'text/event-stream') streams.push(String(url));
    return fetch(url, init);
  };
  class CountedSocket extends WebSocket {
    constructor(url) {
      super(url);
      sockets.push(url);
    }
  }
  const client = (options = {}) =>
    new Portico(server.url, { api: 'api/v1/', live: transport, fetch: fetchSpy, socket: { ...FAST, WebSocket: CountedSocket }, ...options });
  async function ed() {
    const pc = client();
    await pc.auth.login({ username: 'ed', password: 'ed-secret' });
    return pc;
  }
  before(async () => {
    ws = workspace(CONFIG);
    ws.addUser('ed', 'ed-secret', 'editor');
    server = await serve(ws);
  });
  after(async () => {
    await server?.stop();
    ws?.remove();
  });

  test('a collection subscription: initial set, added, changed (set and cleared), removed, in sort order', async () => {
    const writer = await ed();
    const tasks = writer.collection('tasks');
    await tasks.create({ _id: 't1', list: 'live', n: 1, note: 'x' });
    await tasks.create({ _id: 't2', list: 'live', n: 2 });
    await tasks.create({ _id: 'other', list: 'elsewhere', n: 0 });
    const reader = client();
    const { events, handlers } = recorder();
    let readyCalls = 0;
    const sub = reader.collection('tasks').subscribe({ where: { list: 'live' }, sort: '-n', fields: ['n', 'note', 'list'] }, { ...handlers, ready: () => readyCalls++ });
    await sub.ready;
    assert.equal(readyCalls, 1);
    assert.deepEqual(sub.docs().map((d) => d._id), ['t2', 't1']);
    assert.deepEqual(events, [['added', 't2'], ['added', 't1']], 'in the server order');
    events.length = 0;

    await tasks.create({ _id: 't3', list: 'live', n: 3 });
    await until(() => sub.get('t3'), 'the insert');
    await tasks.update('t1', { n: 10 });
    await until(() => sub.get('t1').n === 10, 'the change');
    await tasks.replace('t1', { list: 'live', n: 10 });
    await until(() => !('note' in sub.get('t1')), 'the cleared field');
    await tasks.remove('t2');
    await until(() => !sub.get('t2'), 'the removal');
    await tasks.update('t3', { list: 'elsewhere' });
    await until(() => !sub.get('t3'), 'the document that stopped matching');
    await tasks.update('other', { n: 99 });
    assert.deepEqual(sub.docs().map((d) => [d._id, d.n]), [['t1', 10]]);
    assert.deepEqual(
      events.map((e) => e.slice(0, 2)),
      [['added', 't3'], ['changed', 't1'], ['changed', 't1'], ['removed', 't2'], ['removed', 't3']],
    );
    assert.equal(events[1][2].n, 1, 'changed gets the document as it was');
    assert.equal(events[2][2].note, 'x');
    // Only fields asked for: updatedAt is not among them.
    assert.deepEqual(Object.keys(sub.get('t1')).sort(), ['_id', 'list', 'n']);
    sub.stop();
    assert.equal(sub.endReason, 'stopped');
    await tasks.create({ _id: 't4', list: 'live', n: 4 });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sub.get('t4'), undefined, 'no events after stop');
    if (transport === 'socket') assert.deepEqual(streams, [], 'no event stream: the list ran over the socket');
    else assert.equal(streams.length, 1);
  });

  if (transport === 'socket')
    test('one socket carries a client\'s lists, publications and channels', async () => {
      const before = sockets.length;
      const pc = await ed();
      await pc.collection('tasks').create({ _id: 'one-1', list: 'one' });
      const list = pc.collection('tasks').subscribe({ where: { list: 'one' } });
      const pub = pc.subscribe('widgets', []);
      const room = pc.channel('room:one');
      const other = pc.collection('tasks').subscribe({ where: { list: 'one' }, fields: ['list'] });
      await Promise.all([list.ready, pub.ready, other.ready]);
      await room.joined.catch(() => {});
      assert.deepEqual(list.docs().map((d) => d._id), ['one-1']);
      assert.deepEqual(other.docs().map((d) => d._id), ['one-1']);
      assert.equal(sockets.length - before, 1, 'one WebSocket for all of them');
      // Stopping one list leaves the others running on the socket.
      other.stop();
      await pc.collection('tasks').create({ _id: 'one-2', list: 'one' });
      await until(() => list.get('one-2'), 'the insert on the list still running');
      assert.equal(other.get('one-2'), undefined);
      // Closing the socket ends the lists over it.
      pc.closeSocket();
      assert.equal(list.endReason, 'stopped');
      assert.equal(pub.endReason, 'stopped');
      assert.deepEqual(streams, []);
    });

  test('a publication subscription through the auto API', async () => {
    const owner = client();
    const me = await owner.auth.register({ username: 'pub-owner', password: 'pub-secret' });
    const widgets = owner.collectionWrite('widgets');
    const first = await widgets.insert({ name: 'first', ownerId: me.id, secret: 'hidden' });
    const viewer = client();
    const { events, handlers } = recorder();
    const sub = viewer.subscribe('widgets', [], handlers, { sort: { createdAt: -1 } });
    await sub.ready;
    assert.equal(sub.get(first).name, 'first');
    assert.equal(sub.get(first).secret, undefined);
    const second = await widgets.insert({ name: 'second', ownerId: me.id });
    await until(() => sub.get(second), 'the second widget');
    assert.deepEqual(sub.docs().slice(0, 2).map((w) => w.name), ['second', 'first']);
    await widgets.update(first, { name: 'first, renamed' });
    await until(() => sub.get(first).name === 'first, renamed', 'the rename');
    await widgets.remove(second);
    await until(() => !sub.get(second), 'the removal');
    assert.deepEqual(events.slice(-3).map((e) => e.slice(0, 2)), [['added', second], ['changed', first], ['removed', second]]);
    sub.stop();
  });

  test('a subscription the server refuses ends with the error; no reconnect', async () => {
    const anon = client();
    const { events, handlers } = recorder();
    const sub = anon.collection('notes').subscribe({}, handlers, FAST);
    await assert.rejects(sub.ready, (e) => e instanceof PorticoError && e.status === 401);
    assert.deepEqual(events, [['end', 'refused', 401]]);
    const bad = anon.collection('tasks').subscribe({ where: { n: { $bogus: 1 } } }, {}, FAST);
    await assert.rejects(bad.ready, (e) => e.status === 400);
    assert.equal(bad.endReason, 'refused');
  });

  test('logout ends a subscription: here, and by the server when the session is ended elsewhere', async () => {
    const pc = await ed();
    await pc.collection('notes').create({ text: 'a note' });
    const { events, handlers } = recorder();
    const sub = pc.collection('notes').subscribe({}, handlers, FAST);
    await sub.ready;
    assert.equal(sub.docs().length >= 1, true);
    await pc.auth.logout();
    assert.equal(sub.endReason, 'logged-out');
    assert.deepEqual(events.at(-1), ['end', 'logged-out', undefined]);

    // The same session held by a second client, logged out through the first: the server's
    // `end` event ends the second client's subscription and its session.
    const a = await ed();
    const kept = new Map([['portico.auth', JSON.stringify({ token: a.auth.token, user: a.auth.user })]]);
    const b = client({ tokenStore: { get: (k) => kept.get(k), set: (k, v) => kept.set(k, v), remove: (k) => kept.delete(k) } });
    const seen = recorder();
    const other = b.collection('notes').subscribe({}, seen.handlers, FAST);
    await other.ready;
    await a.auth.logout();
    await until(() => other.endReason, 'the server ending the stream');
    assert.equal(other.endReason, 'logged-out');
    assert.equal(b.auth.user, null, 'the ended session is forgotten');
    assert.equal(kept.has('portico.auth'), false);
  });

  test('reconnect after a restart: the cache ends equal to the server, handlers hear only the differences', async () => {
    const writer = await ed();
    const tasks = writer.collection('tasks');
    for (const id of ['ra', 'rb', 'rc']) await tasks.create({ _id: id, list: 'restart', v: 1 });
    const { events, handlers } = recorder();
    const errors = [];
    const sub = client().collection('tasks').subscribe({ where: { list: 'restart' }, fields: ['v', 'list'] }, { ...handlers, error: (e) => errors.push(e.code) }, FAST);
    await sub.ready;
    events.length = 0;

    const port = server.port;
    await server.stop();
    // Meanwhile, another server on the same database changes the data.
    const other = await serve(ws);
    const w2 = new Portico(other.url, { api: 'api/v1/', live: transport });
    await w2.auth.login({ username: 'ed', password: 'ed-secret' });
    await w2.collection('tasks').update('rb', { v: 2 });
    await w2.collection('tasks').remove('rc');
    await w2.collection('tasks').create({ _id: 'rd', list: 'restart', v: 1 });
    await other.stop();
    assert.ok(errors.length >= 1, 'the drop was reported');
    server = await serve(ws, `127.0.0.1:${port}`);

    await until(() => sub.get('rd'), 'the reconnect');
    // The writer's client reaches the restarted server at the same URL.
    const onServer = (await tasks.list({ where: { list: 'restart' }, fields: ['v', 'list'] })).items;
    const byId = (docs) => Object.fromEntries(docs.map((d) => [d._id, d]));
    assert.deepEqual(byId(sub.docs()), byId(onServer));
    assert.deepEqual(
      events.map((e) => e.slice(0, 2)).sort(),
      [['added', 'rd'], ['changed', 'rb'], ['removed', 'rc']],
      'ra was in both sets and unchanged: no event for it',
    );
    // And it is live again.
    await tasks.update('ra', { v: 5 });
    await until(() => sub.get('ra').v === 5, 'a change after the reconnect');
    sub.stop();
  });

  test('a server that stops answering: the silent stream is dropped and made again', async () => {
    const writer = await ed();
    const tasks = writer.collection('tasks');
    await tasks.create({ _id: 'h1', list: 'hang' });
    const errors = [];
    const sub = client().collection('tasks').subscribe({ where: { list: 'hang' } }, { error: (e) => errors.push(e.code) }, { ...FAST, idleTimeout: 2500, timeout: 1000 });
    await sub.ready;
    server.child.kill('SIGSTOP');
    try {
      await until(() => errors.includes('timeout'), 'the idle timeout', 8000);
    } finally {
      server.child.kill('SIGCONT');
    }
    await tasks.create({ _id: 'h2', list: 'hang' });
    await until(() => sub.get('h2'), 'the insert after the server came back', 10000);
    assert.deepEqual(sub.docs().map((d) => d._id).sort(), ['h1', 'h2']);
    sub.stop();
  });
});

test('the SSE reader: \\r\\n and \\r line ends, comments, multi-line data, events split anywhere', async () => {
  // Portico sends \n; other servers and proxies may send the other line ends SSE allows.
  const { createServer } = await import('node:http');
  const text =
    ': hello\r\nevent: added\r\ndata: {"collection":"c","id":"a",\r\ndata: "fields":{"x":1}}\r\n\r\n' +
    'event: ready\rdata: {}\r\r' +
    'event: changed\ndata: {"collection":"c","id":"a","fields":{"y":"é"},"cleared":["x"]}\n\n' +
    'event: added\r\ndata: {"collection":"c","id":"b","fields":{}}\r\n\r\n';
  const bytes = Buffer.from(text);
  const http = createServer(async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // One byte at a time: every boundary, the \r\n pairs and the two bytes of é included.
    for (const byte of bytes) {
      res.write(Buffer.from([byte]));
      await new Promise((r) => setImmediate(r));
    }
  });
  await new Promise((r) => http.listen(0, '127.0.0.1', r));
  try {
    const pc = new Portico(`http://127.0.0.1:${http.address().port}`);
    const sub = pc.subscribe('p', [], {}, { reconnect: { minDelay: 60000 } });
    await sub.ready;
    await until(() => sub.get('b'), 'the last event');
    assert.deepEqual(sub.get('a'), { _id: 'a', y: 'é' });
    sub.stop();
  } finally {
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
  }
});
