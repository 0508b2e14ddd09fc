import { keyedLimiter, memoryStore } from '@sluice/keyed'
import { describe, expect, it } from 'vitest'
import { answeringWithPromises, storeKinds } from '../src/index'

describe.each(storeKinds())('the $name store', (kind) => {
  it('is new and empty for each test: one budget per key', async () => {
    const { store } = kind.open()
    const limiter = keyedLimiter({ limit: 2, window: '1h', store })
    const admitted = async (key: string) => (await limiter.consume(key)).allowed
    expect([
      await admitted('a'),
      await admitted('a'),
      await admitted('a'),
      await admitted('b'),
    ]).toEqual([true, true, false, true])
  })

  it('1,000 concurrent consume(key) admit exactly the limit (issue 26)', async () => {
    const { store } = kind.open()
    const limiter = keyedLimiter({ limit: 100, window: '1h', store })
    const answers = await Promise.all(Array.from({ length: 1_000 }, () => limiter.consume('k')))
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(100)
    expect((await limiter.get('k')).remaining).toBe(0)
  })
})

describe('answeringWithPromises', () => {
  it('answers every call with a promise of what the store answers', async () => {
    const limiter = keyedLimiter({
      limit: 1,
      window: '1h',
      store: answeringWithPromises(memoryStore()),
    })
    const taken = limiter.consume('a')
    expect(taken).toBeInstanceOf(Promise)
    expect(await taken).toMatchObject({ allowed: true, remaining: 0 })
    expect(limiter.get('a')).toBeInstanceOf(Promise)
    expect(await limiter.get('a')).toMatchObject({ allowed: false, remaining: 0 })
  })
})
