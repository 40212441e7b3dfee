import { PorticoError, known } from './error.js';
import { type FileInfo, type FileSource, type FileURLOptions, type UploadOptions, upload } from './files.js';
import { type CallOptions, type Reply, type Transport, jsend, send, urlOf } from './http.js';
import { LIVE, type LiveHandlers, type LiveOptions, Subscription } from './live.js';
import type { Portico } from './portico.js';

/** A stored document: an object with a string `_id`. */
export interface Doc {
  _id: string;
  [field: string]: unknown;
}

/** A document as stored: `T` with its `_id`. */
export type WithId<T> = T & { _id: string };

/**
 * A selector over documents of type `T`: its fields (and `_id`, `createdAt`, `updatedAt`),
 * dotted paths into nested ones (`"a.b"`), and `$and`, `$or`, `$nor`. The values are the
 * server's (`{ n: { $gt: 2 } }`); a field `T` does not have is a type error.
 */
export type Where<T> = { [K in keyof T | '_id' | 'createdAt' | 'updatedAt']?: unknown } & {
  $and?: Where<T>[];
  $or?: Where<T>[];
  $nor?: Where<T>[];
  [path: `${string}.${string}`]: unknown;
};

/** A new document: `_id` optional (the server makes one), timestamps set by the server. */
export type NewDoc<T> = Omit<T, '_id' | 'createdAt' | 'updatedAt'> & { _id?: string };

/** Fields to set: any of the document's fields, or dotted paths (`"a.b"`) into nested ones. */
export type Patch<T> = Partial<Omit<T, '_id'>> & Record<string, unknown>;

/** A sort: `"-createdAt,title"`, `["-createdAt", "title"]` or `{ createdAt: -1, title: 1 }`. */
export type Sort = string | string[] | Record<string, 1 | -1>;

/** What a list asks for; each key is the list's query parameter of that name. */
export interface ListQuery<T = Doc> {
  /** A selector (`{ done: false, n: { $gt: 2 } }`). */
  where?: Where<T>;
  sort?: Sort;
  skip?: number;
  limit?: number;
  /** Only these fields (and `_id`): `"title,createdAt"`, `["title"]`, or a projection `{ body: 0 }`. */
  fields?: string | string[] | Record<string, 0 | 1>;
  /** Relations to put in each document: `"author,tags"`, `["author", "team.lead"]`. */
  expand?: string | string[];
  /** Full-text search in the collection's searched fields (best matches first unless `sort`). */
  search?: string;
  /** `false`: the matches are not counted (no `X-Total-Count`; `total` is then `null`). */
  total?: boolean;
}

/** The options a list knows; any other is refused (never silently left out of the request). */
const LIST_OPTIONS = 'where,sort,skip,limit,fields,expand,search,total';

/** Options of a call (`signal`, `timeout`), and of a conditional write (`ifMatch` too). */
const CALL = 'signal,timeout';
const WRITE = CALL + ',ifMatch';

/** An aggregate: groups of documents counted, summed, averaged, with their least and greatest values. */
export interface AggregateQuery<T = Doc> {
  /** Which documents count (a selector, as a list's). */
  where?: Where<T>;
  /** One group per value at this path (`_id` of each row); without it, one row for all. */
  group?: string;
  /** `count`: how many documents in each group. */
  count?: boolean;
  /** `sum_<path>` of each path: the sum of its numbers. */
  sum?: string | string[];
  /** `avg_<path>`: their average (`null` without numbers). */
  avg?: string | string[];
  /** `min_<path>`: the least number. */
  min?: string | string[];
  /** `max_<path>`: the greatest number. */
  max?: string | string[];
  /** The order of the groups by their fields (`"-count"`, `{ sum_amount: -1 }`); by `_id` otherwise. */
  sort?: Sort;
  skip?: number;
  limit?: number;
}

/** One group of an aggregate: its `_id` (the group's value) and the figures asked for. */
export interface AggregateRow {
  _id: unknown;
  count?: number;
  [figure: string]: unknown;
}

/** One page of a list. */
export interface Page<T> {
  /** The documents of this page. */
  items: T[];
  /** How many documents match, all pages together (`X-Total-Count`); `null` with `total: false`. */
  total: number | null;
  /** The next page's URL (`Link rel="next"`), or null on the last page. */
  next: string | null;
}

/** `If-Match`: an entity tag, `"*"` (the document only has to exist), or a document this client read (its tag). */
export type IfMatch = string | object;

/** Options of a conditional write. */
export interface WriteOptions extends CallOptions {
  /** Write only while the document still has this tag (else 412, nothing written). */
  ifMatch?: IfMatch;
}

/** One write of a batch. `collection` is filled in by `collection(name).batch`. */
export type BatchOp =
  | { op: 'create'; collection?: string; doc: Record<string, unknown> }
  | { op: 'update'; collection?: string; id: string; patch: Record<string, unknown> }
  | { op: 'replace'; collection?: string; id: string; doc: Record<string, unknown> }
  | { op: 'remove'; collection?: string; id: string };

/** What one write of a batch answered. */
export interface BatchResult {
  status: number;
  /** The document written (create, update, replace), or the server's reply body for a remove. */
  body: unknown;
}

const tags = new WeakMap<object, string>();

/** The entity tag the server sent with `doc` (from `get`, `create`, `update`, `replace`), if any. */
export function etagOf(doc: object): string | undefined {
  return tags.get(doc);
}

/** Remembers the reply's `ETag` for the document it carries. */
export function tagged<T>(reply: Reply, doc: T): T {
  const tag = reply.headers.get('etag');
  if (tag && doc && typeof doc === 'object') tags.set(doc, tag);
  return doc;
}

/** The `If-Match` header value for `ifMatch`. */
export function ifMatchHeader(ifMatch: IfMatch | undefined): Record<string, string> {
  if (ifMatch === undefined) return {};
  const tag = typeof ifMatch === 'string' ? ifMatch : tags.get(ifMatch);
  if (!tag) throw new PorticoError(0, 'no-etag', 'No entity tag is known for this document: read it with get() first');
  return { 'If-Match': tag };
}

/** A sort or a projection as the list parameter takes it. */
function param(value: ListQuery['sort'] | ListQuery['fields']): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  return Array.isArray(value) ? value.join(',') : JSON.stringify(value);
}

/** The query parameters of `q`; an option the list does not know is an error naming it. */
export function listParams(q: ListQuery<object>): Record<string, string | number | undefined> {
  known('A list', q, LIST_OPTIONS);
  return {
    where: q.where === undefined ? undefined : JSON.stringify(q.where),
    sort: param(q.sort),
    skip: q.skip,
    limit: q.limit,
    fields: param(q.fields),
    expand: q.expand === undefined ? undefined : Array.isArray(q.expand) ? q.expand.join(',') : q.expand,
    search: q.search,
    total: q.total === false ? 'false' : undefined,
  };
}

/** A path list (`"amount"`, `["amount", "tax"]`) as a parameter. */
function paths(p: string | string[] | undefined): string | undefined {
  return Array.isArray(p) ? p.join(',') : p;
}

/** The `rel="next"` URL of a `Link` header. */
function nextLink(link: string | null, base: string): string | null {
  for (const m of (link ?? '').matchAll(/<([^>]*)>\s*;\s*rel="?([^",;]*)"?/g)) {
    if (m[2] === 'next' && m[1] !== undefined) return new URL(m[1], base).href;
  }
  return null;
}

/**
 * A list request: a promise of the first page (`{ items, total, next }`) that can also be
 * iterated with `for await` for every matching document, page after page, following the `Link`
 * headers (`pages()` gives the pages themselves). The first page is read once, whichever is used.
 */
export type ListRequest<T> = Promise<Page<T>> & AsyncIterable<T> & { pages(): AsyncGenerator<Page<T>> };

/** A generated collection of the routes door (`{api}<name>`), typed by its documents. */
export class Collection<T extends object = Doc> {
  readonly #t: Transport;
  readonly #path: string;

  /** @internal */
  constructor(
    private readonly pc: Portico,
    t: Transport,
    readonly name: string,
    api: string,
  ) {
    this.#t = t;
    this.#path = api + encodeURIComponent(name);
  }

  #id(id: string | { _id: string }): string {
    return this.#path + '/' + encodeURIComponent(typeof id === 'string' ? id : id._id);
  }

  #file(id: string | { _id: string }, field: string, name?: string): string {
    return this.#id(id) + '/files/' + encodeURIComponent(field) + (name === undefined ? '' : '/' + encodeURIComponent(name));
  }

  /** One page of documents, or (with `for await`) all of them; see `ListRequest`. */
  list(query: ListQuery<T> = {}, options: CallOptions = {}): ListRequest<WithId<T>> {
    known('A call', options, CALL);
    const read = async (path: string, q?: Record<string, string | number | undefined>) => {
      const reply = await send(this.#t, 'routes', { ...options, path, ...(q && { query: q }) });
      const items = jsend<(WithId<T>)[]>(reply);
      if (!Array.isArray(items)) throw new PorticoError(reply.status, 'invalid-reply', 'A list reply holds no array');
      const counted = reply.headers.get('x-total-count');
      const total = counted === null ? (query.total === false ? null : items.length) : Number(counted);
      return { items, total, next: nextLink(reply.headers.get('link'), this.#t.base) };
    };
    const first = read(this.#path, listParams(query));
    async function* pages() {
      let page = await first;
      for (;;) {
        yield page;
        if (!page.next) return;
        page = await read(page.next);
      }
    }
    return Object.assign(first, {
      pages,
      async *[Symbol.asyncIterator]() {
        for await (const page of pages()) yield* page.items;
      },
    });
  }

  /**
   * Counts, sums, averages, least and greatest values over the documents `query.where` selects,
   * per group (`GET {api}<name>?group=...&count=true&sum=...`), under the list's rules.
   */
  async aggregate(query: AggregateQuery<T>, options: CallOptions = {}): Promise<AggregateRow[]> {
    const q = known('An aggregate', query, 'where,group,count,sum,avg,min,max,sort,skip,limit');
    const reply = await send(this.#t, 'routes', {
      ...known('A call', options, CALL),
      path: this.#path,
      query: {
        where: q.where && JSON.stringify(q.where),
        group: q.group,
        count: q.count ? 'true' : undefined,
        sum: paths(q.sum),
        avg: paths(q.avg),
        min: paths(q.min),
        max: paths(q.max),
        sort: param(q.sort),
        skip: q.skip,
        limit: q.limit,
      },
    });
    return jsend<AggregateRow[]>(reply);
  }

  /**
   * Uploads a file into the document's file `field` (an update of the document, under its
   * rules); resolves to the stored file's metadata. `onProgress(sent, total)` hears the bytes
   * go out.
   */
  upload(id: string | { _id: string }, field: string, file: FileSource, options: UploadOptions = {}): Promise<FileInfo> {
    return upload(this.#t, this.#file(id, field), file, options);
  }

  /**
   * A URL of the file `name` in the document's `field` (its thumbnail with `thumb`) for places
   * that send no header, such as `<img src>`: it carries a download token of two minutes
   * (`POST {api}files/token`), never the login token; without a login, none.
   */
  async fileURL(id: string | { _id: string }, field: string, name: string, options: FileURLOptions = {}): Promise<string> {
    const { thumb, ...call } = known('fileURL', options, CALL + ',thumb');
    const token = await this.pc.fileToken(call);
    return urlOf(this.#t, this.#file(id, field, name), { thumb, token: token ?? undefined });
  }

  /** Deletes the file `name` from the document's `field` (404 when it holds none of that name). */
  async removeFile(id: string | { _id: string }, field: string, name: string, options: CallOptions = {}): Promise<void> {
    await send(this.#t, 'routes', { ...known('A call', options, CALL), method: 'DELETE', path: this.#file(id, field, name) });
  }

  /** The document with this `_id` (404 `fail` when there is none). Its tag is kept for `ifMatch`. */
  async get(id: string, options: CallOptions = {}): Promise<WithId<T>> {
    const reply = await send(this.#t, 'routes', { ...known('A call', options, CALL), path: this.#id(id) });
    return tagged(reply, jsend<WithId<T>>(reply));
  }

  /** Creates a document; returns it as stored (with `_id` and timestamps). */
  async create(doc: NewDoc<T>, options: CallOptions = {}): Promise<WithId<T>> {
    const reply = await send(this.#t, 'routes', { ...known('A call', options, CALL), method: 'POST', path: this.#path, body: doc });
    return tagged(reply, jsend<WithId<T>>(reply));
  }

  /** Sets the fields of `patch` (dotted paths reach nested ones); returns the document after the change. */
  update(id: string, patch: Patch<T>, options: WriteOptions = {}): Promise<WithId<T>> {
    return this.#write('PATCH', id, patch, options);
  }

  /** Replaces the whole document (fields left out are removed); returns it after the change. */
  replace(id: string, doc: NewDoc<T>, options: WriteOptions = {}): Promise<WithId<T>> {
    return this.#write('PUT', id, doc, options);
  }

  /** Removes the document (404 `fail` when there is none). */
  async remove(id: string, options: WriteOptions = {}): Promise<void> {
    await send(this.#t, 'routes', { ...known('A write', options, WRITE), method: 'DELETE', path: this.#id(id), headers: ifMatchHeader(options.ifMatch) });
  }

  /** Several writes to this collection, all in one transaction or none (see `Portico.batch`). */
  batch(ops: BatchOp[], options: CallOptions = {}): Promise<BatchResult[]> {
    return this.pc.batch(
      ops.map((op) => ({ ...op, collection: op.collection ?? this.name })),
      options,
    );
  }

  /**
   * Follows the list `query` selects live: `handlers` hear each document that comes, changes
   * and goes, and `sub.docs()` holds the current ones (in `query.sort` order).
   */
  subscribe(query: ListQuery<T> = {}, handlers: LiveHandlers<WithId<T>> = {}, options: LiveOptions = {}): Subscription<WithId<T>> {
    const sort = known('A subscription', options, LIVE).sort ?? query.sort;
    return new Subscription<WithId<T>>(this.pc, 'routes', { path: this.#path, query: listParams(query) }, handlers, {
      ...options,
      ...(sort !== undefined && { sort }),
    });
  }

  async #write(method: string, id: string, body: unknown, options: WriteOptions): Promise<WithId<T>> {
    const headers = ifMatchHeader(known('A write', options, WRITE).ifMatch);
    const reply = await send(this.#t, 'routes', { ...options, method, path: this.#id(id), body, headers });
    return tagged(reply, jsend<WithId<T>>(reply));
  }
}
