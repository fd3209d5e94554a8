#include "http/caller_identity.h"

#include <algorithm>

#include "http/headers.h"
#include "util/constant_time.h"

namespace brisk {
namespace {

using http::AsciiLower;
using http::TrimOws;

}  // namespace

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  authorization = TrimOws(authorization);
  if (authorization.size() <= kScheme.size() + 1 || authorization[kScheme.size()] != ' ' ||
      !std::equal(kScheme.begin(), kScheme.end(), authorization.begin(),
                  [](char s, char c) { return s == AsciiLower(c); }))
    return std::nullopt;
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  // After the spaces comes the token itself (1*SP token68): not more whitespace.
  if (token.empty() || token.front() == '\t') return std::nullopt;
  return token;
}

const ApiKeyConfig* FindApiKey(std::span<const ApiKeyConfig> keys, std::string_view token) {
  const ApiKeyConfig* found = nullptr;
  for (const ApiKeyConfig& k : keys)  // no early exit
    if (ConstantTimeEquals(token, k.key) && !found) found = &k;
  return found;
}

const ApiKeyConfig* ResolveCaller(std::span<const ApiKeyConfig> keys,
                                  std::string_view authorization) {
  const auto token = BearerToken(authorization);
  return token ? FindApiKey(keys, *token) : nullptr;
}

http::OpenAiError UnauthorizedError(std::string_view authorization) {
  return http::MakeOpenAiError(401, "invalid_request_error",
                               TrimOws(authorization).empty()
                                   ? "Missing API key: send Authorization: Bearer <key>"
                                   : "Incorrect API key provided",
                               "invalid_api_key");
}

}  // namespace brisk
