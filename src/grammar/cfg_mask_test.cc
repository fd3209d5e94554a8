// CfgTokenMasker on the real vocabularies (SmolLM2's byte-level BPE, Gemma
// 3's SentencePiece with byte fallback) against the brute-force reference,
// at every state of a walk through an accepted text, plus a timing loop
// (mask p50 / p99 at SmolLM2's 49k vocabulary, printed).
#include "grammar/cfg_mask.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "engine/token_vocab.h"
#include "grammar/gbnf.h"
#include "grammar/regex_grammar.h"
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

constexpr const char* kArith = R"G(root ::= expr
expr ::= term (ws [-+] ws term)*
term ::= factor (ws [*/] ws factor)*
factor ::= [0-9]+ ("." [0-9]+)? | "(" ws expr ws ")"
ws ::= " "?
)G";
constexpr const char* kArithText = "(12 + 3.5) * 7 - (4/2)";

constexpr const char* kNameRegex =
    R"(Name: [A-Z][a-z\u00e0-\u00ff]+( [A-Z][a-z]+)?, Age: \d{1,3}, Town: [^\n,]{1,20})";
const char* const kNameText =
    "Name: Zo\xc3\xab Smith, Age: 42, Town: K\xc3\xb8"
    "benhavn";

// Walks `text` token by token; at each state the mask must equal the
// reference and hold the text's next token (an end token at the end).
void WalkAndCompare(const Tokenizer& tok, const std::shared_ptr<const CfgGrammar>& g,
                    const std::string& text, int max_reference_checks) {
  auto trie = TokenTrie::Build(TokenVocabOf(tok));
  CfgTokenMasker masker(trie.get());
  CfgMatcher m(g);
  const std::vector<int32_t> ids = tok.Encode(text, false, false);
  ASSERT_EQ(tok.Decode(ids, true), text);
  TokenBitmask mask, ref;
  int checks = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    const size_t sets = m.num_sets(), items = m.num_items();
    masker.Compute(m, &mask);
    ASSERT_EQ(m.num_sets(), sets);  // the walk leaves the matcher as it was
    ASSERT_EQ(m.num_items(), items);
    if (checks++ < max_reference_checks) {
      CfgTokenMasker::ComputeReference(TokenVocabOf(tok), m, &ref);
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
  }
}

TEST(CfgMaskTest, GbnfMatchesReferenceOnSmolLm2) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto g = CompileGbnf(kArith);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  WalkAndCompare(*tok, *g, kArithText, 1000);
}

TEST(CfgMaskTest, RegexMatchesReferenceOnSmolLm2) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto g = CompileRegex(kNameRegex);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  WalkAndCompare(*tok, *g, kNameText, 1000);
}

TEST(CfgMaskTest, ChoiceMatchesReferenceOnSmolLm2) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto g = CompileChoice({"positive", "negative", "neutral", "mixed feelings"});
  ASSERT_TRUE(g.ok());
  WalkAndCompare(*tok, *g, "mixed feelings", 1000);
  WalkAndCompare(*tok, *g, "negative", 1000);
}

TEST(CfgMaskTest, MatchesReferenceOnGemma3) {
  const Tokenizer* tok = LoadTokenizer(GemmaPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(GemmaPath());
  auto arith = CompileGbnf(kArith);
  ASSERT_TRUE(arith.ok());
  WalkAndCompare(*tok, *arith, kArithText, 6);
  auto name = CompileRegex(kNameRegex);
  ASSERT_TRUE(name.ok());
  WalkAndCompare(*tok, *name, kNameText, 6);
}

// Mask time at the 49k vocabulary, one core: p50 / p99 over every state of
// the walk, repeated. Printed for BENCHMARKS-style reporting; the bound
// only catches a pathological regression.
void TimeMasks(const Tokenizer& tok, const std::shared_ptr<const CfgGrammar>& g,
               const std::string& text, const char* label) {
  auto trie = TokenTrie::Build(TokenVocabOf(tok));
  CfgTokenMasker masker(trie.get());
  const std::vector<int32_t> ids = tok.Encode(text, false, false);
  std::vector<double> us;
  size_t max_visited = 0;
  TokenBitmask mask;
  for (int rep = 0; rep < 20; ++rep) {
    CfgMatcher m(g);
    for (size_t i = 0; i <= ids.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      masker.Compute(m, &mask);
      max_visited = std::max(max_visited, masker.last_visited());
      us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      if (i < ids.size()) {
        ASSERT_TRUE(m.AdvanceBytes(tok.TokenToPiece(ids[i])));
      }
    }
  }
  std::sort(us.begin(), us.end());
  const double p50 = us[us.size() / 2], p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  std::printf(
      "[ mask ] %s: %zu masks, p50 %.1f us, p99 %.1f us, max %.1f us (trie nodes %zu, "
      "most visited %zu)\n",
      label, us.size(), p50, p99, us.back(), trie->num_nodes(), max_visited);
  EXPECT_LT(p50, 100000.0);
}

TEST(CfgMaskTest, MaskTimeAt49kVocab) {
  const Tokenizer* tok = LoadTokenizer(SmolPath());
  if (!tok) BRISK_SKIP_OR_FAIL_MISSING(SmolPath());
  auto arith = CompileGbnf(kArith);
  ASSERT_TRUE(arith.ok());
  TimeMasks(*tok, *arith, kArithText, "gbnf arithmetic");
  auto name = CompileRegex(kNameRegex);
  ASSERT_TRUE(name.ok());
  TimeMasks(*tok, *name, kNameText, "regex name/age/town");
  auto date = CompileRegex(R"(\d{4}-\d{2}-\d{2})");
  ASSERT_TRUE(date.ok());
  TimeMasks(*tok, *date, "2024-12-31", "regex date");
}

}  // namespace
}  // namespace brisk
