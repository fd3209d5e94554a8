// A golden set: JSONL cases, each a request (prompt or messages, sampling)
// and one check of its answer, for `brisk eval golden` (the behaviour check of
// the gate every serving change passes).
//
// One case per line:
//   {"id": "capital-fr",
//    "prompt": "The capital of France is"        (or "messages": [...]),
//    "max_tokens": 8, "temperature": 0, ...      (any request field; defaults
//                                                 temperature 0, max_tokens 64),
//    "check": {"contains_any": ["Paris"]}}
// Checks (exactly one key; "ignore_case": true may sit beside it):
//   {"exact": "text"}         the answer, trimmed, equals it
//   {"contains": ["a", ...]}  holds every string
//   {"contains_any": [...]}   holds at least one
//   {"regex": "..."}          a PCRE2 search finds a match
//   {"json": true}            parses as JSON (an object or array)
//   {"json_schema": {...}}    parses and validates (grammar/answer_check.h)
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/answer_check.h"
#include "util/status.h"

namespace brisk::eval {

struct GoldenCheck {
  enum class Kind { kExact, kContains, kContainsAny, kRegex, kJson, kJsonSchema };
  Kind kind = Kind::kContains;
  std::vector<std::string> values;  // exact: one; contains(_any): the strings; regex: one
  // kJsonSchema: the schema compiled once, when the set is read.
  std::shared_ptr<const AnswerCheck> schema;
  bool ignore_case = false;
};

struct GoldenCase {
  std::string id;
  int line = 0;
  bool chat = true;     // messages (chat completions) or prompt (completions)
  nlohmann::json body;  // the request without "model"
  GoldenCheck check;
};

// Parses a golden set; errors are InvalidArgument "file:line: ...". Ids must
// be unique (a line number is the id of a case without one).
Expected<std::vector<GoldenCase>> ParseGoldenSet(std::string_view text, std::string_view filename);

// "" when `answer` passes the check, else why not (for the report).
std::string CheckAnswer(const GoldenCheck& check, std::string_view answer);

}  // namespace brisk::eval
