-- The body of a one-policy take through the port (s: the policy, as the script made it;
-- v: its value, cost): one SET when admitted. A key blocked (by the store's block) is
-- refused with its block.
readRecord(s, v)
s.blocked = blockedFor(s)
local reply = {}
if s.blocked > 0 then
  if s.dirty then saveRecord(s) end
  answer(reply, s, false, cost, false, -1)
  return reply
end
local allowed = s.alg.take(s, cost)
-- A value carried over from another spec is written back even when refused.
if allowed or s.dirty then saveRecord(s) end
answer(reply, s, allowed, cost, allowed, allowed and s.alg.receipt(s) or -1)
return reply
