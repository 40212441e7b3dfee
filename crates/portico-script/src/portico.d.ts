// Types of the "portico" module that Portico's scripts import (printed by `portico types`).
// Save as portico.d.ts next to your scripts; editors then complete and check TypeScript.

declare module "portico" {
  /** JSON a document may hold. */
  export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
  /** A stored document: a JSON object with a string `_id`. */
  export interface Document { _id: string; [field: string]: Json }
  /** A user record without its secrets. */
  export interface User {
    _id: string;
    username?: string;
    emails?: { address: string; verified: boolean }[];
    profile?: { [key: string]: Json };
    roles?: string[];
  }
  /** A Mongo-style selector, or an `_id`. */
  export type Selector = string | { [path: string]: Json };
  export interface FindOptions {
    sort?: { [path: string]: 1 | -1 | "asc" | "desc" } | [string, "asc" | "desc"][];
    skip?: number;
    limit?: number;
    fields?: { [path: string]: 0 | 1 };
  }
  export interface Cursor<T = Document> {
    readonly collection: string;
    fetch(): Promise<T[]>;
    count(): Promise<number>;
    forEach(f: (doc: T) => void): Promise<void>;
    map<U>(f: (doc: T) => U): Promise<U[]>;
  }
  export type Modifier = { [operator: string]: Json } | { [field: string]: Json };
  export interface Rules<T = Document> {
    insert?(userId: string | null, doc: T): boolean | Promise<boolean>;
    update?(userId: string | null, doc: T, fieldNames: string[], modifier: Modifier): boolean | Promise<boolean>;
    remove?(userId: string | null, doc: T): boolean | Promise<boolean>;
  }
  export interface HookContext<T = Document> {
    /** The client's user id for a client write; null for a write by server code. */
    readonly userId: string | null;
    /** In an after.update hook: the document as it was before the update. */
    readonly previous?: T;
  }
  /**
   * Write hooks. A before hook may change the document (insert) or the modifier (update) in
   * place; returning false or throwing refuses the write, and nothing is written. An after
   * hook runs once the write is stored; what it throws is logged.
   */
  export interface Hooks<T = Document> {
    insert(f: (this: HookContext<T>, userId: string | null, doc: T) => unknown): void;
    update(f: (this: HookContext<T>, userId: string | null, doc: T, fieldNames: string[], modifier: Modifier) => unknown): void;
    remove(f: (this: HookContext<T>, userId: string | null, doc: T) => unknown): void;
  }
  export interface Collection<T = Document> {
    readonly name: string;
    find(selector?: Selector, options?: FindOptions): Cursor<T>;
    findOne(selector?: Selector, options?: FindOptions): Promise<T | null>;
    /** Resolves to the new document's `_id`. */
    insert(doc: Omit<T, "_id"> & { _id?: string }): Promise<string>;
    /** Resolves to the number of documents matched (or 1 for an upsert that inserted). */
    update(selector: Selector, modifier: Modifier, options?: { multi?: boolean; upsert?: boolean }): Promise<number>;
    /** Resolves to the number of documents removed. */
    remove(selector: Selector): Promise<number>;
    /** Rules for client writes (any deny refuses; one allow must pass). */
    allow(rules: Rules<T>): void;
    deny(rules: Rules<T>): void;
    /** Hooks run before each write of this collection (server and client writes alike). */
    readonly before: Hooks<T>;
    /** Hooks run after each write of this collection. */
    readonly after: Hooks<T>;
  }
  export function collection<T = Document>(name: string): Collection<T>;

  export interface MethodContext {
    readonly userId: string | null;
    readonly user: User | null;
    /** The HTTP status of a successful reply. */
    setHttpStatusCode(code: number): void;
  }
  export type MethodFunction = (this: MethodContext, ...args: any[]) => any;
  export interface MethodOptions { url?: string; httpMethod?: "get" | "post" | "put" | "patch" | "delete"; run: MethodFunction }
  export function methods(defs: { [name: string]: MethodFunction | MethodOptions }): void;

  export interface PublicationContext {
    readonly userId: string | null;
    readonly user: User | null;
    added(collection: string, id: string, fields: { [key: string]: Json }): void;
    changed(collection: string, id: string, fields: { [key: string]: Json }): void;
    removed(collection: string, id: string): void;
    ready(): void;
  }
  export function publish(
    name: string,
    f: (this: PublicationContext, ...args: any[]) => Cursor<any> | Cursor<any>[] | void | Promise<Cursor<any> | Cursor<any>[] | void>,
    options?: { url?: string; httpMethod?: "get" | "post" | "put" | "patch" | "delete" },
  ): void;

  export interface EndpointContext {
    readonly urlParams: { [name: string]: string };
    readonly queryParams: { [name: string]: Json };
    readonly bodyParams: Json;
    readonly user: User | null;
    readonly userId: string | null;
    readonly request: { method: string; url: string; headers: { [name: string]: string } };
    readonly response: {
      statusCode: number;
      setHeader(name: string, value: string): void;
      writeHead(status: number, headers?: { [name: string]: string }): void;
      write(chunk: string): void;
      end(chunk?: string): void;
    };
    /** Says the endpoint wrote `this.response` itself. */
    done(): void;
  }
  export type Reply = Json | { statusCode?: number; headers?: { [name: string]: string }; body: Json };
  export type Action = (this: EndpointContext) => Reply | Promise<Reply> | void | Promise<void>;
  export interface Endpoint { authRequired?: boolean; roleRequired?: string | string[]; action: Action }
  export interface RouteOptions { authRequired?: boolean; roleRequired?: string | string[] }
  type Endpoints = { get?: Action | Endpoint; post?: Action | Endpoint; put?: Action | Endpoint; patch?: Action | Endpoint; delete?: Action | Endpoint; options?: Action | Endpoint };
  export interface Api {
    addRoute(path: string, options: RouteOptions, endpoints: Endpoints): Api;
    addRoute(path: string, endpoints: Endpoints): Api;
  }
  /** The `[[api]]` of the config whose base path (api_path and version) is `path`. */
  export function api(path: string): Api;

  /** A stored file's metadata, as its document's file field holds it. */
  export interface FileMeta {
    /** Unique within its field. */
    name: string;
    /** Bytes. */
    size: number;
    /** The type judged from the content (magic bytes). */
    type: string;
    /** Lowercase hex SHA-256 of the bytes. */
    sha256: string;
    /** ISO-8601. */
    createdAt: string;
  }
  /**
   * The files of documents' file fields (`files = {...}` on a collection), through the server's
   * files service, as trusted server code (no allow/deny rules; the field's size limit and
   * accepted types apply). Every call names the collection, the document's `_id` and the field.
   */
  export const files: {
    /** The field's files (an empty array when it holds none). */
    list(collection: string, id: string, field: string): Promise<FileMeta[]>;
    meta(collection: string, id: string, field: string, name: string): Promise<FileMeta>;
    /** The file's bytes, read whole (at most 8 MiB). */
    read(collection: string, id: string, field: string, name: string): Promise<Uint8Array>;
    /** The file as UTF-8 text, read whole (at most 8 MiB). */
    readText(collection: string, id: string, field: string, name: string): Promise<string>;
    /**
     * Stores `data` (a string is stored as UTF-8) as a file of the field, as an upload does:
     * `max = 1` replaces the file, a larger `max` adds one (the name made unique). `type` is
     * believed only for content without magic bytes (text/csv...).
     */
    attach(collection: string, id: string, field: string, name: string, data: string | Uint8Array | ArrayBuffer, type?: string): Promise<FileMeta>;
    /** Removes the file (its metadata, bytes and thumbnails); resolves to its metadata. */
    delete(collection: string, id: string, field: string, name: string): Promise<FileMeta>;
  };

  export const accounts: {
    createUser(options: { username?: string; email?: string; password?: string; profile?: { [key: string]: Json }; roles?: string[] }): Promise<string>;
    findUserById(id: string): Promise<User | null>;
    findUserByUsername(username: string): Promise<User | null>;
    findUserByEmail(email: string): Promise<User | null>;
    setPassword(userId: string, password: string): Promise<void>;
    /** Removes every login token of the user; resolves to how many. */
    logoutEverywhere(userId: string): Promise<number>;
  };
  export const roles: {
    addUsersToRoles(userId: string, roles: string | string[]): Promise<void>;
    removeUsersFromRoles(userId: string, roles: string | string[]): Promise<void>;
    userIsInRole(userId: string, roles: string | string[]): Promise<boolean>;
    getRolesForUser(userId: string): Promise<string[]>;
  };

  export interface JobContext {
    /** The job's id (the same on every try). */
    readonly jobId: string;
    /** Which try this is, from 1. */
    readonly attempt: number;
    /** This run's id, which the server's log lines about it carry. */
    readonly runId: string;
  }
  export interface JobOptions {
    /** How many times a failing run is tried again (default 5). */
    retries?: number;
    /** How the wait between tries grows (default "exponential", with jitter, up to an hour). */
    backoff?: "exponential" | "fixed";
    /** The first wait between tries (default 1000). */
    retry_delay_ms?: number;
    /** The longest one run may take (default 30000, at most the worker's lease_ms). */
    timeout_ms?: number;
  }
  export interface EnqueueOptions {
    /** When the job falls due (a Date, or milliseconds since the epoch); now by default. */
    runAt?: Date | number;
    /** Due this many milliseconds from now. */
    delayMs?: number;
    /** While a job of this name and key is pending, enqueueing another is a no-op. */
    key?: string;
  }
  /**
   * Durable jobs, kept in the database until they have run. `define` at the top level of a
   * module; `enqueue` from any method, hook, route or job. A job enqueued in a before hook is
   * stored with the write (a refused or failed write enqueues nothing). A job that throws is
   * tried again after a backoff, then kept as failed. A job runs at least once: a run cut by a
   * crash runs again once its lease ends, so make its effects idempotent.
   */
  export const jobs: {
    define<A = Json>(name: string, f: (this: JobContext, args: A) => unknown, options?: JobOptions): void;
    /** Resolves to the job's id (the pending job's id for a key that is pending already). */
    enqueue(name: string, args?: Json, options?: EnqueueOptions): Promise<string>;
  };

  /**
   * Runs `f` at each due time of `expression`, once per due time across every instance on the
   * database: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first
   * ("*\/2 * * * * *"), or @hourly, @daily, @weekly, @monthly, @yearly; in `timezone` (an IANA
   * name, UTC by default). A due time missed while every instance was down runs once at start.
   * `f` runs as the job "cron:<name>" with `{schedule, due}` (due: milliseconds since the
   * epoch); `retries` defaults to 0.
   */
  export function cron(
    name: string,
    expression: string,
    f: (this: JobContext, args: { schedule: string; due: number }) => unknown,
    options?: { timezone?: string; retries?: number; timeout_ms?: number },
  ): void;

  /**
   * Signed webhooks (Standard Webhooks) to a receiver of `[[webhooks]]` in the config, whose
   * secret signs them: the body is `{type, timestamp, data}`. Delivered by the job worker,
   * retried for up to 24 hours; in a before hook, stored with the write. Resolves to the
   * delivery's id (its `webhook-id` header is "msg_" and the id).
   */
  export const webhooks: {
    send(url: string, event: { type: string; data?: Json }): Promise<string>;
  };

  /**
   * Who may join and send to the channels of the live socket (`GET /live`), by name pattern
   * (`*` stands for any run of characters). `this.userId` is the client's user (null when not
   * logged in). Return `true` to allow; anything else (or a throw) refuses. Beside a matching
   * `[[channels]]` rule of the config, both must allow; without one, the function decides.
   */
  export function channels(defs: {
    [pattern: string]: {
      join?(this: { userId: string | null }, name: string): boolean | Promise<boolean>;
      send?(
        this: { userId: string | null },
        name: string,
        message: { event: string; payload: Json },
      ): boolean | Promise<boolean>;
    };
  }): void;

  /**
   * Sends `event` with `payload` to every member of `channel`, on every instance (`from` is
   * null). Messages are not stored: nobody in the channel, nobody gets it.
   */
  export function broadcast(channel: string, event: string, payload?: Json): Promise<null>;

  /** Thrown from a method: the auto API's 400 (or `statusCode`) with `{error, reason, details}`. */
  export class PorticoError extends Error {
    constructor(error: string, reason?: string, details?: Json);
    error: string;
    reason?: string;
    details?: Json;
    statusCode?: number;
  }
}

/** `fetch` reaches only the hosts of `[scripts] fetch_hosts`, over http:// or https://. */
declare function fetch(
  url: string,
  init?: { method?: string; headers?: { [name: string]: string }; body?: string },
): Promise<{
  status: number;
  ok: boolean;
  statusText: string;
  url: string;
  headers: { get(name: string): string | null; has(name: string): boolean };
  text(): Promise<string>;
  json(): Promise<any>;
}>;
