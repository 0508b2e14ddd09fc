import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

let seq = 0

/** A socket path of this test process's own. */
export function socketPath(label: string): string {
  const name = `sluice-test-${process.pid}-${label}-${++seq}`
  return process.platform === 'win32' ? `\\\\.\\pipe\\${name}` : join(tmpdir(), `${name}.sock`)
}

/** Resolves once something listens on `path`. */
export async function waitForSocket(path: string): Promise<void> {
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = createConnection(path)
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (up) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
