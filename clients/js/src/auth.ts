import { PorticoError, known } from './error.js';
import { type CallOptions, type Transport, jsend, send } from './http.js';
import * as webauthn from './webauthn.js';

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
  /** A guest account (`loginAsGuest`), until `upgradeGuest`. */
  guest?: boolean;
}

/** Which sign-ins and account mails the server has on (`GET /auth/methods`). */
export interface AuthMethods {
  password: boolean;
  emailVerification: boolean;
  passwordReset: boolean;
  requireVerifiedEmail: boolean;
  /** The OpenID Connect providers' names. */
  oidc: string[];
  /** The OAuth2 providers' names (GitHub, GitLab, Discord...). */
  oauth2?: string[];
  /** Passkeys are on (`rp_id`). */
  passkeys?: boolean;
  totp: boolean;
  emailCode: boolean;
  emailCodeSignup: boolean;
  guests: boolean;
  [method: string]: unknown;
}

/** A sign-in by mailed code: the address and the code typed, or the mailed link's token; `totp` when the account has two-factor codes on. */
export type EmailCodeInput = { email: string; code: string; totp?: string } | { token: string; totp?: string };

/** What `upgradeGuest` takes: credentials for the guest's account. */
export interface GuestUpgrade {
  username?: string;
  email?: string;
  password: string;
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

/** A passkey of the logged-in account, as listed (never its key). */
export interface PasskeyInfo {
  id: string;
  name: string;
  createdAt: string;
  lastUsed: string | null;
}

/** Passkeys (WebAuthn) in a browser: `pc.auth.passkey`. */
export interface PasskeyCalls {
  /** Logged in: makes a passkey on this device (the browser asks the user), named `name`; resolves to it. */
  register(name?: string, options?: CallOptions): Promise<PasskeyInfo>;
  /** Logs in with a passkey of this device; naming the account (`{ username }` or `{ email }`) lets only its passkey in. No two-factor code is asked. */
  login(who?: { username?: string; email?: string }, options?: CallOptions): Promise<AuthUser>;
  /** Logged in: the account's passkeys. */
  list(options?: CallOptions): Promise<PasskeyInfo[]>;
  /** Logged in: removes one; it no longer logs in, on any instance. */
  remove(id: string, options?: CallOptions): Promise<void>;
}

interface Session {
  token: string;
  user: AuthUser;
}

const CALL = 'signal,timeout';

/** The username and email of an input, those it has. */
function names(input: { username?: string | undefined; email?: string | undefined }): Partial<AuthUser> {
  return { ...(input.username !== undefined && { username: input.username }), ...(input.email !== undefined && { email: input.email }) };
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
    known('A login', input, 'username,email,password,totp');
    known('A call', options, CALL);
    const body: Record<string, unknown> = { password: input.password };
    if (input.username !== undefined) body.username = input.username;
    if (input.email !== undefined) body.email = input.email;
    if (input.totp !== undefined) body.totp = input.totp;
    const who = names(input);
    if (this.via === 'routes' && this.api !== null) {
      const reply = await send(this.t, 'routes', { ...options, method: 'POST', path: this.api + 'login', body, anonymous: true });
      const data = jsend<{ authToken?: unknown; userId?: unknown }>(reply);
      return this.#start(data.authToken, data.userId, who);
    }
    return this.#auto('login', body, who, options);
  }

  /** Creates an account through the auto API's `/users/register` and logs in as it. */
  async register(input: RegisterInput, options: CallOptions = {}): Promise<AuthUser> {
    known('A sign-up', input, 'username,email,password,profile');
    return this.#auto('register', { ...input }, names(input), known('A call', options, CALL));
  }

  /** Which sign-ins and account mails the server has on. */
  methods(options: CallOptions = {}): Promise<AuthMethods> {
    return this.#account('methods', undefined, options);
  }

  /** Mails a link to `{app_url}/verify-email?token=...` to the address (202 whether or not an account has it). */
  async requestVerification(email: string, options: CallOptions = {}): Promise<void> {
    await this.#account('verify-email', { email }, options);
  }

  /** Confirms an address with the token of its mailed link; resolves to the address. */
  verifyEmail(token: string, options: CallOptions = {}): Promise<{ email: string }> {
    return this.#account('verify-email/confirm', { token }, options);
  }

  /** Mails a link to `{app_url}/reset-password?token=...` to the address's account, if any. */
  async requestPasswordReset(email: string, options: CallOptions = {}): Promise<void> {
    await this.#account('password-reset', { email }, options);
  }

  /** Sets a new password with the token of the mailed link; every login token of the account then stops working. */
  async resetPassword(token: string, password: string, options: CallOptions = {}): Promise<void> {
    await this.#account('password-reset/confirm', { token, password }, options);
  }

  /** Logged in: mails a link to `{app_url}/confirm-email-change?token=...` to the new address. */
  async requestEmailChange(email: string, options: CallOptions = {}): Promise<void> {
    await this.#account('email-change', { email }, options, true);
  }

  /** Confirms an email change with the token of its link; resolves to the account's new address. */
  confirmEmailChange(token: string, options: CallOptions = {}): Promise<{ email: string }> {
    return this.#account('email-change/confirm', { token }, options);
  }

  /** Logged in: a new two-factor secret and its `otpauth://` URI (for a QR code); on once `enableTotp` gets a code of it. */
  setupTotp(options: CallOptions = {}): Promise<{ secret: string; uri: string }> {
    return this.#account('totp/setup', {}, options, true);
  }

  /** Turns two-factor codes on with a current code; resolves to eight one-time recovery codes. */
  enableTotp(code: string, options: CallOptions = {}): Promise<{ recoveryCodes: string[] }> {
    return this.#account('totp/enable', { code }, options, true);
  }

  /** Turns two-factor codes off with a current code or a recovery code. */
  async disableTotp(code: string, options: CallOptions = {}): Promise<void> {
    await this.#account('totp/disable', { code }, options, true);
  }

  /**
   * Mails a sign-in code and a link to `{app_url}/email-code?token=...` to the address. Sent
   * with a guest's login, the code gives the address to the guest.
   */
  async requestEmailCode(email: string, options: CallOptions = {}): Promise<void> {
    await this.#account('email-code', { email }, options, true);
  }

  /** Signs in with a mailed code (`{ email, code }`) or the mailed link's `{ token }`. */
  async loginWithEmailCode(input: EmailCodeInput, options: CallOptions = {}): Promise<AuthUser> {
    known('A sign-in by code', input, 'email,code,token,totp');
    return this.#signIn('email-code/confirm', input, 'email' in input ? { email: input.email } : {}, options);
  }

  /** Makes a guest account (no credentials) and logs in as it (`allow_guests` on the server). */
  loginAsGuest(options: CallOptions = {}): Promise<AuthUser> {
    return this.#signIn('guest', {}, { guest: true }, options);
  }

  /** Logged in as a guest: gives the account credentials; it keeps its id and documents, and is a guest no more. */
  async upgradeGuest(input: GuestUpgrade, options: CallOptions = {}): Promise<AuthUser> {
    known('A guest upgrade', input, 'username,email,password');
    const session = this.#session;
    await this.#account('guest/upgrade', input, options, true);
    if (session && this.#session === session) this.#set({ token: session.token, user: { ...session.user, ...names(input), guest: false } });
    return this.user ?? { id: '' };
  }

  /**
   * The URL that starts a sign-in with the OpenID Connect provider `name`: send the browser
   * there (`location.href = ...`). The provider's way back ends at your page `{app_url}/oidc?code=...`,
   * which calls `loginWithOidc(code)`.
   */
  oidcURL(name: string): string {
    return new URL('auth/oidc/' + encodeURIComponent(name), this.t.base).href;
  }

  /** Trades the one-use code of `{app_url}/oidc?code=...` for a login (`totp` when the account has two-factor codes on). */
  loginWithOidc(code: string, totp?: string, options: CallOptions = {}): Promise<AuthUser> {
    return this.#signIn('oidc/exchange', { code, ...(totp !== undefined && { totp }) }, {}, options);
  }

  /**
   * The URL that starts a sign-in with the OAuth2 provider `name` (GitHub, GitLab, Discord...):
   * send the browser there. The way back ends at your page `{app_url}/oauth2?code=...`, which
   * calls `loginWithOAuth2(code)`.
   */
  oauth2URL(name: string): string {
    return new URL('auth/oauth2/' + encodeURIComponent(name), this.t.base).href;
  }

  /** Trades the one-use code of `{app_url}/oauth2?code=...` for a login (`totp` when the account has two-factor codes on). */
  loginWithOAuth2(code: string, totp?: string, options: CallOptions = {}): Promise<AuthUser> {
    return this.#signIn('oauth2/exchange', { code, ...(totp !== undefined && { totp }) }, {}, options);
  }

  /** Passkeys: register one on this device, log in with one, list and remove them. */
  readonly passkey: PasskeyCalls = {
    register: async (name, options = {}) => {
      known('A call', options, CALL);
      const begin = await this.#account<{ ceremony: string; publicKey: Record<string, unknown> }>('passkey/register/begin', name === undefined ? {} : { name }, options, true);
      const credential = await webauthn.create(begin.publicKey, options.signal);
      return this.#account<PasskeyInfo>('passkey/register/finish', { ceremony: begin.ceremony, credential }, options, true);
    },
    login: async (who = {}, options = {}) => {
      known('A passkey login', who, 'username,email');
      known('A call', options, CALL);
      const begin = await this.#account<{ ceremony: string; publicKey: Record<string, unknown> }>('passkey/login/begin', { ...who }, options);
      const credential = await webauthn.get(begin.publicKey, options.signal);
      return this.#signIn('passkey/login/finish', { ceremony: begin.ceremony, credential }, names(who), options);
    },
    list: async (options = {}) => (await this.#account<{ passkeys: PasskeyInfo[] }>('passkeys', undefined, options, true)).passkeys,
    remove: async (id, options = {}) => {
      await send(this.t, 'auto', { ...known('A call', options, CALL), method: 'DELETE', path: 'auth/passkeys/' + encodeURIComponent(id) });
    },
  };

  /** `POST /auth/<path>` with `body` (`GET` without one), with the login token when `login`. */
  async #account<R>(path: string, body: object | undefined, options: CallOptions, login = false): Promise<R> {
    const method = body ? 'POST' : 'GET';
    const reply = await send(this.t, 'auto', { ...known('A call', options, CALL), method, path: 'auth/' + path, body, anonymous: !login });
    return reply.body as R;
  }

  /** A sign-in under `/auth/` answered with the auto API's login reply. */
  async #signIn(path: string, body: object, who: Partial<AuthUser>, options: CallOptions): Promise<AuthUser> {
    const data = (await this.#account<{ id?: unknown; token?: unknown; tokenExpires?: unknown }>(path, body, options)) ?? {};
    return this.#start(data.token, data.id, { ...who, ...(typeof data.tokenExpires === 'string' && { tokenExpires: data.tokenExpires }) });
  }

  /**
   * Logs out: the server ends the session (through the routes door's `{api}logout`, so every
   * live stream of it ends too), and the token is forgotten here. The token is forgotten even
   * when the server cannot be reached; the call then fails so the caller knows the session may
   * still be open.
   */
  async logout(options: CallOptions = {}): Promise<void> {
    known('A call', options, CALL);
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

  /**
   * Logs out everywhere: the server ends every session of the account (`/auth/logout-everywhere`),
   * this one included, and the token is forgotten here; resolves to how many sessions ended.
   */
  async logoutEverywhere(options: CallOptions = {}): Promise<number> {
    const session = this.#session;
    if (!session) return 0;
    try {
      const reply = await this.#account<{ loggedOut?: unknown }>('logout-everywhere', {}, options, true);
      return typeof reply?.loggedOut === 'number' ? reply.loggedOut : 0;
    } finally {
      if (this.#session === session) this.#set(null);
    }
  }

  /** @internal The routes door refused `token`: that session is over. */
  ended(token: string): void {
    if (this.#session?.token === token) this.#set(null);
  }

  async #auto(what: 'login' | 'register', body: Record<string, unknown>, who: Partial<AuthUser>, options: CallOptions) {
    const reply = await send(this.t, 'auto', { ...options, method: 'POST', path: this.autoBase + 'users/' + what, body, anonymous: true });
    const data = (reply.body ?? {}) as { id?: unknown; token?: unknown; tokenExpires?: unknown };
    return this.#start(data.token, data.id, { ...who, ...(typeof data.tokenExpires === 'string' && { tokenExpires: data.tokenExpires }) });
  }

  #start(token: unknown, id: unknown, who: Partial<AuthUser>): AuthUser {
    if (typeof token !== 'string' || typeof id !== 'string') throw new PorticoError(200, 'invalid-reply', 'The login reply has no token');
    const user: AuthUser = { id, ...who };
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
    const before = JSON.stringify(this.#session);
    this.#session = session;
    const now = JSON.stringify(session);
    if (write) {
      if (session) this.store.set(this.key, now);
      else this.store.remove(this.key);
    }
    if (before === now) return;
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
