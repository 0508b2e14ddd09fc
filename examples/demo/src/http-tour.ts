import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createApp } from '@sluice/example-express-api'

/** One request of the tour and what came back. */
export interface Step {
  what: string
  status: number
  /** The rate-limit headers of the answer, as sent. */
  headers: Record<string, string>
}

const SHOWN = ['ratelimit-policy', 'ratelimit', 'retry-after']

async function call(base: string, what: string, path: string, init?: RequestInit): Promise<Step> {
  const res = await fetch(`${base}${path}`, init)
  await res.arrayBuffer()
  const headers: Record<string, string> = {}
  for (const name of SHOWN) {
    const value = res.headers.get(name)
    if (value !== null) headers[name] = value
  }
  return { what, status: res.status, headers }
}

/**
 * Starts the Express example on an ephemeral loopback port with small limits, sends real
 * requests at it (a global limit, a login limit that counts only failures, a bulkhead
 * around a slow report) and returns what came back. The server is closed afterwards.
 */
export async function httpTour(): Promise<Step[]> {
  const app = createApp({ globalLimit: 8, loginLimit: 2, reportMs: 300 })
  const server: Server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const as = (client: string, extra: Record<string, string> = {}) => ({
    headers: { 'x-forwarded-for': client, ...extra },
  })
  const login = (password: string) => ({
    method: 'POST',
    headers: { 'x-forwarded-for': '198.51.100.7', 'content-type': 'application/json' },
    body: JSON.stringify({ password }),
  })
  const steps: Step[] = []
  try {
    for (let i = 1; i <= 3; i++) steps.push(await call(base, `GET / #${i}`, '/', as('203.0.113.5')))
    steps.push(await call(base, 'GET / from another client', '/', as('203.0.113.6')))
    steps.push(await call(base, 'POST /login wrong password', '/login', login('guess')))
    steps.push(await call(base, 'POST /login right password', '/login', login('correct horse')))
    steps.push(await call(base, 'POST /login wrong password', '/login', login('guess')))
    steps.push(await call(base, 'POST /login right password', '/login', login('correct horse')))
    for (let i = 4; i <= 9; i++) steps.push(await call(base, `GET / #${i}`, '/', as('203.0.113.5')))
    const slow = [1, 2].map((n) =>
      call(base, `GET /report #${n} (slow)`, '/report', as(`192.0.2.${n}`)),
    )
    // Let both slow reports take the bulkhead's two slots before the third arrives.
    await new Promise((resolve) => setTimeout(resolve, 100))
    const third = await call(base, 'GET /report #3 (bulkhead full)', '/report', as('192.0.2.3'))
    steps.push(...(await Promise.all(slow)), third)
  } finally {
    server.closeAllConnections()
    server.close()
  }
  return steps
}

/** The tour as an aligned text table. */
export function renderSteps(steps: readonly Step[]): string {
  const width = Math.max(...steps.map((s) => s.what.length))
  return steps
    .map((s) => {
      const headers = Object.entries(s.headers)
        .map(([name, value]) => `${name}: ${value}`)
        .join(' | ')
      return `${s.what.padEnd(width)}  ${s.status}  ${headers}`
    })
    .join('\n')
}
