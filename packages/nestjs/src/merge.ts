import type { PolicyOptions } from '@sluice/http'
import { POLICY_OPTIONS } from '@sluice/http/adapter'

/** Options as the merges read them: any object of rate-limit options. */
export type Options = Record<string, unknown>

/** The policies an options object states, or 'dynamic' when a function picks them per request. */
export function policiesOf(options: Options): PolicyOptions[] | 'dynamic' | undefined {
  if (typeof options.policies === 'function' || typeof options.limit === 'function') {
    return 'dynamic'
  }
  if (Array.isArray(options.policies)) return [...(options.policies as PolicyOptions[])]
  const policy: Options = {}
  let given = false
  for (const key of POLICY_OPTIONS) {
    if (options[key] !== undefined) {
      policy[key] = options[key]
      given = true
    }
  }
  return given ? [policy as PolicyOptions] : undefined
}

/** The options besides the policies (`key`, `cost`, `headers`, `dryRun`, …). */
export function restOf(options: Options): Options {
  const rest: Options = {}
  for (const [key, value] of Object.entries(options)) {
    if (key !== 'policies' && !POLICY_OPTIONS.includes(key)) rest[key] = value
  }
  return rest
}

/** The policy fields of an options object, as given (a function included). */
export function policyFields(options: Options): Options {
  const fields: Options = {}
  for (const key of [...POLICY_OPTIONS, 'policies']) {
    if (options[key] !== undefined) fields[key] = options[key]
  }
  return fields
}

/**
 * A handler's policies over the module's: an unnamed one replaces the module's (all of
 * them, when the module states several), a named one replaces the module's policy of
 * that name or is added to them.
 */
export function mergePolicies(
  module: readonly PolicyOptions[],
  own: readonly PolicyOptions[],
): PolicyOptions[] {
  let merged = [...module]
  for (const policy of own) {
    if (policy.name === undefined) {
      merged = merged.filter((p) => own.includes(p))
      merged.push(policy)
      continue
    }
    const at = merged.findIndex((p) => p.name === policy.name)
    if (at === -1) merged.push(policy)
    else merged[at] = policy
  }
  return merged
}

/**
 * A handler's `@RateLimit()` over its controller's, both on top of the module's: the
 * controller's options are the handler's defaults. A handler's policy replaces the
 * controller's of the same name (an unnamed one, the controller's unnamed one) and is
 * added otherwise; what is left is then merged over the module's by `mergePolicies`, so
 * an unnamed policy of either replaces the module's. Other options override one by one.
 * A handler stating a `policies` or `limit` function, or over a controller that does,
 * takes its own policies whole.
 */
export function overlay(controller: Options | undefined, handler: Options | undefined) {
  if (controller === undefined) return handler
  if (handler === undefined) return controller
  const merged: Options = { ...restOf(controller), ...restOf(handler) }
  const below = policiesOf(controller)
  const above = policiesOf(handler)
  if (above === undefined) return { ...merged, ...policyFields(controller) }
  if (below === undefined || below === 'dynamic' || above === 'dynamic') {
    return { ...merged, ...policyFields(handler) }
  }
  const policies = [...below]
  for (const policy of above) {
    const at = policies.findIndex((p) => p.name === policy.name)
    if (at === -1) policies.push(policy)
    else policies[at] = policy
  }
  merged.policies = policies
  return merged
}

/**
 * Two `@RateLimit()` on one controller or handler, as one: their policies side by side
 * (the upper decorator's first, as read), their other options together. Two policies of
 * one name (or two unnamed, which would both replace the module's), one option set twice,
 * or a `policies`/`limit` function (whose policies cannot be listed) is ambiguous: it
 * throws where the class is defined, naming the place.
 */
export function stack(upper: Options, lower: Options, where: string): Options {
  const fail = (why: string) => {
    throw new TypeError(
      `@RateLimit: two on ${where} ${why}; put them in one @RateLimit({ policies: [...] }), or give each policy a name of its own`,
    )
  }
  const top = policiesOf(upper)
  const bottom = policiesOf(lower)
  if (top === 'dynamic' || bottom === 'dynamic') {
    fail('where one picks its policies with a function')
  }
  const policies = [...((top as PolicyOptions[] | undefined) ?? [])]
  for (const policy of (bottom as PolicyOptions[] | undefined) ?? []) {
    if (policies.some((p) => p.name === policy.name)) {
      fail(
        policy.name === undefined
          ? 'both state an unnamed policy (each would replace the module policy)'
          : `both state the policy "${policy.name}"`,
      )
    }
    policies.push(policy)
  }
  const rest = restOf(upper)
  for (const key of Object.keys(restOf(lower))) {
    if (key in rest) fail(`both set "${key}"`)
  }
  const stacked: Options = { ...restOf(lower), ...rest }
  if (policies.length > 0) stacked.policies = policies
  return stacked
}
