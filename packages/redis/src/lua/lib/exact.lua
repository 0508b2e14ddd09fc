-- Integer arithmetic past 2^53 in Lua's doubles (Lua 5.1 has no integers), a port of
-- @sluice/core's exact.ts: a product of two safe integers plus a third, divided by a
-- fourth. Limits and windows may each be as large as 2^53, so permits x window can pass
-- 2^53 (10^10 tokens a day is 8.64e20 tick-microseconds). A sum that fits is plain
-- doubles; a larger one is split exactly into two doubles (Dekker's product), its
-- quotient estimated in floating point and corrected by the exact remainder: the same
-- operations as exact.ts, so both land on the same numbers.
-- Veltkamp's splitter: halves of 26 bits each, whose products are exact.
local SPLITTER = 134217729
-- Where the split product stays exact (exact.ts's DEKKER_PRODUCT and DEKKER_DIVISOR).
local DEKKER_PRODUCT = 2 ^ 100
local DEKKER_DIVISOR = 2 ^ 50

-- floor((a*b + c) / d) and the remainder, exactly, for safe integers a, b, c >= 0 and
-- d >= 1 whose quotient is a safe integer.
local function mulAddDivMod(a, b, c, d)
  local product = a * b
  if product <= MAX_SAFE and product + c <= MAX_SAFE then
    -- Exact: for a numerator below 2^53 the division rounds to no integer it does not reach.
    local q = floor((product + c) / d)
    return q, product + c - q * d
  end
  if product >= DEKKER_PRODUCT or d > DEKKER_DIVISOR then
    -- Absurd policies (limits or windows near 2^53 together), where exact.ts uses BigInt:
    -- long multiplication in base 2 over the smaller factor, quotient and remainder kept
    -- apart, so that no intermediate passes d and every one is an exact double.
    if a > b then a, b = b, a end
    if b == INF then error('sluice: an infinite operand of mulAddDivMod') end
    local bq = floor(b / d)
    local br = b - bq * d
    local bit = 1
    while bit * 2 <= a do bit = bit * 2 end
    local q, r = 0, 0
    while bit >= 1 do
      q = q + q
      if r >= d - r then
        r = r - (d - r)
        q = q + 1
      else
        r = r + r
      end
      if a >= bit then
        a = a - bit
        q = q + bq
        if r >= d - br then
          r = r - (d - br)
          q = q + 1
        else
          r = r + br
        end
      end
      bit = bit / 2
    end
    local cq = floor(c / d)
    local cr = c - cq * d
    if r >= d - cr then return q + cq + 1, r - (d - cr) end
    return q + cq, r + cr
  end
  -- c = cq*d + cr first: the split product stays exact only for a small addend.
  local cq = floor(c / d)
  local cr = c - cq * d
  local q = floor((product + cr) / d)
  -- a*b + cr - q*d, exactly: each product split into its rounded value and its rounding
  -- error (both exact); the large parts cancel exactly (Sterbenz) because they are close.
  local p2 = q * d
  local t = a * SPLITTER
  local ah = t - (t - a)
  local al = a - ah
  t = b * SPLITTER
  local bh = t - (t - b)
  local bl = b - bh
  t = q * SPLITTER
  local qh = t - (t - q)
  local ql = q - qh
  t = d * SPLITTER
  local dh = t - (t - d)
  local dl = d - dh
  local e1 = ah * bh - product + ah * bl + al * bh + al * bl
  local e2 = qh * dh - p2 + qh * dl + ql * dh + ql * dl
  local r = product - p2 + (e1 - e2) + cr
  -- The estimate is off by a unit or two at most: step it onto the exact quotient.
  while r < 0 do
    q = q - 1
    r = r + d
  end
  while r >= d do
    q = q + 1
    r = r - d
  end
  return q + cq, r
end

-- floor(a*b / d) and a*b mod d, exactly.
local function mulDivMod(a, b, d)
  local product = a * b
  if product <= MAX_SAFE then
    local q = floor(product / d)
    return q, product - q * d
  end
  return mulAddDivMod(a, b, 0, d)
end

-- ceil(a*b / d) exactly.
local function mulDivCeil(a, b, d)
  local q, r = mulAddDivMod(a, b, 0, d)
  if r > 0 then return q + 1 end
  return q
end
