#include "engine/priority.h"

namespace brisk {

const char* PriorityName(Priority p) {
  return p == Priority::kInteractive ? "interactive" : "batch";
}

}  // namespace brisk
