import { type Clock, systemClock } from '@sluice/core'
import {
  type KeyedLimiter,
  type KeyedResult,
  keyedLimiter,
  memoryStore,
  type Store,
} from '@sluice/keyed'

/** A job: a prompt to summarise for a tenant. */
export interface Job {
  id: string
  tenant: string
  prompt: string
  /** Tokens of the prompt, as the model counts them. */
  promptTokens: number
  /** The most output the job asks the model for. */
  maxOutputTokens: number
}

/** What the model reports once a job's answer has ended. */
export interface Usage {
  totalTokens: number
}

/** What became of a job, in the order it happened. */
export type JobEvent =
  | { job: string; outcome: 'done'; tokens: number }
  /** Refused by `limit` for now: back in the queue, due in `retryAfterMs`. */
  | { job: string; outcome: 'delayed'; limit: string; retryAfterMs: number }
  /** Its estimate is more than the tenant's budget can ever hold: dropped. */
  | { job: string; outcome: 'too-big'; limit: string }
  | { job: string; outcome: 'failed'; error: string }

/** Options of {@link createWorker}: `run` is required, the limits have defaults. */
export interface WorkerOptions {
  /** The work: calls the model and reports what it used. */
  run: (job: Job) => Promise<Usage>
  /** Where the tenants' budgets live. Default: a `memoryStore()`; a `redisStore()` for several workers. */
  store?: Store
  /** Decides when a delayed job is due. Default `systemClock`. */
  clock?: Clock
  /** Jobs a tenant may start per minute. Default 5. */
  jobsPerMinute?: number
  /** Tokens a tenant may use per minute (a token bucket). Default 10,000. */
  tokensPerMinute?: number
  /** Tokens a tenant may use per day (a fixed window). Default 100,000. */
  tokensPerDay?: number
}

/** A worker made by {@link createWorker}. */
export interface Worker {
  /** Queues `job`. */
  add(job: Job): void
  /**
   * Runs, one after another, every queued job that is due: a job its tenant's limits
   * refuse goes back in the queue until they allow it, without holding up other tenants.
   * Resolves with the milliseconds until the next queued job is due, or `undefined` once
   * the queue is empty.
   */
  runDue(): Promise<number | undefined>
  /** Every job's fate so far. */
  readonly events: readonly JobEvent[]
  readonly jobs: KeyedLimiter
  readonly tokens: KeyedLimiter
}

/**
 * A queue worker that limits each tenant twice, with `keyedLimiter` from `@sluice/keyed`:
 * jobs started per minute (`consume`), and tokens, which are known only once the model's
 * answer has ended. Before a job runs, its estimate (prompt plus the most output it asks
 * for) is reserved from the tenant's tokens per minute and per day in one call; once the
 * model reports its usage, the reservation is settled with it. An answer shorter than the
 * estimate gives the rest back; a longer one is charged in full, as debt that the tenant's
 * next jobs wait out.
 *
 * @example
 * ```ts
 * const worker = createWorker({ run: (job) => summarise(job) })
 * worker.add({ id: '1', tenant: 'acme', prompt, promptTokens: 900, maxOutputTokens: 500 })
 * for (let wait = await worker.runDue(); wait !== undefined; wait = await worker.runDue()) {
 *   await systemClock.sleep(wait)
 * }
 * ```
 */
export function createWorker(options: WorkerOptions): Worker {
  const clock = options.clock ?? systemClock
  const store = options.store ?? memoryStore({ clock })
  const jobs = keyedLimiter({
    name: 'jobs',
    limit: options.jobsPerMinute ?? 5,
    window: '1m',
    store,
  })
  const tokens = keyedLimiter({
    store,
    policies: [
      {
        name: 'tokens-per-minute',
        algorithm: 'token-bucket',
        limit: options.tokensPerMinute ?? 10_000,
        window: '1m',
      },
      {
        name: 'tokens-per-day',
        algorithm: 'fixed-window',
        limit: options.tokensPerDay ?? 100_000,
        window: '1d',
      },
    ],
  })

  const queue: { job: Job; due: number }[] = []
  const events: JobEvent[] = []

  function putBack(job: Job, refused: KeyedResult): void {
    if (refused.retryAfterMs === Number.POSITIVE_INFINITY) {
      events.push({ job: job.id, outcome: 'too-big', limit: refused.policy })
      return
    }
    queue.push({ job, due: clock.now() + refused.retryAfterMs })
    events.push({
      job: job.id,
      outcome: 'delayed',
      limit: refused.policy,
      retryAfterMs: refused.retryAfterMs,
    })
  }

  async function runJob(job: Job): Promise<void> {
    const started = await jobs.consume(job.tenant)
    if (!started.allowed) return putBack(job, started)
    const reservation = await tokens.reserve(job.tenant, job.promptTokens + job.maxOutputTokens)
    if (!reservation.allowed) {
      // Not started after all: the job's permit goes back.
      await jobs.refund(started.receipt!)
      return putBack(job, reservation)
    }
    let usage: Usage
    try {
      usage = await options.run(job)
    } catch (error) {
      // The model answered nothing, so nothing was used.
      await reservation.cancel()
      events.push({ job: job.id, outcome: 'failed', error: String(error) })
      return
    }
    await reservation.settle(usage.totalTokens)
    events.push({ job: job.id, outcome: 'done', tokens: usage.totalTokens })
  }

  return {
    add: (job) => {
      queue.push({ job, due: clock.now() })
    },
    runDue: async () => {
      const now = clock.now()
      const due = queue.filter((entry) => entry.due <= now)
      for (const entry of due) queue.splice(queue.indexOf(entry), 1)
      for (const { job } of due) await runJob(job)
      if (queue.length === 0) return undefined
      return Math.max(0, Math.min(...queue.map((entry) => entry.due)) - clock.now())
    },
    events,
    jobs,
    tokens,
  }
}
