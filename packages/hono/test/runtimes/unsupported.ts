/**
 * Scenarios that test what a runtime does not have, each with the reason. Matched on the
 * end of the scenario's full name (its describe titles and its own, joined by ' > ').
 */
export type Runtime = 'Bun' | 'Deno' | 'workerd'

const PIPELINED =
  'hardening (issue 11) > a pipelined request whose client hangs up frees its bulkhead slot'

/** One handler at a time per connection: what the pipelining scenario guards against cannot happen. */
const oneAtATime = (server: string) =>
  `${server} runs a connection's pipelined requests one at a time: the second reaches no handler (and takes no slot) while the first is pending, so the scenario's requests never both arrive`

/**
 * workerd tells a Worker that its client left (request.signal, with the
 * enable_request_signal flag) only once the response has started: a client that leaves
 * while its request waits or runs keeps its place or slot until the handler answers
 * (measured in miniflare; test/runtimes/workerd.ts checks that it is freed then).
 */
const LEAVES_UNSEEN =
  'workerd reports a client that left only once its response has started: until then its queue place or slot stays taken (freed when the handler answers; see the workerd test of that)'

const UNSUPPORTED: Record<Runtime, Record<string, string>> = {
  Bun: { [PIPELINED]: oneAtATime('Bun.serve') },
  Deno: { [PIPELINED]: oneAtATime('Deno.serve') },
  workerd: {
    [PIPELINED]:
      "a Worker never holds the client's connection: the HTTP server in front of it (Cloudflare's edge, here workerd's) parses pipelined requests and hands them over one by one",
    'waiting mode > a client that disconnects while queued leaves the queue at once': LEAVES_UNSEEN,
    'bulkhead > holds the slot of a client that hangs up until its handler is done; its signal aborts':
      LEAVES_UNSEEN,
    'bulkhead > queues FIFO up to maxQueue; a queued client that leaves frees its place':
      LEAVES_UNSEEN,
    'bulkhead > 1,000 clients aborting mid-request: the queued leave at once, the running hold their slots until done':
      LEAVES_UNSEEN,
    'bulkhead > holdTimeout: a response held past it is destroyed and its slot freed':
      "a Worker's I/O belongs to the request that made it: the timer that frees a slot cannot cut off another request's response (the slot is freed and the handler's signal aborts; the runtime ends the response)",
    'one answer, on every adapter (issues 23 and 24) > validate: an X-Forwarded-For while no proxy is trusted is reported once':
      "on Workers the default address is cf-connecting-ip, which Cloudflare's edge sets and which already accounts for its proxy: an X-Forwarded-For is expected there",
  },
}

/** The reason `name` cannot run on `runtime`, or undefined when it runs. */
export function unsupportedOn(runtime: Runtime): (name: string) => string | undefined {
  const entries = Object.entries(UNSUPPORTED[runtime])
  return (name) => entries.find(([scenario]) => name.endsWith(` > ${scenario}`))?.[1]
}
