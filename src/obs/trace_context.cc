#include "obs/trace_context.h"

#include <fmt/format.h>

#include <random>

namespace brisk {
namespace {

bool IsLowerHex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool AllZeros(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

std::string RandomHex(size_t digits) {
  // One generator per thread, seeded from the OS: ids must not collide
  // across processes started together.
  thread_local std::mt19937_64 gen{std::random_device{}()};
  std::string out;
  while (out.size() < digits) out += fmt::format("{:016x}", gen());
  out.resize(digits);
  if (AllZeros(out)) out.back() = '1';
  return out;
}

}  // namespace

std::string TraceContext::Traceparent() const {
  return fmt::format("00-{}-{}-{:02x}", trace_id, span_id, flags);
}

TraceContext TraceContext::Child() const {
  TraceContext c = *this;
  c.parent_span_id = span_id;
  c.span_id = NewSpanId();
  return c;
}

std::optional<ParsedTraceparent> ParseTraceparent(std::string_view v) {
  // version "-" trace-id "-" parent-id "-" trace-flags: 2+1+32+1+16+1+2.
  if (v.size() != 55) return std::nullopt;
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  const std::string_view version = v.substr(0, 2), trace = v.substr(3, 32),
                         parent = v.substr(36, 16), flags = v.substr(53, 2);
  if (version != "00") return std::nullopt;
  if (!IsLowerHex(trace) || !IsLowerHex(parent) || !IsLowerHex(flags)) return std::nullopt;
  if (AllZeros(trace) || AllZeros(parent)) return std::nullopt;
  ParsedTraceparent p;
  p.trace_id = std::string(trace);
  p.parent_id = std::string(parent);
  p.flags = static_cast<uint8_t>(std::stoi(std::string(flags), nullptr, 16));
  return p;
}

TraceContext StartTrace(std::string_view traceparent) {
  TraceContext c;
  c.span_id = NewSpanId();
  if (auto p = ParseTraceparent(traceparent)) {
    c.trace_id = std::move(p->trace_id);
    c.parent_span_id = std::move(p->parent_id);
    c.flags = p->flags;
  } else {
    c.trace_id = NewTraceId();
  }
  return c;
}

std::string NewTraceId() { return RandomHex(32); }
std::string NewSpanId() { return RandomHex(16); }

}  // namespace brisk
