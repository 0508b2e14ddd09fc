import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** A fixture's process, from source: the workspace condition and tsx, which workers inherit. */
export function startFixture(
  file: string,
  args: readonly string[],
  env: Record<string, string> = {},
) {
  const child = spawn(
    process.execPath,
    ['--conditions=@sluice/source', '--import', 'tsx', `test/fixtures/${file}`, ...args],
    { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  )
  return { child, exited, output: () => stdout }
}

/** Runs a fixture to its end and reads its `RESULT <json>` line. */
export async function runFixture<T>(
  file: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<T> {
  const { exited } = startFixture(file, args, env)
  const { code, stdout, stderr } = await exited
  const line = stdout.split('\n').find((l) => l.startsWith('RESULT '))
  if (line === undefined)
    throw new Error(`fixture exited ${code} without a result:\n${stdout}\n${stderr}`)
  return JSON.parse(line.slice('RESULT '.length)) as T
}
