#include "gateway/judge.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <optional>

#include "gateway/json_fields.h"
#include "grammar/answer_check.h"
#include "http/upstream_client.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

// The rubric is fixed so verdicts stay comparable across rollouts; changing
// it changes the judge (re-run `brisk judge` and BENCHMARKS.md's table).
constexpr const char* kRubric =
    "You are an impartial judge. You are shown a user's request and two answers to it, "
    "A and B. Decide which answer follows the request better. Judge, in this order: "
    "correctness (facts, arithmetic, code), following the instructions (what was asked, "
    "constraints on length, language or content), and format (the requested format or "
    "schema). An answer that refuses or changes the subject without reason is worse. "
    "Do not prefer an answer for being longer or for its position. If both are equally "
    "good or equally bad, the winner is tie. Reply with JSON only: {\"winner\": \"A\"}, "
    "{\"winner\": \"B\"} or {\"winner\": \"tie\"}.";

const Json& VerdictFormat() {
  static const Json kFormat = Json::parse(R"({
    "type": "json_schema",
    "json_schema": {"name": "verdict", "strict": true, "schema": {
      "type": "object",
      "properties": {"winner": {"type": "string", "enum": ["A", "B", "tie"]}},
      "required": ["winner"], "additionalProperties": false}}})");
  return kFormat;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// At most `max` bytes, cut on a UTF-8 character boundary, the cut marked.
std::string Cut(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return fmt::format("{}\n[... {} more bytes cut]", s.substr(0, n), s.size() - n);
}

// The constraint a request puts on its answer, from the fields brisk serve
// accepts (server/openai_guided.h): at most one applies.
struct Constraint {
  enum Kind { kNone, kJson, kChoice, kRegex, kTools } kind = kNone;
  Json json_request;            // kJson: a body with the equivalent response_format
  const Json* value = nullptr;  // kChoice: the array; kRegex: the pattern string
};

Json SchemaFormat(const Json& schema) {
  return {{"response_format",
           {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}};
}

Constraint ConstraintOf(const Json& req) {
  Constraint c;
  if (const Json* rf = FieldOf(req, "response_format"); rf && rf->is_object()) {
    const std::string type = StringOr(*rf, "type", "");
    if (type == "json_object" || type == "json_schema") {
      c.kind = Constraint::kJson;
      c.json_request = {{"response_format", *rf}};
      return c;
    }
  }
  const Json* so = FieldOf(req, "structured_outputs");
  auto pick = [&](const char* so_key, const char* guided_key) -> const Json* {
    if (const Json* v = so ? FieldOf(*so, so_key) : nullptr) return v;
    return FieldOf(req, guided_key);
  };
  if (const Json* js = pick("json", "guided_json")) {
    Json schema = js->is_string() ? Json::parse(js->get<std::string>(), nullptr, false) : *js;
    if (schema.is_object()) {
      c.kind = Constraint::kJson;
      c.json_request = SchemaFormat(schema);
      return c;
    }
  }
  if (so && BoolOr(*so, "json_object", false)) {
    c.kind = Constraint::kJson;
    c.json_request = {{"response_format", {{"type", "json_object"}}}};
    return c;
  }
  if (const Json* v = pick("choice", "guided_choice"); v && v->is_array()) {
    c.kind = Constraint::kChoice;
    c.value = v;
    return c;
  }
  if (const Json* v = pick("regex", "guided_regex"); v && v->is_string()) {
    c.kind = Constraint::kRegex;
    c.value = v;
    return c;
  }
  const Json* tools = FieldOf(req, "tools");
  if (tools && tools->is_array() && !tools->empty() &&
      StringOr(req, "tool_choice", "auto") != "none") {
    c.kind = Constraint::kTools;
  }
  return c;
}

// 1 when `answer` matches `pattern` whole, 0 when not, -1 when the pattern
// does not compile or the match gives up (its limit).
int RegexWholeMatch(const std::string& pattern, std::string_view answer) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* re =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &err, &off, nullptr);
  if (re == nullptr) return -1;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(ctx, 1000000);
  const int rc =
      pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(answer.data()), answer.size(), 0, 0, md, ctx);
  pcre2_match_context_free(ctx);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  if (rc >= 0) return 1;
  return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

// The function tool a call names, or null.
const Json* DeclaredTool(const Json& req, const std::string& name) {
  for (const Json& t : req["tools"]) {
    const Json* fn = FieldOf(t, "function");
    if (fn && StringOr(*fn, "name", "") == name) return fn;
  }
  return nullptr;
}

// The calls of a tool-call answer (JudgeAnswerText writes them as a JSON
// array): [(name, arguments as JSON)], or nullopt when the answer is text.
std::optional<std::vector<std::pair<std::string, Json>>> ToolCalls(std::string_view answer) {
  Json calls = Json::parse(answer, nullptr, false);
  if (!calls.is_array() || calls.empty()) return std::nullopt;
  std::vector<std::pair<std::string, Json>> out;
  for (const Json& call : calls) {
    const Json* fn = FieldOf(call, "function");
    if (fn == nullptr || !FieldOf(*fn, "name")) return std::nullopt;
    Json args = AnyOr(*fn, "arguments");
    if (args.is_string()) args = Json::parse(args.get<std::string>(), nullptr, false);
    out.emplace_back(StringOr(*fn, "name", ""), std::move(args));
  }
  return out;
}

int ToolValidity(const Json& req, std::string_view answer) {
  const Json choice = AnyOr(req, "tool_choice");
  std::string forced;  // a function the request names
  if (const Json* fn = FieldOf(choice, "function")) forced = StringOr(*fn, "name", "");
  auto calls = ToolCalls(answer);
  if (!calls) return choice == "required" || !forced.empty() ? 0 : 1;
  for (const auto& [name, args] : *calls) {
    const Json* fn = DeclaredTool(req, name);
    if (fn == nullptr || (!forced.empty() && name != forced) || !args.is_object()) return 0;
    const Json* params = FieldOf(*fn, "parameters");
    if (params == nullptr || !params->is_object()) continue;
    if (!AnswerCheck::FromRequest(SchemaFormat(*params)).Check(Dump(args)).empty()) return 0;
  }
  return 1;
}

bool Greedy(const Json& req) {
  const Json* t = FieldOf(req, "temperature");
  if (t && t->is_number() && t->get<double>() == 0) return true;
  return IntOr(req, "top_k", 0) == 1;
}

// A chat message's text: a string, or the text parts of an array.
std::string ContentText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return content.is_null() ? "" : Dump(content);
  std::string out;
  for (const Json& part : content) {
    if (const Json* t = FieldOf(part, "text"); t && t->is_string()) out += t->get<std::string>();
  }
  return out;
}

std::string RequestText(const Json& req) {
  std::string out;
  if (const Json* msgs = FieldOf(req, "messages"); msgs && msgs->is_array()) {
    for (const Json& m : *msgs) {
      std::string text = ContentText(AnyOr(m, "content"));
      if (const Json* calls = FieldOf(m, "tool_calls")) text += Dump(*calls);
      out += fmt::format("{}: {}\n", StringOr(m, "role", "user"), text);
    }
  } else if (const Json* p = FieldOf(req, "prompt")) {
    out = p->is_string() ? p->get<std::string>() + "\n" : Dump(*p) + "\n";
  }
  // The answer's required shape is part of the request the judge must see.
  const Constraint c = ConstraintOf(req);
  if (c.kind == Constraint::kJson) {
    out += "(The answer must be JSON: " + Dump(c.json_request["response_format"]) + ")\n";
  } else if (c.kind == Constraint::kChoice) {
    out += "(The answer must be exactly one of: " + Dump(*c.value) + ")\n";
  } else if (c.kind == Constraint::kRegex) {
    out += "(The answer must match the regular expression: " + c.value->get<std::string>() + ")\n";
  } else if (c.kind == Constraint::kTools) {
    out += "(Tools the answer may call: " + Dump(req["tools"]) + ")\n";
  }
  return out;
}

}  // namespace

std::string JudgeAnswerText(const Json& response) {
  const Json* choices = FieldOf(response, "choices");
  if (choices == nullptr || !choices->is_array() || choices->empty()) return "";
  const Json& c = (*choices)[0];
  if (const Json* m = FieldOf(c, "message")) {
    if (const Json* calls = FieldOf(*m, "tool_calls");
        calls && calls->is_array() && !calls->empty()) {
      return Dump(*calls);
    }
    return ContentText(AnyOr(*m, "content"));
  }
  return StringOr(c, "text", "");
}

int StructuredValidity(const Json& request, std::string_view answer) {
  const Constraint c = ConstraintOf(request);
  switch (c.kind) {
    case Constraint::kNone: return -1;
    case Constraint::kJson:
      return AnswerCheck::FromRequest(c.json_request).Check(answer).empty() ? 1 : 0;
    case Constraint::kChoice:
      for (const Json& s : *c.value) {
        if (s.is_string() && s.get<std::string>() == answer) return 1;
      }
      return 0;
    case Constraint::kRegex: return RegexWholeMatch(c.value->get<std::string>(), answer);
    case Constraint::kTools: return ToolValidity(request, answer);
  }
  return -1;
}

int ExactAgreement(const Json& request, std::string_view baseline, std::string_view candidate) {
  if (!Greedy(request)) return -1;
  const Constraint c = ConstraintOf(request);
  if (c.kind == Constraint::kTools) {
    auto a = ToolCalls(baseline), b = ToolCalls(candidate);
    // Call ids are random per answer: names and arguments are the answer.
    if (a && b) return *a == *b ? 1 : 0;
    if (a || b) return 0;
  } else if (c.kind == Constraint::kJson) {
    Json a = Json::parse(baseline, nullptr, false), b = Json::parse(candidate, nullptr, false);
    if (!a.is_discarded() && !b.is_discarded()) return a == b ? 1 : 0;
  }
  return Trim(baseline) == Trim(candidate) ? 1 : 0;
}

JudgeVerdict CheckPair(const JudgePair& pair) {
  JudgeVerdict v;
  v.baseline_valid = StructuredValidity(pair.request, pair.baseline);
  v.candidate_valid = StructuredValidity(pair.request, pair.candidate);
  v.exact_agree = ExactAgreement(pair.request, pair.baseline, pair.candidate);
  return v;
}

namespace {
bool StructureDecides(const JudgeVerdict& v) {
  return (v.baseline_valid == 1 && v.candidate_valid == 0) ||
         (v.baseline_valid == 0 && v.candidate_valid == 1);
}
}  // namespace

bool NeedsLlm(const JudgeVerdict& v) { return !StructureDecides(v) && v.exact_agree != 1; }

bool JudgeVerdict::Decided() const {
  return StructureDecides(*this) || exact_agree == 1 || llm_ran;
}

double JudgeVerdict::Score() const {
  if (baseline_valid == 1 && candidate_valid == 0) return 0;
  if (baseline_valid == 0 && candidate_valid == 1) return 1;
  if (exact_agree == 1 || !llm_ran) return 0.5;
  return llm > 0 ? 1 : llm < 0 ? 0 : 0.5;
}

Json JudgeVerdict::ToJson() const {
  return {{"baseline_valid", baseline_valid},
          {"candidate_valid", candidate_valid},
          {"exact_agree", exact_agree},
          {"llm", llm},
          {"llm_ran", llm_ran},
          {"position_inconsistent", position_inconsistent},
          {"winner_baseline_first", winner_baseline_first},
          {"winner_candidate_first", winner_candidate_first},
          {"llm_error", llm_error},
          {"decided", Decided()},
          {"score", Score()}};
}

std::string JudgePrompt(const Json& request, std::string_view answer_a, std::string_view answer_b,
                        size_t max_text_bytes) {
  return fmt::format(
      "[Request]\n{}[End of request]\n\n[Answer A]\n{}\n[End of answer A]\n\n[Answer B]\n{}\n"
      "[End of answer B]\n\nWhich answer follows the request better: A, B or tie?",
      Cut(RequestText(request), max_text_bytes), Cut(answer_a, max_text_bytes),
      Cut(answer_b, max_text_bytes));
}

Json JudgeRequestBody(const std::string& model, const Json& request, std::string_view answer_a,
                      std::string_view answer_b, const JudgeOptions& opts) {
  Json messages = Json::array();
  messages.push_back({{"role", "system"}, {"content", kRubric}});
  messages.push_back({{"role", "user"},
                      {"content", JudgePrompt(request, answer_a, answer_b, opts.max_text_bytes)}});
  Json body = {
      {"model", model},    {"messages", messages},          {"temperature", 0},
      {"seed", opts.seed}, {"max_tokens", opts.max_tokens}, {"response_format", VerdictFormat()}};
  if (opts.batch_priority) body["priority"] = "batch";
  return body;
}

std::string_view WinnerName(JudgeWinner w) {
  switch (w) {
    case JudgeWinner::kA: return "A";
    case JudgeWinner::kB: return "B";
    case JudgeWinner::kTie: return "tie";
  }
  return "tie";
}

namespace {
std::optional<JudgeWinner> WinnerOf(std::string_view s) {
  s = Trim(s);
  while (!s.empty() && (s.front() == '"' || s.front() == '\'')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '"' || s.back() == '\'' || s.back() == '.')) s.remove_suffix(1);
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (lower == "a") return JudgeWinner::kA;
  if (lower == "b") return JudgeWinner::kB;
  if (lower == "tie") return JudgeWinner::kTie;
  return std::nullopt;
}
}  // namespace

Expected<JudgeWinner> ParseJudgeResponse(std::string_view response_body) {
  Json body = Json::parse(response_body, nullptr, false);
  if (!body.is_object()) return InvalidArgument("the judge's response is not a JSON object");
  const std::string text = JudgeAnswerText(body);
  Json verdict = Json::parse(text, nullptr, false);
  std::optional<JudgeWinner> w;
  if (const Json* winner = FieldOf(verdict, "winner"); winner && winner->is_string()) {
    w = WinnerOf(winner->get<std::string>());
  } else if (!verdict.is_object()) {
    w = WinnerOf(text);
  }
  if (!w) return InvalidArgument("the judge answered no winner: '{}'", Cut(text, 200));
  return *w;
}

void CombineOrders(JudgeWinner baseline_first, JudgeWinner candidate_first, JudgeVerdict* v) {
  v->llm_ran = true;
  v->llm_error.clear();
  v->winner_baseline_first = WinnerName(baseline_first);
  v->winner_candidate_first = WinnerName(candidate_first);
  // Each order's verdict for the candidate: +1 better, -1 worse, 0 tie.
  auto side = [](JudgeWinner w, bool candidate_is_a) {
    if (w == JudgeWinner::kTie) return 0;
    return (w == JudgeWinner::kA) == candidate_is_a ? 1 : -1;
  };
  const int first = side(baseline_first, false), second = side(candidate_first, true);
  // Opposite candidate verdicts come only from the same position twice.
  v->position_inconsistent = first != 0 && second != 0 && first != second;
  v->llm = first == second ? first : 0;
}

Judge::Judge(http::UpstreamClient* client, std::string model, JudgeOptions opts)
    : client_(client), model_(std::move(model)), opts_(std::move(opts)) {}

void Judge::Score(JudgePair pair, std::function<void(JudgeVerdict)> done) {
  JudgeVerdict v = CheckPair(pair);
  if (!NeedsLlm(v)) {
    done(std::move(v));
    return;
  }
  if (client_ == nullptr) {
    v.llm_error = "no judge upstream";
    done(std::move(v));
    return;
  }
  // Both orders in flight at once; the last to finish combines them. The
  // callbacks may run on different threads of the executor.
  struct State {
    std::mutex mu;
    JudgeVerdict v;
    std::optional<Expected<JudgeWinner>> result[2];
    int left = 2;
    std::function<void(JudgeVerdict)> done;
  };
  auto state = std::make_shared<State>();
  state->v = std::move(v);
  state->done = std::move(done);
  const std::string_view answers[2][2] = {{pair.baseline, pair.candidate},
                                          {pair.candidate, pair.baseline}};
  for (int order = 0; order < 2; ++order) {
    http::UpstreamRequest req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.headers = {{"Content-Type", "application/json"}};
    if (!opts_.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + opts_.api_key});
    req.body =
        Dump(JudgeRequestBody(model_, pair.request, answers[order][0], answers[order][1], opts_));
    client_->Fetch(std::move(req), [state, order](Expected<std::pair<int, std::string>> got) {
      auto winner = [&]() -> Expected<JudgeWinner> {
        if (!got.ok()) return got.status();
        if (got->first != 200) {
          return Status(StatusCode::kUnavailable,
                        fmt::format("HTTP {}: {}", got->first, Cut(got->second, 200)));
        }
        return ParseJudgeResponse(got->second);
      };
      std::unique_lock lock(state->mu);
      state->result[order] = winner();
      if (--state->left > 0) return;
      JudgeVerdict out = std::move(state->v);
      const Expected<JudgeWinner>& a = *state->result[0];
      const Expected<JudgeWinner>& b = *state->result[1];
      if (a.ok() && b.ok()) {
        CombineOrders(*a, *b, &out);
      } else {
        out.llm_error = (a.ok() ? b : a).status().message();
      }
      auto cb = std::move(state->done);
      lock.unlock();
      cb(std::move(out));
    });
  }
}

}  // namespace brisk::gateway
