#include "server/openai_responses.h"

#include <fmt/format.h>

#include "server/openai_fields.h"
#include "server/request_preparation.h"

namespace brisk::api {
namespace {

using namespace fields;

// Responses fields copied into the chat body under the same name (the chat
// parser checks them).
constexpr const char* kSameName[] = {
    "temperature",
    "top_p",
    "metadata",
    "user",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "parallel_tool_calls",
    // Brisk's extensions.
    "priority",
    "timeout",
    "top_k",
    "min_p",
    "repetition_penalty",
    "seed",
    "ignore_eos",
    "stop",
};

bool Is(const char* const* b, const char* const* e, std::string_view k) {
  for (; b != e; ++b)
    if (k == *b) return true;
  return false;
}

// A message item's content: a string, or text parts -> chat text parts.
Problem ReadContent(const Json& v, const std::string& p, Json* out) {
  if (v.is_string()) {
    *out = v;
    return std::nullopt;
  }
  if (!v.is_array()) return TypeError(p, "a string or an array of content parts", v);
  *out = Json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string pi = fmt::format("{}[{}]", p, i);
    const Json& part = v[i];
    if (!part.is_object()) return TypeError(pi, "an object", part);
    const Json* type = Get(part, "type");
    if (!type) return Missing(pi + ".type");
    if (!type->is_string()) return TypeError(pi + ".type", "a string", *type);
    const std::string& t = type->get_ref<const std::string&>();
    if (t != "input_text" && t != "output_text" && t != "text")
      return Unsupported(pi + ".type", fmt::format("Content parts of type '{}' are not supported; "
                                                   "only input_text and output_text",
                                                   Snippet(t)));
    const Json* text = Get(part, "text");
    if (!text) return Missing(pi + ".text");
    if (!text->is_string()) return TypeError(pi + ".text", "a string", *text);
    out->push_back({{"type", "text"}, {"text", *text}});
  }
  return std::nullopt;
}

Problem ReadStringField(const Json& item, const char* key, const std::string& p, std::string* out) {
  const Json* v = Get(item, key);
  if (!v) return Missing(p + "." + key);
  return ReadString(*v, p + "." + key, out);
}

// One input item appended to `msgs` (chat messages).
Problem ReadInputItem(const Json& item, const std::string& p, Json* msgs) {
  if (!item.is_object()) return TypeError(p, "an object", item);
  std::string type = "message";
  if (const Json* t = Get(item, "type")) BRISK_API_TRY(ReadString(*t, p + ".type", &type));
  if (type == "message") {
    std::string role;
    BRISK_API_TRY(ReadStringField(item, "role", p, &role));
    if (role != "user" && role != "system" && role != "developer" && role != "assistant")
      return Bad(p + ".role", "invalid_value",
                 fmt::format("'{}.role' must be one of user, system, developer, assistant, got "
                             "'{}'",
                             p, Snippet(role)));
    const Json* content = Get(item, "content");
    if (!content) return Missing(p + ".content");
    Json c;
    BRISK_API_TRY(ReadContent(*content, p + ".content", &c));
    msgs->push_back({{"role", role}, {"content", std::move(c)}});
    return std::nullopt;
  }
  if (type == "function_call") {
    std::string call_id, name, arguments;
    BRISK_API_TRY(ReadStringField(item, "call_id", p, &call_id));
    BRISK_API_TRY(ReadStringField(item, "name", p, &name));
    BRISK_API_TRY(ReadStringField(item, "arguments", p, &arguments));
    Json call = {{"id", call_id},
                 {"type", "function"},
                 {"function", {{"name", name}, {"arguments", arguments}}}};
    // Calls in a row are one assistant turn.
    if (!msgs->empty() && msgs->back().contains("tool_calls")) {
      msgs->back()["tool_calls"].push_back(std::move(call));
    } else {
      msgs->push_back({{"role", "assistant"},
                       {"content", nullptr},
                       {"tool_calls", Json::array({std::move(call)})}});
    }
    return std::nullopt;
  }
  if (type == "function_call_output") {
    std::string call_id;
    BRISK_API_TRY(ReadStringField(item, "call_id", p, &call_id));
    const Json* output = Get(item, "output");
    if (!output) return Missing(p + ".output");
    Json c;
    BRISK_API_TRY(ReadContent(*output, p + ".output", &c));
    msgs->push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", std::move(c)}});
    return std::nullopt;
  }
  // A reasoning item of an earlier response (clients such as openai-agents send
  // them back): chat templates drop past turns' reasoning, so it adds nothing.
  if (type == "reasoning") return std::nullopt;
  return Unsupported(p + ".type",
                     fmt::format("Input items of type '{}' are not supported; only message, "
                                 "reasoning, function_call and function_call_output",
                                 Snippet(type)));
}

Problem ReadInput(const Json& v, Json* msgs) {
  if (v.is_string()) {
    msgs->push_back({{"role", "user"}, {"content", v}});
    return std::nullopt;
  }
  if (!v.is_array()) return TypeError("input", "a string or an array of input items", v);
  for (size_t i = 0; i < v.size(); ++i)
    BRISK_API_TRY(ReadInputItem(v[i], fmt::format("input[{}]", i), msgs));
  return std::nullopt;
}

// `input` (already read by ReadInput, so well formed) as Responses items.
Json InputItems(const Json& v) {
  auto items = http::InputItemsOf(v);
  return std::holds_alternative<Json>(items) ? std::get<Json>(std::move(items)) : Json::array();
}

// Responses function tools are flat ({"type", "name", "parameters", ...});
// chat nests them under "function".
Problem ReadTools(const Json& v, Json* chat_tools) {
  if (!v.is_array()) return TypeError("tools", "an array", v);
  *chat_tools = Json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("tools[{}]", i);
    const Json& t = v[i];
    if (!t.is_object()) return TypeError(p, "an object", t);
    std::string type;
    BRISK_API_TRY(ReadStringField(t, "type", p, &type));
    if (type != "function")
      return Unsupported(p + ".type", fmt::format("Built-in tools ('{}') are not supported; only "
                                                  "function tools",
                                                  Snippet(type)));
    Json fn = Json::object();
    for (const auto& [k, val] : t.items()) {
      if (k == "type") continue;
      if (k != "name" && k != "description" && k != "parameters" && k != "strict")
        return Unknown(p + "." + k);
      if (!val.is_null()) fn[k] = val;
    }
    chat_tools->push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return std::nullopt;
}

Problem ReadToolChoice(const Json& v, Json* out) {
  if (v.is_string()) {
    *out = v;
    return std::nullopt;
  }
  if (!v.is_object()) return TypeError("tool_choice", "a string or an object", v);
  std::string type, name;
  BRISK_API_TRY(ReadStringField(v, "type", "tool_choice", &type));
  if (type != "function")
    return Unsupported("tool_choice.type",
                       fmt::format("tool_choice of type '{}' is not supported; use none, auto, "
                                   "required or {{\"type\": \"function\", \"name\": ...}}",
                                   Snippet(type)));
  BRISK_API_TRY(ReadStringField(v, "name", "tool_choice", &name));
  *out = {{"type", "function"}, {"function", {{"name", name}}}};
  return std::nullopt;
}

// text: {"format": {"type": "text" | "json_object" | "json_schema", ...}}.
Problem ReadText(const Json& v, Json* response_format) {
  if (!v.is_object()) return TypeError("text", "an object", v);
  for (const auto& [k, val] : v.items()) {
    if (k == "format" || val.is_null()) continue;
    if (k == "verbosity") continue;  // a hint; "medium" is what the model does
    return Unknown("text." + k);
  }
  const Json* f = Get(v, "format");
  if (!f) return std::nullopt;
  if (!f->is_object()) return TypeError("text.format", "an object", *f);
  std::string type;
  BRISK_API_TRY(ReadStringField(*f, "type", "text.format", &type));
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    *response_format = {{"type", "json_object"}};
    return std::nullopt;
  }
  if (type != "json_schema")
    return Bad("text.format.type", "invalid_value",
               fmt::format("'text.format.type' must be one of text, json_object, json_schema, "
                           "got '{}'",
                           Snippet(type)));
  Json js = Json::object();
  for (const auto& [k, val] : f->items()) {
    if (k == "type") continue;
    if (k != "name" && k != "schema" && k != "strict" && k != "description")
      return Unknown("text.format." + k);
    if (!val.is_null()) js[k] = val;
  }
  *response_format = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  return std::nullopt;
}

// Fields accepted with their "off" value only.
Problem ReadOffOnly(const Json& body, std::string_view k, const Json& v) {
  const bool off = (k == "background" && v == false) || (k == "truncation" && v == "disabled") ||
                   (k == "include" && v.is_array() && v.empty()) ||
                   (k == "reasoning" && v.is_object() && v.empty()) ||
                   (k == "top_logprobs" && v == 0);
  (void)body;
  if (off) return std::nullopt;
  return Unsupported(std::string(k), fmt::format("'{}' is not supported by this server", k));
}

Problem Translate(const Json& body, const std::string& default_model, ResponsesRequest* r,
                  std::vector<std::string>* ignored) {
  const Json* model = Get(body, "model");
  if (!model && default_model.empty()) return Missing("model");
  if (model) {
    BRISK_API_TRY(ReadString(*model, "model", &r->model));
  } else {
    r->model = default_model;
  }
  r->chat["model"] = r->model;
  constexpr const char* kOffOnly[] = {"background", "truncation", "include", "reasoning",
                                      "top_logprobs"};
  bool has_input = false;
  for (const auto& [k, v] : body.items()) {
    if (k == "model") continue;
    if (v.is_null()) continue;  // null = not given
    if (k == "input") {
      BRISK_API_TRY(ReadInput(v, &r->input_messages));
      r->input_items = InputItems(v);
      has_input = true;
    } else if (k == "instructions") {
      std::string s;
      BRISK_API_TRY(ReadString(v, "instructions", &s));
      r->instructions = v;
    } else if (k == "max_output_tokens") {
      r->chat["max_tokens"] = v;
      r->max_output_tokens = v;
    } else if (k == "stream") {
      BRISK_API_TRY(ReadBool(v, "stream", &r->stream));
    } else if (k == "store") {
      BRISK_API_TRY(ReadBool(v, "store", &r->store));
    } else if (k == "previous_response_id") {
      BRISK_API_TRY(ReadString(v, "previous_response_id", &r->previous_response_id));
    } else if (k == "tools") {
      Json tools;
      BRISK_API_TRY(ReadTools(v, &tools));
      if (!tools.empty()) r->chat["tools"] = std::move(tools);
      r->tools = v;
    } else if (k == "tool_choice") {
      Json tc;
      BRISK_API_TRY(ReadToolChoice(v, &tc));
      r->chat["tool_choice"] = std::move(tc);
      r->tool_choice = v;
    } else if (k == "text") {
      Json rf;
      BRISK_API_TRY(ReadText(v, &rf));
      if (!rf.is_null()) r->chat["response_format"] = std::move(rf);
      r->text = v;
      if (!r->text.contains("format")) r->text["format"] = {{"type", "text"}};
    } else if (k == "stream_options" || k == "max_tool_calls") {
      // stream_options.include_obfuscation: there is nothing to obfuscate;
      // max_tool_calls: at most one turn of calls is made anyway.
    } else if (Is(std::begin(kOffOnly), std::end(kOffOnly), k)) {
      BRISK_API_TRY(ReadOffOnly(body, k, v));
    } else if (Is(std::begin(kSameName), std::end(kSameName), k)) {
      r->chat[k] = v;
      if (k == "temperature") r->temperature = v;
      if (k == "top_p") r->top_p = v;
      if (k == "metadata") r->metadata = v;
      if (k == "user") r->user = v;
      if (k == "parallel_tool_calls") r->parallel_tool_calls = v;
    } else {
      BRISK_API_TRY(UnknownKey(k, ignored));
    }
  }
  if (!has_input && r->previous_response_id.empty()) return Missing("input");
  return std::nullopt;
}

}  // namespace

std::variant<ResponsesRequest, ApiError> ParseResponsesRequest(std::string_view body,
                                                               const ParseOptions& options) {
  Json doc;
  if (Problem p = ParseBodyObject(body, &doc)) return *p;
  ResponsesRequest r;
  if (Problem p = Translate(doc, options.default_model, &r,
                            options.ignore_unknown_fields ? &r.ignored_fields : nullptr))
    return *p;
  return r;
}

std::string ChatBody(const ResponsesRequest& r, const Json& history) {
  Json body = r.chat;
  Json msgs = Json::array();
  if (r.instructions.is_string()) msgs.push_back({{"role", "system"}, {"content", r.instructions}});
  for (const Json& m : history) msgs.push_back(m);
  for (const Json& m : r.input_messages) msgs.push_back(m);
  body["messages"] = std::move(msgs);
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

ApiError ResponsesError(ApiError e) {
  // Longest first: a rename must not apply inside another.
  static constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
      {"response_format.json_schema", "text.format"},
      {"response_format", "text.format"},
      {"max_completion_tokens", "max_output_tokens"},
      {"max_tokens", "max_output_tokens"},
      {"tool_choice.function", "tool_choice"},
      {".function.", "."},
      {"messages", "input"},
  };
  const auto rename = [](std::string s) {
    for (const auto& [from, to] : kRenames) {
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    }
    return s;
  };
  e.param = rename(std::move(e.param));
  e.message = rename(std::move(e.message));
  return e;
}

std::string NewResponseId() { return http::RandomItemId("resp_"); }
std::string NewMessageItemId() { return http::RandomItemId("msg_"); }
std::string NewFunctionCallItemId() { return http::RandomItemId("fc_"); }
std::string NewReasoningItemId() { return http::RandomItemId("rs_"); }

Json ReasoningItem(const std::string& id, std::string_view status, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"status", status},
          {"summary", Json::array()},
          {"content", Json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

Json OutputTextPart(const std::string& text) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", Json::array()},
          {"logprobs", Json::array()}};
}

Json MessageItem(const std::string& id, std::string_view status, const std::string& text,
                 bool with_part) {
  Json content = Json::array();
  if (with_part) content.push_back(OutputTextPart(text));
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", std::move(content)}};
}

Json FunctionCallItem(const std::string& id, const std::string& call_id, const std::string& name,
                      const std::string& arguments, std::string_view status) {
  return {{"type", "function_call"}, {"id", id},        {"call_id", call_id}, {"name", name},
          {"arguments", arguments},  {"status", status}};
}

Json ResponsesUsage(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

Json ResponseObject(const ResponsesRequest& r, const std::string& id, int64_t created_at,
                    const std::string& model, std::string_view status, Json output,
                    const Usage* usage) {
  Json o;
  o["id"] = id;
  o["object"] = "response";
  o["created_at"] = created_at;
  o["status"] = status;
  o["background"] = false;
  o["error"] = nullptr;
  o["incomplete_details"] = nullptr;
  if (status == "incomplete") o["incomplete_details"] = {{"reason", "max_output_tokens"}};
  o["instructions"] = r.instructions;
  o["max_output_tokens"] = r.max_output_tokens;
  o["model"] = model;
  o["output"] = std::move(output);
  o["parallel_tool_calls"] = r.parallel_tool_calls;
  o["previous_response_id"] =
      r.previous_response_id.empty() ? Json(nullptr) : Json(r.previous_response_id);
  o["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  o["store"] = r.store;
  o["temperature"] = r.temperature;
  o["text"] = r.text;
  o["tool_choice"] = r.tool_choice;
  o["tools"] = r.tools;
  o["top_p"] = r.top_p;
  o["truncation"] = "disabled";
  o["usage"] = usage ? ResponsesUsage(*usage) : Json(nullptr);
  o["user"] = r.user;
  o["metadata"] = r.metadata;
  return o;
}

Json OutputToMessages(const Json& output) {
  Json msgs = Json::array();
  for (const Json& item : output) {
    const std::string type = item.value("type", "");
    if (type == "message") {
      std::string text;
      for (const Json& part : item.value("content", Json::array()))
        if (part.is_object()) text += part.value("text", "");
      msgs.push_back({{"role", "assistant"}, {"content", std::move(text)}});
    } else if (type == "function_call") {
      Json call = {
          {"id", item.value("call_id", "")},
          {"type", "function"},
          {"function",
           {{"name", item.value("name", "")}, {"arguments", item.value("arguments", "")}}}};
      if (!msgs.empty() && msgs.back().contains("tool_calls"))
        msgs.back()["tool_calls"].push_back(std::move(call));
      else
        msgs.push_back({{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", Json::array({std::move(call)})}});
    }
  }
  return msgs;
}

std::string ResponsesEvent(std::string_view type, Json fields, int64_t* seq) {
  Json j;
  j["type"] = type;
  for (auto& [k, v] : fields.items()) j[k] = std::move(v);
  j["sequence_number"] = (*seq)++;
  return fmt::format("event: {}\ndata: {}\n\n", type,
                     j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace brisk::api
