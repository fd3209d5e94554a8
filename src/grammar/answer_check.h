// Whether a cascade tier's answer is what the request's response_format asked
// for: a JSON object or array (json_object), or a value valid against the
// request's JSON Schema (json_schema), checked with valijson (Debian
// libvalijson-dev, draft 7), not with the engine's generation grammar, which
// accepts only one layout (compact, properties in schema order) of each
// value while any OpenAI-compatible upstream may answer in another.
//
// The schema comes from the client, so valijson only sees one it cannot be
// crashed by: it must pass the engine's own schema compiler (nesting within
// limits), have only local "#..." $refs and no "$id" (valijson resolves a
// relative ref such as "object" against the document itself and loops),
// carry no chain of $refs that only leads back to itself (valijson recurses
// on those until the stack runs out) and no "pattern"/"patternProperties" (valijson matches them
// with std::regex, whose recursion a long answer string can exhaust); those keywords are dropped
// from the copy it checks, so a value may pass with a string the pattern would refuse. A schema the
// checker cannot use leaves only the JSON check (skipped() says why). Answers nested deeper than
// kMaxAnswerDepth are refused without being walked.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace brisk {

class AnswerCheck {
 public:
  static constexpr int kMaxAnswerDepth = 128;

  // From the client's request body; inactive without a json_object or
  // json_schema response_format.
  static AnswerCheck FromRequest(const nlohmann::json& body);

  AnswerCheck();
  ~AnswerCheck();
  AnswerCheck(AnswerCheck&&) noexcept;
  AnswerCheck& operator=(AnswerCheck&&) noexcept;

  bool active() const { return active_; }
  bool has_schema() const { return schema_ != nullptr; }
  // Why the request's schema is not checked ("" when it is, or has none).
  const std::string& skipped() const { return skipped_; }

  // "" when `text` passes; otherwise "invalid_json", "too_deep" or
  // "schema_mismatch" (`detail`, optional, gets valijson's first error).
  std::string Check(std::string_view text, std::string* detail = nullptr) const;

 private:
  struct Compiled;
  bool active_ = false;
  std::unique_ptr<Compiled> schema_;
  std::string skipped_;
};

}  // namespace brisk
