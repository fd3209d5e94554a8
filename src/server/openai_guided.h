// vLLM's structured-output extensions, parsed as openai_request.h
// describes, on /v1/chat/completions and /v1/completions:
//
//   "structured_outputs": {"regex": str} | {"choice": [str, ...]} |
//                         {"grammar": str (GBNF)} | {"json": schema} |
//                         {"json_object": true}
//
// and the older top-level "guided_regex", "guided_choice",
// "guided_grammar", "guided_json". Exactly one constraint per request:
// two of these, one of these with "response_format", or one with tools
// whose tool_choice is not "none" is a 400 naming both. "json" /
// "guided_json" (an object, or its JSON text as a string) and
// "json_object" become the request's response_format (json_schema with
// strict false, json_object); the others fill ApiRequest::guided, which
// the server compiles (structured_output.h). Unknown keys inside
// structured_outputs are unknown parameters. Internal to server/.
#pragma once

#include <string>
#include <vector>

#include "server/openai_fields.h"
#include "server/openai_request.h"

namespace brisk::api::fields {

// Most strings a choice list may hold.
inline constexpr size_t kMaxGuidedChoices = 4096;

// Call after ParseResponseFormat and (chat) ParseTools.
Problem ParseGuided(const Json& body, ApiRequest* req, std::vector<std::string>* ignored);

}  // namespace brisk::api::fields
