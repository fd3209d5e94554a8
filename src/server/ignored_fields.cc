#include "server/ignored_fields.h"

#include <fmt/format.h>

namespace brisk {
namespace {

constexpr std::string_view kMetric = "brisk:ignored_request_fields_total";
constexpr std::string_view kHelp =
    "Unknown request keys skipped (server.unknown_request_fields: ignore), by name; names past "
    "the first 64 distinct ones count as other.";
constexpr size_t kMaxLabelNameBytes = 67;  // 64 and "..." (fields::Snippet)

bool PlainByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > kMaxLabelNameBytes) return false;
  for (char c : s)
    if (!PlainByte(c)) return false;
  return true;
}

}  // namespace

std::string IgnoredFieldsHeaderValue(std::span<const std::string> names) {
  std::string out;
  for (const std::string& name : names) {
    std::string enc;
    for (char c : name) {
      if (PlainByte(c))
        enc.push_back(c);
      else
        enc += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
    const size_t sep = out.empty() ? 0 : 1;
    // Room for ",..." must remain whenever a later name might not fit.
    if (out.size() + sep + enc.size() + 4 > kMaxIgnoredFieldsHeaderBytes) {
      out += out.empty() ? "..." : ",...";
      break;
    }
    if (sep) out.push_back(',');
    out += enc;
  }
  return out;
}

metrics::Counter* IgnoredFieldCounter::CounterFor(const std::string& name) {
  if (PlainName(name)) {
    if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
    if (by_name_.size() < kMaxIgnoredFieldSeries) {
      metrics::Counter* c = registry_.GetCounter(kMetric, kHelp, {{"field", name}});
      by_name_.emplace(name, c);
      return c;
    }
  }
  if (!other_) other_ = registry_.GetCounter(kMetric, kHelp, {{"field", "other"}});
  return other_;
}

void IgnoredFieldCounter::Count(std::span<const std::string> names) {
  if (names.empty()) return;
  std::lock_guard lock(mu_);
  for (const std::string& name : names) CounterFor(name)->Inc();
}

size_t IgnoredFieldCounter::named_series() const {
  std::lock_guard lock(mu_);
  return by_name_.size();
}

}  // namespace brisk
