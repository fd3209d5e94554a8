#include "server/structured_output.h"

#include <fmt/format.h>

#include "server/request_preparation.h"

namespace brisk {
namespace {

constexpr const char* kSchemaParam = "response_format.json_schema.schema";

std::string EscapeEntry(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<uint8_t>(ch);
    if (c < 0x21 || c > 0x7E || c == '%' || c == ',') {
      out += fmt::format("%{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

std::variant<PreparedConstraint, api::ApiError> PrepareConstraint(ConstraintCache* cache,
                                                                  const api::ResponseFormat& rf,
                                                                  std::string_view separator,
                                                                  uint32_t separator_end) {
  ConstraintSpec spec;
  if (rf.kind == api::ResponseFormat::Kind::kJsonSchema) {
    spec.kind = ConstraintSpec::Kind::kJsonSchema;
    spec.schema = rf.schema;
    spec.separator = separator;
    spec.separator_end = separator_end;
  }
  PreparedConstraint out;
  bool hit = false;
  auto compiled = cache ? cache->Get(spec, &hit) : CompileConstraint(spec);
  if (!compiled.ok())
    return http::MakeOpenAiError(400, "invalid_request_error",
                                 fmt::format("'{}' is not a usable JSON Schema: {}", kSchemaParam,
                                             compiled.status().message()),
                                 "invalid_value", kSchemaParam);
  out.constraint = *compiled;
  out.compiled_now = !hit;
  out.unenforced = out.constraint->compiled.unenforced;
  if (rf.strict && !out.unenforced.empty()) {
    std::string list;
    for (const auto& u : out.unenforced) {
      if (!list.empty()) list += ", ";
      list += u.keyword + " at '" + (u.pointer.empty() ? std::string("#") : u.pointer) + "'";
      if (list.size() > 512) {
        list += ", ...";
        break;
      }
    }
    return http::MakeOpenAiError(
        400, "invalid_request_error",
        fmt::format("'strict': true, but this server cannot enforce every keyword "
                    "of the schema: {}. Remove them, or send 'strict': false to "
                    "be served with them unenforced (listed in the {} header).",
                    list, kUnenforcedKeywordsHeader),
        "unsupported", kSchemaParam);
  }
  return out;
}

std::variant<PreparedConstraint, api::ApiError> PrepareGuidedConstraint(ConstraintCache* cache,
                                                                        const api::GuidedSpec& g) {
  ConstraintSpec spec;
  spec.kind = g.kind == api::GuidedSpec::Kind::kRegex    ? ConstraintSpec::Kind::kRegex
              : g.kind == api::GuidedSpec::Kind::kChoice ? ConstraintSpec::Kind::kChoice
                                                         : ConstraintSpec::Kind::kGrammar;
  spec.schema = g.text;
  bool hit = false;
  auto compiled = cache ? cache->Get(spec, &hit) : CompileConstraint(spec);
  if (!compiled.ok()) {
    const char* what = g.kind == api::GuidedSpec::Kind::kRegex    ? "regular expression"
                       : g.kind == api::GuidedSpec::Kind::kChoice ? "choice list"
                                                                  : "GBNF grammar";
    return http::MakeOpenAiError(
        400, "invalid_request_error",
        fmt::format("'{}' is not a usable {}: {}", g.param, what, compiled.status().message()),
        "invalid_value", g.param);
  }
  PreparedConstraint out;
  out.constraint = *compiled;
  out.compiled_now = !hit;
  return out;
}

std::string UnenforcedKeywordsHeaderValue(const std::vector<UnenforcedKeyword>& unenforced) {
  std::string out;
  for (const auto& u : unenforced) {
    std::string entry = EscapeEntry(u.keyword) + "@" + EscapeEntry(u.pointer);
    const size_t need = out.size() + (out.empty() ? 0 : 1) + entry.size();
    if (need > kMaxUnenforcedHeaderBytes - 4) {
      out += out.empty() ? "..." : ",...";
      break;
    }
    if (!out.empty()) out += ",";
    out += entry;
  }
  return out;
}

}  // namespace brisk
