-- Integer arithmetic past 2^53 in Lua's doubles (Lua 5.1 has no integers), as
-- @sluice/core's exact.ts does with BigInt: a product of two safe integers divided by a
-- third. Limits and windows may each be as large as 2^53, so permits x window can pass it
-- (10^10 tokens a day is 8.64e20 tick-microseconds). A product that fits is plain doubles,
-- the same operations as exact.ts, so both land on the same numbers.
local MAX_SAFE = 9007199254740991

-- floor(a*b / d) and a*b mod d, exactly, for safe integers a, b >= 0 and d >= 1 whose
-- quotient is a safe integer.
local function mulDivMod(a, b, d)
  local product = a * b
  if product <= MAX_SAFE then
    local q = floor(product / d)
    return q, product - q * d
  end
  -- Long multiplication in base 2 over the smaller factor, quotient and remainder kept
  -- apart: each step doubles the partial product (and adds b for a set bit) modulo d, so
  -- no intermediate passes d, and every one is an exact double.
  if a > b then a, b = b, a end
  -- No number past every other (exact.ts's BigInt refuses it too): it would never end.
  if b == INF then error('sluice: an infinite operand of mulDivMod') end
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
  return q, r
end

-- floor((a*b + c) / d) exactly, for safe integers a, b, c >= 0 and d >= 1.
local function mulAddDiv(a, b, c, d)
  local sum = a * b + c
  if sum <= MAX_SAFE then return floor(sum / d) end
  local q, r = mulDivMod(a, b, d)
  local cq = floor(c / d)
  local cr = c - cq * d
  if r >= d - cr then return q + cq + 1 end
  return q + cq
end

-- ceil(a*b / d) exactly, for safe integers a, b >= 0 and d >= 1.
local function mulDivCeil(a, b, d)
  local q, r = mulDivMod(a, b, d)
  if r > 0 then return q + 1 end
  return q
end
