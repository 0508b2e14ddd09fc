-- The time of the call, read once. NOW is whole microseconds (what the kernels decide
-- on), NOW_MS milliseconds (what penalties and leases count in, as the memory store does).
-- ARGV[1] is '' in production: Redis's own clock (TIME), so application servers whose
-- clocks disagree still agree. A test's clock sends "<ms> <us>" instead (the store's
-- `clock` option); Redis's expiry does not follow that time, so under it keys are written
-- without one (TESTING): every state says itself when it is stale, expiry only collects it.
local NOW, NOW_MS, TESTING
if ARGV[1] == '' then
  local time = redis.call('TIME')
  NOW = time[1] * 1000000 + time[2]
  NOW_MS = NOW / 1000
  TESTING = false
else
  local ms, us = string.match(ARGV[1], '^(%S+) (%S+)$')
  NOW_MS, NOW, TESTING = ms + 0, us + 0, true
end
local INF = math.huge
local MAX_SAFE = 9007199254740991
local floor, ceil = math.floor, math.ceil
local spack, sunpack = struct.pack, struct.unpack
