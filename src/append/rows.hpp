// The rows argument of partheal_append, turned into typed columns.
#pragma once

#include <vector>

#include "append/target.hpp"

extern "C" {
#include "utils/jsonb.h"
}

namespace partheal::append {

struct Rows {
  int count = 0;
  std::vector<int> columns;  // target column indexes in attnum order; the key is always there
  int key_position = -1;     // where the key is in `columns`
  int id_position = -1;      // where the id is: the key's, for an id-keyed table; -1: none
  // Column-major: the value of column position c in row r is at c * count + r.
  std::vector<Datum> values;
  std::vector<char> nulls;      // 'n' for NULL, ' ' otherwise, as SPI wants
  std::vector<bool> id_given;   // the row names the id column
  std::vector<bool> key_given;  // the row names the key column (the same, for ids)

  Datum& value(int position, int row) { return values[position * count + row]; }
  char& null(int position, int row) { return nulls[position * count + row]; }
};

// Validates and converts every value before anything is drawn or written, so
// bad input changes nothing. Values convert through each column type's input
// function, so a bad value fails with that type's own error. With
// `before_row_triggers` (the table has BEFORE INSERT ROW triggers, which
// may fill a NOT NULL column) NOT NULL is left to the INSERT.
Rows read_rows(const Target& target, Jsonb* json, bool before_row_triggers);

}  // namespace partheal::append
