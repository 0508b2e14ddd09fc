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
  -- Carries the state `from` (read under the old spec: limit, window) over into s, as mode
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
