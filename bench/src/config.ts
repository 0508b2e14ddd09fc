/**
 * The knobs of one `pnpm bench` run, sized to finish in about a quarter of an hour on a
 * 2-core machine. `BENCH_QUICK=1` shrinks every phase (fewer rounds, shorter samples,
 * 100,000 instead of 1,000,000 keys) for a smoke run of the harness; its numbers are not
 * results. For targeted runs while working on one path:
 *
 * - `BENCH_SECTIONS=decision,http` runs only those sections (of `exactness`, `adaptive`,
 *   `priority`, `decision`, `http`, `processes`: the priority check on real sockets, leases, the cluster store and NestJS, each in processes of its own); the targets of the others show as not measured;
 * - `BENCH_SCENARIOS=hot,insert` runs only those decision-cost scenarios;
 * - `BENCH_CONTENDERS=store|floor` keeps only the contenders whose id matches the regular
 *   expression (the floor is always kept: every ratio is taken against it);
 * - `BENCH_FRAMEWORKS=hono,koa` and `BENCH_VARIANTS=bare,sluice` narrow the HTTP section.
 */
export const QUICK = process.env.BENCH_QUICK === '1'

function list(name: string): readonly string[] | undefined {
  const value = process.env[name]
  if (value === undefined || value.trim() === '') return undefined
  return value.split(',').map((s) => s.trim())
}

/** The sections of a run. */
export const SECTIONS = [
  'exactness',
  'adaptive',
  'priority',
  'decision',
  'http',
  'processes',
] as const
export type Section = (typeof SECTIONS)[number]

/** Whether `section` runs (all do unless `BENCH_SECTIONS` says otherwise). */
export function runs(section: Section): boolean {
  const only = list('BENCH_SECTIONS')
  return only === undefined || only.includes(section)
}

/** `BENCH_CONTENDERS` as a regular expression, if given. */
export const CONTENDER_FILTER: RegExp | undefined =
  process.env.BENCH_CONTENDERS === undefined || process.env.BENCH_CONTENDERS === ''
    ? undefined
    : new RegExp(process.env.BENCH_CONTENDERS)

/** `BENCH_FRAMEWORKS` and `BENCH_VARIANTS`, if given. */
export const FRAMEWORK_FILTER = list('BENCH_FRAMEWORKS')
export const VARIANT_FILTER = list('BENCH_VARIANTS')

/**
 * The hot key's rate: one no contender reaches while it is measured (tens of millions of
 * decisions), so decision cost is the cost of an admitted request, the common case and
 * the one the HTTP overhead test exercises. Also the HTTP middleware's limit.
 */
export const HOT_RATE = { limit: 1_000_000_000, windowMs: 3_600_000 } as const

/**
 * The many-keys rate: 10,000 per day. Never reached (a key gets at most a few thousand
 * decisions in a run), and each decision leaves 8.6 s of state, longer than a key waits
 * between visits: so every key keeps its state, as a client that keeps talking does,
 * and the sluice store never drops an entry that went back to fresh between two visits.
 */
export const KEYED_RATE = { limit: 10_000, windowMs: 86_400_000 } as const

/**
 * A leaky bucket has a burst of one, so "never reached" needs a rate above the call rate:
 * 10⁶ per millisecond, one permit every nanosecond. Its state is fresh again by the next
 * visit, so in the sluice store a key's entry is dropped and recreated between visits.
 */
export const PACED_RATE = { limit: 1_000_000, windowMs: 1 } as const

/** The one client of the hot-key scenario. */
export const HOT_KEY = '127.0.0.1'

/**
 * How a scenario's keys are visited:
 * - `hot`: one key;
 * - `keyed`: `keys` keys in a fixed scattered order, every one known to the structure;
 * - `churn`: the same, through a store whose LRU holds only `maxKeys` of them, so every
 *   visit evicts one key and brings another back fresh (sluice stores and the floor only);
 * - `insert`: every decision for a key the structure has never seen.
 */
export type Shape = 'hot' | 'keyed' | 'churn' | 'insert'

/** How each decision-cost scenario is sampled. */
export interface DecisionScenario {
  readonly name: string
  readonly title: string
  readonly shape: Shape
  /** 1 for the hot key; for `insert`, the fresh keys one structure takes before it is rebuilt. */
  readonly keys: number
  /** The sluice store's `maxKeys` (default: `keys`). */
  readonly maxKeys?: number
  /** Recorded rounds; every contender gives one sample per round, in rotating order. */
  readonly rounds: number
  /** CPU time one sample runs for. */
  readonly sampleMs: number
}

const ROUNDS = QUICK ? 3 : 7
const SAMPLE_MS = QUICK ? 40 : 100
const MANY = QUICK ? 100_000 : 1_000_000

export const DECISION_SCENARIOS: readonly DecisionScenario[] = [
  { name: 'hot', title: 'one hot key', shape: 'hot', keys: 1, rounds: ROUNDS, sampleMs: SAMPLE_MS },
  {
    name: '10k',
    title: '10,000 keys',
    shape: 'keyed',
    keys: 10_000,
    rounds: ROUNDS,
    sampleMs: SAMPLE_MS,
  },
  {
    name: '1m',
    title: QUICK ? '100,000 keys (quick run)' : '1,000,000 keys',
    shape: 'keyed',
    keys: MANY,
    rounds: ROUNDS,
    sampleMs: QUICK ? 60 : 100,
  },
  {
    name: 'insert',
    title: 'a new key every decision',
    shape: 'insert',
    keys: MANY,
    rounds: ROUNDS,
    sampleMs: SAMPLE_MS,
  },
  {
    name: 'churn',
    title: `${MANY.toLocaleString('en-US')} keys through a store of maxKeys ${(MANY / 10).toLocaleString('en-US')}`,
    shape: 'churn',
    keys: MANY,
    maxKeys: MANY / 10,
    rounds: ROUNDS,
    sampleMs: SAMPLE_MS,
  },
]

/** The scenarios this run measures (`BENCH_SCENARIOS` narrows them). */
export function scenariosToRun(): readonly DecisionScenario[] {
  const only = list('BENCH_SCENARIOS')
  return only === undefined
    ? DECISION_SCENARIOS
    : DECISION_SCENARIOS.filter((s) => only.includes(s.name))
}

/** HTTP overhead: autocannon against a child-process server on 127.0.0.1. */
export const HTTP = {
  connections: 10,
  /** Seconds per measured run. */
  duration: QUICK ? 1 : 2,
  /** Seconds of unrecorded load per server before the first round, to warm the JIT. */
  warmup: QUICK ? 1 : 2,
  /** Rounds of every variant (per framework), alternating: each round pairs each with bare. */
  rounds: QUICK ? 2 : 6,
} as const

/** The exactness scenario's limit: "100 per second". */
export const EXACT_RATE = { limit: 100, windowMs: 1000 } as const
