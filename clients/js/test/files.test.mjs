// Aggregates, files, closed options, one error shape and safe retries, through the client against
// the real `portico serve`: groups counted and summed under the list's rules; uploads from a
// Buffer, a Node.js stream, a Blob and a File with progress; file URLs carrying a download token
// (never the login token) that load the file and its thumbnail; removal; every options object
// refusing a key it does not know; and GETs, never writes, tried again after a dropped
// connection or a 503.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Portico, PorticoError } from '../dist/index.js';
import { CONFIG, png, serve, workspace } from './server.mjs';

let ws;
let server;
let edId;
const client = (options = {}) => new Portico(server.url, { api: 'api/v1/', ...options });
async function loggedIn(username = 'ed', password = 'ed-secret', options = {}) {
  const pc = client(options);
  await pc.auth.login({ username, password });
  return pc;
}
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

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

describe('aggregates', () => {
  test('groups with count, sum, avg, min and max; where, sort and limit; one row without group', async () => {
    const pc = await loggedIn();
    const tasks = pc.collection('tasks');
    await tasks.batch([
      { op: 'create', doc: { list: 'agg', status: 'open', amount: 10 } },
      { op: 'create', doc: { list: 'agg', status: 'open', amount: 5 } },
      { op: 'create', doc: { list: 'agg', status: 'paid', amount: 7 } },
      { op: 'create', doc: { list: 'agg', status: 'paid', amount: 'n/a' } },
      { op: 'create', doc: { list: 'agg', status: 'paid' } },
      { op: 'create', doc: { list: 'other', status: 'open', amount: 1000 } },
    ]);
    const rows = await tasks.aggregate({ where: { list: 'agg' }, group: 'status', count: true, sum: 'amount', avg: ['amount'], min: 'amount', max: 'amount', sort: '-count' });
    assert.deepEqual(rows, [
      { _id: 'paid', count: 3, sum_amount: 7, avg_amount: 7, min_amount: 7, max_amount: 7 },
      { _id: 'open', count: 2, sum_amount: 15, avg_amount: 7.5, min_amount: 5, max_amount: 10 },
    ]);
    assert.deepEqual(await tasks.aggregate({ where: { list: 'agg' }, group: 'status', count: true, sort: { _id: 1 }, limit: 1 }), [{ _id: 'open', count: 2 }]);
    assert.deepEqual(await tasks.aggregate({ where: { list: 'agg', amount: { $gt: 6 } }, count: true, sum: ['amount'] }), [{ _id: null, count: 2, sum_amount: 17 }]);
    assert.deepEqual(await tasks.aggregate({ where: { list: 'none' }, count: true }), [{ _id: null, count: 0 }]);
  });

  test('under the rules of the list: owner scope, login; a bad query is the server\'s 400', async () => {
    const ed = await loggedIn();
    const bob = await loggedIn('bob', 'bob-secret');
    await ed.collection('notes').create({ kind: 'x', n: 1 });
    await ed.collection('notes').create({ kind: 'x', n: 2 });
    await bob.collection('notes').create({ kind: 'x', n: 40 });
    assert.deepEqual(await ed.collection('notes').aggregate({ where: { kind: 'x' }, count: true, sum: 'n' }), [{ _id: null, count: 2, sum_n: 3 }]);
    assert.deepEqual(await bob.collection('notes').aggregate({ where: { kind: 'x' }, count: true, sum: 'n' }), [{ _id: null, count: 1, sum_n: 40 }]);
    await assert.rejects(client().collection('notes').aggregate({ count: true }), (e) => e.status === 401);
    await assert.rejects(ed.collection('notes').aggregate({ count: true, limit: -1 }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.reason, /limit/);
      return true;
    });
  });
});

describe('files', () => {
  test('upload from a Buffer and from a Node.js stream, with progress; the bytes come back', async () => {
    const pc = await loggedIn();
    const posts = pc.collection('posts');
    const post = await posts.create({ title: 'with attachments' });
    const bytes = randomBytes(1024 * 1024 + 123);
    const seen = [];
    const info = await posts.upload(post, 'attachments', bytes, { name: 'blob.bin', onProgress: (sent, total) => seen.push([sent, total]) });
    assert.deepEqual({ ...info, createdAt: typeof info.createdAt }, { name: 'blob.bin', size: bytes.length, type: 'application/octet-stream', sha256: sha256(bytes), createdAt: 'string' });
    assert.ok(seen.length >= 16, `progress was reported as the bytes went: ${seen.length} events`);
    assert.deepEqual(seen.at(-1), [bytes.length, bytes.length]);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i][0] > seen[i - 1][0], 'the count only grows');

    // A stream from disk: the total is told (a stream has no length), the bytes are sent as read.
    const dir = mkdtempSync(join(tmpdir(), 'portico-upload-'));
    const path = join(dir, 'report.pdf');
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(300000)]);
    writeFileSync(path, pdf);
    const streamed = [];
    const fromDisk = await posts.upload(post._id, 'attachments', createReadStream(path), { name: 'report.pdf', size: pdf.length, onProgress: (sent, total) => streamed.push([sent, total]) });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(fromDisk.size, pdf.length);
    assert.equal(fromDisk.type, 'application/pdf', 'typed by its bytes');
    assert.equal(fromDisk.sha256, sha256(pdf));
    assert.ok(streamed.length >= 4);
    assert.deepEqual(streamed.at(-1), [pdf.length, pdf.length]);

    // A stream of unknown length, without progress: still sent whole.
    async function* pieces() {
      yield Buffer.from('hello, ');
      yield new Uint8Array(Buffer.from('world'));
    }
    const text = await posts.upload(post._id, 'attachments', pieces(), { name: 'hello.txt', type: 'text/plain' });
    assert.equal(text.size, 12);

    const doc = await posts.get(post._id);
    assert.deepEqual(doc.attachments.map((f) => f.name), ['blob.bin', 'report.pdf', 'hello.txt']);
    const back = await fetch(await posts.fileURL(post, 'attachments', 'blob.bin'));
    assert.equal(back.status, 200);
    assert.ok(Buffer.from(await back.arrayBuffer()).equals(bytes));
  });

  test('a File and a Blob; fileURL with a download token, never the login token; a thumbnail; removeFile', async () => {
    const pc = await loggedIn();
    const posts = pc.collection('posts');
    const post = await posts.create({ title: 'with a cover' });
    const image = png(40, 30);
    const info = await posts.upload(post._id, 'cover', new File([image], 'cover.png', { type: 'image/png' }));
    assert.equal(info.name, 'cover.png');
    assert.equal(info.sha256, sha256(image));
    // The field holds one file: a new upload replaces it.
    const replaced = await posts.upload(post._id, 'cover', new Blob([png(20, 20)]), { name: 'small.png' });
    assert.equal(replaced.type, 'image/png');
    assert.equal((await posts.get(post._id)).cover.name, 'small.png');

    const url = await posts.fileURL(post, 'cover', 'small.png', { thumb: '16x16' });
    const parsed = new URL(url);
    assert.equal(parsed.pathname, `/api/v1/posts/${post._id}/files/cover/small.png`);
    assert.equal(parsed.searchParams.get('thumb'), '16x16');
    const fileToken = parsed.searchParams.get('token');
    assert.ok(fileToken && fileToken !== pc.auth.token, 'a download token, not the login token');
    assert.ok(!url.includes(pc.auth.token));
    const thumb = Buffer.from(await (await fetch(url)).arrayBuffer());
    assert.equal(thumb.toString('latin1', 1, 4), 'PNG');
    assert.deepEqual([thumb.readUInt32BE(16), thumb.readUInt32BE(20)], [16, 16], 'a 16 x 16 thumbnail');
    // The download token is kept while it lasts, and opens downloads only.
    const second = new URL(await posts.fileURL(post._id, 'cover', 'small.png'));
    assert.equal(second.searchParams.get('token'), fileToken);
    assert.equal((await fetch(second)).status, 200);
    assert.equal((await fetch(server.url + '/api/v1/posts', { headers: { 'X-Auth-Token': fileToken } })).status, 401);
    // Without the token the download is refused (posts need a login).
    assert.equal((await fetch(url.replace(/&?token=[^&]*/, ''))).status, 401);
    // Another user's client gets another token, which cannot reach ed's post.
    const bob = await loggedIn('bob', 'bob-secret');
    assert.equal((await fetch(await bob.collection('posts').fileURL(post._id, 'cover', 'small.png'))).status, 404);

    await assert.rejects(posts.upload(post._id, 'cover', Buffer.from('not an image'), { name: 'x.png', type: 'image/png' }), (e) => e instanceof PorticoError && e.status === 415);
    await assert.rejects(posts.upload(post._id, 'cover', Buffer.from('x')), (e) => e.code === 'error' && /name/i.test(e.message));
    await posts.removeFile(post._id, 'cover', 'small.png');
    assert.equal((await posts.get(post._id)).cover, null, 'the field holds no file');
    await assert.rejects(posts.removeFile(post._id, 'cover', 'small.png'), (e) => e.status === 404 && e.reason === 'No such file');
  });
});

/** Every call that takes an options object, with one key it does not know. */
function badOptions(pc) {
  const tasks = pc.collection('tasks');
  const widgets = pc.collectionWrite('widgets');
  return {
    'new Portico': () => new Portico(server.url, { apii: 'api/v1/' }),
    'new Portico socket': () => new Portico(server.url, { socket: { fallback: [] } }),
    'new Portico socket reconnect': () => new Portico(server.url, { socket: { reconnect: { max: 1 } } }),
    list: () => tasks.list({}, { timout: 1 }),
    'list query': () => tasks.list({ wher: {} }),
    get: () => tasks.get('x', { sginal: null }),
    create: () => tasks.create({}, { ifMatch: '*' }),
    update: () => tasks.update('x', {}, { ifmatch: '*' }),
    replace: () => tasks.replace('x', {}, { if_match: '*' }),
    remove: () => tasks.remove('x', { force: true }),
    batch: () => tasks.batch([{ op: 'remove', id: 'x' }], { atomic: true }),
    'pc.batch': () => pc.batch([{ op: 'remove', collection: 'tasks', id: 'x' }], { atomic: true }),
    aggregate: () => tasks.aggregate({ count: true, average: 'n' }),
    'aggregate options': () => tasks.aggregate({ count: true }, { tmeout: 1 }),
    upload: () => tasks.upload('x', 'f', Buffer.from('x'), { name: 'x', progress: () => {} }),
    fileURL: () => tasks.fileURL('x', 'f', 'n', { thumbnail: '16x16' }),
    removeFile: () => tasks.removeFile('x', 'f', 'n', { ifMatch: '*' }),
    subscribe: () => tasks.subscribe({}, {}, { reconect: {} }),
    'subscribe handlers': () => tasks.subscribe({}, { add: () => {} }),
    'subscribe reconnect': () => tasks.subscribe({}, {}, { reconnect: { min: 1 } }),
    'subscribe query': () => tasks.subscribe({ limt: 1 }),
    'pc.subscribe': () => pc.subscribe('widgets', [], {}, { pth: 'x' }),
    publication: () => pc.publication('widgets', [], { methd: 'POST' }),
    apply: () => pc.apply('m', [], { retries: 1 }),
    route: () => pc.route('/api/v1/tasks', { params: {} }),
    insert: () => widgets.insert({}, { ifMatch: '*' }),
    'write update': () => widgets.update('x', {}, { if: '*' }),
    'write remove': () => widgets.remove('x', { if: '*' }),
    login: () => pc.auth.login({ username: 'ed', password: 'ed-secret', remember: true }),
    'login options': () => pc.auth.login({ username: 'ed', password: 'ed-secret' }, { timeoutt: 1 }),
    register: () => pc.auth.register({ username: 'x', password: 'xxxxxxxx', name: 'x' }),
    logout: () => pc.auth.logout({ everywhere: true }),
    methods: () => pc.auth.methods({ cache: true }),
    requestPasswordReset: () => pc.auth.requestPasswordReset('a@example.com', { lang: 'fr' }),
    loginWithEmailCode: () => pc.auth.loginWithEmailCode({ email: 'a@example.com', cde: '1' }),
    upgradeGuest: () => pc.auth.upgradeGuest({ username: 'g', password: 'xxxxxxxx', profile: {} }),
  };
}

describe('options', () => {
  test('every call refuses an option it does not know, naming it, before any request', async () => {
    let requests = 0;
    const counting = (url, init) => {
      requests++;
      return fetch(url, init);
    };
    const pc = await loggedIn('ed', 'ed-secret', { fetch: counting });
    requests = 0;
    const calls = badOptions(pc);
    for (const [name, call] of Object.entries(calls)) {
      await assert.rejects(
        async () => call(),
        (e) => {
          assert.ok(e instanceof PorticoError, `${name}: ${e}`);
          assert.equal(e.code, 'unknown-option', `${name}: ${e.message}`);
          assert.equal(e.status, 0);
          assert.match(e.message, /has no option "[^"]+"/, name);
          return true;
        },
        name,
      );
    }
    assert.equal(requests, 0, 'nothing was sent');
    assert.ok(Object.keys(calls).length >= 30);
    // Known options still pass: a real call of each kind.
    const made = await pc.collection('tasks').create({ title: 'ok' }, { timeout: 5000 });
    await pc.collection('tasks').update(made._id, { title: 'ok 2' }, { ifMatch: '*', timeout: 5000 });
    assert.equal((await pc.collection('tasks').list({ where: { _id: made._id } }, { timeout: 5000 })).total, 1);
  });
});

describe('errors', () => {
  test('one PorticoError shape whichever door answered: status, error, reason, details', async () => {
    const pc = await loggedIn();
    const routes = await pc.collection('tasks').get('no-such-id').catch((e) => e);
    assert.deepEqual([routes.status, routes.error, routes.code, routes.reason, routes.message], [404, 'fail', 'fail', 'Item not found', 'Item not found']);
    const auto = await client().collectionWrite('widgets').insert({ name: 'x' }).catch((e) => e);
    assert.deepEqual([auto.status, auto.error, auto.reason], [403, 'access-denied', 'Access denied']);
    const parse = await pc.collection('tasks').list({ where: { n: { $bogus: 1 } } }).catch((e) => e);
    assert.equal(parse.status, 400);
    assert.match(parse.reason, /\$bogus/);
  });
});

/**
 * A TCP proxy in front of the server that can fail the next requests: `drop` closes the
 * connection as a request arrives, `503` answers 503 with `Retry-After: 0`. `seen` counts the
 * requests that arrived (by method).
 */
async function faultyProxy(target) {
  const proxy = { fail: [], seen: [] };
  const { port: targetPort } = new URL(target);
  const tcp = createServer((socket) => {
    let upstream = null;
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      const head = /^([A-Z]+) (\S+) HTTP\/1\.1/.exec(chunk.toString('latin1'));
      if (head) {
        proxy.seen.push(`${head[1]} ${head[2].split('?')[0]}`);
        const fault = proxy.fail.shift();
        if (fault === 'drop') return socket.destroy();
        if (fault === '503') {
          const body = '{"status":"error","message":"The database is unavailable"}';
          return socket.end(`HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        }
      }
      if (!upstream) {
        upstream = connect(Number(targetPort), '127.0.0.1');
        upstream.on('error', () => socket.destroy());
        upstream.on('data', (d) => socket.write(d));
        upstream.on('end', () => socket.end());
        socket.on('close', () => upstream.destroy());
      }
      upstream.write(chunk);
    });
  });
  await new Promise((ok) => tcp.listen(0, '127.0.0.1', ok));
  proxy.url = `http://127.0.0.1:${tcp.address().port}`;
  proxy.close = () => new Promise((ok) => tcp.close(ok));
  return proxy;
}

describe('retries', () => {
  test('a GET is tried again after a dropped connection or a 503; a write never is', async () => {
    const proxy = await faultyProxy(server.url);
    try {
      const pc = new Portico(proxy.url, { api: 'api/v1/' });
      await pc.auth.login({ username: 'ed', password: 'ed-secret' });
      const tasks = pc.collection('tasks');
      const made = await tasks.create({ _id: 'retried', title: 'r' });

      proxy.seen.length = 0;
      proxy.fail.push('drop', '503');
      assert.equal((await tasks.get(made._id)).title, 'r');
      assert.deepEqual(proxy.seen, ['GET /api/v1/tasks/retried', 'GET /api/v1/tasks/retried', 'GET /api/v1/tasks/retried']);

      proxy.seen.length = 0;
      proxy.fail.push('503');
      const write = await tasks.update(made._id, { title: 'once' }).catch((e) => e);
      assert.deepEqual([write.status, write.retryAfter], [503, 0]);
      proxy.fail.push('drop');
      const post = await tasks.create({ title: 'maybe' }).catch((e) => e);
      assert.equal(post.code, 'network-error');
      assert.deepEqual(proxy.seen, ['PATCH /api/v1/tasks/retried', 'POST /api/v1/tasks'], 'each write was sent once');
      assert.equal((await tasks.get(made._id)).title, 'r');

      // With retries: 0 a GET fails at once.
      const strict = new Portico(proxy.url, { api: 'api/v1/', retries: 0 });
      proxy.seen.length = 0;
      proxy.fail.push('503');
      assert.equal((await strict.collection('tasks').list().catch((e) => e)).status, 503);
      assert.equal(proxy.seen.length, 1);
    } finally {
      await proxy.close();
    }
  });
});

describe('routes', () => {
  test('route() calls a route by its path from the root with the login, a method, a body and a query', async () => {
    const pc = await loggedIn();
    const made = await pc.route('/api/v1/notes', { method: 'POST', body: { text: 'by route' } });
    assert.equal(made.status, 'success');
    assert.equal(made.data.ownerId, edId, 'sent with the login');
    const listed = await pc.route('api/v1/notes', { query: { where: JSON.stringify({ text: 'by route' }) } });
    assert.deepEqual(listed.data.map((n) => n._id), [made.data._id]);
    const anonymous = await client().route('/api/v1/notes').catch((e) => e);
    assert.deepEqual([anonymous.status, anonymous.reason], [401, 'You must be logged in to do this.']);
  });
});
