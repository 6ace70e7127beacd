#include <fmt/format.h>

#include "partitions/child_table.hpp"
#include "partitions/key_default.hpp"
#include "pg/boundary.hpp"
#include "partitions/parent.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "common/hashfn.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/tablespace.h"
#include "mb/pg_wchar.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace partheal::partitions {

std::string child_name(const std::string& parent, const std::string& suffix) {
  const size_t limit = NAMEDATALEN - 1;
  if (parent.size() + suffix.size() <= limit) return parent + suffix;
  uint32 hash = pg::guard([&] {
    return hash_bytes(reinterpret_cast<const unsigned char*>(parent.data()),
                      static_cast<int>(parent.size()));
  });
  std::string tag = fmt::format("_{:08x}", hash);
  int room = static_cast<int>(limit) - static_cast<int>(suffix.size() + tag.size());
  if (room < 0) room = 0;
  int keep = pg::guard(
      [&] { return pg_mbcliplen(parent.c_str(), static_cast<int>(parent.size()), room); });
  std::string name = parent.substr(0, keep) + tag + suffix;
  if (name.size() > limit) {
    int cut =
        pg::guard([&] { return pg_mbcliplen(name.c_str(), static_cast<int>(name.size()), limit); });
    name.resize(cut);
  }
  return name;
}

std::string free_child_name(unsigned int namespace_oid, const std::string& parent,
                            const std::string& suffix) {
  constexpr int kTries = 1000;
  for (int n = 0; n < kTries; ++n) {
    std::string name = child_name(parent, n == 0 ? suffix : fmt::format("{}_{}", suffix, n));
    const char* text = name.c_str();
    // CREATE TABLE makes a row type of the same name: a type is in the way too.
    bool taken = pg::guard([&] {
      return OidIsValid(get_relname_relid(text, namespace_oid)) ||
             SearchSysCacheExists2(TYPENAMENSP, CStringGetDatum(text),
                                   ObjectIdGetDatum(namespace_oid));
    });
    if (!taken) return name;
  }
  pg::fail(ERRCODE_DUPLICATE_TABLE,
           fmt::format("no free name for a partition of \"{}\" with suffix \"{}\"", parent, suffix),
           fmt::format("\"{}\" and its {} numbered variants all exist.", child_name(parent, suffix),
                       kTries - 1),
           "Drop or rename the tables in the way.");
}

std::string create_like_sql(unsigned int parent_relid, const std::string& schema,
                            const std::string& child, const std::string& parent) {
  std::string tablespace = pg::guarded_text([&] {
    Oid ts = get_rel_tablespace(parent_relid);
    return OidIsValid(ts) ? get_tablespace_name(ts) : nullptr;
  });
  return fmt::format(
      "CREATE TABLE {0}.{1} (LIKE {0}.{2} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
      "INCLUDING INDEXES INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED "
      "INCLUDING STATISTICS INCLUDING COMPRESSION){3}",
      pg::quoted(schema), pg::quoted(child), pg::quoted(parent),
      tablespace.empty() ? std::string() : " TABLESPACE " + pg::quoted(tablespace));
}

std::string attach_partition_sql(const std::string& schema, const std::string& parent,
                                 const std::string& child, const std::string& range) {
  return fmt::format("ALTER TABLE {0}.{1} ATTACH PARTITION {0}.{2} FOR VALUES {3}",
                     pg::quoted(schema), pg::quoted(parent), pg::quoted(child), range);
}

void create_child_table(const Parent& parent, const std::string& child) {
  // On a Citus worker node Citus refuses the DDL of its tables; partheal
  // says so first, naming the coordinator, whose worker makes them.
  parent.citus.refuse_on_worker_node("its partitions are made",
                                     "The coordinator's partheal worker makes them, and Citus "
                                     "copies them to every node.");
  pg::spi::execute(create_like_sql(parent.relid, parent.schema, child, parent.name),
                   SPI_OK_UTILITY);
  const char* nsp = parent.schema.c_str();
  const char* name = child.c_str();
  Oid relid = pg::guard([&] {
    CommandCounterIncrement();
    return get_relname_relid(name, get_namespace_oid(nsp, false));
  });
  // The new table is this transaction's alone: its ACCESS EXCLUSIVE lock
  // holds up no one.
  for (const std::string& sql : restore_nextval_sql(relid)) pg::spi::execute(sql, SPI_OK_UTILITY);
}

}  // namespace partheal::partitions
