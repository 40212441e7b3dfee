import type { Auth } from './auth.js';
import { PorticoError } from './error.js';

/** One member of a channel's presence: a connection that tracked itself, with its user and metadata. */
export interface Member<M = unknown> {
  /** The connection's key (unique across the server's instances). */
  key: string;
  /** Its user's id, null when not logged in. */
  userId: string | null;
  /** What it tracked. */
  meta: M;
}

/** A message of a channel. */
export interface ChannelMessage<P = unknown> {
  /** The event name the sender gave. */
  event: string;
  /** What it sent. */
  payload: P;
  /** The sender's user id; null for an anonymous sender or the server (`broadcast` in a script). */
  from: string | null;
}

/** Options of the live socket. */
export interface SocketOptions {
  /** Reconnect delays in ms: the first, doubled per failure up to `maxDelay` (default 500 and 15000). */
  reconnect?: { minDelay?: number; maxDelay?: number };
  /** The WebSocket class (default: the global one; Node.js 20 needs `--experimental-websocket`, 22+ has it). */
  WebSocket?: typeof WebSocket;
  /**
   * Other instances of the same server (base URLs): after a failed or dropped connection the
   * socket tries the next one in turn, so the client moves to a live instance by itself.
   */
  fallbacks?: string[];
}

type Frame = Record<string, unknown> & { type?: string };
type Pending = { ok: (frame: Frame) => void; fail: (error: PorticoError) => void };

/** A live list or publication over the socket: told its frames, and when the socket is gone (with the close code). */
export interface SocketList {
  frame(frame: Frame): void;
  lost(code: number): void;
}

/** The error of an `error` frame; its `status` is the HTTP status the server gave the refusal, if any. */
function refused(frame: Frame): PorticoError {
  const code = String(frame.code ?? 'error');
  const status = typeof frame.status === 'number' ? frame.status : Number(/^status-(\d{3})$/.exec(code)?.[1] ?? 0);
  return new PorticoError(status, code, String(frame.reason ?? 'refused'));
}

/**
 * The one WebSocket (`GET /live`) a client's channels share. It opens with the first channel,
 * logs in with the client's token (again whenever the login changes), answers the server's
 * pings, and when it drops reconnects by itself, rejoining every channel and tracking again.
 * @internal
 */
export class LiveSocket {
  readonly #urls: string[];
  #at = 0;
  readonly #auth: Auth;
  readonly #WS: typeof WebSocket | undefined;
  readonly #min: number;
  readonly #max: number;
  #delay: number;
  #ws: WebSocket | null = null;
  /** Closed for good by `stop()`. */
  stopped = false;
  #open = false;
  #reopened = false;
  #next = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  readonly #pending = new Map<string, Pending>();
  readonly #waiting: Array<() => void> = [];
  readonly channels = new Map<string, Channel>();
  /** The live lists and publications running over the socket, by subscription id. */
  readonly lists = new Map<string, SocketList>();
  /** When the socket last heard from the server (ms since the epoch). */
  heardAt = Date.now();
  #lists = 0;

  constructor(base: string, auth: Auth, options: SocketOptions = {}) {
    const live = (url: string) => url.replace(/\/*$/, '/').replace(/^http/, 'ws') + 'live';
    this.#urls = [base, ...(options.fallbacks ?? [])].map(live);
    this.#auth = auth;
    this.#WS = options.WebSocket ?? globalThis.WebSocket;
    this.#min = options.reconnect?.minDelay ?? 500;
    this.#max = options.reconnect?.maxDelay ?? 15000;
    this.#delay = this.#min;
    // Another user's rights are not this one's: a new login starts the socket again.
    auth.onChange(() => {
      if (this.#ws) this.#ws.close(1000);
    });
  }

  /**
   * Sends `frame` with a fresh `ref` once the socket is open (`onSent` is called as it goes);
   * resolves with the `ok` reply, rejects with the `error` one or when the socket closes first.
   */
  async request(frame: Frame, onSent?: () => void): Promise<Frame> {
    await this.#opened();
    if (!this.#open) throw new PorticoError(0, 'network', 'The live socket closed');
    onSent?.();
    return this.#send(frame);
  }

  #send(frame: Frame): Promise<Frame> {
    const ref = String(++this.#next);
    return new Promise<Frame>((ok, fail) => {
      this.#pending.set(ref, { ok, fail });
      this.#ws?.send(JSON.stringify({ ...frame, ref }));
    });
  }

  /** Sends `frame` without waiting for a reply, when the socket is open (else drops it). */
  post(frame: Frame): void {
    if (this.#open) this.#ws?.send(JSON.stringify(frame));
  }

  /** A fresh subscription id for this socket. */
  nextListId(): string {
    return 'l' + String(++this.#lists);
  }

  /** Drops the connection as dead (it is made again with backoff), without waiting for a close handshake. */
  drop(): void {
    const ws = this.#ws;
    if (!ws) return;
    this.#closed(ws, 1006);
    try {
      ws.close();
    } catch {
      // Already closed.
    }
  }

  /** Opens the socket when it is not open or opening. */
  start(): void {
    if (this.#ws || this.#timer) return;
    if (!this.#WS) throw new PorticoError(0, 'error', 'No WebSocket: pass options.socket.WebSocket');
    const ws = new this.#WS(this.#urls[this.#at % this.#urls.length]!);
    this.#ws = ws;
    ws.onopen = () => void this.#welcome(ws);
    ws.onmessage = (e: MessageEvent) => {
      this.heardAt = Date.now();
      let frame: Frame;
      try {
        frame = JSON.parse(String(e.data)) as Frame;
      } catch {
        return;
      }
      this.#handle(frame);
    };
    ws.onclose = (e: CloseEvent) => this.#closed(ws, e.code);
    // Some WebSocket implementations report a refused connection as an error only.
    ws.onerror = () => {
      this.#closed(ws, 1006);
      try {
        ws.close();
      } catch {
        // Already closed.
      }
    };
  }

  /** Closes the socket for good (every channel left, every list over it stopped). */
  stop(): void {
    this.stopped = true;
    this.channels.clear();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const ws = this.#ws;
    if (ws) {
      this.#closed(ws, 1000);
      ws.close(1000);
    }
    // Lists whose `subscribe` had not gone yet end too; requests waiting for the socket fail.
    for (const list of [...this.lists.values()]) list.lost(1000);
    for (const done of this.#waiting.splice(0)) done();
  }

  #opened(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.start();
    if (this.#open) return Promise.resolve();
    return new Promise((done) => this.#waiting.push(done));
  }

  async #welcome(ws: WebSocket): Promise<void> {
    if (this.#ws !== ws) return;
    this.#delay = this.#min;
    const token = this.#auth.token;
    if (token) {
      try {
        await this.#send({ type: 'auth', token });
      } catch {
        // A token the server refuses: the socket goes on anonymous.
      }
    }
    // Requests made while it opened go now; on a reconnect, every channel joins again.
    this.#open = true;
    for (const done of this.#waiting.splice(0)) done();
    if (this.#reopened) for (const channel of this.channels.values()) void channel.resync().catch(() => {});
    this.#reopened = true;
  }

  #closed(ws: WebSocket, code: number): void {
    if (this.#ws !== ws) return;
    this.#ws = null;
    this.#open = false;
    this.#at += 1;
    const lost = new PorticoError(0, 'network', 'The live socket closed');
    for (const p of this.#pending.values()) p.fail(lost);
    this.#pending.clear();
    for (const list of [...this.lists.values()]) list.lost(code);
    if (this.stopped || (this.channels.size === 0 && this.#waiting.length === 0)) return;
    const delay = this.#delay * (0.75 + Math.random() / 2);
    this.#delay = Math.min(this.#delay * 2, this.#max);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.start();
    }, delay);
  }

  #handle(frame: Frame): void {
    const ref = frame.ref == null ? null : String(frame.ref);
    if (ref !== null && (frame.type === 'ok' || frame.type === 'error')) {
      const pending = this.#pending.get(ref);
      if (pending) {
        this.#pending.delete(ref);
        if (frame.type === 'ok') pending.ok(frame);
        else pending.fail(refused(frame));
        return;
      }
    }
    if (frame.type === 'ping') {
      this.post({ type: 'pong' });
      return;
    }
    if (typeof frame.sub === 'string') this.lists.get(frame.sub)?.frame(frame);
    else if (typeof frame.channel === 'string') this.channels.get(frame.channel)?.deliver(frame);
  }
}

type Handler = (...args: never[]) => void;

/**
 * A channel of the server's live socket: messages between its members, never stored, and who
 * is there (presence). Made by `pc.channel(name)`, which joins it; the join's outcome is
 * `joined`. After a dropped connection it rejoins by itself, tracks again what it tracked, and
 * gets the presence afresh.
 *
 * ```ts
 * const room = pc.channel<{ name: string }>('room:42');
 * room.on('chat', (text, message) => show(message.from, text));
 * room.on('presence', (members) => showOnline(members.map((m) => m.meta.name)));
 * await room.joined;
 * await room.track({ name: 'Ann' });
 * room.send('typing', true);
 * ```
 */
export class Channel<M = unknown> {
  /** The channel's name. */
  readonly name: string;
  /** Settles with the first join: rejects with the server's refusal (`forbidden`...). */
  readonly joined: Promise<void>;
  readonly #socket: LiveSocket;
  readonly #handlers = new Map<string, Set<Handler>>();
  readonly #members = new Map<string, Member<M>>();
  #meta: { value: M } | null = null;
  #left = false;

  /** @internal */
  constructor(socket: LiveSocket, name: string) {
    this.name = name;
    this.#socket = socket;
    this.joined = this.resync();
    this.joined.catch(() => {});
  }

  /**
   * Listens: `on(event, (payload, message) => ...)` for the messages of `event` (`'*'`: every
   * message), `on('presence', (members) => ...)` whenever the presence changes, and
   * `on('error', (error) => ...)` for a refusal after a reconnect. Returns the function that stops listening.
   */
  on(event: 'presence', handler: (members: Member<M>[]) => void): () => void;
  on(event: 'error', handler: (error: PorticoError) => void): () => void;
  on<P = unknown>(event: string, handler: (payload: P, message: ChannelMessage<P>) => void): () => void;
  on(event: string, handler: Handler): () => void {
    let set = this.#handlers.get(event);
    if (!set) this.#handlers.set(event, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Sends `event` with `payload` to the other members; resolves when the server took it. */
  async send(event: string, payload?: unknown): Promise<void> {
    await this.#socket.request({ type: 'send', channel: this.name, event, payload: payload ?? null });
  }

  /** Puts this connection in the presence with `meta` (again: changes it); kept across reconnects. */
  async track(meta: M): Promise<void> {
    this.#meta = { value: meta };
    await this.#socket.request({ type: 'track', channel: this.name, meta });
  }

  /** Takes this connection out of the presence. */
  async untrack(): Promise<void> {
    this.#meta = null;
    await this.#socket.request({ type: 'untrack', channel: this.name });
  }

  /** Who is in the channel now (the connections that tracked themselves). */
  presence(): Member<M>[] {
    return [...this.#members.values()];
  }

  /** Leaves the channel (for good: no rejoin after a reconnect). */
  async leave(): Promise<void> {
    this.#left = true;
    this.#socket.channels.delete(this.name);
    this.#members.clear();
    await this.#socket.request({ type: 'leave', channel: this.name }).catch(() => undefined);
  }

  /** @internal Joins (again), and tracks again what was tracked. */
  async resync(): Promise<void> {
    if (this.#left) return;
    try {
      await this.#socket.request({ type: 'join', channel: this.name });
      if (this.#meta) await this.#socket.request({ type: 'track', channel: this.name, meta: this.#meta.value });
    } catch (e) {
      const error = e instanceof PorticoError ? e : new PorticoError(0, 'error', String(e));
      if (error.code === 'network') return;
      this.#emit('error', error);
      throw error;
    }
  }

  /** @internal A frame about this channel. */
  deliver(frame: Record<string, unknown>): void {
    if (frame.type === 'message') {
      const message = { event: String(frame.event), payload: frame.payload, from: (frame.from as string | null) ?? null };
      this.#emit(message.event, message.payload, message);
      this.#emit('*', message.payload, message);
      return;
    }
    if (frame.type !== 'presence') return;
    if (frame.event === 'state') {
      this.#members.clear();
      for (const m of (frame.members as Member<M>[]) ?? []) this.#members.set(m.key, m);
    } else if (frame.event === 'join') {
      const m = frame.member as Member<M>;
      this.#members.set(m.key, m);
    } else if (frame.event === 'leave') {
      this.#members.delete((frame.member as Member<M>).key);
    }
    this.#emit('presence', this.presence());
  }

  #emit(event: string, ...args: unknown[]): void {
    for (const handler of [...(this.#handlers.get(event) ?? [])]) {
      try {
        (handler as (...a: unknown[]) => void)(...args);
      } catch {
        // A failing handler does not stop the others.
      }
    }
  }
}
