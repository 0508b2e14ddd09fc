import { Session } from 'node:inspector/promises'

/** A V8 heap snapshot, as `HeapProfiler.takeHeapSnapshot` streams it. */
interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } }
  nodes: number[]
  strings: string[]
}

/** Retained bytes and objects per key of one kind of heap object. */
export interface HeapLine {
  readonly kind: string
  readonly bytesPerKey: number
  readonly objectsPerKey: number
}

/** Bytes and objects on the heap per kind of object. */
export type HeapTally = ReadonlyMap<string, { readonly bytes: number; readonly count: number }>

/**
 * Takes a heap snapshot of this process (V8 collects garbage first) and tallies it by
 * kind of object. Only the tally is kept: a parsed snapshot left on the heap would show
 * up in the next one.
 *
 * @example
 * ```ts
 * const before = await heapTally()
 * ```
 */
export async function heapTally(): Promise<HeapTally> {
  return tally(await takeHeapSnapshot())
}

async function takeHeapSnapshot(): Promise<HeapSnapshot> {
  const session = new Session()
  session.connect()
  const chunks: string[] = []
  session.on('HeapProfiler.addHeapSnapshotChunk', (message) => {
    chunks.push(message.params.chunk)
  })
  await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false })
  session.disconnect()
  return JSON.parse(chunks.join('')) as HeapSnapshot
}

/** Self size and count per kind: objects by constructor, the rest by V8's node type. */
function tally(snapshot: HeapSnapshot): HeapTally {
  const fields = snapshot.snapshot.meta.node_fields
  const types = snapshot.snapshot.meta.node_types[0]
  const width = fields.length
  const typeAt = fields.indexOf('type')
  const nameAt = fields.indexOf('name')
  const sizeAt = fields.indexOf('self_size')
  const kinds = new Map<string, { bytes: number; count: number }>()
  const { nodes, strings } = snapshot
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]!] ?? 'unknown'
    const name = strings[nodes[i + nameAt]!] ?? ''
    // Strings are named by their content, numbers by their value: group them by type.
    const kind =
      type === 'object' || type === 'closure' || type === 'native' || type === 'hidden'
        ? `${type === 'object' ? '' : `(${type}) `}${name}`
        : `(${type})${type === 'array' ? ` ${name}` : ''}`
    const entry = kinds.get(kind) ?? { bytes: 0, count: 0 }
    entry.bytes += nodes[i + sizeAt]!
    entry.count++
    kinds.set(kind, entry)
  }
  return kinds
}

/**
 * What `keys` keys added to the heap between two snapshots, per key and per kind of
 * object (by constructor for objects, by V8's node type otherwise), largest first: the
 * evidence for where a store's bytes per key go.
 *
 * @example
 * ```ts
 * heapBreakdown(before, await heapTally(), 20_000)[0] // { kind: 'Map', bytesPerKey: 60.1, objectsPerKey: 1 }
 * ```
 */
export function heapBreakdown(
  before: HeapTally,
  after: HeapTally,
  keys: number,
  minBytesPerKey = 0.5,
): HeapLine[] {
  const lines: HeapLine[] = []
  for (const [kind, now] of after) {
    const old = before.get(kind) ?? { bytes: 0, count: 0 }
    const bytesPerKey = (now.bytes - old.bytes) / keys
    if (Math.abs(bytesPerKey) < minBytesPerKey) continue
    lines.push({ kind, bytesPerKey, objectsPerKey: (now.count - old.count) / keys })
  }
  return lines.sort((a, b) => b.bytesPerKey - a.bytesPerKey)
}
