/**
 * `pnpm --filter @sluice/redis generate`: rewrites src/scripts.ts from src/lua/*.lua.
 */
import { writeFileSync } from 'node:fs'
import { renderScripts, SCRIPTS_MODULE } from './lua'

writeFileSync(SCRIPTS_MODULE, renderScripts())
console.log(`wrote ${SCRIPTS_MODULE}`)
