-- One take from one sliding-window policy without a penalty: the common case, in the
-- fewest Redis calls (GET, and SET when admitted).
--
-- KEYS[1]  the policy's state for one client key (see lib/record.lua, lib/sliding-window.lua)
-- ARGV     time ('' : Redis's), cost, limit, window (us), slots, slot cap, window (ms)
-- Reply    admitted, available, reset us, retry us (-1: never), receipt (-1: none),
--          blocked (0, or ms left)
--!include clock
--!include exact
--!include record
--!include sliding-window
local s = {key = KEYS[1], alg = SLIDING, limit = ARGV[3] + 0, window = ARGV[4] + 0,
  slots = ARGV[5] + 0, cap = ARGV[6] + 0, windowMs = ARGV[7] + 0, grace = 0}
--!include take-one
