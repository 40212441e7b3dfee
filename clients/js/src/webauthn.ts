// Passkeys' JSON forms: the server sends WebAuthn options with binary values as unpadded
// base64url, and takes the credential back in the same form (`PublicKeyCredential.toJSON()`).
// Browsers that parse and write these forms themselves are used as they are; older ones get
// the same conversion here.
import { PorticoError } from './error.js';

type Json = Record<string, unknown>;

function decode(text: unknown): ArrayBuffer {
  const b64 = String(text).replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes.buffer;
}

function encode(buffer: ArrayBuffer | ArrayBufferView | null | undefined): string | undefined {
  if (!buffer) return undefined;
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  let raw = '';
  for (const b of bytes) raw += String.fromCharCode(b);
  return btoa(raw).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const ids = (list: unknown) => (Array.isArray(list) ? list.map((c: Json) => ({ ...c, id: decode(c.id) })) : undefined);

interface Parsers {
  parseCreationOptionsFromJSON?: (o: unknown) => PublicKeyCredentialCreationOptions;
  parseRequestOptionsFromJSON?: (o: unknown) => PublicKeyCredentialRequestOptions;
}

function credentials(): CredentialsContainer {
  const container = (globalThis as { navigator?: { credentials?: CredentialsContainer } }).navigator?.credentials;
  if (!container) throw new PorticoError(0, 'passkeys-unavailable', 'Passkeys need a browser with navigator.credentials (a secure page: https or localhost)');
  return container;
}

/** What `navigator.credentials.create` gives, in the form the server reads. */
function credentialJSON(credential: Credential | null): Json {
  if (!credential) throw new PorticoError(0, 'passkey-cancelled', 'No passkey was given');
  const c = credential as PublicKeyCredential;
  if (typeof c.toJSON === 'function') return c.toJSON() as unknown as Json;
  const r = c.response as AuthenticatorResponse & Partial<AuthenticatorAttestationResponse & AuthenticatorAssertionResponse>;
  return {
    id: c.id,
    rawId: encode(c.rawId),
    type: c.type,
    response: {
      clientDataJSON: encode(r.clientDataJSON),
      ...(r.attestationObject && { attestationObject: encode(r.attestationObject), transports: r.getTransports?.() ?? [] }),
      ...(r.authenticatorData && { authenticatorData: encode(r.authenticatorData), signature: encode(r.signature), userHandle: encode(r.userHandle) ?? null }),
    },
    clientExtensionResults: c.getClientExtensionResults?.() ?? {},
  };
}

/** Makes a passkey from the server's registration options; the credential in JSON form. */
export async function create(options: Json, signal?: AbortSignal): Promise<Json> {
  const parsers = (globalThis as { PublicKeyCredential?: Parsers }).PublicKeyCredential ?? {};
  const user = (options.user ?? {}) as Json;
  const publicKey = parsers.parseCreationOptionsFromJSON
    ? parsers.parseCreationOptionsFromJSON(options)
    : ({ ...options, challenge: decode(options.challenge), user: { ...user, id: decode(user.id) }, excludeCredentials: ids(options.excludeCredentials) ?? [] } as unknown as PublicKeyCredentialCreationOptions);
  return credentialJSON(await credentials().create({ publicKey, ...(signal && { signal }) }));
}

/** Signs the server's login challenge with a passkey; the assertion in JSON form. */
export async function get(options: Json, signal?: AbortSignal): Promise<Json> {
  const parsers = (globalThis as { PublicKeyCredential?: Parsers }).PublicKeyCredential ?? {};
  const publicKey = parsers.parseRequestOptionsFromJSON
    ? parsers.parseRequestOptionsFromJSON(options)
    : ({ ...options, challenge: decode(options.challenge), allowCredentials: ids(options.allowCredentials) ?? [] } as unknown as PublicKeyCredentialRequestOptions);
  return credentialJSON(await credentials().get({ publicKey, ...(signal && { signal }) }));
}
