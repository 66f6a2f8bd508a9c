-- Argo CD health check for shipstream.io/MysqlFailoverGroup (Bloodraven
-- v1.7.0 status; docs/monitoring.md). Order matters:
--   1. status.observedGeneration behind metadata.generation: Progressing
--      (the topology manager has not applied the latest spec yet; the
--      topology conditions carry the same generation).
--   2. Conditions that are abnormal when True: Degraded, RecoveryPending.
--   3. Conditions that are True while work runs: Bootstrapping (a clone),
--      Updating (an ordered update, also while OrderedUpdateStalled: the
--      update is still in progress).
--   4. Ready: True/Healthy is Healthy. False before the first active site
--      is published is Progressing (bootstrap); False afterwards is
--      Degraded (NoWritablePrimary, ReplicationUnhealthy).
--   5. EncryptionAtRestReady, PITRArchiveReady and TLSReady (a site
--      refused over TLS), when present, are abnormal when False.
local hs = {}

local function conditions(obj)
  local byType = {}
  if obj.status ~= nil and obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      byType[c.type] = c
    end
  end
  return byType
end

local function describe(c)
  local text = c.type .. "=" .. c.status .. "/" .. (c.reason or "")
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  return text
end

if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report status"
  return hs
end

local generation = obj.metadata.generation or 0
local observed = obj.status.observedGeneration or 0
if observed < generation then
  hs.status = "Progressing"
  hs.message = "The operator has not applied generation " .. generation .. " yet (observed " .. observed .. ")"
  return hs
end

local c = conditions(obj)

for _, t in ipairs({"Degraded", "RecoveryPending"}) do
  if c[t] ~= nil and c[t].status == "True" then
    hs.status = "Degraded"
    hs.message = describe(c[t])
    return hs
  end
end

for _, t in ipairs({"Bootstrapping", "Updating"}) do
  if c[t] ~= nil and c[t].status == "True" then
    hs.status = "Progressing"
    hs.message = describe(c[t])
    return hs
  end
end

local ready = c["Ready"]
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end
if ready.status ~= "True" then
  if obj.status.activeSite == nil or obj.status.activeSite == "" then
    hs.status = "Progressing"
  else
    hs.status = "Degraded"
  end
  hs.message = describe(ready)
  return hs
end

for _, t in ipairs({"EncryptionAtRestReady", "PITRArchiveReady", "TLSReady"}) do
  if c[t] ~= nil and c[t].status == "False" then
    hs.status = "Degraded"
    hs.message = describe(c[t])
    return hs
  end
end

hs.status = "Healthy"
hs.message = describe(ready)
return hs
