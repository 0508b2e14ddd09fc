import { report, runOn } from './runtimes/node-side'

// The shared adapter scenarios, run inside Bun (see runtimes/bun.ts).
report('adapter scenarios inside Bun', await runOn('Bun'))
