import { describe, expect, it } from 'vitest'
import { holdUntilSent } from './hold-body'

const text = new TextEncoder()
const counter = () => {
  const calls = { count: 0 }
  return { calls, release: () => void calls.count++ }
}

/** A body of the given chunks; records how it was cancelled. */
function source(chunks: string[], cancelled: unknown[] = []) {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(text.encode(chunk))
      controller.close()
    },
    cancel(reason) {
      cancelled.push(reason)
    },
  })
}

describe('holdUntilSent', () => {
  it('releases once the last chunk has been read, not before', async () => {
    const { calls, release } = counter()
    const original = new Response(source(['a', 'b']), {
      status: 201,
      headers: { 'x-kept': 'yes' },
    })
    const held = holdUntilSent(original, release)
    expect([held.status, held.headers.get('x-kept')]).toEqual([201, 'yes'])
    const reader = held.body!.getReader()
    const decode = new TextDecoder()
    const first = await reader.read()
    expect(decode.decode(first.value)).toBe('a')
    const second = await reader.read()
    expect(decode.decode(second.value)).toBe('b')
    // Nothing is read ahead: the consumer has not yet asked past the last chunk.
    expect(calls.count).toBe(0)
    expect((await reader.read()).done).toBe(true)
    expect(calls.count).toBe(1)
  })

  it('releases when the consumer cancels, and passes the reason on', async () => {
    const { calls, release } = counter()
    const cancelled: unknown[] = []
    const held = holdUntilSent(new Response(source(['a', 'b'], cancelled)), release)
    const reader = held.body!.getReader()
    await reader.read()
    await reader.cancel('client went away')
    expect([calls.count, cancelled]).toEqual([1, ['client went away']])
  })

  it('releases when the body fails, and the failure reaches the consumer', async () => {
    const { calls, release } = counter()
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('source failed'))
      },
    })
    const held = holdUntilSent(new Response(failing), release)
    await expect(held.text()).rejects.toThrow('source failed')
    expect(calls.count).toBe(1)
  })

  it('releases at once when there is no body', () => {
    const { calls, release } = counter()
    const empty = new Response(null, { status: 204 })
    expect(holdUntilSent(empty, release)).toBe(empty)
    expect(calls.count).toBe(1)
  })

  it('reads the whole body through unchanged', async () => {
    const { calls, release } = counter()
    const held = holdUntilSent(new Response(source(['first\n', 'second\n', 'last\n'])), release)
    expect(await held.text()).toBe('first\nsecond\nlast\n')
    expect(calls.count).toBe(1)
  })
})
