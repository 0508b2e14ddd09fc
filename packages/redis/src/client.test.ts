import { describe, expect, it } from 'vitest'
import { toSendCommand } from './client'

describe('toSendCommand', () => {
  it('uses a sendCommand function as it is', async () => {
    const seen: [string[], string | undefined][] = []
    const send = toSendCommand(async (args, key) => {
      seen.push([args, key])
      return 'OK'
    })
    expect(await send(['DEL', 'k'], 'k')).toBe('OK')
    expect(seen).toEqual([[['DEL', 'k'], 'k']])
  })

  it("calls an ioredis-shaped client's call(command, ...args), even if it has sendCommand", async () => {
    const calls: string[][] = []
    const send = toSendCommand({
      call: async (command: string, ...args: string[]) => {
        calls.push([command, ...args])
        return 1
      },
      sendCommand: () => {
        throw new Error('not this one')
      },
    })
    expect(await send(['ZREM', 'k', 'm'], 'k')).toBe(1)
    expect(calls).toEqual([['ZREM', 'k', 'm']])
  })

  it("calls a node-redis-shaped client's sendCommand(args)", async () => {
    const calls: string[][] = []
    const send = toSendCommand({
      sendCommand: async (args: string[]) => {
        calls.push(args)
        return 'PONG'
      },
    })
    expect(await send(['PING'], undefined)).toBe('PONG')
    expect(calls).toEqual([['PING']])
  })

  it.each([
    [undefined, 'undefined'],
    [null, 'null'],
    ['redis://localhost', '"redis://localhost"'],
    [{ get: () => 1 }, 'an object without call() or sendCommand()'],
  ])('refuses %j', (client, shown) => {
    expect(() => toSendCommand(client as never)).toThrow(
      new TypeError(
        `redisStore: "client" must be an ioredis client, a node-redis client or a sendCommand(args) function, got ${shown}`,
      ),
    )
  })
})
