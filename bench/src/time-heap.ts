/**
 * A binary min-heap of timed events (completions, deadlines) for the discrete-event
 * simulations: the earliest comes out first; equal times in no particular order.
 *
 * @example
 * ```ts
 * const events = new TimeHeap<string>()
 * events.push(20, 'late')
 * events.push(10, 'early')
 * events.peekTime() // 10
 * events.pop()      // 'early'
 * ```
 */
export class TimeHeap<T> {
  readonly #times: number[] = []
  readonly #items: T[] = []

  get size(): number {
    return this.#times.length
  }

  peekTime(): number {
    return this.#times[0] ?? Number.POSITIVE_INFINITY
  }

  push(time: number, item: T): void {
    const times = this.#times
    const items = this.#items
    let i = times.length
    times.push(time)
    items.push(item)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (times[parent]! <= time) break
      times[i] = times[parent]!
      items[i] = items[parent]!
      i = parent
    }
    times[i] = time
    items[i] = item
  }

  pop(): T {
    const times = this.#times
    const items = this.#items
    const top = items[0]!
    const lastTime = times.pop()!
    const lastItem = items.pop()!
    const n = times.length
    if (n === 0) return top
    let i = 0
    for (;;) {
      let child = 2 * i + 1
      if (child >= n) break
      if (child + 1 < n && times[child + 1]! < times[child]!) child++
      if (times[child]! >= lastTime) break
      times[i] = times[child]!
      items[i] = items[child]!
      i = child
    }
    times[i] = lastTime
    items[i] = lastItem
    return top
  }
}
