#include "ahead/sequence.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_sequence.h"
#include "utils/fmgrprotos.h"
#include "utils/syscache.h"
}

namespace partheal::ahead {

SequencePosition read_sequence(Oid sequence) {
  SequencePosition out;
  int64 start = 0;
  pg::guard([&] {
    LOCAL_FCINFO(fcinfo, 1);
    InitFunctionCallInfoData(*fcinfo, nullptr, 1, InvalidOid, nullptr, nullptr);
    fcinfo->args[0].value = ObjectIdGetDatum(sequence);
    fcinfo->args[0].isnull = false;
    Datum d = pg_sequence_last_value(fcinfo);
    out.drawn = !fcinfo->isnull;
    if (out.drawn) out.last = DatumGetInt64(d);
    HeapTuple tuple = SearchSysCache1(SEQRELID, ObjectIdGetDatum(sequence));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for sequence %u", sequence);
    auto* form = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tuple));
    out.increment = form->seqincrement;
    start = form->seqstart;
    ReleaseSysCache(tuple);
  });
  // Before the first draw the next value is the start; one step before it
  // stands for "nothing drawn yet". Wide, since start may be a type's limit.
  if (!out.drawn) {
    __int128 before = static_cast<__int128>(start) - out.increment;
    out.last = before < PG_INT64_MIN   ? PG_INT64_MIN
               : before > PG_INT64_MAX ? PG_INT64_MAX
                                       : static_cast<int64>(before);
  }
  return out;
}

}  // namespace partheal::ahead
