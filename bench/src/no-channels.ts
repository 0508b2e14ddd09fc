/**
 * Preloaded (`--import`) by the child of the "no diagnostics channels" engine contender:
 * without `process.getBuiltinModule`, `@sluice/http` finds no `node:diagnostics_channel`
 * and its channels are plain objects that nobody can subscribe to. Comparing that engine
 * with the real one, round by round, is what the events cost while nobody listens.
 */
delete (process as { getBuiltinModule?: unknown }).getBuiltinModule
