#include "loadgen/request_record.h"

namespace brisk::loadgen {

const char* RequestStatusName(RequestStatus status) {
  switch (status) {
    case RequestStatus::kOk: return "ok";
    case RequestStatus::kError: return "error";
    case RequestStatus::kRejected: return "rejected";
    case RequestStatus::kCancelled: return "cancelled";
  }
  return "unknown";
}

}  // namespace brisk::loadgen
