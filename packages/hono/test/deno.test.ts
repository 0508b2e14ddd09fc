import { report, runOn } from './runtimes/node-side'

// The shared adapter scenarios, run inside Deno (see runtimes/deno.ts).
report('adapter scenarios inside Deno', await runOn('Deno'))
