// What the benchmark sends: prompts and output lengths, deterministic from a
// seed. Item i of a stream depends only on (spec, stream, i), so the measured
// requests are the same whatever the request count or warm-up count.
//
//   random         prompts of random common English words (~1 token each with
//                  a BPE vocabulary), lengths drawn from the given distribution
//   shared-prefix  a few fixed "system prompts" of prefix_len words, each
//                  request one of them (uniformly) plus its own random suffix:
//                  many users behind a few applications (prefix caching)
//   conversation   multi-turn dialogues of real text: consecutive passages of
//                  a corpus (default: the Debian package `fortunes`, files in
//                  /usr/share/games/fortunes) alternate user/assistant turns
//                  until the prompt reaches a length drawn from a heavy-tailed
//                  lognormal (median 100 tokens, sigma 1; output median 200,
//                  sigma 1; both capped at 1024): ShareGPT-like spread, whose
//                  mean prompt/output lengths the vLLM paper puts at ~161/~338
//   prompts        the user's own prompts, one JSON object per line of a file:
//                  {"prompt": "..."} (completions; sent to chat as one user
//                  message) or {"messages": [{"role", "content"}, ...]} (chat;
//                  to completions as the contents joined by newlines), with
//                  an optional "max_tokens" (else the output length spec).
//                  Request i of a stream is line (i + stream) mod lines.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loadgen/rng.h"
#include "util/status.h"

namespace brisk::loadgen {

enum class WorkloadKind { kRandom, kSharedPrefix, kConversation, kPrompts };
enum class LengthDist { kUniform, kLogNormal };

Expected<WorkloadKind> ParseWorkloadKind(std::string_view name);
const char* WorkloadKindName(WorkloadKind kind);
Expected<LengthDist> ParseLengthDist(std::string_view name);
const char* LengthDistName(LengthDist dist);

// A length in tokens. uniform: integers in [len * (1 - spread), len * (1 + spread)]
// (spread in [0, 1]; 0 = fixed). lognormal: median len, sigma = spread, rounded.
// The result is clamped to [max(1, min_len), max_len]; max_len 0 = no cap for
// uniform and len * e^(3 sigma) for lognormal.
struct LengthSpec {
  int64_t len = 128;
  double spread = 0;
  LengthDist dist = LengthDist::kUniform;
  int64_t max_len = 0;
  int64_t min_len = 1;
};
Status ValidateLengthSpec(const LengthSpec& spec, std::string_view what);
int64_t SampleLength(const LengthSpec& spec, Rng& rng);

inline constexpr const char* kDefaultTextDir = "/usr/share/games/fortunes";

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kRandom;
  LengthSpec input;
  LengthSpec output;
  int64_t prefix_len = 256;  // shared-prefix
  int64_t num_prefixes = 4;  // shared-prefix
  // conversation: a directory of fortune-format files ('%' lines separate
  // passages) or one text file (blank lines separate passages when it has no '%').
  std::string text_path = kDefaultTextDir;
  std::string prompts_path;  // prompts: the JSONL file
  uint64_t seed = 0;
};
// The conversation workload's default lengths (see above).
WorkloadSpec ConversationDefaults();

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

struct WorkloadItem {
  std::string prompt;                 // for /v1/completions
  std::vector<ChatMessage> messages;  // the same content for /v1/chat/completions
  int64_t prompt_tokens_estimate = 0;
  int64_t max_tokens = 0;
  int64_t prefix_id = -1;  // shared-prefix: which system prompt
};

// Passages of real text, in a fixed order (files sorted by name).
struct TextCorpus {
  std::vector<std::string> passages;
  std::string source;  // where they came from, for the result file
};
// Loads `path` as described at WorkloadSpec::text_path. Pictures (the fortune
// files "art" and "ascii-art") are skipped.
Expected<TextCorpus> LoadTextCorpus(const std::string& path);
// Parses one file's text: '%' lines separate passages if present, else blank lines.
std::vector<std::string> SplitPassages(std::string_view text);

struct WorkloadItem;
// Parses a prompts file's text (see "prompts" above); errors name the line.
Expected<std::vector<WorkloadItem>> ParsePromptsJsonl(std::string_view text);

// Rough prompt size of English text: ~4 bytes per token.
int64_t EstimateTokens(std::string_view text);

enum : uint64_t { kMeasuredStream = 0, kWarmupStream = 1 };

class Workload {
 public:
  // Validates the spec and loads the corpus (conversation only).
  static Expected<Workload> Create(const WorkloadSpec& spec);

  WorkloadItem Item(uint64_t stream, int64_t index) const;
  const WorkloadSpec& spec() const { return spec_; }
  // For the result file: the text source, or "generated".
  const std::string& source() const { return source_; }
  int64_t corpus_passages() const { return static_cast<int64_t>(corpus_.passages.size()); }

 private:
  Workload() = default;
  WorkloadItem RandomItem(Rng& rng) const;
  WorkloadItem SharedPrefixItem(Rng& rng) const;
  WorkloadItem ConversationItem(Rng& rng) const;

  WorkloadSpec spec_;
  std::string source_;
  TextCorpus corpus_;
  std::vector<std::string> prefixes_;
  std::vector<WorkloadItem> prompts_;
};

}  // namespace brisk::loadgen
