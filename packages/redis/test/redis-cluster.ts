import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, type ClusterOptions, Redis } from 'ioredis'
import { freePort, type RedisServer, startRedisServer } from './redis-server'

/** One node of a {@link TestCluster}. */
export interface ClusterNode {
  readonly port: number
  readonly id: string
  readonly server: RedisServer
}

/** A Redis Cluster of real redis-server processes, owned by a test file. */
export interface TestCluster {
  readonly nodes: readonly ClusterNode[]
  /** The node that serves `key`'s slot as master now, as a live node sees it. */
  masterOf(key: string): Promise<ClusterNode>
  /** The nodes that serve slots as masters now. */
  masters(): Promise<ClusterNode[]>
  /** An ioredis Cluster client on it, closed with the cluster. */
  client(options?: ClusterOptions): Promise<Cluster>
  /** A plain connection to one node, closed with the cluster. */
  connect(node: ClusterNode): Redis
  /**
   * Waits (polling, up to `ms`) until every live node says `cluster_state:ok` and they
   * agree on who serves every slot: after a failover, once the promoted replica is known.
   */
  settle(ms?: number): Promise<void>
  stop(): Promise<void>
}

/** The options sluice's README recommends for ioredis Cluster, with a test's short timeouts. */
export const CLUSTER_OPTIONS: ClusterOptions = {
  enableOfflineQueue: false,
  maxRedirections: 4,
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnTryAgain: 50,
  slotsRefreshTimeout: 500,
  redisOptions: { connectTimeout: 500 },
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

async function until(
  what: string,
  ms: number,
  done: () => Promise<boolean>,
  state: () => string = () => '',
): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await done().catch(() => false))) {
    if (performance.now() > deadline) {
      throw new Error(`cluster: ${what} within ${ms} ms${state() ? `; last seen: ${state()}` : ''}`)
    }
    await sleep(50)
  }
}

/**
 * Starts `masters` masters with one replica each, `cluster-node-timeout` 500 ms, built by
 * hand (CLUSTER MEET, ADDSLOTSRANGE, REPLICATE: no redis-cli needed), and waits until
 * every node agrees the cluster is ok. `cluster-require-full-coverage no`: a failed master
 * takes down its own slots only, as production clusters that want that are configured.
 */
export async function startCluster(masters = 3): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'))
  const ports: number[] = []
  while (ports.length < masters * 2) {
    const port = await freePort()
    if (!ports.includes(port)) ports.push(port)
  }
  const servers = await Promise.all(
    ports.map((port) =>
      startRedisServer({
        port,
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '500',
          '--cluster-require-full-coverage',
          'no',
          '--cluster-announce-ip',
          '127.0.0.1',
          '--dir',
          dir,
        ],
      }),
    ),
  )
  const connections: Redis[] = []
  const clients: Cluster[] = []
  const connect = (port: number) => {
    const connection = new Redis({ host: '127.0.0.1', port, lazyConnect: false })
    connection.on('error', () => {})
    connections.push(connection)
    return connection
  }
  const admins = ports.map(connect)
  const ids = await Promise.all(
    admins.map(async (admin) => String(await admin.call('CLUSTER', 'MYID'))),
  )
  const nodes = ports.map((port, i) => ({ port, id: ids[i]!, server: servers[i]! }))
  const [first] = admins
  for (const port of ports.slice(1)) await first!.call('CLUSTER', 'MEET', '127.0.0.1', String(port))
  await until('every node met', 10_000, async () => {
    const views = await Promise.all(admins.map((a) => a.call('CLUSTER', 'NODES')))
    return views.every(
      (view) =>
        String(view).trim().split('\n').length === ports.length && !/handshake/.test(String(view)),
    )
  })
  const per = Math.ceil(16384 / masters)
  await Promise.all(
    admins
      .slice(0, masters)
      .map((admin, i) =>
        admin.call(
          'CLUSTER',
          'ADDSLOTSRANGE',
          String(i * per),
          String(Math.min(16383, (i + 1) * per - 1)),
        ),
      ),
  )
  // A replica must know its master's slots before it can follow it.
  await until('slots known to every node', 10_000, async () => {
    const views = await Promise.all(admins.map((a) => a.call('CLUSTER', 'SLOTS')))
    return views.every((view) => (view as unknown[]).length === masters)
  })
  for (let i = 0; i < masters; i++) {
    await admins[masters + i]!.call('CLUSTER', 'REPLICATE', ids[i]!)
  }

  const live = () => nodes.filter((node) => node.server.alive)
  const cluster: TestCluster = {
    nodes,
    async masterOf(key) {
      const admin = connect(live()[0]!.port)
      try {
        const slot = Number(await admin.call('CLUSTER', 'KEYSLOT', key))
        const ranges = (await admin.call('CLUSTER', 'SLOTS')) as [
          number,
          number,
          [string, number],
        ][]
        const range = ranges.find(([from, to]) => from <= slot && slot <= to)
        const port = range?.[2][1]
        const node = nodes.find((n) => n.port === port)
        if (node === undefined) throw new Error(`cluster: no master for slot ${slot}`)
        return node
      } finally {
        admin.disconnect()
      }
    },
    async masters() {
      const admin = connect(live()[0]!.port)
      try {
        const ranges = (await admin.call('CLUSTER', 'SLOTS')) as [
          number,
          number,
          [string, number],
        ][]
        const ports = new Set(ranges.map((range) => range[2][1]))
        return nodes.filter((node) => ports.has(node.port))
      } finally {
        admin.disconnect()
      }
    },
    async client(options = {}) {
      const client = new Cluster(
        live().map((node) => ({ host: '127.0.0.1', port: node.port })),
        { ...CLUSTER_OPTIONS, ...options },
      )
      client.on('error', () => {})
      clients.push(client)
      await until('the client is ready', 10_000, async () => client.status === 'ready')
      return client
    },
    connect: (node) => connect(node.port),
    async settle(ms = 30_000) {
      let seen = ''
      await until(
        'every node agrees and is ok',
        ms,
        async () => {
          const alive = live().map((node) => connect(node.port))
          try {
            const infos = await Promise.all(alive.map((a) => a.call('CLUSTER', 'INFO')))
            seen = alive
              .map((a, i) => `${a.options.port} ${/cluster_state:\w+/.exec(String(infos[i]))?.[0]}`)
              .join(', ')
            if (!infos.every((info) => String(info).includes('cluster_state:ok'))) return false
            const views = await Promise.all(alive.map((a) => a.call('CLUSTER', 'SLOTS')))
            const owners = views.map((view) =>
              JSON.stringify(
                (view as [number, number, [string, number]][])
                  .map(([from, to, master]) => [from, to, master[1]])
                  .sort((a, b) => Number(a[0]) - Number(b[0])),
              ),
            )
            seen += `; slots: ${owners.join(' | ')}`
            const masterPorts = JSON.parse(owners[0]!) as [number, number, number][]
            const aliveMasters = masterPorts.every(([, , port]) =>
              live().some((n) => n.port === port),
            )
            return aliveMasters && owners.every((o) => o === owners[0])
          } finally {
            for (const a of alive) a.disconnect()
          }
        },
        () => seen,
      )
    },
    async stop() {
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())))
      for (const c of connections) c.disconnect()
      await Promise.all(servers.map((s) => s.stop()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await until('replicas in sync', 20_000, async () => {
    const infos = await Promise.all(admins.slice(masters).map((a) => a.call('INFO', 'replication')))
    return infos.every((info) => String(info).includes('master_link_status:up'))
  })
  await cluster.settle()
  return cluster
}
