/**
 * Every failure of a call, whatever its cause: an error reply of either door, a reply that is not
 * what the door sends, a network failure, a timeout or an abort.
 */
export class PorticoError extends Error {
  /** The HTTP status of the reply; 0 when there was no reply (network, timeout, abort). */
  readonly status: number;
  /**
   * What kind of failure: the auto API's `error` (`access-denied`, `unauthorized`, ...), the
   * routes door's JSend `status` (`error` or `fail`), or, without a reply, `network-error`,
   * `timeout` or `aborted`; `unknown-option` for an option the client does not know (thrown
   * before any request); `invalid-reply` for a reply that is not the door's JSON, `no-etag`
   * for an `ifMatch` document the client holds no tag for.
   */
  readonly code: string;
  /** The same as `code`: the `error` of an `{error, reason}` reply. */
  readonly error: string;
  /** The same as `message`: the server's `reason` (or `message`), or what went wrong. */
  readonly reason: string;
  /** The JSend `data` or the auto API's `data` of the error reply, when it has one. */
  readonly data?: unknown;
  /** The auto API's `details`, when the reply has them. */
  readonly details?: unknown;
  /** Seconds to wait before trying again, from a `Retry-After` header (429, 503). */
  readonly retryAfter?: number;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: { data?: unknown; details?: unknown; retryAfter?: number; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'PorticoError';
    this.status = status;
    this.code = this.error = code;
    this.reason = message;
    if (extra.data !== undefined) this.data = extra.data;
    if (extra.details !== undefined) this.details = extra.details;
    if (extra.retryAfter !== undefined) this.retryAfter = extra.retryAfter;
  }
}

/** The error an error reply stands for: the auto API's `{error, reason}` or JSend's `{status, message}`. */
export function replyError(status: number, body: unknown, headers: Headers): PorticoError {
  const retry = Number(headers.get('retry-after'));
  const extra: { data?: unknown; details?: unknown; retryAfter?: number } = {};
  if (headers.has('retry-after') && Number.isFinite(retry)) extra.retryAfter = retry;
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    extra.data = b.data;
    if (typeof b.error === 'string') {
      extra.details = b.details;
      return new PorticoError(status, b.error, typeof b.reason === 'string' ? b.reason : b.error, extra);
    }
    if (typeof b.status === 'string' && typeof b.message === 'string') {
      return new PorticoError(status, b.status, b.message, extra);
    }
  }
  const text = typeof body === 'string' && body ? body : `HTTP ${status}`;
  return new PorticoError(status, 'error', text, extra);
}

/**
 * Refuses an options object holding a key not in `keys` (a typo would otherwise be dropped
 * without a word): a `PorticoError` with code `unknown-option` naming it, before any request.
 */
export function known<O>(what: string, options: O, keys: string): O {
  for (const key of Object.keys(options ?? {})) {
    if (!keys.split(',').includes(key)) throw new PorticoError(0, 'unknown-option', `${what} has no option "${key}" (it takes ${keys.replaceAll(',', ', ')})`);
  }
  return options;
}
