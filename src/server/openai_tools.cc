#include "server/openai_tools.h"

#include <fmt/format.h>

#include <random>
#include <vector>

namespace brisk::api {
namespace {

using Json = nlohmann::ordered_json;

// A tool's parameters are a schema of their own: a local "$ref" ("#",
// "#/$defs/X") means a place inside them. Nested at `at` (a JSON pointer) in
// the tool-call schema, each such ref gets that prefix so it still resolves.
void RebaseRefs(Json* params, const std::string& at) {
  std::vector<Json*> stack = {params};
  while (!stack.empty()) {
    Json* node = stack.back();
    stack.pop_back();
    if (node->is_object()) {
      auto ref = node->find("$ref");
      if (ref != node->end() && ref->is_string()) {
        const std::string& r = ref->get_ref<const std::string&>();
        if (!r.empty() && r[0] == '#' && (r.size() == 1 || r[1] == '/'))
          *ref = "#" + at + r.substr(1);
      }
    }
    if (node->is_structured()) {
      for (Json& child : *node) stack.push_back(&child);
    }
  }
}

// The schema of one call ({"name": const, "arguments": parameters}), placed
// at `at` in the whole tool-call schema.
Json CallSchema(const ToolDef& t, const std::string& at) {
  Json params = Json::parse(t.parameters, nullptr, false);
  if (params.is_discarded()) params = Json::object();
  RebaseRefs(&params, at + "/properties/arguments");
  Json props = Json::object();
  props["name"] = Json{{"const", t.name}};
  props["arguments"] = std::move(params);
  Json s = Json::object();
  s["type"] = "object";
  s["properties"] = std::move(props);
  s["required"] = Json::array({"name", "arguments"});
  s["additionalProperties"] = false;
  return s;
}

// The schema of one call to any of `tools` (or to `named`), placed at `base`.
Json OneCallSchema(const std::vector<ToolDef>& tools, const std::string* named,
                   const std::string& base) {
  if (named) {
    for (const ToolDef& t : tools)
      if (t.name == *named) return CallSchema(t, base);
    return Json::object();
  }
  if (tools.size() == 1) return CallSchema(tools[0], base);
  Json any = Json::array();
  for (size_t i = 0; i < tools.size(); ++i)
    any.push_back(CallSchema(tools[i], fmt::format("{}/anyOf/{}", base, i)));
  return Json{{"anyOf", std::move(any)}};
}

// A non-empty array of calls, placed at `base`.
Json CallArraySchema(const std::vector<ToolDef>& tools, const std::string& base) {
  return Json{{"type", "array"},
              {"items", OneCallSchema(tools, nullptr, base + "/items")},
              {"minItems", 1}};
}

}  // namespace

std::string ToolCallSchema(const std::vector<ToolDef>& tools, const std::string* named,
                           ToolCallShape shape) {
  if (named || shape == ToolCallShape::kOne) return OneCallSchema(tools, named, "").dump();
  if (shape == ToolCallShape::kArray) return CallArraySchema(tools, "").dump();
  return Json{{"anyOf", Json::array({OneCallSchema(tools, nullptr, "/anyOf/0"),
                                     CallArraySchema(tools, "/anyOf/1")})}}
      .dump();
}

std::string NewToolCallId() {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id.push_back(kAlnum[rng() % (sizeof(kAlnum) - 1)]);
  return id;
}

AutoToolCalls AutoToolCallFormat(std::string_view chat_template_source, bool parallel) {
  AutoToolCalls out;
  // A template that renders calls in <tool_call> tags (Hermes / Qwen style)
  // trained its model to open a call with that marker, and to write the
  // next call of the same turn as "}\n</tool_call>\n<tool_call>\n{".
  if (chat_template_source.find("<tool_call>") != std::string_view::npos) {
    out.trigger = {"<tool_call>", /*at_start=*/false, /*in_grammar=*/false};
    // The last call ends at its "}" or at its closing tag: a model trained
    // on these tags writes "\n</tool_call>" and then ends its turn, which
    // must not commit it to another call.
    if (parallel) {
      out.separator = "\n</tool_call>\n<tool_call>\n";
      out.separator_end = sizeof("\n</tool_call>") - 1;
    }
    return out;
  }
  out.trigger = {"{\"name\"", /*at_start=*/true, /*in_grammar=*/true};
  if (parallel) {  // several calls: a JSON array of them, as "required" writes
    out.trigger.alt_text = "[{\"name\"";
    out.shape = ToolCallShape::kOneOrArray;
  }
  return out;
}

namespace fields {
namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

Problem ParseTool(const Json& v, size_t i, ToolDef* out) {
  const std::string p = fmt::format("tools[{}]", i);
  if (!v.is_object()) return TypeError(p, "an object", v);
  for (const auto& [k, val] : v.items())
    if (k != "type" && k != "function" && !val.is_null()) return Unknown(p + "." + k);
  const Json* type = Get(v, "type");
  if (!type) return Missing(p + ".type");
  if (!type->is_string()) return TypeError(p + ".type", "a string", *type);
  if (type->get_ref<const std::string&>() != "function")
    return Bad(p + ".type", "invalid_value",
               fmt::format("'{}.type' must be 'function', got '{}'", p,
                           Snippet(type->get_ref<const std::string&>())));
  const Json* fn = Get(v, "function");
  if (!fn) return Missing(p + ".function");
  if (!fn->is_object()) return TypeError(p + ".function", "an object", *fn);
  const std::string f = p + ".function";
  for (const auto& [k, val] : fn->items())
    if (k != "name" && k != "description" && k != "parameters" && k != "strict" && !val.is_null())
      return Unknown(f + "." + k);
  const Json* name = Get(*fn, "name");
  if (!name) return Missing(f + ".name");
  BRISK_API_TRY(ReadString(*name, f + ".name", &out->name));
  if (!ValidName(out->name))
    return Bad(f + ".name", "invalid_value",
               fmt::format("'{}.name' must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -, got "
                           "'{}'",
                           f, Snippet(out->name)));
  if (const Json* d = Get(*fn, "description"))
    BRISK_API_TRY(ReadString(*d, f + ".description", &out->description));
  if (const Json* s = Get(*fn, "strict")) BRISK_API_TRY(ReadBool(*s, f + ".strict", &out->strict));
  out->parameters = "{}";
  if (const Json* params = Get(*fn, "parameters")) {
    if (!params->is_object()) return TypeError(f + ".parameters", "an object", *params);
    out->parameters = params->dump();
  }
  return std::nullopt;
}

Problem ParseChoice(const Json& v, ToolChoice* out) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "none") {
      out->kind = ToolChoice::Kind::kNone;
    } else if (s == "auto") {
      out->kind = ToolChoice::Kind::kAuto;
    } else if (s == "required") {
      out->kind = ToolChoice::Kind::kRequired;
    } else {
      return Bad("tool_choice", "invalid_value",
                 fmt::format("'tool_choice' must be one of none, auto, required or an object "
                             "naming a function, got '{}'",
                             Snippet(s)));
    }
    return std::nullopt;
  }
  if (!v.is_object()) return TypeError("tool_choice", "a string or an object", v);
  const Json* type = Get(v, "type");
  if (!type || !type->is_string() || type->get_ref<const std::string&>() != "function")
    return Bad("tool_choice.type", "invalid_value", "'tool_choice.type' must be 'function'");
  const Json* fn = Get(v, "function");
  if (!fn) return Missing("tool_choice.function");
  if (!fn->is_object()) return TypeError("tool_choice.function", "an object", *fn);
  const Json* name = Get(*fn, "name");
  if (!name) return Missing("tool_choice.function.name");
  BRISK_API_TRY(ReadString(*name, "tool_choice.function.name", &out->name));
  out->kind = ToolChoice::Kind::kNamed;
  return std::nullopt;
}

}  // namespace

Problem ParseTools(const Json& body, std::optional<ToolsRequest>* out) {
  ToolsRequest tr;
  if (const Json* v = Get(body, "parallel_tool_calls"))
    BRISK_API_TRY(ReadBool(*v, "parallel_tool_calls", &tr.parallel));
  const Json* tools = Get(body, "tools");
  if (tools && !tools->is_array()) return TypeError("tools", "an array", *tools);
  if (tools && tools->size() > 128)
    return Bad("tools", "invalid_value",
               fmt::format("'tools' must have at most 128 entries, got {}", tools->size()));
  const bool any = tools && !tools->empty();
  if (any) {
    for (size_t i = 0; i < tools->size(); ++i) {
      ToolDef t;
      BRISK_API_TRY(ParseTool((*tools)[i], i, &t));
      for (const ToolDef& prev : tr.tools)
        if (prev.name == t.name)
          return Bad(fmt::format("tools[{}].function.name", i), "invalid_value",
                     fmt::format("Two tools are named '{}'", t.name));
      tr.tools.push_back(std::move(t));
    }
    tr.template_tools = *tools;
  }
  if (const Json* v = Get(body, "tool_choice")) {
    BRISK_API_TRY(ParseChoice(*v, &tr.choice));
    const bool needs =
        tr.choice.kind == ToolChoice::Kind::kRequired || tr.choice.kind == ToolChoice::Kind::kNamed;
    if (needs && !any)
      return Bad("tool_choice", "invalid_value",
                 "'tool_choice' asks for a tool call but 'tools' is empty or missing");
    if (tr.choice.kind == ToolChoice::Kind::kNamed) {
      bool found = false;
      for (const ToolDef& t : tr.tools) found = found || t.name == tr.choice.name;
      if (!found)
        return Bad("tool_choice.function.name", "invalid_value",
                   fmt::format("'tool_choice' names '{}', which is not in 'tools'",
                               Snippet(tr.choice.name)));
    }
  }
  if (any) *out = std::move(tr);
  return std::nullopt;
}

}  // namespace fields
}  // namespace brisk::api
