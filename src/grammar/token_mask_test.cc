// Token masks on the real vocabularies (SmolLM2's byte-level BPE, Gemma 3's
// SentencePiece with byte fallback) against the brute-force reference: for
// every state visited while walking an instance token by token, the trie
// walk (with its plain-string fast path) gives exactly {t : t's bytes
// advance a copy of the matcher}.
#include "grammar/token_mask.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "engine/token_vocab.h"
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
// `masker` (optional) is kept across walks, with its caches.
void WalkAndCompare(const Tokenizer& tok, const CompiledSchema& schema, const std::string& instance,
                    int max_reference_checks, TokenMasker* kept = nullptr) {
  std::unique_ptr<TokenTrie> trie;
  std::optional<TokenMasker> own;
  if (!kept) own.emplace((trie = TokenTrie::Build(TokenVocabOf(tok))).get());
  TokenMasker& masker = kept ? *kept : *own;
  GrammarMatcher m(&schema.grammar);
  const std::vector<int32_t> ids = tok.Encode(instance, false, false);
  ASSERT_EQ(tok.Decode(ids, true), instance);
  TokenBitmask mask, ref;
  int checks = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    masker.Compute(m, &mask);
    if (checks++ < max_reference_checks) {
      TokenMasker::ComputeReference(TokenVocabOf(tok), m, &ref);
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

// A bare sequence (ConstraintSpec::separator: several tool calls under
// tool_choice "auto"): the separator's bytes outside any value, tokens that
// span the end of a call and the separator, and the end allowed after each
// call and after each call's closing tag (separator_end).
TEST(TokenMaskTest, BareSequenceOfCalls) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto schema = CompileJsonSchemaText(R"({"type":"object","properties":{
      "name":{"const":"get_weather"},"arguments":{"type":"object","properties":{
      "city":{"type":"string"}},"required":["city"]}},"required":["name","arguments"]})");
  ASSERT_TRUE(schema.ok());
  ArraySpec seq;
  seq.items = schema->grammar.root;
  seq.min_items = 1;
  seq.separator = "\n</tool_call>\n<tool_call>\n";
  seq.separator_end = 13;  // "\n</tool_call>"
  schema->grammar.root = schema->grammar.AddArray(std::move(seq));
  const std::string call = R"({"name":"get_weather","arguments":{"city":"Paris"}})";
  const std::string text = call + "\n</tool_call>\n<tool_call>\n" + call + "\n</tool_call>";
  auto trie = TokenTrie::Build(TokenVocabOf(*tok));
  TokenMasker masker(trie.get());
  GrammarMatcher m(&schema->grammar);
  const std::vector<int32_t> ids = tok->Encode(text, false, false);
  ASSERT_EQ(tok->Decode(ids, true), text);
  TokenBitmask mask, ref;
  int ends = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    masker.Compute(m, &mask);
    TokenMasker::ComputeReference(TokenVocabOf(*tok), m, &ref);
    ASSERT_EQ(mask, ref) << "state after " << i << " tokens";
    ASSERT_EQ(MaskHas(mask, *tok->eos_id()), m.CanEnd()) << i;
    ends += m.CanEnd();
    if (i == ids.size()) break;
    EXPECT_TRUE(MaskHas(mask, ids[i])) << "token " << i << " '" << tok->TokenToPiece(ids[i]) << "'";
    ASSERT_TRUE(m.AdvanceBytes(tok->TokenToPiece(ids[i]))) << "token " << i;
  }
  EXPECT_GE(ends, 2);  // after the calls and the closing tags the tokens end at
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Finished());  // another separator may follow
}

TEST(TokenMaskTest, JsonObjectModeAndEndTokens) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  CompiledSchema any = CompileAnyJsonObject();
  WalkAndCompare(*tok, any, R"({"a":[1,2,{"b":"c"}],"d":{}})", 1000);
  // At the start only tokens beginning with '{' are allowed, and no end token.
  auto trie = TokenTrie::Build(TokenVocabOf(*tok));
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

// A budget past the precomputed plain masks (24 code points) but short of
// the vocabulary's longest plain tokens (SmolLM2 has runs of 64 '-' or '#'):
// only the long tokens that fit are allowed (found by the schema_mask_fuzz
// target: maxLength 40 allowed a 64-character token after 4 characters).
TEST(TokenMaskTest, BudgetsBetweenThePlainMasksAndTheLongestTokens) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  for (int max_len : {25, 30, 40, 63, 64, 65, 100}) {
    auto schema = CompileJsonSchemaText(
        R"({"type":"object","properties":{"t":{"type":"string","maxLength":)" +
        std::to_string(max_len) + R"(}},"required":["t"]})");
    ASSERT_TRUE(schema.ok());
    WalkAndCompare(*tok, *schema, R"({"t":"one two"})", 1000);
    WalkAndCompare(*tok, *schema, R"({"t":""})", 1000);
  }
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

TEST(TokenMaskTest, PatternPropertyKeys) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  // Keys that follow a pattern: no plain-string fast path for them where no
  // other extra key is allowed; with additionalProperties there is.
  auto only = CompileJsonSchemaText(R"({"type":"object","properties":{"id":{"type":"integer"}},
      "patternProperties":{"^[a-z]+_[0-9]+$":{"type":"string","maxLength":6}},
      "additionalProperties":false})");
  ASSERT_TRUE(only.ok());
  ASSERT_TRUE(only->unenforced.empty());
  WalkAndCompare(*tok, *only, R"({"id":7,"alpha_1":"x","beta_22":"long s"})", 1000);
  auto with_rest = CompileJsonSchemaText(R"({"type":"object",
      "patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":{"type":"boolean"}})");
  ASSERT_TRUE(with_rest.ok());
  WalkAndCompare(*tok, *with_rest, R"({"n_count":3,"flag":true,"n_x":-1})", 1000);
}

TEST(TokenMaskTest, PropertyCountBounds) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  // '}' waits for minProperties, ',' stops at maxProperties (tokens such as
  // '},' and '","' carry both), extra and pattern keys count too.
  for (const auto& [schema_text, instance] : std::vector<std::pair<const char*, const char*>>{
           {R"({"type":"object","additionalProperties":{"type":"string"},"minProperties":1,
               "maxProperties":2})",
            R"({"alpha":"x","beta":"y"})"},
           {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
               "c":{"type":"integer"}},"minProperties":2,"maxProperties":2})",
            R"({"a":1,"c":3})"},
           {R"({"type":"object","properties":{"id":{"type":"integer"}},
               "patternProperties":{"^[a-z]+_[0-9]+$":{"type":"string"}},
               "additionalProperties":false,"minProperties":1,"maxProperties":2})",
            R"({"id":7,"alpha_1":"x"})"}}) {
    auto schema = CompileJsonSchemaText(schema_text);
    ASSERT_TRUE(schema.ok());
    ASSERT_TRUE(schema->unenforced.empty()) << schema->unenforced[0].ToString();
    WalkAndCompare(*tok, *schema, instance, 1000);
  }
}

TEST(TokenMaskTest, PatternWalksAreCachedPerDfaState) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  // Free text under a word-count pattern: a DFA state recurs only when the
  // text does (each word moves to the next count), so most hits come from
  // the second walk, as from a later request with the same grammar. "short" has a maxLength
  // that binds within a token near its end (no cache there); two strings
  // share one pattern text but are separate DFAs (uids).
  auto schema = CompileJsonSchemaText(
      R"({"type":"object","properties":{
          "text":{"type":"string","pattern":"^(?:\\S+\\s+){0,40}\\S+$","maxLength":2000},
          "short":{"type":"string","pattern":"^(?:\\S+\\s+){0,40}\\S+$","maxLength":24},
          "n":{"type":"integer"}},"required":["text","short","n"]})");
  ASSERT_TRUE(schema.ok());
  ASSERT_TRUE(schema->unenforced.empty());
  auto trie = TokenTrie::Build(TokenVocabOf(*tok));
  TokenMasker masker(trie.get());
  const std::string instance =
      "{\"text\":\"the cat sat on the mat and the cat sat on the hat, \\\"quoted\\\" "
      "caf\xc3\xa9 the end\",\"short\":\"one two three four five\",\"n\":3}";
  WalkAndCompare(*tok, *schema, instance, 1000, &masker);
  const size_t hits = masker.pattern_cache_hits();
  EXPECT_GT(hits, 0u);
  // A second walk over the same grammar is answered from the cache again,
  // and a fresh grammar with the same text does not reuse its entries.
  WalkAndCompare(*tok, *schema, instance, 1000, &masker);
  EXPECT_GT(masker.pattern_cache_hits(), 2 * hits + 10);
  auto again = CompileJsonSchemaText(R"({"type":"string",
      "pattern":"^(?:\\S+\\s+){0,40}\\S+$"})");
  ASSERT_TRUE(again.ok());
  WalkAndCompare(*tok, *again, "\"a b c\"", 1000, &masker);
}

TEST(TokenMaskTest, StringsInEveryThreadOfAUnionUseThePlainMask) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  // Objects that all start {"key":" keep several threads alive inside the
  // string; the plain-token mask (the largest budget) still applies.
  auto schema = CompileJsonSchemaText(R"({"anyOf":[
      {"type":"object","properties":{"key":{"type":"string","maxLength":3},"a":{"type":"integer"}},
       "required":["key","a"]},
      {"type":"object","properties":{"key":{"type":"string"},"b":{"type":"boolean"}},
       "required":["key","b"]},
      {"type":"object","properties":{"key":{"type":"string","maxLength":8},"c":{"type":"null"}},
       "required":["key","c"]}]})");
  ASSERT_TRUE(schema.ok());
  ASSERT_TRUE(schema->unenforced.empty());
  WalkAndCompare(*tok, *schema, R"({"key":"ab","a":1})", 1000);
  WalkAndCompare(*tok, *schema, R"({"key":"a longer \"value\" here","b":true})", 1000);
  WalkAndCompare(*tok, *schema, R"({"key":"seven c","c":null})", 1000);
  auto trie = TokenTrie::Build(TokenVocabOf(*tok));
  TokenMasker masker(trie.get());
  GrammarMatcher m(&schema->grammar);
  ASSERT_TRUE(m.AdvanceBytes(R"({"key":"x)"));
  ASSERT_GT(m.num_threads(), 1u);
  EXPECT_EQ(m.PlainStringBudget(), kUnbounded);
  TokenBitmask mask;
  masker.Compute(m, &mask);
  // Only the paths to tokens with a quote, backslash or control byte are
  // walked, not the whole trie.
  EXPECT_LT(masker.last_visited(), trie->num_nodes() / 4);
}

TEST(TokenMaskTest, PatternStringsInSeveralThreads) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  // Two object schemas that both start {"id":" with different patterns
  // (and a recursive one, as a taxonomy tree): each thread's DFA walk gives
  // the tokens inside the string; the tokens that close it go through the
  // whole matcher.
  auto schema = CompileJsonSchemaText(R"({"$defs":{
      "leaf":{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z_]*$"},
              "v":{"type":"string","pattern":"^AV:[NL]/C:[LH]$"}},"required":["id","v"],
              "additionalProperties":false},
      "node":{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9 ]*$"},
              "children":{"type":"array","items":{"anyOf":[{"$ref":"#/$defs/node"},
                                                           {"$ref":"#/$defs/leaf"}]}}},
              "required":["id","children"],"additionalProperties":false}},
      "type":"array","items":{"anyOf":[{"$ref":"#/$defs/node"},{"$ref":"#/$defs/leaf"}]}})");
  ASSERT_TRUE(schema.ok());
  ASSERT_TRUE(schema->unenforced.empty());
  WalkAndCompare(*tok, *schema,
                 R"([{"id":"webapp","children":[{"id":"xss_stored","v":"AV:N/C:H"},)"
                 R"({"id":"csrf 2","children":[]}]},{"id":"local","v":"AV:L/C:L"}])",
                 1000);
  auto trie = TokenTrie::Build(TokenVocabOf(*tok));
  TokenMasker masker(trie.get());
  GrammarMatcher m(&schema->grammar);
  ASSERT_TRUE(m.AdvanceBytes(R"([{"id":"ab)"));
  ASSERT_GT(m.num_threads(), 1u);
  TokenBitmask mask, ref;
  masker.Compute(m, &mask);
  TokenMasker::ComputeReference(TokenVocabOf(*tok), m, &ref);
  EXPECT_EQ(mask, ref);
  EXPECT_LT(masker.last_visited(), trie->num_nodes());
}

}  // namespace
}  // namespace brisk
