import { createHash } from 'node:crypto'

/**
 * Every decision of the Redis store: one script, run with EVALSHA, that loads the state of
 * all of a request's policies for one client key, decides, and takes from all or none.
 *
 * Protocol (kept in step with `encodePolicy` in policies.ts and `parseReply` in redis-store.ts):
 * - KEYS[i]: the state of policy i. All keys of one call share one hash tag (one Cluster slot).
 * - ARGV[1]: `take` | `refund` | `get`; ARGV[2]: permits; ARGV[3]: lease id for concurrency.
 * - ARGV[4 + 6(i-1) ...]: policy i as a kind letter and five integers:
 *     g (GCRA: token bucket, leaky bucket, warm-up)  limit, window (units), capacity,
 *                                                    warm-up µs (0: none), unit µs
 *     f (fixed window)                               limit, window µs
 *     s (sliding window)                             limit, window µs, slots
 *     c (concurrency)                                max, lease ttl µs
 * - Reply (all strings): taken (1|0), then per policy: allowed (1|0), remaining,
 *   reset µs, retry µs (-1: never).
 */
export const SCRIPT = `
-- Time is Redis's own clock, so application servers' clocks may disagree. In integer
-- microseconds it is about 1.7e15: exact in a double (2^53 is about 9e15).
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local op = ARGV[1]
local permits = tonumber(ARGV[2])
local lease = ARGV[3]
local floor, ceil = math.floor, math.ceil

-- Lua 5.1's tostring keeps 14 significant digits; timestamps need 16.
local function num(x)
  return string.format('%.0f', x)
end

-- Keys live exactly as long as their state differs from fresh.
local function expire(key, us)
  if us > 0 then
    redis.call('PEXPIRE', key, num(ceil(us / 1000)))
  else
    redis.call('DEL', key)
  end
end

-- GCRA. The state is the debt: how far the theoretical arrival time (TAT) runs ahead of
-- the time it was written, in time units (1 µs, or coarser when capacity x window would
-- not fit in 2^53) scaled by limit. Scaled, one interval T = window / limit is the
-- integer window, the tolerance capacity x T is capacity x window, and each unit of time
-- drains limit: every quantity is an integer, so 3 per second admits exactly 3 from a
-- full bucket, not 2 after a rounding error.
local gcra = {}
function gcra.load(key, limit, window, capacity, warmUp, unit)
  local v = redis.call('HMGET', key, 'd', 'u', 'c')
  -- Truncated to whole units, so the drained units telescope from write to write.
  local t = floor(now / unit) * unit
  local debt = tonumber(v[1]) or 0
  local written = tonumber(v[2]) or t
  local created = tonumber(v[3]) or now
  -- A Redis clock that stepped backwards drains nothing instead of refilling.
  if t > written then
    debt = debt - limit * floor((t - written) / unit)
    if debt < 0 then debt = 0 end
  end
  local age = now - created
  if age < 0 then age = 0 end
  -- Warm-up: the interval shrinks linearly from 3T to T over warmUp, by the key's age.
  local interval = window
  if warmUp > 0 and age < warmUp then
    interval = 3 * window - floor(2 * window * age / warmUp)
  end
  -- The burst budget is at least one interval, so capacity 1 still admits one when cold.
  local tau = capacity * window
  if tau < interval then tau = interval end
  return { key = key, exists = v[2] ~= false, limit = limit, window = window,
    capacity = capacity, warmUp = warmUp, unit = unit, t = t, debt = debt,
    created = created, age = age, interval = interval, tau = tau }
end
function gcra.fits(s, n)
  return s.debt + n * s.interval <= s.tau
end
function gcra.remaining(s)
  local r = floor((s.tau - s.debt) / s.interval)
  if r < 0 then return 0 end
  return r
end
function gcra.reset(s)
  return ceil(s.debt / s.limit) * s.unit
end
-- Warm-up: how far n permits overshoot the budget dt microseconds from now, with the
-- interval taken as exactly linear in age.
local function warmExcess(s, n, dt)
  local debt = s.debt - s.limit * dt / s.unit
  if debt < 0 then debt = 0 end
  local age = s.age + dt
  local interval = s.window
  if age < s.warmUp then interval = 3 * s.window - 2 * s.window * age / s.warmUp end
  local tau = s.capacity * s.window
  if tau < interval then tau = interval end
  return debt + n * interval - tau
end
function gcra.retry(s, n)
  if n > s.capacity then return -1 end
  if s.warmUp == 0 then
    local wait = ceil((s.debt + n * s.interval - s.tau) / s.limit) * s.unit
    if wait < 0 then return 0 end
    return wait
  end
  -- The excess falls piecewise linearly, with kinks where the debt is gone, where the
  -- interval reaches capacity x T and where warm-up ends (as in core): walk the pieces and
  -- solve the first that reaches zero. The margin covers the whole units the decision
  -- itself rounds to.
  local margin = (1 + ceil(n / s.limit)) * s.unit
  local kinks = { s.debt / s.limit * s.unit, s.warmUp - s.age }
  if s.capacity < 3 then kinks[3] = s.warmUp * (3 - s.capacity) / 2 - s.age end
  table.sort(kinks)
  local from, excess = 0, warmExcess(s, n, 0)
  for _, to in ipairs(kinks) do
    if to > from then
      local after = warmExcess(s, n, to)
      if after <= 0 then
        return ceil(from + excess * (to - from) / (excess - after)) + margin
      end
      from, excess = to, after
    end
  end
  return ceil(from) + margin
end
function gcra.write(s)
  local live = gcra.reset(s)
  -- A warm-up key's state is also its age, and a recreated key starts cold. It is kept
  -- until warm-up is over, and then for one more warm-up period of idleness: a client
  -- (and the downstream it calls) idle that long starts cold again.
  if s.warmUp > 0 then
    local warm = s.created + s.warmUp - now
    if warm > live then live = warm end
    live = live + s.warmUp
  end
  if live <= 0 then
    redis.call('DEL', s.key)
    return
  end
  if s.warmUp > 0 then
    redis.call('HSET', s.key, 'd', num(s.debt), 'u', num(s.t), 'c', num(s.created))
  else
    redis.call('HSET', s.key, 'd', num(s.debt), 'u', num(s.t))
  end
  expire(s.key, live)
end
function gcra.take(s, n)
  s.debt = s.debt + n * s.interval
  gcra.write(s)
end
function gcra.refund(s, n)
  if not s.exists then return end
  s.debt = s.debt - n * s.interval
  if s.debt < 0 then s.debt = 0 end
  gcra.write(s)
end

-- Fixed window: windows aligned to Redis's clock zero (the Unix epoch), one count each.
local fixed = {}
function fixed.load(key, limit, window)
  local v = redis.call('HMGET', key, 'w', 'n')
  local id = floor(now / window)
  local count = 0
  if tonumber(v[1]) == id then count = tonumber(v[2]) or 0 end
  return { key = key, limit = limit, id = id, count = count, left = (id + 1) * window - now }
end
function fixed.fits(s, n)
  return s.count + n <= s.limit
end
function fixed.remaining(s)
  return s.limit - s.count
end
function fixed.reset(s)
  if s.count > 0 then return s.left end
  return 0
end
function fixed.retry(s, n)
  if n > s.limit then return -1 end
  return s.left
end
function fixed.take(s, n)
  s.count = s.count + n
  redis.call('HSET', s.key, 'w', num(s.id), 'n', num(s.count))
  expire(s.key, s.left)
end
function fixed.refund(s, n)
  if s.count == 0 then return end
  s.count = s.count - n
  if s.count < 0 then s.count = 0 end
  if s.count == 0 then
    redis.call('DEL', s.key)
  else
    redis.call('HSET', s.key, 'n', num(s.count))
  end
end

-- Sliding window: one hash field per slot generation (floor(now / slot length)), holding
-- its count. A permit counts until its slot has wholly left the window, so the current
-- generation and the 'slots' before it are summed (at most limit in any rolling window,
-- precision one slot, as in core); older generations are deleted on write.
local sliding = {}
function sliding.load(key, limit, window, slots)
  local current = floor(now * slots / window)
  local v = redis.call('HGETALL', key)
  local gens, stale, sum = {}, {}, 0
  for j = 1, #v, 2 do
    local g, c = tonumber(v[j]), tonumber(v[j + 1])
    if g ~= nil and c ~= nil and c > 0 and g >= current - slots then
      gens[#gens + 1] = { g = g, c = c }
      sum = sum + c
    else
      stale[#stale + 1] = v[j]
    end
  end
  table.sort(gens, function(a, b) return a.g < b.g end)
  return { key = key, limit = limit, window = window, slots = slots, current = current,
    gens = gens, stale = stale, sum = sum }
end
-- Microseconds until generation g has wholly left the window.
local function slotEnd(s, g)
  return ceil((g + s.slots + 1) * s.window / s.slots - now)
end
function sliding.fits(s, n)
  return s.sum + n <= s.limit
end
function sliding.remaining(s)
  return s.limit - s.sum
end
function sliding.reset(s)
  if #s.gens == 0 then return 0 end
  return slotEnd(s, s.gens[#s.gens].g)
end
function sliding.retry(s, n)
  if n > s.limit then return -1 end
  local freed = 0
  for _, e in ipairs(s.gens) do
    freed = freed + e.c
    if s.sum - freed + n <= s.limit then return slotEnd(s, e.g) end
  end
  return 0
end
function sliding.write(s)
  if #s.stale > 0 then redis.call('HDEL', s.key, unpack(s.stale)) end
  if #s.gens == 0 then
    redis.call('DEL', s.key)
  else
    expire(s.key, sliding.reset(s))
  end
end
function sliding.take(s, n)
  redis.call('HINCRBY', s.key, num(s.current), n)
  s.sum = s.sum + n
  local found = false
  for _, e in ipairs(s.gens) do
    if e.g == s.current then
      e.c = e.c + n
      found = true
    end
  end
  if not found then
    s.gens[#s.gens + 1] = { g = s.current, c = n }
    table.sort(s.gens, function(a, b) return a.g < b.g end)
  end
  sliding.write(s)
end
-- Gives back the newest permits first: those are the ones the caller took last.
function sliding.refund(s, n)
  local i = #s.gens
  while n > 0 and i > 0 do
    local e = s.gens[i]
    local back = e.c
    if back > n then back = n end
    e.c = e.c - back
    n = n - back
    s.sum = s.sum - back
    if e.c == 0 then
      s.stale[#s.stale + 1] = num(e.g)
      table.remove(s.gens, i)
    else
      redis.call('HSET', s.key, num(e.g), num(e.c))
    end
    i = i - 1
  end
  sliding.write(s)
end

-- Concurrency: a sorted set of leases "<permits>:<id>" scored by their expiry, so a
-- crashed holder frees its slot once the lease expires. Expired leases are ignored on
-- every read and pruned on every take.
local concurrency = {}
function concurrency.load(key, max, ttl)
  local v = redis.call('ZRANGEBYSCORE', key, '(' .. num(now), '+inf', 'WITHSCORES')
  local held, last = 0, now
  for j = 1, #v, 2 do
    held = held + tonumber(string.match(v[j], '^(%d+):'))
    local e = tonumber(v[j + 1])
    if e > last then last = e end
  end
  return { key = key, max = max, ttl = ttl, held = held, last = last }
end
function concurrency.fits(s, n)
  return s.held + n <= s.max
end
function concurrency.remaining(s)
  return s.max - s.held
end
-- No time axis: slots come back on release. Expiry is only the bound for crashed holders.
function concurrency.reset(s)
  return 0
end
-- Unknown (0), as for the in-memory bulkhead: slots usually come back long before a
-- lease would expire, so the expiry would be a misleading Retry-After.
function concurrency.retry(s, n)
  if n > s.max then return -1 end
  return 0
end
function concurrency.take(s, n)
  redis.call('ZREMRANGEBYSCORE', s.key, '-inf', num(now))
  local e = now + s.ttl
  redis.call('ZADD', s.key, num(e), n .. ':' .. lease)
  s.held = s.held + n
  if e > s.last then s.last = e end
  expire(s.key, s.last - now)
end
function concurrency.refund(s, n)
end

local kinds = { g = gcra, f = fixed, s = sliding, c = concurrency }
local types = { g = 'hash', f = 'hash', s = 'hash', c = 'zset' }

local states, all = {}, true
for i, key in ipairs(KEYS) do
  local a = 4 + (i - 1) * 6
  local kind = ARGV[a]
  -- A key left behind by a policy of another shape under the same name starts fresh.
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= types[kind] then redis.call('DEL', key) end
  local s = kinds[kind].load(key, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),
    tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]))
  s.kind = kinds[kind]
  s.fits = s.kind.fits(s, permits)
  if not s.fits then all = false end
  states[i] = s
end

if op == 'refund' then
  for _, s in ipairs(states) do s.kind.refund(s, permits) end
  return {}
end

local taken = op == 'take' and all
if taken then
  for _, s in ipairs(states) do s.kind.take(s, permits) end
end
local reply = { taken and '1' or '0' }
for _, s in ipairs(states) do
  local retry = 0
  if not s.fits then retry = s.kind.retry(s, permits) end
  reply[#reply + 1] = s.fits and '1' or '0'
  reply[#reply + 1] = num(s.kind.remaining(s))
  reply[#reply + 1] = num(s.kind.reset(s))
  reply[#reply + 1] = num(retry)
end
return reply
`

/** SHA-1 of `SCRIPT`, as EVALSHA wants it. */
export const SCRIPT_SHA: string = createHash('sha1').update(SCRIPT).digest('hex')
