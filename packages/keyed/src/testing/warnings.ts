import { vi } from 'vitest'
import { forgetWarnings } from '../warnings'

/**
 * The SluiceWarnings that `build` gives, as `[code, message]`, in order: warnings given
 * before are forgotten first, so each call sees its own, and `process.emitWarning` is
 * stubbed only while `build` runs. Uses vitest's `vi`.
 *
 * @example
 * ```ts
 * expect(warningsOf(() => bulkhead({ queueTimeout: 5 }))).toEqual([
 *   ['ERR_SLUICE_DURATION_IN_MS', expect.stringContaining('"queueTimeout" is 5')],
 * ])
 * ```
 */
export function warningsOf(build: () => unknown): [code: string, message: string][] {
  forgetWarnings()
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
  try {
    build()
    return spy.mock.calls
      .filter(([, options]) => (options as { type?: string } | undefined)?.type === 'SluiceWarning')
      .map(([message, options]): [string, string] => [
        (options as { code: string }).code,
        `${message}`,
      ])
  } finally {
    spy.mockRestore()
  }
}
