#include "model/tokenizer_pre_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <array>

namespace brisk {
namespace {

// GPT-2 (tiktoken r50k): contractions, letters, numbers, other, whitespace.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3 (tiktoken cl100k): case-insensitive contractions, 1-3 digit groups.
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but single digits.
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreEntry {
  std::string_view name;
  std::vector<std::string_view> patterns;
};

// Pre-tokenizer names and their regex sequences, as llama.cpp maps them
// (llama-vocab.cpp, llm_tokenizer_bpe).
const std::vector<PreEntry>& PreTable() {
  static const auto* table = new std::vector<PreEntry>{
      {"gpt2", {kGpt2}},
      {"mpt", {kGpt2}},
      {"olmo", {kGpt2}},
      {"jais", {kGpt2}},
      // Individual digits first, then GPT-2 (HF: Digits(individual_digits) + ByteLevel).
      {"smollm", {R"(\p{N})", kGpt2}},
      {"starcoder", {R"(\p{N})", kGpt2}},
      {"refact", {R"(\p{N})", kGpt2}},
      {"command-r", {R"(\p{N})", kGpt2}},
      {"codeshell", {R"(\p{N})", kGpt2}},
      {"exaone", {R"(\p{N})", kGpt2}},
      {"minerva-7b", {R"(\p{N})", kGpt2}},
      {"llama3", {kLlama3}},
      {"llama-bpe", {kLlama3}},
      {"llama-v3", {kLlama3}},
      {"dbrx", {kLlama3}},
      {"smaug-bpe", {kLlama3}},
      {"qwen2", {kQwen2}},
      {"stablelm2", {kQwen2}},
      // llama.cpp's fallback for BPE vocabs without a known pre-tokenizer.
      {"default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}},
  };
  return *table;
}

}  // namespace

struct PreSplitter::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreSplitter::PreSplitter(PreSplitter&&) noexcept = default;
PreSplitter& PreSplitter::operator=(PreSplitter&&) noexcept = default;
PreSplitter::~PreSplitter() = default;

std::vector<std::string_view> PreSplitter::KnownNames() {
  std::vector<std::string_view> names;
  for (const auto& e : PreTable()) names.push_back(e.name);
  return names;
}

Expected<PreSplitter> PreSplitter::Create(std::string_view pre) {
  for (const auto& e : PreTable()) {
    if (e.name != pre) continue;
    std::vector<std::string> patterns(e.patterns.begin(), e.patterns.end());
    return FromPatterns(patterns);
  }
  return Unimplemented("unsupported pre-tokenizer (tokenizer.ggml.pre) '{}'; supported: {}", pre,
                       fmt::join(KnownNames(), ", "));
}

Expected<PreSplitter> PreSplitter::FromPatterns(const std::vector<std::string>& patterns) {
  PreSplitter s;
  for (const auto& p : patterns) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // MATCH_INVALID_UTF: ill-formed input is legal and simply never matches;
    // it also skips the per-call UTF check (which would be O(n) per match).
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_off, nullptr);
    if (code == nullptr) {
      std::array<PCRE2_UCHAR, 256> msg{};
      pcre2_get_error_message(err, msg.data(), msg.size());
      return InvalidArgument("pre-tokenizer regex '{}' at offset {}: {}", p, err_off,
                             reinterpret_cast<const char*>(msg.data()));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: interpreter if unavailable
    auto r = std::make_unique<Regex>();
    r->code = code;
    s.regexes_.push_back(std::move(r));
  }
  return s;
}

void PreSplitter::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  std::vector<std::string_view> cur{text}, next;
  for (const auto& re : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    next.clear();
    for (std::string_view piece : cur) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t pos = 0, gap = 0;  // next search offset, start of unmatched text
      while (pos < piece.size()) {
        int rc = pcre2_match(re->code, subject, piece.size(), pos, 0, md, nullptr);
        if (rc < 0) break;  // no match (or a resource limit): rest is one gap
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) {  // empty match: step past one character
          pos = ms + 1;
          while (pos < piece.size() && (static_cast<uint8_t>(piece[pos]) & 0xC0) == 0x80) ++pos;
          continue;
        }
        if (ms > gap) next.push_back(piece.substr(gap, ms - gap));
        next.push_back(piece.substr(ms, me - ms));
        gap = pos = me;
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pcre2_match_data_free(md);
    cur.swap(next);
  }
  pieces->insert(pieces->end(), cur.begin(), cur.end());
}

}  // namespace brisk
