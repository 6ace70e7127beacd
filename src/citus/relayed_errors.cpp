#include "citus/relayed_errors.hpp"

#include "pg/postgres.hpp"

namespace partheal::citus {

bool relayed_from_shard(const std::string& funcname, int sqlerrcode) {
  return (funcname == "ReportResultError" && sqlerrcode == ERRCODE_CHECK_VIOLATION) ||
         (funcname == "ReportCopyError" && sqlerrcode == ERRCODE_INTERNAL_ERROR);
}

}  // namespace partheal::citus
