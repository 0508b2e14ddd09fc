import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from './app'

let server: Server
let base: string

beforeAll(async () => {
  server = createApp({ loginLimit: 3, reportMs: 1_000 }).listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const login = (password: string, client: string) =>
  fetch(`${base}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
    body: JSON.stringify({ password }),
  })

describe('examples/express-api (smoke)', () => {
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
    await new Promise((resolve) => setTimeout(resolve, 200))
    const refused = await fetch(`${base}/report`)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.headers.get('ratelimit')).toMatch(/"reports";r=0$/)
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
