import { type Series, TICK_MS, TICKS } from './simulate'

const BLOCKS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█']

/** Two text rows per series, so a bar has 16 heights: row 1 is the upper half. */
function bars(values: readonly number[], max: number, row: 0 | 1): string {
  let line = ''
  for (const value of values) {
    const level = value <= 0 ? 0 : Math.max(1, Math.round((value / max) * 2 * BLOCKS.length))
    const inRow = row === 1 ? level - BLOCKS.length : Math.min(level, BLOCKS.length)
    line += inRow <= 0 ? ' ' : (BLOCKS[inRow - 1] ?? ' ')
  }
  return line
}

function axis(indent: number): string {
  let marks = ''
  for (let tick = 0; tick < TICKS; tick++) {
    marks += (tick * TICK_MS) % 1000 === 0 ? '|' : ' '
  }
  let labels = ''
  for (let tick = 0; tick < TICKS; tick += 10) labels += `${(tick * TICK_MS) / 1000}s`.padEnd(10)
  return `${' '.repeat(indent)}${marks}\n${' '.repeat(indent)}${labels.trimEnd()}`
}

/**
 * The six runs as text charts: one column per 100 ms tick, bar height proportional to
 * the count, offered traffic above and what the limiter let through below.
 */
export function renderText(series: readonly Series[], color: boolean): string {
  const max = Math.max(...series.flatMap((s) => [...s.offered, ...s.admitted]))
  const paint = (code: number, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text)
  const lines: string[] = []
  for (const s of series) {
    const offered = s.offered.reduce((a, b) => a + b, 0)
    const summary =
      s.measure === 'admitted'
        ? `${s.admitted.reduce((a, b) => a + b, 0)} of ${offered} admitted`
        : `peak ${Math.max(...s.admitted)} in flight`
    lines.push(`${paint(1, s.algorithm.padEnd(15))}${s.caption} (${summary})`)
    lines.push(`  ${''.padEnd(11)}${paint(90, bars(s.offered, max, 1))}`)
    lines.push(`  ${'offered'.padEnd(11)}${paint(90, bars(s.offered, max, 0))}`)
    lines.push(`  ${''.padEnd(11)}${paint(36, bars(s.admitted, max, 1))}`)
    lines.push(`  ${s.measure.padEnd(11)}${paint(36, bars(s.admitted, max, 0))}`)
  }
  lines.push(axis(13))
  return lines.join('\n')
}

const PANEL_H = 90
const BAR_W = 10
const LEFT = 130
const TOP = 30

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** The same charts as an SVG document (small multiples, one panel per limiter). */
export function renderSvg(series: readonly Series[]): string {
  const max = Math.max(...series.flatMap((s) => [...s.offered, ...s.admitted]))
  const width = LEFT + TICKS * BAR_W + 20
  const height = TOP + series.length * PANEL_H + 30
  const scale = (PANEL_H - 34) / max
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    '<title>Six sluice limiters, 10 per second each, under the same bursty traffic</title>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="18" font-size="13" font-weight="bold">Six limiters, 10 per second each, under the same bursty traffic (100 ms ticks)</text>`,
  ]
  series.forEach((s, index) => {
    const base = TOP + index * PANEL_H + PANEL_H - 18
    out.push(`<g>`)
    out.push(
      `<text x="8" y="${base - 30}" font-weight="bold">${escapeXml(s.algorithm)}</text>`,
      `<text x="8" y="${base - 14}" fill="#0b7285">${escapeXml(s.measure)}</text>`,
      `<text x="${LEFT}" y="${base - PANEL_H + 30}" fill="#495057">${escapeXml(s.caption)}</text>`,
    )
    for (let tick = 0; tick < TICKS; tick++) {
      const x = LEFT + tick * BAR_W
      const offered = (s.offered[tick] ?? 0) * scale
      const admitted = (s.admitted[tick] ?? 0) * scale
      if (offered > 0) {
        out.push(
          `<rect x="${x}" y="${(base - offered).toFixed(1)}" width="${BAR_W - 1}" height="${offered.toFixed(1)}" fill="#dee2e6"/>`,
        )
      }
      if (admitted > 0) {
        out.push(
          `<rect x="${x + 2}" y="${(base - admitted).toFixed(1)}" width="${BAR_W - 5}" height="${admitted.toFixed(1)}" fill="#1098ad"/>`,
        )
      }
    }
    out.push(
      `<line x1="${LEFT}" y1="${base}" x2="${LEFT + TICKS * BAR_W}" y2="${base}" stroke="#868e96"/>`,
    )
    out.push(`</g>`)
  })
  const axisY = TOP + series.length * PANEL_H - 4
  for (let tick = 0; tick <= TICKS; tick += 10) {
    const x = LEFT + tick * BAR_W
    out.push(
      `<text x="${x}" y="${axisY + 14}" text-anchor="middle" fill="#495057">${(tick * TICK_MS) / 1000}s</text>`,
    )
  }
  out.push(
    `<text x="${width - 20}" y="${height - 6}" text-anchor="end" fill="#495057">grey: offered · blue: admitted (bulkhead: in flight)</text>`,
    '</svg>',
    '',
  )
  return out.join('\n')
}
