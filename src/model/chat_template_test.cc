// Chat templates against Python jinja2: tests/fixtures/chat_templates holds
// real models' templates plus expected.json / snippets.json, which
// tools/make_template_fixtures.py renders with jinja2 configured as HF
// transformers does; here every output must match byte for byte (or both
// sides must fail). Then error paths, limits and robustness.
#include "model/chat_template.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;

const std::string kFixtureDir = std::string(BRISK_SOURCE_DIR) + "/tests/fixtures/chat_templates/";

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Renders `tmpl` with `ctx`; errors come back as "ERROR <status>".
std::string R(std::string_view tmpl, const Json& ctx = Json::object()) {
  auto t = ChatTemplate::Parse(tmpl);
  if (!t.ok()) return "PARSE " + t.status().ToString();
  auto r = t->RenderJson(ctx);
  if (!r.ok()) return "ERROR " + r.status().ToString();
  return *r;
}

Status RenderStatus(std::string_view tmpl, const Json& ctx = Json::object(),
                    ChatTemplateOptions opts = {}) {
  auto t = ChatTemplate::Parse(tmpl);
  if (!t.ok()) return t.status();
  t->set_options(opts);
  auto r = t->RenderJson(ctx);
  return r.ok() ? Status::Ok() : r.status();
}

// ------------------------------------------------------------------ fixtures

struct FixtureCase {
  std::string template_name;
  std::string case_name;
};

class ChatTemplateFixtureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string text = ReadFile(kFixtureDir + "expected.json");
    ASSERT_FALSE(text.empty()) << "missing " << kFixtureDir << "expected.json";
    expected_ = new Json(Json::parse(text));
  }
  static void TearDownTestSuite() {
    delete expected_;
    expected_ = nullptr;
  }
  static Json* expected_;
};
Json* ChatTemplateFixtureTest::expected_ = nullptr;

// The context tools/make_template_fixtures.py renders with.
Json ContextFor(const Json& c, const Json& tmpl) {
  Json ctx = Json::object();
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  for (auto it = c.begin(); it != c.end(); ++it) ctx[it.key()] = it.value();
  ctx["bos_token"] = tmpl["bos_token"];
  ctx["eos_token"] = tmpl["eos_token"];
  return ctx;
}

// True when the case only has role/content string messages, so the
// ChatMessage overload can render it too.
bool IsPlainConversation(const Json& c) {
  for (auto it = c.begin(); it != c.end(); ++it) {
    if (it.key() != "messages" && it.key() != "add_generation_prompt") return false;
  }
  for (const Json& m : c["messages"]) {
    if (m.size() != 2 || !m.contains("role") || !m.contains("content") ||
        !m["content"].is_string()) {
      return false;
    }
  }
  return true;
}

TEST_F(ChatTemplateFixtureTest, MatchesPythonJinja2ByteForByte) {
  const Json& cases = (*expected_)["cases"];
  ChatTemplateOptions opts;
  opts.now_unix_seconds = (*expected_)["now_unix_seconds"].get<int64_t>();
  int templates = 0, renders = 0;
  for (auto& [name, tmpl] : (*expected_)["templates"].items()) {
    SCOPED_TRACE("template " + name);
    std::string source = ReadFile(kFixtureDir + tmpl["file"].get<std::string>());
    ASSERT_FALSE(source.empty());
    auto parsed = ChatTemplate::Parse(source);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    parsed->set_options(opts);
    ++templates;
    for (auto& [case_name, want] : tmpl["results"].items()) {
      SCOPED_TRACE("case " + case_name);
      const Json& c = cases[case_name];
      auto got = parsed->RenderJson(ContextFor(c, tmpl));
      ++renders;
      if (want.contains("output")) {
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, want["output"].get<std::string>());
      } else {
        ASSERT_FALSE(got.ok()) << "expected an error like: " << want["error"];
        EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
        if (want["raised"].get<bool>()) {
          EXPECT_EQ(got.status().message(), want["error"].get<std::string>());
        }
      }
      if (IsPlainConversation(c)) {
        std::vector<ChatMessage> msgs;
        for (const Json& m : c["messages"]) {
          msgs.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
        }
        auto simple = parsed->Render(msgs, c["add_generation_prompt"].get<bool>(),
                                     tmpl["bos_token"].get<std::string>(),
                                     tmpl["eos_token"].get<std::string>());
        if (want.contains("output")) {
          ASSERT_TRUE(simple.ok()) << simple.status().ToString();
          EXPECT_EQ(*simple, want["output"].get<std::string>());
        } else {
          EXPECT_FALSE(simple.ok());
        }
      }
    }
  }
  EXPECT_GE(templates, 30);
  EXPECT_GE(renders, 300);
}

TEST_F(ChatTemplateFixtureTest, SmolLM2TemplateFromGgufIsStored) {
  std::string source = ReadFile(kFixtureDir + "smollm2_135m_instruct.jinja");
  EXPECT_NE(source.find("You are a helpful AI assistant named SmolLM"), std::string::npos);
  auto t = ChatTemplate::Parse(source);
  ASSERT_TRUE(t.ok());
  std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  auto out = t->Render(msgs, true, "<|im_start|>", "<|im_end|>");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

TEST(ChatTemplateSnippetTest, MatchesPythonJinja2) {
  std::string text = ReadFile(kFixtureDir + "snippets.json");
  ASSERT_FALSE(text.empty());
  Json all = Json::parse(text);
  ChatTemplateOptions opts;
  opts.now_unix_seconds = all["now_unix_seconds"].get<int64_t>();
  int n = 0;
  for (const Json& s : all["snippets"]) {
    std::string name = s["name"].get<std::string>();
    SCOPED_TRACE("snippet " + name + ": " + s["template"].get<std::string>());
    ++n;
    auto t = ChatTemplate::Parse(s["template"].get<std::string>());
    Expected<std::string> got = t.ok() ? Expected<std::string>(Status(StatusCode::kInternal, "x"))
                                       : Expected<std::string>(t.status());
    if (t.ok()) {
      t->set_options(opts);
      got = t->RenderJson(s["context"]);
    }
    if (s.contains("output")) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, s["output"].get<std::string>());
    } else {
      ASSERT_FALSE(got.ok()) << "expected an error like " << s["error"] << ", got " << *got;
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      if (s["raised"].get<bool>()) {
        EXPECT_EQ(got.status().message(), s["error"].get<std::string>());
      }
    }
  }
  EXPECT_GE(n, 100);
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

// ------------------------------------------------------------------ errors

TEST(ChatTemplateErrorTest, SyntaxErrorsCarryLineAndColumn) {
  auto t = ChatTemplate::Parse("line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "chat template: 3:10: unexpected end of print statement, expected an expression");

  t = ChatTemplate::Parse("{% for m in messages %}\n{{ m }}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "chat template: 2:8: unexpected end of template, expected 'endfor' or 'else'");

  t = ChatTemplate::Parse("ok\n  {% frobnicate %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "chat template: 2:6: unknown tag 'frobnicate'");

  t = ChatTemplate::Parse("{{ 'abc }}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "chat template: 1:4: unterminated string");

  t = ChatTemplate::Parse("{% include 'x.jinja' %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "chat template: 1:4: unsupported tag 'include'");

  t = ChatTemplate::Parse("{% break %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "chat template: 1:4: 'break' outside of a loop");

  for (const char* bad : {"{{", "{%", "{#", "{{ (1 }}", "{{ [1, 2 }}", "{{ {'a': }}",
                          "{% if %}{% endif %}", "{% set %}", "{% for in x %}{% endfor %}",
                          "{% macro %}{% endmacro %}", "{{ a | }}", "{{ a is }}", "{{ a.  }}",
                          "{% endif %}", "{{ 1 2 }}", "{% raw %}abc", "{{ x[] }}", "{{ @ }}"}) {
    EXPECT_FALSE(ChatTemplate::Parse(bad).ok()) << bad;
  }
}

TEST(ChatTemplateErrorTest, RuntimeErrorsCarryPosition) {
  Status st = RenderStatus("ab\n{{ 'x' + 1 }}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "2:8: can only concatenate str (not \"int\") to str");
  st = RenderStatus("{% for m in messages %}{{ m.content.missing.x }}{% endfor %}",
                    Json{{"messages", {{{"content", "c"}}}}});
  EXPECT_EQ(st.message(), "1:44: 'str object' has no attribute 'missing'");
}

TEST(ChatTemplateErrorTest, RaiseExceptionMessageIsExact) {
  auto t = ChatTemplate::Parse(
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') "
      "}}{% endif %}ok");
  ASSERT_TRUE(t.ok());
  std::vector<ChatMessage> msgs = {{"system", "s"}, {"user", "u"}};
  auto r = t->Render(msgs, true, "<s>", "</s>");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "System role not supported");
  msgs.erase(msgs.begin());
  r = t->Render(msgs, true, "<s>", "</s>");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "ok");
}

TEST(ChatTemplateErrorTest, UndefinedFollowsJinjaDefaultUndefined) {
  EXPECT_EQ(R("[{{ nothing }}][{{ m.nope }}][{{ nothing is defined }}][{{ nothing|length }}]",
              Json{{"m", Json::object()}}),
            "[][][False][0]");
  EXPECT_EQ(R("{% if nothing %}y{% else %}n{% endif %}{% for x in nothing %}x{% endfor %}"), "n");
  EXPECT_EQ(R("{{ nothing.attr }}"), "ERROR INVALID_ARGUMENT: 1:11: 'nothing' is undefined");
  EXPECT_EQ(R("{{ m.nope.deeper }}", Json{{"m", Json::object()}}),
            "ERROR INVALID_ARGUMENT: 1:10: 'dict object' has no attribute 'nope'");
  EXPECT_EQ(R("{{ nothing() }}"), "ERROR INVALID_ARGUMENT: 1:11: 'nothing' is undefined");
}

TEST(ChatTemplateErrorTest, ContextMustBeAnObject) {
  auto t = ChatTemplate::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->RenderJson(Json::array()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->RenderJson(nlohmann::json(5)).status().code(), StatusCode::kInvalidArgument);
  // Plain nlohmann::json works too (its objects iterate sorted by key).
  auto u = ChatTemplate::Parse("{{ d|tojson }}");
  ASSERT_TRUE(u.ok());
  auto r = u->RenderJson(nlohmann::json{{"d", {{"b", 1}, {"a", 2}}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "{\"a\": 2, \"b\": 1}");
}

// ------------------------------------------------------------------ limits

TEST(ChatTemplateLimitTest, DeepNestingIsASyntaxErrorNotACrash) {
  std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + parens + " }}").ok());
  std::string lists = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + lists + " }}").ok());
  std::string nots;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + nots + "1 }}").ok());
  std::string ifs;
  for (int i = 0; i < 10000; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 10000; ++i) ifs += "{% endif %}";
  EXPECT_FALSE(ChatTemplate::Parse(ifs).ok());
  std::string chain = "1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + chain + " }}").ok());
  std::string attrs = "x";
  for (int i = 0; i < 100000; ++i) attrs += ".a";
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + attrs + " }}").ok());
  // Moderate nesting is fine.
  std::string ok_ifs;
  for (int i = 0; i < 30; ++i) ok_ifs += "{% if true %}";
  ok_ifs += "deep";
  for (int i = 0; i < 30; ++i) ok_ifs += "{% endif %}";
  EXPECT_EQ(R(ok_ifs), "deep");
  EXPECT_EQ(R("{{ " + std::string(40, '(') + "2" + std::string(40, ')') + " }}"), "2");
}

TEST(ChatTemplateLimitTest, HugeLoopsAreCapped) {
  Status st = RenderStatus("{% for i in range(100000000) %}{% endfor %}");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  st = RenderStatus("{% for a in range(5000) %}{% for b in range(5000) %}{% endfor %}{% endfor %}");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  ChatTemplateOptions small;
  small.max_loop_iterations = 100;
  st = RenderStatus("{% for m in messages %}{% endfor %}",
                    Json{{"messages", Json(std::vector<int>(101, 1))}}, small);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  st = RenderStatus("{% for m in messages %}{% endfor %}",
                    Json{{"messages", Json(std::vector<int>(99, 1))}}, small);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(ChatTemplateLimitTest, OutputAndWorkAreCapped) {
  ChatTemplateOptions opts;
  opts.max_output_bytes = 1 << 20;
  Status st =
      RenderStatus("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", Json::object(), opts);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  st = RenderStatus("{{ 'x' * 100000000000 }}", Json::object(), opts);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  st = RenderStatus("{{ [1] * 100000000000 }}", Json::object(), opts);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  // Quadratic growth through a namespace hits the work cap, not memory.
  ChatTemplateOptions work;
  work.max_work = 1 << 22;
  st = RenderStatus(
      "{% set ns = namespace(l=[]) %}{% for i in range(200000) %}{% set ns.l = ns.l + [i] %}"
      "{% endfor %}{{ ns.l|length }}",
      Json::object(), work);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  st = RenderStatus(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  st = RenderStatus("{{ 2 ** 64 }}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
}

TEST(ChatTemplateLimitTest, RunawayRecursionIsCapped) {
  Status st = RenderStatus("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  st = RenderStatus(
      "{% macro f(n) %}{% for i in range(3) %}{{ f(n + 1) }}{% endfor %}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
}

// ------------------------------------------------------------------ robustness

TEST(ChatTemplateRobustnessTest, HostileValuesAreErrorsNotCrashes) {
  // Nesting grown in a loop stops at the value depth cap.
  Status st = RenderStatus(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
      "{% endfor %}{{ ns.l }}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  // No reference cycles through namespaces.
  st = RenderStatus("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  st = RenderStatus("{% set ns = namespace() %}{% set ns.l = [ns] %}{{ ns }}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  // A deeply nested JSON context is refused up front.
  Json deep = Json::array();
  for (int i = 0; i < 1000; ++i) deep = Json::array({deep});
  auto t = ChatTemplate::Parse("{{ x }}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->RenderJson(Json{{"x", deep}}).status().code(), StatusCode::kInvalidArgument);
  // Extreme numbers in slices, indices, attribute paths and formats.
  EXPECT_EQ(R("{{ [1, 2, 3][::9223372036854775807] }}"), "[1]");
  EXPECT_EQ(R("{{ [1, 2, 3][::-9223372036854775807] }}"), "[3]");
  EXPECT_EQ(R("{{ 'abc'[-9223372036854775807:9223372036854775807] }}"), "abc");
  EXPECT_EQ(R("[{{ [1][9223372036854775807] }}]"), "[]");
  EXPECT_EQ(R("{{ x|map(attribute='99999999999999999999999')|list }}", Json{{"x", {{1}}}}),
            "[Undefined]");
  EXPECT_FALSE(RenderStatus("{{ '%99999999d' % 1 }}").ok());
  EXPECT_FALSE(RenderStatus("{{ '{99999999999999999999999}'.format(1) }}").ok());
  EXPECT_FALSE(RenderStatus("{{ -9223372036854775807 - 2 }}").ok());
  EXPECT_FALSE(RenderStatus("{{ 1 // 0 }}").ok());
  EXPECT_FALSE(RenderStatus("{{ 1.5 % 0 }}").ok());
  EXPECT_EQ(R("{{ '0x1A'|int }} {{ 'inf'|int }} {{ '1e400'|int(5) }}"), "0 0 5");
}

TEST(ChatTemplateRobustnessTest, MutatedRealTemplatesNeverCrash) {
  std::vector<std::string> sources;
  for (const char* f : {"qwen3.jinja", "llama3_1_instruct.jinja", "gpt_oss.jinja",
                        "mistral_instruct_v0_3.jinja", "gemma3_it.jinja"}) {
    sources.push_back(ReadFile(kFixtureDir + f));
    ASSERT_FALSE(sources.back().empty()) << f;
  }
  Json ctx = {{"messages",
               {{{"role", "system"}, {"content", "s"}},
                {{"role", "user"}, {"content", "u"}},
                {{"role", "assistant"}, {"content", "a"}},
                {{"role", "user"}, {"content", "\xff\xfe bad utf8 \xc3"}}}},
              {"add_generation_prompt", true},
              {"bos_token", "<s>"},
              {"tools", nullptr}};
  ChatTemplateOptions opts;
  opts.max_loop_iterations = 20000;
  opts.max_output_bytes = 1 << 20;
  uint64_t seed = 12345;
  auto rnd = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(seed >> 33);
  };
  const std::string alphabet = "{}%#-+()[]'\"|.,:~*/ \n\tifendforsetnotisin0123456789abc";
  int parsed = 0, rendered = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = sources[rnd() % sources.size()];
    int edits = 1 + rnd() % 4;
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t pos = rnd() % s.size();
      switch (rnd() % 4) {
        case 0: s.erase(pos, 1 + rnd() % 8); break;
        case 1: s.insert(pos, 1, alphabet[rnd() % alphabet.size()]); break;
        case 2: s[pos] = alphabet[rnd() % alphabet.size()]; break;
        case 3: s.resize(pos); break;
      }
    }
    auto t = ChatTemplate::Parse(s);
    if (!t.ok()) continue;
    ++parsed;
    t->set_options(opts);
    auto r = t->RenderJson(ctx);
    rendered += r.ok();
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rendered, 10);
}

TEST(ChatTemplateRobustnessTest, ConcurrentRendersShareOneTemplate) {
  auto t = ChatTemplate::Parse(ReadFile(kFixtureDir + "qwen2_5_instruct.jinja"));
  ASSERT_TRUE(t.ok());
  std::vector<ChatMessage> msgs = {{"user", "hello"}};
  auto want = t->Render(msgs, true, "", "<|im_end|>");
  ASSERT_TRUE(want.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        auto r = t->Render(msgs, true, "", "<|im_end|>");
        if (!r.ok() || *r != *want) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace brisk
