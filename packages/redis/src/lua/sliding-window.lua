-- One take from one sliding-window policy without a penalty: the common case, in the
-- fewest Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/sliding-window.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), slots, slot cap, window (ms),
--          carry mode
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
--!include clock
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
--!include exact
--!include record
--!include sliding-window
local s = {key = key, alg = SLIDING, limit = limit, window = window, slots = slots,
  cap = ARGV[6] + 0, windowMs = ARGV[7] + 0, grace = 0, carryMode = ARGV[8]}
--!include take-one
