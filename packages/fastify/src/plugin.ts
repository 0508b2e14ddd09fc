import { POLICY_OPTIONS } from '@sluice/http/adapter'
import type { FastifyPluginAsync, onRequestHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { type BulkheadOptions, bulkhead } from './bulkhead'
import { type RateLimitOptions, rateLimit } from './rate-limit'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * This route's rate limit under `fastifyRateLimit`: options merged over the plugin's
     * (a limiter of its own), or `false` for none.
     */
    rateLimit?: RateLimitOptions | false
    /**
     * This route's bulkhead under `fastifyBulkhead`: options merged over the plugin's (a
     * bulkhead of its own), or `false` for none.
     */
    bulkhead?: BulkheadOptions | false
  }
}

/** What `app.register` takes for Fastify itself, beside a plugin's options. */
type RegisterOnly = { prefix?: unknown; logLevel?: unknown; logSerializers?: unknown }

/**
 * A route's options over the plugin's, option by option. `policies` and the single-policy
 * options (`limit`, `window`, `algorithm`, ...) are two spellings of one thing, so the
 * route's spelling drops the plugin's other one instead of being refused as a mix.
 */
function mergeOptions<O extends object>(plugin: O | undefined, route: O): O {
  const merged: Record<string, unknown> = { ...plugin }
  const given = (key: string) => Object.hasOwn(route, key)
  if (given('policies')) for (const key of POLICY_OPTIONS) delete merged[key]
  if (POLICY_OPTIONS.some(given)) delete merged.policies
  return { ...merged, ...route } as O
}

/**
 * One plugin body for both: on every route registered after it in its context (and in
 * that context's children), an `onRequest` hook is added after the route's own: the
 * plugin's for a route without `config[option]`, one built from the merged options for a
 * route with an object there (one per object: routes given the same object share it, and
 * so do a GET route and the HEAD route Fastify adds for it), none for `false`.
 */
function limiterPlugin<O extends object>(
  factory: string,
  option: 'rateLimit' | 'bulkhead',
  build: (options: O) => onRequestHookHandler,
): FastifyPluginAsync<O> {
  // Async, so an option the factory refuses rejects `app.register` instead of escaping it.
  return async (fastify, given) => {
    // Fastify hands its own register options to the plugin too; they are not the limiter's.
    const { prefix: _, logLevel: __, logSerializers: ___, ...options } = given as O & RegisterOnly
    const shared = build(options as O)
    const perRoute = new WeakMap<object, onRequestHookHandler>()
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const config = route.config?.[option]
      if (config === false) return
      if (config !== undefined && (typeof config !== 'object' || config === null)) {
        throw new TypeError(
          `${factory}: route ${route.method} ${route.url}: "config.${option}" must be an options object or false, got ${String(config)}`,
        )
      }
      let hook = config === undefined ? shared : perRoute.get(config)
      if (hook === undefined) {
        hook = build(mergeOptions(options as O, config as O))
        perRoute.set(config as object, hook)
      }
      const hooks = route.onRequest ?? []
      route.onRequest = [...(Array.isArray(hooks) ? hooks : [hooks]), hook]
    })
  }
}

/**
 * `rateLimit()` as a Fastify plugin, for `app.register`: every route registered after it
 * in the context it is registered in (and its children) is limited, the same options,
 * headers and `request.rateLimit` as the hook, one budget for all of them. A route's
 * `config: { rateLimit: { ... } }` gets a limiter of its own, its options merged over the
 * plugin's (route wins, option by option); `config: { rateLimit: false }` opts it out.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify'
 * import { fastifyRateLimit } from '@sluice/fastify'
 *
 * const app = Fastify()
 * await app.register(fastifyRateLimit, { limit: 100, window: '1m' })
 * app.post('/login', { config: { rateLimit: { name: 'login', limit: 5, window: '15m' } } }, login)
 * app.get('/health', { config: { rateLimit: false } }, async () => 'up')
 * ```
 */
export const fastifyRateLimit = fp(
  limiterPlugin<RateLimitOptions>('fastifyRateLimit', 'rateLimit', rateLimit),
  { fastify: '5.x', name: '@sluice/fastify-rate-limit' },
)

/**
 * `bulkhead()` as a Fastify plugin, for `app.register`: every route registered after it
 * in its context (and its children) shares one bulkhead, with the hook's options and
 * release rules. A route's `config: { bulkhead: { ... } }` gets one of its own, its
 * options merged over the plugin's (route wins); `config: { bulkhead: false }` opts it out.
 *
 * @example
 * ```ts
 * await app.register(fastifyBulkhead, { max: 8, maxQueue: 50, queueTimeout: '5s' })
 * app.get('/report', { config: { bulkhead: { max: 2 } } }, buildReport)
 * ```
 */
export const fastifyBulkhead = fp(
  limiterPlugin<BulkheadOptions>('fastifyBulkhead', 'bulkhead', bulkhead),
  { fastify: '5.x', name: '@sluice/fastify-bulkhead' },
)
