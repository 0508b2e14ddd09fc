-- A time-based policy's value for one client key, one Redis string of little-endian
-- doubles: the expiry it was written with (Unix ms), the spec it was written under (see
-- readRecord), the kernel's state (see each algorithm's read), then, when the key has strikes or a block, its penalty: the
-- refusals counted since `since`, the end of its block, and until when they are kept,
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

-- Reads `v` (false: no key, a fresh state) into s. A value keeps the spec it was written
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

-- Counts a refusal (the memory store's countStrike): the `after`th within one window of
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
