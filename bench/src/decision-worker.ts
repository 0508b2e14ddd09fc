/**
 * A child process holding one contender: it builds the contender, gives every key one
 * decision (measuring the memory that leaves behind), measures what one decision
 * allocates, then answers `measure` requests with one sample each. Given `profileMs`, it
 * instead profiles the same timed loop and reports the profile with `ready`; given
 * `heapSnapshot`, it adds a heap breakdown.
 *
 * In the `insert` shape every decision is for a key the structure has never seen: keys
 * come from a pool of `keys` fresh ones, and the structure is rebuilt (untimed) when the
 * pool is used up, so samples are batches timed by hand rather than by mitata.
 *
 * argv[2]: JSON `{ id, keys, shape, maxKeys?, profileMs?, heapSnapshot? }`.
 */
import { getHeapStatistics } from 'node:v8'
import { measure } from 'mitata'
import { errorText, type Message, serve } from './child'
import { HOT_KEY, type Shape } from './config'
import { benchRate, contender, decide, type Instance } from './contenders'
import { heapBreakdown, heapTally } from './heap'
import { makeKeys } from './keys'
import { type ProfileSummary, startCpuProfile } from './profile'
import { summarize } from './stats'

interface Job {
  readonly id: string
  readonly keys: number
  readonly shape: Shape
  readonly maxKeys?: number
  /** Also break the retained heap down by object type (slower: two heap snapshots). */
  readonly heapSnapshot?: boolean
  /** Profile the timed loop for this long instead of serving samples. */
  readonly profileMs?: number
}

const gc = globalThis.gc
if (gc === undefined) throw new Error('decision-worker: run with --expose-gc')

/** Heap and off-heap (ArrayBuffer backing stores, e.g. typed arrays) bytes in use. */
function retainedBytes(): number {
  gc!()
  gc!()
  const { heapUsed, external } = process.memoryUsage()
  return heapUsed + external
}

/**
 * The timed function: one decision for the next key in the fixed order. Sync contenders
 * return their answer; async ones a promise, which mitata awaits.
 */
function loopOf(instance: Instance, keys: readonly string[]): () => unknown {
  if (keys.length === 1) {
    const key = keys[0]!
    return () => instance.call(key)
  }
  const n = keys.length
  let i = 0
  return () => {
    const key = keys[i]!
    i = i + 1 === n ? 0 : i + 1
    return instance.call(key)
  }
}

/** Runs `loop` back to back for `ms`, awaiting it when it returns a promise. */
async function spin(loop: () => unknown, ms: number): Promise<void> {
  const end = performance.now() + ms
  while (performance.now() < end) {
    for (let i = 0; i < 10_000; i++) {
      const result = loop()
      if (result instanceof Promise) await result
    }
  }
}

/**
 * Bytes one call of `loop` allocates: the growth of the used heap over a batch of calls
 * short enough that no garbage collection runs in between (a batch during which the heap
 * shrank saw one, and is dropped), median of several batches. Counts every object a
 * decision leaves behind or throws away, whichever space V8 puts it in.
 */
async function allocatedPerCall(loop: () => unknown): Promise<number> {
  const perCall: number[] = []
  let calls = 1000
  for (let attempt = 0; attempt < 15 && perCall.length < 7; attempt++) {
    const before = getHeapStatistics().used_heap_size
    for (let i = 0; i < calls; i++) {
      const result = loop()
      if (result instanceof Promise) await result
    }
    const after = getHeapStatistics().used_heap_size
    if (after < before) continue
    const bytes = (after - before) / calls
    perCall.push(bytes)
    // Keep a batch well inside a young generation of a few hundred kilobytes.
    calls = Math.max(200, Math.min(20_000, Math.floor(200_000 / Math.max(bytes, 1))))
  }
  return summarize(perCall).median
}

/** Fresh keys for the `insert` shape: none of them in `makeKeys`'s address range. */
function freshKeys(count: number): string[] {
  return makeKeys(count).map((key) => `1${key}`)
}

/**
 * The `insert` shape: batches of decisions for never-seen keys, each batch timed on its
 * own; the structure is rebuilt between batches once the pool of fresh keys runs out.
 */
class InsertRunner {
  readonly #build: () => Instance
  readonly #keys: readonly string[]
  #instance: Instance
  #next = 0
  static readonly BATCH = 5_000

  constructor(build: () => Instance, keys: readonly string[]) {
    this.#build = build
    this.#keys = keys
    this.#instance = this.#fresh()
  }

  #fresh(): Instance {
    // The structure being replaced is collected now, untimed, rather than by a major
    // collection in the middle of the next timed batches.
    this.#instance = undefined as unknown as Instance
    gc!()
    const instance = this.#build()
    // A first decision outside any timing: a structure built lazily builds itself here.
    void decide(instance, 'warm-up key')
    this.#next = 0
    return instance
  }

  /** The instance and the next `BATCH` fresh keys (rebuilding when they ran out). */
  batch(): { instance: Instance; from: number } {
    if (this.#next + InsertRunner.BATCH > this.#keys.length) this.#instance = this.#fresh()
    const from = this.#next
    this.#next += InsertRunner.BATCH
    return { instance: this.#instance, from }
  }

  /** One sample: ns per decision, median over batches run for `ms` of wall time. */
  async sample(ms: number): Promise<number> {
    const perBatch: number[] = []
    const end = performance.now() + ms
    do {
      const { instance, from } = this.batch()
      const keys = this.#keys
      const to = from + InsertRunner.BATCH
      const started = performance.now()
      for (let i = from; i < to; i++) {
        const result = instance.call(keys[i]!)
        if (result instanceof Promise) await result
      }
      perBatch.push(((performance.now() - started) * 1e6) / InsertRunner.BATCH)
    } while (performance.now() < end || perBatch.length < 3)
    return summarize(perBatch).median
  }

  /** A loop over fresh keys, for the allocation measure and the profiler. */
  loop(): () => unknown {
    let { instance, from } = this.batch()
    let i = from
    let end = from + InsertRunner.BATCH
    return () => {
      if (i === end) {
        ;({ instance, from } = this.batch())
        i = from
        end = from + InsertRunner.BATCH
      }
      return instance.call(this.#keys[i++]!)
    }
  }

  get instance(): Instance {
    return this.#instance
  }
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as Job
  // Started before any of the code is optimised: V8 records where inlined functions sit
  // only in code compiled while a profiler runs, and without that every inlined limiter
  // method would be charged to the loop that called it.
  const stopProfile = job.profileMs === undefined ? undefined : await startCpuProfile(50)
  const subject = contender(job.id)
  const rate = benchRate(subject, job.keys)
  const build = (keys: number) =>
    subject.create(rate, { keys, ...(job.maxKeys === undefined ? {} : { maxKeys: job.maxKeys }) })

  if (job.shape === 'insert') {
    const runner = new InsertRunner(() => build(job.keys), freshKeys(job.keys))
    const loop = runner.loop()
    if (stopProfile !== undefined) {
      await spin(loop, job.profileMs!)
      process.send?.({ type: 'ready', profile: await stopProfile() }, () => process.exit(0))
      return
    }
    await runner.sample(50)
    const allocated = await allocatedPerCall(loop)
    serve(async (message: Message): Promise<Message> => {
      if (message.type === 'measure') {
        const ns = await runner.sample(Number(message.ms))
        const admitted = await decide(runner.instance, `fresh ${Math.random()}`)
        return { type: 'sample', ns, admitted }
      }
      throw new Error(`decision-worker: unknown request "${message.type}"`)
    })
    process.send?.({ type: 'ready', prefillMs: 0, allocated })
    return
  }

  const keys = job.keys === 1 ? [HOT_KEY] : makeKeys(job.keys)
  const tallyBefore = job.heapSnapshot ? await heapTally() : undefined
  const before = retainedBytes()
  const instance = build(job.keys)
  const started = performance.now()
  let refused = 0
  for (const key of keys) if (!(await decide(instance, key))) refused++
  const prefillMs = performance.now() - started
  if (refused > 0)
    throw new Error(`${job.id}: ${refused} of ${keys.length} first decisions refused`)
  const bytes = retainedBytes() - before
  const breakdown =
    tallyBefore === undefined
      ? undefined
      : heapBreakdown(tallyBefore, await heapTally(), keys.length)

  const loop = loopOf(instance, keys)
  if (stopProfile !== undefined) {
    await spin(loop, job.profileMs!)
    const profile: ProfileSummary = await stopProfile()
    process.send?.({ type: 'ready', profile }, () => process.exit(0))
    return
  }
  // Unrecorded: lets the JIT settle before the first sample the orchestrator keeps.
  await measure(loop, { min_cpu_time: 50e6, gc: false })
  const allocated = await allocatedPerCall(loop)

  serve(async (message: Message): Promise<Message> => {
    if (message.type === 'measure') {
      const stats = await measure(loop, { min_cpu_time: Number(message.ms) * 1e6, gc: false })
      // Every timed decision must have been an admission; check the last key still is.
      const admitted = await decide(instance, keys[0]!)
      return { type: 'sample', ns: stats.p50, admitted }
    }
    throw new Error(`decision-worker: unknown request "${message.type}"`)
  })
  process.send?.({
    type: 'ready',
    bytesPerKey: bytes / keys.length,
    prefillMs,
    allocated,
    ...(breakdown === undefined ? {} : { breakdown }),
  })
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', message: errorText(error) })
  process.exitCode = 1
  process.disconnect?.()
})
