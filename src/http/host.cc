#include "http/host.h"

#include <algorithm>

namespace brisk::http {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool ValidPort(std::string_view p) {
  return !p.empty() && p.size() <= 5 && std::all_of(p.begin(), p.end(), IsDigit);
}

// RFC 3986 reg-name (unreserved / pct-encoded / sub-delims) and IPv4.
bool IsRegNameChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c)) return true;
  return std::string_view("-._~%!$&'()*+,;=").find(c) != std::string_view::npos;
}

bool IsIpv6Char(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::optional<std::string> HostName(std::string_view host) {
  while (!host.empty() && (host.front() == ' ' || host.front() == '\t')) host.remove_prefix(1);
  while (!host.empty() && (host.back() == ' ' || host.back() == '\t')) host.remove_suffix(1);
  if (host.empty()) return std::nullopt;
  std::string_view name;
  if (host.front() == '[') {  // IP-literal, optionally with a port
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = host.substr(1, close - 1);
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !ValidPort(rest.substr(1)))) {
      return std::nullopt;
    }
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsIpv6Char)) return std::nullopt;
    return Lower(name);
  }
  const size_t colons = static_cast<size_t>(std::count(host.begin(), host.end(), ':'));
  if (colons > 1) {  // a bare IPv6 literal (an allow-list entry; never valid in Host)
    if (!std::all_of(host.begin(), host.end(), IsIpv6Char)) return std::nullopt;
    return Lower(host);
  }
  name = host;
  if (colons == 1) {
    const size_t colon = host.find(':');
    if (!ValidPort(host.substr(colon + 1))) return std::nullopt;
    name = host.substr(0, colon);
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || !std::all_of(name.begin(), name.end(), IsRegNameChar)) {
    return std::nullopt;
  }
  return Lower(name);
}

bool HostAllowed(std::string_view host_header, const std::vector<std::string>& allowed) {
  auto name = HostName(host_header);
  if (!name) return false;
  if (allowed.empty()) return true;
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
    auto entry = HostName(a);
    return entry && *entry == *name;
  });
}

}  // namespace brisk::http
