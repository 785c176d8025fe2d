//! The Redis side of a run: its keys and the server-side scripts that
//! change them. `docs/distributed.md` describes the protocol for users;
//! this module is its one implementation.
//!
//! Every key of run `R` starts with `lpk:R:` ([`Keys`]):
//! - `meta` (hash): the run record ([`crate::record`]), its `state`
//!   (`running`, `done`, `failed`), the `done` counter, the error;
//! - `q` (stream) with consumer group `w`: the ready tasks. A worker reads
//!   a task with `XREADGROUP`, which makes it the task's holder (the entry
//!   is pending with its name); the *lease* is the entry's idle time, which
//!   the holder resets while it runs the task ([`RENEW`]); an entry idle
//!   for longer than the lease is taken over by another worker with
//!   `XAUTOCLAIM` ([`RECLAIM`]), which counts the deliveries;
//! - `done` (set): the tasks completed;
//! - `enq` (set): the tasks ever put into `q` (roots and released children);
//! - `e:TASK` (set): for a task still waiting, the tiles of the parent
//!   edges counted so far;
//! - `r:TILE` (set): for a stored tile that is neither an output nor kept,
//!   the tasks that read it so far; at its reader count (from the readers
//!   plans) the tile is dead and its last reader deletes it;
//! - `gone` (set): every tile that died, so that a late copy of its
//!   writer (a task that ran twice) deletes what it wrote again;
//! - `dead` (set): dead tiles not yet deleted from the store (the last
//!   reader removes a tile from it once deleted; `collect` deletes what a
//!   killed worker left);
//! - `trace` (stream): one entry per task execution ([`crate::trace`]).
//!
//! Beside the runs, `lpk:workers` (set) names the workers that registered
//! and `lpk:worker:NAME` (string, expiring) holds a live worker's kernels
//! (`workers.rs`).
//!
//! [`COMPLETE`] is the one step that changes the DAG's state, atomically:
//! it adds the task to `done` (if it is there already, nothing else
//! happens: a task that ran twice counts once), then for every (child,
//! tile) edge adds the tile to the child's `e:` set — a set, so an edge is
//! counted once however often it is reported — and releases the child into
//! `q` exactly when the set reaches the child's in-degree, remembering it
//! in `enq` so that a late duplicate of an edge cannot release it again.
//! It also acknowledges and deletes the stream entry. The global set
//! `lpk:runs` lists the runs workers should look at.

use crate::conn::Redis;
use crate::error::ClusterError;

/// The set of runs that are running (workers poll it).
pub const RUNS: &str = "lpk:runs";

/// How long the `uploading` key of a run lives unless its submitter
/// renews it (every second while it uploads): the most a worker waits for
/// an input tile after the submitter died.
pub(crate) const UPLOAD_TTL_MS: u64 = 30_000;

/// The consumer group of every run's stream.
pub const GROUP: &str = "w";

/// The version of this protocol, recorded in every run; a worker refuses
/// runs of another version.
pub(crate) const PROTOCOL: u32 = 3;

/// The keys of one run.
#[derive(Clone, Debug)]
pub struct Keys {
    /// `lpk:RUN:`.
    pub prefix: String,
}

impl Keys {
    /// The keys of run `run`.
    pub fn new(run: &str) -> Keys {
        Keys {
            prefix: format!("lpk:{run}:"),
        }
    }
    /// The run record.
    pub fn meta(&self) -> String {
        format!("{}meta", self.prefix)
    }
    /// The ready queue.
    pub fn queue(&self) -> String {
        format!("{}q", self.prefix)
    }
    /// The completed tasks.
    pub fn done(&self) -> String {
        format!("{}done", self.prefix)
    }
    /// The tasks ever enqueued.
    pub fn enqueued(&self) -> String {
        format!("{}enq", self.prefix)
    }
    /// Dead tiles not yet deleted from the store.
    pub fn dead(&self) -> String {
        format!("{}dead", self.prefix)
    }
    /// Tiles deleted as dead (a late copy of a task that writes one again
    /// deletes it again).
    pub fn gone(&self) -> String {
        format!("{}gone", self.prefix)
    }
    /// The finished readers of intermediate tile `tile` (an id of
    /// [`crate::ids::tile_id`]).
    pub fn readers(&self, tile: &str) -> String {
        format!("{}r:{tile}", self.prefix)
    }
    /// Present while `submit` still uploads the run's input tiles, with a
    /// time to live that the submitter renews ([`UPLOAD_TTL_MS`]): a worker
    /// that misses an input tile waits for it while this key lives.
    pub fn uploading(&self) -> String {
        format!("{}uploading", self.prefix)
    }
    /// The digests of the output tiles (hash: tile id -> digest, from
    /// [`crate::tiles::digest`]), recorded by each writer's completion and
    /// checked by `collect` against what the store holds.
    pub fn sums(&self) -> String {
        format!("{}sums", self.prefix)
    }
    /// The timeline: one entry per task execution.
    pub fn trace(&self) -> String {
        format!("{}trace", self.prefix)
    }
    /// The pattern of every key of the run (for deleting it).
    pub fn pattern(&self) -> String {
        format!("{}*", self.prefix)
    }
    /// The edge set of waiting task `task` (an id of
    /// [`crate::ids::task_id`]): the tiles whose writers are done.
    pub fn edges(&self, task: &str) -> String {
        format!("{}e:{task}", self.prefix)
    }
    /// The pattern of every waiting task's edge set.
    pub fn edges_pattern(&self) -> String {
        self.edges("*")
    }
    /// The task id of an edge-set key, if `key` is one of this run's.
    pub fn task_of_edges<'k>(&self, key: &'k str) -> Option<&'k str> {
        key.strip_prefix(self.prefix.as_str())?.strip_prefix("e:")
    }
    /// The set of the names of the workers that registered (of every run;
    /// a name whose [`Keys::worker`] key expired is a worker gone).
    pub fn workers() -> &'static str {
        "lpk:workers"
    }
    /// Worker `name`'s registration: the names of the kernels it has,
    /// comma-separated, with a time to live its worker renews (its lease):
    /// present while the worker lives (see `workers.rs`).
    pub fn worker(name: &str) -> String {
        format!("lpk:worker:{name}")
    }
}

/// Completes a task. ARGV: prefix, stream entry id (or empty), task,
/// now (ms), bytes the task stored, the number E of edges, then E
/// (child, tile, in-degree) triples, the number W of intermediate tiles it
/// wrote, then those W tiles, the number S of output tiles it wrote, then
/// S (tile, digest) pairs (recorded in `sums`), then (tile, readers, bytes) triples for the
/// stored tiles the task read that may be deleted after their last
/// reader. Returns `{fresh, released, state, tiles to delete...}`: whether
/// the task was newly done, how many children it released, the run's
/// state before the call, and the tiles to delete: those whose last reader
/// this was, or, for a task that ran twice, those it wrote again after
/// they were deleted. Only a
/// running run counts; a finished or failed one only acknowledges the
/// entry; a run without a record (lost, or being resumed) leaves it
/// pending.
pub const COMPLETE: &str = r#"
-- A task that ran twice: whatever this copy wrote again after the tile's
-- last reader deleted it is dead again, and goes back to the worker to
-- delete, whether the run still runs or has finished meanwhile.
local function gone_again(p, last, wlast, out)
  for i = last + 2, wlast do
    if redis.call('SISMEMBER', p .. 'gone', ARGV[i]) == 1 then
      table.insert(out, ARGV[i])
    end
  end
end

local p = ARGV[1]
local meta = p .. 'meta'
local q = p .. 'q'
local msg = ARGV[2]
local state = redis.call('HGET', meta, 'state')
local out = {0, 0, state or ''}
local n = tonumber(ARGV[6])
local last = 6 + 3 * n
local wlast = last + 1 + tonumber(ARGV[last + 1])
local slast = wlast + 1 + 2 * tonumber(ARGV[wlast + 1])
if state == 'running' then
  -- A task that ran twice wrote the same bits: its digests are the same.
  for i = wlast + 2, slast, 2 do
    redis.call('HSET', p .. 'sums', ARGV[i], ARGV[i + 1])
  end
  local fresh = redis.call('SADD', p .. 'done', ARGV[3])
  out[1] = fresh
  if fresh == 0 then
    gone_again(p, last, wlast, out)
  end
  if fresh == 1 then
    local done = redis.call('HINCRBY', meta, 'done', 1)
    local stored = redis.call('HINCRBY', meta, 'stored_bytes', tonumber(ARGV[5]))
    -- The outputs are stored before the dead tiles are deleted.
    if stored > tonumber(redis.call('HGET', meta, 'peak_bytes') or '0') then
      redis.call('HSET', meta, 'peak_bytes', stored)
    end
    -- The run's --max-store-bytes (0: none): past it, the run fails here.
    local cap = tonumber(redis.call('HGET', meta, 'max_store_bytes') or '0') or 0
    if cap > 0 and stored > cap then
      redis.call('HSET', meta, 'state', 'failed', 'error_task', ARGV[3],
        'error', 'the run\'s store would hold ' .. stored ..
          ' bytes of tiles, more than its --max-store-bytes ' .. cap,
        'finished_ms', ARGV[4])
      redis.call('SREM', 'lpk:runs', string.sub(ARGV[1], 5, -2))
      return out
    end
    local released = 0
    for i = 7, last, 3 do
      local child = ARGV[i]
      if redis.call('SISMEMBER', p .. 'enq', child) == 0 then
        local ek = p .. 'e:' .. child
        if redis.call('SADD', ek, ARGV[i + 1]) == 1
            and redis.call('SCARD', ek) >= tonumber(ARGV[i + 2]) then
          redis.call('DEL', ek)
          redis.call('SADD', p .. 'enq', child)
          redis.call('XADD', q, '*', 't', child)
          released = released + 1
        end
      end
    end
    out[2] = released
    for i = slast + 1, #ARGV - 2, 3 do
      local rk = p .. 'r:' .. ARGV[i]
      if redis.call('SADD', rk, ARGV[3]) == 1
          and redis.call('SCARD', rk) >= tonumber(ARGV[i + 1]) then
        redis.call('DEL', rk)
        redis.call('SADD', p .. 'dead', ARGV[i])
        redis.call('SADD', p .. 'gone', ARGV[i])
        stored = redis.call('HINCRBY', meta, 'stored_bytes', -tonumber(ARGV[i + 2]))
        table.insert(out, ARGV[i])
      end
    end
    if done >= tonumber(redis.call('HGET', meta, 'total')) then
      redis.call('HSET', meta, 'state', 'done', 'finished_ms', ARGV[4])
      redis.call('SREM', 'lpk:runs', string.sub(ARGV[1], 5, -2))
    end
  end
elseif state == 'done' and redis.call('SISMEMBER', p .. 'done', ARGV[3]) == 1 then
  gone_again(p, last, wlast, out)
end
if msg ~= '' and state then
  redis.pcall('XACK', q, 'w', msg)
  redis.pcall('XDEL', q, msg)
end
return out
"#;

/// Fails a run (once: the first error wins). ARGV: prefix, task, message,
/// now (ms). Returns 1 if this call failed the run. Like every script
/// here it takes the run's id from the prefix (`lpk:RUN:`), never from the
/// record's `id` field, which someone else may have written.
pub(crate) const FAIL: &str = r#"
local meta = ARGV[1] .. 'meta'
if redis.call('HGET', meta, 'state') ~= 'running' then
  return 0
end
redis.call('HSET', meta, 'state', 'failed', 'error_task', ARGV[2], 'error', ARGV[3],
  'finished_ms', ARGV[4])
redis.call('SREM', 'lpk:runs', string.sub(ARGV[1], 5, -2))
return 1
"#;

/// Renews the leases of entries this consumer still holds. ARGV: prefix,
/// consumer, entry ids. Returns the ids it no longer holds (another
/// worker took them over, or they are gone).
pub const RENEW: &str = r#"
local q = ARGV[1] .. 'q'
local lost = {}
for i = 3, #ARGV do
  local e = redis.pcall('XPENDING', q, 'w', ARGV[i], ARGV[i], 1)
  if type(e) == 'table' and e[1] and e[1][2] == ARGV[2] then
    redis.call('XCLAIM', q, 'w', ARGV[2], 0, ARGV[i], 'JUSTID')
  else
    table.insert(lost, ARGV[i])
  end
end
return lost
"#;

/// Takes over entries whose lease expired. ARGV: prefix, consumer, lease
/// (ms), count. Returns `{{id, task, deliveries}, ...}` (deliveries
/// counts this one).
pub const RECLAIM: &str = r#"
local q = ARGV[1] .. 'q'
local r = redis.call('XAUTOCLAIM', q, 'w', ARGV[2], ARGV[3], '0-0', 'COUNT', ARGV[4])
local out = {}
for _, e in ipairs(r[2]) do
  if type(e) == 'table' and type(e[2]) == 'table' then
    local id = e[1]
    local pe = redis.call('XPENDING', q, 'w', id, id, 1)
    local n = 1
    if pe[1] then n = pe[1][4] end
    table.insert(out, {id, e[2][2] or '', n})
  end
end
return out
"#;

/// Creates a run's ready stream with its consumer group (reading from the
/// start, so entries added before are delivered too), as `submit` and
/// `resume` do (and the protocol tests, for the runs they set up).
pub fn create_queue(redis: &mut Redis, keys: &Keys) -> Result<(), ClusterError> {
    redis.query(
        redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(keys.queue())
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM"),
        "creating the ready stream",
    )
}

/// Puts tasks into a run's ready stream and its `enq` set, a thousand per
/// round trip; `what` names the step in errors.
pub fn enqueue(
    redis: &mut Redis,
    keys: &Keys,
    ids: &[String],
    what: &str,
) -> Result<(), ClusterError> {
    for chunk in ids.chunks(1000) {
        let mut pipe = redis::pipe();
        for id in chunk {
            pipe.cmd("XADD")
                .arg(keys.queue())
                .arg("*")
                .arg("t")
                .arg(id)
                .ignore();
        }
        pipe.cmd("SADD").arg(keys.enqueued()).arg(chunk).ignore();
        redis.pipe::<()>(&pipe, what)?;
    }
    Ok(())
}

/// Adds a run to the set workers poll (the last step of making a run).
pub(crate) fn announce(redis: &mut Redis, run: &str) -> Result<(), ClusterError> {
    redis.query(redis::cmd("SADD").arg(RUNS).arg(run), "announcing the run")
}
