import { PorticoError, known, replyError } from './error.js';
import { type Door, type Transport, deadline, thrownError, tokenHeaders, urlOf } from './http.js';
import type { Portico } from './portico.js';
import { type SortSpec, comparator, equal } from './sort.js';

/** What a subscription tells its caller. Every handler is optional. */
export interface LiveHandlers<T> {
  /** A document came into the result (also once per document of the initial set). */
  added?(doc: T, collection: string): void;
  /** A document of the result changed: how it is now, and how it was. */
  changed?(doc: T, previous: T, collection: string): void;
  /** A document left the result (removed, or no longer matching): how it was last. */
  removed?(doc: T, collection: string): void;
  /** The initial set is in `docs()` (called once, after the first connection's set). */
  ready?(): void;
  /**
   * The subscription ended for good: `logged-out` or `expired` (the session is over),
   * `refused` (the server refused the stream: `error` says why), or `stopped` (`stop()`).
   */
  end?(reason: string, error?: PorticoError): void;
  /** A connection failed or dropped; the subscription reconnects by itself after `delay` ms. */
  error?(error: PorticoError, delay: number): void;
}

/** How a subscription reconnects: the first delay, doubled per failure up to `maxDelay` (ms). */
export interface ReconnectOptions {
  minDelay?: number;
  maxDelay?: number;
}

/** Options of a subscription. */
export interface LiveOptions {
  /** Ends the subscription like `stop()`. */
  signal?: AbortSignal;
  /** The order of `docs()` (a collection subscription uses its query's `sort`). */
  sort?: SortSpec;
  /** Reconnect delays (default 500 ms doubling up to 15 s, with jitter). */
  reconnect?: ReconnectOptions;
  /**
   * Milliseconds without a byte (not even the server's keep-alive comment, every 15 s by
   * default) after which the connection is taken as dead and made again (default 45000; 0: never).
   */
  idleTimeout?: number;
  /** Milliseconds a connection may take to be answered (default: the client's `timeout`). */
  timeout?: number;
  /**
   * How the subscription reaches the server: `'sse'`, its own server-sent events stream, or
   * `'socket'`, the client's one live socket (`GET /live`), shared with channels and every other
   * subscription over it (default: the client's `live` option, itself `'sse'` by default).
   */
  transport?: 'sse' | 'socket';
}

/** The options a subscription knows. */
export const LIVE = 'signal,sort,reconnect,idleTimeout,timeout,transport';

/** What a subscription requests. */
export interface LiveTarget {
  path: string;
  query?: Record<string, string | number | undefined>;
  method?: string;
  body?: unknown;
  /** What a `subscribe` frame of the live socket names: a publication with its args (else the list URL of `path` and `query`). */
  publication?: { name: string; args: unknown[] };
}

/** The fields of an `added`, `changed`, `removed` or `end` event. */
interface EventData {
  collection?: string;
  id?: string;
  fields?: Record<string, unknown>;
  cleared?: string[];
  reason?: string;
}

type Cache<T> = Map<string, Map<string, T>>;

/** One server-sent event. */
interface Event {
  event: string;
  data: string;
}

/**
 * An SSE parser: give it the stream's text as it comes, get back the events completed so far
 * (`event:` and `data:` lines; comments, ids and retries skipped). Parsing a whole chunk at a time
 * keeps the per-event cost to the parsing itself.
 */
function sse(): (text: string) => Event[] {
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  return (text) => {
    const out: Event[] = [];
    buffer += text;
    // Servers end lines with \n; \r\n and \r are allowed too, and looked for only when present.
    const cr = buffer.includes('\r');
    let start = 0;
    for (;;) {
      let end = buffer.indexOf('\n', start);
      if (cr) {
        const m = buffer.slice(start).search(/\r\n|\r|\n/);
        end = m < 0 ? -1 : start + m;
        // A lone \r at the end of the buffer may be the first half of \r\n.
        if (end + 1 === buffer.length && buffer[end] === '\r') break;
      }
      if (end < 0) break;
      const line = buffer.slice(start, end);
      start = end + (buffer.startsWith('\r\n', end) ? 2 : 1);
      if (line === '') {
        if (data.length) out.push({ event, data: data.join('\n') });
        event = 'message';
        data = [];
        continue;
      }
      const colon = line.indexOf(':');
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    buffer = buffer.slice(start);
    return out;
  };
}

/** A handler call whose exception is reported without stopping the subscription. */
function call<A extends unknown[]>(fn: ((...args: A) => void) | undefined, ...args: A): void {
  if (!fn) return;
  try {
    fn(...args);
  } catch (error) {
    setTimeout(() => {
      throw error;
    });
  }
}

/**
 * A live subscription: the server's stream of `added`, `changed` and `removed` events applied to
 * a local cache (`docs()`), with reconnects. A reconnect gets a fresh initial set from the
 * server; it is compared with the cache, so handlers hear only what really changed meanwhile.
 */
export class Subscription<T extends object> {
  #cache: Cache<T> = new Map();
  #controller = new AbortController();
  #ended: string | null = null;
  #order: ((a: T, b: T) => number) | null;
  #readyOnce = false;
  #resolveReady!: () => void;
  #rejectReady!: (e: PorticoError) => void;
  #dropAuth: () => void;
  #wake: (() => void) | null = null;
  #healthy = false;
  /** The token the subscription runs with (null: anonymous); a change of login ends it. */
  readonly #token: string | null;
  /** Over the live socket rather than its own event stream. */
  readonly #socket: boolean;

  /** Resolves once the first initial set is in `docs()`; rejects if the subscription ends before. */
  readonly ready: Promise<void>;

  /** @internal */
  constructor(
    private readonly pc: Portico,
    private readonly door: Door,
    private readonly target: LiveTarget,
    private readonly handlers: LiveHandlers<T>,
    private readonly options: LiveOptions,
  ) {
    known('The handlers', handlers, 'added,changed,removed,ready,end,error');
    known('reconnect', options.reconnect, 'minDelay,maxDelay');
    this.ready = new Promise<void>((ok, fail) => {
      this.#resolveReady = ok;
      this.#rejectReady = fail;
    });
    this.ready.catch(() => {});
    this.#order = options.sort === undefined ? null : comparator(options.sort);
    this.#token = pc.auth.token;
    this.#socket = (options.transport ?? pc.liveTransport) === 'socket';
    this.#dropAuth = pc.auth.onChange(() => {
      if (this.#token !== null && pc.auth.token !== this.#token) this.#end('logged-out');
    });
    const signal = options.signal;
    if (signal?.aborted) this.#end('stopped');
    else {
      signal?.addEventListener('abort', () => this.stop(), { once: true });
      void this.#run();
    }
  }

  /** The current documents (of one collection, or of all that the subscription follows), in the `sort` order when one is known. */
  docs(collection?: string): T[] {
    const maps = collection === undefined ? [...this.#cache.values()] : [this.#cache.get(collection) ?? new Map()];
    const out = maps.flatMap((m) => [...m.values()]);
    return this.#order ? out.sort(this.#order) : out;
  }

  /** The current document with this `_id`, if the result holds it. */
  get(id: string, collection?: string): T | undefined {
    for (const [name, docs] of this.#cache) {
      if (collection === undefined || name === collection) {
        const doc = docs.get(id);
        if (doc) return doc;
      }
    }
    return undefined;
  }

  /** Why the subscription ended, or null while it runs. */
  get endReason(): string | null {
    return this.#ended;
  }

  /** Ends the subscription: the stream is closed, and `end('stopped')` is the last handler call. */
  stop(): void {
    this.#end('stopped');
  }

  #end(reason: string, error?: PorticoError): void {
    if (this.#ended) return;
    this.#ended = reason;
    this.#controller.abort();
    this.#dropAuth();
    this.#wake?.();
    this.#rejectReady(error ?? new PorticoError(0, 'aborted', `The subscription ended (${reason}) before it was ready`));
    call(this.handlers.end, reason, error);
  }

  async #run(): Promise<void> {
    const min = this.options.reconnect?.minDelay ?? 500;
    const max = this.options.reconnect?.maxDelay ?? 15000;
    let failures = 0;
    while (!this.#ended) {
      let failure = new PorticoError(0, 'network-error', 'The live stream closed');
      this.#healthy = false;
      try {
        await (this.#socket ? this.#connectSocket() : this.#connect());
      } catch (error) {
        failure = thrownError(error, false, 0);
      }
      // A connection that got as far as `ready` found the server healthy: the next try starts
      // from the shortest delay again.
      if (this.#healthy) failures = 0;
      if (this.#ended) return;
      const base = Math.min(max, min * 2 ** failures++);
      const delay = Math.round(base / 2 + (Math.random() * base) / 2);
      call(this.handlers.error, failure, delay);
      await new Promise<void>((wake) => {
        this.#wake = wake;
        setTimeout(wake, delay);
      });
      this.#wake = null;
    }
  }

  /** One connection: opens the stream and applies its events until it closes. */
  async #connect(): Promise<void> {
    const t = this.pc.transport;
    const timeout = this.options.timeout ?? t.timeout;
    const d = deadline(this.#controller.signal, timeout);
    const idle = this.options.idleTimeout ?? 45000;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    let silent = false;
    const alive = () => {
      clearTimeout(idleTimer);
      if (idle > 0)
        idleTimer = setTimeout(() => {
          silent = true;
          d.abort();
        }, idle);
    };
    try {
      const headers: Record<string, string> = { Accept: 'text/event-stream', ...tokenHeaders(this.door, this.#token) };
      const init: RequestInit = { method: this.target.method ?? 'GET', headers, signal: d.signal, cache: 'no-store' };
      if (this.target.body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(this.target.body);
      }
      let res: Response;
      try {
        res = await t.fetch(urlOf(t, this.target.path, this.target.query), init);
      } catch (error) {
        throw thrownError(error, d.timedOut(), timeout);
      }
      d.stopTimer();
      if (!res.ok) {
        const text = await res.text().catch(() => '');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the text is the message
        }
        const error = replyError(res.status, body, res.headers);
        // The server refused this stream (no access, no such list, a bad query): trying again
        // would get the same answer. Overload and server errors are worth another try.
        if (res.status < 500 && res.status !== 429 && res.status !== 408) {
          if (res.status === 401 && this.#token) this.pc.auth.ended(this.#token);
          this.#end(res.status === 401 && this.#token ? 'logged-out' : 'refused', error);
        }
        throw error;
      }
      if (!res.body) throw new PorticoError(res.status, 'invalid-reply', 'The live reply has no body');
      alive();
      await this.#read(res.body, alive).catch((error) => {
        throw silent ? new PorticoError(0, 'timeout', `The live stream was silent for ${idle} ms`) : error;
      });
    } finally {
      clearTimeout(idleTimer);
      d.done();
    }
  }

  /** Applies the events of one connection until it closes. */
  async #read(body: ReadableStream<Uint8Array>, alive: () => void): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const parse = sse();
    const on = this.#events();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this.#ended) return;
        alive();
        for (const { event, data } of parse(decoder.decode(value, { stream: true }))) {
          if (this.#ended || on(event, JSON.parse(data) as EventData)) return;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  /**
   * The handler of one connection's events, whichever way they come: it gathers the initial set,
   * compares it with the cache at `ready`, then applies each event. Returns true when the
   * connection's stream is over (`end`).
   */
  #events(): (event: string, e: EventData) => boolean {
    let fresh: Cache<T> | null = new Map();
    return (event, e) => {
      if (event === 'end') {
        const reason = e.reason ?? 'error';
        if (reason === 'logged-out' || reason === 'expired') {
          if (this.#token) this.pc.auth.ended(this.#token);
          this.#end(reason);
        }
        return true;
      }
      if (event === 'ready') {
        if (fresh) this.#reconcile(fresh);
        fresh = null;
        this.#healthy = true;
        if (!this.#readyOnce) {
          this.#readyOnce = true;
          this.#resolveReady();
          call(this.handlers.ready);
        }
        return false;
      }
      const collection = e.collection ?? '';
      const id = e.id ?? '';
      if (fresh) {
        // The initial set is gathered, then compared with the cache at `ready`.
        if (event === 'added') docsOf(fresh, collection).set(id, { _id: id, ...e.fields } as T);
        return false;
      }
      this.#apply(event, collection, id, e.fields ?? {}, e.cleared ?? []);
      return false;
    };
  }

  /**
   * One connection over the live socket: a `subscribe` frame (the list URL, or the publication
   * with its args) under a fresh id, whose events are applied until the socket drops or the
   * server ends the subscription.
   */
  async #connectSocket(): Promise<void> {
    const socket = this.pc.liveSocket();
    const id = socket.nextListId();
    const on = this.#events();
    const idle = this.options.idleTimeout ?? 45000;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    let settle = null as { ok: () => void; fail: (e: PorticoError) => void } | null;
    const over = new Promise<void>((ok, fail) => (settle = { ok, fail }));
    over.catch(() => {});
    let sent = false;
    const finish = (error?: PorticoError) => {
      const s = settle;
      settle = null;
      if (s) error ? s.fail(error) : s.ok();
    };
    // A socket silent for `idle` (the server pings every 15 s by default) is taken as dead.
    const watch = (wait: number) => {
      if (idle > 0)
        idleTimer = setTimeout(() => {
          const quiet = Date.now() - socket.heardAt;
          if (quiet < idle) return watch(idle - quiet);
          finish(new PorticoError(0, 'timeout', `The live socket was silent for ${idle} ms`));
          socket.drop();
        }, wait);
    };
    socket.lists.set(id, {
      frame: (frame) => {
        if (this.#ended || !on(String(frame.type), frame as EventData)) return;
        socket.post({ type: 'unsubscribe', id });
        finish(this.#ended ? undefined : new PorticoError(0, 'network-error', `The server ended the live stream (${String(frame.reason ?? 'error')})`));
      },
      lost: (code) => {
        // A socket that closes before the frame went: the frame goes on the next one.
        if (!sent && !socket.stopped) return;
        if (socket.stopped) this.#end('stopped');
        else if (code === LOGGED_OUT && this.#token) {
          this.pc.auth.ended(this.#token);
          this.#end('logged-out');
        }
        finish(this.#ended ? undefined : new PorticoError(0, 'network-error', 'The live socket closed'));
      },
    });
    const stop = () => finish();
    this.#controller.signal.addEventListener('abort', stop, { once: true });
    try {
      const t = this.target;
      const what = t.publication ? { publication: t.publication.name, args: t.publication.args } : { list: listUrl(this.pc.transport, t) };
      try {
        await socket.request({ type: 'subscribe', id, ...what }, () => (sent = true));
      } catch (e) {
        throw this.#refusal(e);
      }
      watch(idle);
      await over;
    } finally {
      clearTimeout(idleTimer);
      this.#controller.signal.removeEventListener('abort', stop);
      socket.lists.delete(id);
      if (this.#ended) socket.post({ type: 'unsubscribe', id });
    }
  }

  /** The error of a refused `subscribe`; a refusal that trying again would not change ends the subscription. */
  #refusal(e: unknown): PorticoError {
    const error = e instanceof PorticoError ? e : new PorticoError(0, 'error', String(e));
    const status = error.status;
    if (status >= 400 && status < 500 && status !== 429 && status !== 408) {
      if (status === 401 && this.#token) this.pc.auth.ended(this.#token);
      this.#end(status === 401 && this.#token ? 'logged-out' : 'refused', error);
    } else if (error.code === 'bad-frame') {
      this.#end('refused', error);
    }
    return error;
  }

  /** Applies one event after `ready`. */
  #apply(event: string, collection: string, id: string, fields: Record<string, unknown>, cleared: string[]): void {
    const docs = docsOf(this.#cache, collection);
    const before = docs.get(id);
    if (event === 'added') {
      const doc = { _id: id, ...fields } as T;
      docs.set(id, doc);
      if (before) call(this.handlers.changed, doc, before, collection);
      else call(this.handlers.added, doc, collection);
    } else if (event === 'changed' && before) {
      // A new object (handlers keep `previous` as it was), built without `delete`, which would
      // make the object slow to use.
      const doc: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(before)) if (!cleared.includes(k)) doc[k] = v;
      Object.assign(doc, fields);
      docs.set(id, doc as T);
      call(this.handlers.changed, doc as T, before, collection);
    } else if (event === 'removed' && before) {
      docs.delete(id);
      call(this.handlers.removed, before, collection);
    }
  }

  /** Makes the cache the fresh initial set, telling the handlers only what differs. */
  #reconcile(fresh: Cache<T>): void {
    for (const [collection, docs] of this.#cache) {
      const now = fresh.get(collection);
      for (const [id, doc] of docs) {
        if (!now?.has(id)) {
          docs.delete(id);
          call(this.handlers.removed, doc, collection);
        }
      }
    }
    for (const [collection, now] of fresh) {
      const docs = docsOf(this.#cache, collection);
      for (const [id, doc] of now) {
        const before = docs.get(id);
        if (before && equal(before, doc)) continue;
        docs.set(id, doc);
        if (before) call(this.handlers.changed, doc, before, collection);
        else call(this.handlers.added, doc, collection);
      }
    }
  }
}

/** The close code of a live socket whose login ended. */
const LOGGED_OUT = 4001;

/** The URL of `target`'s list as the live socket's `subscribe` names it: its path on the server, with the query. */
function listUrl(t: Transport, target: LiveTarget): string {
  const url = new URL(urlOf(t, target.path, target.query));
  const root = new URL(t.base).pathname;
  return '/' + url.pathname.slice(root.length) + url.search;
}

function docsOf<T>(cache: Cache<T>, collection: string): Map<string, T> {
  let docs = cache.get(collection);
  if (!docs) cache.set(collection, (docs = new Map()));
  return docs;
}
