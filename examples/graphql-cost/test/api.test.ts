import { storeKinds } from '@sluice/example-keyed-stores'
import { buildSchema, parse } from 'graphql'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startApi } from '../src/api'
import { actualCost, requestedCost } from '../src/query-cost'

interface GraphQLResponse {
  data?: unknown
  errors?: { message: string; extensions: Record<string, unknown> }[]
  extensions?: { cost: unknown }
}

const catalog = (products: number, reviews: number) =>
  `{ products(first: ${products}) { title reviews(first: ${reviews}) { stars } } }`

describe.each(storeKinds())('the GraphQL API on the $name store', (kind) => {
  async function start() {
    const opened = kind.open()
    const api = await startApi({ store: opened.store })
    onTestFinished(() => api.close())
    const query = async (client: string, query: string, variables?: Record<string, unknown>) => {
      const response = await fetch(api.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': client },
        body: JSON.stringify({ query, variables }),
      })
      expect(response.status).toBe(200)
      return (await response.json()) as GraphQLResponse
    }
    return { ...opened, api, query }
  }

  const status = (currentlyAvailable: unknown) => ({
    maximumAvailable: 1000,
    currentlyAvailable,
    restoreRate: 50,
  })

  /** An admitted answer: no errors, and the costs it reports. */
  function expectCharged(
    result: GraphQLResponse,
    requested: number,
    actual: number,
    left: unknown,
  ) {
    expect(result.errors).toBeUndefined()
    expect(result.extensions?.cost).toEqual({
      requestedQueryCost: requested,
      actualQueryCost: actual,
      throttleStatus: status(left),
    })
  }

  it('reserves the requested cost, settles the actual one, and throttles what the budget cannot pay', async () => {
    const { api, query, timed } = await start()

    // 100 products × (1 + 5 reviews) = 600 requested; the catalog has 2 reviews a product,
    // so 100 × 3 = 300 came back: the other 300 are given back.
    expectCharged(await query('shop-1', catalog(100, 5)), 600, 300, timed(700))

    // 100 × (1 + 9) = 1000 with 700 left: 300 short, restored at 50 a second.
    const throttled = await query('shop-1', catalog(100, 9))
    expect(throttled.data).toBeUndefined()
    expect(throttled.errors).toEqual([
      {
        message: kind.movesTime
          ? 'Throttled: this query costs 1000 and 700 are available; retry in 6 s'
          : expect.stringMatching(/^Throttled: this query costs 1000 and \d+ are available/),
        extensions: {
          code: 'THROTTLED',
          retryAfterMs: timed(6000),
          cost: { requestedQueryCost: 1000, throttleStatus: status(timed(700)) },
        },
      },
    ])

    // Another client has a budget of its own.
    expectCharged(await query('shop-2', catalog(100, 9)), 1000, 300, timed(700))

    // More than the whole budget is never admitted, and costs nothing.
    const tooBig = await query('shop-1', catalog(100, 10))
    expect(tooBig.errors).toEqual([
      {
        message: 'Query cost 1100 exceeds the maximum of 1000: ask for fewer items',
        extensions: {
          code: 'MAX_COST_EXCEEDED',
          cost: { requestedQueryCost: 1100, maximumQueryCost: 1000 },
        },
      },
    ])
    expect((await api.limiter.get('shop-1')).remaining).toEqual(timed(700))
  })

  it.runIf(kind.movesTime)('admits the throttled query once the budget has restored', async () => {
    const { query, clock } = await start()
    await query('shop-1', catalog(100, 5))
    expect((await query('shop-1', catalog(100, 9))).errors?.[0]?.extensions.code).toBe('THROTTLED')
    clock!.advance(5999)
    expect((await query('shop-1', catalog(100, 9))).errors?.[0]?.extensions.retryAfterMs).toBe(1)
    clock!.advance(1)
    expectCharged(await query('shop-1', catalog(100, 9)), 1000, 300, 700)
  })

  it('gives the whole reservation back for an operation that returned nothing', async () => {
    const { api, query, timed } = await start()
    // No product asked for still reserves 1; nothing came back, so it settles to 0.
    expectCharged(await query('shop-1', catalog(0, 5)), 1, 0, timed(1000))
    expect((await api.limiter.get('shop-1')).remaining).toEqual(timed(1000))
  })

  it('counts variables and fragments', async () => {
    const { query, timed } = await start()
    const result = await query(
      'shop-1',
      `query Cards($n: Int!) { products(first: $n) { ...card } }
       fragment card on Product { title reviews(first: 2) { stars } }`,
      { n: 10 },
    )
    expectCharged(result, 30, 30, timed(970))
  })
})

describe('the cost rules', () => {
  const schema = buildSchema(`
    type Query { items(first: Int): [Item!]! item: Item count: Int! }
    type Item { name: String! children(first: Int!): [Item!]! }
  `)
  const cost = (query: string, variableValues?: Record<string, unknown>) =>
    requestedCost({ schema, document: parse(query), variableValues })

  it.each([
    ['{ count }', 1], // scalars are free, but no operation is
    ['{ item { name } }', 1],
    ['{ items { name } }', 1], // a list without `first` counts one
    ['{ items(first: 3) { name children(first: 4) { name } } }', 3 * (1 + 4)],
    ['{ items(first: -5) { name } }', 1],
    ['{ items(first: 2) { ... on Item { children(first: 2) { name } } } }', 2 * (1 + 2)],
  ])('%s costs %i', (query, expected) => {
    expect(cost(query)).toBe(expected)
  })

  it('reads variables, and charges 1 for variables that will not coerce', () => {
    const query = 'query ($n: Int!) { items(first: $n) { name } }'
    expect(cost(query, { n: 7 })).toBe(7)
    expect(cost(query, { n: 'seven' })).toBe(1)
  })

  it('counts the objects a result returned', () => {
    expect(actualCost({ items: [{ name: 'a', children: [{ name: 'b' }] }, { name: 'c' }] })).toBe(3)
    expect(actualCost(null)).toBe(0)
    expect(actualCost({ items: [] })).toBe(0)
  })
})
