// Small helpers the brisk subcommands share: the error exit and reading a
// JSON file named on the command line.
#pragma once

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "util/status.h"

namespace brisk {

// Prints "<command>: <message>" on stderr and returns `exit_code`, the
// command's documented code for this kind of failure.
inline int FailCommand(const char* command, const Status& s, int exit_code) {
  std::fprintf(stderr, "%s: %s\n", command, s.message().c_str());
  return exit_code;
}

// The whole file at `path` parsed as one JSON value.
inline Expected<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return InvalidArgument("'{}' is not JSON", path);
  return j;
}

}  // namespace brisk
