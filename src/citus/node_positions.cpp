#include "citus/node_positions.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>

#include "pg/boundary.hpp"
#include "pg/citus.hpp"
#include "pg/guc_level.hpp"
#include "pg/own_sql.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_sequence.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace partheal::citus {

namespace {
// What the read of a node's sequence waits for a lock on it there.
constexpr int kNodeLockWaitMs = 1000;

// The partition of `size` ids that holds `id`, as partitions' key math
// numbers them (floor division).
__int128 partitions_of(int64 id, int64 size) {
  const __int128 q = static_cast<__int128>(id) / size;
  return (id % size != 0 && id < 0) ? q - 1 : q;
}
}  // namespace

std::vector<NodePosition> worker_positions(Oid sequence, std::vector<std::string>* unreachable) {
  if (!pg::citus::installed()) return {};
  // Citus gives worker nodes a range of their own only for a bigint
  // sequence; a smaller one is set to its maximum there, and draws fail.
  bool bigint = pg::guard([&] {
    HeapTuple tuple = SearchSysCache1(SEQRELID, ObjectIdGetDatum(sequence));
    if (!HeapTupleIsValid(tuple)) return false;
    bool is_int8 = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tuple))->seqtypid == INT8OID;
    ReleaseSysCache(tuple);
    return is_int8;
  });
  if (!bigint) return {};
  const char* schema = pg::guard([&] { return get_namespace_name(get_rel_namespace(sequence)); });
  const char* name = pg::guard([&] { return get_rel_name(sequence); });
  if (schema == nullptr || name == nullptr) return {};
  std::string sequence_name = fmt::format("{}.{}", pg::quoted(schema), pg::quoted(name));
  const char* sequence_text = sequence_name.c_str();
  std::string sequence_sql = pg::guarded_text([&] { return quote_literal_cstr(sequence_text); });
  // A SELECT FROM the sequence would lock it while the command is parsed,
  // before any setting of its own could bound the wait; held by an ALTER
  // SEQUENCE or a LOCK there, it would hold this poll, and the lock this
  // worker keeps on the parent meanwhile. pg_sequence_last_value locks it
  // when it runs, after the set_config it depends on: the wait ends with
  // the node's lock timeout, and the node is left out of this poll. Not
  // drawn from (NULL), the sequence stands at its start.
  std::string command = fmt::format(
      "SELECT pg_catalog.format('%s %s', COALESCE(v, s.seqstart), v IS NOT NULL) "
      "FROM pg_catalog.pg_sequence s, LATERAL pg_catalog.pg_sequence_last_value(CASE WHEN "
      "pg_catalog.set_config('lock_timeout', '{}', true) IS NOT NULL THEN s.seqrelid END) v "
      "WHERE s.seqrelid OPERATOR(pg_catalog.=) {}::pg_catalog.regclass",
      kNodeLockWaitMs, sequence_sql);
  return pg::with_own_sql({}, [&] {
    pg::set_local("citus.node_connection_timeout", pg::citus::kNodeConnectTimeoutMs);
    Oid types[] = {TEXTOID};
    const char* text = command.c_str();
    Datum values[] = {pg::guard([&] { return CStringGetTextDatum(text); })};
    uint64 n = pg::spi::execute(
        "SELECT pg_catalog.format('%s:%s', nodename, nodeport), success, result FROM "
        "pg_catalog.run_command_on_workers($1)",
        SPI_OK_SELECT, {1, types, values, nullptr}, true);
    std::vector<NodePosition> out;
    for (uint64 i = 0; i < n; ++i) {
      NodePosition p;
      p.node = pg::citus::text_value(i, 1);
      std::optional<Datum> ok = pg::spi::value(i, 2);
      std::string result = pg::citus::text_value(i, 3);
      // "last_value is_called", as the command above formats them.
      char* end = nullptr;
      long long last = std::strtoll(result.c_str(), &end, 10);
      if (!ok || !DatumGetBool(*ok) || end == result.c_str() || *end != ' ') {
        if (unreachable != nullptr) unreachable->push_back(p.node + ": " + result);
        continue;
      }
      p.last_value = last;
      p.drawn = end[1] == 't';
      out.push_back(p);
    }
    return out;
  });
}

bool NodeReach::needs(int64 id, int64 size, int64 reach, bool drawn) {
  if (!nodes_) {
    nodes_.emplace();
    if (table_.on_coordinator())
      pg::as_role(owner_, [&] { *nodes_ = worker_positions(sequence_, nullptr); });
  }
  const __int128 n = partitions_of(id, size);
  for (const NodePosition& p : *nodes_) {
    const __int128 node_at = partitions_of(p.last_value, size);
    if (n >= node_at - reach && n <= node_at + reach) return true;
    // Drawn on that node: in its range, and its sequence is past it.
    if (drawn && p.drawn && id <= p.last_value &&
        id >> pg::citus::kNodeRangeBits == p.last_value >> pg::citus::kNodeRangeBits)
      return true;
  }
  return false;
}

bool may_be_in_node_range(int64 key, int64 size) {
  return static_cast<__int128>(key) + size >= (__int128{1} << pg::citus::kNodeRangeBits);
}

}  // namespace partheal::citus
