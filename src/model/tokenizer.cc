#include "model/tokenizer.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <utility>

#include "model/gguf.h"
#include "model/tokenizer_bpe.h"
#include "model/tokenizer_pre_split.h"
#include "model/tokenizer_spm.h"

namespace brisk {
namespace {

// Token texts that end generation in the chat formats we know (the list
// llama.cpp uses to fill its end-of-generation set).
constexpr std::string_view kEogNames[] = {
    "<|eot_id|>",    "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",        "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>",   "_<EOT>",     "<|end_of_text|>", "<end_of_utterance>",
};

// Pre-tokenizers whose HF BPE model sets ignore_merges (a piece that is a
// whole token is taken as is, even if merges would not build it).
bool IgnoresMerges(std::string_view pre) {
  return pre == "llama3" || pre == "llama-bpe" || pre == "llama-v3";
}

const std::string kEmpty;

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Expected<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerConfig config) {
  const auto n = static_cast<int64_t>(config.tokens.size());
  if (config.model != "gpt2" && config.model != "llama") {
    return Unimplemented("unsupported tokenizer model '{}' (supported: gpt2, llama)", config.model);
  }
  if (n == 0) return InvalidArgument("tokenizer has no tokens");
  if (n > INT32_MAX) return InvalidArgument("tokenizer has {} tokens, too many", n);
  if (!config.scores.empty() && static_cast<int64_t>(config.scores.size()) != n) {
    return InvalidArgument("tokenizer has {} scores for {} tokens", config.scores.size(), n);
  }
  if (!config.token_types.empty() && static_cast<int64_t>(config.token_types.size()) != n) {
    return InvalidArgument("tokenizer has {} token types for {} tokens", config.token_types.size(),
                           n);
  }
  using NamedId = std::pair<const char*, std::optional<int32_t>>;
  for (const auto& [name, id] : std::initializer_list<NamedId>{{"bos", config.bos_id},
                                                               {"eos", config.eos_id},
                                                               {"unk", config.unk_id},
                                                               {"pad", config.pad_id},
                                                               {"eot", config.eot_id},
                                                               {"eom", config.eom_id}}) {
    if (id && (*id < 0 || *id >= n)) {
      return InvalidArgument("tokenizer {} id {} is outside the vocab of {}", name, *id, n);
    }
  }
  if (config.add_bos && !config.bos_id) return InvalidArgument("add_bos set but no bos id");
  if (config.add_eos && !config.eos_id) return InvalidArgument("add_eos set but no eos id");

  std::unique_ptr<Tokenizer> t(new Tokenizer());
  Vocab& v = t->vocab_;
  v.tokens = std::move(config.tokens);
  v.scores = std::move(config.scores);
  v.scores.resize(n, 0.0f);
  v.types.assign(n, TokenType::kNormal);
  for (int64_t i = 0; i < static_cast<int64_t>(config.token_types.size()); ++i) {
    const int32_t ty = config.token_types[i];
    if (ty < 0 || ty > static_cast<int32_t>(TokenType::kByte)) {
      return InvalidArgument("token {} has unknown type {}", i, ty);
    }
    v.types[i] = static_cast<TokenType>(ty);
  }
  config.token_types.clear();
  v.BuildIndex();

  const int32_t unk = config.unk_id.value_or(-1);
  t->spm_ = config.model == "llama";
  if (t->spm_) {
    t->spm_bpe_ = std::make_unique<SentencePieceBpe>(&t->vocab_, unk);
  } else {
    ASSIGN_OR_RETURN(PreSplitter ps, PreSplitter::Create(config.pre));
    t->pre_split_ = std::make_unique<PreSplitter>(std::move(ps));
    ASSIGN_OR_RETURN(ByteLevelBpe bpe,
                     ByteLevelBpe::Create(&t->vocab_, config.merges, IgnoresMerges(config.pre)));
    t->bpe_ = std::make_unique<ByteLevelBpe>(std::move(bpe));
  }
  config.merges.clear();
  config.merges.shrink_to_fit();

  std::map<size_t, std::unordered_map<std::string_view, int32_t>, std::greater<>> by_len;
  for (int32_t id = 0; id < v.size(); ++id) {
    const TokenType ty = v.types[id];
    const std::string& text = v.tokens[id];
    if (text.empty()) continue;
    if (ty == TokenType::kControl || ty == TokenType::kUserDefined || ty == TokenType::kUnknown) {
      t->special_first_byte_[static_cast<uint8_t>(text[0])] = true;
      by_len[text.size()].emplace(text, id);  // duplicates: lowest id wins
    }
  }
  for (auto& [len, ids] : by_len) t->special_buckets_.push_back({len, std::move(ids)});

  for (auto id : {config.eos_id, config.eot_id, config.eom_id}) {
    if (id) t->eog_ids_.push_back(*id);
  }
  for (std::string_view name : kEogNames) {
    if (auto id = v.Find(name)) t->eog_ids_.push_back(*id);
  }
  std::sort(t->eog_ids_.begin(), t->eog_ids_.end());
  t->eog_ids_.erase(std::unique(t->eog_ids_.begin(), t->eog_ids_.end()), t->eog_ids_.end());

  t->config_ = std::move(config);
  return t;
}

Expected<TokenizerConfig> Tokenizer::ConfigFromGguf(const GgufFile& gguf) {
  TokenizerConfig c;
  ASSIGN_OR_RETURN(c.model, gguf.GetString("tokenizer.ggml.model"));
  ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                   gguf.GetStringArray("tokenizer.ggml.tokens"));
  c.tokens = *tokens;
  const auto n = static_cast<int64_t>(c.tokens.size());
  ASSIGN_OR_RETURN(c.pre, gguf.GetStringOr("tokenizer.ggml.pre", "default"));
  if (gguf.Find("tokenizer.ggml.scores")) {
    ASSIGN_OR_RETURN(c.scores, gguf.GetFloatArray("tokenizer.ggml.scores"));
  }
  if (gguf.Find("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> types, gguf.GetIntArray("tokenizer.ggml.token_type"));
    c.token_types.reserve(types.size());
    for (int64_t ty : types) {
      c.token_types.push_back(static_cast<int32_t>(std::clamp<int64_t>(ty, -1, 1000)));
    }
  }
  if (gguf.Find("tokenizer.ggml.merges")) {
    ASSIGN_OR_RETURN(const std::vector<std::string>* merges,
                     gguf.GetStringArray("tokenizer.ggml.merges"));
    c.merges = *merges;
  }
  const bool spm = c.model == "llama";
  // Ids: absent keys take llama.cpp's defaults for SentencePiece vocabs;
  // values outside the vocab (-1 written as uint32) mean "none".
  auto id = [&](std::string_view key, int64_t def) -> Expected<std::optional<int32_t>> {
    ASSIGN_OR_RETURN(int64_t v, gguf.GetIntOr(key, def));
    if (v < 0 || v >= n) return std::optional<int32_t>();
    return std::optional<int32_t>(static_cast<int32_t>(v));
  };
  ASSIGN_OR_RETURN(c.bos_id, id("tokenizer.ggml.bos_token_id", spm ? 1 : -1));
  ASSIGN_OR_RETURN(c.eos_id, id("tokenizer.ggml.eos_token_id", spm ? 2 : -1));
  ASSIGN_OR_RETURN(c.unk_id, id("tokenizer.ggml.unknown_token_id", spm ? 0 : -1));
  ASSIGN_OR_RETURN(c.pad_id, id("tokenizer.ggml.padding_token_id", -1));
  ASSIGN_OR_RETURN(c.eot_id, id("tokenizer.ggml.eot_token_id", -1));
  ASSIGN_OR_RETURN(c.eom_id, id("tokenizer.ggml.eom_token_id", -1));
  ASSIGN_OR_RETURN(c.add_bos, gguf.GetBoolOr("tokenizer.ggml.add_bos_token", spm));
  ASSIGN_OR_RETURN(c.add_eos, gguf.GetBoolOr("tokenizer.ggml.add_eos_token", false));
  ASSIGN_OR_RETURN(c.add_space_prefix, gguf.GetBoolOr("tokenizer.ggml.add_space_prefix", spm));
  if (c.add_bos && !c.bos_id) c.add_bos = false;
  if (c.add_eos && !c.eos_id) c.add_eos = false;
  return c;
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& gguf) {
  auto config = ConfigFromGguf(gguf);
  if (!config.ok()) return config.status().WithContext("reading tokenizer from " + gguf.path());
  auto t = Create(std::move(config).value());
  if (!t.ok()) return t.status().WithContext("building tokenizer from " + gguf.path());
  return t;
}

int32_t Tokenizer::MatchSpecial(std::string_view text, size_t pos, size_t max_control_len,
                                size_t* len) const {
  const std::string_view rest = text.substr(pos);
  for (const SpecialBucket& b : special_buckets_) {
    if (b.len > rest.size()) continue;
    auto it = b.ids.find(rest.substr(0, b.len));
    if (it == b.ids.end()) continue;
    if (b.len > max_control_len && vocab_.types[it->second] != TokenType::kUserDefined) continue;
    *len = b.len;
    return it->second;
  }
  return -1;
}

void Tokenizer::EncodeFragment(std::string_view text, bool prefix_space,
                               std::vector<int32_t>* out) const {
  if (spm_) {
    std::string escaped = SentencePieceBpe::EscapeSpaces(prefix_space ? " " : "");
    escaped += SentencePieceBpe::EscapeSpaces(text);
    spm_bpe_->Encode(escaped, out);
    return;
  }
  std::vector<std::string_view> pieces;
  pre_split_->Split(text, &pieces);
  for (std::string_view p : pieces) bpe_->EncodePiece(p, out);
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  return EncodeImpl(text, add_special, parse_special, {});
}

std::vector<int32_t> Tokenizer::EncodeWithPlainRanges(std::string_view text, bool add_special,
                                                      std::span<const TextRange> plain) const {
  // Normalise: clip to the text, drop empty ranges, sort, merge overlaps.
  std::vector<TextRange> ranges;
  ranges.reserve(plain.size());
  for (TextRange r : plain) {
    r.end = std::min(r.end, text.size());
    if (r.begin < r.end) ranges.push_back(r);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const TextRange& a, const TextRange& b) { return a.begin < b.begin; });
  size_t n = 0;
  for (const TextRange& r : ranges) {
    if (n > 0 && r.begin <= ranges[n - 1].end) {
      ranges[n - 1].end = std::max(ranges[n - 1].end, r.end);
    } else {
      ranges[n++] = r;
    }
  }
  ranges.resize(n);
  return EncodeImpl(text, add_special, /*parse_special=*/true, ranges);
}

std::vector<int32_t> Tokenizer::EncodeImpl(std::string_view text, bool add_special,
                                           bool parse_special,
                                           std::span<const TextRange> plain) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && config_.add_bos) out.push_back(*config_.bos_id);
  // SentencePiece vocabs get a space in front of the text and after each
  // special token (llama.cpp's behaviour for add_space_prefix).
  bool prev_special = true;
  size_t frag = 0;  // start of the pending raw-text fragment
  auto flush = [&](size_t end) {
    if (end == frag) return;
    EncodeFragment(text.substr(frag, end - frag), spm_ && config_.add_space_prefix && prev_special,
                   &out);
    prev_special = false;
  };
  size_t next_plain = 0;  // first range that does not end at or before pos
  for (size_t pos = 0; pos < text.size();) {
    if (!special_first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    // A control token may reach up to the next plain range, not into it.
    size_t max_control_len = parse_special ? text.size() : 0;
    while (next_plain < plain.size() && plain[next_plain].end <= pos) ++next_plain;
    if (parse_special && next_plain < plain.size()) {
      const size_t begin = plain[next_plain].begin;
      max_control_len = begin <= pos ? 0 : begin - pos;
    }
    size_t len = 0;
    const int32_t id = MatchSpecial(text, pos, max_control_len, &len);
    if (id < 0) {
      ++pos;
      continue;
    }
    flush(pos);
    out.push_back(id);
    prev_special = true;
    pos += len;
    frag = pos;
  }
  flush(text.size());
  if (add_special && config_.add_eos) out.push_back(*config_.eos_id);
  return out;
}

std::string Tokenizer::TokenToPiece(int32_t id, bool render_special) const {
  if (!vocab_.Valid(id)) return {};
  switch (vocab_.types[id]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused: return render_special ? vocab_.tokens[id] : std::string();
    case TokenType::kUserDefined: return vocab_.tokens[id];
    default: break;
  }
  return spm_ ? spm_bpe_->DecodeToken(id) : ByteLevelBpe::DecodeTokenText(vocab_.tokens[id]);
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  bool strip = spm_ && config_.add_space_prefix;
  for (int32_t id : ids) {
    std::string piece = TokenToPiece(id, !skip_special);
    if (piece.empty()) continue;
    if (strip && piece[0] == ' ') piece.erase(0, 1);
    strip = false;
    out += piece;
  }
  return out;
}

bool Tokenizer::IsEog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

bool Tokenizer::IsControl(int32_t id) const {
  if (!vocab_.Valid(id)) return false;
  const TokenType ty = vocab_.types[id];
  return ty == TokenType::kControl || ty == TokenType::kUnknown || ty == TokenType::kUnused;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return vocab_.Valid(id) ? vocab_.types[id] : TokenType::kUndefined;
}

const std::string& Tokenizer::TokenText(int32_t id) const {
  return vocab_.Valid(id) ? vocab_.tokens[id] : kEmpty;
}

}  // namespace brisk
