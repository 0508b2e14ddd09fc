import { expect, it } from 'vitest'
import { httpTour, renderSteps } from './http-tour'

it('the HTTP tour gets the limits the demo promises from the real Express example', async () => {
  const steps = await httpTour()
  expect(steps.map((s) => s.status)).toEqual([
    200, 200, 200, 200, 401, 200, 401, 429, 200, 200, 200, 200, 200, 429, 200, 200, 503,
  ])
  const [first, , , other] = steps
  expect(first?.headers).toEqual({
    'ratelimit-policy': '"global";q=8;w=60',
    ratelimit: expect.stringMatching(/^"global";r=7;t=\d+$/),
  })
  expect(other?.headers.ratelimit).toMatch(/^"global";r=7;/)
  const loginRefused = steps[7]
  expect(loginRefused?.headers['retry-after']).toMatch(/^\d+$/)
  expect(loginRefused?.headers.ratelimit).toContain('"login";r=0;t=')
  const bulkheadFull = steps[16]
  expect(bulkheadFull?.headers['retry-after']).toBe('1')
  expect(bulkheadFull?.headers['ratelimit-policy']).toContain(
    '"reports";q=2;qu="concurrent-requests"',
  )
  expect(renderSteps(steps).split('\n')).toHaveLength(steps.length)
})
