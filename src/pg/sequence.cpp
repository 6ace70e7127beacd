#include <fmt/format.h>

#include "pg/sequence.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "catalog/pg_sequence.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace partheal::pg {

namespace {

int64 clamped(__int128 v) {
  return v < PG_INT64_MIN ? PG_INT64_MIN : v > PG_INT64_MAX ? PG_INT64_MAX : static_cast<int64>(v);
}

}  // namespace

std::optional<SequencePosition> read_sequence(Oid sequence, bool wait) {
  // ROW EXCLUSIVE, as nextval takes it: ALTER SEQUENCE (SHARE ROW EXCLUSIVE)
  // in progress makes a read that may not wait skip a round. The lock is
  // taken here, under the current resource owner, so that a subtransaction
  // that is rolled back (the worker's poll) releases it; nextval's own
  // machinery (init_sequence) would keep it until the top transaction ends.
  bool locked = pg::guard([&] {
    if (!wait) return ConditionalLockRelationOid(sequence, RowExclusiveLock);
    LockRelationOid(sequence, RowExclusiveLock);
    return true;
  });
  if (!locked) return std::nullopt;
  SequencePosition out;
  int64 last_value = 0;
  pg::guard([&] {
    // As pg_sequence_last_value and SELECT last_value check: SELECT or USAGE.
    if (pg_class_aclcheck(sequence, GetUserId(), ACL_SELECT | ACL_USAGE) != ACLCHECK_OK)
      ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                      errmsg("permission denied for sequence %s", get_rel_name(sequence))));
    HeapTuple tuple = SearchSysCache1(SEQRELID, ObjectIdGetDatum(sequence));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for sequence %u", sequence);
    auto* form = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tuple));
    out.increment = form->seqincrement;
    out.cache = form->seqcache;
    out.max_value = form->seqmax;
    ReleaseSysCache(tuple);
    // The sequence's one tuple, on its one page, read under a share lock on
    // the buffer, as nextval reads it: last_value is the last value drawn
    // (or handed to a session's cache), or with is_called false the value
    // the next nextval returns. No table scan, no SQL.
    Relation rel = relation_open(sequence, NoLock);
    if (rel->rd_rel->relkind != RELKIND_SEQUENCE)
      elog(ERROR, "\"%s\" is not a sequence", RelationGetRelationName(rel));
    Buffer buffer = ReadBuffer(rel, 0);
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    Page page = BufferGetPage(buffer);
    ItemId item = PageGetItemId(page, FirstOffsetNumber);
    HeapTupleData data;
    data.t_data = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
    data.t_len = ItemIdGetLength(item);
    auto* seq = reinterpret_cast<Form_pg_sequence_data>(GETSTRUCT(&data));
    last_value = seq->last_value;
    out.drawn = seq->is_called;
    UnlockReleaseBuffer(buffer);
    relation_close(rel, NoLock);
  });
  if (out.drawn) {
    out.last = last_value;
    out.next = clamped(static_cast<__int128>(last_value) + out.increment);
  } else {
    out.next = last_value;
    out.last = clamped(static_cast<__int128>(last_value) - out.increment);
  }
  return out;
}

}  // namespace partheal::pg
