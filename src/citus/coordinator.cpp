#include "citus/coordinator.hpp"

#include "pg/citus.hpp"

namespace partheal::citus {

std::string coordinator_address() {
  return pg::citus::coordinator_address();
}

std::string run_on_coordinator(const std::string& command) {
  return pg::citus::run_on_coordinator(command);
}

}  // namespace partheal::citus
