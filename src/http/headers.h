// A header section: names as sent, in order (server requests and responses,
// upstream requests and answers alike).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace brisk::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

}  // namespace brisk::http
