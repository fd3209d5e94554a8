// Who is calling: the API key an Authorization header presents, and what the
// configuration says of it (tenant, cost feature, name). The one reader of
// Authorization for every server in the process: the header gate (before the
// body), `brisk serve`'s request preparation and `brisk gateway`'s tenant
// lookup all call ResolveCaller, so a header passes all of them or none.
//
// What is accepted is what RFC 9110 (11.4, 5.5) and RFC 6750 (2.1) allow:
//   credentials = auth-scheme 1*SP token68
// The scheme is case-insensitive ("Bearer", "bearer", "BEARER"); one or more
// spaces separate it from the token; whitespace around the whole field value
// (SP, HTAB) is not part of it. A missing scheme, another scheme, an empty
// token, or a tab between scheme and token is not a Bearer credential.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "http/openai_error.h"

namespace brisk {

// One configured API key (inference.yaml and gateway.yaml `keys:`).
struct ApiKeyConfig {
  std::string key;      // bearer token; from `key:` or the variable named by `key_env:`
  std::string tenant;   // required
  std::string feature;  // optional cost-attribution tag; "" = none
  std::string name;     // what logs, the cost ledger and budgets call the key; default: tenant
  // `role: admin`: the key reads every tenant's cost data on the gateway (/v1/cost,
  // /v1/budgets, /dashboard/data); a key of the default role, `user`, reads its own
  // tenant's only.
  bool admin = false;
  bool operator==(const ApiKeyConfig&) const = default;
};

// The token of Bearer credentials; nullopt for anything else (see above).
std::optional<std::string_view> BearerToken(std::string_view authorization);

// The configured key that `token` is, or null. Every key is compared, each in time
// independent of where it differs, so the answer's timing says nothing of the keys.
const ApiKeyConfig* FindApiKey(std::span<const ApiKeyConfig> keys, std::string_view token);

// The configured key an Authorization header value presents (BearerToken, then
// FindApiKey), or null.
const ApiKeyConfig* ResolveCaller(std::span<const ApiKeyConfig> keys,
                                  std::string_view authorization);

// The 401 for a header that presents no configured key (code invalid_api_key): "Missing
// API key: send Authorization: Bearer <key>" when there is no header, else "Incorrect API
// key provided".
http::OpenAiError UnauthorizedError(std::string_view authorization);

}  // namespace brisk
