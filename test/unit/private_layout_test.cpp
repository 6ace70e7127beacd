// make test compiles this against the server it tests, with PRIVATE_STRUCTS
// naming a header of the struct definitions cut from that server's own
// source (test/majors.sh, majors_private_structs): partheal's copies of
// PostgreSQL's private layouts must match them field by field. A mismatch is
// a compile error, so the build of this check is the test.
#include <cstddef>
#include <type_traits>

#include "pg/compat.hpp"

extern "C" {
#include PRIVATE_STRUCTS
}

using Copy = partheal::pg::compat::BackgroundWorkerHandleCopy;
using Real = ::BackgroundWorkerHandle;

static_assert(sizeof(Copy) == sizeof(Real), "BackgroundWorkerHandle: size");
static_assert(alignof(Copy) == alignof(Real), "BackgroundWorkerHandle: alignment");
static_assert(offsetof(Copy, slot) == offsetof(Real, slot), "BackgroundWorkerHandle.slot: offset");
static_assert(std::is_same_v<decltype(Copy::slot), decltype(Real::slot)>,
              "BackgroundWorkerHandle.slot: type");
static_assert(offsetof(Copy, generation) == offsetof(Real, generation),
              "BackgroundWorkerHandle.generation: offset");
static_assert(std::is_same_v<decltype(Copy::generation), decltype(Real::generation)>,
              "BackgroundWorkerHandle.generation: type");

int main() {
  return 0;
}
