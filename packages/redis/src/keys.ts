/**
 * Escapes a client key for use inside a Redis Cluster hash tag. `}` would end the tag early
 * (and let a client key pick another key's slot or name), so it is percent-encoded, along
 * with `{` and `%` itself so the mapping stays one-to-one. An empty key becomes a lone `%`
 * (which no escaped key can be): an empty tag `{}` would make Redis hash the whole key name,
 * spreading one decision's keys over several slots.
 *
 * @example
 * escapeKey('a}b') // 'a%7Db'
 */
export function escapeKey(key: string): string {
  if (key === '') return '%'
  return key.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'))
}

/**
 * The Redis key holding one policy's state for one client key:
 * `<prefix>{<escaped client key>}:<policy name>`. Every key of one client key shares its
 * hash tag, so a decision over several policies touches one Cluster slot.
 *
 * @example
 * stateKey('sluice:', '203.0.113.7', 'default') // 'sluice:{203.0.113.7}:default'
 */
export function stateKey(prefix: string, clientKey: string, policyName: string): string {
  return `${prefix}{${escapeKey(clientKey)}}:${policyName}`
}
