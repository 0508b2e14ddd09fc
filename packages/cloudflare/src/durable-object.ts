import type { Clock } from '@sluice/core'
import { ObjectState, type ObjectStorage } from './object-state'
import type { Operation } from './protocol'

/** The part of a Durable Object's `ctx` (`DurableObjectState`) the object uses. */
export interface DurableObjectContext {
  readonly storage: ObjectStorage
}

/**
 * Wall-clock milliseconds: the state is stored and outlives the object (and its isolate,
 * whose `performance.now()` starts over), so it needs a clock every instance of the
 * object agrees on. Inside Workers `Date.now()` is Cloudflare's synchronised time, frozen
 * while code runs and moving on I/O, which is what one decision needs.
 */
const wallClock: Clock = {
  now: () => Date.now(),
  sleep: () => Promise.reject(new Error('sluice: a limiter in a Durable Object never waits')),
}

/**
 * The Durable Object class behind {@link durableObjectStore}: export it from your Worker's
 * entry module and bind it (SQLite storage recommended). Each object holds the budgets of
 * the client keys that hash to it and decides for them one request at a time, so a
 * decision is atomic across every isolate and location of the Worker. It answers only
 * the store's requests (JSON over `fetch`), never the public.
 *
 * @example
 * ```ts
 * // src/index.ts (the Worker's entry), with this in wrangler.jsonc:
 * // "durable_objects": { "bindings": [{ "name": "SLUICE", "class_name": "SluiceDurableObject" }] },
 * // "migrations": [{ "tag": "v1", "new_sqlite_classes": ["SluiceDurableObject"] }]
 * export { SluiceDurableObject } from '@sluice/cloudflare'
 * ```
 */
export class SluiceDurableObject {
  /**
   * The time the object decides on: wall-clock milliseconds (see above). A subclass may
   * put another clock here (the tests use a `ManualClock`); it is read from the first
   * request on.
   */
  protected readonly clock: Clock = wallClock
  readonly #storage: ObjectStorage
  #state: ObjectState | undefined

  constructor(ctx: DurableObjectContext, _env?: unknown) {
    this.#storage = ctx.storage
  }

  fetch(request: Request): Promise<Response> {
    this.#state ??= new ObjectState(this.#storage, this.clock)
    return answer(this.#state, request)
  }
}

/** Runs the store's operation in `request` on `state` and answers with its JSON result. */
export async function answer(state: ObjectState, request: Request): Promise<Response> {
  if (request.method !== 'POST') return new Response('Method Not Allowed', { status: 405 })
  let operation: Operation
  try {
    operation = (await request.json()) as Operation
  } catch {
    return new Response('Bad Request', { status: 400 })
  }
  try {
    return Response.json(await state.run(operation))
  } catch (error) {
    return new Response(error instanceof Error ? error.message : String(error), { status: 500 })
  }
}
