import { Auth, type TokenStore, tokenStore } from './auth.js';
import { Channel, LiveSocket, type SocketOptions } from './channel.js';
import type { Collections, DocOf, Methods, MethodOf, NameOf, Publications, Routes } from './app.js';
import { type BatchOp, type BatchResult, Collection, type Doc, type NewDoc, type Patch, type WithId, type WriteOptions, ifMatchHeader } from './collection.js';
import { PorticoError, known } from './error.js';
import { type CallOptions, type Transport, jsend, send } from './http.js';
import { LIVE, type LiveHandlers, type LiveOptions, Subscription } from './live.js';

/** Options of a client. */
export interface PorticoOptions {
  /** The routes door's base path, version included (`"api/v1/"`; default `"api/"`). */
  api?: string;
  /** Where the auto API is mounted (default: the root, `""`). */
  auto?: string;
  /**
   * Where the login token is kept: `"memory"` (the default), `"localStorage"` (shared by the
   * origin's tabs, kept across restarts), `"sessionStorage"` (this tab), or any `{get, set, remove}`.
   */
  tokenStore?: 'memory' | 'localStorage' | 'sessionStorage' | TokenStore;
  /** The key the token store keeps the session under (default `"portico.auth"`). */
  tokenKey?: string;
  /** Which door `login` uses: the routes door's `{api}login` (default) or the auto API's `/users/login`. */
  loginVia?: 'routes' | 'auto';
  /** Milliseconds before a call fails with code `timeout` (default 30000; 0: never). */
  timeout?: number;
  /**
   * How many times a GET is tried again when it got no reply or a 502, 503 or 504 (after
   * `Retry-After`, or 250 ms doubled per try; default 2; 0: never). Writes are never repeated.
   */
  retries?: number;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
  /** The live socket of `channel()`: its WebSocket class and reconnect delays. */
  socket?: SocketOptions;
  /**
   * How live lists and publications reach the server by default: `'sse'` (the default), a
   * server-sent events stream each, or `'socket'`, all over the client's one live socket (the
   * WebSocket its channels use). A subscription's own `transport` option wins.
   */
  live?: 'sse' | 'socket';
}

/** Options of a publication: where it is served, when it has its own `url` and `http_method`. */
export interface PublicationOptions extends CallOptions {
  /**
   * Its path (default `publications/<name>`); `:0`, `:1`, ... take the arguments of those
   * positions, as the server's url parameters do.
   */
  path?: string;
  /** `GET` (default) or `POST`; a `POST` sends the arguments not in the path as a JSON array. */
  method?: 'GET' | 'POST';
}

/** Options of a call of one of the server's own routes (`pc.route`). */
export interface RouteOptions<M extends string = string> extends CallOptions {
  /** The method (default `GET`). */
  method?: M;
  /** A JSON body. */
  body?: unknown;
  /** Query parameters. */
  query?: Record<string, string | number | undefined>;
  /** Headers of its own. */
  headers?: Record<string, string>;
}

const CALL = 'signal,timeout';
const PUBLICATION = CALL + ',path,method';

/** A collection's write endpoints of the auto API (`POST /<name>`, `PATCH`/`DELETE /<name>/:_id`), under its rules. */
export class CollectionWrite<T extends object = Doc> {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly path: string,
  ) {}

  /** Inserts a document; returns its new `_id`. */
  async insert(doc: NewDoc<T>, options: CallOptions = {}): Promise<string> {
    const reply = await send(this.t, 'auto', { ...known('A call', options, CALL), method: 'POST', path: this.path, body: doc });
    return reply.body as string;
  }

  /** Sets the fields of `patch`; returns how many documents changed (0 or 1). */
  async update(id: string, patch: Patch<T>, options: WriteOptions = {}): Promise<number> {
    const headers = ifMatchHeader(known('A write', options, CALL + ',ifMatch').ifMatch);
    return (await send(this.t, 'auto', { ...options, method: 'PATCH', path: this.path + '/' + encodeURIComponent(id), body: patch, headers })).body as number;
  }

  /** Removes the document; returns how many were removed (0 or 1). */
  async remove(id: string, options: WriteOptions = {}): Promise<number> {
    const headers = ifMatchHeader(known('A write', options, CALL + ',ifMatch').ifMatch);
    return (await send(this.t, 'auto', { ...options, method: 'DELETE', path: this.path + '/' + encodeURIComponent(id), headers })).body as number;
  }
}

/** `name`'s path under `base`, and the request that carries `args`. */
function publicationTarget(base: string, name: string, args: unknown[], options: PublicationOptions) {
  const used = new Set<number>();
  let path = (options.path ?? base + 'publications/' + encodeURIComponent(name)).replace(/:(\d+)/g, (_, n) => {
    used.add(Number(n));
    return encodeURIComponent(String(args[Number(n)]));
  });
  const rest = args.filter((_, i) => !used.has(i));
  const method = options.method ?? 'GET';
  if (method === 'GET') for (const arg of rest) path += '/' + encodeURIComponent(String(arg));
  return { path, method, ...(method !== 'GET' && rest.length > 0 && { body: rest }) };
}

/**
 * A client of one Portico server: `auth`, the routes door's collections, and the auto API's
 * methods, collection writes and publications, live or once.
 *
 * ```ts
 * const pc = new Portico('http://127.0.0.1:3000', { api: 'api/v1/' });
 * await pc.auth.login({ username: 'ed', password: 'ed-secret' });
 * const { items, total } = await pc.collection<Article>('articles').list({ sort: '-createdAt', limit: 10 });
 * ```
 */
export class Portico {
  /** The server's base URL. */
  readonly url: string;
  /** Logging in and out, and who is logged in. */
  readonly auth: Auth;
  /** @internal */
  readonly transport: Transport;
  readonly #api: string;
  readonly #auto: string;
  readonly #socketOptions: SocketOptions;
  #socket: LiveSocket | null = null;
  #fileToken: { login: string; token: string; expires: number } | null = null;
  /** @internal The default transport of live subscriptions. */
  readonly liveTransport: 'sse' | 'socket';

  constructor(url: string, options: PorticoOptions = {}) {
    known('A client', options, 'api,auto,tokenStore,tokenKey,loginVia,timeout,retries,fetch,socket,live');
    known('The socket', options.socket, 'WebSocket,reconnect,fallbacks');
    known('reconnect', options.socket?.reconnect, 'minDelay,maxDelay');
    const base = url.replace(/\/*$/, '/');
    this.url = base;
    const dir = (p: string) => p.replace(/^\/+/, '').replace(/([^/])$/, '$1/');
    this.#api = dir(options.api ?? 'api/');
    this.#auto = dir(options.auto ?? '');
    this.#socketOptions = options.socket ?? {};
    this.liveTransport = options.live ?? 'sse';
    const fetcher = options.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!fetcher) throw new PorticoError(0, 'error', 'No fetch: pass options.fetch');
    this.transport = {
      base,
      fetch: fetcher,
      timeout: options.timeout ?? 30000,
      retries: options.retries ?? 2,
      token: () => this.auth.token,
      refused: (token) => this.auth.ended(token),
    };
    const store = options.tokenStore;
    this.auth = new Auth(this.transport, tokenStore(store), options.tokenKey ?? 'portico.auth', this.#api, options.loginVia ?? 'routes', this.#auto, store === 'localStorage');
  }

  /**
   * Joins the channel `name` on the server's live socket (one WebSocket for every channel of
   * this client, opened with the first): messages between its members and its presence. The
   * same name gives the same channel until it is left.
   */
  channel<M = unknown>(name: string): Channel<M> {
    const socket = this.liveSocket();
    let channel = socket.channels.get(name) as Channel<M> | undefined;
    if (!channel) {
      channel = new Channel<M>(socket, name);
      socket.channels.set(name, channel as Channel);
    }
    return channel;
  }

  /** @internal The live socket, made on first use. */
  liveSocket(): LiveSocket {
    if (!this.#socket) this.#socket = new LiveSocket(this.url, this.auth, this.#socketOptions);
    return this.#socket;
  }

  /** Closes the live socket: every channel is left, and every live list over it ends (`stopped`). */
  closeSocket(): void {
    this.#socket?.stop();
    this.#socket = null;
  }

  /**
   * A generated collection of the routes door (`{api}<name>`): typed by `Collections` (see
   * `app.ts`) when it declares `name`, else by `T`.
   */
  collection<K extends keyof Collections & string>(name: K): Collection<DocOf<K>>;
  collection<T extends object = Doc>(name: string): Collection<T>;
  collection(name: string): any {
    return new Collection(this, this.transport, name, this.#api);
  }

  /** A collection's write endpoints on the auto API (typed as `collection` is). */
  collectionWrite<K extends keyof Collections & string>(name: K): CollectionWrite<DocOf<K>>;
  collectionWrite<T extends object = Doc>(name: string): CollectionWrite<T>;
  collectionWrite(name: string): CollectionWrite<any> {
    return new CollectionWrite(this.transport, this.#auto + encodeURIComponent(name));
  }

  /** Calls a method of the auto API (`POST /methods/<name>` with the arguments as a JSON array); returns its result. */
  call<R = unknown>(name: NameOf<Methods>, ...args: unknown[]): Promise<R> {
    return this.apply<R>(name, args);
  }

  /** `call` with the arguments as an array and call options (`signal`, `timeout`). */
  async apply<R = unknown>(name: NameOf<Methods>, args: unknown[], options: CallOptions = {}): Promise<R> {
    const reply = await send(this.transport, 'auto', { ...known('A call', options, CALL), method: 'POST', path: this.#auto + 'methods/' + encodeURIComponent(name), body: args });
    return reply.body as R;
  }

  /** A publication's documents once: `{ <collection>: [documents] }`. */
  async publication<T extends object = Doc>(name: NameOf<Publications>, args: unknown[] = [], options: PublicationOptions = {}): Promise<Record<string, WithId<T>[]>> {
    const reply = await send(this.transport, 'auto', { ...known('A publication', options, PUBLICATION), ...publicationTarget(this.#auto, name, args, options) });
    return reply.body as Record<string, WithId<T>[]>;
  }

  /**
   * Calls one of the server's own routes (a script's, a hand-written one) at `path` from the
   * server's root (`'/api/hello'`), as the logged-in user (`X-Auth-Token`); resolves to the
   * reply's JSON as it is. `Routes` (see `app.ts`) types the paths and their methods.
   */
  async route<R = unknown, P extends NameOf<Routes> = NameOf<Routes>>(path: P, options: RouteOptions<MethodOf<P>> = {}): Promise<R> {
    known('A route call', options, CALL + ',method,body,query,headers');
    return (await send(this.transport, 'routes', { ...options, path: path.replace(/^\/+/, '') })).body as R;
  }

  /**
   * @internal A download token for URLs (`POST {api}files/token`, two minutes), kept while it
   * has more than 20 s left and the login is the same; null without a login.
   */
  async fileToken(options: CallOptions): Promise<string | null> {
    const login = this.auth.token;
    if (!login) return null;
    const kept = this.#fileToken;
    if (kept?.login === login && kept.expires - Date.now() > 20000) return kept.token;
    const reply = await send(this.transport, 'routes', { ...options, method: 'POST', path: this.#api + 'files/token' });
    const { token, expires } = jsend<{ token: string; expires: number }>(reply);
    this.#fileToken = { login, token, expires };
    return token;
  }

  /**
   * Follows a publication live: `handlers` hear each document that comes, changes and goes,
   * and `sub.docs()` holds the current ones. Runs as the user logged in now; a logout ends it.
   */
  subscribe<T extends object = Doc>(
    name: NameOf<Publications>,
    args: unknown[] = [],
    handlers: LiveHandlers<WithId<T>> = {},
    options: LiveOptions & PublicationOptions = {},
  ): Subscription<WithId<T>> {
    known('A subscription', options, LIVE + ',path,method');
    const target = { ...publicationTarget(this.#auto, name, args, options), publication: { name, args } };
    return new Subscription<WithId<T>>(this, 'auto', target, handlers, options);
  }

  /**
   * Several writes to this API's collections as the logged-in user (`POST {api}batch`), all in
   * one transaction or none: when one fails, the call fails with that write's status and
   * `data.index`, and nothing is written.
   */
  async batch(ops: BatchOp[], options: CallOptions = {}): Promise<BatchResult[]> {
    known('A call', options, CALL);
    const requests = ops.map((op) => {
      if (!op.collection) throw new PorticoError(0, 'error', 'A batch write names no collection');
      let url = '/' + this.#api + encodeURIComponent(op.collection);
      if (op.op !== 'create') url += '/' + encodeURIComponent(op.id);
      const method = { create: 'POST', update: 'PATCH', replace: 'PUT', remove: 'DELETE' }[op.op];
      const body = op.op === 'update' ? op.patch : op.op === 'remove' ? undefined : op.doc;
      return { method, url, ...(body !== undefined && { body }) };
    });
    const reply = await send(this.transport, 'routes', { ...options, method: 'POST', path: this.#api + 'batch', body: { requests } });
    return jsend<BatchResult[]>(reply);
  }
}
