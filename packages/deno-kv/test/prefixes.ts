/**
 * Prefixes the store refuses at construction: what each is, the prefix, the message, and
 * whether Deno KV itself refuses a key that starts with it (the Deno side checks that on a
 * real KV).
 */
export const BAD_PREFIXES: readonly (readonly [string, unknown, string, boolean])[] = [
  [
    'an object',
    [{}],
    'denoKvStore: "prefix[0]" must be a string, number, bigint, boolean or Uint8Array (a Deno KV key part), got an object',
    true,
  ],
  [
    'an undefined part',
    ['app', undefined],
    'denoKvStore: "prefix[1]" must be a string, number, bigint, boolean or Uint8Array (a Deno KV key part), got undefined',
    true,
  ],
  [
    'a function',
    [() => 'app'],
    'denoKvStore: "prefix[0]" must be a string, number, bigint, boolean or Uint8Array (a Deno KV key part), got a function',
    true,
  ],
  [
    'null',
    [null],
    'denoKvStore: "prefix[0]" must be a string, number, bigint, boolean or Uint8Array (a Deno KV key part), got null',
    true,
  ],
  // Deno's KvKeyPart type lists symbols, but KV refuses them.
  [
    'a symbol',
    [Symbol('app')],
    'denoKvStore: "prefix[0]" must be a string, number, bigint, boolean or Uint8Array (a Deno KV key part), got Symbol(app)',
    true,
  ],
  [
    'a 3 KB string',
    ['x'.repeat(3000)],
    'denoKvStore: "prefix" must take at most 512 bytes of a KV key (KV keys hold 2048; the client key and the policy id need the rest), got 3002 bytes',
    true,
  ],
  // 171 three-byte characters: 513 bytes of UTF-8, 515 with the string's framing.
  [
    '513 bytes of UTF-8',
    ['€'.repeat(171)],
    'denoKvStore: "prefix" must take at most 512 bytes of a KV key (KV keys hold 2048; the client key and the policy id need the rest), got 515 bytes',
    false,
  ],
  [
    'no part',
    [],
    'denoKvStore: "prefix" must have at least one part (resetAll deletes every key under it, and under [] that is the whole database), got []',
    false,
  ],
  ['a string', 'sluice', 'denoKvStore: "prefix" must be an array (a KV key), got "sluice"', false],
]

/** The longest prefix the store takes: 512 bytes (510 characters and the string's framing). */
export const LONGEST_PREFIX = ['x'.repeat(510)]
