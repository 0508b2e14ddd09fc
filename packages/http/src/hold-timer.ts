import { type Clock, systemClock } from '@sluice/core'

/** A held slot as {@link HoldTimer} keeps it: in a list ordered by deadline. */
export interface Held {
  /** `clock.now()` past which the slot has been held too long. */
  deadline: number
  previous: Held | undefined
  next: Held | undefined
  /** Called once, when the deadline passes while the slot is still held. */
  expire(): void
}

/**
 * Expires slots held longer than a bulkhead's `holdTimeout`, with one timer for all of them
 * instead of one per request. Every slot is held at most the same time, so deadlines come
 * in the order slots were taken: a list whose head is the next to expire; a released slot
 * leaves it at once (so the list never keeps a finished request's objects).
 *
 * On the system clock the timer is an `unref`'d `setTimeout` left to run out when the list
 * empties (a held slot never keeps a process alive, and a bulkhead that is idle between
 * requests arms no timer per request). On any other clock (a `ManualClock` in tests) it is
 * the clock's `sleep`, cancelled when the list empties, so nothing is left sleeping.
 */
export class HoldTimer {
  readonly ms: number
  readonly #clock: Clock
  #head: Held | undefined
  #tail: Held | undefined
  #armed = false
  /** The deadline the timer was armed for. */
  #armedFor = 0
  #sleep: AbortController | undefined

  constructor(clock: Clock, ms: number) {
    this.#clock = clock
    this.ms = ms
  }

  /**
   * Starts watching a slot taken now. Slots already past their deadline expire first: a
   * runtime that drops a timer with the request that set it (workerd) still expires them.
   */
  add(held: Held): void {
    const now = this.#clock.now()
    this.#expire(now)
    held.deadline = now + this.ms
    held.previous = this.#tail
    held.next = undefined
    if (this.#tail === undefined) this.#head = held
    else this.#tail.next = held
    this.#tail = held
    // A system timer past its deadline that never ran was dropped (an extra one is harmless).
    const dropped = this.#clock === systemClock && this.#armedFor <= now
    if (!this.#armed || dropped) this.#arm(this.#head!.deadline)
  }

  /** Stops watching a slot (released, or expired). */
  remove(held: Held): void {
    const { previous, next } = held
    if (previous === undefined) {
      if (this.#head !== held) return
      this.#head = next
    } else {
      previous.next = next
    }
    if (next === undefined) this.#tail = previous
    else next.previous = previous
    held.previous = undefined
    held.next = undefined
    if (this.#head === undefined && this.#sleep !== undefined) {
      this.#sleep.abort()
      this.#sleep = undefined
      this.#armed = false
    }
  }

  #arm(deadline: number): void {
    this.#armed = true
    this.#armedFor = deadline
    const ms = Math.max(0, deadline - this.#clock.now())
    if (this.#clock === systemClock) {
      setTimeout(this.#tick, Math.ceil(ms)).unref?.()
      return
    }
    const sleep = new AbortController()
    this.#sleep = sleep
    this.#clock.sleep(ms, sleep.signal).then(this.#tick, () => {})
  }

  #tick = (): void => {
    this.#armed = false
    this.#sleep = undefined
    this.#expire(this.#clock.now())
    if (this.#head !== undefined && !this.#armed) this.#arm(this.#head.deadline)
  }

  #expire(now: number): void {
    for (let held = this.#head; held !== undefined && held.deadline <= now; held = this.#head) {
      this.remove(held)
      held.expire()
    }
  }
}
