// The glue between the host (Rust) and the user's modules: the "portico" module's objects and
// the dispatcher every call from the host goes through. Evaluated once per runtime, before any
// user module. The host functions are taken out of the global object here, so user code can
// only reach the host through this file's API.
"use strict";
(() => {
  const host = globalThis.__portico_host;
  const done = globalThis.__portico_done;
  const writeLog = globalThis.__portico_log;
  delete globalThis.__portico_host;
  delete globalThis.__portico_done;
  delete globalThis.__portico_log;

  class PorticoError extends Error {
    constructor(error, reason, details) {
      super(reason === undefined ? String(error) : String(reason));
      this.name = "PorticoError";
      this.error = error;
      this.reason = reason;
      this.details = details;
    }
  }

  // Where the code that called a definition or console function is: "file:line:column".
  function callerPlace(skip) {
    const lines = String(new Error().stack || "").split("\n");
    for (let i = skip; i < lines.length; i++) {
      const m = /\(?([^\s()]+:\d+:\d+)\)?\s*$/.exec(lines[i]);
      if (m && !m[1].startsWith("portico:")) return m[1];
    }
    return "<unknown>";
  }

  const registry = {
    methods: new Map(),
    publications: new Map(),
    routes: [],
    rules: new Map(),
    hooks: new Map(),
    jobs: new Map(),
    crons: new Map(),
    channels: [],
  };
  let loading = true;
  function atLoad(what) {
    if (!loading) {
      throw new Error(`${what} can only be called while the scripts load (at the top level of a module)`);
    }
  }

  function encode(value) {
    if (value === undefined) return "null";
    const type = typeof value;
    if (type === "function") throw new TypeError("a function cannot be sent as JSON");
    if (type === "bigint") throw new TypeError("a BigInt cannot be sent as JSON; convert it to a Number or a String");
    if (type === "symbol") throw new TypeError("a Symbol cannot be sent as JSON");
    try {
      const text = JSON.stringify(value);
      return text === undefined ? "null" : text;
    } catch (e) {
      const message = String(e && e.message);
      if (/circular|cycle/i.test(message)) throw new TypeError("the value has a cycle (an object that contains itself) and cannot be sent as JSON");
      if (/bigint/i.test(message)) throw new TypeError("the value holds a BigInt, which cannot be sent as JSON; convert it to a Number or a String");
      throw e;
    }
  }

  function failure(e) {
    if (e instanceof PorticoError || (e && typeof e === "object" && e.name === "PorticoError")) {
      let details = null;
      try { details = e.details === undefined ? null : JSON.parse(encode(e.details)); } catch (_) { details = null; }
      return JSON.stringify({ portico: {
        error: String(e.error),
        reason: e.reason === undefined || e.reason === null ? null : String(e.reason),
        details,
        status: typeof e.statusCode === "number" ? e.statusCode : null,
      } });
    }
    let message;
    if (e instanceof Error) {
      message = `${e.name}: ${e.message}`;
      if (e.stack) message += "\n" + String(e.stack).replace(/\s+$/, "");
    } else {
      let shown;
      try { shown = typeof e === "string" ? JSON.stringify(e) : String(e); } catch (_) { shown = typeof e; }
      message = `a value that is not an Error was thrown: ${shown} (throw new Error(...) or new PorticoError(...) instead)`;
    }
    return JSON.stringify({ failed: message });
  }

  function call(op, payload) {
    return host(op, encode(payload)).then(
      (text) => JSON.parse(text),
      (text) => {
        let e;
        try { e = JSON.parse(text); } catch (_) { e = { error: "internal-server-error", reason: String(text) }; }
        const error = new PorticoError(e.error, e.reason === null ? undefined : e.reason, e.details === null ? undefined : e.details);
        if (e.status) error.statusCode = e.status;
        throw error;
      },
    );
  }

  function selectorOf(selector) {
    if (selector === undefined || selector === null) return {};
    if (typeof selector === "string") return { _id: selector };
    return selector;
  }

  class Cursor {
    constructor(collection, selector, options) {
      this.collection = collection;
      this.selector = selector;
      this.options = options || {};
    }
    fetch() {
      return call("find", { collection: this.collection, selector: this.selector, options: this.options });
    }
    count() {
      return call("count", { collection: this.collection, selector: this.selector });
    }
    async forEach(f) {
      (await this.fetch()).forEach(f);
    }
    async map(f) {
      return (await this.fetch()).map(f);
    }
  }

  const OPERATIONS = ["insert", "update", "remove"];

  class Collection {
    constructor(name) {
      if (typeof name !== "string" || name === "") throw new TypeError("collection(name): name must be a non-empty string");
      this.name = name;
      const hooks = (when) => {
        const out = {};
        for (const op of OPERATIONS) {
          out[op] = (f) => {
            atLoad(`collection(${JSON.stringify(name)}).${when}.${op}`);
            if (typeof f !== "function") throw new TypeError(`${when}.${op} takes a function`);
            const list = registry.hooks.get(name) || [];
            list.push({ when, op, run: f, place: callerPlace(2) });
            registry.hooks.set(name, list);
          };
        }
        return out;
      };
      this.before = hooks("before");
      this.after = hooks("after");
    }
    find(selector, options) {
      return new Cursor(this.name, selectorOf(selector), options);
    }
    findOne(selector, options) {
      return call("findOne", { collection: this.name, selector: selectorOf(selector), options: options || {} });
    }
    insert(doc) {
      return call("insert", { collection: this.name, doc });
    }
    update(selector, modifier, options) {
      return call("update", { collection: this.name, selector: selectorOf(selector), modifier, options: options || {} });
    }
    remove(selector) {
      return call("remove", { collection: this.name, selector: selectorOf(selector) });
    }
    allow(rules) { this.#rules("allow", rules); }
    deny(rules) { this.#rules("deny", rules); }
    #rules(kind, rules) {
      atLoad(`collection(${JSON.stringify(this.name)}).${kind}`);
      const list = registry.rules.get(this.name) || [];
      for (const op of Object.keys(rules || {})) {
        if (!OPERATIONS.includes(op)) throw new TypeError(`${kind}({...}): unknown operation ${JSON.stringify(op)}; use insert, update or remove`);
        if (typeof rules[op] !== "function") throw new TypeError(`${kind}({${op}}) takes a function`);
        list.push({ kind, op, run: rules[op], place: callerPlace(3) });
      }
      registry.rules.set(this.name, list);
    }
  }

  function collection(name) {
    return new Collection(name);
  }

  function methods(defs) {
    atLoad("methods()");
    const place = callerPlace(2);
    for (const name of Object.keys(defs || {})) {
      let def = defs[name];
      if (typeof def === "function") def = { run: def };
      if (!def || typeof def.run !== "function") throw new TypeError(`method ${JSON.stringify(name)}: give a function, or { run() {...} } with url and httpMethod`);
      if (registry.methods.has(name)) {
        throw new Error(`method ${JSON.stringify(name)} is defined twice: at ${registry.methods.get(name).place} and at ${place}`);
      }
      registry.methods.set(name, { run: def.run, url: def.url ?? null, httpMethod: def.httpMethod ?? null, place });
    }
  }

  function publish(name, f, options) {
    atLoad("publish()");
    const place = callerPlace(2);
    if (typeof f !== "function") throw new TypeError(`publish(${JSON.stringify(name)}, f): f must be a function`);
    if (registry.publications.has(name)) {
      throw new Error(`publication ${JSON.stringify(name)} is defined twice: at ${registry.publications.get(name).place} and at ${place}`);
    }
    options = options || {};
    registry.publications.set(name, { run: f, url: options.url ?? null, httpMethod: options.httpMethod ?? null, place });
  }

  // Durable jobs: defined at load, enqueued from any call, run by the server's job worker.
  function optionalCount(value, what) {
    if (value === undefined || value === null) return null;
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) throw new TypeError(`${what} must be a number, 0 or more`);
    return Math.floor(n);
  }
  const jobs = {
    define(name, f, options) {
      atLoad("jobs.define()");
      const place = callerPlace(2);
      if (typeof name !== "string" || name === "") throw new TypeError("jobs.define(name, f): name must be a non-empty string");
      if (typeof f !== "function") throw new TypeError(`jobs.define(${JSON.stringify(name)}, f): f must be a function`);
      if (registry.jobs.has(name)) {
        throw new Error(`job ${JSON.stringify(name)} is defined twice: at ${registry.jobs.get(name).place} and at ${place}`);
      }
      options = options || {};
      registry.jobs.set(name, {
        run: f,
        place,
        retries: optionalCount(options.retries, "retries"),
        backoff: options.backoff === undefined ? null : String(options.backoff),
        timeout_ms: optionalCount(options.timeout_ms, "timeout_ms"),
        retry_delay_ms: optionalCount(options.retry_delay_ms, "retry_delay_ms"),
      });
    },
    enqueue(name, args, options) {
      options = options || {};
      const runAt = options.runAt instanceof Date ? options.runAt.getTime() : options.runAt;
      return call("jobs.enqueue", {
        name: String(name),
        args: args === undefined ? null : args,
        options: { runAt: runAt ?? null, delayMs: options.delayMs ?? null, key: options.key ?? null },
      });
    },
  };

  // Signed webhooks to the receivers of [[webhooks]], delivered by the job worker.
  const webhooks = {
    send(url, event) {
      if (!event || typeof event !== "object" || typeof event.type !== "string") {
        throw new TypeError("webhooks.send(url, event): event must be { type: string, data }");
      }
      return call("webhooks.send", { url: String(url), type: event.type, data: event.data === undefined ? null : event.data });
    },
  };

  // A schedule: f runs at each due time of the cron expression, as the job "cron:<name>".
  function cron(name, expression, f, options) {
    atLoad("cron()");
    const place = callerPlace(2);
    if (typeof name !== "string" || name === "") throw new TypeError("cron(name, expression, f): name must be a non-empty string");
    if (typeof expression !== "string") throw new TypeError(`cron(${JSON.stringify(name)}, expression, f): expression must be a string such as "0 9 * * 1-5"`);
    if (typeof f !== "function") throw new TypeError(`cron(${JSON.stringify(name)}, expression, f): f must be a function`);
    if (registry.crons.has(name)) {
      throw new Error(`cron ${JSON.stringify(name)} is defined twice: at ${registry.crons.get(name).place} and at ${place}`);
    }
    options = options || {};
    registry.crons.set(name, { expression, timezone: options.timezone == null ? null : String(options.timezone), place });
    registry.jobs.set(`cron:${name}`, {
      run: f,
      place,
      retries: optionalCount(options.retries ?? 0, "retries"),
      backoff: null,
      timeout_ms: optionalCount(options.timeout_ms, "timeout_ms"),
      retry_delay_ms: null,
    });
  }

  // Channels: who may join and send, by name pattern (`*` stands for any run of characters).
  // A function returns true to let the client in; anything else refuses.
  function channels(defs) {
    atLoad("channels()");
    const place = callerPlace(2);
    for (const pattern of Object.keys(defs || {})) {
      const def = defs[pattern];
      if (!def || typeof def !== "object") throw new TypeError(`channels({${JSON.stringify(pattern)}: ...}): give { join(name) {...}, send(name, message) {...} }`);
      for (const k of Object.keys(def)) {
        if (k !== "join" && k !== "send") throw new TypeError(`channels({${JSON.stringify(pattern)}}): unknown function ${JSON.stringify(k)}; use join or send`);
        if (typeof def[k] !== "function") throw new TypeError(`channels({${JSON.stringify(pattern)}}).${k} must be a function`);
      }
      registry.channels.push({ pattern, join: def.join ?? null, send: def.send ?? null, place });
    }
  }

  // Sends `event` with `payload` to every member of `channel`, on every instance.
  function broadcast(channel, event, payload) {
    return call("channels.broadcast", { channel: String(channel), event: String(event), payload: payload === undefined ? null : payload });
  }

  const HTTP_METHODS = ["get", "post", "put", "patch", "delete", "options"];
  function api(path) {
    const base = String(path ?? "").replace(/^\/+|\/+$/g, "");
    return {
      addRoute(route, options, endpoints) {
        atLoad(`api(${JSON.stringify(base)}).addRoute()`);
        if (endpoints === undefined) { endpoints = options; options = {}; }
        const place = callerPlace(2);
        const methods = {};
        for (const m of Object.keys(endpoints || {})) {
          if (!HTTP_METHODS.includes(m)) throw new TypeError(`addRoute(${JSON.stringify(route)}): unknown method ${JSON.stringify(m)}`);
          let e = endpoints[m];
          if (typeof e === "function") e = { action: e };
          if (!e || typeof e.action !== "function") throw new TypeError(`addRoute(${JSON.stringify(route)}).${m}: give a function or { action() {...} }`);
          methods[m] = e;
        }
        registry.routes.push({ api: base, path: String(route).replace(/^\/+/, ""), options: options || {}, methods, place });
        return this;
      },
    };
  }

  function describe() {
    const methods = [];
    for (const [name, m] of registry.methods) methods.push({ name, url: m.url, httpMethod: m.httpMethod, place: m.place });
    const publications = [];
    for (const [name, p] of registry.publications) publications.push({ name, url: p.url, httpMethod: p.httpMethod, place: p.place });
    const routes = registry.routes.map((r, index) => ({
      index,
      api: r.api,
      path: r.path,
      authRequired: !!r.options.authRequired,
      roleRequired: r.options.roleRequired ?? [],
      place: r.place,
      methods: Object.fromEntries(Object.entries(r.methods).map(([m, e]) => [m, {
        authRequired: e.authRequired ?? null,
        roleRequired: e.roleRequired ?? [],
      }])),
    }));
    const rules = [];
    for (const [collection, list] of registry.rules) list.forEach((r, index) => rules.push({ collection, index, kind: r.kind, op: r.op, place: r.place }));
    const hooks = [];
    for (const [collection, list] of registry.hooks) list.forEach((h, index) => hooks.push({ collection, index, when: h.when, op: h.op, place: h.place }));
    const jobList = [];
    for (const [name, j] of registry.jobs) {
      jobList.push({ name, place: j.place, retries: j.retries, backoff: j.backoff, timeout_ms: j.timeout_ms, retry_delay_ms: j.retry_delay_ms });
    }
    const crons = [];
    for (const [name, c] of registry.crons) crons.push({ name, expression: c.expression, timezone: c.timezone, place: c.place });
    const channelList = registry.channels.map((c, index) => ({ index, pattern: c.pattern, join: !!c.join, send: !!c.send, place: c.place }));
    return { methods, publications, routes, rules, hooks, jobs: jobList, crons, channels: channelList };
  }

  function publicationContext(ctx, events) {
    return {
      userId: ctx.userId ?? null,
      user: ctx.user ?? null,
      added(collection, id, fields) { events.push(["added", String(collection), String(id), fields ?? {}]); },
      changed(collection, id, fields) { events.push(["changed", String(collection), String(id), fields ?? {}]); },
      removed(collection, id) { events.push(["removed", String(collection), String(id)]); },
      ready() { events.push(["ready"]); },
    };
  }

  function cursorsOf(value, name) {
    if (value === undefined || value === null) return [];
    const list = Array.isArray(value) ? value : [value];
    return list.map((c) => {
      if (!(c instanceof Cursor)) throw new TypeError(`publication ${JSON.stringify(name)} returned something that is not a cursor; return collection(...).find(...), an array of them, or nothing`);
      return { collection: c.collection, selector: c.selector, options: c.options };
    });
  }

  async function run(kind, name, ctx, args) {
    switch (kind) {
      case "load": {
        await import(name);
        loading = false;
        return { value: describe() };
      }
      case "method": {
        const m = registry.methods.get(name);
        if (!m) throw new PorticoError("method-not-found", `Method '${name}' not found`);
        let status = null;
        const invocation = {
          userId: ctx.userId ?? null,
          user: ctx.user ?? null,
          setHttpStatusCode(code) { status = Number(code); },
        };
        const value = await m.run.apply(invocation, args);
        return { value, status };
      }
      case "publish": {
        const p = registry.publications.get(name);
        if (!p) throw new PorticoError("publication-not-found", `Publication '${name}' not found`);
        const events = [];
        const value = await p.run.apply(publicationContext(ctx, events), args);
        return { value: { cursors: cursorsOf(value, name), events } };
      }
      case "rule": {
        const r = (registry.rules.get(name) || [])[ctx.index];
        const value = await r.run(...args);
        return { value: !!value };
      }
      case "hook": {
        const h = (registry.hooks.get(name) || [])[ctx.index];
        const self = { userId: ctx.userId ?? null };
        if (ctx.previous !== undefined) self.previous = ctx.previous;
        const value = await h.run.apply(self, args);
        return { value: { result: value === false ? false : null, args } };
      }
      case "channel": {
        const c = registry.channels[ctx.index];
        const f = c && c[ctx.act];
        if (!f) return { value: false };
        const value = await f.apply({ userId: ctx.userId ?? null }, args);
        return { value: value === true };
      }
      case "job": {
        const j = registry.jobs.get(name);
        if (!j) throw new Error(`job ${JSON.stringify(name)} is not defined (any more)`);
        const self = { jobId: ctx.jobId, attempt: ctx.attempt, runId: ctx.runId };
        await j.run.apply(self, args === null ? [null] : [args]);
        return { value: null };
      }
      case "route": {
        const r = registry.routes[ctx.index];
        const e = r.methods[ctx.method];
        let finished = false;
        const response = { statusCode: 200, headers: {}, body: "" };
        const reply = {
          setHeader(k, v) { response.headers[String(k)] = String(v); },
          writeHead(code, headers) { response.statusCode = Number(code); Object.assign(response.headers, headers || {}); },
          write(chunk) { response.body += String(chunk); },
          end(chunk) { if (chunk !== undefined) response.body += String(chunk); },
          set statusCode(code) { response.statusCode = Number(code); },
          get statusCode() { return response.statusCode; },
        };
        const context = {
          urlParams: ctx.urlParams,
          queryParams: ctx.queryParams,
          bodyParams: ctx.bodyParams,
          user: ctx.user ?? null,
          userId: ctx.userId ?? null,
          request: ctx.request,
          response: reply,
          done() { finished = true; },
        };
        const value = await e.action.apply(context, args);
        if (finished) return { value: { done: response } };
        return { value: { value: value === undefined ? null : value, undefined: value === undefined } };
      }
      default:
        throw new Error(`unknown call kind ${kind}`);
    }
  }

  globalThis.__portico_dispatch = function (id, kind, name, ctxJson, argsJson) {
    let pending;
    try {
      pending = run(kind, name, JSON.parse(ctxJson), JSON.parse(argsJson));
    } catch (e) {
      pending = Promise.reject(e);
    }
    pending.then(
      (r) => {
        let text;
        try {
          text = `{"ok":${encode(r.value)},"status":${r.status ?? null}}`;
        } catch (e) {
          done(id, failure(e));
          return;
        }
        done(id, text);
      },
      (e) => done(id, failure(e)),
    );
  };

  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof Error) return v.stack ? `${v.name}: ${v.message}\n${v.stack}` : `${v.name}: ${v.message}`;
    try {
      const text = JSON.stringify(v);
      return text === undefined ? String(v) : text;
    } catch (_) {
      return String(v);
    }
  }
  const consoleAt = (level) => (...args) => writeLog(level, args.map(show).join(" "), callerPlace(2));
  globalThis.console = {
    log: consoleAt("info"),
    info: consoleAt("info"),
    debug: consoleAt("debug"),
    warn: consoleAt("warn"),
    error: consoleAt("error"),
  };

  function headersOf(obj) {
    const map = new Map(Object.entries(obj || {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
    return { get: (k) => map.get(String(k).toLowerCase()) ?? null, has: (k) => map.has(String(k).toLowerCase()), entries: () => map.entries() };
  }
  globalThis.fetch = async function (url, init) {
    init = init || {};
    const r = await call("fetch", {
      url: String(url),
      method: init.method ? String(init.method) : "GET",
      headers: init.headers || {},
      body: init.body === undefined || init.body === null ? null : String(init.body),
    });
    return {
      status: r.status,
      ok: r.status >= 200 && r.status < 300,
      statusText: r.statusText,
      headers: headersOf(r.headers),
      url: String(url),
      text: async () => r.body,
      json: async () => JSON.parse(r.body),
    };
  };

  const accounts = {
    createUser: (options) => call("accounts.createUser", options || {}),
    findUserById: (id) => call("accounts.findUser", { id }),
    findUserByUsername: (username) => call("accounts.findUser", { username }),
    findUserByEmail: (email) => call("accounts.findUser", { email }),
    setPassword: (userId, password) => call("accounts.setPassword", { userId, password }),
    logoutEverywhere: (userId) => call("accounts.logoutEverywhere", { userId }),
  };
  const asList = (roles) => (Array.isArray(roles) ? roles : [roles]).map(String);
  const roles = {
    addUsersToRoles: (userId, names) => call("roles.add", { userId, roles: asList(names) }),
    removeUsersFromRoles: (userId, names) => call("roles.remove", { userId, roles: asList(names) }),
    userIsInRole: (userId, names) => call("roles.is", { userId, roles: asList(names) }),
    getRolesForUser: (userId) => call("roles.get", { userId }),
  };

  // Bytes cross the host boundary as base64 inside JSON (the engine has no atob/btoa).
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_INDEX = new Uint8Array(128);
  for (let i = 0; i < B64.length; i++) B64_INDEX[B64.charCodeAt(i)] = i;
  function toBase64(bytes) {
    const parts = [];
    const CHUNK = 3 * 4096;
    for (let start = 0; start < bytes.length; start += CHUNK) {
      const end = Math.min(start + CHUNK, bytes.length);
      let out = "";
      for (let i = start; i < end; i += 3) {
        const a = bytes[i], b = i + 1 < end ? bytes[i + 1] : 0, c = i + 2 < end ? bytes[i + 2] : 0;
        out += B64[a >> 2] + B64[((a & 3) << 4) | (b >> 4)]
          + (i + 1 < end ? B64[((b & 15) << 2) | (c >> 6)] : "=")
          + (i + 2 < end ? B64[c & 63] : "=");
      }
      parts.push(out);
    }
    return parts.join("");
  }
  function fromBase64(text) {
    const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
    const out = new Uint8Array((text.length / 4) * 3 - pad);
    let o = 0;
    for (let i = 0; i < text.length; i += 4) {
      const n = (B64_INDEX[text.charCodeAt(i)] << 18) | (B64_INDEX[text.charCodeAt(i + 1)] << 12)
        | (B64_INDEX[text.charCodeAt(i + 2)] << 6) | B64_INDEX[text.charCodeAt(i + 3)];
      if (o < out.length) out[o++] = n >> 16;
      if (o < out.length) out[o++] = (n >> 8) & 255;
      if (o < out.length) out[o++] = n & 255;
    }
    return out;
  }
  function content(data) {
    if (typeof data === "string") return { text: data };
    if (data instanceof ArrayBuffer) return { base64: toBase64(new Uint8Array(data)) };
    if (ArrayBuffer.isView(data)) return { base64: toBase64(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) };
    throw new TypeError("files.attach(): give the content as a string, a Uint8Array or an ArrayBuffer");
  }
  const slot = (collection, id, field) => ({ collection: String(collection), id: String(id), field: String(field) });
  // The files of documents' file fields, through the platform's files service, as server code.
  const files = {
    list: (collection, id, field) => call("files.list", slot(collection, id, field)),
    meta: (collection, id, field, name) => call("files.meta", { ...slot(collection, id, field), name: String(name) }),
    read: async (collection, id, field, name) =>
      fromBase64((await call("files.read", { ...slot(collection, id, field), name: String(name) })).base64),
    readText: async (collection, id, field, name) =>
      (await call("files.read", { ...slot(collection, id, field), name: String(name), text: true })).text,
    attach: (collection, id, field, name, data, type) =>
      call("files.attach", { ...slot(collection, id, field), name: String(name), type: type == null ? null : String(type), ...content(data) }),
    delete: (collection, id, field, name) => call("files.delete", { ...slot(collection, id, field), name: String(name) }),
  };

  globalThis.__portico_module = { methods, publish, api, collection, files, accounts, roles, jobs, cron, webhooks, channels, broadcast, PorticoError };
})();
