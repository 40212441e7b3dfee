import { PorticoError, known } from './error.js';
import { type CallOptions, type Reply, type Request, type Transport, deadline, jsend, reply, send, thrownError, tokenHeaders, urlOf } from './http.js';

/**
 * What an upload sends: a browser `File` or `Blob`, bytes (`Uint8Array`, a Node.js `Buffer`,
 * `ArrayBuffer`), or a stream (a Node.js `Readable` such as `fs.createReadStream(path)`, a web
 * `ReadableStream`, any async iterable of bytes), sent as it is read.
 */
export type FileSource = Blob | ArrayBuffer | ArrayBufferView | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** Options of an upload. */
export interface UploadOptions extends CallOptions {
  /** The file's name (default: a `File`'s own name; required for anything else). */
  name?: string;
  /** Its type, sent as `Content-Type` (default: a `Blob`'s type; the server judges the bytes anyway). */
  type?: string;
  /** Its size in bytes, for `onProgress` when the source is a stream (known otherwise). */
  size?: number;
  /** Called as bytes go out: how many so far, and of how many (null: unknown). */
  onProgress?: (sent: number, total: number | null) => void;
}

/** A stored file, as its document's field holds it. */
export interface FileInfo {
  name: string;
  size: number;
  type: string;
  sha256: string;
  createdAt: string;
}

/** Options of `fileURL`. */
export interface FileURLOptions extends CallOptions {
  /** A thumbnail size the field declares (`"100x100"`, `"600x0"`). */
  thumb?: string;
}

/** The source's bytes, piece by piece. */
async function* pieces(file: FileSource): AsyncGenerator<Uint8Array> {
  if (Symbol.asyncIterator in file) {
    for await (const piece of file as AsyncIterable<Uint8Array>) yield piece;
  } else if ('getReader' in file) {
    const reader = (file as unknown as ReadableStream<Uint8Array>).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) yield r.value;
  } else {
    const bytes =
      file instanceof Blob ? new Uint8Array(await file.arrayBuffer()) : ArrayBuffer.isView(file) ? new Uint8Array(file.buffer, file.byteOffset, file.byteLength) : new Uint8Array(file);
    for (let i = 0; i < bytes.length; i += 65536) yield bytes.subarray(i, i + 65536);
  }
}

/** A stream of the source that counts what the request has taken from it. */
function counted(file: FileSource, total: number | null, progress?: UploadOptions['onProgress']): ReadableStream<Uint8Array> {
  const it = pieces(file);
  let sent = 0;
  return new ReadableStream({
    async pull(controller) {
      const { value, done } = await it.next();
      if (done) return controller.close();
      sent += value.byteLength;
      controller.enqueue(value);
      progress?.(sent, total);
    },
    async cancel() {
      await it.return(undefined);
    },
  });
}

/** An upload through `XMLHttpRequest`, the one way a browser reports an upload's progress. */
function xhr(t: Transport, req: Request, file: Blob, progress: NonNullable<UploadOptions['onProgress']>): Promise<Reply> {
  const token = t.token();
  const timeout = req.timeout ?? t.timeout;
  const d = deadline(req.signal, timeout);
  return new Promise<Reply>((ok, fail) => {
    const x = new XMLHttpRequest();
    x.open('POST', urlOf(t, req.path, req.query));
    for (const [k, v] of Object.entries({ Accept: 'application/json', ...tokenHeaders('routes', token), ...req.headers })) x.setRequestHeader(k, v);
    x.upload.onprogress = (e) => progress(e.loaded, e.lengthComputable ? e.total : file.size);
    x.onload = () => {
      const headers = new Headers();
      const retry = x.getResponseHeader('retry-after');
      if (retry) headers.set('retry-after', retry);
      try {
        ok(reply(t, 'routes', req, token, x.status, x.responseText, headers));
      } catch (e) {
        fail(e);
      }
    };
    x.onerror = () => fail(new PorticoError(0, 'network-error', 'The upload failed'));
    d.signal.addEventListener('abort', () => {
      x.abort();
      fail(thrownError(new DOMException('aborted', 'AbortError'), d.timedOut(), timeout));
    });
    x.send(file);
  }).finally(d.done);
}

/**
 * Uploads `file` to the file field at `path` (`{api}<collection>/<id>/files/<field>`) as its raw
 * bytes, named by `?name=`; resolves to the stored file's metadata.
 */
export async function upload(t: Transport, path: string, file: FileSource, options: UploadOptions): Promise<FileInfo> {
  const { name = (file as File).name, type, size, onProgress, ...call } = known('An upload', options, 'signal,timeout,name,type,size,onProgress');
  if (!name) throw new PorticoError(0, 'error', 'Name the file: options.name');
  const blob = typeof Blob !== 'undefined' && file instanceof Blob;
  const total = size ?? (blob ? file.size : 'byteLength' in file ? file.byteLength : null);
  const req: Request = { ...call, method: 'POST', path, query: { name }, headers: { 'Content-Type': type || (blob && file.type) || 'application/octet-stream' } };
  if (onProgress && blob && typeof XMLHttpRequest !== 'undefined') return jsend(await xhr(t, req, file, onProgress));
  const whole = blob || file instanceof ArrayBuffer || ArrayBuffer.isView(file);
  return jsend(await send(t, 'routes', { ...req, raw: whole && !onProgress ? (file as BodyInit) : counted(file, total, onProgress) }));
}
