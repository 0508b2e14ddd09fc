/**
 * Keys to rows, least recently used first out: the index of one policy's table in the
 * memory store. A row is a number the table's owner keeps the key's state under (in typed
 * arrays). Recency is a doubly linked list threaded through two `Int32Array`s, so marking
 * a key used, inserting one and evicting one allocate nothing; the arrays (and the
 * owner's, through `grow`) start small and double as keys arrive, up to `max` rows.
 *
 * @example
 * ```ts
 * const index = new KeyIndex(100_000, (rows) => state.resize(rows))
 * let row = index.find(key)
 * if (row === -1) row = index.insert(key)
 * else index.touch(row)
 * ```
 */
export class KeyIndex {
  readonly #rows = new Map<string, number>()
  #keys: (string | undefined)[] = []
  /** Per row, the next more recently used row (-1 for the newest). */
  #newer = new Int32Array(0)
  /** Per row, the next less recently used row (-1 for the oldest); links free rows too. */
  #older = new Int32Array(0)
  #newest = -1
  #oldest = -1
  /** Rows given back by `remove`, linked through `#older`. */
  #free = -1
  /** Rows handed out so far: the next new row. */
  #used = 0
  #capacity = 0
  readonly #max: number
  readonly #grow: (rows: number) => void

  /**
   * @param max Most keys held; inserting one more evicts the least recently used.
   * @param grow Called with the new number of rows whenever they grow, before any is used.
   */
  constructor(max: number, grow: (rows: number) => void) {
    this.#max = max
    this.#grow = grow
  }

  /** Keys held. */
  get size(): number {
    return this.#rows.size
  }

  /** The key's row, or -1. Leaves the order as it is. */
  find(key: string): number {
    return this.#rows.get(key) ?? -1
  }

  /** The key held at `row`. */
  keyAt(row: number): string | undefined {
    return this.#keys[row]
  }

  /** Marks `row` the most recently used. */
  touch(row: number): void {
    if (row === this.#newest) return
    this.#unlink(row)
    this.#linkNewest(row)
  }

  /**
   * A row for `key`, which must not be held, as the most recently used: a row given back
   * earlier, a new one, or, with `max` keys held, the row of the least recently used key,
   * which that key loses.
   */
  insert(key: string): number {
    let row: number
    if (this.#rows.size >= this.#max) {
      row = this.#oldest
      this.#rows.delete(this.#keys[row] as string)
      this.#unlink(row)
    } else if (this.#free !== -1) {
      row = this.#free
      this.#free = this.#older[row] as number
    } else {
      row = this.#used++
      if (row >= this.#capacity) this.#growTo(row + 1)
    }
    this.#keys[row] = key
    this.#rows.set(key, row)
    this.#linkNewest(row)
    return row
  }

  /** Forgets the key held at `row`; the row can be handed out again. */
  remove(row: number): void {
    this.#rows.delete(this.#keys[row] as string)
    this.#keys[row] = undefined
    this.#unlink(row)
    this.#older[row] = this.#free
    this.#free = row
  }

  /** Forgets the least recently used key; false when none is held. */
  evictOldest(): boolean {
    if (this.#oldest === -1) return false
    this.remove(this.#oldest)
    return true
  }

  /** Forgets `key`, if held. */
  delete(key: string): void {
    const row = this.find(key)
    if (row !== -1) this.remove(row)
  }

  #unlink(row: number): void {
    const newer = this.#newer[row] as number
    const older = this.#older[row] as number
    if (newer === -1) this.#newest = older
    else this.#older[newer] = older
    if (older === -1) this.#oldest = newer
    else this.#newer[older] = newer
  }

  #linkNewest(row: number): void {
    const newest = this.#newest
    this.#older[row] = newest
    this.#newer[row] = -1
    if (newest === -1) this.#oldest = row
    else this.#newer[newest] = row
    this.#newest = row
  }

  #growTo(rows: number): void {
    const capacity = Math.min(this.#max, Math.max(8, this.#capacity * 2, rows))
    const newer = new Int32Array(capacity)
    newer.set(this.#newer)
    this.#newer = newer
    const older = new Int32Array(capacity)
    older.set(this.#older)
    this.#older = older
    const keys = new Array<string | undefined>(capacity)
    for (let i = 0; i < this.#used - 1; i++) keys[i] = this.#keys[i]
    this.#keys = keys
    this.#capacity = capacity
    this.#grow(capacity)
  }
}
