import { describe, expect, it } from 'vitest'
import { Codel } from './codel'

describe('Codel (target 5 ms, interval 100 ms)', () => {
  it('is overloaded after an interval whose shortest delay was above the target', () => {
    const codel = new Codel(5, 100)
    // Interval [0, 100): delays 8 and 12, shortest 8 > 5.
    codel.sample(8, 0, undefined)
    codel.sample(12, 40, undefined)
    expect(codel.overloaded).toBe(false)
    codel.observe(99, undefined)
    expect(codel.overloaded).toBe(false)
    codel.observe(100, undefined)
    expect(codel.overloaded).toBe(true)
  })

  it('one request let in without waiting in an interval clears it', () => {
    const codel = new Codel(5, 100)
    codel.sample(50, 0, undefined)
    codel.observe(100, undefined)
    expect(codel.overloaded).toBe(true)
    // Interval [100, 200): 30, 0, 40: shortest 0.
    codel.sample(30, 110, undefined)
    codel.sample(0, 120, undefined)
    codel.sample(40, 190, undefined)
    codel.observe(200, undefined)
    expect(codel.overloaded).toBe(false)
  })

  it('a delay equal to the target is not above it', () => {
    const codel = new Codel(5, 100)
    codel.sample(5, 0, undefined)
    codel.observe(100, undefined)
    expect(codel.overloaded).toBe(false)
  })

  it('an interval in which nobody was let in judges by the oldest waiter', () => {
    const codel = new Codel(5, 100)
    codel.observe(0, undefined)
    codel.observe(100, 6)
    expect(codel.overloaded).toBe(true)
    codel.observe(200, 5)
    expect(codel.overloaded).toBe(false)
    codel.observe(300, 80)
    codel.observe(400, undefined)
    expect(codel.overloaded).toBe(false)
  })

  it('drops a waiter past twice the target, only while overloaded', () => {
    const codel = new Codel(5, 100)
    expect(codel.expired(1000)).toBe(false)
    codel.sample(20, 0, undefined)
    codel.observe(100, undefined)
    expect([codel.expired(10), codel.expired(10.5)]).toEqual([false, true])
  })

  it('rolls one interval at a time, from the observation that ends one', () => {
    const codel = new Codel(5, 100)
    codel.sample(20, 0, undefined)
    // The interval ending at 100 is judged at 250; the next one runs to 350.
    codel.observe(250, undefined)
    expect(codel.overloaded).toBe(true)
    codel.sample(1, 340, undefined)
    codel.observe(349, undefined)
    expect(codel.overloaded).toBe(true)
    codel.observe(350, undefined)
    expect(codel.overloaded).toBe(false)
  })
})
