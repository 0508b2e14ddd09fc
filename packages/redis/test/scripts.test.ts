import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { renderScripts, SCRIPTS_MODULE } from '../scripts/lua'
import * as scripts from '../src/scripts'
import { connect, describeRedis } from './helpers'

const all = Object.values(scripts)

it('src/scripts.ts is what src/lua/*.lua generate (run `pnpm --filter @sluice/redis generate`)', () => {
  expect(readFileSync(SCRIPTS_MODULE, 'utf8')).toBe(renderScripts())
  expect(all.map((script) => script.name).sort()).toEqual([
    'fixed-window',
    'gcra',
    'general',
    'sliding-window',
  ])
})

it('names every script by the SHA-1 of its source, as EVALSHA does', () => {
  for (const script of all) {
    expect(script.sha).toBe(createHash('sha1').update(script.source).digest('hex'))
  }
})

describeRedis('on Redis', () => {
  it('every script compiles, under the SHA the store sends', async () => {
    const redis = connect()
    for (const script of all) expect(await redis.script('LOAD', script.source)).toBe(script.sha)
  })
})
