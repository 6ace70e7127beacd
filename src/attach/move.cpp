// attach_window's moves of the window's rows out of DEFAULT, and the looks
// that decide whether there are rows to move and whether they may move.
#include <fmt/format.h>

#include <string>

#include "attach/reconcile_internal.hpp"
#include "pg/boundary.hpp"
#include "pg/error.hpp"
#include "pg/spi.hpp"
#include "pg/subxact.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/timestamp.h"
}

namespace partheal::attach::reconcile {

// Moves the window's rows out of DEFAULT into the window's table. The DELETE
// takes ROW EXCLUSIVE on DEFAULT, which no reader or writer waits for.
int64 move_rows(const Parent& p, const Window& w, const Names& n, int64 batch_rows, Result& r) {
  Oid types[] = {p.key.type, p.key.type, INT8OID};
  Datum values[] = {w.lower, w.upper, Int64GetDatum(batch_rows)};
  std::string predicate = window_predicate(p);
  std::string into = fmt::format(
      "INSERT INTO {0} ({1}) OVERRIDING SYSTEM VALUE SELECT {1} FROM moved", n.table, p.columns);
  // The tail, under ACCESS EXCLUSIVE, a partitioned DEFAULT (where ctid
  // names a row only within one leaf) and a Citus DEFAULT (whose rows are in
  // shards, where ctid names no row the coordinator can lock: FOR UPDATE is
  // refused on a multi-shard query) move in one plain statement.
  if (batch_rows < 0 || p.default_is_partitioned || p.citus.in_metadata()) {
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

}  // namespace partheal::attach::reconcile
