/**
 * A child process serving the loopback check's Express app (argv[2]: JSON `{ variant }`):
 * `bulkhead({ max: 8, ... })` around a handler that answers after 10 ms, the request's
 * class read from the `x-priority` header. Reports `{ type: 'listening', port }`.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { bulkhead } from '@sluice/express'
import express from 'express'
import { errorText, serve } from '../child'
import { CHECK, type CheckVariant } from './http-variants'

async function main(): Promise<void> {
  const { variant } = JSON.parse(process.argv[2] ?? '{}') as { variant: CheckVariant }
  const app = express()
  app.use(bulkhead(CHECK.variants[variant]))
  app.get('/', (_req, res) => {
    setTimeout(() => res.send('ok'), CHECK.serviceMs)
  })
  const server = createServer(app)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  serve(async (message) => {
    throw new Error(`priority http-server: unknown request "${message.type}"`)
  })
  process.send?.({ type: 'listening', port: (server.address() as AddressInfo).port })
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', message: errorText(error) })
  process.exitCode = 1
  process.disconnect?.()
})
