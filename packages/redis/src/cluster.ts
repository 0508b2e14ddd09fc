import { type RedisClient, type SendCommand, toSendCommand } from './client'

// CRC16-CCITT (XMODEM), as Redis Cluster hashes keys to slots.
const TABLE = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8
  for (let bit = 0; bit < 8; bit++)
    crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  return crc
})

/**
 * The Redis Cluster slot of a key (what `CLUSTER KEYSLOT` answers): CRC16 of its hash tag
 * (between the first `{` and the first `}` after it, when not empty), else of the whole key.
 *
 * @example
 * ```ts
 * hashSlot('sluice:{203.0.113.7}:default:k3X9') === hashSlot('{203.0.113.7}') // true
 * ```
 */
export function hashSlot(key: string): number {
  let hashed = key
  const open = key.indexOf('{')
  if (open !== -1) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) hashed = key.slice(open + 1, close)
  }
  let crc = 0
  for (const byte of Buffer.from(hashed))
    crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!
  return crc & 16383
}

/** The part of an ioredis `Cluster` the store uses to tell shards apart and reach every master. */
interface IoRedisCluster {
  readonly isCluster: true
  /** Per slot, the node keys (`host:port`) serving it, master first. */
  readonly slots: readonly (readonly string[] | undefined)[]
  nodes(role: 'master'): (RedisClient & { readonly options?: { host?: string; port?: number } })[]
  refreshSlotsCache?(): void
}

function asIoRedisCluster(client: RedisClient): IoRedisCluster | undefined {
  if (typeof client !== 'object' || client === null) return undefined
  const cluster = client as Partial<IoRedisCluster>
  return cluster.isCluster === true &&
    Array.isArray(cluster.slots) &&
    typeof cluster.nodes === 'function'
    ? (cluster as IoRedisCluster)
    : undefined
}

/** What the store knows of where a key lives. */
export interface Topology {
  /**
   * Which shard serves a key: the master's address on an ioredis Cluster, one name for
   * everything else. Health is kept per shard, so one failing master leaves the decisions
   * of the others on Redis.
   */
  shardOf(key: string): string
  /** A `SendCommand` for each master (the client itself off a Cluster): what `resetAll` scans. */
  masters(): SendCommand[]
  /**
   * The masters that may hold `key`: on a Cluster, the one serving its slot (every master
   * while the slot table does not name a known node); the client itself off a Cluster.
   * What `reset` of one key scans.
   */
  mastersOf(key: string): SendCommand[]
  /**
   * Asks the client to read the cluster's slots again. A hung master answers nothing, so
   * nothing tells ioredis its replica was promoted (it reads the slots every 5 s, or on a
   * MOVED): a probe that failed asks for it.
   */
  refresh(): void
}

const ONE_SHARD = 'redis'

/**
 * The topology of a client: an ioredis Cluster's slot table, read at each call (it follows
 * failovers as ioredis refreshes it), or a single shard.
 */
export function topologyOf(client: RedisClient, send: SendCommand): Topology {
  const cluster = asIoRedisCluster(client)
  if (cluster === undefined) {
    return {
      shardOf: () => ONE_SHARD,
      masters: () => [send],
      mastersOf: () => [send],
      refresh: () => {},
    }
  }
  return {
    shardOf: (key) => cluster.slots[hashSlot(key)]?.[0] ?? ONE_SHARD,
    masters: () => cluster.nodes('master').map((node) => toSendCommand(node)),
    mastersOf: (key) => {
      const masters = cluster.nodes('master')
      const serving = cluster.slots[hashSlot(key)]?.[0]
      const owner = masters.find(
        ({ options }) => options !== undefined && `${options.host}:${options.port}` === serving,
      )
      return (owner === undefined ? masters : [owner]).map((node) => toSendCommand(node))
    },
    refresh: () => cluster.refreshSlotsCache?.(),
  }
}
