import { PorticoError } from './error.js';
import { type CallOptions, type Transport, jsend, send } from './http.js';

/** Where the login token is kept: any object with these three calls (synchronous). */
export interface TokenStore {
  get(key: string): string | null | undefined;
  set(key: string, value: string): void;
  remove(key: string): void;
}

/** The logged-in user as the client knows it. */
export interface AuthUser {
  /** The account's `_id`. */
  id: string;
  /** The username given to log in or register, when one was. */
  username?: string;
  /** The email given to log in or register, when one was. */
  email?: string;
  /** When the token expires (ISO 8601), when the server said so (the auto API's login and register do). */
  tokenExpires?: string;
}

/** What `login` takes: a password and a username or an email. */
export interface LoginInput {
  username?: string;
  email?: string;
  password: string;
  /** A two-factor code, sent as the login's `totp` field for servers that ask for one. */
  totp?: string;
}

/** What `register` takes (the auto API's `POST /users/register`). */
export interface RegisterInput {
  username?: string;
  email?: string;
  password: string;
  profile?: Record<string, unknown>;
}

interface Session {
  token: string;
  user: AuthUser;
}

/** The store `option` names: an in-memory one, `localStorage`, `sessionStorage`, or the object itself. */
export function tokenStore(option: 'memory' | 'localStorage' | 'sessionStorage' | TokenStore | undefined): TokenStore {
  if (option && typeof option === 'object') return option;
  if (option === 'localStorage' || option === 'sessionStorage') {
    const storage = globalThis[option];
    if (!storage) throw new PorticoError(0, 'error', `${option} is not available here`);
    return { get: (k) => storage.getItem(k), set: (k, v) => storage.setItem(k, v), remove: (k) => storage.removeItem(k) };
  }
  const memory = new Map<string, string>();
  return { get: (k) => memory.get(k), set: (k, v) => void memory.set(k, v), remove: (k) => void memory.delete(k) };
}

/**
 * Logging in and out, and who is logged in. The token is kept in the token store as JSON
 * `{token, user}` under one key, and sent in a header on every call (never in a URL).
 */
export class Auth {
  #session: Session | null = null;
  #listeners = new Set<(user: AuthUser | null) => void>();

  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly store: TokenStore,
    private readonly key: string,
    private readonly api: string | null,
    private readonly via: 'routes' | 'auto',
    private readonly autoBase: string,
    shared: boolean,
  ) {
    this.#session = this.#read();
    // Another tab of the same origin logging in or out changes the shared localStorage.
    if (shared && typeof window !== 'undefined') {
      window.addEventListener('storage', (e) => {
        if (e.key === key) this.#set(this.#read(), false);
      });
    }
  }

  /** The logged-in user, or null. */
  get user(): AuthUser | null {
    return this.#session?.user ?? null;
  }

  /** The login token, or null. */
  get token(): string | null {
    return this.#session?.token ?? null;
  }

  /** Calls `fn` with the new user (null when logged out) whenever it changes; returns the function that stops it. */
  onChange(fn: (user: AuthUser | null) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Logs in with a username or an email and a password (and `totp` where the server asks for
   * a code): through the routes door's `{api}login` by default, or the auto API's
   * `/users/login` with `loginVia: "auto"`.
   */
  async login(input: LoginInput, options: CallOptions = {}): Promise<AuthUser> {
    const body: Record<string, unknown> = { password: input.password };
    if (input.username !== undefined) body.username = input.username;
    if (input.email !== undefined) body.email = input.email;
    if (input.totp !== undefined) body.totp = input.totp;
    const known = { ...(input.username !== undefined && { username: input.username }), ...(input.email !== undefined && { email: input.email }) };
    if (this.via === 'routes' && this.api !== null) {
      const reply = await send(this.t, 'routes', { ...options, method: 'POST', path: this.api + 'login', body, anonymous: true });
      const data = jsend<{ authToken?: unknown; userId?: unknown }>(reply);
      return this.#start(data.authToken, data.userId, known);
    }
    return this.#auto('login', body, known, options);
  }

  /** Creates an account through the auto API's `/users/register` and logs in as it. */
  async register(input: RegisterInput, options: CallOptions = {}): Promise<AuthUser> {
    const known = { ...(input.username !== undefined && { username: input.username }), ...(input.email !== undefined && { email: input.email }) };
    return this.#auto('register', { ...input }, known, options);
  }

  /**
   * Logs out: the server ends the session (through the routes door's `{api}logout`, so every
   * live stream of it ends too), and the token is forgotten here. The token is forgotten even
   * when the server cannot be reached; the call then fails so the caller knows the session may
   * still be open.
   */
  async logout(options: CallOptions = {}): Promise<void> {
    const session = this.#session;
    if (!session) return;
    try {
      if (this.api !== null) await send(this.t, 'routes', { ...options, method: 'POST', path: this.api + 'logout' });
    } catch (error) {
      // 401: the server had already ended this session.
      if (!(error instanceof PorticoError && error.status === 401)) throw error;
    } finally {
      if (this.#session === session) this.#set(null);
    }
  }

  /** @internal The routes door refused `token`: that session is over. */
  ended(token: string): void {
    if (this.#session?.token === token) this.#set(null);
  }

  async #auto(what: 'login' | 'register', body: Record<string, unknown>, known: Partial<AuthUser>, options: CallOptions) {
    const reply = await send(this.t, 'auto', { ...options, method: 'POST', path: this.autoBase + 'users/' + what, body, anonymous: true });
    const data = (reply.body ?? {}) as { id?: unknown; token?: unknown; tokenExpires?: unknown };
    return this.#start(data.token, data.id, { ...known, ...(typeof data.tokenExpires === 'string' && { tokenExpires: data.tokenExpires }) });
  }

  #start(token: unknown, id: unknown, known: Partial<AuthUser>): AuthUser {
    if (typeof token !== 'string' || typeof id !== 'string') throw new PorticoError(200, 'invalid-reply', 'The login reply has no token');
    const user: AuthUser = { id, ...known };
    this.#set({ token, user });
    return user;
  }

  #read(): Session | null {
    try {
      const raw = this.store.get(this.key);
      const s = raw ? (JSON.parse(raw) as Session) : null;
      return s && typeof s.token === 'string' && s.user && typeof s.user.id === 'string' ? s : null;
    } catch {
      return null;
    }
  }

  #set(session: Session | null, write = true): void {
    const before = this.#session?.token ?? null;
    this.#session = session;
    if (write) {
      if (session) this.store.set(this.key, JSON.stringify(session));
      else this.store.remove(this.key);
    }
    if (before === (session?.token ?? null)) return;
    for (const fn of [...this.#listeners]) {
      try {
        fn(this.user);
      } catch (error) {
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}
