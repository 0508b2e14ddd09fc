import type { ResponseAccessors } from './accessors'
import type { Decision } from './decision'
import type { Policy, PolicyResult } from './store'
import { typeError } from './validate'

/**
 * Which RateLimit headers to send:
 * - `'draft-8'` (default), the IETF draft-ietf-httpapi-ratelimit-headers syntax, unchanged
 *   from -08 to -11: `RateLimit-Policy: "default";q=100;w=60` and
 *   `RateLimit: "default";r=57;t=12`, one list item per policy;
 * - `'draft-7'`: `RateLimit: limit=100, remaining=57, reset=12` and `RateLimit-Policy: 100;w=60`;
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy`;
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds from now);
 * - `false`: none (a refusal still carries `Retry-After`).
 */
export type HeaderMode = 'draft-8' | 'draft-7' | 'draft-6' | 'legacy' | false

const MODES: readonly HeaderMode[] = ['draft-8', 'draft-7', 'draft-6', 'legacy', false]

/** Writes one decision's headers onto a response. */
export interface HeaderWriter {
  write<Res>(res: Res, response: ResponseAccessors<unknown, Res>, decision: Decision): void
}

/**
 * Whole seconds for a header, rounded up. Milliseconds are first rounded to the
 * microsecond so float noise (12000.000000001) does not add a second; any positive wait
 * is at least 1 s, since a client told 0 would come back at once and be refused again.
 *
 * @example
 * ```ts
 * toSeconds(11_200) // 12
 * ```
 */
export function toSeconds(ms: number): number {
  if (!(ms > 0)) return 0
  if (ms === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY
  return Math.max(1, Math.ceil(Math.round(ms * 1000) / 1_000_000))
}

/**
 * The `Retry-After` value for a refusal, in whole seconds rounded up (RFC 9110 §10.2.3:
 * delay-seconds is a non-negative integer). A request that can never pass (cost above the
 * capacity) is told to come back after `fallbackMs` (its policy's window).
 *
 * @example
 * ```ts
 * retryAfterSeconds(1_500, 60_000) // 2
 * ```
 */
export function retryAfterSeconds(ms: number, fallbackMs: number): number {
  return Number.isFinite(ms) ? Math.max(1, toSeconds(ms)) : Math.max(1, toSeconds(fallbackMs))
}

/** Structured-field string (RFC 8941 §3.3.3): printable ASCII with `\` and `"` escaped. */
function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`
}

function isConcurrency(policy: Policy): boolean {
  return policy.spec.algorithm === 'concurrency'
}

function flatten(value: number | string | readonly string[]): string {
  return typeof value === 'object' ? value.join(', ') : String(value)
}

/** Appends list items to a header another middleware may already have set. */
function append<Res>(
  res: Res,
  response: ResponseAccessors<unknown, Res>,
  name: string,
  value: string,
) {
  const previous = response.getHeader(res, name)
  response.setHeader(res, name, previous === undefined ? value : `${flatten(previous)}, ${value}`)
}

/**
 * For single-valued headers (draft-7's `RateLimit`, draft-6, legacy) two stacked
 * middlewares cannot both be listed: the one with fewer permits left is the one a client
 * must respect, so an existing tighter value is kept.
 */
function existingIsTighter(
  previous: number | string | readonly string[] | undefined,
  remaining: number,
) {
  if (previous === undefined) return false
  const match = /(?:^|remaining=)(\d+)/.exec(flatten(previous))
  return match !== null && Number(match[1]) <= remaining
}

/**
 * Compiles the header writer for a middleware: every constant part (policy lists, item
 * prefixes) is built here, once, so a request only formats its numbers.
 *
 * @example
 * ```ts
 * const writer = createHeaderWriter('draft-8', policies, 'rateLimit')
 * writer?.write(res, responseAccessors, decision)
 * ```
 */
export function createHeaderWriter(
  mode: unknown,
  policies: readonly Policy[],
  factory: string,
): HeaderWriter | undefined {
  if (!MODES.includes(mode as HeaderMode)) {
    throw typeError(
      factory,
      'headers',
      `must be one of 'draft-8', 'draft-7', 'draft-6', 'legacy', false`,
      mode,
    )
  }
  switch (mode as HeaderMode) {
    case 'draft-8':
      return draft8(policies)
    case 'draft-7':
      return draft7(policies)
    case 'draft-6':
      return draft6(policies)
    case 'legacy':
      return legacy()
    default:
      return undefined
  }
}

function draft8(policies: readonly Policy[]): HeaderWriter {
  const policyValue = policies
    .map((p) =>
      isConcurrency(p)
        ? `${sfString(p.name)};q=${p.limit};qu="concurrent-requests"`
        : `${sfString(p.name)};q=${p.limit};w=${toSeconds(p.windowMs)}`,
    )
    .join(', ')
  const prefixes = policies.map((p) => `${sfString(p.name)};r=`)
  const timed = policies.map((p) => !isConcurrency(p))
  const item = (i: number, result: PolicyResult) =>
    timed[i]
      ? `${prefixes[i]}${result.remaining};t=${toSeconds(result.resetMs)}`
      : `${prefixes[i]}${result.remaining}`
  return {
    write(res, response, decision) {
      const { results } = decision
      let value = item(0, results[0]!)
      for (let i = 1; i < results.length; i++) value += `, ${item(i, results[i]!)}`
      append(res, response, 'RateLimit-Policy', policyValue)
      append(res, response, 'RateLimit', value)
    },
  }
}

/** draft-6/7 policy list: `100;w=60`, or just the quota for a bulkhead (it has no window). */
function draft7PolicyValue(policies: readonly Policy[]): string {
  return policies
    .map((p) => (isConcurrency(p) ? `${p.limit}` : `${p.limit};w=${toSeconds(p.windowMs)}`))
    .join(', ')
}

function primary(decision: Decision): PolicyResult {
  return decision.results.find((r) => r.policy.name === decision.policy) ?? decision.results[0]!
}

function draft7(policies: readonly Policy[]): HeaderWriter {
  const policyValue = draft7PolicyValue(policies)
  return {
    write(res, response, decision) {
      append(res, response, 'RateLimit-Policy', policyValue)
      if (existingIsTighter(response.getHeader(res, 'RateLimit'), decision.remaining)) return
      const shown = primary(decision)
      response.setHeader(
        res,
        'RateLimit',
        isConcurrency(shown.policy)
          ? `limit=${decision.limit}, remaining=${decision.remaining}`
          : `limit=${decision.limit}, remaining=${decision.remaining}, reset=${toSeconds(decision.resetMs)}`,
      )
    },
  }
}

function draft6(policies: readonly Policy[]): HeaderWriter {
  const policyValue = draft7PolicyValue(policies)
  return {
    write(res, response, decision) {
      append(res, response, 'RateLimit-Policy', policyValue)
      writeTriple(res, response, decision, 'RateLimit-')
    },
  }
}

function legacy(): HeaderWriter {
  return {
    write(res, response, decision) {
      writeTriple(res, response, decision, 'X-RateLimit-')
    },
  }
}

const names = (prefix: string) =>
  [`${prefix}Limit`, `${prefix}Remaining`, `${prefix}Reset`] as const
const DRAFT6_NAMES = names('RateLimit-')
const LEGACY_NAMES = names('X-RateLimit-')

function writeTriple<Res>(
  res: Res,
  response: ResponseAccessors<unknown, Res>,
  decision: Decision,
  prefix: 'RateLimit-' | 'X-RateLimit-',
) {
  const [limit, remaining, reset] = prefix === 'RateLimit-' ? DRAFT6_NAMES : LEGACY_NAMES
  if (existingIsTighter(response.getHeader(res, remaining), decision.remaining)) return
  response.setHeader(res, limit, String(decision.limit))
  response.setHeader(res, remaining, String(decision.remaining))
  // A bulkhead has no window, so it sends no reset rather than a misleading 0.
  if (!isConcurrency(primary(decision).policy)) {
    response.setHeader(res, reset, String(toSeconds(decision.resetMs)))
  }
}
