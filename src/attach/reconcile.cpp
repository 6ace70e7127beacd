#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "attach/reconcile.hpp"
#include "partitions/child_table.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/error.hpp"
#include "pg/guc_level.hpp"
#include "pg/pause.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "nodes/pg_list.h"
#include "miscadmin.h"
#include "catalog/pg_inherits.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace partheal::attach {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kAttached:
      return "attached";
    case Outcome::kAlreadyAttached:
      return "already_attached";
    case Outcome::kDefaultHoldsRows:
      return "default_holds_rows";
    case Outcome::kNotAttached:
      return "not_attached";
  }
  return "?";
}

namespace {

// Thrown inside the attach's subtransaction to roll back everything it did
// (a table it created, rows it moved) and report default_holds_rows.
struct GiveUp {
  std::string reason;
  std::string hint;  // what the caller can do about it
};

enum class Try { kAttached, kDefaultConflict };

struct Names {
  std::string parent;      // schema.name, quoted
  std::string table;       // the window's table, schema.name, quoted
  std::string table_name;  // unqualified, as it is
  std::string range;       // FROM (...) TO (...)
};

// All of an attempt's lock waits share one budget, started at its first
// lock, and the budget stays below deadlock_timeout. An application that
// begins to wait on a lock partheal holds does so after that first lock, so
// partheal's wait ends before the application's deadlock check can run:
// partheal is the one that gives way.
int budget_ms = 200;  // set at the start of each attach_window

int lock_budget_ms() {
  return budget_ms;
}

// partheal's own deadlock_timeout while it attaches, shorter than a slice:
// it runs the deadlock check first, so in a cycle with an application it is
// the one that fails, and it treats that failure as giving way.
constexpr const char* kOwnDeadlockTimeoutMs = "10";

// A queued lock request is cut into slices: PostgreSQL runs the deadlock
// check once per wait, deadlock_timeout into it, so a cycle that an
// application closes later in a long wait would be found by the
// application's check, not partheal's. Each slice is a new wait with a new
// check.
constexpr long kSliceMs = 25;

class LockBudget {
 public:
  explicit LockBudget(TimestampTz started) : started_(started) {}
  long left() const {
    long elapsed =
        pg::guard([&] { return TimestampDifferenceMilliseconds(started_, GetCurrentTimestamp()); });
    return static_cast<long>(lock_budget_ms()) - elapsed;
  }
  // lock_timeout for the next wait: one slice, or what is left if less.
  void apply() const {
    pg::set_local("lock_timeout", std::to_string(std::max(1L, std::min(kSliceMs, left()))));
  }

 private:
  TimestampTz started_;
};

// ATTACH's scan of DEFAULT names, in its error, the table it found the row
// in: DEFAULT itself, or a partition of a partitioned DEFAULT.
bool is_default_conflict(const PgError& e, const Parent& p) {
  const ErrorFields& f = e.fields();
  if (f.sqlerrcode != ERRCODE_CHECK_VIOLATION || !f.constraint_name.empty() ||
      !OidIsValid(p.default_relid))
    return false;
  if (f.table_name == p.default_name && f.schema_name == p.default_schema) return true;
  if (!p.default_is_partitioned) return false;
  const char* schema = f.schema_name.c_str();
  const char* table = f.table_name.c_str();
  return pg::guard([&] {
    Oid nsp = get_namespace_oid(schema, true);
    Oid relid = OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
    return OidIsValid(relid) && list_member_oid(get_partition_ancestors(relid), p.default_relid);
  });
}

bool is_lock_wait(const PgError& e) {
  return e.sqlerrcode() == ERRCODE_LOCK_NOT_AVAILABLE ||
         e.sqlerrcode() == ERRCODE_T_R_DEADLOCK_DETECTED;
}

void back_off(int attempt) {
  pg::pause_ms(std::min(1000L, 50L << std::min(attempt - 1, 5)));
}

// Moves the window's rows out of DEFAULT into the window's table. The DELETE
// takes ROW EXCLUSIVE on DEFAULT, which no reader or writer waits for.
int64 move_rows(const Parent& p, const Window& w, const Names& n, int64 batch_rows, Result& r) {
  Oid types[] = {p.key.type, p.key.type, INT8OID};
  Datum values[] = {w.lower, w.upper, Int64GetDatum(batch_rows)};
  std::string predicate = window_predicate(p);
  std::string into = fmt::format(
      "INSERT INTO {0} ({1}) OVERRIDING SYSTEM VALUE SELECT {1} FROM moved", n.table, p.columns);
  // The tail, under ACCESS EXCLUSIVE, and a partitioned DEFAULT (where ctid
  // names a row only within one leaf) move in one plain statement.
  if (batch_rows < 0 || p.default_is_partitioned) {
    std::string sql = fmt::format("WITH moved AS (DELETE FROM {} WHERE {} RETURNING {}) {}",
                                  p.default_sql, predicate, p.columns, into);
    r.move_statements++;
    return static_cast<int64>(pg::spi::execute(sql, SPI_OK_INSERT, {2, types, values, nullptr}));
  }
  // The bulk skips rows another transaction has locked, so it never waits
  // for an application that may be waiting for a row partheal moved: the
  // tail takes them once that transaction has ended.
  std::string limit = batch_rows > 0 ? " LIMIT $3" : "";
  std::string sql = fmt::format(
      "WITH moved AS (DELETE FROM {0} WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
      "SELECT ctid FROM {0} WHERE {1}{4} FOR UPDATE SKIP LOCKED)) AND {1} RETURNING {2}) {3}",
      p.default_sql, predicate, p.columns, into, limit);
  int nargs = batch_rows > 0 ? 3 : 2;
  int64 total = 0;
  for (;;) {
    r.move_statements++;
    auto moved =
        static_cast<int64>(pg::spi::execute(sql, SPI_OK_INSERT, {nargs, types, values, nullptr}));
    total += moved;
    // A batch can come back short with rows still to move: a row updated
    // since the statement's snapshot is locked but not moved. Only an empty
    // batch means the bulk is done.
    if (batch_rows <= 0 || moved == 0) return total;
  }
}

bool default_holds_window_rows(const Parent& p, const Window& w) {
  Oid types[] = {p.key.type, p.key.type};
  Datum values[] = {w.lower, w.upper};
  std::string sql =
      fmt::format("SELECT 1 FROM {} WHERE {} LIMIT 1", p.default_sql, window_predicate(p));
  // Not read-only: SPI then takes a new snapshot, so the look sees rows
  // committed since the caller's statement began.
  return pg::spi::execute(sql, SPI_OK_SELECT, {2, types, values, nullptr}) > 0;
}

// The rows the bulk skipped, moved with a plain DELETE that waits for their
// transactions, in slices like a queued lock (a wait for a row is a wait for
// its transaction's lock), each in a subtransaction so a slice that runs out
// takes nothing with it.
int64 move_skipped(const Parent& p, const Window& w, const Names& n, Result& r) {
  LockBudget budget(pg::guard([] { return GetCurrentTimestamp(); }));
  for (;;) {
    int64 moved = 0;
    int64 statements = r.move_statements;
    try {
      pg::in_subtransaction([&] {
        budget.apply();
        moved = move_rows(p, w, n, -1, r);
      });
      return moved;
    } catch (const PgError& e) {
      r.move_statements = statements;
      if (e.sqlerrcode() != ERRCODE_LOCK_NOT_AVAILABLE || budget.left() <= 0) throw;
    }
  }
}

// A foreign key that references the table sees a move as a DELETE: ON
// DELETE CASCADE would delete the referencing rows, NO ACTION would fail.
bool referenced_by_foreign_keys(const Parent& p) {
  Oid types[] = {OIDOID};
  Datum values[] = {ObjectIdGetDatum(p.default_relid)};
  return pg::spi::execute(
             "SELECT 1 FROM pg_catalog.pg_constraint WHERE contype OPERATOR(pg_catalog.=) 'f' "
             "AND confrelid OPERATOR(pg_catalog.=) $1 LIMIT 1",
             SPI_OK_SELECT, {1, types, values, nullptr}, true) > 0;
}

// Logical replication sees a move as a DELETE from the published table and
// an INSERT into a table it does not publish (or publishes under another
// name): a subscriber would lose the rows.
bool published(const Parent& p) {
  Oid types[] = {OIDOID, OIDOID};
  Datum values[] = {ObjectIdGetDatum(p.relid), ObjectIdGetDatum(p.default_relid)};
  return pg::spi::execute(
             "WITH rels AS (SELECT relid FROM "
             "pg_catalog.pg_partition_ancestors($1::pg_catalog.regclass)"
             " UNION SELECT $2) "
             "SELECT 1 FROM pg_catalog.pg_publication p WHERE p.puballtables OR EXISTS ("
             "SELECT 1 FROM pg_catalog.pg_publication_rel r JOIN rels ON r.prrelid "
             "OPERATOR(pg_catalog.=) rels.relid WHERE r.prpubid OPERATOR(pg_catalog.=) p.oid) "
             "OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication_namespace n JOIN "
             "pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.pnnspid JOIN rels "
             "ON c.oid OPERATOR(pg_catalog.=) rels.relid WHERE n.pnpubid OPERATOR(pg_catalog.=) "
             "p.oid) LIMIT 1",
             SPI_OK_SELECT, {2, types, values, nullptr}, true) > 0;
}

// Thrown inside an attempt when a lock it polls for is taken: the attempt's
// subtransaction rolls back, releasing the locks it did get.
struct LocksBusy {};

// What an attempt locks, in order, parent first: the parent, the window's
// table, DEFAULT and, when DEFAULT is partitioned, its partitions (ATTACH
// scans those too).
std::vector<std::pair<Oid, LOCKMODE>> lock_set(const Parent& p, Oid table, bool locked) {
  LOCKMODE parent_mode = locked                        ? AccessExclusiveLock
                         : OidIsValid(p.default_relid) ? ExclusiveLock
                                                       : ShareUpdateExclusiveLock;
  std::vector<std::pair<Oid, LOCKMODE>> set = {{p.relid, parent_mode},
                                               {table, AccessExclusiveLock}};
  if (OidIsValid(p.default_relid)) {
    List* tree = pg::guard([&] { return find_all_inheritors(p.default_relid, NoLock, nullptr); });
    ListCell* cell = nullptr;
    foreach (cell, tree) set.emplace_back(lfirst_oid(cell), AccessExclusiveLock);
  }
  return set;
}

// A lock no transaction holds in a conflicting mode, asked without taking
// it: a lock request (even one that does not wait) for ACCESS EXCLUSIVE
// assigns the subtransaction an XID, which a poll every 5 ms must not burn.
bool free_now(Oid relid, LOCKMODE mode) {
  return pg::guard([&] {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
    int conflicts = 0;
    (void)GetLockConflicts(&tag, mode, &conflicts);
    return conflicts == 0;
  });
}

// Takes the attempt's locks. Polling (`wait` false), all or none, without
// queueing: a request that waits in the lock manager puts every later
// writer and reader of the table behind it for as long as partheal waits.
// Queueing, each wait within what is left of the budget.
void lock_all(const Parent& p, Oid table, bool locked, bool wait, const LockBudget& budget,
              TimestampTz& held_since) {
  for (const auto& [relid, mode] : lock_set(p, table, locked)) {
    if (wait) {
      budget.apply();
      pg::guard([&] { LockRelationOid(relid, mode); });
    } else if (!free_now(relid, mode) ||
               !pg::guard([&] { return ConditionalLockRelationOid(relid, mode); })) {
      throw LocksBusy{};
    }
    if (relid == p.relid && OidIsValid(p.default_relid))
      held_since = pg::guard([] { return GetCurrentTimestamp(); });
  }
}

// One attempt, in its own subtransaction: locks that cannot be had or a
// DEFAULT conflict roll back only this attempt and its locks. `queue` is the
// last attempt's: it waits in the lock manager, within the budget, so that a
// steady stream of transactions cannot starve it.
Try attempt_once(const Parent& p, const Window& w, const Names& n, Oid table, bool locked,
                 bool queue, TimestampTz attempt_started, Result& r, TimestampTz& held_since) {
  pg::in_subtransaction([&] {
    LockBudget budget(attempt_started);
    // In the locked form the parent is ACCESS EXCLUSIVE: with rows moving,
    // a reader planned with the old partition set, then held at DEFAULT's
    // lock, would run after the commit with a new snapshot and find the
    // rows in neither place. Held at the parent, it plans after the commit.
    lock_all(p, table, locked, queue, budget, held_since);
    budget.apply();
    if (locked) r.rows_moved += move_rows(p, w, n, -1, r);
    budget.apply();
    pg::spi::execute(partitions::attach_partition_sql(p.schema, p.name, n.table_name, n.range),
                     SPI_OK_UTILITY);
  });
  return Try::kAttached;
}

// True when another backend waits for a lock this one holds: once rows have
// moved, polling would leave it waiting unseen by any deadlock check, since
// partheal itself never waits in the lock manager while it polls.
bool someone_waits_for_me() {
  return pg::spi::execute(
             "SELECT 1 FROM pg_catalog.pg_locks l WHERE NOT l.granted AND "
             "pg_catalog.pg_backend_pid() OPERATOR(pg_catalog.=) ANY "
             "(pg_catalog.pg_blocking_pids(l.pid)) LIMIT 1",
             SPI_OK_SELECT, {}, true) > 0;
}

// Adds the time since `since` to the parent's lock hold: every attempt that
// got the parent counts, the failed ones too, since writers waited for them.
void count_hold(TimestampTz since, Result& r) {
  if (since == 0) return;
  long ms =
      pg::guard([&] { return TimestampDifferenceMilliseconds(since, GetCurrentTimestamp()); });
  r.parent_held_ms += ms;
  r.parent_held_longest_ms = std::max(r.parent_held_longest_ms, ms);
}

// Every attempt but the last polls for its locks, every few milliseconds for
// the budget, without ever waiting in the lock manager; the last one queues.
Try attempt(const Parent& p, const Window& w, const Names& n, Oid table, bool locked, Result& r) {
  std::string last = "the locks were taken whenever partheal looked";
  const int attempts = settings::attach_lock_attempts;
  bool skip_to_queue = false;
  for (int i = 0; i < attempts; ++i) {
    if (i > 0 && !skip_to_queue) back_off(i);
    r.attempts++;
    bool queue = i == attempts - 1 || skip_to_queue;
    TimestampTz polling_since = pg::guard([] { return GetCurrentTimestamp(); });
    for (int polls = 1;; ++polls) {
      int64 moved_before = r.rows_moved;
      int64 statements_before = r.move_statements;
      TimestampTz held_since = 0;
      try {
        Try t = attempt_once(p, w, n, table, locked, queue, polling_since, r, held_since);
        count_hold(held_since, r);
        return t;
      } catch (const LocksBusy&) {
        long polled = pg::guard(
            [&] { return TimestampDifferenceMilliseconds(polling_since, GetCurrentTimestamp()); });
        if (polled >= lock_budget_ms()) break;
        // Holding moved rows, partheal may be what the holder waits for:
        // queue at once, where the deadlock check can see the cycle.
        if (locked && polls % 10 == 0 && someone_waits_for_me()) {
          skip_to_queue = true;
          i = std::max(i, attempts - 2);
          break;
        }
        pg::pause_ms(5);
      } catch (const PgError& e) {
        count_hold(held_since, r);
        r.rows_moved = moved_before;
        r.move_statements = statements_before;
        if (is_default_conflict(e, p)) return Try::kDefaultConflict;
        if (locked && e.sqlerrcode() == ERRCODE_T_R_DEADLOCK_DETECTED)
          throw GiveUp{
              "it and another transaction were waiting for each other, and partheal gave way",
              "Try again when that transaction has ended."};
        if (!is_lock_wait(e)) throw;
        last = e.what();
        // A slice of the queued attempt ran out: queue again, with a new
        // deadlock check, while the budget lasts.
        bool spent = pg::guard([&] {
                       return TimestampDifferenceMilliseconds(polling_since, GetCurrentTimestamp());
                     }) >= lock_budget_ms();
        if (queue && e.sqlerrcode() == ERRCODE_LOCK_NOT_AVAILABLE && !spent) continue;
        break;
      }
    }
  }
  throw GiveUp{fmt::format("its locks could not be had in {} attempts of {} ms ({})",
                           settings::attach_lock_attempts, lock_budget_ms(), last),
               "Another transaction held the table or its DEFAULT partition; try again when it "
               "has ended."};
}

void log_line(const std::string& line, int level) {
  const char* text = line.c_str();
  pg::guard([&] { ereport(level, (errmsg_internal("%s", text))); });
}

}  // namespace

Result attach_window(const Parent& p, const Window& w, const std::optional<std::string>& table_name,
                     int64 batch_rows) {
  Result r;
  if (std::optional<Oid> same =
          partitions::partition_with_bounds(p.relid, p.name, value_range(w))) {
    r.outcome = Outcome::kAlreadyAttached;
    r.partition = *same;
    return r;
  }
  std::string table = table_name ? *table_name : partitions::child_name(p.name, w.suffix);
  if (table.empty() || table.size() >= NAMEDATALEN)
    pg::fail(ERRCODE_INVALID_NAME,
             fmt::format("partition name \"{}\" is empty or longer than {} bytes", table,
                         NAMEDATALEN - 1));
  Names n;
  n.parent = pg::quoted(p.schema) + "." + pg::quoted(p.name);
  n.table = pg::quoted(p.schema) + "." + pg::quoted(table);
  n.table_name = table;
  n.range = fmt::format("FROM ({}) TO ({})", w.lower_literal, w.upper_literal);
  auto lookup = [&] {
    const char* name = table.c_str();
    const char* schema = p.schema.c_str();
    return pg::guard([&] { return get_relname_relid(name, get_namespace_oid(schema, false)); });
  };
  Oid existing = lookup();
  if (OidIsValid(existing) && !table_name)
    pg::fail(ERRCODE_DUPLICATE_TABLE,
             fmt::format("relation \"{}\" already exists, and partheal_attach_window was not "
                         "asked to attach it",
                         table),
             {}, "Pass it as partition_name to attach it, or pass another name to create.");
  budget_ms = settings::attach_lock_budget_ms();
  std::optional<GiveUp> give_up;
  try {
    pg::in_subtransaction([&] {
      // Every wait of the call, not only the attempts', is bounded and ends
      // in partheal giving way: the look, the table's creation, the bulk move.
      pg::set_local_as_server("deadlock_timeout", kOwnDeadlockTimeoutMs);
      pg::set_local("lock_timeout", std::to_string(budget_ms));
      pg::as_role(p.owner, [&] {
        if (!OidIsValid(existing)) partitions::create_child_table(p.relid, p.schema, table, p.name);
        r.partition = lookup();
        // Asked without a lock anyone waits for: a plain ATTACH that is
        // sure to fail would hold writers at the parent for a whole scan of
        // DEFAULT first. A row that arrives after the look is still caught
        // by the plain attempt's error.
        bool holds_rows = OidIsValid(p.default_relid) && default_holds_window_rows(p, w);
        // PostgreSQL's ATTACH does not scan a foreign DEFAULT; partheal looks
        // before it locks anything, since the look runs on the remote server,
        // where partheal's lock_timeout does not reach.
        if (holds_rows && p.default_is_foreign)
          throw GiveUp{fmt::format("the DEFAULT partition \"{}\" is a foreign table, which "
                                   "partheal can neither lock nor move rows out of",
                                   p.default_name),
                       "Move the window's rows out of the foreign table yourself, then attach."};
        if (!holds_rows && attempt(p, w, n, r.partition, false, r) == Try::kAttached) return;
        if (referenced_by_foreign_keys(p))
          throw GiveUp{
              "foreign keys reference the table, and moving rows out of DEFAULT would "
              "run their ON DELETE actions",
              "Attach the window before rows of it arrive in DEFAULT."};
        if (published(p))
          throw GiveUp{
              "the table is published for logical replication, and a subscriber would "
              "see the rows moved out of DEFAULT as deleted",
              "Attach the window before rows of it arrive in DEFAULT."};
        r.rows_moved += move_rows(p, w, n, batch_rows, r);
        // The rows the bulk skipped because others had them locked move now,
        // under ROW EXCLUSIVE, waiting for those transactions within the
        // budget; not in the locked form, where the table would wait too.
        r.rows_moved += move_skipped(p, w, n, r);
        if (attempt(p, w, n, r.partition, true, r) == Try::kAttached) return;
        throw GiveUp{
            "DEFAULT still holds rows of the window after the move: rows this transaction "
            "cannot see (under REPEATABLE READ, rows committed after its snapshot), or rows a "
            "trigger on DEFAULT kept from being deleted",
            "Attach in a READ COMMITTED transaction, with no trigger on DEFAULT that keeps "
            "rows."};
      });
    });
  } catch (const PgError& e) {
    if (!is_lock_wait(e)) throw;
    give_up =
        GiveUp{e.sqlerrcode() == ERRCODE_T_R_DEADLOCK_DETECTED
                   ? std::string("it and another transaction were waiting for each other, "
                                 "and partheal gave way")
                   : fmt::format("a lock it needed was held by another transaction ({})", e.what()),
               "Try again when that transaction has ended."};
  } catch (const GiveUp& g) {
    give_up = g;
  }
  if (give_up) {
    const GiveUp& g = *give_up;
    const bool has_default = OidIsValid(p.default_relid);
    r.outcome = has_default ? Outcome::kDefaultHoldsRows : Outcome::kNotAttached;
    r.reason = g.reason;
    r.rows_moved = 0;
    r.move_statements = 0;
    r.partition = existing;
    std::string message = fmt::format("partheal: the window {} of \"{}\" was not attached: {}",
                                      n.range, p.name, g.reason);
    std::string hint = (has_default ? "Its rows are still in the DEFAULT partition, where readers "
                                      "of the table see them; nothing was changed. "
                                    : "The table has no DEFAULT partition, so no row was moved or "
                                      "held back; nothing was changed. ") +
                       g.hint;
    log_line(fmt::format("{} {}", errors::kLogAttachGaveUp, message), LOG);
    const char* m = message.c_str();
    const char* h = hint.c_str();
    pg::guard([&] { ereport(NOTICE, (errmsg_internal("%s", m), errhint("%s", h))); });
    return r;
  }
  log_line(fmt::format("{} attached {} to {} FOR VALUES {}: {} rows moved out of DEFAULT, {} "
                       "attempts; the parent was locked for {} ms in all, {} ms at the longest, "
                       "the last hold lasting until the caller's commit",
                       errors::kLogAttached, n.table, n.parent, n.range, r.rows_moved, r.attempts,
                       r.parent_held_ms, r.parent_held_longest_ms),
           LOG);
  return r;
}

}  // namespace partheal::attach
