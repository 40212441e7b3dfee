// Channels over the live socket against the real `portico serve`: messages and presence between
// two clients, a refusal, and a server restart after which both rejoin and track again by
// themselves.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Portico } from '../dist/index.js';
import { CONFIG, serve, until, workspace } from './server.mjs';

const CHANNELS = `${CONFIG}
[[channels]]
pattern = "room:*"
join = "authenticated"
`;

const FAST = { reconnect: { minDelay: 50, maxDelay: 300 } };

describe('channels', () => {
  let ws;
  let server;
  let ids;
  const client = () => new Portico(server.url, { api: 'api/v1/', socket: FAST });
  async function as(username) {
    const pc = client();
    await pc.auth.login({ username, password: `${username}-secret` });
    return pc;
  }
  before(async () => {
    ws = workspace(CHANNELS);
    ids = { ann: ws.addUser('ann', 'ann-secret'), bob: ws.addUser('bob', 'bob-secret') };
    server = await serve(ws);
  });
  after(async () => {
    await server?.stop();
    ws?.remove();
  });

  test('members message each other and see who is online', async () => {
    const ann = await as('ann');
    const bob = await as('bob');
    const annRoom = ann.channel('room:1');
    const bobRoom = bob.channel('room:1');
    await annRoom.joined;
    await bobRoom.joined;
    assert.equal(ann.channel('room:1'), annRoom, 'one channel per name');
    await annRoom.track({ name: 'Ann' });
    await bobRoom.track({ name: 'Bob' });
    await until(() => annRoom.presence().length === 2 && bobRoom.presence().length === 2, 'both online on both');
    assert.deepEqual(bobRoom.presence().map((m) => m.meta.name).sort(), ['Ann', 'Bob']);
    assert.deepEqual(annRoom.presence().find((m) => m.meta.name === 'Bob').userId, ids.bob);

    const heard = [];
    annRoom.on('typing', (on, message) => heard.push([on, message.from]));
    const all = [];
    annRoom.on('*', (payload, message) => all.push(message.event));
    await bobRoom.send('typing', true);
    await bobRoom.send('chat', 'hi');
    await until(() => all.length === 2, 'both messages');
    assert.deepEqual(heard, [[true, ids.bob]]);
    assert.deepEqual(all, ['typing', 'chat']);

    await bobRoom.untrack();
    await until(() => annRoom.presence().length === 1, 'bob untracked');
    await bobRoom.leave();
    ann.closeSocket();
    bob.closeSocket();
  });

  test('a client the rules refuse is told so and sees nothing', async () => {
    const anon = client();
    const room = anon.channel('room:1');
    await assert.rejects(room.joined, (e) => e.code === 'forbidden');
    assert.deepEqual(room.presence(), []);
    anon.closeSocket();
  });

  test('after a server restart both clients rejoin and track again by themselves', async () => {
    const ann = await as('ann');
    const bob = await as('bob');
    const annRoom = ann.channel('room:2');
    const bobRoom = bob.channel('room:2');
    await annRoom.joined;
    await bobRoom.joined;
    await annRoom.track({ name: 'Ann' });
    await until(() => bobRoom.presence().length === 1, 'ann online');
    const before = bobRoom.presence()[0].key;
    const port = server.port;
    await server.stop();
    await until(() => bobRoom.presence().length === 1, 'presence kept while away', 1000);
    server = await serve(ws, `127.0.0.1:${port}`);
    // Bob's client got the state afresh and Ann's tracked herself again.
    await until(() => bobRoom.presence().some((m) => m.meta.name === 'Ann' && m.key !== before), 'ann online again', 15000);
    assert.equal(bobRoom.presence().length, 1, 'the old connection is gone');
    const heard = [];
    bobRoom.on('chat', (text) => heard.push(text));
    await until(async () => {
      await annRoom.send('chat', 'back').catch(() => {});
      return heard.length > 0;
    }, 'a message after the restart', 15000);
    assert.equal(heard[0], 'back');
    ann.closeSocket();
    bob.closeSocket();
  });

  test('when its instance is killed, a client moves to another and rejoins there', async () => {
    // A second instance on the same database file: a token of one is good on the other.
    const other = await serve(ws);
    const on = async (username) => {
      const pc = new Portico(server.url, { api: 'api/v1/', socket: { ...FAST, fallbacks: [other.url] } });
      await pc.auth.login({ username, password: `${username}-secret` });
      return pc;
    };
    const ann = await on('ann');
    const bob = await on('bob');
    const annRoom = ann.channel('room:3');
    const bobRoom = bob.channel('room:3');
    await annRoom.joined;
    await bobRoom.joined;
    await annRoom.track({ name: 'Ann' });
    await until(() => bobRoom.presence().length === 1, 'ann online');
    const before = bobRoom.presence()[0].key;
    const dead = server;
    server = other;
    dead.child.kill('SIGKILL');
    await dead.stop();
    await until(() => bobRoom.presence().some((m) => m.meta.name === 'Ann' && m.key !== before), 'ann online on the other instance', 15000);
    const heard = [];
    bobRoom.on('chat', (text) => heard.push(text));
    await annRoom.send('chat', 'moved');
    await until(() => heard.length === 1, 'a message on the other instance');
    assert.deepEqual(heard, ['moved']);
    ann.closeSocket();
    bob.closeSocket();
  });
});
