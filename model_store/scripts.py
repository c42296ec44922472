"""The Lua scripts behind every multi-key write: each call is one round trip and atomic.

(A checkpoint's blob is not sent through a script: it is staged beforehand in chunks, each
its own small command, and :data:`COMMIT_CHECKPOINT` makes it visible atomically.)

They are registered with redis-py's ``register_script``, which runs them by SHA and
re-loads them when Redis answers NOSCRIPT (after a restart or SCRIPT FLUSH). Every key a
script touches is passed in KEYS and shares the model's hash tag, so they are cluster-safe.
A script is atomic: Redis refuses a writing script up front when it is out of memory, and
none of these commands can fail half-way on keys of the right type.

Times: pending keys expire at ``id ms + window`` (PEXPIREAT, absolute), and the scripts
read the clock with TIME, so "expired" is decided by the same clock that expires keys.
"""

from __future__ import annotations

_NOW_MS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

PUT_PENDING = (
    _NOW_MS
    + """
-- KEYS[1] pending_idx, KEYS[1 + i] pending key of item i
-- ARGV[1] max live pending (-1: no limit); then 7 per item: token, expiry ms, pid, x, yhat, score, tp
-- Returns {1, n} when stored, {0, live} when the limit would be exceeded (nothing stored).
local n = #KEYS - 1
local limit = tonumber(ARGV[1])
if limit >= 0 then
  local now = now_ms()
  local live = redis.call('ZCOUNT', KEYS[1], now, '+inf')
  for i = 1, n do  -- an item already stored (a retried call) is not counted twice
    local expiry = redis.call('ZSCORE', KEYS[1], ARGV[2 + (i - 1) * 7])
    if expiry and tonumber(expiry) >= now then live = live - 1 end
  end
  if live + n > limit then return {0, live} end
end
for i = 1, n do
  local a = 2 + (i - 1) * 7
  redis.call('HSET', KEYS[1 + i], 'pid', ARGV[a + 2], 'x', ARGV[a + 3], 'yhat', ARGV[a + 4],
             'score', ARGV[a + 5], 'tp', ARGV[a + 6])
  redis.call('PEXPIREAT', KEYS[1 + i], ARGV[a + 1])
  redis.call('ZADD', KEYS[1], ARGV[a + 1], ARGV[a])
end
return {1, n}
"""
)

_BACKLOG = """
-- The log entries after `after` (exclusive), flattened to 7 values each: id, then the
-- field values in the order every event is written (pid, x, y, yhat, tp, tl). A flat
-- reply is several times cheaper for the client to parse than XRANGE's nested one.
local function backlog(log, after)
  local out = {}
  for _, entry in ipairs(redis.call('XRANGE', log, '(' .. after, '+')) do
    local fields = entry[2]
    out[#out + 1] = entry[1]
    for j = 2, #fields, 2 do out[#out + 1] = fields[j] end
  end
  return out
end
"""

LABEL = (
    _NOW_MS
    + _BACKLOG
    + """
-- KEYS[1] log, KEYS[2] pending_idx, then per item i: KEYS[1 + 2i] pending key, KEYS[2 + 2i] done key
-- ARGV[1] labelled_at, ARGV[2] applied_up_to, ARGV[3] done TTL ms, ARGV[4] label window ms,
-- then 4 per item: pid, token, id ms, y
-- Returns {{status, stream id, tp for each item...}, backlog after applied_up_to}.
local now = now_ms()
local window = tonumber(ARGV[4])
local outcomes = {}
local function answer(status, stream_id, tp)
  outcomes[#outcomes + 1] = status
  outcomes[#outcomes + 1] = stream_id
  outcomes[#outcomes + 1] = tp
end
for i = 1, (#KEYS - 2) / 2 do
  local pending_key, done_key = KEYS[1 + 2 * i], KEYS[2 + 2 * i]
  local a = 4 + (i - 1) * 4
  local pid, token, id_ms, y = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), ARGV[a + 4]
  local done = redis.call('GET', done_key)
  if done then
    answer('duplicate', done, '')
  else
    local p = redis.call('HMGET', pending_key, 'pid', 'x', 'yhat', 'tp')
    if p[1] ~= pid then
      -- a key is alive through its expiry ms, as Redis itself decides
      answer((now > id_ms + window) and 'expired' or 'unknown', '', '')
    else
      local sid = redis.call('XADD', KEYS[1], '*', 'pid', pid, 'x', p[2], 'y', y, 'yhat', p[3],
                             'tp', p[4], 'tl', ARGV[1])
      redis.call('SET', done_key, sid, 'PX', ARGV[3])
      redis.call('DEL', pending_key)
      redis.call('ZREM', KEYS[2], token)
      answer('appended', sid, p[4])
    end
  end
end
return {outcomes, backlog(KEYS[1], ARGV[2])}
"""
)

APPEND_EXAMPLES = (
    _BACKLOG
    + """
-- KEYS[1] log, then per item i: KEYS[1 + i] done key of its (server-made) prediction id
-- ARGV[1] labelled_at, ARGV[2] applied_up_to, ARGV[3] done TTL ms, then 3 per item: pid, x, y
-- The done marker makes a retried call a no-op. Returns the backlog after applied_up_to.
for i = 1, #KEYS - 1 do
  local a = 3 + (i - 1) * 3
  if not redis.call('GET', KEYS[1 + i]) then
    local sid = redis.call('XADD', KEYS[1], '*', 'pid', ARGV[a + 1], 'x', ARGV[a + 2], 'y', ARGV[a + 3],
                           'yhat', '0', 'tp', ARGV[1], 'tl', ARGV[1])
    redis.call('SET', KEYS[1 + i], sid, 'PX', ARGV[3])
  end
end
return backlog(KEYS[1], ARGV[2])
"""
)

COMMIT_CHECKPOINT = """
-- Checks, then commits, a checkpoint whose blob was staged beforehand, chunk by chunk, as the
-- fields "0".."n-1" of its own hash with a TTL (each chunk its own command, so other clients'
-- commands run between chunks). Nothing here copies a blob: committing is O(chunks + keep).
-- KEYS[1] ckpt_index, KEYS[2] log, KEYS[3] legacy ckpt, KEYS[4] legacy ckpt_ids,
-- KEYS[5] the staged chunk hash, KEYS[6..] the chunk hashes of the checkpoints this commit drops
-- ARGV[1] applied id, ARGV[2] keep, ARGV[3] token ('' to only check), ARGV[4] chunk count,
-- ARGV[5] byte count, ARGV[6..] the index entries the caller read (the dropped keys derive from them)
-- Retained checkpoints are newest first with strictly decreasing applied ids, so the last one
-- is the oldest; the log is trimmed to exactly its id (that entry itself stays).
-- Returns {1, trimmed} when committed; {0, newest id} when a checkpoint at least as far along
-- is already stored (a replica got further, or this is a retry); {-1, last log id} when the
-- applied id is past the end of the log; {-2, chunk} when the staged chunks are incomplete
-- (expired); {2, index entries} when only checking, or when the index is not the one the
-- caller read (the caller retries with these). A refused commit drops the staged chunks,
-- unless they are committed already (no TTL: this call is a retry of a commit that succeeded).
local function before(a, b)  -- stream id a < stream id b
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams < bms or (ams == bms and aseq < bseq)
end
local function applied_of(entry) return string.match(entry, '^(%S+) ') end
local function discard()
  if redis.call('PTTL', KEYS[5]) > 0 then redis.call('UNLINK', KEYS[5]) end
end
local applied, keep, token = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local n, size = tonumber(ARGV[4]), tonumber(ARGV[5])
local newest = redis.call('LINDEX', KEYS[1], 0)
if newest then newest = applied_of(newest) else newest = redis.call('LINDEX', KEYS[4], 0) end
if newest and not before(newest, applied) then discard() return {0, newest} end
if applied ~= '0-0' then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  if #last == 0 then discard() return {-1, '0-0'} end
  if before(last[1][1], applied) then discard() return {-1, last[1][1]} end
end
local index = redis.call('LRANGE', KEYS[1], 0, -1)
local same = token ~= '' and #index == #ARGV - 5
for i = 1, #index do same = same and index[i] == ARGV[5 + i] end
if not same then return {2, index} end
if #KEYS - 5 ~= math.max(#index - keep + 1, 0) then
  return redis.error_reply('ERR commit_checkpoint: the dropped chunk keys do not match the index')
end
local total = 0
for i = 0, n - 1 do
  local length = redis.call('HSTRLEN', KEYS[5], i)
  if length == 0 then discard() return {-2, i} end
  total = total + length
end
if total ~= size or redis.call('HLEN', KEYS[5]) ~= n then discard() return {-2, n} end
redis.call('PERSIST', KEYS[5])
redis.call('LPUSH', KEYS[1], applied .. ' ' .. token .. ' ' .. n .. ' ' .. size)
redis.call('LTRIM', KEYS[1], 0, keep - 1)
for i = 6, #KEYS do redis.call('UNLINK', KEYS[i]) end
redis.call('UNLINK', KEYS[3], KEYS[4])  -- checkpoints of the layout before chunks, once replaced
local oldest = applied_of(redis.call('LINDEX', KEYS[1], -1))
if oldest == '0-0' then return {1, 0} end
return {1, redis.call('XTRIM', KEYS[2], 'MINID', oldest)}
"""
