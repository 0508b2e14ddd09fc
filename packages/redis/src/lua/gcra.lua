-- One take from one token-bucket or leaky-bucket policy (GCRA, no warm-up).
--
-- KEYS[1]  the policy's state for one client key
-- ARGV     cost, limit, window (units), capacity, unit (us), and '1' when the reply must
--          carry the time
--
-- State: three little-endian doubles, debt, written, expiry. Debt is how far the
-- theoretical arrival time runs ahead of `written`, in ticks of 1/limit unit (a unit is
-- 1 us, or coarser when capacity x window would pass 2^53 us): one interval is `window`
-- ticks and the burst budget is capacity x window, so every quantity is an exact integer
-- and 3 per second admits exactly 3 from a full bucket. The key expires at `expiry`, set
-- a grace of eight intervals (1 s to 1 min) past the moment the debt is paid: a busy key
-- overwrites its first 16 bytes and moves its expiry only when the debt outgrows it.
--
-- Reply: the new debt (an integer) for an admitted take, unless the time is wanted;
-- otherwise {admitted, remaining, reset us, retry us (-1: never), receipt, now us}.
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]
local n = ARGV[1] + 0
local limit = ARGV[2] + 0
local window = ARGV[3] + 0
local capacity = ARGV[4] + 0
local unit = ARGV[5] + 0
local tau = capacity * window
-- Whole units, so that the drained units telescope from write to write.
local at = math.floor(now / unit)
local debt, expiry = 0, 0
local v = redis.call('GET', KEYS[1])
if v then
  local written
  debt, written, expiry = struct.unpack('<ddd', v)
  -- A Redis clock that stepped back drains nothing instead of refilling.
  if at > written then
    debt = debt - limit * (at - written)
    if debt < 0 then debt = 0 end
  end
end
local cost = n * window
if debt + cost > tau then
  local retry = -1
  if n <= capacity then retry = math.ceil((debt + cost - tau) / limit) * unit end
  local reset = (at + math.ceil(debt / limit)) * unit - now
  if reset < 0 then reset = 0 end
  return {0, math.floor((tau - debt) / window), reset, retry, 0, now}
end
debt = debt + cost
local paid = at + math.ceil(debt / limit)
if paid <= expiry then
  redis.call('SETRANGE', KEYS[1], '0', struct.pack('<dd', debt, at))
else
  local grace = 8 * window * unit / limit
  if grace < 1000000 then grace = 1000000 elseif grace > 60000000 then grace = 60000000 end
  expiry = paid + math.ceil(grace / unit)
  redis.call('SET', KEYS[1], struct.pack('<ddd', debt, at, expiry), 'PXAT',
    math.ceil(expiry * unit / 1000))
end
if not ARGV[6] then return debt end
return {1, math.floor((tau - debt) / window), paid * unit - now, 0,
  math.floor(at * unit + debt * unit / limit), now}
