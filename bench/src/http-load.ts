import autocannon from 'autocannon'
import { percentile } from './stats'

/** One load run's outcome. */
export interface LoadResult {
  /** 2xx responses per second over the run. */
  readonly rps: number
  /** 99th percentile latency of 2xx responses, ms, from every response's own timing. */
  readonly p99Ms: number
  readonly responses: number
  /** Responses other than 2xx, plus connection errors and timeouts: any is a failed run. */
  readonly failures: number
}

/**
 * Drives `http://127.0.0.1:port/` with autocannon for `seconds` over `connections`
 * keep-alive connections, one request in flight on each. Latency comes from each
 * response's own timing (autocannon's histogram keeps whole milliseconds only, too coarse
 * for sub-millisecond responses).
 *
 * @example
 * ```ts
 * const { rps, p99Ms } = await load(port, 3, 10)
 * ```
 */
export async function load(
  port: number,
  seconds: number,
  connections: number,
): Promise<LoadResult> {
  let latencies = new Float64Array(1 << 16)
  let count = 0
  let settle: (error: Error | null, result: autocannon.Result) => void = () => {}
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    settle = (error, result) => (error ? reject(error) : resolve(result))
  })
  const instance = autocannon(
    { url: `http://127.0.0.1:${port}/`, connections, duration: seconds, pipelining: 1 },
    (error, result) => settle(error, result),
  )
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode < 200 || statusCode >= 300) return
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2)
      grown.set(latencies)
      latencies = grown
    }
    latencies[count++] = responseTime
  })
  const result = await done
  return {
    rps: result['2xx'] / result.duration,
    p99Ms: percentile(latencies.subarray(0, count), 99),
    responses: result['2xx'],
    failures: result.non2xx + result.errors + result.timeouts,
  }
}

/**
 * One request, to check what the app answers: status and the rate-limit header names.
 *
 * @example
 * ```ts
 * await probe(port) // { status: 200, rateLimitHeaders: ['ratelimit', 'ratelimit-policy'] }
 * ```
 */
export async function probe(port: number): Promise<{ status: number; rateLimitHeaders: string[] }> {
  const response = await fetch(`http://127.0.0.1:${port}/`)
  await response.text()
  const rateLimitHeaders = [...response.headers.keys()].filter((name) =>
    /ratelimit|retry-after/i.test(name),
  )
  return { status: response.status, rateLimitHeaders }
}
