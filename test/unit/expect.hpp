// What every unit test here uses: checks that count, and one summary line
// "<name>: N passed, M failed" that test/run.sh reads. No PostgreSQL.
#pragma once

#include <iostream>
#include <string>

namespace unit {

inline int passed = 0;
inline int failed = 0;

template <typename A, typename B>
void expect_eq(const A& actual, const B& expected, const std::string& what) {
  if (actual == expected) {
    ++passed;
  } else {
    ++failed;
    std::cout << "not ok - " << what << ": got " << actual << ", expected " << expected << "\n";
  }
}

inline int summary(const char* name) {
  std::cout << name << ": " << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

}  // namespace unit
