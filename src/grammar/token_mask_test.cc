// Token masks on the real vocabularies (SmolLM2's byte-level BPE, Gemma 3's
// SentencePiece with byte fallback) against the brute-force reference: for
// every state visited while walking an instance token by token, the trie
// walk (with its plain-string fast path) gives exactly {t : t's bytes
// advance a copy of the matcher}.
#include "grammar/token_mask.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "grammar/schema_compiler.h"
#include "model/gguf.h"
#include "util/test_support.h"

namespace brisk {
namespace {

const Tokenizer* LoadTokenizer(const std::string& path) {
  static auto* cache = new std::map<std::string, std::unique_ptr<Tokenizer>>();
  auto it = cache->find(path);
  if (it != cache->end()) return it->second.get();
  std::unique_ptr<Tokenizer> tok;
  if (std::filesystem::exists(path)) {
    auto gguf = GgufFile::Open(path);
    if (gguf.ok()) {
      auto t = Tokenizer::FromGguf(**gguf);
      if (t.ok()) tok = std::move(t).value();
    }
  }
  return cache->emplace(path, std::move(tok)).first->second.get();
}

std::string SmolPath() { return std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }
std::string GemmaPath() {
  if (const char* env = std::getenv("BRISK_GEMMA3_GGUF")) return env;
  return std::string(BRISK_MODEL_DIR) + "/gemma-3-270m-q4_k_m.gguf";
}

const char* kPersonSchema = R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":12},"bio":{"type":"string"},
    "age":{"type":"integer","minimum":0,"maximum":150},
    "score":{"type":"number"},"tags":{"type":"array","items":{"enum":["a b","c\"d"]}},
    "ok":{"type":"boolean"},"extra":{"type":["null","string"]}},
    "required":["name","bio","age"]})";
// Escapes, multi-byte UTF-8 (split across tokens by byte-level BPE), tokens
// spanning several JSON tokens ('":"', '","', '},'), numbers.
const char* kPersonInstance =
    "{\"name\":\"Zo\xc3\xab \xe2\x82\xac\xf0\x9f\x98\x80\",\"bio\":\"line\\none \\\"q\\\" "
    "\\u00e9 caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87\",\"age\":42,\"score\":-1.5e3,"
    "\"tags\":[\"a b\",\"c\\\"d\"],\"ok\":true,\"extra\":null}";

// Walks `instance` token by token; at each state the mask must equal the
// reference and hold the instance's next token (the end at the end).
void WalkAndCompare(const Tokenizer& tok, const CompiledSchema& schema, const std::string& instance,
                    int max_reference_checks) {
  auto trie = TokenTrie::Build(tok);
  TokenMasker masker(trie.get());
  GrammarMatcher m(&schema.grammar);
  const std::vector<int32_t> ids = tok.Encode(instance, false, false);
  ASSERT_EQ(tok.Decode(ids, true), instance);
  TokenBitmask mask, ref;
  int checks = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    masker.Compute(m, &mask);
    if (checks++ < max_reference_checks) {
      TokenMasker::ComputeReference(tok, m, &ref);
      ASSERT_EQ(mask, ref) << "state after " << i << " tokens";
    }
    if (i == ids.size()) {
      ASSERT_TRUE(m.CanEnd());
      ASSERT_TRUE(tok.eos_id().has_value());
      EXPECT_TRUE(MaskHas(mask, *tok.eos_id()));
      break;
    }
    EXPECT_TRUE(MaskHas(mask, ids[i])) << "token " << i << " '" << tok.TokenToPiece(ids[i]) << "'";
    ASSERT_TRUE(m.AdvanceBytes(tok.TokenToPiece(ids[i]))) << "token " << i;
    if (tok.eos_id()) {
      EXPECT_FALSE(MaskHas(mask, *tok.eos_id()));
    }
  }
}

TEST(TokenMaskTest, MatchesReferenceOnSmolLm2) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto schema = CompileJsonSchemaText(kPersonSchema);
  ASSERT_TRUE(schema.ok());
  WalkAndCompare(*tok, *schema, kPersonInstance, 1000);
}

TEST(TokenMaskTest, MatchesReferenceOnGemma3) {
  const Tokenizer* tok = LoadTokenizer(GemmaPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(GemmaPath());
  auto schema = CompileJsonSchemaText(kPersonSchema);
  ASSERT_TRUE(schema.ok());
  WalkAndCompare(*tok, *schema, kPersonInstance, 25);
}

TEST(TokenMaskTest, JsonObjectModeAndEndTokens) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  CompiledSchema any = CompileAnyJsonObject();
  WalkAndCompare(*tok, any, R"({"a":[1,2,{"b":"c"}],"d":{}})", 1000);
  // At the start only tokens beginning with '{' are allowed, and no end token.
  auto trie = TokenTrie::Build(*tok);
  TokenMasker masker(trie.get());
  GrammarMatcher m(&any.grammar);
  TokenBitmask mask;
  masker.Compute(m, &mask);
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    if (!MaskHas(mask, id)) continue;
    const std::string p = tok->TokenToPiece(id);
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p[0], '{') << id;
  }
}

TEST(TokenMaskTest, ListedAndExtraKeys) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto schema = CompileJsonSchemaText(
      R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"boolean"}},
          "additionalProperties":{"type":"string","maxLength":4}})");
  ASSERT_TRUE(schema.ok());
  WalkAndCompare(*tok, *schema, R"({"a":1,"abc":"x","b\"q":"yy"})", 1000);
  WalkAndCompare(*tok, *schema, R"({"ab":true,"name":"\u0001"})", 1000);
}

TEST(TokenMaskTest, LengthBoundedStringsUseCountedPlainMasks) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto schema = CompileJsonSchemaText(
      R"({"type":"object","properties":{"s":{"type":"string","minLength":3,"maxLength":5}},
          "required":["s"]})");
  ASSERT_TRUE(schema.ok());
  WalkAndCompare(*tok, *schema, R"({"s":"abcd"})", 1000);
  WalkAndCompare(*tok, *schema, "{\"s\":\"\xc3\xa9t\xc3\xa9\"}", 1000);
}

TEST(TokenMaskTest, PatternStringsWalkTheirDfa) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  // Strings with a pattern or format: the DFA walk, tokens that close the
  // string and go on (",", "\"}"), escapes, multi-byte characters, a
  // maxLength next to the pattern.
  auto schema = CompileJsonSchemaText(
      R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^\\d{5}$"},
          "note":{"type":"string","pattern":"q","maxLength":12},
          "when":{"type":"string","format":"date-time"},"n":{"type":"integer"}},
          "required":["zip","note","when","n"]})");
  ASSERT_TRUE(schema.ok());
  ASSERT_TRUE(schema->unenforced.empty());
  WalkAndCompare(*tok, *schema,
                 "{\"zip\":\"12345\",\"note\":\"a \\\"q\\\" \xc3\xa9\\n\","
                 "\"when\":\"2024-02-29T10:20:30.5Z\",\"n\":7}",
                 1000);
}

}  // namespace
}  // namespace brisk
