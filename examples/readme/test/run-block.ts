/**
 * Runs one README block as a user would run the file, then ends the process: servers the
 * block starts are moved to an ephemeral loopback port (README blocks say `listen(3000)`,
 * like real apps) and closed after a short while, and open clients (Redis) are left to
 * process exit. A block fails the check by throwing, rejecting or failing an assertion,
 * now or during the grace period.
 */
import { Server } from 'node:http'
import { pathToFileURL } from 'node:url'

const servers: Server[] = []
const listen = Server.prototype.listen
Server.prototype.listen = function (this: Server, ...args: unknown[]) {
  servers.push(this)
  const callback = args.find((arg) => typeof arg === 'function') as (() => void) | undefined
  return listen.call(this, { port: 0, host: '127.0.0.1' }, callback)
} as typeof Server.prototype.listen

const file = process.argv[2]
if (file === undefined) throw new Error('usage: run-block.ts FILE')
await import(pathToFileURL(file).href)
// Give timers, listeners and late rejections of the block a moment to surface.
await new Promise((resolve) => setTimeout(resolve, 300))
for (const server of servers) {
  server.closeAllConnections()
  server.close()
}
process.exit(process.exitCode ?? 0)
