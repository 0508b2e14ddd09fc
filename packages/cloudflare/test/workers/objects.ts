/**
 * The Worker that hosts the objects in the miniflare tests: SluiceDurableObject itself
 * (on the wall clock) and a twin on a ManualClock that the tests advance through
 * `/advance?ms=`, for exact expiry tests. Both classes run in this Worker's isolate.
 */
import { ManualClock } from '@sluice/core'
import { SluiceDurableObject } from '../../src/index'

export { SluiceDurableObject }

const clock = new ManualClock(Date.now())

export class ManualClockObject extends SluiceDurableObject {
  protected override readonly clock = clock
}

export default {
  fetch(request: Request): Response {
    const url = new URL(request.url)
    if (url.pathname !== '/advance') return new Response('objects only', { status: 404 })
    clock.advance(Number(url.searchParams.get('ms')))
    return new Response(String(clock.now()))
  },
}
