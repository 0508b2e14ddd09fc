/**
 * Drawing helpers for the simulations' SVG charts (docs/adaptive-concurrency.svg,
 * docs/priority-load-shedding.svg): a plot's x axis is `left + tick × step`.
 *
 * @example
 * ```ts
 * const axis = { left: 130, step: 4 }
 * polylines(axis, [1, 2, Number.NaN, 3], (v) => 100 - v, '#1098ad') // one line: a gap breaks it
 * ```
 */
export interface Axis {
  readonly left: number
  readonly step: number
}

/** Text for an SVG element: `&`, `<` and `>` escaped. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** Polylines through the finite points; a gap (nothing to show in a tick) breaks the line. */
export function polylines(
  axis: Axis,
  values: readonly number[],
  y: (v: number) => number,
  color: string,
): string[] {
  const out: string[] = []
  let points: string[] = []
  const flush = () => {
    if (points.length > 1) {
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points.join(' ')}"/>`,
      )
    }
    points = []
  }
  values.forEach((value, tick) => {
    if (Number.isFinite(value))
      points.push(`${axis.left + tick * axis.step},${y(value).toFixed(1)}`)
    else flush()
  })
  flush()
  return out
}

/** A horizontal line across `ticks` ticks at height `y`. */
export function rule(axis: Axis, y: number, ticks: number, color: string, dashed: boolean): string {
  const dash = dashed ? ' stroke-dasharray="4 3"' : ''
  return `<line x1="${axis.left}" y1="${y.toFixed(1)}" x2="${axis.left + ticks * axis.step}" y2="${y.toFixed(1)}" stroke="${color}"${dash}/>`
}

/** A label just right of a rule drawn across `ticks` ticks at height `y`. */
export function endLabel(axis: Axis, ticks: number, y: number, text: string): string {
  return `<text x="${axis.left + ticks * axis.step + 4}" y="${(y + 4).toFixed(1)}" fill="#495057">${text}</text>`
}

/** Seconds under the plots at `y`, every 10 s of ticks of `tickMs`. */
export function timeAxis(axis: Axis, y: number, ticks: number, tickMs: number): string[] {
  const out: string[] = []
  const ticksPerTenSeconds = 10_000 / tickMs
  for (let tick = 0; tick <= ticks; tick += ticksPerTenSeconds) {
    out.push(
      `<text x="${axis.left + tick * axis.step}" y="${y + 14}" text-anchor="middle" fill="#495057">${(tick * tickMs) / 1000}s</text>`,
    )
  }
  return out
}
