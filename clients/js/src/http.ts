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
  /** A body sent as it is (bytes, a stream), with the `Content-Type` of `headers`. */
  raw?: BodyInit;
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
  /** How many times a GET that failed for want of a reply (or with 502, 503, 504) is tried again. */
  retries: number;
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
  if (req.raw !== undefined) {
    out.body = req.raw;
    // A stream body is sent as it comes (fetch asks for this word).
    (out as { duplex?: string }).duplex = 'half';
  } else if (req.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    out.body = JSON.stringify(req.body);
  }
  return out;
}

/** A reply's text as the door's JSON; an error status is thrown as a `PorticoError`. */
export function reply(t: Transport, door: Door, req: Request, token: string | null, status: number, text: string, headers: Headers): Reply {
  let body: unknown = text || undefined;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      if (status < 300) throw new PorticoError(status, 'invalid-reply', 'The reply is not JSON');
    }
  }
  if (status >= 300) {
    if (status === 401 && door === 'routes' && token && !req.anonymous) t.refused(token);
    throw replyError(status, body, headers);
  }
  return { status, headers, body };
}

/**
 * How long to wait before trying a failed GET again, or -1: only a failure without a reply or
 * a 502, 503 or 504 (or a 429 that says when) is tried again, after `Retry-After` when the server
 * sent one (at most 10 s) or 250 ms doubled per try. A timeout or an abort is never retried.
 */
function retryDelay(e: PorticoError, attempt: number): number {
  const again = e.code === 'network-error' || [502, 503, 504].includes(e.status) || (e.status === 429 && e.retryAfter !== undefined);
  if (!again) return -1;
  if (e.retryAfter !== undefined) return e.retryAfter <= 10 ? e.retryAfter * 1000 : -1;
  return 250 * 2 ** attempt;
}

/**
 * Sends one request and reads its JSON reply; any failure is a `PorticoError`. A GET (safe to
 * repeat) that found no server or an unavailable one is tried again up to `t.retries` times; a
 * write never is, since its first try may have been applied.
 */
export async function send(t: Transport, door: Door, req: Request): Promise<Reply> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await sendOnce(t, door, req);
    } catch (error) {
      const wait = (req.method ?? 'GET') === 'GET' && attempt < t.retries ? retryDelay(error as PorticoError, attempt) : -1;
      if (wait < 0 || req.signal?.aborted) throw error;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

async function sendOnce(t: Transport, door: Door, req: Request): Promise<Reply> {
  const timeout = req.timeout ?? t.timeout;
  const d = deadline(req.signal, timeout);
  const token = t.token();
  try {
    const res = await t.fetch(urlOf(t, req.path, req.query), init(door, req, token, d.signal));
    return reply(t, door, req, token, res.status, await res.text(), res.headers);
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
