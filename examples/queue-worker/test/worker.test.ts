import { systemClock } from '@sluice/core'
import { storeKinds } from '@sluice/example-keyed-stores'
import { describe, expect, it } from 'vitest'
import { createWorker, type Job, type Usage } from '../src/worker'

/** A job of the test: the fake model's answer to it will be `outputTokens` long. */
interface TestJob extends Job {
  outputTokens: number
}

const job = (
  id: string,
  tokens: { prompt: number; maxOutput: number; output: number },
): TestJob => ({
  id,
  tenant: id.split('-')[0]!,
  prompt: `summarise ${id}`,
  promptTokens: tokens.prompt,
  maxOutputTokens: tokens.maxOutput,
  outputTokens: tokens.output,
})

/** The model: reports the prompt and the output the job was made with; `*-fail` jobs throw. */
async function model(queued: Job): Promise<Usage> {
  if (queued.id.endsWith('-fail')) throw new Error('the model is overloaded')
  return { totalTokens: queued.promptTokens + (queued as TestJob).outputTokens }
}

const small = { prompt: 100, maxOutput: 100, output: 50 }

describe.each(storeKinds())('the worker on the $name store', (kind) => {
  function start() {
    const opened = kind.open()
    // On Redis the store decides by the server's time; due times are the process's.
    const worker = createWorker({
      run: model,
      store: opened.store,
      clock: opened.clock ?? systemClock,
    })
    return { ...opened, worker }
  }

  it("delays a tenant's sixth job in a minute, and no other tenant's", async () => {
    const { worker, timed } = start()
    for (let i = 1; i <= 6; i++) worker.add(job(`acme-${i}`, small))
    worker.add(job('globex-1', small))

    expect(await worker.runDue()).toEqual(timed(66_000))
    expect(worker.events).toEqual([
      ...[1, 2, 3, 4, 5].map((i) => ({ job: `acme-${i}`, outcome: 'done', tokens: 150 })),
      // 5 jobs a minute, counted in tenths of it: the first tenth leaves after 66 s.
      { job: 'acme-6', outcome: 'delayed', limit: 'jobs', retryAfterMs: timed(66_000) },
      { job: 'globex-1', outcome: 'done', tokens: 150 },
    ])
  })

  it('reserves the estimate and settles the usage; an answer longer than its estimate is debt the next job waits out', async () => {
    const { worker, timed } = start()
    worker.add(job('acme-1', { prompt: 1000, maxOutput: 2000, output: 200 }))
    // A streamed answer that ran far past its estimate.
    worker.add(job('acme-2', { prompt: 1000, maxOutput: 2000, output: 10_000 }))
    worker.add(job('acme-3', { prompt: 1000, maxOutput: 2000, output: 200 }))

    expect(await worker.runDue()).toEqual(timed(31_200))
    expect(worker.events).toEqual([
      { job: 'acme-1', outcome: 'done', tokens: 1200 },
      { job: 'acme-2', outcome: 'done', tokens: 11_000 },
      // 12,200 used of a 10,000 bucket: 3,000 more fit once 5,200 have refilled, at 10,000
      // a minute (6 ms each).
      {
        job: 'acme-3',
        outcome: 'delayed',
        limit: 'tokens-per-minute',
        retryAfterMs: timed(31_200),
      },
    ])
    const [perMinute, perDay] = (await worker.tokens.get('acme')).policies
    expect([perMinute?.remaining, perDay?.remaining]).toEqual([0, 100_000 - 12_200])
    // acme-3 did not start: its job permit went back.
    expect((await worker.jobs.get('acme')).remaining).toBe(3)
  })

  it('drops a job whose estimate can never fit, and gives back what a failed job reserved', async () => {
    const { worker, timed } = start()
    worker.add(job('acme-huge', { prompt: 8000, maxOutput: 4000, output: 0 }))
    worker.add(job('acme-fail', { prompt: 1000, maxOutput: 2000, output: 0 }))

    expect(await worker.runDue()).toBeUndefined()
    expect(worker.events).toEqual([
      { job: 'acme-huge', outcome: 'too-big', limit: 'tokens-per-minute' },
      { job: 'acme-fail', outcome: 'failed', error: 'Error: the model is overloaded' },
    ])
    expect((await worker.tokens.get('acme')).policies.map((p) => p.remaining)).toEqual([
      timed(10_000),
      100_000,
    ])
    // The failed job did start; the one too big did not.
    expect((await worker.jobs.get('acme')).remaining).toBe(4)
  })

  it.runIf(kind.movesTime)('runs the delayed jobs when they are due', async () => {
    const { worker, clock } = start()
    worker.add(job('acme-1', { prompt: 1000, maxOutput: 2000, output: 200 }))
    worker.add(job('acme-2', { prompt: 1000, maxOutput: 2000, output: 10_000 }))
    worker.add(job('acme-3', { prompt: 1000, maxOutput: 2000, output: 200 }))
    expect(await worker.runDue()).toBe(31_200)
    clock!.advance(31_199)
    expect(await worker.runDue()).toBe(1)
    expect(worker.events).toHaveLength(3)
    clock!.advance(1)
    expect(await worker.runDue()).toBeUndefined()
    expect(worker.events.at(-1)).toEqual({ job: 'acme-3', outcome: 'done', tokens: 1200 })
  })
})
