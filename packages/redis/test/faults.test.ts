import diagnostics from 'node:diagnostics_channel'
import type { TakeResult } from '@sluice/http'
import { Redis } from 'ioredis'
import { afterEach, expect, it, vi } from 'vitest'
import { type OnError, RedisStoreError, redisStore } from '../src/index'
import { FIXED_WINDOW } from '../src/scripts'
import { connect, DAY, describeRedis, policy, sleep, uniquePrefix, until } from './helpers'
import { type RedisServer, startRedisServer } from './redis-server'

// Each test runs its own redis-server, so stopping it disturbs no other test file.
const TIMEOUT = 200
// How long any call may take: the store's timeout plus generous scheduling slack. A call
// still pending after this counts as hung; it bounds the answer, it does not time it.
const BOUND = TIMEOUT + 1_500

const servers: RedisServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()))
})

async function startServer(port?: number): Promise<RedisServer> {
  const server = await startRedisServer(port === undefined ? {} : { port })
  servers.push(server)
  return server
}

function quietClient(port: number): Redis {
  const client = connect({ port })
  // ioredis reports every failed reconnect as an 'error' event; the store reports failures.
  client.on('error', () => {})
  return client
}

/** Resolves with the call's answer, or fails the test if it has not answered within BOUND. */
async function answered<T>(call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${BOUND} ms`)), BOUND)
  })
  try {
    return await Promise.race([call, hung])
  } finally {
    clearTimeout(timer)
  }
}

function harness(port: number, onError: OnError, timeout = TIMEOUT) {
  const failures: RedisStoreError[] = []
  let recoveries = 0
  const prefix = uniquePrefix()
  const store = redisStore({
    client: quietClient(port),
    prefix,
    timeout,
    probeInterval: 50,
    onError,
    onFailure: (error) => failures.push(error),
    onRecovery: () => {
      recoveries++
    },
  })
  return { store, prefix, failures, recoveries: () => recoveries }
}

const limit = policy.fixedWindow('p', { limit: 5, window: DAY })

/** Sequential takes, each answered within the bound. */
async function takes(
  store: ReturnType<typeof harness>['store'],
  key: string,
  n: number,
): Promise<TakeResult[]> {
  const results: TakeResult[] = []
  for (let i = 0; i < n; i++) results.push(await answered(store.take(key, [limit], 1)))
  return results
}

/**
 * Background load: a decision every few milliseconds, each required to answer within the
 * bound. `finish` stops it and resolves with how many were answered while the store was
 * down, and in all.
 */
function startLoad(store: ReturnType<typeof harness>['store']) {
  const calls: Promise<void>[] = []
  let whileDown = 0
  const timer = setInterval(() => {
    calls.push(
      answered(store.take('load', [limit], 1)).then(() => {
        if (store.status === 'down') whileDown++
      }),
    )
  }, 5)
  return {
    async finish() {
      clearInterval(timer)
      await Promise.all(calls)
      return { whileDown, total: calls.length }
    },
  }
}

/** Waits, without sending a request, until the store's background probe found Redis again. */
async function untilRecovered(store: ReturnType<typeof harness>['store']): Promise<void> {
  await until(() => store.status === 'up', 'the store recovered')
}

const slot = policy.concurrency('slot', 1)

/** Two takes of a one-slot bulkhead, a release of the first, a third take. */
async function bulkheadRound(store: ReturnType<typeof harness>['store']): Promise<boolean[]> {
  const first = await answered(store.take('bulkhead', [slot], 1))
  const second = await answered(store.take('bulkhead', [slot], 1))
  const lease = first.results[0]!.lease
  if (lease !== undefined) await answered(store.release('bulkhead', slot, lease))
  const third = await answered(store.take('bulkhead', [slot], 1))
  return [first.allowed, second.allowed, third.allowed]
}

const bulkheadExpectations: Record<OnError, boolean[]> = {
  deny: [false, false, false],
  // Uncounted: every request gets a slot; releasing one is a no-op.
  allow: [true, true, true],
  // A one-slot bulkhead in this process: the release frees the slot locally.
  local: [true, false, true],
}

const expectations: Record<OnError, (results: TakeResult[]) => void> = {
  // Fail closed: every request is refused, with a retry hint.
  deny: (results) => {
    expect(results.map((r) => r.allowed)).toEqual(Array(8).fill(false))
    expect(results[0]!.results[0]!.retryAfterMs).toBeGreaterThan(0)
  },
  // Fail open: every request passes, uncounted.
  allow: (results) => {
    expect(results.map((r) => r.allowed)).toEqual(Array(8).fill(true))
  },
  // The same limit, counted in this process.
  local: (results) => {
    expect(results.map((r) => r.allowed)).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ])
  },
}

describeRedis.each(['deny', 'allow', 'local'] as const)("onError '%s'", (onError) => {
  it('answers every call while Redis is down, reports once, and recovers without restart', async () => {
    const server = await startServer()
    const { store, prefix, failures, recoveries } = harness(server.port, onError)
    expect((await takes(store, 'before', 2)).map((r) => r.allowed)).toEqual([true, true])

    // Stop Redis under load: every decision, before, during and after, gets an answer.
    const load = startLoad(store)
    await sleep(50)
    await server.stop()

    expectations[onError](await takes(store, 'during', 8))
    expect(await bulkheadRound(store)).toEqual(bulkheadExpectations[onError])
    expect(store.status).toBe('down')
    // Reported once the probe of the failed shard failed too.
    await until(() => failures.length > 0, 'the outage was reported')
    expect(failures).toHaveLength(1)
    expect(['ERR_SLUICE_REDIS', 'ERR_SLUICE_REDIS_TIMEOUT']).toContain(failures[0]!.code)
    expect(recoveries()).toBe(0)

    // Same port, empty server: the client reconnects, the probe notices, and decisions
    // go to Redis again (the script is loaded again on NOSCRIPT).
    await startServer(server.port)
    await untilRecovered(store)
    expect(recoveries()).toBe(1)
    expect(failures).toHaveLength(1)
    expect((await takes(store, 'after', 6)).map((r) => r.allowed)).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
    ])
    const { whileDown, total } = await load.finish()
    expect(whileDown).toBeGreaterThan(0)
    expect(total).toBeGreaterThan(whileDown)
    // The budget is in Redis: a second process sees it spent.
    const other = redisStore({ client: quietClient(server.port), prefix })
    expect((await other.get('after', [limit]))[0]!.remaining).toBe(0)
  })
})

describeRedis('a hung Redis', () => {
  it('times out each call instead of hanging, and recovers when Redis answers again', async () => {
    const server = await startServer()
    const { store, failures, recoveries } = harness(server.port, 'local')
    expect((await takes(store, 'k', 1))[0]!.allowed).toBe(true)

    server.pause()
    // The first call waits out the timeout; the rest are answered locally at once.
    const during = await takes(store, 'hung', 8)
    expect(during.map((r) => r.allowed)).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ])
    await until(() => failures.length > 0, 'the outage was reported')
    expect(failures.map((f) => f.code)).toEqual(['ERR_SLUICE_REDIS_TIMEOUT'])
    // reset has no onError answer: it reports the failure to its caller.
    await expect(answered(store.reset('hung', [limit]))).rejects.toMatchObject({
      name: 'RedisStoreError',
      code: 'ERR_SLUICE_REDIS_TIMEOUT',
    })

    server.resume()
    await untilRecovered(store)
    expect(recoveries()).toBe(1)
  })
})

describeRedis('script cache', () => {
  it('reloads the script after SCRIPT FLUSH (NOSCRIPT) within the same call', async () => {
    const server = await startServer()
    const redis = quietClient(server.port)
    const store = redisStore({ client: redis, prefix: uniquePrefix() })
    expect((await store.take('k', [limit], 1)).allowed).toBe(true)
    expect(await redis.script('EXISTS', FIXED_WINDOW.sha)).toEqual([1])
    await redis.script('FLUSH')
    expect(await redis.script('EXISTS', FIXED_WINDOW.sha)).toEqual([0])
    const next = await store.take('k', [limit], 1)
    expect(next.allowed).toBe(true)
    expect(next.results[0]!.remaining).toBe(3)
    expect(await redis.script('EXISTS', FIXED_WINDOW.sha)).toEqual([1])
    expect(store.status).toBe('up')
  })
})

describeRedis('script cache, under a burst', () => {
  it('sends the source once when a burst of calls meets NOSCRIPT together', async () => {
    const server = await startServer()
    const redis = quietClient(server.port)
    const sent: string[] = []
    const store = redisStore({
      client: (args) => {
        sent.push(args[0]!)
        return redis.call(args[0]!, ...args.slice(1))
      },
      prefix: uniquePrefix(),
      timeout: 10_000,
      leaseTtl: '1m',
    })
    const burst = policy.fixedWindow('burst', { limit: 1_000, window: DAY })
    await redis.script('FLUSH')
    const taken = await Promise.all(
      Array.from({ length: 200 }, (_, i) => store.take(`k${i}`, [burst], 1)),
    )
    expect(taken.every((t) => t.allowed)).toBe(true)
    // One EVAL caches the script; the others send EVALSHA again behind it.
    expect(sent.filter((command) => command === 'EVAL')).toHaveLength(1)
    expect(sent.filter((command) => command === 'EVALSHA')).toHaveLength(399)
  })
})

describeRedis('reporting', () => {
  it('reports a confirmed outage once as a SluiceWarning and on sluice:store, and the recovery without traffic', async () => {
    const server = await startServer()
    const warn = vi.spyOn(console, 'warn')
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const events: unknown[] = []
    const listen = (message: unknown) => events.push(message)
    diagnostics.subscribe('sluice:store', listen)
    try {
      const store = redisStore({
        client: quietClient(server.port),
        prefix: uniquePrefix(),
        timeout: `${TIMEOUT}ms`,
        probeInterval: '50ms',
        onError: 'deny',
      })
      expect((await answered(store.take('k', [limit], 1))).allowed).toBe(true)
      await server.stop()
      for (let i = 0; i < 3; i++) await answered(store.take('k', [limit], 1))
      await until(() => events.length > 0, 'the outage was published')
      expect(events).toEqual([
        { event: 'failure', store: 'redisStore', error: expect.any(RedisStoreError) },
      ])
      expect(warnings.mock.calls).toEqual([
        [
          expect.stringMatching(
            /^redisStore: Redis .* until it answers again \(see https:.*ERR_SLUICE_REDIS_DOWN\.md\)$/,
          ),
          { type: 'SluiceWarning', code: 'ERR_SLUICE_REDIS_DOWN' },
        ],
      ])
      expect(warnings.mock.calls[0]![0]).toContain("answering with onError 'deny'")
      // Back, and found by the background probe: no request is sent meanwhile.
      await startServer(server.port)
      await until(() => events.length > 1, 'the recovery was published')
      expect(store.status).toBe('up')
      expect(events[1]).toEqual({ event: 'recovery', store: 'redisStore' })
      expect(warnings).toHaveBeenLastCalledWith(
        'redisStore: Redis answers again; decisions are back on Redis (see https://github.com/sluice-js/sluice/blob/main/docs/warnings/ERR_SLUICE_REDIS_RECOVERED.md)',
        { type: 'SluiceWarning', code: 'ERR_SLUICE_REDIS_RECOVERED' },
      )
      expect(warnings).toHaveBeenCalledTimes(2)
      expect(warn).not.toHaveBeenCalled()
    } finally {
      diagnostics.unsubscribe('sluice:store', listen)
      warn.mockRestore()
      warnings.mockRestore()
    }
  })

  it('is not an outage when the probe answers: a stall shorter than two timeouts is not reported', async () => {
    const server = await startRedisServer({ args: ['--enable-debug-command', 'yes'] })
    servers.push(server)
    const { store, failures } = harness(server.port, 'deny', 400)
    expect((await answered(store.take('k', [limit], 1))).allowed).toBe(true)
    const admin = quietClient(server.port)
    // Redis stops answering for half a second: the take gives up after 400 ms, and the
    // probe sent then is answered within its own 400 ms.
    const stall = admin.call('DEBUG', 'SLEEP', '0.5')
    await sleep(20)
    expect((await answered(store.take('k', [limit], 1))).allowed).toBe(false)
    await stall
    await until(() => store.status === 'up', 'the probe answered')
    expect(failures).toEqual([])
    expect((await answered(store.take('k', [limit], 1))).allowed).toBe(true)
  })
})

describeRedis('startup', () => {
  it('waits for a client that is still connecting (enableOfflineQueue: false) instead of reporting an outage', async () => {
    const server = await startServer()
    const client = new Redis({ host: '127.0.0.1', port: server.port, enableOfflineQueue: false })
    client.on('error', () => {})
    try {
      expect(client.status).toBe('connecting')
      const failures: RedisStoreError[] = []
      const store = redisStore({
        client,
        prefix: uniquePrefix(),
        onError: 'deny',
        onFailure: (error) => failures.push(error),
      })
      // Sent before the connection is up: ioredis itself would refuse it.
      const taken = await answered(store.take('k', [limit], 1))
      expect(taken.allowed).toBe(true)
      expect(failures).toEqual([])
      expect(store.status).toBe('up')
    } finally {
      client.disconnect()
    }
  })
})

describeRedis("onError 'local': the bound across processes", () => {
  // Two stores with their own local fallback stand for two processes (N = 2).
  function processes(port: number) {
    const prefix = uniquePrefix()
    return [0, 1].map(() =>
      redisStore({
        client: quietClient(port),
        prefix,
        timeout: TIMEOUT,
        probeInterval: 50,
        onError: 'local',
        onFailure: () => {},
        onRecovery: () => {},
      }),
    )
  }

  async function admittedBy(stores: ReturnType<typeof processes>, attempts: number) {
    let admitted = 0
    for (let i = 0; i < attempts; i++) {
      if ((await answered(stores[i % 2]!.take('k', [limit], 1))).allowed) admitted++
    }
    return admitted
  }

  it('admits at most (N + 1) × limit in a window that overlaps an outage Redis survives', async () => {
    const server = await startServer()
    const stores = processes(server.port)
    expect(await admittedBy(stores, 8)).toBe(5)
    server.pause()
    // Each process admits the whole limit on its own.
    expect(await admittedBy(stores, 16)).toBe(10)
    server.resume()
    for (const store of stores) await until(() => store.status === 'up', 'recovered')
    // Redis kept its count: the window's budget is spent there.
    expect(await admittedBy(stores, 8)).toBe(0)
  })

  it('and (N + 2) × limit when Redis comes back empty (restarted without persistence)', async () => {
    const server = await startServer()
    const stores = processes(server.port)
    expect(await admittedBy(stores, 8)).toBe(5)
    await server.stop()
    expect(await admittedBy(stores, 16)).toBe(10)
    await startServer(server.port)
    for (const store of stores) await until(() => store.status === 'up', 'recovered')
    expect(await admittedBy(stores, 8)).toBe(5)
  })
})
