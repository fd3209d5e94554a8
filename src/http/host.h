// Host header names: parsing and the allow-list match used against DNS rebinding
// (ServerOptions::allowed_hosts, header_gate.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::http {

// The host name of a Host header value (or an allow-list entry), lower-cased, without the
// port, without IPv6 brackets and without one trailing dot: "LocalHost:8000" -> "localhost",
// "[::1]:80" -> "::1", "::1" -> "::1" (a bare IPv6 literal, as an allow-list entry may be
// written). nullopt if it is not a well-formed host[:port]: empty, a bad port, an unclosed
// bracket, characters outside RFC 3986 reg-name / IP-literal.
std::optional<std::string> HostName(std::string_view host);

// True if `host_header` names one of `allowed` (both through HostName); true for any
// well-formed Host when `allowed` is empty.
bool HostAllowed(std::string_view host_header, const std::vector<std::string>& allowed);

}  // namespace brisk::http
