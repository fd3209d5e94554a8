#include "http/url.h"

#include <fmt/format.h>

namespace brisk::http {

std::string ServerUrl::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}{}", v6 ? "[" : "", host, v6 ? "]" : "", port, base_path);
}

Expected<ServerUrl> ParseUrl(std::string_view url) {
  constexpr std::string_view kHttp = "http://";
  if (url.starts_with("https://"))
    return Unimplemented("https is not supported ({}): use http:// to a local server", url);
  if (!url.starts_with(kHttp))
    return InvalidArgument("bad URL '{}': expected http://HOST[:PORT]", url);
  std::string_view rest = url.substr(kHttp.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  ServerUrl out;
  std::string_view port;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("bad IPv6 host in URL '{}'", url);
    out.host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument("bad URL '{}'", url);
      port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgument("bad URL '{}': no host", url);
  if (!port.empty()) {
    if (port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5)
      return InvalidArgument("bad port '{}' in URL '{}'", port, url);
    out.port = port;
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  // "http://host:8000/v1" is how OpenAI clients spell the base URL; the paths
  // used here already start with /v1.
  if (path.ends_with("/v1")) path.remove_suffix(3);
  out.base_path = path;
  return out;
}

}  // namespace brisk::http
