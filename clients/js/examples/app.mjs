import { readdirSync, readFileSync } from 'node:fs';
import { Portico } from 'portico-client';

const pc = new Portico(process.env.PORTICO_URL || 'http://127.0.0.1:3000');
/** The token of the newest mailed link to `page` (here read from the mail sink's folder). */
async function mailedToken(page) {
  for (;;) {
    const mails = readdirSync(process.env.MAIL_DIR).filter((f) => f.endsWith('.json')).sort().reverse();
    for (const mail of mails) {
      const text = JSON.parse(readFileSync(`${process.env.MAIL_DIR}/${mail}`, 'utf8')).text;
      const link = new RegExp(`/${page}\\?token=([\\w-]+)`).exec(text);
      if (link) return link[1];
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// 1. Sign up (and log in); the server mails a link to verify the address.
await pc.auth.register({ username: 'ann', email: 'ann@example.com', password: 'first-password' });

// 2. Collections: a project, and tasks that name it.
const projects = pc.collection('projects');
const tasks = pc.collection('tasks');
const garden = await projects.create({ name: 'Garden' });
for (const [title, hours] of [['Plant the apple tree', 3], ['Water the roses', 1], ['Paint the fence', 5]]) {
  await tasks.create({ title, hours, project: garden._id });
}

// 3. Expand: each task with its project in one request.
const { items, total } = await tasks.list({ sort: 'title', expand: 'project' });
console.log(`${total} tasks:`, items.map((t) => `${t.title} (${t.expand.project.name})`).join(', '));

// 4. Search, best match first; and the hours per project.
const found = await tasks.list({ search: 'apple tree' });
console.log('apple tree:', found.items.map((t) => t.title).join(', '));
const [hours] = await tasks.aggregate({ group: 'project', count: true, sum: 'hours' });
console.log(`hours: ${hours.sum_hours} over ${hours.count} tasks`);

// 5. A file: the garden's photo, uploaded with progress; a URL of its thumbnail for <img src>.
const photo = await projects.upload(garden, 'photo', readFileSync(new URL('../../../examples/app/garden.png', import.meta.url)), {
  name: 'garden.png',
  onProgress: (sent, size) => sent === size && console.log(`uploaded ${size} bytes`),
});
const src = await projects.fileURL(garden, 'photo', photo.name, { thumb: '100x100' });
console.log('thumbnail:', (await fetch(src)).headers.get('content-type'));

// 6. A live list of the open tasks; one is done, and leaves it.
const open = tasks.subscribe({ where: { done: { $ne: true } }, sort: 'title' }, {
  removed: (t) => console.log('live: done:', t.title),
  end: (reason) => console.log('live list ended:', reason),
});
await open.ready;
const fence = open.docs().find((t) => t.title === 'Paint the fence');
await tasks.update(fence._id, { done: true });
while (open.docs().length > 2) await new Promise((r) => setTimeout(r, 20));

// 7. A forgotten password: a mailed link, a new password; every session ends (the live list too).
await pc.auth.requestPasswordReset('ann@example.com');
await pc.auth.resetPassword(await mailedToken('reset-password'), 'second-password');
await tasks.list().catch((e) => console.log('old session:', e.status, e.reason));
await pc.auth.login({ username: 'ann', password: 'second-password' });
console.log('open tasks:', (await tasks.list({ where: { done: { $ne: true } } })).total);
