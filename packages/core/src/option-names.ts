/**
 * Refuses option names a factory does not know: a typo (`maxLimt`) or a name from another
 * library (`maxConcurrency`) would otherwise leave the default silently in force. The
 * message suggests the intended name: `renamed` maps other libraries' names to ours, and
 * a name one or two edits away from a known or renamed one is taken for a typo of it.
 */
export function checkOptionNames(
  factory: string,
  options: object,
  known: readonly string[],
  renamed: Readonly<Record<string, string>> = {},
): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue
    const suggestion = suggest(name, known, renamed)
    const hint = suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`
    throw new TypeError(`${factory}: unknown option "${name}"${hint}`)
  }
}

function suggest(
  name: string,
  known: readonly string[],
  renamed: Readonly<Record<string, string>>,
): string | undefined {
  const direct = renamed[name]
  if (direct !== undefined) return direct
  // Two edits catch a dropped, doubled or swapped letter without matching unrelated names.
  let best: string | undefined
  let bestDistance = 3
  for (const candidate of [...known, ...Object.keys(renamed)]) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = renamed[candidate] ?? candidate
      bestDistance = distance
    }
  }
  return best
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(
        Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution),
      )
    }
    previous = current
  }
  return previous[b.length] as number
}
