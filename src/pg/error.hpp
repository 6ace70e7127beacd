// The C++ side of the PostgreSQL error boundary.
//
// A PgError carries every field of a PostgreSQL ErrorData that a client can
// see, so an error that leaves PostgreSQL, travels through C++ frames and is
// raised again reaches the client unchanged.
//
// This header must come before postgres.h: PostgreSQL's port.h redefines
// snprintf and friends, which breaks the standard library and fmt.
#pragma once

#ifdef POSTGRES_H
#error "include C++ headers (src/pg/error.hpp) before postgres.h"
#endif

#include <exception>
#include <string>
#include <utility>

namespace partheal {

struct ErrorFields {
  int sqlerrcode = 0;  // encoded like PostgreSQL's MAKE_SQLSTATE
  std::string message;
  std::string detail;
  std::string hint;
  std::string context;
  std::string schema_name;
  std::string table_name;
  std::string column_name;
  std::string datatype_name;
  std::string constraint_name;
  int cursorpos = 0;
  int internalpos = 0;
  std::string internalquery;
  // Where PostgreSQL raised it; empty for partheal's own errors.
  std::string filename;
  int lineno = 0;
  std::string funcname;
  // True when `context` already holds every CONTEXT line, the callers' too:
  // the error was raised inside PostgreSQL, whose context callbacks ran then.
  // Raising it again must not run them a second time.
  bool context_complete = false;
};

class PgError : public std::exception {
 public:
  explicit PgError(ErrorFields fields) : fields_(std::move(fields)) {}
  PgError(int sqlerrcode, std::string message, std::string detail = {}, std::string hint = {}) {
    fields_.sqlerrcode = sqlerrcode;
    fields_.message = std::move(message);
    fields_.detail = std::move(detail);
    fields_.hint = std::move(hint);
  }
  const char* what() const noexcept override { return fields_.message.c_str(); }
  const ErrorFields& fields() const noexcept { return fields_; }
  int sqlerrcode() const noexcept { return fields_.sqlerrcode; }

 private:
  ErrorFields fields_;
};

}  // namespace partheal
