
import { methods, publish, api, collection, accounts, roles, PorticoError } from "portico";
import { shout } from "./lib/text.ts";

interface Todo { _id?: string; title: string; done?: boolean; owner?: string | null }

const todos = collection<Todo>("todos");

methods({
  echo(...args: unknown[]) { return args.length === 1 ? args[0] : args; },
  whoami() { return { userId: this.userId, username: this.user ? this.user.username : null }; },
  shout(s: string): string { return shout(s); },
  async addTodo(title: string) {
    this.setHttpStatusCode(201);
    return await todos.insert({ title, done: false, owner: this.userId });
  },
  async countTodos() { return await todos.find({}).count(); },
  async countAudit() { return await collection("audit").find({}).count(); },
  refuse() { throw new PorticoError("not-yours", "That is not yours", { id: 7 }); },
  teapot() { const e = new PorticoError("teapot", "I am one"); (e as any).statusCode = 418; throw e; },
  broken() { throw new Error("secret internal detail"); },
  spin() { for (;;) {} },
  logs() { console.log("hello from a script"); return 1; },
  async slowFetch(url: string) {
    const r = await fetch(url);
    return { status: r.status, body: await r.text() };
  },
  rename: { url: "todos/:0/rename", httpMethod: "post", async run(id: string, title: string) {
    return await todos.update(id, { $set: { title } });
  } },
  async makeUser(name: string) {
    const id = await accounts.createUser({ username: name, password: "pw-" + name });
    await roles.addUsersToRoles(id, "editor");
    return { id, editor: await roles.userIsInRole(id, ["editor"]) };
  },
});

publish("openTodos", function () {
  return todos.find({ done: false }, { sort: { title: 1 }, fields: { owner: 0 } });
});

publish("byHand", function (n: number = 3) {
  for (let i = 0; i < n; i++) this.added("numbers", "n" + i, { value: i });
  this.ready();
});

// Write hooks: every write of todos, from a method, a generated route or the auto API.
todos.before.insert((userId, doc) => {
  if (doc.title === "veto") throw new PorticoError("vetoed", "That title is vetoed");
  (doc as any).titleLength = doc.title.length;
});
todos.after.insert(async (userId, doc) => { await collection("audit").insert({ todo: doc._id, by: userId }); });

collection("notes").allow({
  insert(userId: string | null, doc: any) { return doc.text !== "forbidden"; },
});
collection("notes").deny({
  insert(userId: string | null, doc: any) { if (doc.text === "crash") throw new Error("rule broke"); return false; },
});

api("api").addRoute("hello/:name", {
  get() { return { hi: this.urlParams.name, q: this.queryParams.q ?? null }; },
  post: { authRequired: true, action() { return { statusCode: 202, headers: { "X-From": "script" }, body: { by: this.userId } }; } },
});
api("api").addRoute("todo/:id", {
  async get() {
    const t = await todos.findOne(this.urlParams.id);
    if (!t) throw Object.assign(new PorticoError("not-found", "No such todo"), { statusCode: 404 });
    return t;
  },
});
api("api").addRoute("raw", {
  get() { this.response.writeHead(200, { "Content-Type": "text/plain" }); this.response.end("plain text"); this.done(); },
});
