// response_format -> the engine's constraint: compile (through the
// server's cache), the strict-mode check, and the
// x-brisk-unenforced-keywords header of non-strict requests.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grammar/constraint.h"
#include "server/openai_request.h"

namespace brisk {

// Non-strict json_schema requests whose schema has keywords the grammar
// does not enforce carry them here: "keyword@pointer" joined by ",".
inline constexpr std::string_view kUnenforcedKeywordsHeader = "x-brisk-unenforced-keywords";
// The header value is cut (at an entry boundary, then ",...") to this many bytes.
inline constexpr size_t kMaxUnenforcedHeaderBytes = 1024;

struct PreparedConstraint {
  std::shared_ptr<const CompiledConstraint> constraint;
  bool compiled_now = false;  // a cache miss: compile_s is this request's
  std::vector<UnenforcedKeyword> unenforced;
};

// The compiled constraint, or the 400 to send: a schema that is not a
// schema (invalid_value), or strict: true with keywords it cannot enforce
// (code "unsupported", the message lists keyword@pointer). `cache` may be
// null (compiles every time). `separator` (json_schema only): one or more
// values separated by it, the text ending after a value or after
// `separator_end` bytes of it (ConstraintSpec::separator, separator_end).
std::variant<PreparedConstraint, api::ApiError> PrepareConstraint(ConstraintCache* cache,
                                                                  const api::ResponseFormat& rf,
                                                                  std::string_view separator = {},
                                                                  uint32_t separator_end = 0);

// vLLM's structured_outputs regex / choice / grammar: the compiled
// constraint, or a 400 invalid_value naming the field and what is wrong
// with it (a syntax error with its line:column, an unsupported regex
// feature). `cache` may be null.
std::variant<PreparedConstraint, api::ApiError> PrepareGuidedConstraint(ConstraintCache* cache,
                                                                        const api::GuidedSpec& g);

// "pattern@/properties/zip,format@/properties/d": bytes outside printable
// ASCII, '%' and ',' inside an entry are %XX-escaped; cut to
// kMaxUnenforcedHeaderBytes.
std::string UnenforcedKeywordsHeaderValue(const std::vector<UnenforcedKeyword>& unenforced);

}  // namespace brisk
