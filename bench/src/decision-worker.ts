/**
 * A child process holding one contender: it builds the contender, gives every key one
 * decision (measuring the memory that leaves behind), then answers `measure` requests
 * with one sample each. Given `profileMs`, it instead profiles the same timed loop and
 * reports the profile with `ready`; given `heapSnapshot`, it adds a heap breakdown.
 *
 * argv[2]: JSON `{ id, keys, profileMs?, heapSnapshot? }`.
 */
import { measure } from 'mitata'
import { errorText, type Message, serve } from './child'
import { HOT_KEY } from './config'
import { benchRate, contender, decide, type Instance } from './contenders'
import { heapBreakdown, heapTally } from './heap'
import { makeKeys } from './keys'
import { type ProfileSummary, startCpuProfile } from './profile'

interface Job {
  readonly id: string
  readonly keys: number
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

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as Job
  // Started before any of the code is optimised: V8 records where inlined functions sit
  // only in code compiled while a profiler runs, and without that every inlined limiter
  // method would be charged to the loop that called it.
  const stopProfile = job.profileMs === undefined ? undefined : await startCpuProfile(50)
  const subject = contender(job.id)
  const keys = job.keys === 1 ? [HOT_KEY] : makeKeys(job.keys)
  const tallyBefore = job.heapSnapshot ? await heapTally() : undefined
  const before = retainedBytes()
  const instance = subject.create(benchRate(subject, job.keys), { keys: job.keys })
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
    ...(breakdown === undefined ? {} : { breakdown }),
  })
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', message: errorText(error) })
  process.exitCode = 1
  process.disconnect?.()
})
