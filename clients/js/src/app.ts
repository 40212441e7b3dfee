/**
 * The shape of one app, for type checking: empty here, filled in by a declaration file that
 * augments this module, such as the one `portico types --client` writes:
 *
 * ```ts
 * export {};
 * declare module 'portico-client' {
 *   interface Collections { tasks: { _id: string; title: string; done?: boolean } }
 *   interface Methods { addTask: unknown }
 *   interface Publications { openTasks: unknown }
 *   interface Routes { '/api/hello': 'GET' | 'POST' }
 * }
 * ```
 *
 * Then `pc.collection('tasks')` is typed by its documents, and `pc.call`, `pc.publication`,
 * `pc.subscribe` and `pc.route` take only the names declared (any string while one is empty).
 */

/** Each collection's documents, by collection name. */
export interface Collections {}

/** The auto API's methods, by name. */
export interface Methods {}

/** The auto API's publications, by name. */
export interface Publications {}

/** The server's own routes (scripts', hand-written ones), by path: the methods each answers. */
export interface Routes {}

/** The names `I` declares, or any string while it declares none. */
export type NameOf<I> = [keyof I] extends [never] ? string : keyof I & string;

/** The document type of collection `K` as `Collections` declares it. */
export type DocOf<K> = K extends keyof Collections ? (Collections[K] extends object ? Collections[K] : never) : never;

/** The methods route `P` answers as `Routes` declares it, or any method. */
export type MethodOf<P> = P extends keyof Routes ? Routes[P] & string : string;
