import { PorticoError, replyError } from './error.js';

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call; it then fails with a `PorticoError` of code `aborted`. */
  signal?: AbortSignal;
  /** Milliseconds before the call fails with code `timeout` (default: the client's `timeout`). */
  timeout?: number;
}

/** Which front door a request goes to: they read the token from different headers. */
export type Door = 'routes' | 'auto';

/** What one request sends. */
export interface Request extends CallOptions {
  method?: string;
  /** A path under the server's base URL, or an absolute URL (a `Link` header's). */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send no token (login, register). */
  anonymous?: boolean;
}

/** A successful reply: its status, headers and parsed JSON body. */
export interface Reply {
  status: number;
  headers: Headers;
  body: unknown;
}

/** The pieces of the client a request needs. */
export interface Transport {
  base: string;
  fetch: typeof fetch;
  timeout: number;
  token(): string | null;
  /** Told when the routes door refused a token it was sent (the session is over). */
  refused(token: string): void;
}

/** The headers carrying `token` to `door`: `X-Auth-Token` on the routes door (which lists it for CORS), a bearer token on the auto API. */
export function tokenHeaders(door: Door, token: string | null): Record<string, string> {
  if (!token) return {};
  return door === 'routes' ? { 'X-Auth-Token': token } : { Authorization: 'Bearer ' + token };
}

/**
 * A signal that aborts when `signal` does or after `timeout` ms (0: never), and `done` to drop
 * the timer and the listener. `timedOut()` tells which of the two fired.
 */
export function deadline(signal: AbortSignal | undefined, timeout: number) {
  const controller = new AbortController();
  let timedOut = false;
  const abort = () => controller.abort(signal?.reason);
  if (signal?.aborted) abort();
  else signal?.addEventListener('abort', abort, { once: true });
  const timer =
    timeout > 0
      ? setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, timeout)
      : undefined;
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    stopTimer: () => clearTimeout(timer),
    abort: () => controller.abort(),
    done: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    },
  };
}

/** The error for a fetch that threw: a timeout, an abort or a network failure. */
export function thrownError(error: unknown, timedOut: boolean, timeout: number): PorticoError {
  if (error instanceof PorticoError) return error;
  if (timedOut) return new PorticoError(0, 'timeout', `No reply within ${timeout} ms`, { cause: error });
  if ((error as Error)?.name === 'AbortError') return new PorticoError(0, 'aborted', 'The call was aborted', { cause: error });
  return new PorticoError(0, 'network-error', (error as Error)?.message || String(error), { cause: error });
}

/** The full URL of `path` (absolute URLs are kept) with `query`. */
export function urlOf(t: Transport, path: string, query?: Request['query']): string {
  const url = new URL(path, t.base);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  return url.href;
}

/** The fetch options for `req` sent to `door` with the current token. */
export function init(door: Door, req: Request, token: string | null, signal: AbortSignal): RequestInit {
  const headers: Record<string, string> = { Accept: 'application/json', ...tokenHeaders(door, req.anonymous ? null : token), ...req.headers };
  const out: RequestInit = { method: req.method ?? 'GET', headers, signal };
  if (req.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    out.body = JSON.stringify(req.body);
  }
  return out;
}

/** Sends one request and reads its JSON reply; any failure is a `PorticoError`. */
export async function send(t: Transport, door: Door, req: Request): Promise<Reply> {
  const timeout = req.timeout ?? t.timeout;
  const d = deadline(req.signal, timeout);
  const token = t.token();
  try {
    const res = await t.fetch(urlOf(t, req.path, req.query), init(door, req, token, d.signal));
    const text = await res.text();
    let body: unknown = text;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        if (res.ok) throw new PorticoError(res.status, 'invalid-reply', 'The reply is not JSON');
      }
    } else body = undefined;
    if (!res.ok) {
      if (res.status === 401 && door === 'routes' && token && !req.anonymous) t.refused(token);
      throw replyError(res.status, body, res.headers);
    }
    return { status: res.status, headers: res.headers, body };
  } catch (error) {
    throw thrownError(error, d.timedOut(), timeout);
  } finally {
    d.done();
  }
}

/** The `data` of a JSend success reply. */
export function jsend<T>(reply: Reply): T {
  const body = reply.body as { status?: unknown; data?: unknown } | undefined;
  if (!body || body.status !== 'success') throw new PorticoError(reply.status, 'invalid-reply', 'The reply is not a JSend success');
  return body.data as T;
}
