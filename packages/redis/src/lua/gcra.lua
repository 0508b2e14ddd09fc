-- One take from one token-bucket or leaky-bucket policy without a penalty: the common
-- case, in the fewest Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/gcra.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), capacity, tau (whole us, and
--          ticks), grace (ms a key is kept past full), window (ms)
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
--!include clock
--!include exact
--!include record
--!include gcra
local s = {key = KEYS[1], alg = GCRA, limit = ARGV[3] + 0, window = ARGV[4] + 0,
  capacity = ARGV[5] + 0, tauUs = ARGV[6] + 0, tauTicks = ARGV[7] + 0, grace = ARGV[8] + 0,
  windowMs = ARGV[9] + 0, warmUp = 0}
--!include take-one
