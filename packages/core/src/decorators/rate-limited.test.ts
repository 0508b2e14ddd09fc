import { describe, expect, it } from 'vitest'
import { track } from '../../test/helpers'
import { ManualClock } from '../clock'
import { RateLimitError } from '../errors'
import { tokenBucket } from '../token-bucket/token-bucket'
import { rateLimited } from './rate-limited'

describe('rateLimited', () => {
  it('as a method decorator: passes calls within the limit, throws synchronously over it', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 10, capacity: 2, clock, name: 'search' })

    class Search {
      readonly prefix = 'q:'
      @rateLimited(bucket)
      find(term: string): string {
        return this.prefix + term
      }
    }

    const search = new Search()
    expect(search.find('a')).toBe('q:a')
    expect(search.find('b')).toBe('q:b')
    let thrown: unknown
    try {
      search.find('c')
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(RateLimitError)
    expect(thrown).toMatchObject({
      code: 'ERR_SLUICE_LIMITED',
      limiter: 'search',
      retryAfterMs: 100,
    })
    clock.advance(100)
    expect(search.find('c')).toBe('q:c')
    expect(Search.prototype.find.name).toBe('find')
  })

  it('charges cost per call, from a number or from the arguments', () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 10, capacity: 10, clock })

    class Batch {
      @rateLimited(bucket, { cost: 3 })
      fixed(): number {
        return bucket.availablePermits()
      }
      @rateLimited(bucket, { cost: (items: string[]) => items.length })
      send(items: string[]): number {
        return items.length
      }
    }

    const batch = new Batch()
    expect(batch.fixed()).toBe(7)
    expect(batch.send(['a', 'b', 'c', 'd', 'e'])).toBe(5)
    expect(() => batch.send(['a', 'b', 'c'])).toThrow(RateLimitError)
    expect(bucket.availablePermits()).toBe(2)
    // The cost reaches the limiter, which validates it.
    expect(() => batch.send([])).toThrow(
      new RangeError('tokenBucket.tryAcquire: "permits" must be a positive integer, got 0'),
    )
  })

  it('with wait: waits up to it through the limiter, then rejects with ERR_SLUICE_TIMEOUT', async () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 1, window: '1s', capacity: 1, clock })
    const calls: number[] = []

    class Partner {
      @rateLimited(bucket, { wait: '1.5s' })
      async call(id: number): Promise<number> {
        calls.push(clock.now())
        return id * 2
      }
    }

    const partner = new Partner()
    const first = track(partner.call(1))
    const second = track(partner.call(2))
    const third = track(partner.call(3))
    await clock.advanceAsync(0)
    expect([first.status, first.value]).toEqual(['resolved', 2])
    expect(second.status).toBe('pending')
    // The third would be served at 2 s: beyond its 1.5 s wait, so it fails at once.
    expect(third.status).toBe('rejected')
    expect(third.reason).toMatchObject({ code: 'ERR_SLUICE_TIMEOUT', retryAfterMs: 2000 })
    await clock.advanceAsync(1000)
    expect([second.status, second.value]).toEqual(['resolved', 4])
    expect(calls).toEqual([0, 1000])
  })

  it('wraps a plain function, keeping its name and this', async () => {
    const clock = new ManualClock()
    const bucket = tokenBucket({ limit: 1, capacity: 1, clock })
    function double(this: { k: number }, x: number): number {
      return x * 2 * this.k
    }
    const limited = rateLimited(bucket)(double)
    expect(limited.name).toBe('double')
    expect(limited.call({ k: 3 }, 2)).toBe(12)
    expect(() => limited.call({ k: 3 }, 2)).toThrow(RateLimitError)

    const waiting = rateLimited(bucket, { wait: Number.POSITIVE_INFINITY })(
      async (x: number) => x + 1,
    )
    const result = track(waiting(1))
    await clock.advanceAsync(999)
    expect(result.status).toBe('pending')
    await clock.advanceAsync(1)
    expect(result.value).toBe(2)
  })

  it('refuses anything but a function or method, and bad options', () => {
    const bucket = tokenBucket({ limit: 1 })
    expect(() =>
      rateLimited(bucket)((() => 1) as never, { kind: 'getter', name: 'x' } as never),
    ).toThrow(new TypeError('rateLimited: can only decorate methods, not a getter'))
    expect(() => rateLimited(bucket)(42 as never)).toThrow(
      new TypeError('rateLimited: can only wrap a function, got 42'),
    )
    expect(() => rateLimited({} as never)).toThrow(
      new TypeError('rateLimited: "limiter" must be a rate limiter, got an object'),
    )
    expect(() => rateLimited(bucket, { cost: 0 })).toThrow(
      new RangeError('rateLimited: "cost" must be a positive integer, got 0'),
    )
    expect(() => rateLimited(bucket, { wait: 'later' as never })).toThrow(
      /^rateLimited: "wait" must be a duration .*, got "later"$/,
    )
  })
})
