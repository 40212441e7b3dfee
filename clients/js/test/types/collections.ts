// Compiled (never run) by `npm test`: the generic document types work as the README shows, and
// the mistakes they are there to catch do not compile (each @ts-expect-error must find one).
import { Portico, PorticoError, etagOf, type Page } from 'portico-client';

interface Task {
  _id: string;
  title: string;
  done: boolean;
  createdAt?: string;
}

export async function typed(pc: Portico): Promise<void> {
  const tasks = pc.collection<Task>('tasks');
  const made = await tasks.create({ title: 'typed', done: false });
  const title: string = made.title;
  const id: string = made._id;
  const page: Page<Task> = await tasks.list({ where: { done: false }, sort: { createdAt: -1 }, fields: ['title'] });
  for await (const t of tasks.list()) {
    const done: boolean = t.done;
    void done;
  }
  await tasks.update(id, { done: true, 'meta.by': 'me' }, { ifMatch: made });
  await tasks.replace(id, { title, done: true }, { ifMatch: etagOf(made) ?? '*' });
  const sub = tasks.subscribe({ where: { done: false } }, { changed: (now, before) => void (now.title === before.title) });
  const docs: Task[] = sub.docs();
  const n: number = await pc.collectionWrite<Task>('tasks').update(id, { done: false });
  const result: { ok: boolean } = await pc.call<{ ok: boolean }>('m', 1, 'two');
  const error = new PorticoError(400, 'x', 'y');
  const status: number = error.status;
  void [page, docs, n, result, status];

  // @ts-expect-error a Task's title is a string
  await tasks.create({ title: 1, done: false });
  // @ts-expect-error done is required
  await tasks.create({ title: 'no done' });
  // @ts-expect-error a wrong type for a known field
  await tasks.update(id, { done: 'yes' });
  // @ts-expect-error documents of this collection have no `missing` field
  made.missing.toString();
}
