-- One take from one token-bucket or leaky-bucket policy without a penalty: the common
-- case, in the fewest Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/gcra.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), capacity, tau (whole us, and
--          ticks), grace (ms a key is kept past full), gcd of limit and window, window
--          (ms), carry mode
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
--!include clock
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
--!include exact
--!include record
--!include gcra
local s = {key = key, alg = GCRA, limit = limit, window = window, capacity = capacity,
  tauUs = tauUs, tauTicks = tauTicks, grace = ARGV[8] + 0, gcd = gcd, windowMs = ARGV[10] + 0,
  warmUp = 0, carryMode = ARGV[11]}
--!include take-one
