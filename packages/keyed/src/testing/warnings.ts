import { forgetWarnings } from '../warnings'

interface WarningHost {
  emitWarning(message: unknown, options?: unknown): void
}

/**
 * The SluiceWarnings that `build` gives, as `[code, message]`, in order. Warnings given
 * before are forgotten first, so each call sees its own; while `build` runs,
 * `process.emitWarning` collects SluiceWarnings instead of printing them (others pass
 * through). Needs a `process`, as on Node, Bun and Deno.
 *
 * @example
 * ```ts
 * expect(warningsOf(() => bulkhead({ queueTimeout: 5 }))).toEqual([
 *   ['ERR_SLUICE_DURATION_IN_MS', expect.stringContaining('"queueTimeout" is 5')],
 * ])
 * ```
 */
export function warningsOf(build: () => unknown): [code: string, message: string][] {
  const host = (globalThis as { process?: WarningHost }).process
  if (host === undefined) throw new Error('warningsOf: there is no process to take warnings from')
  forgetWarnings()
  const given: [string, string][] = []
  const emitWarning = host.emitWarning
  host.emitWarning = (message, options) => {
    const { type, code } = (options ?? {}) as { type?: unknown; code?: unknown }
    if (type === 'SluiceWarning') given.push([String(code), String(message)])
    else emitWarning.call(host, message, options)
  }
  try {
    build()
  } finally {
    host.emitWarning = emitWarning
  }
  return given
}
