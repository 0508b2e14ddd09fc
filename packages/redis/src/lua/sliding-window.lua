-- One take from one sliding-window policy.
--
-- KEYS[1]  the policy's state for one client key
-- ARGV     cost, limit, window (us), slots, and '1' when the reply must carry the time
--
-- The window is cut into `slots` generations (slot numbers since the epoch); a permit
-- counts until its generation has wholly left the window, so generations c - slots to c
-- count at generation c (at most `limit` in any rolling window, precision one slot, as in
-- @sluice/core). State: little-endian doubles head, total, then one base per ring index
-- (generation g sits at g mod (slots + 1)). `head` is the newest generation written,
-- `total` counts every permit since the key was made, and base(g) is the total before
-- generation g, so generations g..head hold total - base(g) permits: a window's count is
-- one subtraction, and a take in the head generation rewrites `total` alone. The key
-- expires when the head generation has left the window.
--
-- Reply: (c mod cycle) x (limit + 1) + count for an admitted take in the head generation
-- (cycle: the largest up to 2^32 that keeps it below 2^53), unless the time is wanted; otherwise {admitted, remaining, reset us, retry us (-1:
-- never), receipt, now us}.
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]
local n = ARGV[1] + 0
local limit = ARGV[2] + 0
local window = ARGV[3] + 0
local slots = ARGV[4] + 0
local ring = slots + 1
-- floor(now x slots / window), without a product beyond 2^53.
local q = math.floor(now / window)
local c = q * slots + math.floor((now - q * window) * slots / window)
local v = redis.call('GET', KEYS[1])
local head, total = -1, 0
if v then head, total = struct.unpack('<dd', v) end
-- A Redis clock that stepped back counts in the newest generation.
if c < head then c = head end
local first = c - slots
local used = 0
if first <= head then used = total - struct.unpack('<d', v, 17 + 8 * (first % ring)) end

if c == head and used + n <= limit then
  redis.call('SETRANGE', KEYS[1], '8', struct.pack('<d', total + n))
  if not ARGV[5] then
    local cycle = math.floor(9007199254740991 / (limit + 1))
    if cycle > 4294967296 then cycle = 4294967296 end
    return (c % cycle) * (limit + 1) + used + n
  end
end

-- Microseconds until generation g has wholly left the window.
local function leaves(g)
  local next = g + ring
  local whole = math.floor(next / slots)
  return whole * window + math.ceil((next - whole * slots) * window / slots) - now
end

if used + n <= limit then
  if c > head then
    -- A new head generation: the ones in between had no permits, so their base (and
    -- this one's) is the total so far. Anything older than the ring starts over.
    local parts = {struct.pack('<dd', c, total + n)}
    local before = struct.pack('<d', total)
    for i = 0, slots do
      if head < 0 or c - head >= ring or (i - head - 1) % ring < c - head then
        parts[i + 2] = before
      else
        parts[i + 2] = string.sub(v, 17 + 8 * i, 24 + 8 * i)
      end
    end
    redis.call('SET', KEYS[1], table.concat(parts), 'PXAT', math.ceil((now + leaves(c)) / 1000))
  end
  return {1, limit - used - n, leaves(c), 0, c, now}
end

-- Refused: the wait is until enough of the oldest permits have left the window.
local top = c
if head < top then top = head end
local retry, reset = -1, 0
local excess = used + n - limit
for g = first, top do
  local upto = total
  if g < head then upto = struct.unpack('<d', v, 17 + 8 * ((g + 1) % ring)) end
  local count = upto - struct.unpack('<d', v, 17 + 8 * (g % ring))
  if count > 0 then
    reset = leaves(g)
    excess = excess - count
    if excess <= 0 and retry < 0 then retry = reset end
  end
end
if n > limit then retry = -1 end
return {0, limit - used, reset, retry, 0, now}
