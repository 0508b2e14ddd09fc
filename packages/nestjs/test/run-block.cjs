// Runs one documentation block as a Nest app's build leaves it (CommonJS, see
// docs.test.ts), the way `node dist/main.js` starts it. Servers it starts listen on an
// ephemeral loopback port instead of the block's (README blocks say `listen(3000)`, like
// real apps). With a probe, once a server listens the probe is called with the block's
// exports and the server's address, what it returns is printed as JSON on a line of its own (`RESULT …`), and the process
// ends; without one, the block runs to its end (its own assertions decide).
const { Server } = require('node:http')

const servers = []
const listen = Server.prototype.listen
Server.prototype.listen = function (...args) {
  servers.push(this)
  const callback = args.find((arg) => typeof arg === 'function')
  return listen.call(this, { port: 0, host: '127.0.0.1' }, callback)
}

const [file, probe] = process.argv.slice(2)
if (file === undefined) throw new Error('usage: run-block.cjs FILE [PROBE]')
const exported = require(file)

if (probe !== undefined) {
  ;(async () => {
    // Real time, polled: the block's bootstrap() is not awaited by anyone.
    for (let i = 0; i < 2_000 && !servers.some((s) => s.listening); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const server = servers.find((s) => s.listening)
    if (server === undefined) throw new Error('the block started no server')
    const url = `http://127.0.0.1:${server.address().port}`
    const result = await require(require('node:path').resolve(probe))({ exported, url })
    // Marked: the block may log to stdout too (Nest does).
    process.stdout.write(`\nRESULT ${JSON.stringify(result)}\n`)
    for (const s of servers) {
      s.closeAllConnections()
      s.close()
    }
    process.exit(process.exitCode ?? 0)
  })()
}
