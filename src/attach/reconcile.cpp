// attach_window (attach/reconcile.hpp): the call's steps in order, what it
// reports, and what it gives up on. The lock budget and polling are in
// locks.cpp, the moves in move.cpp, the attempts in attempt.cpp.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "attach/reconcile.hpp"
#include "attach/reconcile_internal.hpp"
#include "partitions/child_table.hpp"
#include "errors.hpp"
#include "pg/boundary.hpp"
#include "pg/error.hpp"
#include "citus/citus.hpp"
#include "pg/guc_level.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"
#include "pg/subxact.hpp"
#include "settings.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
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

using reconcile::GiveUp;
using reconcile::Names;
using reconcile::Try;

// partheal's own deadlock_timeout while it attaches, shorter than a slice:
// it runs the deadlock check first, so in a cycle with an application it is
// the one that fails, and it treats that failure as giving way.
constexpr const char* kOwnDeadlockTimeoutMs = "10";

// The window's table: the name the caller gave, or the one partheal makes.
std::string table_for(const Parent& p, const Window& w,
                      const std::optional<std::string>& table_name) {
  std::string table = table_name ? *table_name : partitions::child_name(p.name, w.suffix);
  if (table.empty() || table.size() >= NAMEDATALEN)
    pg::fail(ERRCODE_INVALID_NAME,
             fmt::format("partition name \"{}\" is empty or longer than {} bytes", table,
                         NAMEDATALEN - 1));
  return table;
}

Names names_of(const Parent& p, const Window& w, const std::string& table) {
  Names n;
  n.parent = pg::quoted(p.schema) + "." + pg::quoted(p.name);
  n.table = pg::quoted(p.schema) + "." + pg::quoted(table);
  n.table_name = table;
  n.range = fmt::format("FROM ({}) TO ({})", w.lower_literal, w.upper_literal);
  return n;
}

Oid find_table(const Parent& p, const std::string& table) {
  const char* name = table.c_str();
  const char* schema = p.schema.c_str();
  return pg::guard([&] { return get_relname_relid(name, get_namespace_oid(schema, false)); });
}

// With rows of the window in DEFAULT: they move, and the locked form
// attaches the table.
void move_then_attach(const Parent& p, const Window& w, const Names& n, int64 batch_rows,
                      Result& r) {
  if (reconcile::referenced_by_foreign_keys(p))
    throw GiveUp{
        "foreign keys reference the table, and moving rows out of DEFAULT would "
        "run their ON DELETE actions",
        "Attach the window before rows of it arrive in DEFAULT."};
  if (reconcile::published(p))
    throw GiveUp{
        "the table is published for logical replication, and a subscriber would "
        "see the rows moved out of DEFAULT as deleted",
        "Attach the window before rows of it arrive in DEFAULT."};
  r.rows_moved += reconcile::move_rows(p, w, n, batch_rows, r);
  // The rows the bulk skipped because others had them locked move now,
  // under ROW EXCLUSIVE, waiting for those transactions within the
  // budget; not in the locked form, where the table would wait too.
  r.rows_moved += reconcile::move_skipped(p, w, n, r);
  if (reconcile::attempt(p, w, n, r.partition, true, r) == Try::kAttached) return;
  throw GiveUp{
      "DEFAULT still holds rows of the window after the move: rows this transaction "
      "cannot see (under REPEATABLE READ, rows committed after its snapshot), or rows a "
      "trigger on DEFAULT kept from being deleted",
      "Attach in a READ COMMITTED transaction, with no trigger on DEFAULT that keeps "
      "rows."};
}

// The attach as the owner, inside the call's subtransaction: the table
// created if it does not exist, then the plain ATTACH or the moves.
void attach_as_owner(const Parent& p, const Window& w, const Names& n, Oid existing,
                     int64 batch_rows, Result& r) {
  if (!OidIsValid(existing)) partitions::create_child_table(p, n.table_name);
  r.partition = find_table(p, n.table_name);
  // Asked without a lock anyone waits for: a plain ATTACH that is
  // sure to fail would hold writers at the parent for a whole scan of
  // DEFAULT first. A row that arrives after the look is still caught
  // by the plain attempt's error.
  bool holds_rows = OidIsValid(p.default_relid) && reconcile::default_holds_window_rows(p, w);
  // PostgreSQL's ATTACH does not scan a foreign DEFAULT; partheal looks
  // before it locks anything, since the look runs on the remote server,
  // where partheal's lock_timeout does not reach.
  if (holds_rows && p.default_is_foreign)
    throw GiveUp{fmt::format("the DEFAULT partition \"{}\" is a foreign table, which "
                             "partheal can neither lock nor move rows out of",
                             p.default_name),
                 "Move the window's rows out of the foreign table yourself, then attach."};
  if (!holds_rows && reconcile::attempt(p, w, n, r.partition, false, r) == Try::kAttached) return;
  move_then_attach(p, w, n, batch_rows, r);
}

// The whole attach in one subtransaction, which a lock wait that runs out
// or a GiveUp rolls back: why partheal gave up, or nothing once attached.
std::optional<GiveUp> try_attach(const Parent& p, const Window& w, const Names& n, Oid existing,
                                 int64 batch_rows, Result& r) {
  const int caller_lock_timeout_ms = pg::guard([] { return LockTimeout; });
  try {
    pg::in_subtransaction([&] {
      // Every wait of the call, not only the attempts', is bounded and ends
      // in partheal giving way: the look, the table's creation, the bulk move;
      // on Citus, what its DDL and the move wait for on the worker nodes too.
      pg::set_local_as_server("deadlock_timeout", kOwnDeadlockTimeoutMs);
      pg::set_local("lock_timeout", std::to_string(reconcile::lock_budget_ms()));
      p.citus.with_lock_bound_on_nodes(reconcile::lock_budget_ms(), caller_lock_timeout_ms, [&] {
        p.citus.sequential_if_long_shard_names(n.table_name);
        pg::as_role(p.owner, [&] { attach_as_owner(p, w, n, existing, batch_rows, r); });
      });
    });
  } catch (const PgError& e) {
    if (!reconcile::is_lock_wait(e)) throw;
    return GiveUp{
        e.sqlerrcode() == ERRCODE_T_R_DEADLOCK_DETECTED
            ? std::string("it and another transaction were waiting for each other, "
                          "and partheal gave way")
            : fmt::format("a lock it needed was held by another transaction ({})", e.what()),
        "Try again when that transaction has ended."};
  } catch (const GiveUp& g) {
    return g;
  }
  return std::nullopt;
}

// Nothing was changed: the result says why, in the server log and in a
// NOTICE to the caller.
void gave_up(const Parent& p, const Names& n, const GiveUp& g, Oid existing, Result& r) {
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
  pg::report(LOG, 0, fmt::format("{} {}", errors::kLogAttachGaveUp, message));
  pg::report(NOTICE, 0, message, {{}, hint});
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
  std::string table = table_for(p, w, table_name);
  Names n = names_of(p, w, table);
  Oid existing = find_table(p, table);
  if (OidIsValid(existing) && !table_name)
    pg::fail(ERRCODE_DUPLICATE_TABLE,
             fmt::format("relation \"{}\" already exists, and partheal_attach_window was not "
                         "asked to attach it",
                         table),
             {}, "Pass it as partition_name to attach it, or pass another name to create.");
  reconcile::set_lock_budget_ms(settings::attach_lock_budget_ms());
  if (std::optional<GiveUp> give_up = try_attach(p, w, n, existing, batch_rows, r)) {
    gave_up(p, n, *give_up, existing, r);
    return r;
  }
  pg::report(LOG, 0,
             fmt::format("{} attached {} to {} FOR VALUES {}: {} rows moved out of DEFAULT, {} "
                         "attempts; the parent was locked for {} ms in all, {} ms at the longest, "
                         "the last hold lasting until the caller's commit",
                         errors::kLogAttached, n.table, n.parent, n.range, r.rows_moved, r.attempts,
                         r.parent_held_ms, r.parent_held_longest_ms));
  return r;
}

}  // namespace partheal::attach
