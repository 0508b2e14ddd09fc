import { report, runOn } from './runtimes/node-side'

// The shared adapter scenarios, run inside workerd (see runtimes/workerd.ts).
report('adapter scenarios inside workerd', await runOn('workerd'))
