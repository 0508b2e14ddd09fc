-- One take from one fixed-window policy: the common case, in the fewest Redis calls.
--
-- KEYS[1]  the policy's state for one client key
-- ARGV     cost, limit, window (us), and '1' when the reply must carry the time
--
-- State: one integer, (window number mod cycle + 1) x m + count with m = 2 x limit + 1 and
-- cycle the largest (up to 2^32) that keeps it below 2^53, that expires exactly when
-- its window ends (PXAT). The expiry is what ends a window: while the key exists it holds
-- the current window's count, so an admitted take in a running window is one INCRBY and
-- needs no clock. m > 2 x limit keeps a count that a take pushed past the limit below the
-- window number. The window number makes receipts exact, and lets a key that lost its
-- expiry be recognised (and restarted) the first time it refuses.
--
-- Reply: the new state (an integer) for an admitted take in a running window, unless the
-- time is wanted; otherwise {admitted, remaining, reset us, retry us (-1: never),
-- receipt, now us}.
local n = ARGV[1] + 0
local limit = ARGV[2] + 0
local m = 2 * limit + 1
local taken = false
local v
if n <= limit then
  -- The cost as sent: a Lua number would be printed back into a string for INCRBY.
  v = redis.call('INCRBY', KEYS[1], ARGV[1])
  if v >= m then
    taken = v % m <= limit
    if taken then
      if not ARGV[4] then return v end
    else
      v = redis.call('DECRBY', KEYS[1], n)
    end
  end
else
  v = tonumber(redis.call('GET', KEYS[1])) or 0
end

-- Redis's own clock (us), so that application servers' clocks may disagree.
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]
local window = ARGV[3] + 0
local id = math.floor(now / window)
local stop = (id + 1) * window
local cycle = math.floor((9007199254740991 - 2 * limit) / m) - 1
if cycle > 4294967296 then cycle = 4294967296 end
local base = (id % cycle + 1) * m
local used = v - base
if used < 0 or used > limit then
  -- No count of this window: INCRBY has just made the key, or it outlived its window.
  used = 0
  if n <= limit then
    -- PXAT one millisecond early: Redis keeps a key through the millisecond it expires in.
    redis.call('SET', KEYS[1], base + n, 'PXAT', math.ceil(stop / 1000) - 1)
    return {1, limit - n, stop - now, 0, id, now}
  end
end
if taken then return {1, limit - used, stop - now, 0, id, now} end
local retry = stop - now
if n > limit then retry = -1 end
local reset = 0
if used > 0 then reset = stop - now end
return {0, limit - used, reset, retry, 0, now}
