#include "citus/relayed_errors.hpp"

#include "pg/citus.hpp"
#include "pg/postgres.hpp"

namespace partheal::citus {

bool relayed_from_shard(const std::string& funcname, int sqlerrcode, Oid parent) {
  const bool relayed = (funcname == "ReportResultError" && sqlerrcode == ERRCODE_CHECK_VIOLATION) ||
                       (funcname == "ReportCopyError" && sqlerrcode == ERRCODE_INTERNAL_ERROR);
  return relayed && pg::citus::is_citus_table(parent);
}

}  // namespace partheal::citus
