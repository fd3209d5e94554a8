// A canned OpenAI-compatible upstream: answers every chat/completions request
// at once with a fixed text of max_tokens pieces (streamed or not, with
// usage), /v1/models, /health and /load. It does no inference, so a benchmark
// of a gateway in front of it measures the gateway's own overhead and
// nothing else. Not for serving anything.
#pragma once

#include <memory>

#include "http/server.h"
#include "util/status.h"

namespace brisk::gateway {

struct CannedUpstreamOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  int io_threads = 1;
  std::string model = "canned";
};

Expected<std::unique_ptr<http::Server>> StartCannedUpstream(const CannedUpstreamOptions& options);

}  // namespace brisk::gateway
