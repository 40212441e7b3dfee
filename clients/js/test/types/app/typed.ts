// Compiled (never run) by `npm test` with the augmentation of portico-app.d.ts: collections
// named there are typed by their documents, and methods, publications and routes take only
// the names declared. Each @ts-expect-error must find its error, or the compile fails.
import { Portico, type Page } from 'portico-client';

interface Article {
  _id: string;
  headline: string;
}

export async function typedApp(pc: Portico): Promise<void> {
  // A declared collection, named with or without the type argument.
  const tasks = pc.collection<'tasks'>('tasks');
  const { items } = await tasks.list({ where: { done: false, 'meta.by': 'me', $or: [{ title: 'a' }, { done: true }] }, sort: '-createdAt' });
  const title: string = items[0]!.title;
  const done: boolean | undefined = items[0]!.done;
  const id: string = items[0]!._id;
  const same = pc.collection('tasks');
  const one = await same.get(id);
  const again: string = one.title;
  const made = await tasks.create({ title: 'typed' });
  await tasks.update(made._id, { done: true });
  const rows = await tasks.aggregate({ where: { done: true }, group: 'done', count: true });
  const count: number | undefined = rows[0]!.count;
  const sub = pc.collection('tasks').subscribe({ where: { done: false } }, { added: (t) => void t.title.toUpperCase() });
  const written: string = await pc.collectionWrite('tasks').insert({ title: 'over the auto API' });
  const people = await pc.collection('people').list();
  const city: string | undefined = people.items[0]?.address?.city;

  // Undeclared collections keep working: a type argument, or plain documents.
  const articles: Page<Article> = await pc.collection<Article>('articles').list();
  const plain = await pc.collection('anything').list({ where: { whatever: 1 } });
  const loose: unknown = plain.items[0]?.whatever;

  // Declared names of methods, publications and routes.
  await pc.call('addTask', 'title');
  await pc.apply('addTask', ['title']);
  await pc.publication('openTasks');
  pc.subscribe('openTasks', [], {}).stop();
  await pc.route('/api/hello', { method: 'POST', body: { name: 'ann' } });
  void [title, done, again, count, sub, written, city, articles, loose];

  // @ts-expect-error tasks have no `titel`
  void items[0]!.titel;
  // @ts-expect-error nor may a selector name it
  await tasks.list({ where: { titel: 'x' } });
  // @ts-expect-error nor an aggregate's
  await tasks.aggregate({ where: { titel: 'x' }, count: true });
  // @ts-expect-error a task's title is a string
  await tasks.create({ title: 1 });
  // @ts-expect-error insert checks the document too
  await pc.collectionWrite('tasks').insert({ titel: 'x' });
  // @ts-expect-error live documents are typed as well
  pc.collection('tasks').subscribe({}, { added: (t) => void t.titel });
  // @ts-expect-error no such method
  await pc.call('addTsk');
  // @ts-expect-error no such publication
  await pc.publication('closedTasks');
  // @ts-expect-error no such route
  await pc.route('/api/helo');
  // @ts-expect-error the route answers GET and POST only
  await pc.route('/api/hello', { method: 'DELETE' });
  // @ts-expect-error an option the client does not know
  await tasks.list({}, { timeot: 5 });
  // @ts-expect-error an upload has no `progress` option (it is `onProgress`)
  await tasks.upload(id, 'cover', new Uint8Array(1), { name: 'a', progress: () => {} });
  // @ts-expect-error nor a subscription a `reconect`
  tasks.subscribe({}, {}, { reconect: {} });
  // @ts-expect-error nor a client a `timout`
  void new Portico('http://x', { timout: 1 });
}
