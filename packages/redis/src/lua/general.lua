-- Every call the one-policy scripts leave out: several policies at once (all or none),
-- warm-up and concurrency policies, penalties, refunds and reads. It keeps the same state
-- as fixed-window.lua, gcra.lua and sliding-window.lua (see them for the layouts), so
-- either may serve a key.
--
-- KEYS     each policy's state, in order; then each penalty's state, in policy order
-- ARGV[1]  'take' | 'refund' | 'get'
-- ARGV[2]  permits
-- ARGV[3]  lease id (a take with a concurrency policy)
-- ARGV[4]  deadline (Redis us, 0: none): a take that reaches Redis after it takes nothing
-- ARGV[5]  number of policies, then ten per policy: kind, six numbers, then the penalty's
--          length (us, 0: none), refusals before it and window (us)
--            f  fixed window    limit, m, window us, cycle
--            s  sliding window  limit, window us, slots
--            g  GCRA            limit, window units, capacity, unit us, grace units,
--                               warm-up us (0: none)
--            c  concurrency     max, lease ttl us
--          then, for a refund, one receipt per policy ('': none)
-- Reply: {taken (1 | 0; -1: past the deadline), now us}, then per policy (not for a refund)
--   admitted, remaining, reset us, retry us (-1: never), receipt (-1: none), blocked (1 | 0)
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]
local op = ARGV[1]
local n = ARGV[2] + 0
local deadline = ARGV[4] + 0
if op == 'take' and deadline > 0 and now > deadline then return {-1, now} end
local count = ARGV[5] + 0
local floor, ceil = math.floor, math.ceil
local pack, unpack = struct.pack, struct.unpack

-- Sliding window: permits of generation g (as the state stands), and microseconds until
-- g has wholly left the window.
local function countOf(s, g)
  if g > s.head or g < s.head - s.slots then return 0 end
  local upto = s.total
  if g < s.head then upto = s.bases[(g + 1) % s.ring] end
  return upto - s.bases[g % s.ring]
end
local function leaves(s, g)
  local next = g + s.ring
  local whole = floor(next / s.slots)
  return whole * s.window + ceil((next - whole * s.slots) * s.window / s.slots) - now
end
local function writeSliding(s, keepTtl)
  local parts = {pack('<dd', s.head, s.total)}
  for j = 0, s.slots do parts[j + 2] = pack('<d', s.bases[j]) end
  if keepTtl then
    redis.call('SET', s.key, table.concat(parts), 'KEEPTTL')
  else
    redis.call('SET', s.key, table.concat(parts), 'PXAT', ceil((now + leaves(s, s.head)) / 1000))
  end
end

local function load(s, p1, p2, p3, p4, p5, p6)
  s.limit = p1
  s.capacity = p1
  if s.kind == 'f' then
    s.m, s.window = p2, p3
    s.id = floor(now / p3)
    s.base = (s.id % p4 + 1) * p2
    s.left = (s.id + 1) * p3 - now
    s.used = 0
    local v = tonumber(redis.call('GET', s.key))
    -- A value of another window is a key that outlived it: no count.
    if v and v - s.base >= 0 and v - s.base <= p1 then s.used, s.live = v - s.base, true end
  elseif s.kind == 's' then
    s.window, s.slots, s.ring = p2, p3, p3 + 1
    local q = floor(now / p2)
    local c = q * p3 + floor((now - q * p2) * p3 / p2)
    s.head, s.total, s.bases = -1, 0, {}
    local v = redis.call('GET', s.key)
    if v then
      s.head, s.total = unpack('<dd', v)
      for j = 0, p3 do s.bases[j] = unpack('<d', v, 17 + 8 * j) end
    end
    if c < s.head then c = s.head end
    s.c, s.first = c, c - p3
    s.used = 0
    if s.first <= s.head then s.used = s.total - s.bases[s.first % s.ring] end
  elseif s.kind == 'g' then
    s.window, s.capacity, s.unit, s.grace, s.warmUp = p2, p3, p4, p5, p6
    s.at = floor(now / p4)
    s.debt, s.expiry, s.created = 0, 0, now
    local v = redis.call('GET', s.key)
    if v then
      local written
      if p6 > 0 then
        s.debt, written, s.expiry, s.created = unpack('<dddd', v)
      else
        s.debt, written, s.expiry = unpack('<ddd', v)
      end
      s.live = true
      if s.at > written then
        s.debt = s.debt - p1 * (s.at - written)
        if s.debt < 0 then s.debt = 0 end
      end
    end
    s.age = now - s.created
    if s.age < 0 then s.age = 0 end
    -- Warm-up: the interval shrinks linearly from 3T to T over warmUp, by the key's age;
    -- the burst budget is at least one interval, so capacity 1 still admits one when cold.
    s.interval = p2
    if p6 > 0 and s.age < p6 then s.interval = 3 * p2 - floor(2 * p2 * s.age / p6) end
    s.tau = p3 * p2
    if s.tau < s.interval then s.tau = s.interval end
  else
    -- Concurrency: a sorted set of leases "<permits>:<id>" scored by their expiry.
    s.ttl = p2
    s.held, s.last = 0, now
    local v = redis.call('ZRANGEBYSCORE', s.key, string.format('(%d', now), '+inf', 'WITHSCORES')
    for j = 1, #v, 2 do
      s.held = s.held + tonumber(string.match(v[j], '^(%d+):'))
      local e = tonumber(v[j + 1])
      if e > s.last then s.last = e end
    end
  end
end

local function fits(s, k)
  if s.kind == 'g' then return s.debt + k * s.interval <= s.tau end
  if s.kind == 'c' then return s.held + k <= s.limit end
  return s.used + k <= s.limit
end

local function available(s)
  local free
  if s.kind == 'g' then
    free = floor((s.tau - s.debt) / s.interval)
  elseif s.kind == 'c' then
    free = s.limit - s.held
  else
    free = s.limit - s.used
  end
  if free < 0 then return 0 end
  return free
end

local function resetOf(s)
  if s.kind == 'f' then
    if s.used > 0 then return s.left end
  elseif s.kind == 's' then
    local top = s.c
    if s.head < top then top = s.head end
    for g = top, s.first, -1 do
      if countOf(s, g) > 0 then return leaves(s, g) end
    end
  elseif s.kind == 'g' then
    local reset = (s.at + ceil(s.debt / s.limit)) * s.unit - now
    if reset > 0 then return reset end
  end
  return 0
end

-- Warm-up: how far k permits overshoot the budget dt us from now, with the interval
-- taken as exactly linear in age.
local function warmExcess(s, k, dt)
  local debt = s.debt - s.limit * dt / s.unit
  if debt < 0 then debt = 0 end
  local age = s.age + dt
  local interval = s.window
  if age < s.warmUp then interval = 3 * s.window - 2 * s.window * age / s.warmUp end
  local tau = s.capacity * s.window
  if tau < interval then tau = interval end
  return debt + k * interval - tau
end

local function retryOf(s, k)
  if k > s.capacity then return -1 end
  if s.kind == 'f' then return s.left end
  if s.kind == 'c' then return 0 end
  if s.kind == 's' then
    local excess = s.used + k - s.limit
    local top = s.c
    if s.head < top then top = s.head end
    for g = s.first, top do
      excess = excess - countOf(s, g)
      if excess <= 0 then return leaves(s, g) end
    end
    return leaves(s, s.c)
  end
  if s.warmUp == 0 then
    local wait = ceil((s.debt + k * s.interval - s.tau) / s.limit) * s.unit
    if wait < 0 then return 0 end
    return wait
  end
  -- The excess falls piecewise linearly, with kinks where the debt is gone, where the
  -- interval reaches capacity x T and where warm-up ends (as in core): walk the pieces and
  -- solve the first that reaches zero. The margin covers the whole units the decision
  -- itself rounds to.
  local margin = (1 + ceil(k / s.limit)) * s.unit
  local kinks = {s.debt / s.limit * s.unit, s.warmUp - s.age}
  if s.capacity < 3 then kinks[3] = s.warmUp * (3 - s.capacity) / 2 - s.age end
  table.sort(kinks)
  local from, excess = 0, warmExcess(s, k, 0)
  for _, to in ipairs(kinks) do
    if to > from then
      local after = warmExcess(s, k, to)
      if after <= 0 then return ceil(from + excess * (to - from) / (excess - after)) + margin end
      from, excess = to, after
    end
  end
  return ceil(from) + margin
end

local function writeGcra(s, refund)
  if s.warmUp > 0 then
    -- A warm-up key's state is also its age, and a recreated key starts cold. It is kept
    -- until warm-up is over, and then for one more warm-up period of idleness: a client
    -- (and the downstream it calls) idle that long starts cold again.
    local stop = (s.at + ceil(s.debt / s.limit)) * s.unit
    if s.created + s.warmUp > stop then stop = s.created + s.warmUp end
    stop = stop + s.warmUp
    local value = pack('<dddd', s.debt, s.at, stop, s.created)
    if refund then
      redis.call('SET', s.key, value, 'KEEPTTL')
    else
      redis.call('SET', s.key, value, 'PXAT', ceil(stop / 1000))
    end
    return
  end
  local paid = s.at + ceil(s.debt / s.limit)
  if refund and s.debt == 0 then
    redis.call('DEL', s.key)
  elseif paid <= s.expiry then
    redis.call('SETRANGE', s.key, 0, pack('<dd', s.debt, s.at))
  else
    s.expiry = paid + s.grace
    redis.call('SET', s.key, pack('<ddd', s.debt, s.at, s.expiry), 'PXAT',
      ceil(s.expiry * s.unit / 1000))
  end
end

local function take(s, k)
  if s.kind == 'f' then
    if s.live then
      redis.call('INCRBY', s.key, k)
    else
      redis.call('SET', s.key, s.base + k, 'PXAT', ceil((now + s.left) / 1000) - 1)
    end
    s.used = s.used + k
    s.receipt = s.id
  elseif s.kind == 's' then
    local rewrite = s.c > s.head
    if rewrite then
      -- A new head generation: the ones in between had no permits, so their base (and
      -- this one's) is the total so far. Anything older than the ring starts over.
      local from = s.head + 1
      if s.head < 0 or s.c - s.head >= s.ring then from = s.c - s.slots end
      for g = from, s.c do s.bases[g % s.ring] = s.total end
      s.head = s.c
    end
    s.total = s.total + k
    s.used = s.used + k
    if rewrite then
      writeSliding(s, false)
    else
      redis.call('SETRANGE', s.key, 8, pack('<d', s.total))
    end
    s.receipt = s.c
  elseif s.kind == 'g' then
    s.debt = s.debt + k * s.interval
    writeGcra(s, false)
    s.receipt = floor(s.at * s.unit + s.debt * s.unit / s.limit)
  else
    -- A take replayed by the client after its reply was lost finds its own lease: NX
    -- keeps it one lease.
    redis.call('ZREMRANGEBYSCORE', s.key, '-inf', now)
    local e = now + s.ttl
    redis.call('ZADD', s.key, 'NX', e, string.format('%d:%s', k, ARGV[3]))
    s.held = s.held + k
    if e > s.last then s.last = e end
    redis.call('PEXPIREAT', s.key, ceil(s.last / 1000))
  end
end

-- Gives back k permits, or, with a receipt, only those of the take it names that still
-- count (as the core limiters' refund(permits, receipt)).
local function refund(s, k, receipt)
  if s.kind == 'f' then
    if s.used == 0 or (receipt and receipt ~= s.id) then return end
    if k >= s.used then
      redis.call('DEL', s.key)
    else
      redis.call('DECRBY', s.key, k)
    end
  elseif s.kind == 's' then
    local top = s.c
    if s.head < top then top = s.head end
    local backs, left = {}, k
    if receipt then
      if receipt >= s.first and receipt <= top then
        local cnt = countOf(s, receipt)
        if cnt > left then cnt = left end
        backs[receipt] = cnt
      end
    else
      -- Newest first: the permits most likely to be the ones being handed back.
      for g = top, s.first, -1 do
        local cnt = countOf(s, g)
        if cnt > left then cnt = left end
        backs[g] = cnt
        left = left - cnt
      end
    end
    local removed = 0
    for g = s.first, s.head do
      local j = g % s.ring
      s.bases[j] = s.bases[j] - removed
      removed = removed + (backs[g] or 0)
    end
    if removed == 0 then return end
    s.total = s.total - removed
    s.used = s.used - removed
    if s.used == 0 then
      redis.call('DEL', s.key)
    else
      writeSliding(s, true)
    end
  elseif s.kind == 'g' then
    if not s.live then return end
    local back = k * s.interval
    if receipt then
      -- The receipt is the arrival time just after the take: of its permits, only the
      -- debt not yet paid by now still counts.
      local owed = floor((receipt - now) * s.limit / s.unit)
      if owed < back then back = owed end
    end
    if back <= 0 then return end
    s.debt = s.debt - back
    if s.debt < 0 then s.debt = 0 end
    writeGcra(s, true)
  end
end

-- Penalty: the `after`th refusal within one window of the first starts a block.
local function strike(s)
  local strikes, since, blockedUntil = s.strikes, s.since, s.blockedUntil
  if strikes == nil or now - since >= s.strikeWindow then strikes, since, blockedUntil = 0, now, 0 end
  strikes = strikes + 1
  if strikes >= s.after then strikes, since, blockedUntil = 0, now, now + s.blockFor end
  -- Kept while it can still matter: until the block ends or the strikes' window closes.
  local stop = since + s.strikeWindow
  if blockedUntil > stop then stop = blockedUntil end
  redis.call('SET', s.penaltyKey, pack('<ddd', strikes, since, blockedUntil), 'PXAT', ceil(stop / 1000))
  if blockedUntil > now then s.blocked = s.blockFor end
end

local states = {}
local admitted = true
local penalty = count
for i = 1, count do
  local a = 5 + (i - 1) * 10
  local s = {kind = ARGV[a + 1], key = KEYS[i], blocked = 0}
  load(s, ARGV[a + 2] + 0, ARGV[a + 3] + 0, ARGV[a + 4] + 0, ARGV[a + 5] + 0,
    ARGV[a + 6] + 0, ARGV[a + 7] + 0)
  if ARGV[a + 8] ~= '0' then
    penalty = penalty + 1
    s.penaltyKey = KEYS[penalty]
    s.blockFor, s.after, s.strikeWindow = ARGV[a + 8] + 0, ARGV[a + 9] + 0, ARGV[a + 10] + 0
    local b = redis.call('GET', s.penaltyKey)
    if b then
      s.strikes, s.since, s.blockedUntil = unpack('<ddd', b)
      if s.blockedUntil > now then s.blocked = s.blockedUntil - now end
    end
  end
  s.fits = fits(s, n)
  s.admits = s.blocked == 0 and s.fits
  if not s.admits then admitted = false end
  states[i] = s
end

if op == 'refund' then
  for i, s in ipairs(states) do
    local receipt = ARGV[5 + count * 10 + i]
    if receipt == '' then receipt = nil else receipt = receipt + 0 end
    refund(s, n, receipt)
  end
  return {0, now}
end

local taken = op == 'take' and admitted
if taken then
  for _, s in ipairs(states) do take(s, n) end
elseif op == 'take' then
  -- Requests during a block neither count nor extend it.
  for _, s in ipairs(states) do
    if s.penaltyKey and not s.admits and s.blocked == 0 then strike(s) end
  end
end

local reply = {0, now}
if taken then reply[1] = 1 end
for _, s in ipairs(states) do
  local retry = 0
  if not taken and not s.fits then retry = retryOf(s, n) end
  local reset = resetOf(s)
  local remaining = available(s)
  local blocked = 0
  if s.blocked > 0 then
    blocked, remaining = 1, 0
    if s.blocked > reset then reset = s.blocked end
    if retry >= 0 and s.blocked > retry then retry = s.blocked end
  end
  local admits = 0
  if s.admits then admits = 1 end
  reply[#reply + 1] = admits
  reply[#reply + 1] = remaining
  reply[#reply + 1] = reset
  reply[#reply + 1] = retry
  reply[#reply + 1] = s.receipt or -1
  reply[#reply + 1] = blocked
end
return reply
