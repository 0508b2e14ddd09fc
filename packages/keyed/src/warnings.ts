// The warnings themselves live in @sluice/core, so that core's factories, the keyed
// limiter and every middleware share one list of warnings given (a bare window that core
// and rateLimit both read is reported once). Re-exported here for the packages that
// import them from @sluice/keyed.
export { emitWarning, forgetWarnings, warnIfBareMilliseconds } from '@sluice/core/internal'

/**
 * True when the calling code runs inside the synchronous handling of an HTTP request
 * (Node's HTTP parser is on the stack): a limiter created there is a new limiter, with a
 * new budget, for every request, so it limits nothing. Checked once, at construction.
 */
export function createdInsideRequest(): boolean {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 100
  try {
    const { stack } = new Error('sluice: where was this limiter created?')
    return stack !== undefined && /\bparserOnIncoming\b|node:_http_server/.test(stack)
  } finally {
    Error.stackTraceLimit = limit
  }
}
