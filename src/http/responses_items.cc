#include "http/responses_items.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <vector>

namespace brisk::http {

using OJson = nlohmann::ordered_json;

namespace {

// At most `max` bytes (and "...") of a client's value, for an error message.
std::string Clip(std::string_view s, size_t max = 64) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;  // on a code point boundary
  while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}...", s.substr(0, cut));
}

const OJson* Field(const OJson& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

OpenAiError BadItems(std::string param, std::string message) {
  return MakeOpenAiError(400, "invalid_request_error", std::move(message), "invalid_type",
                         std::move(param));
}

}  // namespace

std::string RandomItemId(std::string_view prefix) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  std::string id(prefix);
  for (int i = 0; i < 32; ++i) id.push_back(kChars[rng() % (sizeof(kChars) - 1)]);
  return id;
}

std::variant<OJson, OpenAiError> InputItemsOf(const OJson& input) {
  OJson items = OJson::array();
  if (input.is_string()) {
    items.push_back({{"type", "message"},
                     {"id", RandomItemId("msg_")},
                     {"status", "completed"},
                     {"role", "user"},
                     {"content", OJson::array({{{"type", "input_text"}, {"text", input}}})}});
    return items;
  }
  if (!input.is_array()) {
    return BadItems("input", "'input' must be a string or an array of input items");
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const OJson& in = input[i];
    const std::string param = fmt::format("input[{}]", i);
    if (!in.is_object()) return BadItems(param, fmt::format("'{}' must be an object", param));
    const OJson* t = Field(in, "type");
    if (t != nullptr && !t->is_string()) {
      return BadItems(param + ".type", fmt::format("'{}.type' must be a string", param));
    }
    const std::string type = t != nullptr ? t->get<std::string>() : "message";
    OJson item = {{"type", type}};
    const OJson* id = Field(in, "id");
    if (id != nullptr && id->is_string()) {
      item["id"] = *id;
    } else {
      item["id"] = RandomItemId(type == "message"         ? "msg_"
                                : type == "function_call" ? "fc_"
                                : type == "reasoning"     ? "rs_"
                                                          : "fco_");
    }
    item["status"] = "completed";
    for (const char* k : {"role", "call_id", "name", "arguments", "output", "summary"}) {
      if (const OJson* f = Field(in, k)) item[k] = *f;
    }
    if (const OJson* c = Field(in, "content")) {
      const OJson* role = Field(in, "role");
      const bool assistant = role != nullptr && role->is_string() && *role == "assistant";
      item["content"] =
          c->is_string()
              ? OJson::array({{{"type", assistant ? "output_text" : "input_text"}, {"text", *c}}})
              : *c;
    }
    items.push_back(std::move(item));
  }
  return items;
}

OJson OutputAsInput(const OJson& output) {
  OJson items = OJson::array();
  if (!output.is_array()) return items;
  for (const OJson& item : output) {
    if (!item.is_object()) continue;
    const OJson* type = Field(item, "type");
    if (type == nullptr || !type->is_string()) continue;
    if (*type == "message" || *type == "function_call" || *type == "reasoning") {
      items.push_back(item);
    }
  }
  return items;
}

std::variant<InputItemsQuery, OpenAiError> ParseInputItemsQuery(std::string_view query) {
  InputItemsQuery q;
  auto bad = [](std::string param, std::string message) {
    return MakeOpenAiError(400, "invalid_request_error", std::move(message), "invalid_value",
                           std::move(param));
  };
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (key == "limit") {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 100)
        return bad("limit",
                   fmt::format("'limit' must be an integer from 1 to 100, got '{}'", Clip(value)));
      q.limit = n;
    } else if (key == "order") {
      if (value != "asc" && value != "desc")
        return bad("order", fmt::format("'order' must be 'asc' or 'desc', got '{}'", Clip(value)));
      q.ascending = value == "asc";
    } else if (key == "after") {
      q.after = std::string(value);
    }
  }
  return q;
}

std::variant<OJson, OpenAiError> InputItemsPage(const OJson& items, const InputItemsQuery& q) {
  std::vector<const OJson*> order;
  for (const OJson& item : items) order.push_back(&item);
  if (!q.ascending) std::reverse(order.begin(), order.end());
  size_t start = 0;
  if (!q.after.empty()) {
    auto it = std::find_if(order.begin(), order.end(), [&](const OJson* item) {
      return item->is_object() && item->value("id", "") == q.after;
    });
    if (it == order.end())
      return MakeOpenAiError(404, "invalid_request_error",
                             fmt::format("No input item with id '{}'.", Clip(q.after, 128)),
                             "not_found", "after");
    start = static_cast<size_t>(it - order.begin()) + 1;
  }
  OJson data = OJson::array();
  for (size_t i = start; i < order.size() && data.size() < static_cast<size_t>(q.limit); ++i)
    data.push_back(*order[i]);
  const bool more = start + data.size() < order.size();
  OJson first = data.empty() ? OJson(nullptr) : data.front().value("id", OJson(nullptr));
  OJson last = data.empty() ? OJson(nullptr) : data.back().value("id", OJson(nullptr));
  return OJson{{"object", "list"},
               {"data", std::move(data)},
               {"first_id", std::move(first)},
               {"last_id", std::move(last)},
               {"has_more", more}};
}

OpenAiError ResponseNotFound(const std::string& id, std::string param) {
  return MakeOpenAiError(404, "invalid_request_error",
                         fmt::format("Response with id '{}' not found.", Clip(id, 128)),
                         "not_found", std::move(param));
}

}  // namespace brisk::http
