/**
 * What Hono's two middlewares share besides their accessors: the engine's init from their
 * options, and each request taken through the engine to the `respond` of the runtime that
 * serves it.
 *
 * @module
 */
import { readFunction } from '@sluice/core/validation'
import type { MaybePromise } from '@sluice/http'
import type { EngineInit, Outcome } from '@sluice/http/adapter'
import { respond as respondFetch } from '@sluice/http/fetch'
import { respond as respondNode } from '@sluice/http/node'
import type { Context, Next } from 'hono'
import { honoRequest, honoResponse } from './accessors'
import { defaultIp, defaultIpReady, type GetIp, nodeBindings } from './client-address'

type Admits = { admit(c: Context, res: Context): MaybePromise<Outcome> }

/**
 * Builds the engine of a Hono middleware from its options (`getIp`, an own property, is
 * checked and read here), and the function that takes one request through it: once the
 * default address reader is ready, answered by `@sluice/http/node` under
 * `@hono/node-server` and by `@sluice/http/fetch` elsewhere.
 */
export function honoEngine<O extends { getIp?: GetIp }, E extends Admits>(
  Engine: new (init: EngineInit<O, Context, Context>) => E,
  options: O | undefined,
  factory: string,
): { engine: E; handle(c: Context, next: Next): Promise<undefined> } {
  const own = typeof options === 'object' && options !== null && Object.hasOwn(options, 'getIp')
  const getIp = readFunction(factory, 'getIp', own ? options.getIp : undefined)
  const request = honoRequest(getIp ?? defaultIp, getIp !== undefined)
  // validate also for a bulkhead: its key may read the client address, which can be missing.
  const adapterOptions = ['getIp', 'validate']
  const engine = new Engine({ options, request, response: honoResponse, factory, adapterOptions })
  async function handle(c: Context, next: Next): Promise<undefined> {
    if (getIp === undefined) {
      const ready = defaultIpReady(c)
      if (ready !== undefined) await ready
    }
    const admitted = engine.admit(c, c)
    if (nodeBindings(c) === undefined) await respondFetch(admitted, c, c, next, honoResponse)
    else await respondNode(admitted, c, c, next, honoResponse)
    return undefined
  }
  return { engine, handle }
}
