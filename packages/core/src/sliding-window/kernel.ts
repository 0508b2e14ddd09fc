import { micros, mulDivCeil, mulDivMod, PAIR } from '../exact'
import { carryMismatch, type Quota, type RateKernel } from '../kernel'
import type { Carry, NormalizedRateSpec } from '../types'

type SlidingWindowSpec = Extract<NormalizedRateSpec, { algorithm: 'sliding-window' }>

/** Where `#waitUs` leaves its wait, in µs (one per process, read straight after). */
const WAIT = new Float64Array(1)

/** Counts of a sliding window's slots: the narrowest unsigned integers that hold them. */
export type Counts = Uint8Array | Uint16Array | Uint32Array | Float64Array

/**
 * The most a slot counts for a limit: the largest value of the narrowest unsigned integer
 * that holds twice the limit, so a slot keeps a whole limit of debt above its limit
 * (a penalty, a settle above its estimate) before it saturates. A saturated slot still
 * refuses until it leaves the window, which is all debt in a window does.
 *
 * @example
 * ```ts
 * slotCap(100) // 255
 * ```
 */
export function slotCap(limit: number): number {
  const most = 2 * limit
  if (most <= 0xff) return 0xff
  if (most <= 0xffff) return 0xffff
  if (most <= 0xffff_ffff) return 0xffff_ffff
  return Number.MAX_SAFE_INTEGER
}

function countArray(cap: number, length: number): Counts {
  if (cap === 0xff) return new Uint8Array(length)
  if (cap === 0xffff) return new Uint16Array(length)
  if (cap === 0xffff_ffff) return new Uint32Array(length)
  return new Float64Array(length)
}

/**
 * A sliding window: the window is cut into `slots` slots, and generation g is slot number
 * g since the clock's zero (`floor(t·slots / window)`, t in µs). A permit counts until its
 * generation has wholly left the window, so at generation c the generations c − slots to c
 * count: at most `limit` in any rolling window, to a precision of one slot.
 *
 * Per row: a ring of `slots + 1` counts for consecutive generations, the newest being
 * `head`, and the sum of the ring. Older generations are ignored, and moving `head` forward
 * zeroes the buckets it claims: memory is fixed whatever the traffic.
 */
export class SlidingWindowKernel implements RateKernel {
  readonly spec: SlidingWindowSpec
  readonly ageless = false
  readonly freshPermits: number
  readonly capacity: number
  readonly width: number
  rows = 0
  readonly #limit: number
  readonly #slots: number
  readonly #ring: number
  readonly #window: number
  readonly #cap: number
  /** Per row: the head generation and the ring's sum. */
  #meta = new Float64Array(0)
  #counts: Counts

  constructor(spec: SlidingWindowSpec) {
    this.spec = spec
    this.#limit = spec.limit
    this.capacity = spec.limit
    this.freshPermits = spec.limit
    this.#slots = spec.slots
    this.#ring = spec.slots + 1
    this.width = this.#ring + 1
    this.#window = micros(spec.window)
    this.#cap = slotCap(spec.limit)
    this.#counts = countArray(this.#cap, 0)
  }

  resize(rows: number): void {
    if (rows <= this.rows) return
    const meta = new Float64Array(rows * 2)
    meta.set(this.#meta)
    const counts = countArray(this.#cap, rows * this.#ring)
    counts.set(this.#counts as never)
    this.#meta = meta
    this.#counts = counts
    this.rows = rows
  }

  clear(row: number): void {
    // A ring whose head is before every generation counts nothing, whatever its buckets
    // hold: the first take claims (zeroes) them all and takes their counts off the sum,
    // which is left as it is, the sum of those buckets.
    this.#meta[2 * row] = Number.NEGATIVE_INFINITY
  }

  /** The generation of `t` (µs), never before the row's head (a clock never steps back here). */
  #generation(t: number, head: number): number {
    const whole = Math.floor(t / this.#window)
    const into = t - whole * this.#window
    // into·slots fits a double for every spec of sane size: the exact slow path is rare.
    const product = into * this.#slots
    let part: number
    if (product <= Number.MAX_SAFE_INTEGER) {
      part = Math.floor(product / this.#window)
    } else {
      mulDivMod(into, this.#slots, this.#window)
      part = PAIR[0]!
    }
    const g = whole * this.#slots + part
    return Math.max(g, head)
  }

  /** The first microsecond of generation `g`: the least t with generation(t) ≥ g. */
  #start(g: number): number {
    const whole = Math.floor(g / this.#slots)
    const into = g - whole * this.#slots
    const product = into * this.#window
    if (product <= Number.MAX_SAFE_INTEGER) {
      const part = Math.floor(product / this.#slots)
      return whole * this.#window + (product - part * this.#slots > 0 ? part + 1 : part)
    }
    return whole * this.#window + mulDivCeil(into, this.#window, this.#slots)
  }

  #index(row: number, g: number): number {
    // Generations are integers, usually below 2^31: as int32 the remainder is an integer
    // division, where a double's is a call to fmod.
    if (g >= 0 && g <= 0x7fff_ffff) return row * this.#ring + ((g | 0) % this.#ring)
    const slot = g % this.#ring
    return row * this.#ring + (slot < 0 ? slot + this.#ring : slot)
  }

  #head(row: number): number {
    return row < 0 ? Number.NEGATIVE_INFINITY : this.#meta[2 * row]!
  }

  /** Permits counted in the window ending with `g` (never before the head). */
  #used(row: number, g: number): number {
    if (row < 0) return 0
    const head = this.#meta[2 * row]!
    const sum = this.#meta[2 * row + 1]!
    if (g === head) return sum
    if (g - head > this.#slots) return 0
    // The generations head − slots up to g − slots − 1 have left the window since head.
    let used = sum
    for (let old = head - this.#slots; old < g - this.#slots; old++) {
      used -= this.#counts[this.#index(row, old)]!
    }
    return used
  }

  /** Moves the head forward to `g`, zeroing the buckets of the generations it claims. */
  #claim(row: number, g: number): void {
    const head = this.#meta[2 * row]!
    if (g <= head) return
    let sum = this.#meta[2 * row + 1]!
    const first = Math.max(head + 1, g - this.#ring + 1)
    for (let claimed = first; claimed <= g; claimed++) {
      const i = this.#index(row, claimed)
      sum -= this.#counts[i]!
      this.#counts[i] = 0
    }
    this.#meta[2 * row] = g
    this.#meta[2 * row + 1] = sum
  }

  /** Adds `cost` to generation `g`'s bucket, saturating at the slot cap. */
  #add(row: number, g: number, cost: number): void {
    this.#claim(row, g)
    const i = this.#index(row, g)
    const count = this.#counts[i]!
    const added = Math.min(cost, this.#cap - count)
    this.#counts[i] = count + added
    this.#meta[2 * row + 1] = this.#meta[2 * row + 1]! + added
  }

  isFresh(row: number, now: number): boolean {
    const t = micros(now)
    return this.#used(row, this.#generation(t, this.#head(row))) === 0
  }

  available(row: number, now: number): number {
    const used = this.#used(row, this.#generation(micros(now), this.#head(row)))
    return used < this.#limit ? this.#limit - used : 0
  }

  take(row: number, now: number, cost: number, out?: Quota): boolean {
    const g = this.#generation(micros(now), this.#head(row))
    const allowed = this.#used(row, g) + cost <= this.#limit
    if (allowed && row >= 0) this.#add(row, g, cost)
    if (out !== undefined) this.#report(row, now, g, cost, allowed, out)
    return allowed
  }

  fits(row: number, now: number, cost: number): boolean {
    return this.wait(row, now, cost) === 0
  }

  force(row: number, now: number, cost: number): void {
    const t = micros(now)
    this.#add(row, this.#generation(t, this.#head(row)), cost)
  }

  quota(row: number, now: number, cost: number, allowed: boolean, out: Quota): void {
    this.#report(row, now, this.#generation(micros(now), this.#head(row)), cost, allowed, out)
  }

  /**
   * Times pass as the caller's `now` (ms) and waits come back in {@link WAIT}: a large
   * double passed to or returned from a call V8 did not inline is a fresh heap number.
   */
  #report(row: number, now: number, g: number, cost: number, allowed: boolean, out: Quota): void {
    const used = this.#used(row, g)
    const available = used < this.#limit ? this.#limit - used : 0
    out.available = available
    if (available < this.#limit) {
      this.#waitUs(row, now, g, used, available + 1)
      out.resetMs = WAIT[0]! / 1000
    } else {
      out.resetMs = 0
    }
    if (allowed) {
      out.retryAfterMs = 0
    } else if (cost > this.#limit) {
      out.retryAfterMs = Number.POSITIVE_INFINITY
    } else {
      this.#waitUs(row, now, g, used, cost)
      out.retryAfterMs = WAIT[0]! / 1000
    }
    out.receipt = g
  }

  wait(row: number, now: number, cost: number): number {
    if (cost > this.#limit) return Number.POSITIVE_INFINITY
    const g = this.#generation(micros(now), this.#head(row))
    this.#waitUs(row, now, g, this.#used(row, g), cost)
    return WAIT[0]! / 1000
  }

  /**
   * Microseconds until `cost` (≤ limit) fits at generation `g` with `used` counted: until
   * enough of the oldest permits have left the window.
   */
  #waitUs(row: number, now: number, g: number, used: number, cost: number): void {
    let excess = used + cost - this.#limit
    if (excess <= 0) {
      WAIT[0] = 0
      return
    }
    const t = micros(now)
    const head = this.#meta[2 * row]!
    const oldest = g - this.#slots
    // Everything counted sits in the newest slot (a busy key, or one that comes back now
    // and then): the walk below would find it there, after only empty slots.
    if (head >= oldest && this.#counts[this.#index(row, head)] === used) {
      WAIT[0] = this.#start((used >= excess ? head : g) + this.#ring) - t
      return
    }
    // Oldest first: find the generation whose expiry frees enough permits. Only the ring
    // holds counts (generations after the head have none).
    for (let old = oldest; old <= head; old++) {
      excess -= this.#counts[this.#index(row, old)]!
      if (excess <= 0) {
        WAIT[0] = this.#start(old + this.#ring) - t
        return
      }
    }
    WAIT[0] = this.#start(g + this.#ring) - t
  }

  untilFresh(row: number, now: number): number {
    const t = micros(now)
    const head = this.#head(row)
    const g = this.#generation(t, head)
    for (let newest = head; newest >= g - this.#slots; newest--) {
      if (this.#counts[this.#index(row, newest)]! > 0)
        return (this.#start(newest + this.#ring) - t) / 1000
    }
    return 0
  }

  refund(row: number, now: number, cost: number, receipt?: number): void {
    const head = this.#meta[2 * row]!
    const g = this.#generation(micros(now), head)
    const oldest = g - this.#slots
    if (receipt !== undefined) {
      // Only the slot the permits were taken in, and only while it still counts: once it
      // has left the window its permits are free anyway.
      if (receipt < oldest || receipt > head) return
      this.#uncount(row, this.#index(row, receipt), cost)
      return
    }
    // Newest first: the permits most likely to be the ones being handed back.
    let left = cost
    for (let newest = head; newest >= oldest && left > 0; newest--) {
      left -= this.#uncount(row, this.#index(row, newest), left)
    }
  }

  /** Takes up to `cost` permits off the count at `index`; returns how many. */
  #uncount(row: number, index: number, cost: number): number {
    const count = this.#counts[index]!
    const back = Math.min(count, cost)
    this.#counts[index] = count - back
    this.#meta[2 * row + 1] = this.#meta[2 * row + 1]! - back
    return back
  }

  receipt(row: number): number {
    return this.#meta[2 * row]!
  }

  /** `[head, c_0 … c_slots]`: the head generation, then the ring's counts by ring index. */
  read(row: number, into: Float64Array | number[], at = 0): void {
    into[at] = this.#meta[2 * row]!
    for (let i = 0; i < this.#ring; i++) into[at + 1 + i] = this.#counts[row * this.#ring + i]!
  }

  write(row: number, from: ArrayLike<number>, at = 0): void {
    this.#meta[2 * row] = from[at] ?? Number.NEGATIVE_INFINITY
    let sum = 0
    for (let i = 0; i < this.#ring; i++) {
      const count = from[at + 1 + i] ?? 0
      this.#counts[row * this.#ring + i] = count
      sum += count
    }
    this.#meta[2 * row + 1] = sum
  }

  /**
   * Carries the counts over. Each old slot's count moves to the new slot that leaves the
   * window first at or after the instant the old one would have (or the current slot, if
   * the new window is too short to keep it that long), so no permit stops counting earlier
   * than it did. Then the total moves by mode, with u used of the old limit L and the new
   * limit L′: proportional scales every slot, u → ceil(u·L′/L) counted newest first (a
   * debt is then paid off at the same instant: the suffix sums are what leave the window);
   * as-is shifts the total by L′ − L at the newest end (adding to the current slot, or
   * taking off the newest), never below 0; additive keeps every count, and shifts a debt
   * like as-is, so the debt (u − L) is paid at the same instant: the permits taken off
   * or added are the newest, and the older ones leave the window when they did.
   */
  carry(row: number, now: number, from: RateKernel, fromRow: number, carry: Carry): void {
    if (!(from instanceof SlidingWindowKernel)) throw carryMismatch(this.spec, from.spec)
    const t = micros(now)
    const current = this.#generation(t, Number.NEGATIVE_INFINITY)
    const state = new Array<number>(this.width).fill(0)
    state[0] = Number.NEGATIVE_INFINITY
    const oldCurrent = from.#generation(t, from.#head(fromRow))
    const used = from.#used(fromRow, oldCurrent)
    if (carry !== 'reset' && used > 0) {
      // The live old slots, newest first.
      const head = from.#meta[2 * fromRow]!
      const counts: number[] = []
      const generations: number[] = []
      for (let g = Math.min(head, oldCurrent); g >= oldCurrent - from.#slots; g--) {
        const count = from.#counts[from.#index(fromRow, g)]!
        if (count === 0) continue
        counts.push(count)
        generations.push(g)
      }
      const oldLimit = from.#limit
      const delta = this.#limit - oldLimit
      const shift = carry === 'as-is' || (carry === 'additive' && used > oldLimit) ? delta : 0
      if (carry === 'proportional') {
        let before = 0
        let sum = 0
        for (let i = 0; i < counts.length; i++) {
          sum += counts[i]!
          const scaled = mulDivCeil(sum, this.#limit, oldLimit)
          counts[i] = scaled - before
          before = scaled
        }
      } else if (shift < 0) {
        let left = -shift
        for (let i = 0; i < counts.length && left > 0; i++) {
          const off = Math.min(counts[i]!, left)
          counts[i] = counts[i]! - off
          left -= off
        }
      }
      state[0] = current
      for (let i = 0; i < counts.length; i++) {
        const expiry = from.#start(generations[i]! + from.#ring)
        const g = Math.min(
          current,
          this.#generation(expiry - 1, Number.NEGATIVE_INFINITY) + 1 - this.#ring,
        )
        this.#put(state, g, counts[i]!)
      }
      if (shift > 0) this.#put(state, current, shift)
    }
    this.write(row, state)
  }

  /** Adds `count` to generation `g` in a state laid out as `read` writes it, saturating. */
  #put(state: number[], g: number, count: number): void {
    const i = 1 + this.#index(0, g)
    state[i] = Math.min(this.#cap, state[i]! + count)
  }
}
