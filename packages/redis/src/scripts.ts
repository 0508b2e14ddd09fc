// Generated from src/lua/*.lua by `pnpm --filter @sluice/redis generate`: edit the .lua
// files and run it. test/scripts.test.ts fails while this file is out of date.

/** A Lua script of the store, and the SHA-1 that EVALSHA names it by. */
export interface Script {
  readonly name: string
  readonly sha: string
  readonly source: string
}

/** src/lua/fixed-window.lua */
export const FIXED_WINDOW: Script = {
  name: 'fixed-window',
  sha: '003098e839e0d08b0afe3fdacec315f4fb3513b0',
  source: `-- One take from one fixed-window policy without a penalty: the common case, in the fewest
-- Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/fixed-window.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), window (ms), carry mode
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
-- The time of the call, read once. NOW is whole microseconds (what the kernels decide
-- on), NOW_MS milliseconds (what penalties and leases count in, as the memory store does).
-- ARGV[1] is '' in production: Redis's own clock (TIME), so application servers whose
-- clocks disagree still agree. A test's clock sends "<ms> <us>" instead (the store's
-- \`clock\` option); Redis's expiry does not follow that time, so under it keys are written
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
local key = KEYS[1]
local cost, limit, window = ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
local v = redis.call('GET', key)
-- The spec the value keeps beside its state (lib/record.lua): equal, nothing to carry.
local HEADER = spack('<ddddd', limit, window, 0, 0, 0)

-- A take in the key's running window, or on a key with no state: inline, as
-- lib/fixed-window.lua and lib/record.lua would decide and write it (making the port's
-- functions is most of a script's cost). Anything else, below, through the port.
do
  local id = floor(NOW / window)
  local left = (id + 1) * window - NOW
  if v then
    if #v == 64 and string.sub(v, 9, 48) == HEADER then
      local counted, count = sunpack('<dd', v, 49)
      if counted == id then
        if count + cost <= limit then
          count = count + cost
          -- The key already expires when its window ends: only the count changes.
          redis.call('SETRANGE', key, '56', spack('<d', count))
          return {1, limit - count, left, 0, id, 0}
        end
        local available = 0
        if count < limit then available = limit - count end
        local reset, retry = 0, left
        if available < limit then reset = left end
        if cost > limit then retry = -1 end
        return {0, available, reset, retry, -1, 0}
      end
    end
  elseif cost <= limit then
    if TESTING then
      redis.call('SET', key, spack('<d', INF) .. HEADER .. spack('<dd', id, cost))
    else
      local expiry = ceil((id + 1) * window / 1000)
      redis.call('SET', key, spack('<d', expiry) .. HEADER .. spack('<dd', id, cost), 'PXAT', string.format('%d', expiry))
    end
    return {1, limit - cost, left, 0, id, 0}
  end
end

-- The port's functions this script needs (see lib/gcra.lua).
local NEEDS = {f = true}
-- Integer arithmetic past 2^53 in Lua's doubles (Lua 5.1 has no integers), a port of
-- @sluice/core's exact.ts: a product of two safe integers plus a third, divided by a
-- fourth. Limits and windows may each be as large as 2^53, so permits x window can pass
-- 2^53 (10^10 tokens a day is 8.64e20 tick-microseconds). A sum that fits is plain
-- doubles; a larger one is split exactly into two doubles (Dekker's product), its
-- quotient estimated in floating point and corrected by the exact remainder: the same
-- operations as exact.ts, so both land on the same numbers.
-- Veltkamp's splitter: halves of 26 bits each, whose products are exact.
local SPLITTER = 134217729
-- Where the split product stays exact (exact.ts's DEKKER_PRODUCT and DEKKER_DIVISOR).
local DEKKER_PRODUCT = 2 ^ 100
local DEKKER_DIVISOR = 2 ^ 50

-- floor((a*b + c) / d) and the remainder, exactly, for safe integers a, b, c >= 0 and
-- d >= 1 whose quotient is a safe integer.
local function mulAddDivMod(a, b, c, d)
  local product = a * b
  if product <= MAX_SAFE and product + c <= MAX_SAFE then
    -- Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    local q = floor((product + c) / d)
    return q, product + c - q * d
  end
  if product >= DEKKER_PRODUCT or d > DEKKER_DIVISOR then
    -- Absurd policies (limits or windows near 2^53 together), where exact.ts uses BigInt:
    -- long multiplication in base 2 over the smaller factor, quotient and remainder kept
    -- apart, so that no intermediate passes d and every one is an exact double.
    if a > b then a, b = b, a end
    if b == INF then error('sluice: an infinite operand of mulAddDivMod') end
    local bq = floor(b / d)
    local br = b - bq * d
    local bit = 1
    while bit * 2 <= a do bit = bit * 2 end
    local q, r = 0, 0
    while bit >= 1 do
      q = q + q
      if r >= d - r then
        r = r - (d - r)
        q = q + 1
      else
        r = r + r
      end
      if a >= bit then
        a = a - bit
        q = q + bq
        if r >= d - br then
          r = r - (d - br)
          q = q + 1
        else
          r = r + br
        end
      end
      bit = bit / 2
    end
    local cq = floor(c / d)
    local cr = c - cq * d
    if r >= d - cr then return q + cq + 1, r - (d - cr) end
    return q + cq, r + cr
  end
  -- c = cq*d + cr first: the split product stays exact only for a small addend.
  local cq = floor(c / d)
  local cr = c - cq * d
  local q = floor((product + cr) / d)
  -- a*b + cr - q*d, exactly: each product split into its rounded value and its rounding
  -- error (both exact); the large parts cancel exactly (Sterbenz) because they are close.
  local p2 = q * d
  local t = a * SPLITTER
  local ah = t - (t - a)
  local al = a - ah
  t = b * SPLITTER
  local bh = t - (t - b)
  local bl = b - bh
  t = q * SPLITTER
  local qh = t - (t - q)
  local ql = q - qh
  t = d * SPLITTER
  local dh = t - (t - d)
  local dl = d - dh
  local e1 = ah * bh - product + ah * bl + al * bh + al * bl
  local e2 = qh * dh - p2 + qh * dl + ql * dh + ql * dl
  local r = product - p2 + (e1 - e2) + cr
  -- The estimate is off by a unit or two at most: step it onto the exact quotient.
  while r < 0 do
    q = q - 1
    r = r + d
  end
  while r >= d do
    q = q + 1
    r = r - d
  end
  return q + cq, r
end

-- floor(a*b / d) and a*b mod d, exactly.
local function mulDivMod(a, b, d)
  local product = a * b
  if product <= MAX_SAFE then
    local q = floor(product / d)
    return q, product - q * d
  end
  return mulAddDivMod(a, b, 0, d)
end

-- ceil(a*b / d) exactly.
local function mulDivCeil(a, b, d)
  local q, r = mulAddDivMod(a, b, 0, d)
  if r > 0 then return q + 1 end
  return q
end
-- A time-based policy's value for one client key, one Redis string of little-endian
-- doubles: the expiry it was written with (Unix ms), the spec it was written under (see
-- readRecord), the kernel's state (see each algorithm's read), then, when the key has strikes or a block, its penalty: the
-- refusals counted since \`since\`, the end of its block, and until when they are kept,
-- in ms as the memory store counts them. One key per policy and client key: a one-policy call touches one key, so
-- a Cluster slot being migrated serves it (through ASK) instead of answering TRYAGAIN.
--
-- s holds the policy (alg: the algorithm's functions, key, windowMs, blockFor: the
-- penalty's length in ms or 0, after, grace: ms a key is kept past fresh) and the state.

-- A number for a command or a reply without Lua's 14 significant digits: integers whole,
-- fractions as the shortest text that reads back as the same double.
local function exactText(x)
  if x == floor(x) and x > -1e18 and x < 1e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- Reads \`v\` (false: no key, a fresh state) into s. A value keeps the spec it was written
-- under beside the state, after the expiry: a window's limit, window us, slots (0 for a
-- fixed window), penalty ms, refusals before it (the numbers of Policy.fingerprint); a
-- bucket's as GCRA.header lays them out. The key is the policy's name and algorithm, so a
-- value written under another spec of the name is carried over into this one here, as
-- s.carryMode says, and written back (s.dirty): the next call finds its own spec, one
-- string compare.
local function readRecord(s, v)
  s.known = v and true or false
  s.expiry = 0
  if v then s.expiry = sunpack('<d', v) end
  local at = 9
  local carried = false
  s.header = ''
  if s.alg.carry then
    if s.alg.header then
      s.header = s.alg.header(s)
    else
      s.header = spack('<ddddd', s.limit, s.window, s.slots or 0, s.blockFor or 0, s.after or 0)
    end
    if v then
      at = 9 + #s.header
      local stored = string.sub(v, 9, at - 1)
      if stored ~= s.header then
        local from
        if s.alg.spec then
          from = s.alg.spec(stored)
        else
          from = {}
          from.limit, from.window, from.slots = sunpack('<ddd', stored)
        end
        at = s.alg.read(from, v, at)
        s.alg.carry(s, from, s.carryMode)
        s.dirty = true
        carried = true
      end
    end
  end
  if not carried then at = s.alg.read(s, v, at) end
  s.strikes = nil
  if v and #v >= at + 31 then
    s.strikes, s.since, s.blockedUntil, s.keep = sunpack('<dddd', v, at)
    -- Kept past their time (the memory store drops them then): gone.
    if NOW_MS > s.keep then s.strikes = nil end
  end
end

-- Milliseconds the key stays blocked (0: not blocked).
local function blockedFor(s)
  if s.strikes == nil then return 0 end
  local left = s.blockedUntil - NOW_MS
  if left > 0 then return left end
  return 0
end

-- Counts a refusal (the memory store's countStrike): the \`after\`th within one window of
-- the first starts a block and the count starts again. Returns the block's length, or 0.
local function strike(s)
  local count, since, untilMs = s.strikes, s.since, s.blockedUntil
  if count == nil or NOW_MS - since >= s.windowMs then count, since, untilMs = 0, NOW_MS, 0 end
  count = count + 1
  if count >= s.after then count, since, untilMs = 0, NOW_MS, NOW_MS + s.blockFor end
  s.strikes, s.since, s.blockedUntil = count, since, untilMs
  -- Kept while they can still matter: until the block ends or their window (the window of
  -- the policy that counted them, whatever spec writes the key later) closes.
  local keep = since + s.windowMs
  if untilMs > keep then keep = untilMs end
  keep = ceil(keep - NOW_MS)
  if keep < 1 then keep = 1 end
  s.keep = NOW_MS + keep
  if untilMs > NOW_MS then return s.blockFor end
  return 0
end

-- Blocks the key for ms from now (0 lifts a block). Strikes count afresh once it ends:
-- its window is taken to have started one window before the block's end.
local function block(s, ms)
  if ms == 0 then
    s.strikes = nil
  else
    s.strikes, s.since, s.blockedUntil, s.keep = 0, NOW_MS + ms - s.windowMs, NOW_MS + ms, NOW_MS + ms
  end
end

-- Writes s back: deleted once worth nothing (a fresh state, strikes that no longer count),
-- else expiring once it is (plus the policy's grace, so that a busy key moves its expiry
-- only once in a while, not on every take).
local function saveRecord(s)
  local tail, keep = '', 0
  -- Strikes are kept until the block ends or the window they were counted in closes (the
  -- memory store's rule): dropped after, they decide as kept ones would.
  if s.strikes ~= nil and NOW_MS <= s.keep then
    tail = spack('<dddd', s.strikes, s.since, s.blockedUntil, s.keep)
    keep = s.keep
  end
  if tail == '' and s.alg.fresh(s) then
    if s.known then redis.call('DEL', s.key) end
    return
  end
  local untilMs = s.alg.freshUntil(s)
  if keep > untilMs then untilMs = keep end
  local needed = ceil(untilMs)
  if s.known and needed <= s.expiry then
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'KEEPTTL')
  elseif TESTING then
    s.expiry = INF
    redis.call('SET', s.key, spack('<d', INF) .. s.header .. s.alg.encode(s) .. tail)
  else
    s.expiry = needed + s.grace
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'PXAT',
      string.format('%d', s.expiry))
  end
  s.known = true
end

-- A number for a reply: an integer reply past 2^53 does not come back whole (ioredis's
-- parser, for one, reads its digits into a double one at a time), so larger ones (waits
-- and arrival times of centuries of debt) go as text.
local function replyNumber(x)
  if x > MAX_SAFE then return exactText(x) end
  return x
end

-- One policy's answer: admitted (1 | 0), available, reset us (until one more permit, or
-- the first once a block ends), retry us (-1: never), receipt (-1: none), blocked (0, or
-- the block's ms left as text: a fraction). The store turns it into a PolicyResult as the
-- memory store builds one.
local function answer(reply, s, admits, cost, allowed, receipt)
  local available, reset, retry = s.alg.report(s, cost, allowed)
  local blocked = s.blocked
  if blocked > 0 then
    reset = s.alg.wait(s, 1)
    receipt = -1
  end
  local n = #reply
  reply[n + 1] = admits and 1 or 0
  reply[n + 2] = available
  reply[n + 3] = replyNumber(reset)
  reply[n + 4] = replyNumber(retry)
  reply[n + 5] = replyNumber(receipt)
  reply[n + 6] = blocked > 0 and exactText(blocked) or 0
end
-- A fixed window: a port of @sluice/core's fixed-window/kernel.ts. Windows are aligned
-- to the clock's zero (window number floor(t / window), t in us), so every store agrees
-- where they start (an hourly window ends on the hour), and one count per key. A count
-- above the limit (debt) keeps the key refused until its window ends.
--
-- s: limit, window (us). State: id (the window counted in, -inf: none), count.
local FIXED = {}
if NEEDS.f then

  function FIXED.read(s, v, at)
    if not v then
      s.id, s.count = -INF, 0
      return at
    end
    s.id, s.count = sunpack('<dd', v, at)
    return at + 16
  end

  function FIXED.encode(s)
    return spack('<dd', s.id, s.count)
  end

  -- Permits counted in the window of now.
  local function counted(s)
    if s.id == floor(NOW / s.window) then return s.count end
    return 0
  end

  -- Us until the window of now ends.
  local function left(s)
    return (floor(NOW / s.window) + 1) * s.window - NOW
  end

  function FIXED.available(s)
    local n = counted(s)
    if n < s.limit then return s.limit - n end
    return 0
  end

  function FIXED.wait(s, cost)
    if cost > s.limit then return -1 end
    if counted(s) + cost <= s.limit then return 0 end
    return left(s)
  end

  function FIXED.fits(s, cost)
    return FIXED.wait(s, cost) == 0
  end

  function FIXED.take(s, cost)
    local n = counted(s)
    if n + cost > s.limit then return false end
    s.id, s.count = floor(NOW / s.window), n + cost
    return true
  end

  function FIXED.force(s, cost)
    s.id, s.count = floor(NOW / s.window), counted(s) + cost
  end

  -- Permits of an earlier window stopped counting when it ended.
  function FIXED.refund(s, cost, receipt)
    local n = counted(s)
    if n == 0 or (receipt ~= nil and receipt ~= s.id) then return end
    if n > cost then s.count = n - cost else s.count = 0 end
  end

  function FIXED.receipt(s)
    return s.id
  end

  function FIXED.fresh(s)
    return counted(s) == 0
  end

  function FIXED.freshUntil(s)
    return (s.id + 1) * s.window / 1000
  end

  function FIXED.report(s, cost, allowed)
    local n = counted(s)
    local available = 0
    if n < s.limit then available = s.limit - n end
    local reset = 0
    if available < s.limit then reset = left(s) end
    local retry = 0
    if not allowed then
      if cost > s.limit then
        retry = -1
      elseif n + cost > s.limit then
        retry = left(s)
      end
    end
    return available, reset, retry
  end
  -- Carries the state \`from\` (read under the old spec: limit, window) over into s, as mode
  -- says: the kernel's carry. The old window's count u of now moves into the new window of
  -- now: proportional ceil(u*L'/L), as-is u + L' - L (never below 0), additive u (a debt
  -- u - L above the old limit stays the same: u + L' - L).
  function FIXED.carry(s, from, mode)
    local used = counted(from)
    local delta = s.limit - from.limit
    local count = 0
    if mode ~= 'reset' and used > 0 then
      if mode == 'proportional' then
        count = mulDivCeil(used, s.limit, from.limit)
      elseif mode == 'as-is' then
        count = used + delta
        if count < 0 then count = 0 end
      elseif used > from.limit then
        count = used + delta
      else
        count = used
      end
    end
    if count == 0 then
      s.id, s.count = -INF, 0
    else
      s.id, s.count = floor(NOW / s.window), count
    end
  end
end
local s = {key = key, alg = FIXED, limit = limit, window = window, windowMs = ARGV[5] + 0,
  grace = 0, carryMode = ARGV[6]}
-- The body of a one-policy take through the port (s: the policy, as the script made it;
-- v: its value, cost): one SET when admitted. A key blocked (by the store's block) is
-- refused with its block.
readRecord(s, v)
s.blocked = blockedFor(s)
local reply = {}
if s.blocked > 0 then
  if s.dirty then saveRecord(s) end
  answer(reply, s, false, cost, false, -1)
  return reply
end
local allowed = s.alg.take(s, cost)
-- A value carried over from another spec is written back even when refused.
if allowed or s.dirty then saveRecord(s) end
answer(reply, s, allowed, cost, allowed, allowed and s.alg.receipt(s) or -1)
return reply
`,
}

/** src/lua/gcra.lua */
export const GCRA: Script = {
  name: 'gcra',
  sha: 'e68b92a3245956bb36bd315337aed13a889ad23b',
  source: `-- One take from one token-bucket or leaky-bucket policy without a penalty: the common
-- case, in the fewest Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/gcra.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), capacity, tau (whole us, and
--          ticks), grace (ms a key is kept past full), gcd of limit and window, window
--          (ms), carry mode
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
-- The time of the call, read once. NOW is whole microseconds (what the kernels decide
-- on), NOW_MS milliseconds (what penalties and leases count in, as the memory store does).
-- ARGV[1] is '' in production: Redis's own clock (TIME), so application servers whose
-- clocks disagree still agree. A test's clock sends "<ms> <us>" instead (the store's
-- \`clock\` option); Redis's expiry does not follow that time, so under it keys are written
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
local key = KEYS[1]
local cost, limit, window, capacity = ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0, ARGV[5] + 0
local tauUs, tauTicks, gcd = ARGV[6] + 0, ARGV[7] + 0, ARGV[9] + 0
local v = redis.call('GET', key)
-- The spec the value keeps beside its state (GCRA.header): equal, nothing to carry.
local HEADER = spack('<dddddd', limit, window, capacity, 0, 0, 0)

-- A take on a key under this spec, without strikes or a block, whose numbers stay below
-- 2^53: inline, as
-- lib/gcra.lua and lib/record.lua would decide and write it (making the port's functions
-- is most of a script's cost). Anything else, below, through the port.
do
  local expiry, at, frac = 0, -INF, 0
  if v then
    if #v == 72 and string.sub(v, 9, 56) == HEADER then
      expiry = sunpack('<d', v)
      at, frac = sunpack('<dd', v, 57)
    else
      at = nil
    end
  end
  local l, w = limit / gcd, window / gcd
  local product = cost * w
  if at ~= nil and cost <= capacity and product <= MAX_SAFE then
    -- max(tat, now) + cost x T, as whole us and ticks.
    local q = floor(product / l)
    local r = (product - q * l) * gcd
    local a, f = at, frac
    if a < NOW then
      a = NOW
      f = 0
    end
    a = a + q
    f = f + r
    if f >= limit then
      f = f - limit
      a = a + 1
    end
    local ahead = a - NOW
    local allowed = ahead < tauUs or (ahead == tauUs and f <= tauTicks)
    -- A refused key is in debt (one that is not admits any cost up to its capacity); a
    -- debt of centuries, past 2^53 us, is the port's.
    if (allowed or at >= NOW) and a < MAX_SAFE then
      -- A refusal's wait: tat + cost x T - tau - now, rounded up to whole us.
      local retry = 0
      if not allowed then
        local us, ticks = at + q - NOW - tauUs, frac + r - tauTicks
        if ticks < 0 then
          ticks = ticks + limit
          us = us - 1
        elseif ticks >= limit then
          ticks = ticks - limit
          us = us + 1
        end
        if us >= 0 then
          retry = us
          if ticks > 0 then retry = us + 1 end
        end
        a, f = at, frac
      end
      -- The slack left, tau - (tat - now) = available x T + rem ticks (negative in debt
      -- beyond tau: the port).
      local us, ticks = tauUs - (a - NOW), tauTicks - f
      if ticks < 0 then
        ticks = ticks + limit
        us = us - 1
      end
      local whole = floor(ticks / gcd)
      local slack = us * l
      if us >= 0 and slack <= MAX_SAFE and slack + whole <= MAX_SAFE then
        local available = floor((slack + whole) / w)
        local rem = (slack + whole - available * w) * gcd + (ticks - whole * gcd)
        local reset = 0
        if available < capacity then reset = ceil((window - rem) / limit) end
        if not allowed then return {0, available, reset, retry, -1, 0} end
        local receipt = a
        if f > 0 then receipt = a + 1 end
        local needed = ceil(receipt / 1000)
        if v and needed <= expiry then
          -- Its expiry still covers it: only tat changes.
          redis.call('SETRANGE', key, '56', spack('<dd', a, f))
        elseif TESTING then
          redis.call('SET', key, spack('<d', INF) .. HEADER .. spack('<dd', a, f))
        else
          expiry = needed + ARGV[8]
          redis.call('SET', key, spack('<d', expiry) .. HEADER .. spack('<dd', a, f), 'PXAT',
            string.format('%d', expiry))
        end
        return {1, available, reset, 0, receipt, 0}
      end
    end
  end
end

-- The port's functions this script needs (see lib/gcra.lua).
local NEEDS = {g = true}
-- Integer arithmetic past 2^53 in Lua's doubles (Lua 5.1 has no integers), a port of
-- @sluice/core's exact.ts: a product of two safe integers plus a third, divided by a
-- fourth. Limits and windows may each be as large as 2^53, so permits x window can pass
-- 2^53 (10^10 tokens a day is 8.64e20 tick-microseconds). A sum that fits is plain
-- doubles; a larger one is split exactly into two doubles (Dekker's product), its
-- quotient estimated in floating point and corrected by the exact remainder: the same
-- operations as exact.ts, so both land on the same numbers.
-- Veltkamp's splitter: halves of 26 bits each, whose products are exact.
local SPLITTER = 134217729
-- Where the split product stays exact (exact.ts's DEKKER_PRODUCT and DEKKER_DIVISOR).
local DEKKER_PRODUCT = 2 ^ 100
local DEKKER_DIVISOR = 2 ^ 50

-- floor((a*b + c) / d) and the remainder, exactly, for safe integers a, b, c >= 0 and
-- d >= 1 whose quotient is a safe integer.
local function mulAddDivMod(a, b, c, d)
  local product = a * b
  if product <= MAX_SAFE and product + c <= MAX_SAFE then
    -- Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    local q = floor((product + c) / d)
    return q, product + c - q * d
  end
  if product >= DEKKER_PRODUCT or d > DEKKER_DIVISOR then
    -- Absurd policies (limits or windows near 2^53 together), where exact.ts uses BigInt:
    -- long multiplication in base 2 over the smaller factor, quotient and remainder kept
    -- apart, so that no intermediate passes d and every one is an exact double.
    if a > b then a, b = b, a end
    if b == INF then error('sluice: an infinite operand of mulAddDivMod') end
    local bq = floor(b / d)
    local br = b - bq * d
    local bit = 1
    while bit * 2 <= a do bit = bit * 2 end
    local q, r = 0, 0
    while bit >= 1 do
      q = q + q
      if r >= d - r then
        r = r - (d - r)
        q = q + 1
      else
        r = r + r
      end
      if a >= bit then
        a = a - bit
        q = q + bq
        if r >= d - br then
          r = r - (d - br)
          q = q + 1
        else
          r = r + br
        end
      end
      bit = bit / 2
    end
    local cq = floor(c / d)
    local cr = c - cq * d
    if r >= d - cr then return q + cq + 1, r - (d - cr) end
    return q + cq, r + cr
  end
  -- c = cq*d + cr first: the split product stays exact only for a small addend.
  local cq = floor(c / d)
  local cr = c - cq * d
  local q = floor((product + cr) / d)
  -- a*b + cr - q*d, exactly: each product split into its rounded value and its rounding
  -- error (both exact); the large parts cancel exactly (Sterbenz) because they are close.
  local p2 = q * d
  local t = a * SPLITTER
  local ah = t - (t - a)
  local al = a - ah
  t = b * SPLITTER
  local bh = t - (t - b)
  local bl = b - bh
  t = q * SPLITTER
  local qh = t - (t - q)
  local ql = q - qh
  t = d * SPLITTER
  local dh = t - (t - d)
  local dl = d - dh
  local e1 = ah * bh - product + ah * bl + al * bh + al * bl
  local e2 = qh * dh - p2 + qh * dl + ql * dh + ql * dl
  local r = product - p2 + (e1 - e2) + cr
  -- The estimate is off by a unit or two at most: step it onto the exact quotient.
  while r < 0 do
    q = q - 1
    r = r + d
  end
  while r >= d do
    q = q + 1
    r = r - d
  end
  return q + cq, r
end

-- floor(a*b / d) and a*b mod d, exactly.
local function mulDivMod(a, b, d)
  local product = a * b
  if product <= MAX_SAFE then
    local q = floor(product / d)
    return q, product - q * d
  end
  return mulAddDivMod(a, b, 0, d)
end

-- ceil(a*b / d) exactly.
local function mulDivCeil(a, b, d)
  local q, r = mulAddDivMod(a, b, 0, d)
  if r > 0 then return q + 1 end
  return q
end
-- A time-based policy's value for one client key, one Redis string of little-endian
-- doubles: the expiry it was written with (Unix ms), the spec it was written under (see
-- readRecord), the kernel's state (see each algorithm's read), then, when the key has strikes or a block, its penalty: the
-- refusals counted since \`since\`, the end of its block, and until when they are kept,
-- in ms as the memory store counts them. One key per policy and client key: a one-policy call touches one key, so
-- a Cluster slot being migrated serves it (through ASK) instead of answering TRYAGAIN.
--
-- s holds the policy (alg: the algorithm's functions, key, windowMs, blockFor: the
-- penalty's length in ms or 0, after, grace: ms a key is kept past fresh) and the state.

-- A number for a command or a reply without Lua's 14 significant digits: integers whole,
-- fractions as the shortest text that reads back as the same double.
local function exactText(x)
  if x == floor(x) and x > -1e18 and x < 1e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- Reads \`v\` (false: no key, a fresh state) into s. A value keeps the spec it was written
-- under beside the state, after the expiry: a window's limit, window us, slots (0 for a
-- fixed window), penalty ms, refusals before it (the numbers of Policy.fingerprint); a
-- bucket's as GCRA.header lays them out. The key is the policy's name and algorithm, so a
-- value written under another spec of the name is carried over into this one here, as
-- s.carryMode says, and written back (s.dirty): the next call finds its own spec, one
-- string compare.
local function readRecord(s, v)
  s.known = v and true or false
  s.expiry = 0
  if v then s.expiry = sunpack('<d', v) end
  local at = 9
  local carried = false
  s.header = ''
  if s.alg.carry then
    if s.alg.header then
      s.header = s.alg.header(s)
    else
      s.header = spack('<ddddd', s.limit, s.window, s.slots or 0, s.blockFor or 0, s.after or 0)
    end
    if v then
      at = 9 + #s.header
      local stored = string.sub(v, 9, at - 1)
      if stored ~= s.header then
        local from
        if s.alg.spec then
          from = s.alg.spec(stored)
        else
          from = {}
          from.limit, from.window, from.slots = sunpack('<ddd', stored)
        end
        at = s.alg.read(from, v, at)
        s.alg.carry(s, from, s.carryMode)
        s.dirty = true
        carried = true
      end
    end
  end
  if not carried then at = s.alg.read(s, v, at) end
  s.strikes = nil
  if v and #v >= at + 31 then
    s.strikes, s.since, s.blockedUntil, s.keep = sunpack('<dddd', v, at)
    -- Kept past their time (the memory store drops them then): gone.
    if NOW_MS > s.keep then s.strikes = nil end
  end
end

-- Milliseconds the key stays blocked (0: not blocked).
local function blockedFor(s)
  if s.strikes == nil then return 0 end
  local left = s.blockedUntil - NOW_MS
  if left > 0 then return left end
  return 0
end

-- Counts a refusal (the memory store's countStrike): the \`after\`th within one window of
-- the first starts a block and the count starts again. Returns the block's length, or 0.
local function strike(s)
  local count, since, untilMs = s.strikes, s.since, s.blockedUntil
  if count == nil or NOW_MS - since >= s.windowMs then count, since, untilMs = 0, NOW_MS, 0 end
  count = count + 1
  if count >= s.after then count, since, untilMs = 0, NOW_MS, NOW_MS + s.blockFor end
  s.strikes, s.since, s.blockedUntil = count, since, untilMs
  -- Kept while they can still matter: until the block ends or their window (the window of
  -- the policy that counted them, whatever spec writes the key later) closes.
  local keep = since + s.windowMs
  if untilMs > keep then keep = untilMs end
  keep = ceil(keep - NOW_MS)
  if keep < 1 then keep = 1 end
  s.keep = NOW_MS + keep
  if untilMs > NOW_MS then return s.blockFor end
  return 0
end

-- Blocks the key for ms from now (0 lifts a block). Strikes count afresh once it ends:
-- its window is taken to have started one window before the block's end.
local function block(s, ms)
  if ms == 0 then
    s.strikes = nil
  else
    s.strikes, s.since, s.blockedUntil, s.keep = 0, NOW_MS + ms - s.windowMs, NOW_MS + ms, NOW_MS + ms
  end
end

-- Writes s back: deleted once worth nothing (a fresh state, strikes that no longer count),
-- else expiring once it is (plus the policy's grace, so that a busy key moves its expiry
-- only once in a while, not on every take).
local function saveRecord(s)
  local tail, keep = '', 0
  -- Strikes are kept until the block ends or the window they were counted in closes (the
  -- memory store's rule): dropped after, they decide as kept ones would.
  if s.strikes ~= nil and NOW_MS <= s.keep then
    tail = spack('<dddd', s.strikes, s.since, s.blockedUntil, s.keep)
    keep = s.keep
  end
  if tail == '' and s.alg.fresh(s) then
    if s.known then redis.call('DEL', s.key) end
    return
  end
  local untilMs = s.alg.freshUntil(s)
  if keep > untilMs then untilMs = keep end
  local needed = ceil(untilMs)
  if s.known and needed <= s.expiry then
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'KEEPTTL')
  elseif TESTING then
    s.expiry = INF
    redis.call('SET', s.key, spack('<d', INF) .. s.header .. s.alg.encode(s) .. tail)
  else
    s.expiry = needed + s.grace
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'PXAT',
      string.format('%d', s.expiry))
  end
  s.known = true
end

-- A number for a reply: an integer reply past 2^53 does not come back whole (ioredis's
-- parser, for one, reads its digits into a double one at a time), so larger ones (waits
-- and arrival times of centuries of debt) go as text.
local function replyNumber(x)
  if x > MAX_SAFE then return exactText(x) end
  return x
end

-- One policy's answer: admitted (1 | 0), available, reset us (until one more permit, or
-- the first once a block ends), retry us (-1: never), receipt (-1: none), blocked (0, or
-- the block's ms left as text: a fraction). The store turns it into a PolicyResult as the
-- memory store builds one.
local function answer(reply, s, admits, cost, allowed, receipt)
  local available, reset, retry = s.alg.report(s, cost, allowed)
  local blocked = s.blocked
  if blocked > 0 then
    reset = s.alg.wait(s, 1)
    receipt = -1
  end
  local n = #reply
  reply[n + 1] = admits and 1 or 0
  reply[n + 2] = available
  reply[n + 3] = replyNumber(reset)
  reply[n + 4] = replyNumber(retry)
  reply[n + 5] = replyNumber(receipt)
  reply[n + 6] = blocked > 0 and exactText(blocked) or 0
end
-- GCRA, the kernel of the token bucket, the leaky bucket and the warm-up bucket: a port
-- of @sluice/core's gcra/kernel.ts and warm-up/kernel.ts, operation for operation.
--
-- Time is counted in ticks of 1/limit us, so the emission interval T is exactly \`window\`
-- ticks (the window in us) and tau = capacity x window: integers for every spec, which
-- is what lets 3 per second admit exactly 3 from full. The theoretical arrival time \`tat\`
-- is kept in two parts, whole us (\`at\`, -inf: fresh) and the ticks of a started us
-- (\`frac\`, below limit), because a tick count can pass 2^53. n permits are admitted iff
-- max(tat, now) + n x T - now <= tau, and then tat becomes that sum.
--
-- Warm-up: the interval is 3T - floor(2T x age / warmUp) ticks while the key is younger
-- than warmUp (its age counts from the key's first sight, \`created\`, -inf: not seen yet),
-- and tau is at least one current interval.
--
-- s: limit, window (us), capacity, tauUs, tauTicks (tau, whole us and ticks), warmUp (us,
-- 0: none), gcd (of limit and window: n x window / limit is n x w / l with l and w small
-- for most specs, 10^10 a day is 25 / 216, so products stay below 2^53). State: at, frac,
-- created. In the value: the spec it was written under (GCRA.header), at, frac, then
-- created for warm-up.
--
-- Its functions are made only when a policy of the call needs them (NEEDS.g, NEEDS.w for
-- warm-up): making functions is much of what a script costs per call.
local GCRA = {}
if NEEDS.g then
  -- Warm-up's own, made for NEEDS.w, or by a carry from a warm-up spec.
  local interval, tolerance, warmFits, estimate
  local function makeWarmUp()
    -- The interval at age \`age\` (us), in ticks.
    interval = function(s, age)
      if age >= s.warmUp then return s.window end
      if age < 0 then age = 0 end
      return 3 * s.window - (mulDivMod(2 * s.window, age, s.warmUp))
    end
    -- tau at \`iv\` (ticks), as whole us and ticks: capacity x T, or one interval when more.
    tolerance = function(s, iv)
      if iv > s.tauInTicks then return mulDivMod(1, iv, s.limit) end
      return s.tauUs, s.tauTicks
    end
    -- Whether cost permits fit at t (us) on the state (at, frac) while warming.
    warmFits = function(s, at, frac, t, cost)
      if at < t then
        at = t
        frac = 0
      end
      local iv = interval(s, t - s.created)
      local q, r = mulDivMod(cost, iv, s.limit)
      at = at + q
      frac = frac + r
      if frac >= s.limit then
        frac = frac - s.limit
        at = at + 1
      end
      local tu, tt = tolerance(s, iv)
      local ahead = at - t
      return ahead < tu or (ahead == tu and frac <= tt)
    end
    -- The us until cost fits, in floating point with the interval taken as exactly linear in
    -- age (warm-up/kernel.ts's estimate): the excess is piecewise linear and non-increasing,
    -- with kinks where the debt is paid, where the interval falls to capacity x T and where
    -- warm-up ends. Walk the pieces and solve the first that reaches zero.
    estimate = function(s, at, frac, age, cost)
      local ticks, window, warmUp = s.limit, s.window, s.warmUp
      local tau = s.capacity * window
      local debt = 0
      if not (at < NOW) then debt = (at - NOW) * ticks + frac end
      local function excess(dt)
        local a = age + dt
        local iv = window
        if not (a >= warmUp) then iv = window * (3 - (2 * a) / warmUp) end
        local owed = debt - dt * ticks
        if owed < 0 then owed = 0 end
        local most = tau
        if iv > most then most = iv end
        return owed + cost * iv - most
      end
      local kinks = {debt / ticks, warmUp - age}
      if s.capacity < 3 then kinks[3] = (warmUp * (3 - s.capacity)) / 2 - age end
      table.sort(kinks)
      local from, before = 0, excess(0)
      for _, to in ipairs(kinks) do
        if to > from then
          local after = excess(to)
          if after <= 0 then return from + (before * (to - from)) / (before - after) end
          from, before = to, after
        end
      end
      return from
    end
  end
  if NEEDS.w then makeWarmUp() end

  function GCRA.read(s, v, at)
    s.at, s.frac, s.created = -INF, 0, -INF
    s.l, s.w = s.limit / s.gcd, s.window / s.gcd
    if s.warmUp > 0 then
      local tau = s.capacity * s.window
      s.tauInTicks = tau <= MAX_SAFE and tau or INF
    end
    if not v then return at end
    s.at, s.frac = sunpack('<dd', v, at)
    if s.warmUp == 0 then return at + 16 end
    s.created = sunpack('<d', v, at + 16)
    return at + 24
  end

  function GCRA.encode(s)
    if s.warmUp == 0 then return spack('<dd', s.at, s.frac) end
    return spack('<ddd', s.at, s.frac, s.created)
  end

  -- cost x window / limit, reduced by the gcd: whole us, and the ticks left over.
  local function divide(s, cost)
    local product = cost * s.w
    if product <= MAX_SAFE then
      local q = floor(product / s.l)
      return q, (product - q * s.l) * s.gcd
    end
    local q, r = mulAddDivMod(cost, s.w, 0, s.l)
    return q, r * s.gcd
  end

  -- The cost of \`cost\` permits now, as whole us and ticks.
  local function costOf(s, cost)
    if s.warmUp == 0 then return divide(s, cost) end
    return mulDivMod(cost, interval(s, NOW - s.created), s.limit)
  end

  -- max(tat, now) + cost x T - tau - now, rounded up to whole us (0 when it fits): the wait
  -- with T and tau constant from now on.
  local function steadyWait(s, at, frac, cost)
    if at < NOW then
      at = NOW
      frac = 0
    end
    local q, r = divide(s, cost)
    local us = at + q - NOW - s.tauUs
    local ticks = frac + r - s.tauTicks
    if ticks < 0 then
      ticks = ticks + s.limit
      us = us - 1
    elseif ticks >= s.limit then
      ticks = ticks - s.limit
      us = us + 1
    end
    if us < 0 then return 0 end
    if ticks > 0 then return us + 1 end
    return us
  end

  -- floor((tau - debt) / T), 0 in debt; and the slack's remainder in ticks (-1 in debt
  -- beyond tau, nil when full).
  local function steadyAvailable(s)
    local at = s.at
    if at < NOW then return s.capacity end
    local us = s.tauUs - (at - NOW)
    local ticks = s.tauTicks - s.frac
    if ticks < 0 then
      ticks = ticks + s.limit
      us = us - 1
    end
    if us < 0 then return 0, -1 end
    -- floor((us x limit + ticks) / window), reduced by the gcd: with ticks = q x gcd + r
    -- (r < gcd), the r ticks never reach a whole permit on their own.
    local g = s.gcd
    local whole = floor(ticks / g)
    local q, r = mulAddDivMod(us, s.l, whole, s.w)
    return q, r * g + (ticks - whole * g)
  end

  local function warming(s)
    return s.warmUp > 0 and NOW - s.created < s.warmUp
  end

  -- Whole us from now until cost (<= capacity) fits. While warming, whether it fits only
  -- ever turns from no to yes as time passes, so the answer is found from the estimate,
  -- then checked and corrected exactly (doubling up to 64 times, then bisecting).
  local function waitUs(s, cost)
    if not warming(s) then return steadyWait(s, s.at, s.frac, cost) end
    local at, frac, t = s.at, s.frac, NOW
    if warmFits(s, at, frac, t, cost) then return 0 end
    local guess = ceil(estimate(s, at, frac, t - s.created, cost))
    if guess < 1 then guess = 1 end
    local lo, hi
    if warmFits(s, at, frac, t + guess, cost) then
      if not warmFits(s, at, frac, t + guess - 1, cost) then return guess end
      lo, hi = 0, guess - 1
    else
      local step = 1
      for _ = 1, 64 do
        if warmFits(s, at, frac, t + guess + step, cost) then break end
        step = step * 2
      end
      lo, hi = guess + floor(step / 2), guess + step
    end
    -- It fits at hi, not at lo. Past 2^53 us (a debt of centuries) neighbouring doubles are
    -- further apart than 1: stop when no number lies between them.
    while hi - lo > 1 do
      local mid = lo + floor((hi - lo) / 2)
      if mid == lo or mid == hi then break end
      if warmFits(s, at, frac, t + mid, cost) then hi = mid else lo = mid end
    end
    return hi
  end

  function GCRA.available(s)
    if not warming(s) then return (steadyAvailable(s)) end
    local iv = interval(s, NOW - s.created)
    if iv == s.window then return (steadyAvailable(s)) end
    local us, ticks = tolerance(s, iv)
    if s.at >= NOW then
      us = us - (s.at - NOW)
      ticks = ticks - s.frac
      if ticks < 0 then
        ticks = ticks + s.limit
        us = us - 1
      end
      if us < 0 then return 0 end
    end
    local free = (mulAddDivMod(us, s.limit, ticks, iv))
    if free > s.capacity then return s.capacity end
    return free
  end

  -- Whole us until cost would pass (-1: never).
  function GCRA.wait(s, cost)
    if cost > s.capacity then return -1 end
    return waitUs(s, cost)
  end

  function GCRA.fits(s, cost)
    return cost <= s.capacity and waitUs(s, cost) == 0
  end

  -- max(tat, now) + the cost of cost permits now: tat after taking them, as whole us and
  -- ticks.
  local function after(s, cost)
    local at, frac = s.at, s.frac
    if at < NOW then
      at = NOW
      frac = 0
    end
    local q, r = costOf(s, cost)
    at = at + q
    frac = frac + r
    if frac >= s.limit then
      frac = frac - s.limit
      at = at + 1
    end
    return at, frac
  end

  -- Takes cost permits whether they fit or not (debt): tat moves from max(tat, now).
  function GCRA.force(s, cost)
    s.at, s.frac = after(s, cost)
  end

  function GCRA.take(s, cost)
    if cost > s.capacity then return false end
    if warming(s) then
      if not warmFits(s, s.at, s.frac, NOW, cost) then return false end
      GCRA.force(s, cost)
      return true
    end
    local at, frac = after(s, cost)
    local ahead = at - NOW
    if ahead < s.tauUs or (ahead == s.tauUs and frac <= s.tauTicks) then
      s.at, s.frac = at, frac
      return true
    end
    return false
  end

  -- Gives back cost permits, never beyond full. The receipt is tat just after the take:
  -- the bucket drains its debt oldest first, so of the permits taken then, only the part
  -- of their debt not yet drained (receipt - now) still counts.
  function GCRA.refund(s, cost, receipt)
    if s.at < NOW then return end
    local us, ticks = costOf(s, cost)
    if receipt ~= nil then
      local owed = receipt - NOW
      if owed <= 0 then return end
      if us > owed or (us == owed and ticks > 0) then us, ticks = owed, 0 end
    end
    local at, frac = s.at - us, s.frac - ticks
    if frac < 0 then
      frac = frac + s.limit
      at = at - 1
    end
    if at < NOW then
      at = NOW
      frac = 0
    end
    s.at, s.frac = at, frac
  end

  -- tat rounded up to a whole us.
  function GCRA.receipt(s)
    if s.frac > 0 then return s.at + 1 end
    return s.at
  end

  -- A warm-up key's state is its age: never fresh.
  function GCRA.fresh(s)
    return s.warmUp == 0 and (s.at < NOW or (s.at == NOW and s.frac == 0))
  end

  -- Unix ms once the state is worth nothing. A warm-up key is kept until warm-up is over
  -- and then for one more warm-up period of idleness (a key made again starts cold).
  function GCRA.freshUntil(s)
    local stop = GCRA.receipt(s)
    if s.warmUp == 0 then return stop / 1000 end
    if s.created + s.warmUp > stop then stop = s.created + s.warmUp end
    return (stop + s.warmUp) / 1000
  end

  -- available, reset us (until one more permit, 0 when full), retry us (0: allowed, -1:
  -- never), as the kernel's report.
  function GCRA.report(s, cost, allowed)
    local available, rem
    if s.warmUp == 0 then
      available, rem = steadyAvailable(s)
    else
      available = GCRA.available(s)
    end
    local reset = 0
    if available < s.capacity then
      if rem ~= nil and rem >= 0 then
        -- With the slack tau - debt = available x T + rem ticks, the next permit needs
        -- T - rem more ticks of drain, rounded up to whole us.
        reset = ceil((s.window - rem) / s.limit)
      else
        -- In debt beyond tau, or warm-up (its interval moves too): the search.
        reset = waitUs(s, available + 1)
      end
    end
    local retry = 0
    if not allowed then retry = GCRA.wait(s, cost) end
    return available, reset, retry
  end

  -- The spec a value keeps beside its state (lib/record.lua): limit, window us, capacity,
  -- warm-up us, penalty ms, refusals before it (the numbers of Policy.fingerprint).
  function GCRA.header(s)
    return spack('<dddddd', s.limit, s.window, s.capacity, s.warmUp, s.blockFor or 0, s.after or 0)
  end

  -- The spec \`stored\` (a header) was written under, with what read needs worked out as the
  -- store's codec does: tau (whole us and ticks) and the gcd of limit and window.
  function GCRA.spec(stored)
    local from = {}
    from.limit, from.window, from.capacity, from.warmUp = sunpack('<dddd', stored)
    from.tauUs, from.tauTicks = mulDivMod(from.capacity, from.window, from.limit)
    local a, b = from.limit, from.window
    while b ~= 0 do a, b = b, math.fmod(a, b) end
    from.gcd = a
    return from
  end

  -- Carries the state \`from\` (read under the old spec) over into s, as mode says: a port of
  -- the kernel's carry (gcra/kernel.ts), in the same exact integers. With D = tat - now
  -- ahead and the available permits A = (tau - D) / T: a key in debt (D > tau) keeps the
  -- instant it is paid off, tat - tau, in every mode but reset, and gets the new tau from
  -- there; a key in credit gets the mode's A' (proportional A x K'/K, as-is min(A, K'),
  -- additive A + K' - K, below 0 a debt) as D' = tau' - A' x T', rounded up to a tick of
  -- the new spec. A fresh key stays fresh; a warm-up key keeps its age.
  function GCRA.carry(s, from, mode)
    GCRA.read(s, false, 0)
    if from.warmUp > 0 and interval == nil then makeWarmUp() end
    local t = NOW
    local created = t
    if from.warmUp > 0 then created = from.created end
    s.created = from.created
    if mode == 'reset' or from.at < t or (from.at == t and from.frac == 0) then return end
    -- Nonnegative integers past 2^53 (the kernel's BigInts): little-endian limbs of 24
    -- bits, so a limb product and its carries stay exact doubles. Made only here: a carry
    -- is once per key and spec change.
    local B = 16777216
    local function trim(a)
      while #a > 0 and a[#a] == 0 do a[#a] = nil end
      return a
    end
    local function big(n)
      local a = {}
      while n > 0 do
        local q = floor(n / B)
        a[#a + 1] = n - q * B
        n = q
      end
      return a
    end
    local function add(a, b)
      local c, carry = {}, 0
      local n = #a
      if #b > n then n = #b end
      for i = 1, n do
        local x = (a[i] or 0) + (b[i] or 0) + carry
        if x >= B then
          c[i], carry = x - B, 1
        else
          c[i], carry = x, 0
        end
      end
      if carry > 0 then c[n + 1] = carry end
      return c
    end
    -- a - b, for a >= b.
    local function sub(a, b)
      local c, borrow = {}, 0
      for i = 1, #a do
        local x = a[i] - (b[i] or 0) - borrow
        if x < 0 then
          c[i], borrow = x + B, 1
        else
          c[i], borrow = x, 0
        end
      end
      return trim(c)
    end
    local function mul(a, b)
      local c = {}
      for i = 1, #a + #b do c[i] = 0 end
      for i = 1, #a do
        local carry = 0
        for j = 1, #b do
          local x = c[i + j - 1] + a[i] * b[j] + carry
          carry = floor(x / B)
          c[i + j - 1] = x - carry * B
        end
        local k = i + #b
        while carry > 0 do
          local x = c[k] + carry
          carry = floor(x / B)
          c[k] = x - carry * B
          k = k + 1
        end
      end
      return trim(c)
    end
    local function cmp(a, b)
      if #a ~= #b then return #a < #b and -1 or 1 end
      for i = #a, 1, -1 do
        if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
      end
      return 0
    end
    -- floor(a / d) and the remainder, for a safe integer d >= 1.
    local function divmod(a, d)
      local q, r = {}, 0
      for i = #a, 1, -1 do q[i], r = mulAddDivMod(r, B, a[i], d) end
      return trim(q), r
    end
    local function ceilDiv(a, d)
      local q, r = divmod(a, d)
      if r > 0 then return add(q, {1}) end
      return q
    end
    -- T in ticks for a key created at \`created\`, at \`at\` (us); tau at that interval.
    local function intervalOf(x, at)
      if x.warmUp > 0 then return interval(x, at - created) end
      return x.window
    end
    local function toleranceOf(x, iv)
      local tau = mul(big(x.capacity), big(x.window))
      if x.warmUp > 0 and cmp(big(iv), tau) > 0 then return big(iv) end
      return tau
    end
    local oldL, newL = big(from.limit), big(s.limit)
    local oldTat = add(mul(big(from.at), oldL), big(from.frac))
    local ahead = sub(oldTat, mul(big(t), oldL))
    local oldInterval, newInterval = intervalOf(from, t), intervalOf(s, t)
    local oldTolerance, newTolerance = toleranceOf(from, oldInterval), toleranceOf(s, newInterval)
    local tat
    if cmp(ahead, oldTolerance) > 0 then
      -- Debt: paid off at the same instant whatever the mode, tat - tau, from which the new
      -- tau applies (rounded up to a tick of the new spec). A warm-up key's tau may shrink
      -- with age: the one at the instant it is paid off.
      local paidOff = t
      if from.warmUp > 0 then paidOff = t + waitUs(from, 0) end
      local oldAt = toleranceOf(from, intervalOf(from, paidOff))
      local newAt = toleranceOf(s, intervalOf(s, paidOff))
      tat = add(ceilDiv(mul(sub(oldTat, oldAt), newL), from.limit), newAt)
    else
      local credit = sub(oldTolerance, ahead)
      local oldK, newK = big(from.capacity), big(s.capacity)
      local oldIv, newIv = big(oldInterval), big(newInterval)
      -- What the key holds under the new spec, A' x T' in ticks (rounded down), or below 0
      -- (additive) the debt past tau', rounded up.
      local held, owed
      if mode == 'proportional' then
        held = divmod(divmod(mul(mul(credit, newK), newIv), oldInterval), from.capacity)
      elseif mode == 'as-is' then
        if cmp(credit, mul(newK, oldIv)) >= 0 then
          held = mul(newK, newIv)
        else
          held = divmod(mul(credit, newIv), oldInterval)
        end
      else
        -- Additive: A + K' - K, as (credit + K' x T) - K x T.
        local plus, minus = add(credit, mul(newK, oldIv)), mul(oldK, oldIv)
        if cmp(plus, minus) >= 0 then
          held = divmod(mul(sub(plus, minus), newIv), oldInterval)
        else
          owed = ceilDiv(mul(sub(minus, plus), newIv), oldInterval)
        end
      end
      local newAhead
      if owed ~= nil then
        newAhead = add(newTolerance, owed)
      else
        if cmp(held, newTolerance) >= 0 then return end
        newAhead = sub(newTolerance, held)
      end
      tat = add(mul(big(t), newL), newAhead)
    end
    local q, r = divmod(tat, s.limit)
    local at = 0
    for i = #q, 1, -1 do at = at * B + q[i] end
    s.at, s.frac = at, r
  end
end
local s = {key = key, alg = GCRA, limit = limit, window = window, capacity = capacity,
  tauUs = tauUs, tauTicks = tauTicks, grace = ARGV[8] + 0, gcd = gcd, windowMs = ARGV[10] + 0,
  warmUp = 0, carryMode = ARGV[11]}
-- The body of a one-policy take through the port (s: the policy, as the script made it;
-- v: its value, cost): one SET when admitted. A key blocked (by the store's block) is
-- refused with its block.
readRecord(s, v)
s.blocked = blockedFor(s)
local reply = {}
if s.blocked > 0 then
  if s.dirty then saveRecord(s) end
  answer(reply, s, false, cost, false, -1)
  return reply
end
local allowed = s.alg.take(s, cost)
-- A value carried over from another spec is written back even when refused.
if allowed or s.dirty then saveRecord(s) end
answer(reply, s, allowed, cost, allowed, allowed and s.alg.receipt(s) or -1)
return reply
`,
}

/** src/lua/general.lua */
export const GENERAL: Script = {
  name: 'general',
  sha: '57af816c033faee63ee2b9353787ee96a4eb3397',
  source: `-- Every call the one-policy scripts leave out: several policies at once (all or none),
-- costs per policy, warm-up and concurrency policies, penalties, and refund, force, block
-- and get. It keeps the same values as the one-policy scripts (lib/record.lua), so either
-- may serve a key.
--
-- KEYS     each policy's state, in order
-- ARGV[1]  time ('' : Redis's TIME; a test's clock: "<ms> <us>")
-- ARGV[2]  'take' | 'refund' | 'force' | 'settle' | 'block' | 'get'
-- ARGV[3]  lease id ('' : none): a take with a concurrency policy holds "<permits>:<id>"
-- ARGV[4]  deadline (us, 0: none): a take that reaches Redis after it takes nothing
-- ARGV[5]  number of policies n, then thirteen per policy: kind, then
--            f  fixed window    limit, window us, -, -, -, -, -, -
--            s  sliding window  limit, window us, slots, slot cap, -, -, -, -
--            g  GCRA            limit, window us, capacity, tau us, tau ticks, grace ms,
--                               warm-up us (0: none), gcd of limit and window
--            c  concurrency     max, lease ttl ms
--          and for the time-based kinds: window ms, penalty ms (0: none), refusals
--          before it, carry mode; then n costs; then, for a refund, n receipts ('' :
--          none), for a block its ms; a settle's costs are what it gives back, followed
--          by n receipts and then the n costs it forces
-- Reply    {taken (1 | 0; -1: past the deadline), now us}, then for take, force, settle
--          and get six per policy (lib/record.lua's answer)
-- The time of the call, read once. NOW is whole microseconds (what the kernels decide
-- on), NOW_MS milliseconds (what penalties and leases count in, as the memory store does).
-- ARGV[1] is '' in production: Redis's own clock (TIME), so application servers whose
-- clocks disagree still agree. A test's clock sends "<ms> <us>" instead (the store's
-- \`clock\` option); Redis's expiry does not follow that time, so under it keys are written
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
-- The algorithms the call's policies need: only their functions are made (lib/gcra.lua).
local STRIDE = 13
local NEEDS = {}
for i = 1, ARGV[5] do
  local a = 5 + STRIDE * (i - 1)
  NEEDS[ARGV[a + 1]] = true
  if ARGV[a + 1] == 'g' and ARGV[a + 8] ~= '0' then NEEDS.w = true end
end
-- Integer arithmetic past 2^53 in Lua's doubles (Lua 5.1 has no integers), a port of
-- @sluice/core's exact.ts: a product of two safe integers plus a third, divided by a
-- fourth. Limits and windows may each be as large as 2^53, so permits x window can pass
-- 2^53 (10^10 tokens a day is 8.64e20 tick-microseconds). A sum that fits is plain
-- doubles; a larger one is split exactly into two doubles (Dekker's product), its
-- quotient estimated in floating point and corrected by the exact remainder: the same
-- operations as exact.ts, so both land on the same numbers.
-- Veltkamp's splitter: halves of 26 bits each, whose products are exact.
local SPLITTER = 134217729
-- Where the split product stays exact (exact.ts's DEKKER_PRODUCT and DEKKER_DIVISOR).
local DEKKER_PRODUCT = 2 ^ 100
local DEKKER_DIVISOR = 2 ^ 50

-- floor((a*b + c) / d) and the remainder, exactly, for safe integers a, b, c >= 0 and
-- d >= 1 whose quotient is a safe integer.
local function mulAddDivMod(a, b, c, d)
  local product = a * b
  if product <= MAX_SAFE and product + c <= MAX_SAFE then
    -- Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    local q = floor((product + c) / d)
    return q, product + c - q * d
  end
  if product >= DEKKER_PRODUCT or d > DEKKER_DIVISOR then
    -- Absurd policies (limits or windows near 2^53 together), where exact.ts uses BigInt:
    -- long multiplication in base 2 over the smaller factor, quotient and remainder kept
    -- apart, so that no intermediate passes d and every one is an exact double.
    if a > b then a, b = b, a end
    if b == INF then error('sluice: an infinite operand of mulAddDivMod') end
    local bq = floor(b / d)
    local br = b - bq * d
    local bit = 1
    while bit * 2 <= a do bit = bit * 2 end
    local q, r = 0, 0
    while bit >= 1 do
      q = q + q
      if r >= d - r then
        r = r - (d - r)
        q = q + 1
      else
        r = r + r
      end
      if a >= bit then
        a = a - bit
        q = q + bq
        if r >= d - br then
          r = r - (d - br)
          q = q + 1
        else
          r = r + br
        end
      end
      bit = bit / 2
    end
    local cq = floor(c / d)
    local cr = c - cq * d
    if r >= d - cr then return q + cq + 1, r - (d - cr) end
    return q + cq, r + cr
  end
  -- c = cq*d + cr first: the split product stays exact only for a small addend.
  local cq = floor(c / d)
  local cr = c - cq * d
  local q = floor((product + cr) / d)
  -- a*b + cr - q*d, exactly: each product split into its rounded value and its rounding
  -- error (both exact); the large parts cancel exactly (Sterbenz) because they are close.
  local p2 = q * d
  local t = a * SPLITTER
  local ah = t - (t - a)
  local al = a - ah
  t = b * SPLITTER
  local bh = t - (t - b)
  local bl = b - bh
  t = q * SPLITTER
  local qh = t - (t - q)
  local ql = q - qh
  t = d * SPLITTER
  local dh = t - (t - d)
  local dl = d - dh
  local e1 = ah * bh - product + ah * bl + al * bh + al * bl
  local e2 = qh * dh - p2 + qh * dl + ql * dh + ql * dl
  local r = product - p2 + (e1 - e2) + cr
  -- The estimate is off by a unit or two at most: step it onto the exact quotient.
  while r < 0 do
    q = q - 1
    r = r + d
  end
  while r >= d do
    q = q + 1
    r = r - d
  end
  return q + cq, r
end

-- floor(a*b / d) and a*b mod d, exactly.
local function mulDivMod(a, b, d)
  local product = a * b
  if product <= MAX_SAFE then
    local q = floor(product / d)
    return q, product - q * d
  end
  return mulAddDivMod(a, b, 0, d)
end

-- ceil(a*b / d) exactly.
local function mulDivCeil(a, b, d)
  local q, r = mulAddDivMod(a, b, 0, d)
  if r > 0 then return q + 1 end
  return q
end
-- A time-based policy's value for one client key, one Redis string of little-endian
-- doubles: the expiry it was written with (Unix ms), the spec it was written under (see
-- readRecord), the kernel's state (see each algorithm's read), then, when the key has strikes or a block, its penalty: the
-- refusals counted since \`since\`, the end of its block, and until when they are kept,
-- in ms as the memory store counts them. One key per policy and client key: a one-policy call touches one key, so
-- a Cluster slot being migrated serves it (through ASK) instead of answering TRYAGAIN.
--
-- s holds the policy (alg: the algorithm's functions, key, windowMs, blockFor: the
-- penalty's length in ms or 0, after, grace: ms a key is kept past fresh) and the state.

-- A number for a command or a reply without Lua's 14 significant digits: integers whole,
-- fractions as the shortest text that reads back as the same double.
local function exactText(x)
  if x == floor(x) and x > -1e18 and x < 1e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- Reads \`v\` (false: no key, a fresh state) into s. A value keeps the spec it was written
-- under beside the state, after the expiry: a window's limit, window us, slots (0 for a
-- fixed window), penalty ms, refusals before it (the numbers of Policy.fingerprint); a
-- bucket's as GCRA.header lays them out. The key is the policy's name and algorithm, so a
-- value written under another spec of the name is carried over into this one here, as
-- s.carryMode says, and written back (s.dirty): the next call finds its own spec, one
-- string compare.
local function readRecord(s, v)
  s.known = v and true or false
  s.expiry = 0
  if v then s.expiry = sunpack('<d', v) end
  local at = 9
  local carried = false
  s.header = ''
  if s.alg.carry then
    if s.alg.header then
      s.header = s.alg.header(s)
    else
      s.header = spack('<ddddd', s.limit, s.window, s.slots or 0, s.blockFor or 0, s.after or 0)
    end
    if v then
      at = 9 + #s.header
      local stored = string.sub(v, 9, at - 1)
      if stored ~= s.header then
        local from
        if s.alg.spec then
          from = s.alg.spec(stored)
        else
          from = {}
          from.limit, from.window, from.slots = sunpack('<ddd', stored)
        end
        at = s.alg.read(from, v, at)
        s.alg.carry(s, from, s.carryMode)
        s.dirty = true
        carried = true
      end
    end
  end
  if not carried then at = s.alg.read(s, v, at) end
  s.strikes = nil
  if v and #v >= at + 31 then
    s.strikes, s.since, s.blockedUntil, s.keep = sunpack('<dddd', v, at)
    -- Kept past their time (the memory store drops them then): gone.
    if NOW_MS > s.keep then s.strikes = nil end
  end
end

-- Milliseconds the key stays blocked (0: not blocked).
local function blockedFor(s)
  if s.strikes == nil then return 0 end
  local left = s.blockedUntil - NOW_MS
  if left > 0 then return left end
  return 0
end

-- Counts a refusal (the memory store's countStrike): the \`after\`th within one window of
-- the first starts a block and the count starts again. Returns the block's length, or 0.
local function strike(s)
  local count, since, untilMs = s.strikes, s.since, s.blockedUntil
  if count == nil or NOW_MS - since >= s.windowMs then count, since, untilMs = 0, NOW_MS, 0 end
  count = count + 1
  if count >= s.after then count, since, untilMs = 0, NOW_MS, NOW_MS + s.blockFor end
  s.strikes, s.since, s.blockedUntil = count, since, untilMs
  -- Kept while they can still matter: until the block ends or their window (the window of
  -- the policy that counted them, whatever spec writes the key later) closes.
  local keep = since + s.windowMs
  if untilMs > keep then keep = untilMs end
  keep = ceil(keep - NOW_MS)
  if keep < 1 then keep = 1 end
  s.keep = NOW_MS + keep
  if untilMs > NOW_MS then return s.blockFor end
  return 0
end

-- Blocks the key for ms from now (0 lifts a block). Strikes count afresh once it ends:
-- its window is taken to have started one window before the block's end.
local function block(s, ms)
  if ms == 0 then
    s.strikes = nil
  else
    s.strikes, s.since, s.blockedUntil, s.keep = 0, NOW_MS + ms - s.windowMs, NOW_MS + ms, NOW_MS + ms
  end
end

-- Writes s back: deleted once worth nothing (a fresh state, strikes that no longer count),
-- else expiring once it is (plus the policy's grace, so that a busy key moves its expiry
-- only once in a while, not on every take).
local function saveRecord(s)
  local tail, keep = '', 0
  -- Strikes are kept until the block ends or the window they were counted in closes (the
  -- memory store's rule): dropped after, they decide as kept ones would.
  if s.strikes ~= nil and NOW_MS <= s.keep then
    tail = spack('<dddd', s.strikes, s.since, s.blockedUntil, s.keep)
    keep = s.keep
  end
  if tail == '' and s.alg.fresh(s) then
    if s.known then redis.call('DEL', s.key) end
    return
  end
  local untilMs = s.alg.freshUntil(s)
  if keep > untilMs then untilMs = keep end
  local needed = ceil(untilMs)
  if s.known and needed <= s.expiry then
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'KEEPTTL')
  elseif TESTING then
    s.expiry = INF
    redis.call('SET', s.key, spack('<d', INF) .. s.header .. s.alg.encode(s) .. tail)
  else
    s.expiry = needed + s.grace
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'PXAT',
      string.format('%d', s.expiry))
  end
  s.known = true
end

-- A number for a reply: an integer reply past 2^53 does not come back whole (ioredis's
-- parser, for one, reads its digits into a double one at a time), so larger ones (waits
-- and arrival times of centuries of debt) go as text.
local function replyNumber(x)
  if x > MAX_SAFE then return exactText(x) end
  return x
end

-- One policy's answer: admitted (1 | 0), available, reset us (until one more permit, or
-- the first once a block ends), retry us (-1: never), receipt (-1: none), blocked (0, or
-- the block's ms left as text: a fraction). The store turns it into a PolicyResult as the
-- memory store builds one.
local function answer(reply, s, admits, cost, allowed, receipt)
  local available, reset, retry = s.alg.report(s, cost, allowed)
  local blocked = s.blocked
  if blocked > 0 then
    reset = s.alg.wait(s, 1)
    receipt = -1
  end
  local n = #reply
  reply[n + 1] = admits and 1 or 0
  reply[n + 2] = available
  reply[n + 3] = replyNumber(reset)
  reply[n + 4] = replyNumber(retry)
  reply[n + 5] = replyNumber(receipt)
  reply[n + 6] = blocked > 0 and exactText(blocked) or 0
end
-- GCRA, the kernel of the token bucket, the leaky bucket and the warm-up bucket: a port
-- of @sluice/core's gcra/kernel.ts and warm-up/kernel.ts, operation for operation.
--
-- Time is counted in ticks of 1/limit us, so the emission interval T is exactly \`window\`
-- ticks (the window in us) and tau = capacity x window: integers for every spec, which
-- is what lets 3 per second admit exactly 3 from full. The theoretical arrival time \`tat\`
-- is kept in two parts, whole us (\`at\`, -inf: fresh) and the ticks of a started us
-- (\`frac\`, below limit), because a tick count can pass 2^53. n permits are admitted iff
-- max(tat, now) + n x T - now <= tau, and then tat becomes that sum.
--
-- Warm-up: the interval is 3T - floor(2T x age / warmUp) ticks while the key is younger
-- than warmUp (its age counts from the key's first sight, \`created\`, -inf: not seen yet),
-- and tau is at least one current interval.
--
-- s: limit, window (us), capacity, tauUs, tauTicks (tau, whole us and ticks), warmUp (us,
-- 0: none), gcd (of limit and window: n x window / limit is n x w / l with l and w small
-- for most specs, 10^10 a day is 25 / 216, so products stay below 2^53). State: at, frac,
-- created. In the value: the spec it was written under (GCRA.header), at, frac, then
-- created for warm-up.
--
-- Its functions are made only when a policy of the call needs them (NEEDS.g, NEEDS.w for
-- warm-up): making functions is much of what a script costs per call.
local GCRA = {}
if NEEDS.g then
  -- Warm-up's own, made for NEEDS.w, or by a carry from a warm-up spec.
  local interval, tolerance, warmFits, estimate
  local function makeWarmUp()
    -- The interval at age \`age\` (us), in ticks.
    interval = function(s, age)
      if age >= s.warmUp then return s.window end
      if age < 0 then age = 0 end
      return 3 * s.window - (mulDivMod(2 * s.window, age, s.warmUp))
    end
    -- tau at \`iv\` (ticks), as whole us and ticks: capacity x T, or one interval when more.
    tolerance = function(s, iv)
      if iv > s.tauInTicks then return mulDivMod(1, iv, s.limit) end
      return s.tauUs, s.tauTicks
    end
    -- Whether cost permits fit at t (us) on the state (at, frac) while warming.
    warmFits = function(s, at, frac, t, cost)
      if at < t then
        at = t
        frac = 0
      end
      local iv = interval(s, t - s.created)
      local q, r = mulDivMod(cost, iv, s.limit)
      at = at + q
      frac = frac + r
      if frac >= s.limit then
        frac = frac - s.limit
        at = at + 1
      end
      local tu, tt = tolerance(s, iv)
      local ahead = at - t
      return ahead < tu or (ahead == tu and frac <= tt)
    end
    -- The us until cost fits, in floating point with the interval taken as exactly linear in
    -- age (warm-up/kernel.ts's estimate): the excess is piecewise linear and non-increasing,
    -- with kinks where the debt is paid, where the interval falls to capacity x T and where
    -- warm-up ends. Walk the pieces and solve the first that reaches zero.
    estimate = function(s, at, frac, age, cost)
      local ticks, window, warmUp = s.limit, s.window, s.warmUp
      local tau = s.capacity * window
      local debt = 0
      if not (at < NOW) then debt = (at - NOW) * ticks + frac end
      local function excess(dt)
        local a = age + dt
        local iv = window
        if not (a >= warmUp) then iv = window * (3 - (2 * a) / warmUp) end
        local owed = debt - dt * ticks
        if owed < 0 then owed = 0 end
        local most = tau
        if iv > most then most = iv end
        return owed + cost * iv - most
      end
      local kinks = {debt / ticks, warmUp - age}
      if s.capacity < 3 then kinks[3] = (warmUp * (3 - s.capacity)) / 2 - age end
      table.sort(kinks)
      local from, before = 0, excess(0)
      for _, to in ipairs(kinks) do
        if to > from then
          local after = excess(to)
          if after <= 0 then return from + (before * (to - from)) / (before - after) end
          from, before = to, after
        end
      end
      return from
    end
  end
  if NEEDS.w then makeWarmUp() end

  function GCRA.read(s, v, at)
    s.at, s.frac, s.created = -INF, 0, -INF
    s.l, s.w = s.limit / s.gcd, s.window / s.gcd
    if s.warmUp > 0 then
      local tau = s.capacity * s.window
      s.tauInTicks = tau <= MAX_SAFE and tau or INF
    end
    if not v then return at end
    s.at, s.frac = sunpack('<dd', v, at)
    if s.warmUp == 0 then return at + 16 end
    s.created = sunpack('<d', v, at + 16)
    return at + 24
  end

  function GCRA.encode(s)
    if s.warmUp == 0 then return spack('<dd', s.at, s.frac) end
    return spack('<ddd', s.at, s.frac, s.created)
  end

  -- cost x window / limit, reduced by the gcd: whole us, and the ticks left over.
  local function divide(s, cost)
    local product = cost * s.w
    if product <= MAX_SAFE then
      local q = floor(product / s.l)
      return q, (product - q * s.l) * s.gcd
    end
    local q, r = mulAddDivMod(cost, s.w, 0, s.l)
    return q, r * s.gcd
  end

  -- The cost of \`cost\` permits now, as whole us and ticks.
  local function costOf(s, cost)
    if s.warmUp == 0 then return divide(s, cost) end
    return mulDivMod(cost, interval(s, NOW - s.created), s.limit)
  end

  -- max(tat, now) + cost x T - tau - now, rounded up to whole us (0 when it fits): the wait
  -- with T and tau constant from now on.
  local function steadyWait(s, at, frac, cost)
    if at < NOW then
      at = NOW
      frac = 0
    end
    local q, r = divide(s, cost)
    local us = at + q - NOW - s.tauUs
    local ticks = frac + r - s.tauTicks
    if ticks < 0 then
      ticks = ticks + s.limit
      us = us - 1
    elseif ticks >= s.limit then
      ticks = ticks - s.limit
      us = us + 1
    end
    if us < 0 then return 0 end
    if ticks > 0 then return us + 1 end
    return us
  end

  -- floor((tau - debt) / T), 0 in debt; and the slack's remainder in ticks (-1 in debt
  -- beyond tau, nil when full).
  local function steadyAvailable(s)
    local at = s.at
    if at < NOW then return s.capacity end
    local us = s.tauUs - (at - NOW)
    local ticks = s.tauTicks - s.frac
    if ticks < 0 then
      ticks = ticks + s.limit
      us = us - 1
    end
    if us < 0 then return 0, -1 end
    -- floor((us x limit + ticks) / window), reduced by the gcd: with ticks = q x gcd + r
    -- (r < gcd), the r ticks never reach a whole permit on their own.
    local g = s.gcd
    local whole = floor(ticks / g)
    local q, r = mulAddDivMod(us, s.l, whole, s.w)
    return q, r * g + (ticks - whole * g)
  end

  local function warming(s)
    return s.warmUp > 0 and NOW - s.created < s.warmUp
  end

  -- Whole us from now until cost (<= capacity) fits. While warming, whether it fits only
  -- ever turns from no to yes as time passes, so the answer is found from the estimate,
  -- then checked and corrected exactly (doubling up to 64 times, then bisecting).
  local function waitUs(s, cost)
    if not warming(s) then return steadyWait(s, s.at, s.frac, cost) end
    local at, frac, t = s.at, s.frac, NOW
    if warmFits(s, at, frac, t, cost) then return 0 end
    local guess = ceil(estimate(s, at, frac, t - s.created, cost))
    if guess < 1 then guess = 1 end
    local lo, hi
    if warmFits(s, at, frac, t + guess, cost) then
      if not warmFits(s, at, frac, t + guess - 1, cost) then return guess end
      lo, hi = 0, guess - 1
    else
      local step = 1
      for _ = 1, 64 do
        if warmFits(s, at, frac, t + guess + step, cost) then break end
        step = step * 2
      end
      lo, hi = guess + floor(step / 2), guess + step
    end
    -- It fits at hi, not at lo. Past 2^53 us (a debt of centuries) neighbouring doubles are
    -- further apart than 1: stop when no number lies between them.
    while hi - lo > 1 do
      local mid = lo + floor((hi - lo) / 2)
      if mid == lo or mid == hi then break end
      if warmFits(s, at, frac, t + mid, cost) then hi = mid else lo = mid end
    end
    return hi
  end

  function GCRA.available(s)
    if not warming(s) then return (steadyAvailable(s)) end
    local iv = interval(s, NOW - s.created)
    if iv == s.window then return (steadyAvailable(s)) end
    local us, ticks = tolerance(s, iv)
    if s.at >= NOW then
      us = us - (s.at - NOW)
      ticks = ticks - s.frac
      if ticks < 0 then
        ticks = ticks + s.limit
        us = us - 1
      end
      if us < 0 then return 0 end
    end
    local free = (mulAddDivMod(us, s.limit, ticks, iv))
    if free > s.capacity then return s.capacity end
    return free
  end

  -- Whole us until cost would pass (-1: never).
  function GCRA.wait(s, cost)
    if cost > s.capacity then return -1 end
    return waitUs(s, cost)
  end

  function GCRA.fits(s, cost)
    return cost <= s.capacity and waitUs(s, cost) == 0
  end

  -- max(tat, now) + the cost of cost permits now: tat after taking them, as whole us and
  -- ticks.
  local function after(s, cost)
    local at, frac = s.at, s.frac
    if at < NOW then
      at = NOW
      frac = 0
    end
    local q, r = costOf(s, cost)
    at = at + q
    frac = frac + r
    if frac >= s.limit then
      frac = frac - s.limit
      at = at + 1
    end
    return at, frac
  end

  -- Takes cost permits whether they fit or not (debt): tat moves from max(tat, now).
  function GCRA.force(s, cost)
    s.at, s.frac = after(s, cost)
  end

  function GCRA.take(s, cost)
    if cost > s.capacity then return false end
    if warming(s) then
      if not warmFits(s, s.at, s.frac, NOW, cost) then return false end
      GCRA.force(s, cost)
      return true
    end
    local at, frac = after(s, cost)
    local ahead = at - NOW
    if ahead < s.tauUs or (ahead == s.tauUs and frac <= s.tauTicks) then
      s.at, s.frac = at, frac
      return true
    end
    return false
  end

  -- Gives back cost permits, never beyond full. The receipt is tat just after the take:
  -- the bucket drains its debt oldest first, so of the permits taken then, only the part
  -- of their debt not yet drained (receipt - now) still counts.
  function GCRA.refund(s, cost, receipt)
    if s.at < NOW then return end
    local us, ticks = costOf(s, cost)
    if receipt ~= nil then
      local owed = receipt - NOW
      if owed <= 0 then return end
      if us > owed or (us == owed and ticks > 0) then us, ticks = owed, 0 end
    end
    local at, frac = s.at - us, s.frac - ticks
    if frac < 0 then
      frac = frac + s.limit
      at = at - 1
    end
    if at < NOW then
      at = NOW
      frac = 0
    end
    s.at, s.frac = at, frac
  end

  -- tat rounded up to a whole us.
  function GCRA.receipt(s)
    if s.frac > 0 then return s.at + 1 end
    return s.at
  end

  -- A warm-up key's state is its age: never fresh.
  function GCRA.fresh(s)
    return s.warmUp == 0 and (s.at < NOW or (s.at == NOW and s.frac == 0))
  end

  -- Unix ms once the state is worth nothing. A warm-up key is kept until warm-up is over
  -- and then for one more warm-up period of idleness (a key made again starts cold).
  function GCRA.freshUntil(s)
    local stop = GCRA.receipt(s)
    if s.warmUp == 0 then return stop / 1000 end
    if s.created + s.warmUp > stop then stop = s.created + s.warmUp end
    return (stop + s.warmUp) / 1000
  end

  -- available, reset us (until one more permit, 0 when full), retry us (0: allowed, -1:
  -- never), as the kernel's report.
  function GCRA.report(s, cost, allowed)
    local available, rem
    if s.warmUp == 0 then
      available, rem = steadyAvailable(s)
    else
      available = GCRA.available(s)
    end
    local reset = 0
    if available < s.capacity then
      if rem ~= nil and rem >= 0 then
        -- With the slack tau - debt = available x T + rem ticks, the next permit needs
        -- T - rem more ticks of drain, rounded up to whole us.
        reset = ceil((s.window - rem) / s.limit)
      else
        -- In debt beyond tau, or warm-up (its interval moves too): the search.
        reset = waitUs(s, available + 1)
      end
    end
    local retry = 0
    if not allowed then retry = GCRA.wait(s, cost) end
    return available, reset, retry
  end

  -- The spec a value keeps beside its state (lib/record.lua): limit, window us, capacity,
  -- warm-up us, penalty ms, refusals before it (the numbers of Policy.fingerprint).
  function GCRA.header(s)
    return spack('<dddddd', s.limit, s.window, s.capacity, s.warmUp, s.blockFor or 0, s.after or 0)
  end

  -- The spec \`stored\` (a header) was written under, with what read needs worked out as the
  -- store's codec does: tau (whole us and ticks) and the gcd of limit and window.
  function GCRA.spec(stored)
    local from = {}
    from.limit, from.window, from.capacity, from.warmUp = sunpack('<dddd', stored)
    from.tauUs, from.tauTicks = mulDivMod(from.capacity, from.window, from.limit)
    local a, b = from.limit, from.window
    while b ~= 0 do a, b = b, math.fmod(a, b) end
    from.gcd = a
    return from
  end

  -- Carries the state \`from\` (read under the old spec) over into s, as mode says: a port of
  -- the kernel's carry (gcra/kernel.ts), in the same exact integers. With D = tat - now
  -- ahead and the available permits A = (tau - D) / T: a key in debt (D > tau) keeps the
  -- instant it is paid off, tat - tau, in every mode but reset, and gets the new tau from
  -- there; a key in credit gets the mode's A' (proportional A x K'/K, as-is min(A, K'),
  -- additive A + K' - K, below 0 a debt) as D' = tau' - A' x T', rounded up to a tick of
  -- the new spec. A fresh key stays fresh; a warm-up key keeps its age.
  function GCRA.carry(s, from, mode)
    GCRA.read(s, false, 0)
    if from.warmUp > 0 and interval == nil then makeWarmUp() end
    local t = NOW
    local created = t
    if from.warmUp > 0 then created = from.created end
    s.created = from.created
    if mode == 'reset' or from.at < t or (from.at == t and from.frac == 0) then return end
    -- Nonnegative integers past 2^53 (the kernel's BigInts): little-endian limbs of 24
    -- bits, so a limb product and its carries stay exact doubles. Made only here: a carry
    -- is once per key and spec change.
    local B = 16777216
    local function trim(a)
      while #a > 0 and a[#a] == 0 do a[#a] = nil end
      return a
    end
    local function big(n)
      local a = {}
      while n > 0 do
        local q = floor(n / B)
        a[#a + 1] = n - q * B
        n = q
      end
      return a
    end
    local function add(a, b)
      local c, carry = {}, 0
      local n = #a
      if #b > n then n = #b end
      for i = 1, n do
        local x = (a[i] or 0) + (b[i] or 0) + carry
        if x >= B then
          c[i], carry = x - B, 1
        else
          c[i], carry = x, 0
        end
      end
      if carry > 0 then c[n + 1] = carry end
      return c
    end
    -- a - b, for a >= b.
    local function sub(a, b)
      local c, borrow = {}, 0
      for i = 1, #a do
        local x = a[i] - (b[i] or 0) - borrow
        if x < 0 then
          c[i], borrow = x + B, 1
        else
          c[i], borrow = x, 0
        end
      end
      return trim(c)
    end
    local function mul(a, b)
      local c = {}
      for i = 1, #a + #b do c[i] = 0 end
      for i = 1, #a do
        local carry = 0
        for j = 1, #b do
          local x = c[i + j - 1] + a[i] * b[j] + carry
          carry = floor(x / B)
          c[i + j - 1] = x - carry * B
        end
        local k = i + #b
        while carry > 0 do
          local x = c[k] + carry
          carry = floor(x / B)
          c[k] = x - carry * B
          k = k + 1
        end
      end
      return trim(c)
    end
    local function cmp(a, b)
      if #a ~= #b then return #a < #b and -1 or 1 end
      for i = #a, 1, -1 do
        if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
      end
      return 0
    end
    -- floor(a / d) and the remainder, for a safe integer d >= 1.
    local function divmod(a, d)
      local q, r = {}, 0
      for i = #a, 1, -1 do q[i], r = mulAddDivMod(r, B, a[i], d) end
      return trim(q), r
    end
    local function ceilDiv(a, d)
      local q, r = divmod(a, d)
      if r > 0 then return add(q, {1}) end
      return q
    end
    -- T in ticks for a key created at \`created\`, at \`at\` (us); tau at that interval.
    local function intervalOf(x, at)
      if x.warmUp > 0 then return interval(x, at - created) end
      return x.window
    end
    local function toleranceOf(x, iv)
      local tau = mul(big(x.capacity), big(x.window))
      if x.warmUp > 0 and cmp(big(iv), tau) > 0 then return big(iv) end
      return tau
    end
    local oldL, newL = big(from.limit), big(s.limit)
    local oldTat = add(mul(big(from.at), oldL), big(from.frac))
    local ahead = sub(oldTat, mul(big(t), oldL))
    local oldInterval, newInterval = intervalOf(from, t), intervalOf(s, t)
    local oldTolerance, newTolerance = toleranceOf(from, oldInterval), toleranceOf(s, newInterval)
    local tat
    if cmp(ahead, oldTolerance) > 0 then
      -- Debt: paid off at the same instant whatever the mode, tat - tau, from which the new
      -- tau applies (rounded up to a tick of the new spec). A warm-up key's tau may shrink
      -- with age: the one at the instant it is paid off.
      local paidOff = t
      if from.warmUp > 0 then paidOff = t + waitUs(from, 0) end
      local oldAt = toleranceOf(from, intervalOf(from, paidOff))
      local newAt = toleranceOf(s, intervalOf(s, paidOff))
      tat = add(ceilDiv(mul(sub(oldTat, oldAt), newL), from.limit), newAt)
    else
      local credit = sub(oldTolerance, ahead)
      local oldK, newK = big(from.capacity), big(s.capacity)
      local oldIv, newIv = big(oldInterval), big(newInterval)
      -- What the key holds under the new spec, A' x T' in ticks (rounded down), or below 0
      -- (additive) the debt past tau', rounded up.
      local held, owed
      if mode == 'proportional' then
        held = divmod(divmod(mul(mul(credit, newK), newIv), oldInterval), from.capacity)
      elseif mode == 'as-is' then
        if cmp(credit, mul(newK, oldIv)) >= 0 then
          held = mul(newK, newIv)
        else
          held = divmod(mul(credit, newIv), oldInterval)
        end
      else
        -- Additive: A + K' - K, as (credit + K' x T) - K x T.
        local plus, minus = add(credit, mul(newK, oldIv)), mul(oldK, oldIv)
        if cmp(plus, minus) >= 0 then
          held = divmod(mul(sub(plus, minus), newIv), oldInterval)
        else
          owed = ceilDiv(mul(sub(minus, plus), newIv), oldInterval)
        end
      end
      local newAhead
      if owed ~= nil then
        newAhead = add(newTolerance, owed)
      else
        if cmp(held, newTolerance) >= 0 then return end
        newAhead = sub(newTolerance, held)
      end
      tat = add(mul(big(t), newL), newAhead)
    end
    local q, r = divmod(tat, s.limit)
    local at = 0
    for i = #q, 1, -1 do at = at * B + q[i] end
    s.at, s.frac = at, r
  end
end
-- A sliding window: a port of @sluice/core's sliding-window/kernel.ts. The window is cut
-- into \`slots\` slots, and generation g is slot number g since the clock's zero
-- (floor(t x slots / window), t in us). A permit counts until its generation has wholly
-- left the window, so at generation c the generations c - slots to c count.
--
-- s: limit, window (us), slots, cap (the most a slot counts: slotCap(limit)). State: a
-- ring of slots + 1 counts for consecutive generations (c[g mod ring]), the newest being
-- \`head\` (-inf: fresh), and their sum. In the value: head, sum, then the ring.
local SLIDING = {}
if NEEDS.s then

  function SLIDING.read(s, v, at)
    s.ring = s.slots + 1
    s.c = {}
    if not v then
      s.head, s.sum = -INF, 0
      for i = 0, s.slots do s.c[i] = 0 end
      return at
    end
    local values = {sunpack('<' .. string.rep('d', s.ring + 2), v, at)}
    s.head, s.sum = values[1], values[2]
    for i = 0, s.slots do s.c[i] = values[i + 3] end
    return at + 8 * (s.ring + 2)
  end

  function SLIDING.encode(s)
    local parts = {spack('<dd', s.head, s.sum)}
    for i = 0, s.slots do parts[i + 2] = spack('<d', s.c[i]) end
    return table.concat(parts)
  end

  -- The generation of t (us).
  local function generationAt(s, t)
    local whole = floor(t / s.window)
    return whole * s.slots + (mulDivMod(t - whole * s.window, s.slots, s.window))
  end

  -- The generation of now, never before the head (a clock that steps back counts there).
  local function generation(s)
    local g = generationAt(s, NOW)
    if g < s.head then return s.head end
    return g
  end

  -- The first us of generation g.
  local function start(s, g)
    local whole = floor(g / s.slots)
    return whole * s.window + mulDivCeil(g - whole * s.slots, s.window, s.slots)
  end

  -- Permits counted in the window ending with generation g (never before the head).
  local function used(s, g)
    local head = s.head
    if g == head then return s.sum end
    if g - head > s.slots then return 0 end
    -- The generations head - slots up to g - slots - 1 have left the window since head.
    local n = s.sum
    for old = head - s.slots, g - s.slots - 1 do n = n - s.c[old % s.ring] end
    return n
  end

  -- Moves the head forward to g, zeroing the counts of the generations it claims.
  local function claim(s, g)
    local head = s.head
    if g <= head then return end
    local first = g - s.ring + 1
    if head + 1 > first then first = head + 1 end
    local sum = s.sum
    for claimed = first, g do
      local i = claimed % s.ring
      sum = sum - s.c[i]
      s.c[i] = 0
    end
    s.head, s.sum = g, sum
  end

  -- Adds cost to generation g, saturating at the slot cap.
  local function add(s, g, cost)
    claim(s, g)
    local i = g % s.ring
    local count = s.c[i]
    local added = cost
    if s.cap - count < added then added = s.cap - count end
    s.c[i] = count + added
    s.sum = s.sum + added
  end

  -- Whole us until cost (<= limit) fits at generation g with n counted: until enough of the
  -- oldest permits have left the window.
  local function waitUs(s, g, n, cost)
    local excess = n + cost - s.limit
    if excess <= 0 then return 0 end
    local head = s.head
    local oldest = g - s.slots
    -- Everything counted sits in the newest slot (a busy key, or one that comes back now
    -- and then): the walk below would find it there, after only empty slots.
    if head >= oldest and s.c[head % s.ring] == n then
      local from = g
      if n >= excess then from = head end
      return start(s, from + s.ring) - NOW
    end
    for old = oldest, head do
      excess = excess - s.c[old % s.ring]
      if excess <= 0 then return start(s, old + s.ring) - NOW end
    end
    return start(s, g + s.ring) - NOW
  end

  function SLIDING.available(s)
    local n = used(s, generation(s))
    if n < s.limit then return s.limit - n end
    return 0
  end

  function SLIDING.wait(s, cost)
    if cost > s.limit then return -1 end
    local g = generation(s)
    return waitUs(s, g, used(s, g), cost)
  end

  function SLIDING.fits(s, cost)
    return SLIDING.wait(s, cost) == 0
  end

  function SLIDING.take(s, cost)
    local g = generation(s)
    if used(s, g) + cost > s.limit then return false end
    add(s, g, cost)
    return true
  end

  function SLIDING.force(s, cost)
    add(s, generation(s), cost)
  end

  -- Takes up to cost permits off the count at ring index i; returns how many.
  local function uncount(s, i, cost)
    local count = s.c[i]
    local back = cost
    if count < back then back = count end
    s.c[i] = count - back
    s.sum = s.sum - back
    return back
  end

  -- Gives back cost permits: with a receipt, only from the generation of the take, while it
  -- still counts; without, newest first.
  function SLIDING.refund(s, cost, receipt)
    local head = s.head
    local oldest = generation(s) - s.slots
    if receipt ~= nil then
      if receipt < oldest or receipt > head then return end
      uncount(s, receipt % s.ring, cost)
      return
    end
    local left, newest = cost, head
    while newest >= oldest and left > 0 do
      left = left - uncount(s, newest % s.ring, left)
      newest = newest - 1
    end
  end

  function SLIDING.receipt(s)
    return s.head
  end

  function SLIDING.fresh(s)
    return used(s, generation(s)) == 0
  end

  -- Unix ms once the head generation has left the window (nothing counts then).
  function SLIDING.freshUntil(s)
    if s.head == -INF then return -INF end
    return start(s, s.head + s.ring) / 1000
  end

  function SLIDING.report(s, cost, allowed)
    local g = generation(s)
    local n = used(s, g)
    local available = 0
    if n < s.limit then available = s.limit - n end
    local reset = 0
    if available < s.limit then reset = waitUs(s, g, n, available + 1) end
    local retry = 0
    if not allowed then
      if cost > s.limit then retry = -1 else retry = waitUs(s, g, n, cost) end
    end
    return available, reset, retry
  end
  -- Carries the state \`from\` (read under the old spec: limit, window, slots) over into s,
  -- as mode says: the kernel's carry. Each old slot's count moves to the new slot that
  -- leaves the window first at or after the instant the old one would have (or the
  -- current slot), so no permit stops counting earlier; then the total moves by mode:
  -- proportional scales the counts newest first (ceil(u*L'/L) of the suffix sums), as-is
  -- shifts the total by L' - L at the newest end (never below 0), additive keeps every
  -- count and shifts a debt like as-is (the debt u - L stays, paid at the same instant).
  function SLIDING.carry(s, from, mode)
    s.ring = s.slots + 1
    s.c = {}
    for i = 0, s.slots do s.c[i] = 0 end
    s.head, s.sum = -INF, 0
    local current = generationAt(s, NOW)
    local oldCurrent = generation(from)
    local n = used(from, oldCurrent)
    if mode == 'reset' or n <= 0 then return end
    local top = from.head
    if oldCurrent < top then top = oldCurrent end
    local counts, gens = {}, {}
    for g = top, oldCurrent - from.slots, -1 do
      local count = from.c[g % from.ring]
      if count ~= 0 then
        counts[#counts + 1] = count
        gens[#gens + 1] = g
      end
    end
    local oldLimit = from.limit
    local delta = s.limit - oldLimit
    local shift = 0
    if mode == 'as-is' or (mode == 'additive' and n > oldLimit) then shift = delta end
    if mode == 'proportional' then
      local before, sum = 0, 0
      for i = 1, #counts do
        sum = sum + counts[i]
        local scaled = mulDivCeil(sum, s.limit, oldLimit)
        counts[i] = scaled - before
        before = scaled
      end
    elseif shift < 0 then
      local left = -shift
      for i = 1, #counts do
        if left <= 0 then break end
        local off = counts[i]
        if left < off then off = left end
        counts[i] = counts[i] - off
        left = left - off
      end
    end
    s.head = current
    local function put(g, count)
      local i = g % s.ring
      local c = s.c[i] + count
      if c > s.cap then c = s.cap end
      s.c[i] = c
    end
    for i = 1, #counts do
      local expiry = start(from, gens[i] + from.ring)
      local g = generationAt(s, expiry - 1) + 1 - s.ring
      if current < g then g = current end
      put(g, counts[i])
    end
    if shift > 0 then put(current, shift) end
    local sum = 0
    for i = 0, s.slots do sum = sum + s.c[i] end
    s.sum = sum
  end
end
-- A fixed window: a port of @sluice/core's fixed-window/kernel.ts. Windows are aligned
-- to the clock's zero (window number floor(t / window), t in us), so every store agrees
-- where they start (an hourly window ends on the hour), and one count per key. A count
-- above the limit (debt) keeps the key refused until its window ends.
--
-- s: limit, window (us). State: id (the window counted in, -inf: none), count.
local FIXED = {}
if NEEDS.f then

  function FIXED.read(s, v, at)
    if not v then
      s.id, s.count = -INF, 0
      return at
    end
    s.id, s.count = sunpack('<dd', v, at)
    return at + 16
  end

  function FIXED.encode(s)
    return spack('<dd', s.id, s.count)
  end

  -- Permits counted in the window of now.
  local function counted(s)
    if s.id == floor(NOW / s.window) then return s.count end
    return 0
  end

  -- Us until the window of now ends.
  local function left(s)
    return (floor(NOW / s.window) + 1) * s.window - NOW
  end

  function FIXED.available(s)
    local n = counted(s)
    if n < s.limit then return s.limit - n end
    return 0
  end

  function FIXED.wait(s, cost)
    if cost > s.limit then return -1 end
    if counted(s) + cost <= s.limit then return 0 end
    return left(s)
  end

  function FIXED.fits(s, cost)
    return FIXED.wait(s, cost) == 0
  end

  function FIXED.take(s, cost)
    local n = counted(s)
    if n + cost > s.limit then return false end
    s.id, s.count = floor(NOW / s.window), n + cost
    return true
  end

  function FIXED.force(s, cost)
    s.id, s.count = floor(NOW / s.window), counted(s) + cost
  end

  -- Permits of an earlier window stopped counting when it ended.
  function FIXED.refund(s, cost, receipt)
    local n = counted(s)
    if n == 0 or (receipt ~= nil and receipt ~= s.id) then return end
    if n > cost then s.count = n - cost else s.count = 0 end
  end

  function FIXED.receipt(s)
    return s.id
  end

  function FIXED.fresh(s)
    return counted(s) == 0
  end

  function FIXED.freshUntil(s)
    return (s.id + 1) * s.window / 1000
  end

  function FIXED.report(s, cost, allowed)
    local n = counted(s)
    local available = 0
    if n < s.limit then available = s.limit - n end
    local reset = 0
    if available < s.limit then reset = left(s) end
    local retry = 0
    if not allowed then
      if cost > s.limit then
        retry = -1
      elseif n + cost > s.limit then
        retry = left(s)
      end
    end
    return available, reset, retry
  end
  -- Carries the state \`from\` (read under the old spec: limit, window) over into s, as mode
  -- says: the kernel's carry. The old window's count u of now moves into the new window of
  -- now: proportional ceil(u*L'/L), as-is u + L' - L (never below 0), additive u (a debt
  -- u - L above the old limit stays the same: u + L' - L).
  function FIXED.carry(s, from, mode)
    local used = counted(from)
    local delta = s.limit - from.limit
    local count = 0
    if mode ~= 'reset' and used > 0 then
      if mode == 'proportional' then
        count = mulDivCeil(used, s.limit, from.limit)
      elseif mode == 'as-is' then
        count = used + delta
        if count < 0 then count = 0 end
      elseif used > from.limit then
        count = used + delta
      else
        count = used
      end
    end
    if count == 0 then
      s.id, s.count = -INF, 0
    else
      s.id, s.count = floor(NOW / s.window), count
    end
  end
end
local op = ARGV[2]
local lease = ARGV[3]
local deadline = ARGV[4] + 0
if op == 'take' and deadline > 0 and NOW > deadline then return {-1, NOW} end
local n = ARGV[5] + 0
local costsAt = 5 + STRIDE * n
local extraAt = costsAt + n

local states = {}
for i = 1, n do
  local a = 5 + STRIDE * (i - 1)
  local kind = ARGV[a + 1]
  local s = {key = KEYS[i], kind = kind, cost = ARGV[costsAt + i] + 0, blocked = 0}
  if kind == 'c' then
    s.max, s.ttl = ARGV[a + 2] + 0, ARGV[a + 3] + 0
    s.member = string.format('%d:%s', s.cost, lease)
    -- Leases alive now (scored by their expiry, ms), and the last to expire.
    s.held, s.last = 0, NOW_MS
    local live = redis.call('ZRANGEBYSCORE', s.key, '(' .. exactText(NOW_MS), '+inf', 'WITHSCORES')
    for j = 1, #live, 2 do
      s.held = s.held + tonumber(string.match(live[j], '^(%d+):'))
      local e = tonumber(live[j + 1])
      if e > s.last then s.last = e end
    end
  else
    s.limit, s.window = ARGV[a + 2] + 0, ARGV[a + 3] + 0
    s.windowMs, s.blockFor, s.after = ARGV[a + 10] + 0, ARGV[a + 11] + 0, ARGV[a + 12] + 0
    s.grace, s.carryMode = 0, ARGV[a + 13]
    if kind == 'f' then
      s.alg = FIXED
    elseif kind == 's' then
      s.alg = SLIDING
      s.slots, s.cap = ARGV[a + 4] + 0, ARGV[a + 5] + 0
    else
      s.alg = GCRA
      s.capacity, s.tauUs, s.tauTicks = ARGV[a + 4] + 0, ARGV[a + 5] + 0, ARGV[a + 6] + 0
      s.grace, s.warmUp, s.gcd = ARGV[a + 7] + 0, ARGV[a + 8] + 0, ARGV[a + 9] + 0
    end
    readRecord(s, redis.call('GET', s.key))
    -- A warm-up key's age starts at its first sight, a read included (a block is not one).
    if s.alg == GCRA and s.warmUp > 0 and s.created == -INF and op ~= 'block' then
      s.created = NOW
      s.dirty = true
    end
    s.blocked = blockedFor(s)
  end
  states[i] = s
end

local function hold(s)
  local expires = NOW_MS + s.ttl
  redis.call('ZREMRANGEBYSCORE', s.key, '-inf', exactText(NOW_MS))
  redis.call('ZADD', s.key, exactText(expires), s.member)
  s.held = s.held + s.cost
  if expires > s.last then s.last = expires end
  if not TESTING then redis.call('PEXPIREAT', s.key, string.format('%d', ceil(s.last))) end
end

local taken = false
if op == 'take' then
  -- A take the client sent again after its reply was lost (it reconnected) finds its own
  -- lease: it was admitted, and is admitted again, taking nothing more.
  local replay = false
  if lease ~= '' then
    for _, s in ipairs(states) do
      if s.kind == 'c' and s.cost > 0 then
        local score = redis.call('ZSCORE', s.key, s.member)
        if score and tonumber(score) > NOW_MS then replay = true end
      end
    end
  end
  taken = true
  for _, s in ipairs(states) do
    if replay then
      s.admits = true
    elseif s.kind == 'c' then
      s.admits = s.held + s.cost <= s.max
    else
      s.admits = s.blocked == 0 and s.alg.fits(s, s.cost)
    end
    if not s.admits then taken = false end
  end
  if replay then
    -- Nothing to write.
  elseif taken then
    for _, s in ipairs(states) do
      if s.cost > 0 then
        if s.kind == 'c' then
          hold(s)
        else
          s.alg.take(s, s.cost)
          s.dirty = true
        end
      end
    end
  else
    -- Requests during a block neither count nor extend it.
    for _, s in ipairs(states) do
      if s.kind ~= 'c' and not s.admits and s.blockFor > 0 and s.blocked == 0 then
        s.blocked = strike(s)
        s.dirty = true
      end
    end
  end
elseif op == 'force' then
  for _, s in ipairs(states) do
    if s.kind ~= 'c' and s.cost > 0 then
      s.alg.force(s, s.cost)
      s.dirty = true
    end
  end
elseif op == 'block' then
  local ms = ARGV[extraAt + 1] + 0
  for _, s in ipairs(states) do
    if s.kind ~= 'c' then
      block(s, ms)
      s.dirty = true
    end
  end
elseif op == 'refund' or op == 'settle' then
  for i, s in ipairs(states) do
    -- A key with no state is fresh: nothing to give back.
    if s.kind ~= 'c' and s.cost > 0 and s.known then
      local receipt = ARGV[extraAt + i]
      if receipt == '' then receipt = nil else receipt = receipt + 0 end
      s.alg.refund(s, s.cost, receipt)
      s.dirty = true
    end
  end
  -- A settle then takes what the actual cost exceeds its estimate by, as a force does.
  if op == 'settle' then
    for i, s in ipairs(states) do
      local more = ARGV[extraAt + n + i] + 0
      if s.kind ~= 'c' and more > 0 then
        s.alg.force(s, more)
        s.dirty = true
      end
    end
  end
end

for _, s in ipairs(states) do
  if s.dirty then saveRecord(s) end
end

local reply = {taken and 1 or 0, NOW}
if op == 'refund' or op == 'block' then return reply end
for _, s in ipairs(states) do
  if op ~= 'take' then
    -- What a take of one would find, taking nothing.
    if s.kind == 'c' then
      s.admits = s.held + 1 <= s.max
    else
      s.admits = s.blocked == 0 and s.alg.available(s) >= 1
    end
  end
  if s.kind == 'c' then
    local remaining = s.max - s.held
    if remaining < 0 then remaining = 0 end
    local m = #reply
    reply[m + 1] = s.admits and 1 or 0
    reply[m + 2] = remaining
    reply[m + 3] = 0
    reply[m + 4] = 0
    reply[m + 5] = -1
    reply[m + 6] = 0
  elseif op == 'take' then
    local receipt = -1
    if taken and s.cost > 0 then receipt = s.alg.receipt(s) end
    answer(reply, s, s.admits, s.cost, taken, receipt)
  else
    answer(reply, s, s.admits, 1, s.admits, -1)
  end
end
return reply
`,
}

/** src/lua/sliding-window.lua */
export const SLIDING_WINDOW: Script = {
  name: 'sliding-window',
  sha: '135b974973528b015fb546cd6f305305d816b008',
  source: `-- One take from one sliding-window policy without a penalty: the common case, in the
-- fewest Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/sliding-window.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), slots, slot cap, window (ms),
--          carry mode
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
-- The time of the call, read once. NOW is whole microseconds (what the kernels decide
-- on), NOW_MS milliseconds (what penalties and leases count in, as the memory store does).
-- ARGV[1] is '' in production: Redis's own clock (TIME), so application servers whose
-- clocks disagree still agree. A test's clock sends "<ms> <us>" instead (the store's
-- \`clock\` option); Redis's expiry does not follow that time, so under it keys are written
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
local key = KEYS[1]
local cost, limit, window, slots = ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0, ARGV[5] + 0
local v = redis.call('GET', key)
-- The spec the value keeps beside its state (lib/record.lua): equal, nothing to carry.
local HEADER = spack('<ddddd', limit, window, slots, 0, 0)

-- A take that fits in the key's newest slot (a busy key), on a key without strikes or a
-- block whose numbers stay below 2^53: inline, as lib/sliding-window.lua and
-- lib/record.lua would decide and write it (making the port's functions is most of a
-- script's cost). Anything else, below, through the port.
do
  local ring = slots + 1
  if v and #v == 8 * (ring + 3) + 40 and window * slots <= MAX_SAFE
    and string.sub(v, 9, 48) == HEADER then
    local whole = floor(NOW / window)
    local g = whole * slots + floor((NOW - whole * window) * slots / window)
    local head, sum = sunpack('<dd', v, 49)
    if g <= head and sum + cost <= limit and head < MAX_SAFE then
      -- Counted in the head generation (never before it).
      local i = head % ring
      local count = sunpack('<d', v, 65 + 8 * i)
      local added = cost
      if ARGV[6] - count < added then added = ARGV[6] - count end
      count = count + added
      sum = sum + added
      -- Until one more permit: the oldest generation with permits leaves the window
      -- (the head's own when it holds them all).
      local leaves = head
      if count ~= sum then
        for old = head - slots, head do
          local c = sunpack('<d', v, 65 + 8 * (old % ring))
          if old == head then c = count end
          if c > 0 then
            leaves = old
            break
          end
        end
      end
      local next = leaves + ring
      local start = floor(next / slots)
      local reset = start * window + ceil((next - start * slots) * window / slots) - NOW
      -- The key already expires when its head generation leaves the window.
      redis.call('SETRANGE', key, '56',
        spack('<d', sum) .. string.sub(v, 65, 64 + 8 * i) .. spack('<d', count))
      return {1, limit - sum, reset, 0, head, 0}
    end
  end
end

-- The port's functions this script needs (see lib/gcra.lua).
local NEEDS = {s = true}
-- Integer arithmetic past 2^53 in Lua's doubles (Lua 5.1 has no integers), a port of
-- @sluice/core's exact.ts: a product of two safe integers plus a third, divided by a
-- fourth. Limits and windows may each be as large as 2^53, so permits x window can pass
-- 2^53 (10^10 tokens a day is 8.64e20 tick-microseconds). A sum that fits is plain
-- doubles; a larger one is split exactly into two doubles (Dekker's product), its
-- quotient estimated in floating point and corrected by the exact remainder: the same
-- operations as exact.ts, so both land on the same numbers.
-- Veltkamp's splitter: halves of 26 bits each, whose products are exact.
local SPLITTER = 134217729
-- Where the split product stays exact (exact.ts's DEKKER_PRODUCT and DEKKER_DIVISOR).
local DEKKER_PRODUCT = 2 ^ 100
local DEKKER_DIVISOR = 2 ^ 50

-- floor((a*b + c) / d) and the remainder, exactly, for safe integers a, b, c >= 0 and
-- d >= 1 whose quotient is a safe integer.
local function mulAddDivMod(a, b, c, d)
  local product = a * b
  if product <= MAX_SAFE and product + c <= MAX_SAFE then
    -- Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    local q = floor((product + c) / d)
    return q, product + c - q * d
  end
  if product >= DEKKER_PRODUCT or d > DEKKER_DIVISOR then
    -- Absurd policies (limits or windows near 2^53 together), where exact.ts uses BigInt:
    -- long multiplication in base 2 over the smaller factor, quotient and remainder kept
    -- apart, so that no intermediate passes d and every one is an exact double.
    if a > b then a, b = b, a end
    if b == INF then error('sluice: an infinite operand of mulAddDivMod') end
    local bq = floor(b / d)
    local br = b - bq * d
    local bit = 1
    while bit * 2 <= a do bit = bit * 2 end
    local q, r = 0, 0
    while bit >= 1 do
      q = q + q
      if r >= d - r then
        r = r - (d - r)
        q = q + 1
      else
        r = r + r
      end
      if a >= bit then
        a = a - bit
        q = q + bq
        if r >= d - br then
          r = r - (d - br)
          q = q + 1
        else
          r = r + br
        end
      end
      bit = bit / 2
    end
    local cq = floor(c / d)
    local cr = c - cq * d
    if r >= d - cr then return q + cq + 1, r - (d - cr) end
    return q + cq, r + cr
  end
  -- c = cq*d + cr first: the split product stays exact only for a small addend.
  local cq = floor(c / d)
  local cr = c - cq * d
  local q = floor((product + cr) / d)
  -- a*b + cr - q*d, exactly: each product split into its rounded value and its rounding
  -- error (both exact); the large parts cancel exactly (Sterbenz) because they are close.
  local p2 = q * d
  local t = a * SPLITTER
  local ah = t - (t - a)
  local al = a - ah
  t = b * SPLITTER
  local bh = t - (t - b)
  local bl = b - bh
  t = q * SPLITTER
  local qh = t - (t - q)
  local ql = q - qh
  t = d * SPLITTER
  local dh = t - (t - d)
  local dl = d - dh
  local e1 = ah * bh - product + ah * bl + al * bh + al * bl
  local e2 = qh * dh - p2 + qh * dl + ql * dh + ql * dl
  local r = product - p2 + (e1 - e2) + cr
  -- The estimate is off by a unit or two at most: step it onto the exact quotient.
  while r < 0 do
    q = q - 1
    r = r + d
  end
  while r >= d do
    q = q + 1
    r = r - d
  end
  return q + cq, r
end

-- floor(a*b / d) and a*b mod d, exactly.
local function mulDivMod(a, b, d)
  local product = a * b
  if product <= MAX_SAFE then
    local q = floor(product / d)
    return q, product - q * d
  end
  return mulAddDivMod(a, b, 0, d)
end

-- ceil(a*b / d) exactly.
local function mulDivCeil(a, b, d)
  local q, r = mulAddDivMod(a, b, 0, d)
  if r > 0 then return q + 1 end
  return q
end
-- A time-based policy's value for one client key, one Redis string of little-endian
-- doubles: the expiry it was written with (Unix ms), the spec it was written under (see
-- readRecord), the kernel's state (see each algorithm's read), then, when the key has strikes or a block, its penalty: the
-- refusals counted since \`since\`, the end of its block, and until when they are kept,
-- in ms as the memory store counts them. One key per policy and client key: a one-policy call touches one key, so
-- a Cluster slot being migrated serves it (through ASK) instead of answering TRYAGAIN.
--
-- s holds the policy (alg: the algorithm's functions, key, windowMs, blockFor: the
-- penalty's length in ms or 0, after, grace: ms a key is kept past fresh) and the state.

-- A number for a command or a reply without Lua's 14 significant digits: integers whole,
-- fractions as the shortest text that reads back as the same double.
local function exactText(x)
  if x == floor(x) and x > -1e18 and x < 1e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- Reads \`v\` (false: no key, a fresh state) into s. A value keeps the spec it was written
-- under beside the state, after the expiry: a window's limit, window us, slots (0 for a
-- fixed window), penalty ms, refusals before it (the numbers of Policy.fingerprint); a
-- bucket's as GCRA.header lays them out. The key is the policy's name and algorithm, so a
-- value written under another spec of the name is carried over into this one here, as
-- s.carryMode says, and written back (s.dirty): the next call finds its own spec, one
-- string compare.
local function readRecord(s, v)
  s.known = v and true or false
  s.expiry = 0
  if v then s.expiry = sunpack('<d', v) end
  local at = 9
  local carried = false
  s.header = ''
  if s.alg.carry then
    if s.alg.header then
      s.header = s.alg.header(s)
    else
      s.header = spack('<ddddd', s.limit, s.window, s.slots or 0, s.blockFor or 0, s.after or 0)
    end
    if v then
      at = 9 + #s.header
      local stored = string.sub(v, 9, at - 1)
      if stored ~= s.header then
        local from
        if s.alg.spec then
          from = s.alg.spec(stored)
        else
          from = {}
          from.limit, from.window, from.slots = sunpack('<ddd', stored)
        end
        at = s.alg.read(from, v, at)
        s.alg.carry(s, from, s.carryMode)
        s.dirty = true
        carried = true
      end
    end
  end
  if not carried then at = s.alg.read(s, v, at) end
  s.strikes = nil
  if v and #v >= at + 31 then
    s.strikes, s.since, s.blockedUntil, s.keep = sunpack('<dddd', v, at)
    -- Kept past their time (the memory store drops them then): gone.
    if NOW_MS > s.keep then s.strikes = nil end
  end
end

-- Milliseconds the key stays blocked (0: not blocked).
local function blockedFor(s)
  if s.strikes == nil then return 0 end
  local left = s.blockedUntil - NOW_MS
  if left > 0 then return left end
  return 0
end

-- Counts a refusal (the memory store's countStrike): the \`after\`th within one window of
-- the first starts a block and the count starts again. Returns the block's length, or 0.
local function strike(s)
  local count, since, untilMs = s.strikes, s.since, s.blockedUntil
  if count == nil or NOW_MS - since >= s.windowMs then count, since, untilMs = 0, NOW_MS, 0 end
  count = count + 1
  if count >= s.after then count, since, untilMs = 0, NOW_MS, NOW_MS + s.blockFor end
  s.strikes, s.since, s.blockedUntil = count, since, untilMs
  -- Kept while they can still matter: until the block ends or their window (the window of
  -- the policy that counted them, whatever spec writes the key later) closes.
  local keep = since + s.windowMs
  if untilMs > keep then keep = untilMs end
  keep = ceil(keep - NOW_MS)
  if keep < 1 then keep = 1 end
  s.keep = NOW_MS + keep
  if untilMs > NOW_MS then return s.blockFor end
  return 0
end

-- Blocks the key for ms from now (0 lifts a block). Strikes count afresh once it ends:
-- its window is taken to have started one window before the block's end.
local function block(s, ms)
  if ms == 0 then
    s.strikes = nil
  else
    s.strikes, s.since, s.blockedUntil, s.keep = 0, NOW_MS + ms - s.windowMs, NOW_MS + ms, NOW_MS + ms
  end
end

-- Writes s back: deleted once worth nothing (a fresh state, strikes that no longer count),
-- else expiring once it is (plus the policy's grace, so that a busy key moves its expiry
-- only once in a while, not on every take).
local function saveRecord(s)
  local tail, keep = '', 0
  -- Strikes are kept until the block ends or the window they were counted in closes (the
  -- memory store's rule): dropped after, they decide as kept ones would.
  if s.strikes ~= nil and NOW_MS <= s.keep then
    tail = spack('<dddd', s.strikes, s.since, s.blockedUntil, s.keep)
    keep = s.keep
  end
  if tail == '' and s.alg.fresh(s) then
    if s.known then redis.call('DEL', s.key) end
    return
  end
  local untilMs = s.alg.freshUntil(s)
  if keep > untilMs then untilMs = keep end
  local needed = ceil(untilMs)
  if s.known and needed <= s.expiry then
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'KEEPTTL')
  elseif TESTING then
    s.expiry = INF
    redis.call('SET', s.key, spack('<d', INF) .. s.header .. s.alg.encode(s) .. tail)
  else
    s.expiry = needed + s.grace
    redis.call('SET', s.key, spack('<d', s.expiry) .. s.header .. s.alg.encode(s) .. tail, 'PXAT',
      string.format('%d', s.expiry))
  end
  s.known = true
end

-- A number for a reply: an integer reply past 2^53 does not come back whole (ioredis's
-- parser, for one, reads its digits into a double one at a time), so larger ones (waits
-- and arrival times of centuries of debt) go as text.
local function replyNumber(x)
  if x > MAX_SAFE then return exactText(x) end
  return x
end

-- One policy's answer: admitted (1 | 0), available, reset us (until one more permit, or
-- the first once a block ends), retry us (-1: never), receipt (-1: none), blocked (0, or
-- the block's ms left as text: a fraction). The store turns it into a PolicyResult as the
-- memory store builds one.
local function answer(reply, s, admits, cost, allowed, receipt)
  local available, reset, retry = s.alg.report(s, cost, allowed)
  local blocked = s.blocked
  if blocked > 0 then
    reset = s.alg.wait(s, 1)
    receipt = -1
  end
  local n = #reply
  reply[n + 1] = admits and 1 or 0
  reply[n + 2] = available
  reply[n + 3] = replyNumber(reset)
  reply[n + 4] = replyNumber(retry)
  reply[n + 5] = replyNumber(receipt)
  reply[n + 6] = blocked > 0 and exactText(blocked) or 0
end
-- A sliding window: a port of @sluice/core's sliding-window/kernel.ts. The window is cut
-- into \`slots\` slots, and generation g is slot number g since the clock's zero
-- (floor(t x slots / window), t in us). A permit counts until its generation has wholly
-- left the window, so at generation c the generations c - slots to c count.
--
-- s: limit, window (us), slots, cap (the most a slot counts: slotCap(limit)). State: a
-- ring of slots + 1 counts for consecutive generations (c[g mod ring]), the newest being
-- \`head\` (-inf: fresh), and their sum. In the value: head, sum, then the ring.
local SLIDING = {}
if NEEDS.s then

  function SLIDING.read(s, v, at)
    s.ring = s.slots + 1
    s.c = {}
    if not v then
      s.head, s.sum = -INF, 0
      for i = 0, s.slots do s.c[i] = 0 end
      return at
    end
    local values = {sunpack('<' .. string.rep('d', s.ring + 2), v, at)}
    s.head, s.sum = values[1], values[2]
    for i = 0, s.slots do s.c[i] = values[i + 3] end
    return at + 8 * (s.ring + 2)
  end

  function SLIDING.encode(s)
    local parts = {spack('<dd', s.head, s.sum)}
    for i = 0, s.slots do parts[i + 2] = spack('<d', s.c[i]) end
    return table.concat(parts)
  end

  -- The generation of t (us).
  local function generationAt(s, t)
    local whole = floor(t / s.window)
    return whole * s.slots + (mulDivMod(t - whole * s.window, s.slots, s.window))
  end

  -- The generation of now, never before the head (a clock that steps back counts there).
  local function generation(s)
    local g = generationAt(s, NOW)
    if g < s.head then return s.head end
    return g
  end

  -- The first us of generation g.
  local function start(s, g)
    local whole = floor(g / s.slots)
    return whole * s.window + mulDivCeil(g - whole * s.slots, s.window, s.slots)
  end

  -- Permits counted in the window ending with generation g (never before the head).
  local function used(s, g)
    local head = s.head
    if g == head then return s.sum end
    if g - head > s.slots then return 0 end
    -- The generations head - slots up to g - slots - 1 have left the window since head.
    local n = s.sum
    for old = head - s.slots, g - s.slots - 1 do n = n - s.c[old % s.ring] end
    return n
  end

  -- Moves the head forward to g, zeroing the counts of the generations it claims.
  local function claim(s, g)
    local head = s.head
    if g <= head then return end
    local first = g - s.ring + 1
    if head + 1 > first then first = head + 1 end
    local sum = s.sum
    for claimed = first, g do
      local i = claimed % s.ring
      sum = sum - s.c[i]
      s.c[i] = 0
    end
    s.head, s.sum = g, sum
  end

  -- Adds cost to generation g, saturating at the slot cap.
  local function add(s, g, cost)
    claim(s, g)
    local i = g % s.ring
    local count = s.c[i]
    local added = cost
    if s.cap - count < added then added = s.cap - count end
    s.c[i] = count + added
    s.sum = s.sum + added
  end

  -- Whole us until cost (<= limit) fits at generation g with n counted: until enough of the
  -- oldest permits have left the window.
  local function waitUs(s, g, n, cost)
    local excess = n + cost - s.limit
    if excess <= 0 then return 0 end
    local head = s.head
    local oldest = g - s.slots
    -- Everything counted sits in the newest slot (a busy key, or one that comes back now
    -- and then): the walk below would find it there, after only empty slots.
    if head >= oldest and s.c[head % s.ring] == n then
      local from = g
      if n >= excess then from = head end
      return start(s, from + s.ring) - NOW
    end
    for old = oldest, head do
      excess = excess - s.c[old % s.ring]
      if excess <= 0 then return start(s, old + s.ring) - NOW end
    end
    return start(s, g + s.ring) - NOW
  end

  function SLIDING.available(s)
    local n = used(s, generation(s))
    if n < s.limit then return s.limit - n end
    return 0
  end

  function SLIDING.wait(s, cost)
    if cost > s.limit then return -1 end
    local g = generation(s)
    return waitUs(s, g, used(s, g), cost)
  end

  function SLIDING.fits(s, cost)
    return SLIDING.wait(s, cost) == 0
  end

  function SLIDING.take(s, cost)
    local g = generation(s)
    if used(s, g) + cost > s.limit then return false end
    add(s, g, cost)
    return true
  end

  function SLIDING.force(s, cost)
    add(s, generation(s), cost)
  end

  -- Takes up to cost permits off the count at ring index i; returns how many.
  local function uncount(s, i, cost)
    local count = s.c[i]
    local back = cost
    if count < back then back = count end
    s.c[i] = count - back
    s.sum = s.sum - back
    return back
  end

  -- Gives back cost permits: with a receipt, only from the generation of the take, while it
  -- still counts; without, newest first.
  function SLIDING.refund(s, cost, receipt)
    local head = s.head
    local oldest = generation(s) - s.slots
    if receipt ~= nil then
      if receipt < oldest or receipt > head then return end
      uncount(s, receipt % s.ring, cost)
      return
    end
    local left, newest = cost, head
    while newest >= oldest and left > 0 do
      left = left - uncount(s, newest % s.ring, left)
      newest = newest - 1
    end
  end

  function SLIDING.receipt(s)
    return s.head
  end

  function SLIDING.fresh(s)
    return used(s, generation(s)) == 0
  end

  -- Unix ms once the head generation has left the window (nothing counts then).
  function SLIDING.freshUntil(s)
    if s.head == -INF then return -INF end
    return start(s, s.head + s.ring) / 1000
  end

  function SLIDING.report(s, cost, allowed)
    local g = generation(s)
    local n = used(s, g)
    local available = 0
    if n < s.limit then available = s.limit - n end
    local reset = 0
    if available < s.limit then reset = waitUs(s, g, n, available + 1) end
    local retry = 0
    if not allowed then
      if cost > s.limit then retry = -1 else retry = waitUs(s, g, n, cost) end
    end
    return available, reset, retry
  end
  -- Carries the state \`from\` (read under the old spec: limit, window, slots) over into s,
  -- as mode says: the kernel's carry. Each old slot's count moves to the new slot that
  -- leaves the window first at or after the instant the old one would have (or the
  -- current slot), so no permit stops counting earlier; then the total moves by mode:
  -- proportional scales the counts newest first (ceil(u*L'/L) of the suffix sums), as-is
  -- shifts the total by L' - L at the newest end (never below 0), additive keeps every
  -- count and shifts a debt like as-is (the debt u - L stays, paid at the same instant).
  function SLIDING.carry(s, from, mode)
    s.ring = s.slots + 1
    s.c = {}
    for i = 0, s.slots do s.c[i] = 0 end
    s.head, s.sum = -INF, 0
    local current = generationAt(s, NOW)
    local oldCurrent = generation(from)
    local n = used(from, oldCurrent)
    if mode == 'reset' or n <= 0 then return end
    local top = from.head
    if oldCurrent < top then top = oldCurrent end
    local counts, gens = {}, {}
    for g = top, oldCurrent - from.slots, -1 do
      local count = from.c[g % from.ring]
      if count ~= 0 then
        counts[#counts + 1] = count
        gens[#gens + 1] = g
      end
    end
    local oldLimit = from.limit
    local delta = s.limit - oldLimit
    local shift = 0
    if mode == 'as-is' or (mode == 'additive' and n > oldLimit) then shift = delta end
    if mode == 'proportional' then
      local before, sum = 0, 0
      for i = 1, #counts do
        sum = sum + counts[i]
        local scaled = mulDivCeil(sum, s.limit, oldLimit)
        counts[i] = scaled - before
        before = scaled
      end
    elseif shift < 0 then
      local left = -shift
      for i = 1, #counts do
        if left <= 0 then break end
        local off = counts[i]
        if left < off then off = left end
        counts[i] = counts[i] - off
        left = left - off
      end
    end
    s.head = current
    local function put(g, count)
      local i = g % s.ring
      local c = s.c[i] + count
      if c > s.cap then c = s.cap end
      s.c[i] = c
    end
    for i = 1, #counts do
      local expiry = start(from, gens[i] + from.ring)
      local g = generationAt(s, expiry - 1) + 1 - s.ring
      if current < g then g = current end
      put(g, counts[i])
    end
    if shift > 0 then put(current, shift) end
    local sum = 0
    for i = 0, s.slots do sum = sum + s.c[i] end
    s.sum = sum
  end
end
local s = {key = key, alg = SLIDING, limit = limit, window = window, slots = slots,
  cap = ARGV[6] + 0, windowMs = ARGV[7] + 0, grace = 0, carryMode = ARGV[8]}
-- The body of a one-policy take through the port (s: the policy, as the script made it;
-- v: its value, cost): one SET when admitted. A key blocked (by the store's block) is
-- refused with its block.
readRecord(s, v)
s.blocked = blockedFor(s)
local reply = {}
if s.blocked > 0 then
  if s.dirty then saveRecord(s) end
  answer(reply, s, false, cost, false, -1)
  return reply
end
local allowed = s.alg.take(s, cost)
-- A value carried over from another spec is written back even when refused.
if allowed or s.dirty then saveRecord(s) end
answer(reply, s, allowed, cost, allowed, allowed and s.alg.receipt(s) or -1)
return reply
`,
}
