// What partheal needs to know about a parent table, and the one place that
// decides whether a table can be managed at all.
#pragma once

#include <string>

#include "partitions/parent.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "utils/rel.h"
}

namespace partheal::registry {

// partitions' model of the parent (who it is, its key's type, its DEFAULT),
// with what a registration needs besides: the key's column and limits, the
// id column and its sequence.
struct TableShape : partitions::Parent {
  AttrNumber key_attnum = InvalidAttrNumber;
  std::string key_column;
  int64 key_min = 0;  // the key type's own limits (times: finite, as int64)
  int64 key_max = 0;
  bool key_is_time = false;  // timestamptz, timestamp or date
  // The column whose values partheal_append draws and returns: the key of an
  // id-keyed table; of a time-keyed one, the first column whose default draws
  // from a sequence, if any (InvalidAttrNumber: none, and no sequence).
  AttrNumber id_attnum = InvalidAttrNumber;
  std::string id_column;
  Oid id_type = InvalidOid;
  int64 id_min = 0;
  int64 id_max = 0;
  Oid sequence = InvalidOid;
  bool sequence_needs_acl = true;  // an identity draws without USAGE, as INSERT does
  int64 sequence_increment = 1;
  bool identity_always = false;
  // The key's default is partheal_nextval(parent, sequence), installed by
  // partheal_manage(..., nextval_default => true).
  bool default_is_partheal_nextval = false;
  // The key's default is exactly nextval(sequence): what partheal_nextval
  // may replace and what partheal_unmanage puts back.
  bool default_is_plain_nextval = false;
  bool has_default_partition() const { return OidIsValid(default_relid); }
};

// Reads the shape of an opened parent. Throws PgError, with the SQLSTATE a
// user can act on, for every table partheal cannot manage.
TableShape describe(Relation parent);

}  // namespace partheal::registry
