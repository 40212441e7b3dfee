// Compiled (never run) by test/generated-types.test.mjs beside the declarations that
// `portico types --client` writes for the repository's examples/app/portico.toml
// (portico-app.d.ts, made by the test): the app's documents come typed from its JSON Schemas, relations and files. The
// expected errors below must each be found, or the compile fails.
import { Portico } from 'portico-client';
import type { Projects, PorticoFile } from './portico-app.js';

export async function garden(pc: Portico): Promise<void> {
  const tasks = pc.collection<'tasks'>('tasks');
  const project = await pc.collection('projects').create({ name: 'Garden' });
  const made = await tasks.create({ title: 'Prune the apple tree', hours: 2, project: project._id });
  const { items } = await tasks.list({ where: { done: false }, sort: '-createdAt', expand: 'project' });
  const title: string = items[0]!.title;
  const hours: number | undefined = items[0]!.hours;
  const created: string = made.createdAt;
  const related: Projects | undefined = items[0]!.expand?.project;
  const photo: PorticoFile | undefined = related?.photo;
  const bytes: number | undefined = photo?.size;
  void [title, hours, created, bytes];

  // @ts-expect-error tasks have no `titel`
  void items[0]!.titel;
  // @ts-expect-error nor may a selector name it
  await tasks.list({ where: { titel: 'x' } });
  // @ts-expect-error a task's title is required
  await tasks.create({ hours: 1 });
  // @ts-expect-error hours are a number
  await tasks.create({ title: 'Weed', hours: 'two' });
  // @ts-expect-error a project's photo is file metadata, not a name
  const name: string = related!.photo!;
  void name;
}
