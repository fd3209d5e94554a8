// W3C Trace Context (https://www.w3.org/TR/trace-context/), version 00:
//
//   traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
//                ver trace-id (32 hex)               parent-id (16)   flags
//
// Parsed strictly: lower-case hex only, exact lengths and dashes, version
// 00 with nothing after the flags, neither id all zeros. A header that fails
// any check is ignored and the request starts a new trace (the spec's rule).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace brisk {

struct TraceContext {
  std::string trace_id;        // 32 lower-case hex digits
  std::string span_id;         // 16: this process's span for the request
  std::string parent_span_id;  // 16: the caller's span; "" when this started the trace
  uint8_t flags = 0x01;        // trace-flags; bit 0 = sampled

  // The header value naming this span: "00-<trace_id>-<span_id>-<flags>".
  std::string Traceparent() const;
  // A child of this span (same trace, a new span id, this span as parent):
  // what a process forwards to the next hop.
  TraceContext Child() const;
};

// The caller's traceparent, or nullopt if it is not a valid version-00
// header.
struct ParsedTraceparent {
  std::string trace_id;
  std::string parent_id;
  uint8_t flags = 0;
};
std::optional<ParsedTraceparent> ParseTraceparent(std::string_view value);

// This process's context for a request: a new span in the caller's trace
// when `traceparent` is valid, else a new sampled trace.
TraceContext StartTrace(std::string_view traceparent);

// Random lower-case hex ids (not all zeros).
std::string NewTraceId();
std::string NewSpanId();

}  // namespace brisk
