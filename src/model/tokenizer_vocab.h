// The token table shared by the tokenizer's encoders: id -> text, score and
// type, and text -> id. Plain data, built once at load and read-only after.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brisk {

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <|im_start|>, <s>: matched in text only when asked
  kUserDefined = 4,  // added tokens: always matched as whole strings
  kUnused = 5,
  kByte = 6,  // SentencePiece byte fallback <0xXX>
};

struct Vocab {
  std::vector<std::string> tokens;  // as stored in the model (GPT-2 byte map / ▁)
  std::vector<float> scores;        // one per token (0 when the model has none)
  std::vector<TokenType> types;     // one per token

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool Valid(int32_t id) const { return id >= 0 && id < size(); }

  std::optional<int32_t> Find(std::string_view text) const {
    auto it = index_.find(text);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  // Builds text -> id. On duplicate texts the lowest id wins (as llama.cpp).
  void BuildIndex() {
    index_.clear();
    index_.reserve(tokens.size());
    for (int32_t i = 0; i < size(); ++i) index_.emplace(tokens[i], i);
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> index_;
};

}  // namespace brisk
