#include "eval/golden_set.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>

namespace brisk::eval {
namespace {

using Json = nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};

// The compiled pattern, or why it does not compile.
std::unique_ptr<pcre2_code, CodeDeleter> CompileRegex(const std::string& pattern, bool ignore_case,
                                                      std::string* why) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | (ignore_case ? PCRE2_CASELESS : 0), &code, &offset, nullptr);
  if (re == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof(buf));
    *why = fmt::format("{} at offset {}", reinterpret_cast<const char*>(buf), offset);
  }
  return std::unique_ptr<pcre2_code, CodeDeleter>(re);
}

Expected<std::vector<std::string>> Strings(const Json& v, const std::string& where) {
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array() && !v.empty()) {
    for (const Json& s : v) {
      if (!s.is_string()) return InvalidArgument("{}: must hold strings", where);
      out.push_back(s.get<std::string>());
    }
  } else {
    return InvalidArgument("{}: must be a string or a non-empty array of strings", where);
  }
  return out;
}

Expected<GoldenCheck> ParseCheck(const Json& v, const std::string& at) {
  if (!v.is_object()) return InvalidArgument("{}: \"check\" must be an object", at);
  GoldenCheck c;
  int kinds = 0;
  for (const auto& [k, val] : v.items()) {
    if (k == "ignore_case") {
      if (!val.is_boolean()) return InvalidArgument("{}: check.ignore_case must be a boolean", at);
      c.ignore_case = val.get<bool>();
      continue;
    }
    ++kinds;
    const std::string where = fmt::format("{}: check.{}", at, k);
    if (k == "exact" || k == "regex") {
      if (!val.is_string()) return InvalidArgument("{}: must be a string", where);
      c.kind = k == "exact" ? GoldenCheck::Kind::kExact : GoldenCheck::Kind::kRegex;
      c.values = {val.get<std::string>()};
    } else if (k == "contains" || k == "contains_any") {
      ASSIGN_OR_RETURN(c.values, Strings(val, where));
      c.kind = k == "contains" ? GoldenCheck::Kind::kContains : GoldenCheck::Kind::kContainsAny;
    } else if (k == "json") {
      if (val != true) return InvalidArgument("{}: must be true", where);
      c.kind = GoldenCheck::Kind::kJson;
    } else if (k == "json_schema") {
      c.kind = GoldenCheck::Kind::kJsonSchema;
      auto check = std::make_shared<AnswerCheck>(AnswerCheck::FromRequest(
          {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", val}}}}}}));
      if (!check->has_schema())
        return InvalidArgument("{}: not a schema this checker can use: {}", where,
                               check->skipped());
      c.schema = std::move(check);
    } else {
      return InvalidArgument(
          "{}: unknown check '{}' (exact, contains, contains_any, regex, json, json_schema)", at,
          k);
    }
  }
  if (kinds != 1) return InvalidArgument("{}: \"check\" needs exactly one kind of check", at);
  if (c.kind == GoldenCheck::Kind::kRegex) {
    std::string why;
    if (!CompileRegex(c.values[0], c.ignore_case, &why))
      return InvalidArgument("{}: check.regex: {}", at, why);
  }
  return c;
}

}  // namespace

Expected<std::vector<GoldenCase>> ParseGoldenSet(std::string_view text, std::string_view filename) {
  std::vector<GoldenCase> cases;
  std::set<std::string> ids;
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (Trim(raw).empty()) continue;
    const std::string at = fmt::format("{}:{}", filename, line);
    Json j = Json::parse(raw, nullptr, false);
    if (!j.is_object()) return InvalidArgument("{}: not a JSON object", at);
    GoldenCase c;
    c.line = line;
    if (auto id = j.find("id"); id != j.end()) {
      c.id = id->is_string() ? id->get<std::string>() : id->dump();
    } else {
      c.id = std::to_string(line);
    }
    if (!ids.insert(c.id).second) return InvalidArgument("{}: id '{}' used twice", at, c.id);
    auto check = j.find("check");
    if (check == j.end()) return InvalidArgument("{}: a case needs a \"check\"", at);
    ASSIGN_OR_RETURN(c.check, ParseCheck(*check, at));
    const bool has_messages = j.contains("messages"), has_prompt = j.contains("prompt");
    if (has_messages == has_prompt)
      return InvalidArgument("{}: a case needs \"messages\" or \"prompt\" (one of them)", at);
    if (has_messages && !j["messages"].is_array())
      return InvalidArgument("{}: \"messages\" must be an array", at);
    if (has_prompt && !j["prompt"].is_string())
      return InvalidArgument("{}: \"prompt\" must be a string", at);
    if (j.contains("stream") || j.contains("model"))
      return InvalidArgument("{}: \"stream\" and \"model\" are set by brisk eval", at);
    c.chat = has_messages;
    c.body = j;
    c.body.erase("id");
    c.body.erase("check");
    if (!c.body.contains("temperature")) c.body["temperature"] = 0;
    if (!c.body.contains("max_tokens")) c.body["max_tokens"] = 64;
    cases.push_back(std::move(c));
  }
  if (cases.empty()) return InvalidArgument("{}: the golden set has no cases", filename);
  return cases;
}

std::string CheckAnswer(const GoldenCheck& check, std::string_view answer) {
  using Kind = GoldenCheck::Kind;
  const std::string text = check.ignore_case ? Lower(answer) : std::string(answer);
  auto norm = [&](const std::string& s) { return check.ignore_case ? Lower(s) : s; };
  switch (check.kind) {
    case Kind::kExact:
      return Trim(text) == Trim(norm(check.values[0])) ? "" : "not the exact answer";
    case Kind::kContains:
      for (const std::string& v : check.values) {
        if (text.find(norm(v)) == std::string::npos) return fmt::format("missing '{}'", v);
      }
      return "";
    case Kind::kContainsAny:
      for (const std::string& v : check.values) {
        if (text.find(norm(v)) != std::string::npos) return "";
      }
      return "none of the expected strings";
    case Kind::kRegex: {
      std::string why;
      auto re = CompileRegex(check.values[0], check.ignore_case, &why);
      if (!re) return "regex: " + why;
      pcre2_match_data* md = pcre2_match_data_create_from_pattern(re.get(), nullptr);
      pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
      pcre2_set_match_limit(ctx, 1000000);
      const int rc = pcre2_match(re.get(), reinterpret_cast<PCRE2_SPTR>(answer.data()),
                                 answer.size(), 0, 0, md, ctx);
      pcre2_match_context_free(ctx);
      pcre2_match_data_free(md);
      if (rc >= 0) return "";
      return rc == PCRE2_ERROR_NOMATCH ? "no match" : fmt::format("regex error {}", rc);
    }
    case Kind::kJson: {
      Json v = Json::parse(answer, nullptr, false);
      return !v.is_discarded() && v.is_structured() ? "" : "not a JSON object or array";
    }
    case Kind::kJsonSchema: {
      std::string detail;
      std::string verdict = check.schema->Check(answer, &detail);
      return verdict.empty() ? "" : detail.empty() ? verdict : verdict + ": " + detail;
    }
  }
  return "unknown check";
}

}  // namespace brisk::eval
