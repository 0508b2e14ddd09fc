import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { storeKinds } from '@sluice/example-keyed-stores'
import type { RequestHandler } from 'express'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { loginApp } from '../src/app'
import { loginRoute } from '../src/login'
import { rateLimiterFlexibleLoginRoute } from './rate-limiter-flexible-login'

afterEach(() => {
  vi.useRealTimers()
})

const ann = 'ann@example.com'
const right = 'correct horse'
const wrong = 'hunter2'
const home = '203.0.113.7'

interface Attempt {
  email: string
  password: string
  ip: string
}

/** What a client sees of one answer: status, Retry-After, body. */
type Answer = [status: number, retryAfter: string | null, body: string]

const badPassword: Answer = [400, null, 'email or password is wrong']
const authorized: Answer = [200, null, 'authorized']
const blocked = (seconds: number): Answer => [429, String(seconds), 'Too Many Requests']

/** Serves `route` on a real socket; `send` makes the attempts one after another. */
async function serve(route: RequestHandler) {
  const server = loginApp(route).listen(0, '127.0.0.1')
  onTestFinished(() => {
    server.closeAllConnections()
    server.close()
  })
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return async (...attempts: Attempt[]): Promise<Answer[]> => {
    const answers: Answer[] = []
    for (const { email, password, ip } of attempts) {
      const response = await fetch(`http://127.0.0.1:${port}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
        body: JSON.stringify({ email, password }),
      })
      answers.push([response.status, response.headers.get('retry-after'), await response.text()])
    }
    return answers
  }
}

const times = (n: number, attempt: Attempt): Attempt[] => Array.from({ length: n }, () => attempt)
const repeat = <T>(n: number, value: T): T[] => Array.from({ length: n }, () => value)

describe.each(storeKinds())(
  'the login limiter on the $name store, beside rate-limiter-flexible',
  (kind) => {
    /**
     * The port and the peer, each on its own server, answering the same attempts: the port's
     * answers, once the peer's have been found the same in status and body. (Retry-After
     * differs by design: the peer rounds its wait, sluice rounds up, and the peer's clock
     * runs while the test does.)
     */
    async function both() {
      const port = await serve(loginRoute({ store: kind.open().store }))
      const peer = await serve(rateLimiterFlexibleLoginRoute())
      return async (...attempts: Attempt[]) => {
        const answers = await port(...attempts)
        const seen = (all: Answer[]) => all.map(([status, , body]) => [status, body])
        expect(seen(answers), 'the port and the peer answer alike').toEqual(
          seen(await peer(...attempts)),
        )
        return answers
      }
    }

    it('answers 10 wrong passwords with 400; the 11th blocks username+IP for an hour, even the right password', async () => {
      const send = await both()
      expect(
        await send(...times(11, { email: ann, password: wrong, ip: home }), {
          email: ann,
          password: right,
          ip: home,
        }),
      ).toEqual([...repeat(10, badPassword), blocked(3600), blocked(3600)])
      // Username+IP: the same account from another address is not blocked.
      expect(await send({ email: ann, password: right, ip: '198.51.100.1' })).toEqual([authorized])
    })

    it('still checks the password after 10 failures', async () => {
      const send = await both()
      expect(
        await send(...times(10, { email: ann, password: wrong, ip: home }), {
          email: ann,
          password: right,
          ip: home,
        }),
      ).toEqual([...repeat(10, badPassword), authorized])
    })

    it('forgets the failures of username+IP on a successful login', async () => {
      const send = await both()
      expect(
        await send(
          ...times(9, { email: ann, password: wrong, ip: home }),
          { email: ann, password: right, ip: home },
          ...times(11, { email: ann, password: wrong, ip: home }),
        ),
      ).toEqual([...repeat(9, badPassword), authorized, ...repeat(10, badPassword), blocked(3600)])
    })

    it('blocks an IP for a day after 100 wrong passwords, whichever accounts they tried', async () => {
      const send = await both()
      const guesses = Array.from({ length: 101 }, (_, i) => ({
        email: i % 20 === 0 ? ann : `user${i}@example.com`,
        password: wrong,
        ip: home,
      }))
      // Ann's 6 failures stay under her limit; the IP's 101st failure blocks the IP.
      expect(await send(...guesses)).toEqual([...repeat(100, badPassword), blocked(86_400)])
      expect(
        await send(
          { email: ann, password: right, ip: home },
          { email: ann, password: right, ip: '198.51.100.1' },
        ),
      ).toEqual([blocked(86_400), authorized])
    })

    it.runIf(kind.movesTime)(
      'lets username+IP try again an hour after the block, counting afresh',
      async () => {
        vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
        const opened = kind.open()
        const port = await serve(loginRoute({ store: opened.store }))
        const peer = await serve(rateLimiterFlexibleLoginRoute())
        const attempts = times(11, { email: ann, password: wrong, ip: home })
        const before = [...repeat(10, badPassword), blocked(3600)]
        expect([await port(...attempts), await peer(...attempts)]).toEqual([before, before])

        opened.clock!.advance(3_599_000)
        vi.advanceTimersByTime(3_599_000)
        const again = { email: ann, password: wrong, ip: home }
        expect([await port(again), await peer(again)]).toEqual([[blocked(1)], [blocked(1)]])

        opened.clock!.advance(1000)
        vi.advanceTimersByTime(1000)
        // The block is over and the failures before it are forgotten: 10 more before the next.
        const after = [...repeat(10, badPassword), blocked(3600)]
        expect([await port(...attempts), await peer(...attempts)]).toEqual([after, after])
      },
    )
  },
)
