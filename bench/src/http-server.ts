/**
 * A child process serving one hello-world app (argv[2]: JSON `{ framework, variant }`),
 * so the load generator in the parent and the server under test each have a core. It
 * reports `{ type: 'listening', port }`, and on request reports its CPU time or profiles itself.
 */
import { errorText, type Message, serve } from './child'
import { type Framework, startApp, type Variant } from './http-apps'
import { type ProfileSummary, startCpuProfile } from './profile'

async function main(): Promise<void> {
  const { framework, variant } = JSON.parse(process.argv[2] ?? '{}') as {
    framework: Framework
    variant: Variant
  }
  const app = await startApp(framework, variant)
  let stop: (() => Promise<ProfileSummary>) | undefined
  serve(async (message: Message): Promise<Message> => {
    if (message.type === 'cpu') {
      // User + system CPU of this process so far, µs: deltas around a load run give the
      // server's CPU per request, which the machine's other load cannot inflate.
      const { user, system } = process.cpuUsage()
      return { type: 'cpu', us: user + system }
    }
    if (message.type === 'profile-start') {
      stop = await startCpuProfile()
      return { type: 'profiling' }
    }
    if (message.type === 'profile-stop' && stop !== undefined) {
      const profile = await stop()
      stop = undefined
      return { type: 'profile', profile }
    }
    throw new Error(`http-server: unknown request "${message.type}"`)
  })
  process.send?.({ type: 'listening', port: app.port })
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', message: errorText(error) })
  process.exitCode = 1
  process.disconnect?.()
})
