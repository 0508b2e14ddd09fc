import { sha256 } from '@noble/hashes/sha2'
import { describe } from '@sluice/core/validation'

/**
 * Longest key a store keeps verbatim. A longer one (a 16 KB header value used as a key,
 * say) is kept as its SHA-256, so `maxKeys` bounds memory in bytes too: 100,000 keys of
 * 16 KB would otherwise hold 1.6 GB.
 */
export const MAX_KEY_LENGTH = 256

/** What a key's digest form starts with. */
const DIGEST = 'sha256:'

function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function digest(key: string): string {
  return `${DIGEST}${base64url(sha256(new TextEncoder().encode(key)))}`
}

/**
 * A key longer than {@link MAX_KEY_LENGTH} as `sha256:<digest>`: a cryptographic hash,
 * because a client that controls a long key (a header) must not be able to collide with
 * another client's budget, and every process must map one key alike (Redis). What a
 * store applies to every key it is given, so it is bounded in bytes whoever calls it;
 * bounded keys are left as they are.
 *
 * @example
 * ```ts
 * boundedKey('x'.repeat(10_000)).length // 50
 * ```
 */
export function boundedKey(key: string): string {
  return key.length > MAX_KEY_LENGTH ? digest(key) : key
}

/**
 * The key a limiter stores for a key it is given: {@link boundedKey}, and a key that
 * already reads `sha256:…` is hashed too, so no client can forge the digest form of
 * another client's long key (which the decision, the events and the logs show) and
 * share its budget. The one normalisation of every keyed call (`consume`, `get`,
 * `delete`, the middleware's `keyFor`).
 *
 * @example
 * ```ts
 * storedKey('sha256:abc') === storedKey('sha256:abc') // true, and not 'sha256:abc'
 * ```
 */
export function storedKey(key: string): string {
  return key.length > MAX_KEY_LENGTH || key.startsWith(DIGEST) ? digest(key) : key
}

/** The digest form's length: its prefix and a base64url SHA-256 (43 characters). */
const DIGEST_LENGTH = DIGEST.length + 43
const DIGEST_FORM = /^sha256:[A-Za-z0-9_-]{43}$/

/**
 * The stored key for a key an operator hands over (`get`, `resetKey`, `delete`): a key in
 * the digest form (what `keyFor`, the decision and the events show for a long key) is
 * taken as already stored, anything else is normalised as a request's key would be. Not
 * for keys a client sends: there a digest-like key is hashed (see {@link storedKey}).
 *
 * @example
 * ```ts
 * lookupKey(storedKey('x'.repeat(300))) === storedKey('x'.repeat(300)) // true
 * ```
 */
export function lookupKey(key: string): string {
  return key.length === DIGEST_LENGTH && DIGEST_FORM.test(key) ? key : storedKey(key)
}

/**
 * Checks a key handed to a keyed call (a keyed limiter's, or a middleware's `get` and
 * `resetKey`): a non-empty string. The error names the call and the value, so `get(42)`
 * does not fail deep inside a store.
 *
 * @example
 * ```ts
 * checkKey('rateLimit.get', '') // TypeError: rateLimit.get: "key" must be a non-empty string, got ""
 * ```
 */
export function checkKey(method: string, key: unknown): asserts key is string {
  if (typeof key !== 'string' || key === '') {
    throw new TypeError(`${method}: "key" must be a non-empty string, got ${describe(key)}`)
  }
}
