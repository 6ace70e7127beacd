// partheal_attach_window(parent, lower, upper, partition_name): the SQL face
// of attach/reconcile.hpp. It runs in the caller's transaction and backend.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "attach/reconcile.hpp"
#include "attach/window.hpp"
#include "pg/boundary.hpp"
#include "pg/error.hpp"
#include "partitions/catalog.hpp"
#include "pg/own_sql.hpp"
#include "pg/report.hpp"
#include "pg/security.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

using namespace partheal;

namespace {

Datum emit(FunctionCallInfo fcinfo, const attach::Result& r);

std::string text_argument(FunctionCallInfo fcinfo, int n) {
  return pg::guarded_text([&] { return text_to_cstring(PG_GETARG_TEXT_PP(n)); });
}

}  // namespace

PARTHEAL_SQL_FUNCTION(partheal_attach_window) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
    pg::fail(ERRCODE_NULL_VALUE_NOT_ALLOWED,
             "partheal_attach_window: parent, lower and upper must not be NULL");
  Oid relid = PG_GETARG_OID(0);
  std::string lower = text_argument(fcinfo, 1);
  std::string upper = text_argument(fcinfo, 2);
  std::optional<std::string> name;
  if (!PG_ARGISNULL(3)) name = text_argument(fcinfo, 3);

  attach::Result r;
  attach::Parent parent;
  try {
    parent = attach::describe_parent(relid);
  } catch (const PgError& e) {
    // The table itself could not be read in time: nothing was done, and
    // that is default_holds_rows, not an error.
    if (e.sqlerrcode() != ERRCODE_LOCK_NOT_AVAILABLE) throw;
    pg::report(NOTICE, 0, fmt::format("partheal: the window was not attached: {}", e.what()),
               {{}, e.fields().hint});
    // The catalog says whether there is a DEFAULT without a lock on the table.
    bool has_default = OidIsValid(partitions::default_partition_unlocked(relid));
    r.outcome = has_default ? attach::Outcome::kDefaultHoldsRows : attach::Outcome::kNotAttached;
    return emit(fcinfo, r);
  }
  // Everything past the ownership check runs as the owner: a domain's CHECK
  // on the key, or a custom type's comparison, is the owner's code, which a
  // superuser caller must not run with its own rights.
  pg::as_role(parent.owner, [&] {
    // The bounds are read under the caller's DateStyle and TimeZone.
    attach::Window window = attach::window_from_text(parent, lower, upper);
    r = pg::with_own_sql({}, [&] { return attach::attach_window(parent, window, name, 0); });
  });

  return emit(fcinfo, r);
}

namespace {

Datum emit(FunctionCallInfo fcinfo, const attach::Result& r) {
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  const char* outcome = attach::outcome_name(r.outcome);
  pg::guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    Datum values[4];
    bool nulls[4] = {};
    values[0] = ObjectIdGetDatum(r.partition);
    nulls[0] = !OidIsValid(r.partition);
    values[1] = CStringGetTextDatum(outcome);
    values[2] = Int64GetDatum(r.rows_moved);
    values[3] = Int32GetDatum(r.attempts);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  });
  return Datum(0);
}

}  // namespace
