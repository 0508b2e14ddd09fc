-- A sliding window: a port of @sluice/core's sliding-window/kernel.ts. The window is cut
-- into `slots` slots, and generation g is slot number g since the clock's zero
-- (floor(t x slots / window), t in us). A permit counts until its generation has wholly
-- left the window, so at generation c the generations c - slots to c count.
--
-- s: limit, window (us), slots, cap (the most a slot counts: slotCap(limit)). State: a
-- ring of slots + 1 counts for consecutive generations (c[g mod ring]), the newest being
-- `head` (-inf: fresh), and their sum. In the value: head, sum, then the ring.
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
  -- Carries the state `from` (read under the old spec: limit, window, slots) over into s,
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
