// The base URL of an OpenAI-compatible server, as clients spell it.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace brisk::http {

// http://host[:port][/base]. https is not supported (Brisk talks to
// servers on its own network); the base path is prepended to /v1/....
struct ServerUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // "" or "/prefix" (no trailing slash)
  std::string ToString() const;
};
Expected<ServerUrl> ParseUrl(std::string_view url);

}  // namespace brisk::http
