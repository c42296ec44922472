"""The Lua scripts behind every multi-key write: each call is one round trip and atomic.

(A checkpoint's blob is not sent through a script: it is staged beforehand in chunks, each
its own small command, and :data:`COMMIT_CHECKPOINT` makes it visible atomically.)

They are registered with redis-py's ``register_script``, which runs them by SHA and
re-loads them when Redis answers NOSCRIPT (after a restart or SCRIPT FLUSH). Every key a
script touches is passed in KEYS and shares one hash tag (the model's), so they are
cluster-safe. A script is atomic: Redis refuses a writing script up front when it is out of
memory, and none of these commands can fail half-way on keys of the right type.

The append scripts (:data:`LABEL`, :data:`APPEND_EXAMPLES`, :data:`APPEND_EVENT`) first check
that the generation they append to is the model's current one (its record shares the
model's slot), so no label is ever acknowledged into a replaced or deleted generation; then
they number every new entry with the generation's sequence counter (``INCR``), so a reader
sees a gap as a jump in ``n``.

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
  if live + n > limit then  -- only near the limit: an item already stored (a retry) counts once
    for i = 1, n do
      local expiry = redis.call('ZSCORE', KEYS[1], ARGV[2 + (i - 1) * 7])
      if expiry and tonumber(expiry) >= now then live = live - 1 end
    end
    if live + n > limit then return {0, live} end
  end
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

_CURRENT = """
-- The append scripts' first step: the generation must be the model's current one.
local function stale(record, generation)
  local current = redis.call('HGET', record, 'generation')
  if current ~= generation then return {0, current or ''} end
  return nil
end
"""

_DONE = """
-- A done marker is "<stream id> <n> <y> <tp> <tl>": the first label's outcome. (A marker of the
-- layout before sequence numbers holds the stream id alone.)
local function parse_done(done)
  local sid, n, y, tp, tl = string.match(done, '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  if sid then return sid, n, y, tp, tl end
  return done, '', '', '', ''
end
"""

LABEL = (
    _NOW_MS
    + _CURRENT
    + _DONE
    + """
-- KEYS[1] log, KEYS[2] pending_idx, KEYS[3] model record, KEYS[4] sequence counter,
-- then per item i: KEYS[3 + 2i] pending key, KEYS[4 + 2i] done key
-- ARGV[1] generation, ARGV[2] labelled_at, ARGV[3] done TTL ms, ARGV[4] label window ms,
-- then 4 per item: pid, token, id ms, y
-- Returns {0, current generation or ''} when the generation is not current (nothing written);
-- else {1, then 6 values per item: status, stream id, n, tp, tl, first y}.
local gone = stale(KEYS[3], ARGV[1])
if gone then return gone end
local now = now_ms()
local window = tonumber(ARGV[4])
local out = {1}
local function answer(status, sid, n, tp, tl, y)
  for _, v in ipairs({status, sid, n, tp, tl, y}) do out[#out + 1] = v end
end
for i = 1, (#KEYS - 4) / 2 do
  local pending_key, done_key = KEYS[3 + 2 * i], KEYS[4 + 2 * i]
  local a = 4 + (i - 1) * 4
  local pid, token, id_ms, y = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), ARGV[a + 4]
  local done = redis.call('GET', done_key)
  if done then
    local sid, n, first, tp, tl = parse_done(done)
    answer((first == '' or first == y) and 'duplicate' or 'conflict', sid, n, tp, tl, first)
  else
    local p = redis.call('HMGET', pending_key, 'pid', 'x', 'yhat', 'tp')
    if p[1] ~= pid then
      -- a key is alive through its expiry ms, as Redis itself decides
      answer((now > id_ms + window) and 'expired' or 'unknown', '', '', '', '', '')
    else
      local n = redis.call('INCR', KEYS[4])
      local sid = redis.call('XADD', KEYS[1], '*', 'n', n, 'pid', pid, 'x', p[2], 'y', y, 'yhat', p[3],
                             'tp', p[4], 'tl', ARGV[2])
      redis.call('SET', done_key, sid .. ' ' .. n .. ' ' .. y .. ' ' .. p[4] .. ' ' .. ARGV[2], 'PX', ARGV[3])
      redis.call('DEL', pending_key)
      redis.call('ZREM', KEYS[2], token)
      answer('appended', sid, tostring(n), p[4], ARGV[2], y)
    end
  end
end
return out
"""
)

APPEND_EXAMPLES = (
    _CURRENT
    + _DONE
    + """
-- KEYS[1] log, KEYS[2] model record, KEYS[3] sequence counter, then per item i: KEYS[3 + i] done key
-- of its (server-made) prediction id
-- ARGV[1] generation, ARGV[2] labelled_at, ARGV[3] done TTL ms, then 3 per item: pid, x, y
-- The done marker makes a retried call a no-op. Returns {0, current} when the generation is not
-- current; else {1, then stream id and n per item}.
local gone = stale(KEYS[2], ARGV[1])
if gone then return gone end
local out = {1}
for i = 1, #KEYS - 3 do
  local a = 3 + (i - 1) * 3
  local done = redis.call('GET', KEYS[3 + i])
  if done then
    local sid, n = parse_done(done)
    out[#out + 1] = sid
    out[#out + 1] = n
  else
    local n = redis.call('INCR', KEYS[3])
    local sid = redis.call('XADD', KEYS[1], '*', 'n', n, 'pid', ARGV[a + 1], 'x', ARGV[a + 2],
                           'y', ARGV[a + 3], 'yhat', '0', 'tp', ARGV[2], 'tl', ARGV[2])
    redis.call('SET', KEYS[3 + i], sid .. ' ' .. n .. ' ' .. ARGV[a + 3] .. ' ' .. ARGV[2] .. ' ' .. ARGV[2],
               'PX', ARGV[3])
    out[#out + 1] = sid
    out[#out + 1] = tostring(n)
  end
end
return out
"""
)

APPEND_EVENT = (
    _CURRENT
    + _DONE
    + """
-- A log entry that is not a label (a declared feature migration, say): applied by every replica
-- at its place in the log, like a label.
-- KEYS[1] log, KEYS[2] model record, KEYS[3] sequence counter, KEYS[4] done key of the request id
-- ARGV[1] generation, ARGV[2] kind, ARGV[3] body, ARGV[4] time, ARGV[5] done TTL ms,
-- ARGV[6] the entry expected last ('' = any: a compare-and-append otherwise)
-- Returns {0, current} when the generation is not current; {2, last entry} when the log is not at
-- ARGV[6] (nothing written); else {1, stream id, n, 1 if new}.
local gone = stale(KEYS[2], ARGV[1])
if gone then return gone end
local done = redis.call('GET', KEYS[4])
if done then
  local sid, n = parse_done(done)
  return {1, sid, n, 0}
end
if ARGV[6] ~= '' then
  local last = redis.call('GET', KEYS[3]) or '0'
  if last ~= ARGV[6] then return {2, last} end
end
local n = redis.call('INCR', KEYS[3])
local sid = redis.call('XADD', KEYS[1], '*', 'n', n, 'kind', ARGV[2], 'body', ARGV[3], 'tl', ARGV[4])
redis.call('SET', KEYS[4], sid .. ' ' .. n .. ' 0 ' .. ARGV[4] .. ' ' .. ARGV[4], 'PX', ARGV[5])
return {1, sid, tostring(n), 1}
"""
)

PUT_MODEL = """
-- KEYS[1] model record, KEYS[2] generation counter
-- ARGV[1] config JSON, ARGV[2] created_at, ARGV[3] expected current generation ('' = any,
-- '0' = none: create only)
-- Starts a new generation: {1, generation}; or, when the current generation is not the expected
-- one (another writer got there first), {0, current generation or '0'} and nothing changes.
local current = redis.call('HGET', KEYS[1], 'generation') or '0'
if ARGV[3] ~= '' and ARGV[3] ~= current then return {0, current} end
local generation = redis.call('INCR', KEYS[2])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'generation', generation, 'config', ARGV[1], 'created_at', ARGV[2])
return {1, tostring(generation)}
"""

DELETE_MODEL = """
-- KEYS[1] model record, KEYS[2] generation counter. Deletes the record (the counter stays);
-- returns {the deleted generation or '0' when there was none, the last generation issued}. Every
-- generation up to the second is dead from now on (a new one will be numbered past it), so its
-- data may go, whatever is created meanwhile.
local current = redis.call('HGET', KEYS[1], 'generation') or '0'
redis.call('DEL', KEYS[1])
return {current, redis.call('GET', KEYS[2]) or '0'}
"""

ADOPT_MODEL = """
-- The layout migration: KEYS[1] model record, KEYS[2] generation counter, KEYS[3] sequence counter of
-- the generation. ARGV[1] generation, ARGV[2] config JSON, ARGV[3] created_at, ARGV[4] last
-- generation issued, ARGV[5] the sequence number the log has reached.
-- Writes the record only if the model was not adopted yet (another replica may have migrated it
-- first); the sequence counter first, so that no label is ever numbered from zero. Returns 1 if written.
-- A generation counter at or past the record's generation means the model was adopted before (and
-- deleted or replaced since): a late adopter must not bring the old record back.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local issued = tonumber(redis.call('GET', KEYS[2]) or '0')
if issued >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[3], ARGV[5], 'NX')
if issued < tonumber(ARGV[4]) then redis.call('SET', KEYS[2], ARGV[4]) end
redis.call('HSET', KEYS[1], 'generation', ARGV[1], 'config', ARGV[2], 'created_at', ARGV[3])
return 1
"""

CREATE_IDENTITY = """
-- KEYS[1] the store identity hash; ARGV[1] a new random epoch, ARGV[2] the layout. Writes each field
-- that is missing, in one step (a creation interrupted half-way is completed, keeping its epoch);
-- returns {epoch, layout} as stored.
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1])
redis.call('HSETNX', KEYS[1], 'layout', ARGV[2])
return redis.call('HMGET', KEYS[1], 'epoch', 'layout')
"""

RAISE_GENERATION_COUNTER = """
-- The end of the layout migration: KEYS[1] a model's generation counter, ARGV[1] the last generation
-- layout 1 issued for it. The counter becomes at least that (generations never repeat); returns it.
local issued = tonumber(redis.call('GET', KEYS[1]) or '0')
if issued < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return issued
"""

LEASE = """
-- The checkpoint-writer lease of a generation. KEYS[1] lease
-- ARGV[1] holder id, ARGV[2] TTL ms, ARGV[3] 'acquire' (or renew) / 'release'
-- Returns the holder after the call ('' when free).
local holder = redis.call('GET', KEYS[1])
if ARGV[3] == 'release' then
  if holder == ARGV[1] then redis.call('DEL', KEYS[1]) return '' end
  return holder or ''
end
if not holder or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
return holder
"""

STAGE_CHUNK = """
-- KEYS[1] the staged chunk hash. ARGV[1] chunk number, ARGV[2] chunk, ARGV[3] staging TTL ms.
-- One command per chunk: other clients' commands run between chunks.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

COMMIT_CHECKPOINT = """
-- Checks, then commits, a checkpoint whose blob was staged beforehand, chunk by chunk, as the
-- fields "0".."n-1" of its own hash with a TTL (each chunk its own command, so other clients'
-- commands run between chunks). Nothing here copies a blob: committing is O(chunks + keep).
-- KEYS[1] ckpt_index, KEYS[2] log, KEYS[3] writer lease, KEYS[4] the staged chunk hash,
-- KEYS[5..] the chunk hashes of the checkpoints this commit drops
-- ARGV[1] applied id, ARGV[2] sequence number, ARGV[3] keep, ARGV[4] token ('' to only check),
-- ARGV[5] chunk count, ARGV[6] byte count, ARGV[7] lease holder, ARGV[8] the state's time (unix ms),
-- ARGV[9] log entries to retain (0: none), ARGV[10] the oldest stream id to retain ('' : none),
-- ARGV[11..] the index entries the caller read (the dropped keys derive from them)
-- Retained checkpoints are newest first with strictly decreasing applied ids, so the last one
-- is the oldest; the log is trimmed to exactly its id (that entry itself stays), or, with a
-- retention, to the newest ARGV[9] entries or to ARGV[10] when that keeps more (entries are
-- numbered without gaps, so the count from the oldest checkpoint's entry is the difference of
-- the numbers).
-- A checkpoint is accepted only as the exact log prefix it claims: the entry at its applied id
-- must carry its sequence number.
-- Returns {1, trimmed} when committed; {0, newest id} when a checkpoint at least as far along
-- is already stored (a retry, or another writer); {-1, last log id} when the applied id is past
-- the end of the log; {-2, chunk} when the staged chunks are incomplete (expired); {-3, holder}
-- when the caller does not hold the writer lease; {-4, n} when the log entry at the applied id
-- has another sequence number (n) or is missing ('');
-- {2, index entries} when only checking, or when the index is not the one the caller read (the
-- caller retries with these). A refused commit drops the staged chunks, unless they are
-- committed already (no TTL: this call is a retry of a commit that succeeded).
local function before(a, b)  -- stream id a < stream id b
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams < bms or (ams == bms and aseq < bseq)
end
local function applied_of(entry) return string.match(entry, '^(%S+) ') end
local function discard()
  if redis.call('PTTL', KEYS[4]) > 0 then redis.call('UNLINK', KEYS[4]) end
end
local applied, seq, keep, token = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local n, size, holder, written = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], ARGV[8]
local newest = redis.call('LINDEX', KEYS[1], 0)
if newest then
  newest = applied_of(newest)
  if not before(newest, applied) then discard() return {0, newest} end
end
if redis.call('GET', KEYS[3]) ~= holder then
  discard()
  return {-3, redis.call('GET', KEYS[3]) or ''}
end
if applied ~= '0-0' then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  if #last == 0 then discard() return {-1, '0-0'} end
  if before(last[1][1], applied) then discard() return {-1, last[1][1]} end
  local at = redis.call('XRANGE', KEYS[2], applied, applied)
  if #at == 0 then discard() return {-4, ''} end
  local fields = at[1][2]
  if fields[1] == 'n' and fields[2] ~= seq then discard() return {-4, fields[2]} end
end
local index = redis.call('LRANGE', KEYS[1], 0, -1)
local same = token ~= '' and #index == #ARGV - 10
for i = 1, #index do same = same and index[i] == ARGV[10 + i] end
if not same then return {2, index} end
if #KEYS - 4 ~= math.max(#index - keep + 1, 0) then
  return redis.error_reply('ERR commit_checkpoint: the dropped chunk keys do not match the index')
end
local total = 0
for i = 0, n - 1 do
  local length = redis.call('HSTRLEN', KEYS[4], i)
  if length == 0 then discard() return {-2, i} end
  total = total + length
end
if total ~= size or redis.call('HLEN', KEYS[4]) ~= n then discard() return {-2, n} end
redis.call('PERSIST', KEYS[4])
redis.call('LPUSH', KEYS[1], table.concat({applied, token, n, size, seq, written}, ' '))
redis.call('LTRIM', KEYS[1], 0, keep - 1)
for i = 5, #KEYS do redis.call('UNLINK', KEYS[i]) end
local oldest_entry = redis.call('LINDEX', KEYS[1], -1)
local oldest = applied_of(oldest_entry)
if oldest == '0-0' then return {1, 0} end
local retain, cutoff = tonumber(ARGV[9]), ARGV[10]
if cutoff ~= '' and before(cutoff, oldest) then oldest = cutoff end
if retain > 0 then
  local oldest_seq = tonumber(string.match(oldest_entry, '^%S+ %S+ %S+ %S+ (%d+)') or '')
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  local fields = last[1] and last[1][2] or {}
  if oldest_seq and fields[1] == 'n' then
    local length = math.max(retain, tonumber(fields[2]) - oldest_seq + 1)
    return {1, redis.call('XTRIM', KEYS[2], 'MAXLEN', length)}
  end
end
return {1, redis.call('XTRIM', KEYS[2], 'MINID', oldest)}
"""

DELETE_GENERATION = """
-- Drops a generation's fixed keys and the chunk hashes of its committed checkpoints.
-- KEYS[1] ckpt_index, KEYS[2..m+1] the generation's other fixed keys (m = ARGV[1]),
-- KEYS[m+2..] the chunk hashes named by the index entries ARGV[2..] the caller read.
-- Returns {1} when done; {2, index entries} when the index changed meanwhile (the caller retries).
local index = redis.call('LRANGE', KEYS[1], 0, -1)
local same = #index == #ARGV - 1
for i = 1, #index do same = same and index[i] == ARGV[1 + i] end
if not same then return {2, index} end
for i = 1, #KEYS do redis.call('UNLINK', KEYS[i]) end
return {1}
"""

PUT_MODEL_FROM_STATE = """
-- A new generation that starts from a given state (a rollback): PUT_MODEL and the commit of its
-- first checkpoint, staged beforehand in chunks (as for COMMIT_CHECKPOINT), in one step, so no
-- replica ever sees the generation without its state, and a writer that dies before this call
-- leaves only staged chunks, which expire.
-- KEYS[1] model record, KEYS[2] generation counter, KEYS[3] the new generation's ckpt_index,
-- KEYS[4] its staged chunk hash
-- ARGV[1] config JSON, ARGV[2] created_at, ARGV[3] expected current generation, ARGV[4] the new
-- generation (the keys name it), ARGV[5] the manifest to index, ARGV[6] chunk count, ARGV[7] byte count
-- Returns {1, generation}; {0, current generation or '0'} when the current generation is not the
-- expected one; {-1, last issued} when the counter would not give ARGV[4]; {-2, chunk} when the staged
-- chunks are incomplete. Nothing changes unless 1 (the staged chunks are dropped).
local function discard()
  if redis.call('PTTL', KEYS[4]) > 0 then redis.call('UNLINK', KEYS[4]) end
end
local current = redis.call('HGET', KEYS[1], 'generation') or '0'
if ARGV[3] ~= current then discard() return {0, current} end
local issued = redis.call('GET', KEYS[2]) or '0'
if tonumber(issued) + 1 ~= tonumber(ARGV[4]) then discard() return {-1, issued} end
local n, size, total = tonumber(ARGV[6]), tonumber(ARGV[7]), 0
for i = 0, n - 1 do
  local length = redis.call('HSTRLEN', KEYS[4], i)
  if length == 0 then discard() return {-2, i} end
  total = total + length
end
if total ~= size or redis.call('HLEN', KEYS[4]) ~= n then discard() return {-2, n} end
local generation = redis.call('INCR', KEYS[2])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'generation', generation, 'config', ARGV[1], 'created_at', ARGV[2])
redis.call('PERSIST', KEYS[4])
redis.call('DEL', KEYS[3])
redis.call('LPUSH', KEYS[3], ARGV[5])
return {1, tostring(generation)}
"""
