-- One take from one fixed-window policy without a penalty: the common case, in the fewest
-- Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/fixed-window.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), window (ms), carry mode
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
--!include clock
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
--!include exact
--!include record
--!include fixed-window
local s = {key = key, alg = FIXED, limit = limit, window = window, windowMs = ARGV[5] + 0,
  grace = 0, carryMode = ARGV[6]}
--!include take-one
