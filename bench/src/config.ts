/**
 * The knobs of one `pnpm bench` run, sized to finish in about eight minutes on a 2-core
 * machine. `BENCH_QUICK=1` shrinks every phase (fewer rounds, shorter samples, 100,000
 * instead of 1,000,000 keys) for a smoke run of the harness; its numbers are not results.
 */
export const QUICK = process.env.BENCH_QUICK === '1'

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

/** How each decision-cost scenario is sampled. */
export interface DecisionScenario {
  readonly name: string
  readonly title: string
  /** 1 for the hot key. */
  readonly keys: number
  /** Recorded rounds; every contender gives one sample per round, in rotating order. */
  readonly rounds: number
  /** CPU time one sample runs for. */
  readonly sampleMs: number
}

export const DECISION_SCENARIOS: readonly DecisionScenario[] = [
  { name: 'hot', title: 'one hot key', keys: 1, rounds: QUICK ? 3 : 7, sampleMs: QUICK ? 40 : 100 },
  {
    name: '10k',
    title: '10,000 keys',
    keys: 10_000,
    rounds: QUICK ? 3 : 7,
    sampleMs: QUICK ? 40 : 100,
  },
  {
    name: '1m',
    title: QUICK ? '100,000 keys (quick run)' : '1,000,000 keys',
    keys: QUICK ? 100_000 : 1_000_000,
    rounds: QUICK ? 3 : 7,
    sampleMs: QUICK ? 60 : 100,
  },
]

/** HTTP overhead: autocannon against a child-process server on 127.0.0.1. */
export const HTTP = {
  connections: 10,
  /** Seconds per measured run. */
  duration: QUICK ? 1 : 2,
  /** Seconds of unrecorded load per server before the first round, to warm the JIT. */
  warmup: QUICK ? 1 : 2,
  /** Rounds of bare, sluice, peer (per framework), alternating. */
  rounds: QUICK ? 2 : 5,
} as const

/** The exactness scenario's limit: "100 per second". */
export const EXACT_RATE = { limit: 100, windowMs: 1000 } as const
