import { createHash } from 'node:crypto'
import type { Policy } from '@sluice/keyed'

/**
 * Escapes a client key for use inside a Redis Cluster hash tag. `}` would end the tag early
 * (and let a client key pick another key's slot or name), so it is percent-encoded, along
 * with `{` and `%` itself so the mapping stays one-to-one. An empty key becomes a lone `%`
 * (which no escaped key can be): an empty tag `{}` would make Redis hash the whole key name,
 * spreading one decision's keys over several slots.
 *
 * @example
 * ```ts
 * escapeKey('a}b') // 'a%7Db'
 * ```
 */
export function escapeKey(key: string): string {
  if (key === '') return '%'
  if (!/[%{}]/.test(key)) return key
  return key.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'))
}

/**
 * The start of every Redis key of one client key: `<prefix>{<escaped client key>}`. All of
 * them share the hash tag, so a decision over several policies touches one Cluster slot.
 *
 * @example
 * ```ts
 * keyTag('sluice:', '203.0.113.7') // 'sluice:{203.0.113.7}'
 * ```
 */
export function keyTag(prefix: string, clientKey: string): string {
  return `${prefix}{${escapeKey(clientKey)}}`
}

/**
 * The layout of the values the scripts keep, in every key's name: values of an earlier
 * layout are never read (they sit under other names, and expire on their own). v3 keys a
 * policy's state by its name and algorithm and keeps the spec beside it, so a changed spec
 * carries the state over (a bulkhead's slots need no conversion: each take checks its own
 * `max`). A v2 value is not carried: the change to v3 is a one-time fresh start, and so is
 * the move of token, leaky and warm-up buckets from keys named by their whole spec to
 * keys named by name and algorithm (no value was ever written under those names before).
 */
const LAYOUT = 'v3'

/**
 * What follows the tag for one policy: `:v3:<digest>`, the layout version, then ten
 * base64url characters of the SHA-256 of what the policy's state belongs to: its name and
 * algorithm (`Policy.state`). The value keeps the spec beside the state and carries it
 * over to a changed spec of the name (lib/record.lua). State never belongs to a name alone
 * across algorithms (issue 10: two unnamed middlewares once shared `prefix{ip}:default`),
 * and the digest keeps every key name short, however long the name (a default name such
 * as `100-per-1m-token-bucket-burst-20` would be stored once per client key):
 * {@link stateKey} finds a policy's key.
 *
 * @example
 * ```ts
 * policySuffix(policy) // ':v3:Qm9sZGx5Xz'
 * ```
 */
export function policySuffix(policy: Pick<Policy, 'state'>): string {
  return `:${LAYOUT}:${createHash('sha256').update(policy.state).digest('base64url').slice(0, 10)}`
}

/**
 * The Redis key holding one policy's state for one client key:
 * `<prefix>{<escaped client key>}:v3:<digest>` (see {@link policySuffix}).
 *
 * @example
 * ```ts
 * stateKey('sluice:', '203.0.113.7', policy) // 'sluice:{203.0.113.7}:v3:3kTq0AZpXc'
 * ```
 */
export function stateKey(prefix: string, clientKey: string, policy: Pick<Policy, 'state'>): string {
  return keyTag(prefix, clientKey) + policySuffix(policy)
}
