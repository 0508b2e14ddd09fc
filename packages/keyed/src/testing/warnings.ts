import { forgetWarnings } from '../warnings'

interface WarningHost {
  emitWarning(message: unknown, options?: unknown): void
}

/** The SluiceWarnings given while a {@link watchWarnings} watch runs, and how to end it. */
export interface WarningWatch {
  /** `[code, message]` of each SluiceWarning given so far, in order. */
  readonly given: readonly [code: string, message: string][]
  /** Ends the watch: warnings print again. */
  stop(): void
}

/**
 * Collects the SluiceWarnings given from now until `stop()`, instead of printing them
 * (other warnings pass through). Warnings given before are forgotten first, so the watch
 * sees each one again. Through `process.emitWarning` where there is one (Node, Bun, Deno),
 * else through `console.warn`, as `emitWarning` itself does (a Worker without
 * `nodejs_compat`). For warnings given while requests are served; `warningsOf` for a setup.
 *
 * @example
 * ```ts
 * const watch = watchWarnings()
 * try {
 *   await fetch(url, { headers: { 'x-forwarded-for': '203.0.113.9' } })
 *   expect(watch.given.map(([code]) => code)).toEqual(['ERR_SLUICE_XFF_WITHOUT_TRUST_PROXY'])
 * } finally {
 *   watch.stop()
 * }
 * ```
 */
export function watchWarnings(): WarningWatch {
  forgetWarnings()
  const given: [string, string][] = []
  const host = (globalThis as { process?: Partial<WarningHost> }).process
  const emitWarning = host?.emitWarning
  if (host !== undefined && typeof emitWarning === 'function') {
    host.emitWarning = (message, options) => {
      const { type, code } = (options ?? {}) as { type?: unknown; code?: unknown }
      if (type === 'SluiceWarning') given.push([String(code), String(message)])
      else emitWarning.call(host, message, options)
    }
    return {
      given,
      stop: () => {
        host.emitWarning = emitWarning
      },
    }
  }
  const warn = console.warn
  console.warn = (...args: unknown[]) => {
    const found = /^SluiceWarning \[(\w+)\]: (.*)$/s.exec(String(args[0]))
    if (found === null) warn.apply(console, args)
    else given.push([found[1]!, found[2]!])
  }
  return {
    given,
    stop: () => {
      console.warn = warn
    },
  }
}

/**
 * The SluiceWarnings that `build` gives, as `[code, message]`, in order. Warnings given
 * before are forgotten first, so each call sees its own; while `build` runs, they are
 * collected instead of printed (see {@link watchWarnings}).
 *
 * @example
 * ```ts
 * expect(warningsOf(() => bulkhead({ queueTimeout: 5 }))).toEqual([
 *   ['ERR_SLUICE_DURATION_IN_MS', expect.stringContaining('"queueTimeout" is 5')],
 * ])
 * ```
 */
export function warningsOf(build: () => unknown): [code: string, message: string][] {
  const watch = watchWarnings()
  try {
    build()
  } finally {
    watch.stop()
  }
  return [...watch.given]
}
