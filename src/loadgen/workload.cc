#include "loadgen/workload.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace brisk::loadgen {

namespace {

// Common English words; with a leading space each is a single token in the
// BPE vocabularies of Llama, SmolLM, GPT-2 and their kin, so N words make a
// prompt of roughly N tokens.
constexpr std::array<const char*, 200> kWords = {
    "the",     "of",     "and",    "to",     "in",      "is",      "you",       "that",    "it",
    "he",      "was",    "for",    "on",     "are",     "as",      "with",      "his",     "they",
    "at",      "be",     "this",   "have",   "from",    "or",      "one",       "had",     "by",
    "word",    "but",    "not",    "what",   "all",     "were",    "we",        "when",    "your",
    "can",     "said",   "there",  "use",    "an",      "each",    "which",     "she",     "do",
    "how",     "their",  "if",     "will",   "up",      "other",   "about",     "out",     "many",
    "then",    "them",   "these",  "so",     "some",    "her",     "would",     "make",    "like",
    "him",     "into",   "time",   "has",    "look",    "two",     "more",      "write",   "go",
    "see",     "number", "no",     "way",    "could",   "people",  "my",        "than",    "first",
    "water",   "been",   "call",   "who",    "oil",     "its",     "now",       "find",    "long",
    "down",    "day",    "did",    "get",    "come",    "made",    "may",       "part",    "over",
    "new",     "sound",  "take",   "only",   "little",  "work",    "know",      "place",   "year",
    "live",    "me",     "back",   "give",   "most",    "very",    "after",     "thing",   "our",
    "just",    "name",   "good",   "man",    "think",   "say",     "great",     "where",   "help",
    "through", "much",   "before", "line",   "right",   "too",     "mean",      "old",     "any",
    "same",    "tell",   "boy",    "follow", "came",    "want",    "show",      "also",    "around",
    "form",    "three",  "small",  "set",    "put",     "end",     "does",      "another", "well",
    "large",   "must",   "big",    "even",   "such",    "because", "turn",      "here",    "why",
    "ask",     "went",   "men",    "read",   "need",    "land",    "different", "home",    "us",
    "move",    "try",    "kind",   "hand",   "picture", "again",   "change",    "off",     "play",
    "spell",   "air",    "away",   "animal", "house",   "point",   "page",      "letter",  "mother",
    "answer",  "found",  "study",  "still",  "learn",   "should",  "world",     "high",    "every",
    "near",    "add",
};

constexpr uint64_t kPrefixStream = 0x70726566;  // "pref"

std::string RandomWords(Rng& rng, int64_t n) {
  std::string out;
  out.reserve(static_cast<size_t>(n) * 6);
  for (int64_t i = 0; i < n; ++i) {
    if (i) out.push_back(' ');
    out += kWords[rng.Below(kWords.size())];
  }
  return out;
}

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Expected<WorkloadKind> ParseWorkloadKind(std::string_view name) {
  if (name == "random") return WorkloadKind::kRandom;
  if (name == "shared-prefix") return WorkloadKind::kSharedPrefix;
  if (name == "conversation") return WorkloadKind::kConversation;
  if (name == "prompts") return WorkloadKind::kPrompts;
  return InvalidArgument(
      "unknown workload '{}': use random, shared-prefix, conversation or prompts", name);
}

const char* WorkloadKindName(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kRandom: return "random";
    case WorkloadKind::kSharedPrefix: return "shared-prefix";
    case WorkloadKind::kConversation: return "conversation";
    case WorkloadKind::kPrompts: return "prompts";
  }
  return "unknown";
}

Expected<LengthDist> ParseLengthDist(std::string_view name) {
  if (name == "uniform") return LengthDist::kUniform;
  if (name == "lognormal") return LengthDist::kLogNormal;
  return InvalidArgument("unknown length distribution '{}': use uniform or lognormal", name);
}

const char* LengthDistName(LengthDist dist) {
  return dist == LengthDist::kUniform ? "uniform" : "lognormal";
}

Status ValidateLengthSpec(const LengthSpec& spec, std::string_view what) {
  if (spec.len < 1) return InvalidArgument("{} length must be >= 1 (got {})", what, spec.len);
  if (!(spec.spread >= 0) || !std::isfinite(spec.spread))
    return InvalidArgument("{} spread must be >= 0 (got {})", what, spec.spread);
  if (spec.dist == LengthDist::kUniform && spec.spread > 1)
    return InvalidArgument("{} spread for a uniform length is a range ratio in [0, 1] (got {})",
                           what, spec.spread);
  if (spec.max_len < 0) return InvalidArgument("{} max length must be >= 0", what);
  if (spec.min_len < 1 || (spec.max_len > 0 && spec.min_len > spec.max_len))
    return InvalidArgument("{} min length must be in 1..max length (got {})", what, spec.min_len);
  return Status::Ok();
}

int64_t SampleLength(const LengthSpec& spec, Rng& rng) {
  const double len = static_cast<double>(spec.len);
  double x;
  double cap = spec.max_len > 0 ? static_cast<double>(spec.max_len) : 0;
  if (spec.dist == LengthDist::kUniform) {
    const int64_t lo = std::llround(len * (1.0 - spec.spread));
    const int64_t hi = std::llround(len * (1.0 + spec.spread));
    x = static_cast<double>(lo +
                            static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo + 1))));
  } else {
    x = std::round(rng.LogNormal(std::log(len), spec.spread));
    if (cap == 0) cap = std::ceil(len * std::exp(3.0 * spec.spread));
  }
  if (cap > 0) x = std::min(x, cap);
  return std::max<int64_t>(std::max<int64_t>(1, spec.min_len), static_cast<int64_t>(x));
}

WorkloadSpec ConversationDefaults() {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kConversation;
  spec.input = LengthSpec{100, 1.0, LengthDist::kLogNormal, 1024};
  spec.output = LengthSpec{200, 1.0, LengthDist::kLogNormal, 1024};
  return spec;
}

int64_t EstimateTokens(std::string_view text) {
  return std::max<int64_t>(1, static_cast<int64_t>((text.size() + 3) / 4));
}

std::vector<std::string> SplitPassages(std::string_view text) {
  std::vector<std::string> out;
  std::vector<std::string_view> lines;
  bool percent = false;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == "%") percent = true;
    lines.push_back(line);
    pos = nl + 1;
  }
  std::string cur;
  auto flush = [&] {
    std::string_view t = TrimView(cur);
    if (!t.empty()) out.emplace_back(t);
    cur.clear();
  };
  for (std::string_view line : lines) {
    const bool sep = percent ? line == "%" : TrimView(line).empty();
    if (sep) {
      flush();
      continue;
    }
    // Tabs (fortune attributions are tab-indented) become spaces; trailing blanks go.
    std::string l(line);
    std::replace(l.begin(), l.end(), '\t', ' ');
    while (!l.empty() && l.back() == ' ') l.pop_back();
    cur += l;
    cur.push_back('\n');
  }
  flush();
  return out;
}

Expected<TextCorpus> LoadTextCorpus(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_symlink() || !entry.is_regular_file()) continue;  // *.u8 are symlinks
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() == ".dat" || name == "art" || name == "ascii-art") continue;
      files.push_back(entry.path());
    }
    if (ec) return NotFound("cannot list text directory {}: {}", path, ec.message());
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else {
    return NotFound(
        "text source {} does not exist (the conversation workload reads the Debian package "
        "'fortunes': apt-get install fortunes, or pass --text FILE_OR_DIR)",
        path);
  }
  TextCorpus corpus;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return NotFound("cannot read {}", file.string());
    std::stringstream ss;
    ss << in.rdbuf();
    for (std::string& p : SplitPassages(ss.str())) corpus.passages.push_back(std::move(p));
  }
  if (corpus.passages.size() < 2)
    return InvalidArgument("text source {} has fewer than 2 passages", path);
  corpus.source = path == kDefaultTextDir
                      ? fmt::format("Debian package fortunes ({}, {} files)", path, files.size())
                      : fmt::format("{} ({} files)", path, files.size());
  return corpus;
}

Expected<std::vector<WorkloadItem>> ParsePromptsJsonl(std::string_view text) {
  using json = nlohmann::json;
  std::vector<WorkloadItem> items;
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = TrimView(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object())
      return InvalidArgument("line {}: expected a JSON object with \"prompt\" or \"messages\"",
                             line_no);
    WorkloadItem item;
    if (const auto p = j.find("prompt"); p != j.end() && p->is_string()) {
      item.prompt = p->get<std::string>();
      item.messages = {{"user", item.prompt}};
    } else if (const auto m = j.find("messages"); m != j.end() && m->is_array() && !m->empty()) {
      for (const json& msg : *m) {
        const auto role = msg.find("role"), content = msg.find("content");
        if (!msg.is_object() || role == msg.end() || !role->is_string() || content == msg.end() ||
            !content->is_string())
          return InvalidArgument("line {}: each message needs string \"role\" and \"content\"",
                                 line_no);
        item.messages.push_back({role->get<std::string>(), content->get<std::string>()});
        if (!item.prompt.empty()) item.prompt += '\n';
        item.prompt += item.messages.back().content;
      }
    } else {
      return InvalidArgument(
          "line {}: expected a string \"prompt\" or a non-empty \"messages\" array", line_no);
    }
    if (const auto mt = j.find("max_tokens"); mt != j.end()) {
      if (!mt->is_number_integer() || mt->get<int64_t>() < 1)
        return InvalidArgument("line {}: max_tokens must be a positive integer", line_no);
      item.max_tokens = mt->get<int64_t>();
    }
    item.prompt_tokens_estimate = EstimateTokens(item.prompt);
    items.push_back(std::move(item));
  }
  if (items.empty()) return InvalidArgument("no prompts (one JSON object per line)");
  return items;
}

Expected<Workload> Workload::Create(const WorkloadSpec& spec) {
  RETURN_IF_ERROR(ValidateLengthSpec(spec.input, "input"));
  RETURN_IF_ERROR(ValidateLengthSpec(spec.output, "output"));
  Workload w;
  w.spec_ = spec;
  w.source_ = "generated (random common English words)";
  if (spec.kind == WorkloadKind::kSharedPrefix) {
    if (spec.num_prefixes < 1 || spec.prefix_len < 1)
      return InvalidArgument("shared-prefix needs --num-prefixes >= 1 and --prefix-len >= 1");
    for (int64_t p = 0; p < spec.num_prefixes; ++p) {
      Rng rng(spec.seed, kPrefixStream, static_cast<uint64_t>(p));
      w.prefixes_.push_back(RandomWords(rng, spec.prefix_len));
    }
  } else if (spec.kind == WorkloadKind::kConversation) {
    ASSIGN_OR_RETURN(w.corpus_, LoadTextCorpus(spec.text_path));
    w.source_ = w.corpus_.source;
  } else if (spec.kind == WorkloadKind::kPrompts) {
    std::ifstream in(spec.prompts_path, std::ios::binary);
    if (!in)
      return NotFound("cannot read the prompts file '{}' (--prompts FILE)", spec.prompts_path);
    std::stringstream ss;
    ss << in.rdbuf();
    auto items = ParsePromptsJsonl(ss.str());
    if (!items.ok()) return items.status().WithContext(spec.prompts_path);
    w.prompts_ = std::move(*items);
    w.source_ = fmt::format("{} ({} prompts)", spec.prompts_path, w.prompts_.size());
  }
  return w;
}

WorkloadItem Workload::Item(uint64_t stream, int64_t index) const {
  Rng rng(spec_.seed, stream, static_cast<uint64_t>(index));
  switch (spec_.kind) {
    case WorkloadKind::kRandom: return RandomItem(rng);
    case WorkloadKind::kSharedPrefix: return SharedPrefixItem(rng);
    case WorkloadKind::kConversation: return ConversationItem(rng);
    case WorkloadKind::kPrompts: {
      const uint64_t n = prompts_.size();
      WorkloadItem item = prompts_[(static_cast<uint64_t>(index) + stream) % n];
      if (item.max_tokens <= 0) item.max_tokens = SampleLength(spec_.output, rng);
      return item;
    }
  }
  return {};
}

WorkloadItem Workload::RandomItem(Rng& rng) const {
  WorkloadItem item;
  const int64_t in = SampleLength(spec_.input, rng);
  item.max_tokens = SampleLength(spec_.output, rng);
  item.prompt = RandomWords(rng, in);
  item.messages = {{"user", item.prompt}};
  item.prompt_tokens_estimate = in;
  return item;
}

WorkloadItem Workload::SharedPrefixItem(Rng& rng) const {
  WorkloadItem item;
  const int64_t in = SampleLength(spec_.input, rng);
  item.max_tokens = SampleLength(spec_.output, rng);
  item.prefix_id = static_cast<int64_t>(rng.Below(prefixes_.size()));
  const std::string& prefix = prefixes_[static_cast<size_t>(item.prefix_id)];
  std::string suffix = RandomWords(rng, in);
  item.prompt = prefix + "\n\n" + suffix;
  item.messages = {{"system", prefix}, {"user", std::move(suffix)}};
  item.prompt_tokens_estimate = spec_.prefix_len + in;
  return item;
}

WorkloadItem Workload::ConversationItem(Rng& rng) const {
  WorkloadItem item;
  const int64_t target = SampleLength(spec_.input, rng);
  item.max_tokens = SampleLength(spec_.output, rng);
  const auto& passages = corpus_.passages;
  const size_t start = rng.Below(passages.size());
  // Whole passages as turns, user first, until the target is reached on a user
  // turn (the server answers as the assistant). ~4 tokens of role markup a turn.
  int64_t tokens = 0;
  constexpr size_t kMaxTurns = 255;
  for (size_t k = 0; k < kMaxTurns; ++k) {
    const std::string& text = passages[(start + k) % passages.size()];
    const bool user = k % 2 == 0;
    item.messages.push_back({user ? "user" : "assistant", text});
    item.prompt += fmt::format("{}: {}\n", user ? "User" : "Assistant", text);
    tokens += EstimateTokens(text) + 4;
    if (user && tokens >= target) break;
  }
  item.prompt += "Assistant:";
  item.prompt_tokens_estimate = tokens + 2;
  return item;
}

}  // namespace brisk::loadgen
