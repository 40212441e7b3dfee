import { PorticoError } from './error.js';
import { type CallOptions, type Reply, type Transport, jsend, send } from './http.js';
import { type LiveHandlers, type LiveOptions, Subscription } from './live.js';
import type { Portico } from './portico.js';

/** A stored document: an object with a string `_id`. */
export interface Doc {
  _id: string;
  [field: string]: unknown;
}

/** A new document: `_id` optional (the server makes one), timestamps set by the server. */
export type NewDoc<T> = Omit<T, '_id' | 'createdAt' | 'updatedAt'> & { _id?: string };

/** Fields to set: any of the document's fields, or dotted paths (`"a.b"`) into nested ones. */
export type Patch<T> = Partial<Omit<T, '_id'>> & Record<string, unknown>;

/** A sort: `"-createdAt,title"`, `["-createdAt", "title"]` or `{ createdAt: -1, title: 1 }`. */
export type Sort = string | string[] | Record<string, 1 | -1>;

/** What a list asks for; each key is the list's query parameter of that name. */
export interface ListQuery {
  /** A selector (`{ done: false, n: { $gt: 2 } }`). */
  where?: Record<string, unknown>;
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
const LIST_OPTIONS = new Set(['where', 'sort', 'skip', 'limit', 'fields', 'expand', 'search', 'total']);

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
export function listParams(q: ListQuery): Record<string, string | number | undefined> {
  for (const key of Object.keys(q)) {
    if (!LIST_OPTIONS.has(key)) {
      throw new PorticoError(0, 'unknown-option', `A list has no option "${key}" (it takes ${[...LIST_OPTIONS].join(', ')})`);
    }
  }
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

  #id(id: string): string {
    return this.#path + '/' + encodeURIComponent(id);
  }

  /** One page of documents, or (with `for await`) all of them; see `ListRequest`. */
  list(query: ListQuery = {}, options: CallOptions = {}): ListRequest<T & Doc> {
    const read = async (path: string, q?: Record<string, string | number | undefined>) => {
      const reply = await send(this.#t, 'routes', { ...options, path, ...(q && { query: q }) });
      const items = jsend<(T & Doc)[]>(reply);
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

  /** The document with this `_id` (404 `fail` when there is none). Its tag is kept for `ifMatch`. */
  async get(id: string, options: CallOptions = {}): Promise<T & Doc> {
    const reply = await send(this.#t, 'routes', { ...options, path: this.#id(id) });
    return tagged(reply, jsend<T & Doc>(reply));
  }

  /** Creates a document; returns it as stored (with `_id` and timestamps). */
  async create(doc: NewDoc<T>, options: CallOptions = {}): Promise<T & Doc> {
    const reply = await send(this.#t, 'routes', { ...options, method: 'POST', path: this.#path, body: doc });
    return tagged(reply, jsend<T & Doc>(reply));
  }

  /** Sets the fields of `patch` (dotted paths reach nested ones); returns the document after the change. */
  update(id: string, patch: Patch<T>, options: WriteOptions = {}): Promise<T & Doc> {
    return this.#write('PATCH', id, patch, options);
  }

  /** Replaces the whole document (fields left out are removed); returns it after the change. */
  replace(id: string, doc: NewDoc<T>, options: WriteOptions = {}): Promise<T & Doc> {
    return this.#write('PUT', id, doc, options);
  }

  /** Removes the document (404 `fail` when there is none). */
  async remove(id: string, options: WriteOptions = {}): Promise<void> {
    await send(this.#t, 'routes', { ...options, method: 'DELETE', path: this.#id(id), headers: ifMatchHeader(options.ifMatch) });
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
  subscribe(query: ListQuery = {}, handlers: LiveHandlers<T & Doc> = {}, options: LiveOptions = {}): Subscription<T & Doc> {
    const sort = options.sort ?? query.sort;
    return new Subscription<T & Doc>(this.pc, 'routes', { path: this.#path, query: listParams(query) }, handlers, {
      ...options,
      ...(sort !== undefined && { sort }),
    });
  }

  async #write(method: string, id: string, body: unknown, options: WriteOptions): Promise<T & Doc> {
    const headers = ifMatchHeader(options.ifMatch);
    const reply = await send(this.#t, 'routes', { ...options, method, path: this.#id(id), body, headers });
    return tagged(reply, jsend<T & Doc>(reply));
  }
}
