// The Responses API's items as every server that keeps responses sees them
// (`brisk serve`'s store and the gateway's shared one): a request's `input`
// as items with ids, a response's output as the input of a follow-up, the
// paging of GET /v1/responses/{id}/input_items, and its 404. Pure functions
// over JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "http/openai_error.h"

namespace brisk::http {

// `prefix` followed by 32 random [a-z0-9] ("resp_", "msg_", "fc_", "rs_").
// Thread-safe.
std::string RandomItemId(std::string_view prefix);

// `input` (a string, or an array of item objects) as Responses items: the
// known fields of each, content as parts, an id (the client's, or a new one)
// and a status. A string is one user message. Another shape is a 400 naming
// `input` (or `input[i]`).
std::variant<nlohmann::ordered_json, OpenAiError> InputItemsOf(const nlohmann::ordered_json& input);

// A response's `output` as items a follow-up's `input` may carry: message and
// function_call items as they are, reasoning items too (a server that cannot
// take them back drops them); other entries are left out.
nlohmann::ordered_json OutputAsInput(const nlohmann::ordered_json& output);

// GET /v1/responses/{id}/input_items?limit=&order=&after=: limit 1..100
// (default 20), order asc | desc (default desc, newest first), after an item
// id (the page starts past it); other parameters are ignored.
struct InputItemsQuery {
  int64_t limit = 20;
  bool ascending = false;
  std::string after;
};
std::variant<InputItemsQuery, OpenAiError> ParseInputItemsQuery(std::string_view query);
// {"object": "list", "data", "first_id", "last_id", "has_more"}; a 404-shaped
// error when `after` is not one of the items.
std::variant<nlohmann::ordered_json, OpenAiError> InputItemsPage(
    const nlohmann::ordered_json& items, const InputItemsQuery& q);

// 404 for an id that is not stored (or not the caller's), as OpenAI answers.
OpenAiError ResponseNotFound(const std::string& id, std::string param = "");

}  // namespace brisk::http
