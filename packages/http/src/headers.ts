import { readOneOf } from '@sluice/core/validation'
import type { Policy, PolicyResult } from '@sluice/keyed/store'
import type { ResponseAccessors } from './accessors'
import type { Decision } from './decision'

/**
 * Which RateLimit headers to send:
 * - `'draft-8'` (default), the IETF draft-ietf-httpapi-ratelimit-headers syntax, unchanged
 *   from -08 to -11: `RateLimit-Policy: "100-per-1m";q=100;w=60` and
 *   `RateLimit: "100-per-1m";r=57;t=12`, one list item per policy;
 * - `'draft-7'`: `RateLimit: limit=100, remaining=57, reset=12` and `RateLimit-Policy: 100;w=60`;
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy`;
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds from now);
 * - `false`: none (a refusal still carries `Retry-After`).
 *
 * Every reset (`t`, `reset`) follows draft -10: the seconds until more quota becomes
 * available. On a refusal it agrees with `Retry-After`.
 */
export type HeaderMode = 'draft-8' | 'draft-7' | 'draft-6' | 'legacy' | false

const MODES: readonly HeaderMode[] = ['draft-8', 'draft-7', 'draft-6', 'legacy', false]

/** Writes one decision's headers onto a response. */
export interface HeaderWriter {
  write<Res>(res: Res, response: ResponseAccessors<unknown, Res>, decision: Decision): void
}

/**
 * The largest integer a structured field may carry (RFC 9651 §3.3.1: at most 15 digits).
 * Larger values are clamped rather than sent malformed.
 */
const MAX_SF_INTEGER = 999_999_999_999_999

/**
 * Whole seconds for a header, rounded up. Milliseconds are first rounded to the
 * microsecond so float noise (12000.000000001) does not add a second; any positive wait
 * is at least 1 s, since a client told 0 would come back at once and be refused again.
 * Clamped to 15 digits, so even `Infinity` yields a valid header.
 *
 * @example
 * ```ts
 * toSeconds(11_200) // 12
 * ```
 */
export function toSeconds(ms: number): number {
  if (!(ms > 0)) return 0
  if (!(ms < MAX_SF_INTEGER * 1000)) return MAX_SF_INTEGER
  return Math.max(1, Math.ceil(Math.round(ms * 1000) / 1_000_000))
}

/** A count for a header, clamped to the 15 digits a structured-field integer allows. */
function count(n: number): number {
  return Math.min(n, MAX_SF_INTEGER)
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
  return Math.max(1, toSeconds(Number.isFinite(ms) ? ms : fallbackMs))
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
  switch (readOneOf(factory, 'headers', mode, MODES, 'draft-8')) {
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
        ? `${sfString(p.name)};q=${count(p.limit)};qu="concurrent-requests"`
        : `${sfString(p.name)};q=${count(p.limit)};w=${toSeconds(p.windowMs)}`,
    )
    .join(', ')
  const prefixes = policies.map((p) => `${sfString(p.name)};r=`)
  const timed = policies.map((p) => !isConcurrency(p))
  const item = (i: number, result: PolicyResult) =>
    timed[i]
      ? `${prefixes[i]}${count(result.remaining)};t=${toSeconds(result.resetMs)}`
      : `${prefixes[i]}${count(result.remaining)}`
  if (policies.length === 1) {
    // One policy (the usual case): its item alone, without the list's loop.
    const [prefix] = prefixes as [string]
    const [withReset] = timed as [boolean]
    return {
      write(res, response, decision) {
        const result = decision.results[0]!
        const value = withReset
          ? `${prefix}${count(result.remaining)};t=${toSeconds(result.resetMs)}`
          : `${prefix}${count(result.remaining)}`
        append(res, response, 'RateLimit-Policy', policyValue)
        append(res, response, 'RateLimit', value)
      },
    }
  }
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

/** A draft-6/7 policy item: `100;w=60`, or just the quota for a bulkhead (it has no window). */
interface QuotaItem {
  readonly quota: number
  readonly windowSeconds: number | undefined
}

const renderItem = (item: QuotaItem) =>
  item.windowSeconds === undefined ? `${item.quota}` : `${item.quota};w=${item.windowSeconds}`

/**
 * The draft-6/7 policy list. Those drafts forbid two items with the same quota, so of
 * several policies with equal quota only the strictest (longest window) is listed.
 */
function mergeQuotaItems(items: readonly QuotaItem[]): QuotaItem[] {
  const byQuota = new Map<number, QuotaItem>()
  for (const item of items) {
    const seen = byQuota.get(item.quota)
    if (seen === undefined || (item.windowSeconds ?? 0) > (seen.windowSeconds ?? 0)) {
      byQuota.set(item.quota, item)
    }
  }
  return [...byQuota.values()]
}

function parseQuotaItems(value: string): QuotaItem[] {
  const items: QuotaItem[] = []
  for (const part of value.split(',')) {
    const match = /^\s*(\d+)(?:;w=(\d+))?\s*$/.exec(part)
    if (match !== null) {
      items.push({
        quota: Number(match[1]),
        windowSeconds: match[2] === undefined ? undefined : Number(match[2]),
      })
    }
  }
  return items
}

/** Writes `RateLimit-Policy` for draft-6/7, merged with what a stacked middleware set. */
function writeQuotaPolicies<Res>(
  res: Res,
  response: ResponseAccessors<unknown, Res>,
  own: readonly QuotaItem[],
  ownValue: string,
) {
  const previous = response.getHeader(res, 'RateLimit-Policy')
  if (previous === undefined) {
    response.setHeader(res, 'RateLimit-Policy', ownValue)
    return
  }
  const merged = mergeQuotaItems([...parseQuotaItems(flatten(previous)), ...own])
  response.setHeader(res, 'RateLimit-Policy', merged.map(renderItem).join(', '))
}

function quotaItems(policies: readonly Policy[]): QuotaItem[] {
  return mergeQuotaItems(
    policies.map((p) => ({
      quota: count(p.limit),
      windowSeconds: isConcurrency(p) ? undefined : toSeconds(p.windowMs),
    })),
  )
}

function primary(decision: Decision): PolicyResult {
  return decision.results.find((r) => r.policy.name === decision.policy) ?? decision.results[0]!
}

function draft7(policies: readonly Policy[]): HeaderWriter {
  const items = quotaItems(policies)
  const policyValue = items.map(renderItem).join(', ')
  return {
    write(res, response, decision) {
      writeQuotaPolicies(res, response, items, policyValue)
      if (existingIsTighter(response.getHeader(res, 'RateLimit'), decision.remaining)) return
      const shown = primary(decision)
      const base = `limit=${count(decision.limit)}, remaining=${count(decision.remaining)}`
      response.setHeader(
        res,
        'RateLimit',
        isConcurrency(shown.policy) ? base : `${base}, reset=${toSeconds(decision.resetMs)}`,
      )
    },
  }
}

function draft6(policies: readonly Policy[]): HeaderWriter {
  const items = quotaItems(policies)
  const policyValue = items.map(renderItem).join(', ')
  return {
    write(res, response, decision) {
      writeQuotaPolicies(res, response, items, policyValue)
      writeTriple(res, response, decision, DRAFT6_NAMES)
    },
  }
}

function legacy(): HeaderWriter {
  return {
    write(res, response, decision) {
      writeTriple(res, response, decision, LEGACY_NAMES)
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
  [limit, remaining, reset]: readonly [string, string, string],
) {
  if (existingIsTighter(response.getHeader(res, remaining), decision.remaining)) return
  response.setHeader(res, limit, String(count(decision.limit)))
  response.setHeader(res, remaining, String(count(decision.remaining)))
  // A bulkhead has no window, so it sends no reset rather than a misleading 0.
  if (!isConcurrency(primary(decision).policy)) {
    response.setHeader(res, reset, String(toSeconds(decision.resetMs)))
  }
}
