import type { AddressInfo } from 'node:net'
import { type ServerType, serve } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from './app'

/** The slow report, held until the test lets it finish. */
let reportsRunning = 0
let finishReports: () => void = () => {}
const reportsDone = new Promise<void>((resolve) => {
  finishReports = resolve
})

let server: ServerType
let base: string

beforeAll(async () => {
  const app = createApp({
    loginLimit: 3,
    report: () => {
      reportsRunning++
      return reportsDone
    },
  })
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
      resolve((info as AddressInfo).port),
    )
  })
  base = `http://127.0.0.1:${port}`
})

afterAll(async () => {
  if ('closeAllConnections' in server) server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

/** Polls, on real time but asserting no duration, until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  expect(condition()).toBe(true)
}

const login = (password: string, client: string) =>
  fetch(`${base}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
    body: JSON.stringify({ password }),
  })

describe('examples/hono-api (smoke)', () => {
  it('answers with the global policy in draft-8 headers', async () => {
    const res = await fetch(`${base}/`, { headers: { 'x-forwarded-for': '203.0.113.1' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit-policy')).toBe('"global";q=100;w=60')
    expect(res.headers.get('ratelimit')).toMatch(/^"global";r=99;t=\d+$/)
    expect(await res.json()).toMatchObject({
      rateLimit: { limit: 100, remaining: 99, key: '203.0.113.1' },
    })
  })

  it('limits failed logins per client, and a success does not count', async () => {
    const client = '203.0.113.2'
    expect((await login('guess', client)).status).toBe(401)
    expect((await login('correct horse', client)).status).toBe(200)
    expect((await login('correct horse', client)).status).toBe(200)
    expect((await login('guess', client)).status).toBe(401)
    expect((await login('guess', client)).status).toBe(401)
    const refused = await login('correct horse', client)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(await refused.json()).toEqual({ error: 'too many login attempts, try again later' })
    expect((await login('guess', '203.0.113.3')).status).toBe(401)
  })

  it('puts a bulkhead around the slow report', async () => {
    const running = [fetch(`${base}/report`), fetch(`${base}/report`)]
    await until(() => reportsRunning === 2)
    const refused = await fetch(`${base}/report`)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.headers.get('ratelimit')).toMatch(/"reports";r=0$/)
    finishReports()
    expect((await Promise.all(running)).map((r) => r.status)).toEqual([200, 200])
  })

  it('runs the decorated controller methods', async () => {
    const account = await fetch(`${base}/accounts/42`, {
      headers: { 'x-forwarded-for': '203.0.113.4' },
    })
    expect(account.status).toBe(200)
    expect(await account.json()).toEqual({ account: { id: '42', name: 'Ada' }, remaining: 9 })
    expect(account.headers.get('ratelimit-policy')).toBe(
      '"global";q=100;w=60, "accounts";q=10;w=60',
    )
    const exported = await fetch(`${base}/export`)
    expect(exported.status).toBe(200)
    expect(exported.headers.get('content-type')).toContain('text/csv')
    expect(exported.headers.get('ratelimit-policy')).toContain(
      '"exports";q=2;qu="concurrent-requests"',
    )
    expect(await exported.text()).toBe('id,name\n42,Ada\n')
  })
})
