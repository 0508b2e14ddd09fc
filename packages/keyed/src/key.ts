import { sha256 } from '@noble/hashes/sha2'

/**
 * Longest key a store keeps verbatim. A longer one (a 16 KB header value used as a key,
 * say) is kept as its SHA-256, so `maxKeys` bounds memory in bytes too: 100,000 keys of
 * 16 KB would otherwise hold 1.6 GB.
 */
export const MAX_KEY_LENGTH = 256

function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/**
 * A key longer than {@link MAX_KEY_LENGTH} as `sha256:<digest>`: a cryptographic hash,
 * because a client that controls a long key (a header) must not be able to collide with
 * another client's budget, and every process must map one key alike (Redis).
 *
 * @example
 * ```ts
 * boundedKey('x'.repeat(10_000)).length // 50
 * ```
 */
export function boundedKey(key: string): string {
  if (key.length <= MAX_KEY_LENGTH) return key
  return `sha256:${base64url(sha256(new TextEncoder().encode(key)))}`
}
