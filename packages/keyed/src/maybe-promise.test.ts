import { describe, expect, it } from 'vitest'
import { isPromiseLike, whenSettled } from './maybe-promise'

/** One turn of the event loop: every promise callback queued so far has run. No time passes. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('isPromiseLike', () => {
  it.each<[string, unknown, boolean]>([
    ['a promise', Promise.resolve(1), true],
    // biome-ignore lint/suspicious/noThenProperty: the point is a non-native thenable.
    ['a thenable', { then: () => {} }, true],
    ['a value', 1, false],
    ['undefined', undefined, false],
    ['null', null, false],
    // biome-ignore lint/suspicious/noThenProperty: a then that is no function is no thenable.
    ['an object whose then is no function', { then: 1 }, false],
  ])('%s: %s', (_, value, expected) => {
    expect(isPromiseLike(value)).toBe(expected)
  })
})

describe('whenSettled', () => {
  const record = () => {
    const seen: unknown[] = []
    return {
      seen,
      apply: (value: unknown) => void seen.push(['apply', value]),
      fail: (error: unknown) => void seen.push(['fail', error]),
    }
  }

  it('applies a plain value at once, in the same turn', () => {
    const { seen, apply, fail } = record()
    whenSettled(7, apply, fail)
    expect(seen).toEqual([['apply', 7]])
  })

  it('applies a promised value once it resolves', async () => {
    const { seen, apply, fail } = record()
    whenSettled(Promise.resolve(7), apply, fail)
    expect(seen).toEqual([])
    await turn()
    expect(seen).toEqual([['apply', 7]])
  })

  it('sends a synchronous throw from apply to fail', () => {
    const { seen, fail } = record()
    const boom = new Error('onLimited broke')
    whenSettled(
      7,
      () => {
        throw boom
      },
      fail,
    )
    expect(seen).toEqual([['fail', boom]])
  })

  it('sends a rejection to fail, without calling apply', async () => {
    const { seen, apply, fail } = record()
    const boom = new Error('store down')
    whenSettled(Promise.reject(boom), apply, fail)
    await turn()
    expect(seen).toEqual([['fail', boom]])
  })

  it('sends a throw from apply after an async value to fail, not to an unhandled rejection', async () => {
    const { seen, fail } = record()
    const boom = new Error('onLimited broke')
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      whenSettled(
        Promise.resolve(7),
        () => {
          throw boom
        },
        fail,
      )
      await turn()
      await turn()
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(seen).toEqual([['fail', boom]])
    expect(unhandled).toEqual([])
  })

  it('accepts any thenable', async () => {
    const { seen, apply, fail } = record()
    // biome-ignore lint/suspicious/noThenProperty: the point is a non-native thenable.
    const thenable = { then: (resolve: (v: number) => void) => resolve(3) }
    whenSettled(thenable as unknown as PromiseLike<number>, apply, fail)
    await turn()
    expect(seen).toEqual([['apply', 3]])
  })
})
