/**
 * Returns `res` with a body that calls `release` exactly once when the body has been read
 * to its end, cancelled (the client went away: the server cancels the stream) or failed;
 * at once when there is no body. `release` may be a function or an object with
 * `done(gone)` (a pipeline outcome), which learns whether the client went away. A Hono middleware's `await next()` returns as soon as
 * the handler has produced its `Response`, long before a streamed body is sent, so this
 * is how a bulkhead holds its slot for the whole response where there is no Node response
 * to watch (Bun, Deno, Workers, `app.request()`).
 *
 * The wrapper pulls one chunk per read and never reads ahead, so the slot is held until
 * the consumer has taken the last chunk.
 *
 * @example
 * ```ts
 * await next()
 * c.res = holdUntilSent(c.res, () => slot.release())
 * ```
 */
export function holdUntilSent(
  res: Response,
  release: (() => void) | { done(gone: boolean): void },
): Response {
  let released = false
  const end = (gone: boolean) => {
    if (released) return
    released = true
    if (typeof release === 'function') release()
    else release.done(gone)
  }
  const source = res.body
  if (source === null) {
    end(false)
    return res
  }
  const reader = source.getReader()
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch (error) {
          end(false)
          controller.error(error)
          return
        }
        if (chunk.done) {
          end(false)
          controller.close()
        } else {
          controller.enqueue(chunk.value)
        }
      },
      cancel(reason) {
        end(true)
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
  return new Response(body, res)
}
