import { warningsOf } from '@sluice/keyed/testing'
import { describe, expect, it } from 'vitest'
import { redisStore } from './redis-store'

// Construction needs no server: nothing is sent until the first call.
const client = async () => 'OK'

describe('redisStore: options that ask it to connect', () => {
  it.each(['url', 'host', 'port', 'db'])('refuses "%s" and says to pass a client', (name) => {
    expect(() => redisStore({ [name]: 'redis://cache:6379' } as never)).toThrow(
      new TypeError(
        `redisStore: unknown option "${name}" (the store takes a client, not an address: redisStore({ client: new Redis(url) }) with ioredis, or a connected node-redis client)`,
      ),
    )
  })

  it.each([
    ['redis', 'use "client"'],
    ['storeClient', 'use "client"'],
    ['sendCommand', 'use "client": it takes a sendCommand(args, key) function too'],
  ])('refuses "%s", the client option of other libraries', (name, hint) => {
    expect(() => redisStore({ client, [name]: client } as never)).toThrow(
      new TypeError(`redisStore: unknown option "${name}" (${hint})`),
    )
  })
})

describe('redisStore: durations in bare milliseconds', () => {
  it('warns once for each of timeout, leaseTtl and probeInterval', () => {
    expect(
      warningsOf(() => {
        redisStore({ client, timeout: 2, leaseTtl: 30, probeInterval: 5 })
        redisStore({ client, timeout: 2, leaseTtl: 30, probeInterval: 5 })
        redisStore({ client, timeout: '250ms', leaseTtl: '30s', probeInterval: 5000 })
      }),
    ).toEqual(
      [
        ['timeout', 2],
        ['leaseTtl', 30],
        ['probeInterval', 5],
      ].map(([option, value]) => [
        'ERR_SLUICE_DURATION_IN_MS',
        expect.stringContaining(
          `redisStore: "${option}" is ${value}, which is ${value} milliseconds`,
        ),
      ]),
    )
  })
})
