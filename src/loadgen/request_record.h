// What the client measured for one request: the plain data that the
// statistics, the summary table and the JSON result are computed from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace brisk::loadgen {

enum class RequestStatus {
  kOk,         // HTTP 200, a stream with at least one content chunk, no error event
  kError,      // transport error, timeout, non-200 other than 429, error event
  kRejected,   // HTTP 429: the server shed load; counted apart from errors
  kCancelled,  // the benchmark was interrupted before the request finished
};

const char* RequestStatusName(RequestStatus status);

struct RequestRecord {
  int64_t index = 0;
  RequestStatus status = RequestStatus::kCancelled;
  int http_status = 0;
  std::string error;
  // Seconds since the start of the measured phase: when the arrival process
  // scheduled the request, and when it was actually sent (later only if the
  // in-flight cap held it back). Latencies are measured from start_s.
  double scheduled_s = 0;
  double start_s = 0;
  double ttft_s = 0;  // send -> first content-bearing chunk
  double e2e_s = 0;   // send -> end of the stream
  // Gaps between consecutive content-bearing chunks (count = chunks - 1).
  std::vector<double> itl_s;
  int64_t content_chunks = 0;
  // Token counts: from the server's usage object when it sent one; otherwise
  // the workload's estimate (prompt) and the number of content chunks (output).
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  bool prompt_tokens_from_usage = false;
  bool output_tokens_from_usage = false;
  int64_t max_tokens = 0;  // what was asked for
  std::string finish_reason;
};

}  // namespace brisk::loadgen
