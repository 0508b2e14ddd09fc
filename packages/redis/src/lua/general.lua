-- Every call the one-policy scripts leave out: several policies at once (all or none),
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
--!include clock
-- The algorithms the call's policies need: only their functions are made (lib/gcra.lua).
local STRIDE = 13
local NEEDS = {}
for i = 1, ARGV[5] do
  local a = 5 + STRIDE * (i - 1)
  NEEDS[ARGV[a + 1]] = true
  if ARGV[a + 1] == 'g' and ARGV[a + 8] ~= '0' then NEEDS.w = true end
end
--!include exact
--!include record
--!include gcra
--!include sliding-window
--!include fixed-window
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
