import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type KeyedLimiter, keyedLimiter, memoryStore, type Store } from '@sluice/keyed'
import { GraphQLError } from 'graphql'
import { createSchema, createYoga, isAsyncIterable, type Plugin } from 'graphql-yoga'
import { actualCost, requestedCost } from './query-cost'

/** A catalog of 100 products with 2 reviews each. */
const products = Array.from({ length: 100 }, (_, i) => ({
  id: String(i + 1),
  title: `Product ${i + 1}`,
  reviews: [
    { id: `${i + 1}-a`, stars: 5 },
    { id: `${i + 1}-b`, stars: 3 },
  ],
}))

const schema = createSchema({
  typeDefs: /* GraphQL */ `
    type Query {
      products(first: Int!): [Product!]!
    }
    type Product {
      id: ID!
      title: String!
      reviews(first: Int!): [Review!]!
    }
    type Review {
      id: ID!
      stars: Int!
    }
  `,
  resolvers: {
    Query: {
      products: (_: unknown, { first }: { first: number }) => products.slice(0, Math.max(0, first)),
    },
    Product: {
      reviews: (product: (typeof products)[number], { first }: { first: number }) =>
        product.reviews.slice(0, Math.max(0, first)),
    },
  },
})

/** Each client's budget of query cost, as Shopify's Admin API counts it. */
export interface CostBudget {
  /** Most cost a client can spend at once, and most one query may cost. Default 1000. */
  capacity?: number
  /** Cost given back every second. Default 50. */
  restoreRate?: number
}

/** Options of {@link startApi}; every one has a default. */
export interface ApiOptions {
  /** Where the budgets live. Default: a `memoryStore()`; share a `redisStore()` across servers. */
  store?: Store
  budget?: CostBudget
}

/**
 * Charges each GraphQL operation's cost to its client (the `x-api-key` header; requests
 * without one share the budget `anonymous`). Before an operation runs, its requested cost
 * ({@link requestedCost}) is reserved; once it has run, the reservation is settled with
 * its actual cost ({@link actualCost}), so the unused part is given back, as Shopify's
 * GraphQL API does. An operation the budget cannot pay for now is refused with a
 * `THROTTLED` error whose `extensions.retryAfterMs` says when it can; one that costs more
 * than the whole budget, with `MAX_COST_EXCEEDED`. Every answer carries `extensions.cost`.
 *
 * @example
 * ```ts
 * const yoga = createYoga({ schema, plugins: [useQueryCost(limiter, { capacity: 1000, restoreRate: 50 })] })
 * ```
 */
export function useQueryCost(
  limiter: KeyedLimiter,
  { capacity, restoreRate }: Required<CostBudget>,
): Plugin {
  const throttleStatus = (currentlyAvailable: number) => ({
    maximumAvailable: capacity,
    currentlyAvailable,
    restoreRate,
  })
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      const { request } = args.contextValue as { request: Request }
      const client = request.headers.get('x-api-key') ?? 'anonymous'
      const requested = requestedCost(args)
      if (requested > capacity) {
        const error = new GraphQLError(
          `Query cost ${requested} exceeds the maximum of ${capacity}: ask for fewer items`,
          {
            extensions: {
              code: 'MAX_COST_EXCEEDED',
              cost: { requestedQueryCost: requested, maximumQueryCost: capacity },
            },
          },
        )
        setResultAndStopExecution({ errors: [error] })
        return
      }
      const reservation = await limiter.reserve(client, requested)
      if (!reservation.allowed) {
        const seconds = Math.ceil(reservation.retryAfterMs / 1000)
        const error = new GraphQLError(
          `Throttled: this query costs ${requested} and ${reservation.remaining} are available; retry in ${seconds} s`,
          {
            extensions: {
              code: 'THROTTLED',
              retryAfterMs: reservation.retryAfterMs,
              cost: {
                requestedQueryCost: requested,
                throttleStatus: throttleStatus(reservation.remaining),
              },
            },
          },
        )
        setResultAndStopExecution({ errors: [error] })
        return
      }
      return {
        async onExecuteDone({ result, setResult }) {
          // An incremental result (@defer, @stream) is charged what it asked for.
          if (isAsyncIterable(result)) {
            await reservation.settle(requested)
            return
          }
          const actual = actualCost(result.data)
          const settled = await reservation.settle(actual)
          setResult({
            ...result,
            extensions: {
              ...result.extensions,
              cost: {
                requestedQueryCost: requested,
                actualQueryCost: actual,
                throttleStatus: throttleStatus(settled.remaining),
              },
            },
          })
        },
      }
    },
  }
}

/** A running GraphQL server. */
export interface Api {
  /** `http://127.0.0.1:<port>/graphql` */
  readonly url: string
  readonly limiter: KeyedLimiter
  close(): Promise<void>
}

/**
 * Serves the catalog's GraphQL API over HTTP with {@link useQueryCost}.
 *
 * @example
 * ```ts
 * const api = await startApi({ port: 4000 })
 * ```
 */
export async function startApi(options: ApiOptions & { port?: number } = {}): Promise<Api> {
  const budget = { capacity: 1000, restoreRate: 50, ...options.budget }
  // Shopify's "leaky bucket" is a token bucket: `capacity` at once, `restoreRate` a second.
  const limiter = keyedLimiter({
    name: 'query-cost',
    algorithm: 'token-bucket',
    limit: budget.restoreRate,
    window: '1s',
    capacity: budget.capacity,
    store: options.store ?? memoryStore(),
  })
  const yoga = createYoga({ schema, plugins: [useQueryCost(limiter, budget)], logging: false })
  const server = createServer(yoga)
  server.listen(options.port ?? 0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}${yoga.graphqlEndpoint}`,
    limiter,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
