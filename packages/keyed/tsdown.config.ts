import { defineConfig } from 'tsdown'

const common = {
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  target: 'node20',
  external: ['vitest', 'fast-check'],
} as const

// The test kit is built on its own: bundled with the other entries, the CommonJS build
// put the module-interop helper its fast-check import needs in the kit's chunk, and every
// entry then required that chunk, and vitest with it.
export default defineConfig([
  { ...common, entry: { index: 'src/index.ts', 'store-kit': 'src/store-kit.ts' }, clean: true },
  { ...common, entry: { testing: 'src/testing/index.ts' }, clean: false },
])
