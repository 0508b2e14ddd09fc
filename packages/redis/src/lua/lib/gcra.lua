-- GCRA, the kernel of the token bucket, the leaky bucket and the warm-up bucket: a port
-- of @sluice/core's gcra/kernel.ts and warm-up/kernel.ts, operation for operation.
--
-- Time is counted in ticks of 1/limit us, so the emission interval T is exactly `window`
-- ticks (the window in us) and tau = capacity x window: integers for every spec, which
-- is what lets 3 per second admit exactly 3 from full. The theoretical arrival time `tat`
-- is kept in two parts, whole us (`at`, -inf: fresh) and the ticks of a started us
-- (`frac`, below limit), because a tick count can pass 2^53. n permits are admitted iff
-- max(tat, now) + n x T - now <= tau, and then tat becomes that sum.
--
-- Warm-up: the interval is 3T - floor(2T x age / warmUp) ticks while the key is younger
-- than warmUp (its age counts from the key's first sight, `created`, -inf: not seen yet),
-- and tau is at least one current interval.
--
-- s: limit, window (us), capacity, tauUs, tauTicks (tau, whole us and ticks), warmUp (us,
-- 0: none), gcd (of limit and window: n x window / limit is n x w / l with l and w small
-- for most specs, 10^10 a day is 25 / 216, so products stay below 2^53). State: at, frac,
-- created. In the value: the spec it was written under (GCRA.header), at, frac, then
-- created for warm-up.
--
-- Its functions are made only when a policy of the call needs them (NEEDS.g, NEEDS.w for
-- warm-up): making functions is much of what a script costs per call.
local GCRA = {}
if NEEDS.g then
  -- Warm-up's own, made for NEEDS.w, or by a carry from a warm-up spec.
  local interval, tolerance, warmFits, estimate
  local function makeWarmUp()
    -- The interval at age `age` (us), in ticks.
    interval = function(s, age)
      if age >= s.warmUp then return s.window end
      if age < 0 then age = 0 end
      return 3 * s.window - (mulDivMod(2 * s.window, age, s.warmUp))
    end
    -- tau at `iv` (ticks), as whole us and ticks: capacity x T, or one interval when more.
    tolerance = function(s, iv)
      if iv > s.tauInTicks then return mulDivMod(1, iv, s.limit) end
      return s.tauUs, s.tauTicks
    end
    -- Whether cost permits fit at t (us) on the state (at, frac) while warming.
    warmFits = function(s, at, frac, t, cost)
      if at < t then
        at = t
        frac = 0
      end
      local iv = interval(s, t - s.created)
      local q, r = mulDivMod(cost, iv, s.limit)
      at = at + q
      frac = frac + r
      if frac >= s.limit then
        frac = frac - s.limit
        at = at + 1
      end
      local tu, tt = tolerance(s, iv)
      local ahead = at - t
      return ahead < tu or (ahead == tu and frac <= tt)
    end
    -- The us until cost fits, in floating point with the interval taken as exactly linear in
    -- age (warm-up/kernel.ts's estimate): the excess is piecewise linear and non-increasing,
    -- with kinks where the debt is paid, where the interval falls to capacity x T and where
    -- warm-up ends. Walk the pieces and solve the first that reaches zero.
    estimate = function(s, at, frac, age, cost)
      local ticks, window, warmUp = s.limit, s.window, s.warmUp
      local tau = s.capacity * window
      local debt = 0
      if not (at < NOW) then debt = (at - NOW) * ticks + frac end
      local function excess(dt)
        local a = age + dt
        local iv = window
        if not (a >= warmUp) then iv = window * (3 - (2 * a) / warmUp) end
        local owed = debt - dt * ticks
        if owed < 0 then owed = 0 end
        local most = tau
        if iv > most then most = iv end
        return owed + cost * iv - most
      end
      local kinks = {debt / ticks, warmUp - age}
      if s.capacity < 3 then kinks[3] = (warmUp * (3 - s.capacity)) / 2 - age end
      table.sort(kinks)
      local from, before = 0, excess(0)
      for _, to in ipairs(kinks) do
        if to > from then
          local after = excess(to)
          if after <= 0 then return from + (before * (to - from)) / (before - after) end
          from, before = to, after
        end
      end
      return from
    end
  end
  if NEEDS.w then makeWarmUp() end

  function GCRA.read(s, v, at)
    s.at, s.frac, s.created = -INF, 0, -INF
    s.l, s.w = s.limit / s.gcd, s.window / s.gcd
    if s.warmUp > 0 then
      local tau = s.capacity * s.window
      s.tauInTicks = tau <= MAX_SAFE and tau or INF
    end
    if not v then return at end
    s.at, s.frac = sunpack('<dd', v, at)
    if s.warmUp == 0 then return at + 16 end
    s.created = sunpack('<d', v, at + 16)
    return at + 24
  end

  function GCRA.encode(s)
    if s.warmUp == 0 then return spack('<dd', s.at, s.frac) end
    return spack('<ddd', s.at, s.frac, s.created)
  end

  -- cost x window / limit, reduced by the gcd: whole us, and the ticks left over.
  local function divide(s, cost)
    local product = cost * s.w
    if product <= MAX_SAFE then
      local q = floor(product / s.l)
      return q, (product - q * s.l) * s.gcd
    end
    local q, r = mulAddDivMod(cost, s.w, 0, s.l)
    return q, r * s.gcd
  end

  -- The cost of `cost` permits now, as whole us and ticks.
  local function costOf(s, cost)
    if s.warmUp == 0 then return divide(s, cost) end
    return mulDivMod(cost, interval(s, NOW - s.created), s.limit)
  end

  -- max(tat, now) + cost x T - tau - now, rounded up to whole us (0 when it fits): the wait
  -- with T and tau constant from now on.
  local function steadyWait(s, at, frac, cost)
    if at < NOW then
      at = NOW
      frac = 0
    end
    local q, r = divide(s, cost)
    local us = at + q - NOW - s.tauUs
    local ticks = frac + r - s.tauTicks
    if ticks < 0 then
      ticks = ticks + s.limit
      us = us - 1
    elseif ticks >= s.limit then
      ticks = ticks - s.limit
      us = us + 1
    end
    if us < 0 then return 0 end
    if ticks > 0 then return us + 1 end
    return us
  end

  -- floor((tau - debt) / T), 0 in debt; and the slack's remainder in ticks (-1 in debt
  -- beyond tau, nil when full).
  local function steadyAvailable(s)
    local at = s.at
    if at < NOW then return s.capacity end
    local us = s.tauUs - (at - NOW)
    local ticks = s.tauTicks - s.frac
    if ticks < 0 then
      ticks = ticks + s.limit
      us = us - 1
    end
    if us < 0 then return 0, -1 end
    -- floor((us x limit + ticks) / window), reduced by the gcd: with ticks = q x gcd + r
    -- (r < gcd), the r ticks never reach a whole permit on their own.
    local g = s.gcd
    local whole = floor(ticks / g)
    local q, r = mulAddDivMod(us, s.l, whole, s.w)
    return q, r * g + (ticks - whole * g)
  end

  local function warming(s)
    return s.warmUp > 0 and NOW - s.created < s.warmUp
  end

  -- Whole us from now until cost (<= capacity) fits. While warming, whether it fits only
  -- ever turns from no to yes as time passes, so the answer is found from the estimate,
  -- then checked and corrected exactly (doubling up to 64 times, then bisecting).
  local function waitUs(s, cost)
    if not warming(s) then return steadyWait(s, s.at, s.frac, cost) end
    local at, frac, t = s.at, s.frac, NOW
    if warmFits(s, at, frac, t, cost) then return 0 end
    local guess = ceil(estimate(s, at, frac, t - s.created, cost))
    if guess < 1 then guess = 1 end
    local lo, hi
    if warmFits(s, at, frac, t + guess, cost) then
      if not warmFits(s, at, frac, t + guess - 1, cost) then return guess end
      lo, hi = 0, guess - 1
    else
      local step = 1
      for _ = 1, 64 do
        if warmFits(s, at, frac, t + guess + step, cost) then break end
        step = step * 2
      end
      lo, hi = guess + floor(step / 2), guess + step
    end
    -- It fits at hi, not at lo. Past 2^53 us (a debt of centuries) neighbouring doubles are
    -- further apart than 1: stop when no number lies between them.
    while hi - lo > 1 do
      local mid = lo + floor((hi - lo) / 2)
      if mid == lo or mid == hi then break end
      if warmFits(s, at, frac, t + mid, cost) then hi = mid else lo = mid end
    end
    return hi
  end

  function GCRA.available(s)
    if not warming(s) then return (steadyAvailable(s)) end
    local iv = interval(s, NOW - s.created)
    if iv == s.window then return (steadyAvailable(s)) end
    local us, ticks = tolerance(s, iv)
    if s.at >= NOW then
      us = us - (s.at - NOW)
      ticks = ticks - s.frac
      if ticks < 0 then
        ticks = ticks + s.limit
        us = us - 1
      end
      if us < 0 then return 0 end
    end
    local free = (mulAddDivMod(us, s.limit, ticks, iv))
    if free > s.capacity then return s.capacity end
    return free
  end

  -- Whole us until cost would pass (-1: never).
  function GCRA.wait(s, cost)
    if cost > s.capacity then return -1 end
    return waitUs(s, cost)
  end

  function GCRA.fits(s, cost)
    return cost <= s.capacity and waitUs(s, cost) == 0
  end

  -- max(tat, now) + the cost of cost permits now: tat after taking them, as whole us and
  -- ticks.
  local function after(s, cost)
    local at, frac = s.at, s.frac
    if at < NOW then
      at = NOW
      frac = 0
    end
    local q, r = costOf(s, cost)
    at = at + q
    frac = frac + r
    if frac >= s.limit then
      frac = frac - s.limit
      at = at + 1
    end
    return at, frac
  end

  -- Takes cost permits whether they fit or not (debt): tat moves from max(tat, now).
  function GCRA.force(s, cost)
    s.at, s.frac = after(s, cost)
  end

  function GCRA.take(s, cost)
    if cost > s.capacity then return false end
    if warming(s) then
      if not warmFits(s, s.at, s.frac, NOW, cost) then return false end
      GCRA.force(s, cost)
      return true
    end
    local at, frac = after(s, cost)
    local ahead = at - NOW
    if ahead < s.tauUs or (ahead == s.tauUs and frac <= s.tauTicks) then
      s.at, s.frac = at, frac
      return true
    end
    return false
  end

  -- Gives back cost permits, never beyond full. The receipt is tat just after the take:
  -- the bucket drains its debt oldest first, so of the permits taken then, only the part
  -- of their debt not yet drained (receipt - now) still counts.
  function GCRA.refund(s, cost, receipt)
    if s.at < NOW then return end
    local us, ticks = costOf(s, cost)
    if receipt ~= nil then
      local owed = receipt - NOW
      if owed <= 0 then return end
      if us > owed or (us == owed and ticks > 0) then us, ticks = owed, 0 end
    end
    local at, frac = s.at - us, s.frac - ticks
    if frac < 0 then
      frac = frac + s.limit
      at = at - 1
    end
    if at < NOW then
      at = NOW
      frac = 0
    end
    s.at, s.frac = at, frac
  end

  -- tat rounded up to a whole us.
  function GCRA.receipt(s)
    if s.frac > 0 then return s.at + 1 end
    return s.at
  end

  -- A warm-up key's state is its age: never fresh.
  function GCRA.fresh(s)
    return s.warmUp == 0 and (s.at < NOW or (s.at == NOW and s.frac == 0))
  end

  -- Unix ms once the state is worth nothing. A warm-up key is kept until warm-up is over
  -- and then for one more warm-up period of idleness (a key made again starts cold).
  function GCRA.freshUntil(s)
    local stop = GCRA.receipt(s)
    if s.warmUp == 0 then return stop / 1000 end
    if s.created + s.warmUp > stop then stop = s.created + s.warmUp end
    return (stop + s.warmUp) / 1000
  end

  -- available, reset us (until one more permit, 0 when full), retry us (0: allowed, -1:
  -- never), as the kernel's report.
  function GCRA.report(s, cost, allowed)
    local available, rem
    if s.warmUp == 0 then
      available, rem = steadyAvailable(s)
    else
      available = GCRA.available(s)
    end
    local reset = 0
    if available < s.capacity then
      if rem ~= nil and rem >= 0 then
        -- With the slack tau - debt = available x T + rem ticks, the next permit needs
        -- T - rem more ticks of drain, rounded up to whole us.
        reset = ceil((s.window - rem) / s.limit)
      else
        -- In debt beyond tau, or warm-up (its interval moves too): the search.
        reset = waitUs(s, available + 1)
      end
    end
    local retry = 0
    if not allowed then retry = GCRA.wait(s, cost) end
    return available, reset, retry
  end

  -- The spec a value keeps beside its state (lib/record.lua): limit, window us, capacity,
  -- warm-up us, penalty ms, refusals before it (the numbers of Policy.fingerprint).
  function GCRA.header(s)
    return spack('<dddddd', s.limit, s.window, s.capacity, s.warmUp, s.blockFor or 0, s.after or 0)
  end

  -- The spec `stored` (a header) was written under, with what read needs worked out as the
  -- store's codec does: tau (whole us and ticks) and the gcd of limit and window.
  function GCRA.spec(stored)
    local from = {}
    from.limit, from.window, from.capacity, from.warmUp = sunpack('<dddd', stored)
    from.tauUs, from.tauTicks = mulDivMod(from.capacity, from.window, from.limit)
    local a, b = from.limit, from.window
    while b ~= 0 do a, b = b, math.fmod(a, b) end
    from.gcd = a
    return from
  end

  -- Carries the state `from` (read under the old spec) over into s, as mode says: a port of
  -- the kernel's carry (gcra/kernel.ts), in the same exact integers. With D = tat - now
  -- ahead and the available permits A = (tau - D) / T: a key in debt (D > tau) keeps the
  -- instant it is paid off, tat - tau, in every mode but reset, and gets the new tau from
  -- there; a key in credit gets the mode's A' (proportional A x K'/K, as-is min(A, K'),
  -- additive A + K' - K, below 0 a debt) as D' = tau' - A' x T', rounded up to a tick of
  -- the new spec. A fresh key stays fresh; a warm-up key keeps its age.
  function GCRA.carry(s, from, mode)
    GCRA.read(s, false, 0)
    if from.warmUp > 0 and interval == nil then makeWarmUp() end
    local t = NOW
    local created = t
    if from.warmUp > 0 then created = from.created end
    s.created = from.created
    if mode == 'reset' or from.at < t or (from.at == t and from.frac == 0) then return end
    -- Nonnegative integers past 2^53 (the kernel's BigInts): little-endian limbs of 24
    -- bits, so a limb product and its carries stay exact doubles. Made only here: a carry
    -- is once per key and spec change.
    local B = 16777216
    local function trim(a)
      while #a > 0 and a[#a] == 0 do a[#a] = nil end
      return a
    end
    local function big(n)
      local a = {}
      while n > 0 do
        local q = floor(n / B)
        a[#a + 1] = n - q * B
        n = q
      end
      return a
    end
    local function add(a, b)
      local c, carry = {}, 0
      local n = #a
      if #b > n then n = #b end
      for i = 1, n do
        local x = (a[i] or 0) + (b[i] or 0) + carry
        if x >= B then
          c[i], carry = x - B, 1
        else
          c[i], carry = x, 0
        end
      end
      if carry > 0 then c[n + 1] = carry end
      return c
    end
    -- a - b, for a >= b.
    local function sub(a, b)
      local c, borrow = {}, 0
      for i = 1, #a do
        local x = a[i] - (b[i] or 0) - borrow
        if x < 0 then
          c[i], borrow = x + B, 1
        else
          c[i], borrow = x, 0
        end
      end
      return trim(c)
    end
    local function mul(a, b)
      local c = {}
      for i = 1, #a + #b do c[i] = 0 end
      for i = 1, #a do
        local carry = 0
        for j = 1, #b do
          local x = c[i + j - 1] + a[i] * b[j] + carry
          carry = floor(x / B)
          c[i + j - 1] = x - carry * B
        end
        local k = i + #b
        while carry > 0 do
          local x = c[k] + carry
          carry = floor(x / B)
          c[k] = x - carry * B
          k = k + 1
        end
      end
      return trim(c)
    end
    local function cmp(a, b)
      if #a ~= #b then return #a < #b and -1 or 1 end
      for i = #a, 1, -1 do
        if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
      end
      return 0
    end
    -- floor(a / d) and the remainder, for a safe integer d >= 1.
    local function divmod(a, d)
      local q, r = {}, 0
      for i = #a, 1, -1 do q[i], r = mulAddDivMod(r, B, a[i], d) end
      return trim(q), r
    end
    local function ceilDiv(a, d)
      local q, r = divmod(a, d)
      if r > 0 then return add(q, {1}) end
      return q
    end
    -- T in ticks for a key created at `created`, at `at` (us); tau at that interval.
    local function intervalOf(x, at)
      if x.warmUp > 0 then return interval(x, at - created) end
      return x.window
    end
    local function toleranceOf(x, iv)
      local tau = mul(big(x.capacity), big(x.window))
      if x.warmUp > 0 and cmp(big(iv), tau) > 0 then return big(iv) end
      return tau
    end
    local oldL, newL = big(from.limit), big(s.limit)
    local oldTat = add(mul(big(from.at), oldL), big(from.frac))
    local ahead = sub(oldTat, mul(big(t), oldL))
    local oldInterval, newInterval = intervalOf(from, t), intervalOf(s, t)
    local oldTolerance, newTolerance = toleranceOf(from, oldInterval), toleranceOf(s, newInterval)
    local tat
    if cmp(ahead, oldTolerance) > 0 then
      -- Debt: paid off at the same instant whatever the mode, tat - tau, from which the new
      -- tau applies (rounded up to a tick of the new spec). A warm-up key's tau may shrink
      -- with age: the one at the instant it is paid off.
      local paidOff = t
      if from.warmUp > 0 then paidOff = t + waitUs(from, 0) end
      local oldAt = toleranceOf(from, intervalOf(from, paidOff))
      local newAt = toleranceOf(s, intervalOf(s, paidOff))
      tat = add(ceilDiv(mul(sub(oldTat, oldAt), newL), from.limit), newAt)
    else
      local credit = sub(oldTolerance, ahead)
      local oldK, newK = big(from.capacity), big(s.capacity)
      local oldIv, newIv = big(oldInterval), big(newInterval)
      -- What the key holds under the new spec, A' x T' in ticks (rounded down), or below 0
      -- (additive) the debt past tau', rounded up.
      local held, owed
      if mode == 'proportional' then
        held = divmod(divmod(mul(mul(credit, newK), newIv), oldInterval), from.capacity)
      elseif mode == 'as-is' then
        if cmp(credit, mul(newK, oldIv)) >= 0 then
          held = mul(newK, newIv)
        else
          held = divmod(mul(credit, newIv), oldInterval)
        end
      else
        -- Additive: A + K' - K, as (credit + K' x T) - K x T.
        local plus, minus = add(credit, mul(newK, oldIv)), mul(oldK, oldIv)
        if cmp(plus, minus) >= 0 then
          held = divmod(mul(sub(plus, minus), newIv), oldInterval)
        else
          owed = ceilDiv(mul(sub(minus, plus), newIv), oldInterval)
        end
      end
      local newAhead
      if owed ~= nil then
        newAhead = add(newTolerance, owed)
      else
        if cmp(held, newTolerance) >= 0 then return end
        newAhead = sub(newTolerance, held)
      end
      tat = add(mul(big(t), newL), newAhead)
    end
    local q, r = divmod(tat, s.limit)
    local at = 0
    for i = #q, 1, -1 do at = at * B + q[i] end
    s.at, s.frac = at, r
  end
end
