/**
 * The client of a Portico server, for browsers and Node.js 20+: login and the token, the routes
 * door's collections, the auto API's methods, collection writes and publications, and live
 * subscriptions with a local cache (over server-sent events, or over the live socket), and channels (messages and presence) over one WebSocket. No dependencies; every failure is a `PorticoError`.
 *
 * @packageDocumentation
 */
export { Portico, CollectionWrite } from './portico.js';
export type { PorticoOptions, PublicationOptions, RouteOptions } from './portico.js';
export type { Collections, Methods, Publications, Routes } from './app.js';
export { Auth } from './auth.js';
export type { AuthMethods, AuthUser, EmailCodeInput, GuestUpgrade, LoginInput, PasskeyCalls, PasskeyInfo, RegisterInput, TokenStore } from './auth.js';
export type { FileInfo, FileSource, FileURLOptions, UploadOptions } from './files.js';
export { Collection, etagOf } from './collection.js';
export type { AggregateQuery, AggregateRow, ListRequest, BatchOp, BatchResult, Doc, IfMatch, ListQuery, NewDoc, Page, Patch, Sort, Where, WithId, WriteOptions } from './collection.js';
export { Subscription } from './live.js';
export { Channel } from './channel.js';
export type { ChannelMessage, Member, SocketOptions } from './channel.js';
export type { LiveHandlers, LiveOptions, ReconnectOptions } from './live.js';
export { PorticoError } from './error.js';
export type { CallOptions } from './http.js';
export type { SortSpec } from './sort.js';
