#include <fmt/format.h>

#include "ahead/sequence.hpp"
#include "pg/boundary.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_sequence.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace partheal::ahead {

namespace {

int64 clamped(__int128 v) {
  return v < PG_INT64_MIN ? PG_INT64_MIN : v > PG_INT64_MAX ? PG_INT64_MAX : static_cast<int64>(v);
}

// last_value of a sequence not drawn from since its start or RESTART: the
// value the next nextval returns. pg_sequence_last_value answers NULL then.
int64 undrawn_next(Oid sequence) {
  std::string sql = pg::guard([&] {
    return std::string(
        fmt::format("SELECT last_value FROM {}.{}",
                    quote_identifier(get_namespace_name(get_rel_namespace(sequence))),
                    quote_identifier(get_rel_name(sequence))));
  });
  pg::spi::connect();
  pg::spi::execute(sql, SPI_OK_SELECT, {}, true);
  std::optional<Datum> d = pg::spi::value(0, 1);
  int64 next = d ? DatumGetInt64(*d) : 0;
  pg::spi::finish();
  return next;
}

}  // namespace

std::optional<SequencePosition> read_sequence(Oid sequence, bool wait) {
  if (!wait && !pg::guard([&] { return ConditionalLockRelationOid(sequence, RowExclusiveLock); }))
    return std::nullopt;
  SequencePosition out;
  int64 last = 0;
  pg::guard([&] {
    LOCAL_FCINFO(fcinfo, 1);
    InitFunctionCallInfoData(*fcinfo, nullptr, 1, InvalidOid, nullptr, nullptr);
    fcinfo->args[0].value = ObjectIdGetDatum(sequence);
    fcinfo->args[0].isnull = false;
    Datum d = pg_sequence_last_value(fcinfo);
    out.drawn = !fcinfo->isnull;
    if (out.drawn) last = DatumGetInt64(d);
    HeapTuple tuple = SearchSysCache1(SEQRELID, ObjectIdGetDatum(sequence));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for sequence %u", sequence);
    auto* form = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tuple));
    out.increment = form->seqincrement;
    out.cache = form->seqcache;
    ReleaseSysCache(tuple);
  });
  if (out.drawn) {
    out.last = last;
    out.next = clamped(static_cast<__int128>(last) + out.increment);
  } else {
    out.next = undrawn_next(sequence);
    out.last = clamped(static_cast<__int128>(out.next) - out.increment);
  }
  return out;
}

}  // namespace partheal::ahead
