// The todo application's logic. Portico strips the types and runs it; `portico types` prints
// the declarations of the "portico" module for your editor.
import { methods, publish, api, collection, PorticoError } from "portico";
import { cleanTitle } from "./titles.ts";

interface Todo {
  _id: string;
  title: string;
  done: boolean;
  owner: string;
}

const todos = collection<Todo>("todos");

function needUser(userId: string | null): string {
  if (!userId) {
    const e = new PorticoError("unauthorized", "Log in first");
    e.statusCode = 401;
    throw e;
  }
  return userId;
}

methods({
  // POST /methods/addTodo ["Buy milk"] -> 201 "<id>"
  async addTodo(title: string) {
    const owner = needUser(this.userId);
    this.setHttpStatusCode(201);
    const id = await todos.insert({ title: cleanTitle(title), done: false, owner });
    console.log(`todo ${id} added by ${this.user?.username}`);
    return id;
  },

  // POST /methods/toggle ["<id>"] -> true (done) or false
  async toggle(id: string) {
    const owner = needUser(this.userId);
    const todo = await todos.findOne({ _id: id, owner });
    if (!todo) {
      const e = new PorticoError("not-found", "No such todo");
      e.statusCode = 404;
      throw e;
    }
    await todos.update(id, { $set: { done: !todo.done } });
    return !todo.done;
  },

  // POST /methods/clearDone -> how many were removed
  async clearDone() {
    const owner = needUser(this.userId);
    return await todos.remove({ owner, done: true });
  },
});

// A hook: a write that marks a todo done stamps when, whoever writes it (methods here, or a
// client through the auto API or a generated route).
todos.before.update(function (userId, doc, fieldNames, modifier) {
  const set = (modifier as { $set?: { [k: string]: unknown } }).$set;
  if (set && set.done === true) set.doneAt = new Date().toISOString();
});

// GET /publications/myTodos: the caller's todos; with Accept: text/event-stream, live.
publish("myTodos", function () {
  return todos.find({ owner: this.userId ?? "" }, { sort: { createdAt: 1 }, fields: { owner: 0 } });
});

// GET /api/stats (routes door, token from POST /api/login or /users/login)
api("api").addRoute("stats", { authRequired: true }, {
  async get() {
    const mine = { owner: this.userId! };
    const total = await todos.find(mine).count();
    const done = await todos.find({ ...mine, done: true }).count();
    return { total, done, open: total - done };
  },
});
