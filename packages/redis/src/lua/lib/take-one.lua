-- The body of a one-policy take (s: the policy, as the script made it): one GET, and
-- one SET when admitted. A key blocked (by the store's block) is refused with its block.
local cost = ARGV[2] + 0
readRecord(s, redis.call('GET', s.key))
s.blocked = blockedFor(s)
local reply = {}
if s.blocked > 0 then
  answer(reply, s, false, cost, false, -1)
  return reply
end
local allowed = s.alg.take(s, cost)
if allowed then saveRecord(s) end
answer(reply, s, allowed, cost, allowed, allowed and s.alg.receipt(s) or -1)
return reply
