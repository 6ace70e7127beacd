// SPI, seen from C++: every call guarded, every failure a PgError.
//
// Between connect() and finish() the SPI memory context is current. A unit
// of work that throws does not call finish(): the (sub)transaction abort that
// must follow a PgError releases the connection.
#pragma once

#include <optional>
#include <string>

#include "pg/postgres.hpp"

extern "C" {
#include "executor/spi.h"
}

namespace partheal::pg {

// A name as it must appear in SQL partheal builds: quote_identifier()ed.
std::string quoted(const std::string& name);

}  // namespace partheal::pg

namespace partheal::pg::spi {

void connect();
// For a procedure CALLed outside a transaction block: commit() may end the
// transaction and start the next one.
void connect_nonatomic();
void commit();
void finish();

// A statement built from quote_identifier()ed names; values go in as $n.
struct Args {
  int count = 0;
  Oid* types = nullptr;
  Datum* values = nullptr;
  const char* nulls = nullptr;  // SPI convention: ' ' not null, 'n' null
};

// Runs sql and returns SPI_processed; fails unless SPI reports expected_rc.
uint64 execute(const std::string& sql, int expected_rc, const Args& args = {},
               bool read_only = false);

// A prepared plan kept for the life of the backend (SPI_keepplan).
SPIPlanPtr prepare_kept(const std::string& sql, int nargs, Oid* types);
uint64 execute_plan(SPIPlanPtr plan, Datum* values, const char* nulls, int expected_rc);

// Column `col` (1-based) of result row `row` after execute(); nullopt for NULL.
std::optional<Datum> value(uint64 row, int col);

}  // namespace partheal::pg::spi
